"""The fast harness (docs/regress.md, "Fast mode"): the tile's and the system's golden vectors in
memories beside the generated Verilog, compared in the simulation on Icarus and Verilator.

Small shapes (the builds are cached under ``build/cocotb`` beside the regression's); the
benchmark (benchmarks/bench_regress.py) runs the long ones. Every run must agree bit-exactly
with the golden model, and each self-check (an expected event altered or dropped, a weight row
flipped in the loaded tile) must be caught by the comparator inside the simulation.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import regression
from regression.benches import ALL_BENCHES, BENCHES, FAST_BENCHES
from regression.fast import fast_config, probability_256, verdict

ROOT = Path(__file__).resolve().parents[1] / "build" / "cocotb"
SYSTEM = {"T": 16, "k": 1, "family": "sym", "distribution": "uniform", "shape": 0}
SYSTEM_PADDED = {"T": 16, "k": 0, "family": "asym", "distribution": "uniform", "shape": 1}
_results: dict = {}


def tile_job(sim: str, T: int = 16, variant: int = 0, **stim) -> regression.Job:
    params = regression.block_params(T, variant, 1, 3)
    return regression.job("tile-fast", sim, params, 3, **{"blocks": 2, "windows": 4, **stim})


def system_job(sim: str, params=SYSTEM, **stim) -> regression.Job:
    return regression.job("system-fast", sim, params, 5, **{"inferences": 3, **stim})


def run(j: regression.Job) -> regression.JobResult:
    if j not in _results:
        _results[j] = regression.run_job(j, ROOT)
    return _results[j]


CLEAN = [
    tile_job("icarus"),
    tile_job("icarus", T=8, variant=1),
    tile_job("verilator"),
    system_job("icarus"),
    system_job("icarus", SYSTEM_PADDED),
    system_job("verilator"),
]


@pytest.mark.parametrize("j", CLEAN, ids=lambda j: j.name)
def test_fast_mode_agrees_with_the_golden_model(j):
    r = run(j)
    assert r.passed, f"{j.name}: {r.error}"
    rep = r.report
    h = rep["harness"]
    assert rep["mismatches"] == 0 and rep["mismatch_examples"] == []
    assert rep["events"] > 0 and rep["cycles"] > 0
    # every window's counters compared in hardware; their totals equal the golden model's
    assert h["checks"] == h["windows"] == h["markers"] == rep["vectors"] > 0
    assert rep["counter_totals_rtl"] == rep["counter_totals_golden"]
    assert sum(rep["counter_totals_golden"].values()) > 0
    assert h["stalled_out"] > 0, "no output beat saw backpressure"


def test_repeat_plays_the_vectors_again():
    one, three = run(tile_job("icarus")), run(tile_job("icarus", repeat=3))
    assert one.passed and three.passed, three.error
    assert three.report["events"] == 3 * one.report["events"]
    assert three.report["harness"]["checks"] == 3 * one.report["harness"]["checks"]
    assert three.report["counter_totals_rtl"] == {
        k: 3 * v for k, v in one.report["counter_totals_rtl"].items()}


def test_no_backpressure_is_quicker():
    free = run(tile_job("icarus", p_idle=0.0, p_stall=0.0))
    assert free.passed, free.error
    assert free.report["harness"]["stalled_out"] == 0
    assert free.report["cycles"] < run(tile_job("icarus")).report["cycles"]


def _corrupted(j: regression.Job, mode: str) -> regression.Job:
    return dataclasses.replace(j, stim=dataclasses.replace(j.stim, corrupt=mode))


@pytest.mark.parametrize(("j", "mode"), [
    (tile_job("icarus"), "alter"),
    (tile_job("icarus"), "drop"),
    (tile_job("icarus"), "weight"),
    (system_job("icarus"), "alter"),
    (system_job("icarus"), "drop"),
    (tile_job("verilator"), "weight"),
], ids=lambda x: x if isinstance(x, str) else x.name)
def test_the_comparator_in_the_simulation_catches(j, mode):
    """An expected event altered or dropped in the memory, or a tile loaded with a flipped
    weight row (a mutant design the expectation does not know): the run must fail."""
    r = run(_corrupted(j, mode))
    assert not r.passed
    h = r.report["harness"]
    assert h["err_out"] >= 1, r.error
    assert h["bad_out_at"] >= 1
    if mode == "drop":  # the design's beats outnumber the expectation
        assert h["err_extra"] >= 1
        assert any(p.startswith("beats_out:") for p in r.report["mismatch_examples"])
    if mode == "weight":  # the flipped row changes what the tile computes, counters too
        assert h["err_cnt"] >= 1 and h["bad_cnt_at"] >= 1


def test_fast_benches_are_opt_in():
    assert set(FAST_BENCHES) <= set(ALL_BENCHES)
    assert not set(FAST_BENCHES) & set(BENCHES)  # the default regression stays per-beat
    jobs = regression.regression_jobs((16,), (1,), ("icarus",), benches=("tile-fast",
                                                                          "system-fast"))
    assert {j.bench for j in jobs} == {"tile-fast", "system-fast"}
    with pytest.raises(ValueError, match="bench must be one of"):
        regression.regression_jobs((16,), (1,), ("icarus",), benches=("tile-quick",))


def test_fast_config_rejects_bad_values():
    from regression.fast import FastVectors

    v = FastVectors([1], [2], [3], (), {}, 1, 1, 1, 1, 0, {})
    with pytest.raises(ValueError, match="repeat must be in"):
        fast_config(v, seed=0, T=16, repeat=0)
    with pytest.raises(ValueError, match="p_valid must be in"):
        fast_config(v, seed=0, T=16, p_valid=0.0)
    with pytest.raises(ValueError, match="at least one input"):
        fast_config(dataclasses.replace(v, seq=[]), seed=0, T=16)
    assert probability_256(1.0, "p") == 256 and probability_256(0.75, "p") == 192


def test_verdict_names_each_problem():
    v_cfg = {"expect": {"beats_out": 10, "checks": 2}, "counter_ports": ["a", "b"],
             "counter_widths": [4, 4]}
    good = {"done": True, "stalled": False, "timed_out": False, "beats_out": 10, "checks": 2,
            "cycles": 50, "err_out": 0, "err_extra": 0, "err_cnt": 0, "err_stream": 0,
            "bad_out_at": 0, "bad_out_got": 0, "bad_cnt_at": 0, "bad_cnt_got": 0}
    assert verdict(v_cfg, good) == []
    bad = {**good, "done": False, "beats_out": 9, "err_cnt": 1, "bad_cnt_at": 2,
           "bad_cnt_got": 0x53}
    problems = verdict(v_cfg, bad)
    assert "the run did not end" in problems
    assert "beats_out: 9, expected 10" in problems
    assert any("counters of window 1" in p and "a=3, b=5" in p for p in problems)


def test_summary_without_coverage_says_so():
    """Fast-mode jobs sample no coverage: the summary must not read "coverage 100%"."""
    from regression.jobs import JobResult, job
    from regression.summary import format_table, summarize

    r = JobResult(job("encoder", "icarus", {"T": 4, "k": 0}, 1), True,
                  {"events": 10, "vectors": 2, "sim_seconds": 0.5})
    text = format_table(summarize([r], 1.0, {"T": [4]}))
    assert "coverage not sampled (0 bins)" in text
    assert "100" not in text.splitlines()[-2]


def test_the_verilator_build_makes_only_the_ports_public():
    """Writable public signals make Verilator re-evaluate their fan-out on every evaluation:
    only the harness's inputs are writable, its outputs readable, the design invisible."""
    import re

    from regression.fast_rtl import FLAGS, INPUTS, TOTALS

    assert run(system_job("verilator")).passed
    vlt = max((ROOT / "sim" / "verilator").glob("mttfs_fast_system-*/matterhorn_public.vlt"),
              key=lambda p: p.stat().st_mtime)
    rules = re.findall(r'public_flat_(rw|rd) -module "mttfs_fast_system" -var "(\w+)"',
                       vlt.read_text())
    assert len(rules) == len(vlt.read_text().splitlines()) - 1
    assert {name for how, name in rules if how == "rw"} == set(INPUTS)
    read = {name for how, name in rules if how == "rd"}
    assert {*FLAGS, *TOTALS} <= read and read - {*FLAGS, *TOTALS} == {
        name for name in read if name.startswith("tot_")}
