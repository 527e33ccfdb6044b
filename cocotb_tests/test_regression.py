"""The default regression: every bench on both simulators, bit-exact against the golden model.

Each job generates Verilog with ``rtl_gen.generate.generate`` (cached per parameter set under
``build/cocotb``), builds it once per simulator and runs its cocotb bench. ``T = 32``, the
attention path on MiniLM's sentences and the attention benches' Verilator jobs below ``T = 16``
are marked ``slow``: ``-m slow`` runs them. Self-checks prove the benches fail when one expected
event is altered or dropped.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

import regression
from regression import coverage as cov
from regression import sim
from regression.benches import tile

ROOT = Path(__file__).resolve().parents[1] / "build" / "cocotb"


def _minilm(j: regression.Job) -> bool:
    return j.bench == "attention" and dict(j.params).get("source") == "minilm"


def _attention_slow(j: regression.Job) -> bool:
    """The attention path on MiniLM's sentences, and the attention benches' Verilator builds
    below T = 16 (about 45 s each on a busy 2-core machine; T = 16 keeps both simulators)."""
    attention = j.bench in ("attention", "attn_softmax")
    return _minilm(j) or (attention and j.sim == "verilator" and dict(j.params)["T"] != 16)


def _in_default_set(j: regression.Job) -> bool:
    """The system's AXI wrapper on Verilator (its build alone is about 2 minutes on a busy
    2-core machine, three times the rest of the wrappers' jobs) runs in the slow set only,
    where the T = 32 sweep plans it; on Icarus it runs in both. The attention path on MiniLM's
    sentences (block 0's twelve heads: the sentences captured from the integer model and the
    design generated take minutes before a simulator starts, Icarus then runs for tens of
    minutes) and the attention benches' Verilator jobs below T = 16 run in the slow set only
    (:func:`_attention_slow`)."""
    return not (j.bench == "axi_system" and j.sim == "verilator") and not _attention_slow(j)


_SWEEP = regression.regression_jobs((4, 8, 16), (0, 1, 2), sim.SIMULATORS, seed=0)
DEFAULT_JOBS = [j for j in _SWEEP if _in_default_set(j)]
SLOW_JOBS = [*regression.regression_jobs((32,), (0, 1, 2), sim.SIMULATORS, seed=0),
             *(j for j in _SWEEP if _attention_slow(j))]
_results: dict[regression.Job, regression.JobResult] = {}


def _run(j: regression.Job) -> regression.JobResult:
    if j not in _results:
        _results[j] = regression.run_job(j, ROOT)
    return _results[j]


def check_job(j: regression.Job) -> None:
    r = _run(j)
    assert r.passed, f"{j.name}: {r.error}"
    rep = r.report
    assert rep["mismatches"] == 0
    assert rep["vectors"] > 0 and rep["events"] > 0
    assert rep["counter_totals_rtl"] == rep["counter_totals_golden"]
    if j.bench in ("encoder", "tile", "router", "system"):
        assert rep["resets"] >= 1, "no reset in the middle of a window was exercised"
        assert rep["stalled_out_beats"] > 0, "no output beat saw backpressure"


@pytest.mark.parametrize("j", DEFAULT_JOBS, ids=lambda j: j.name)
def test_default(j):
    check_job(j)


@pytest.mark.slow
@pytest.mark.parametrize("j", SLOW_JOBS, ids=lambda j: j.name)
def test_slow(j):
    check_job(j)


def test_default_coverage_complete():
    """The default regression hits every bin it declares (both simulators merged)."""
    summary = cov.summary(cov.merge(_run(j).report.get("coverage", {}) for j in DEFAULT_JOBS))
    missing = {k: v["missing"] for k, v in summary["items"].items() if v["missing"]}
    assert summary["bins"] > 0
    assert summary["percent"] == 100.0, f"uncovered bins: {missing}"


def _corrupted(bench: str, mode: str) -> regression.Job:
    base = next(j for j in DEFAULT_JOBS if j.bench == bench and j.sim == "icarus")
    return dataclasses.replace(base, stim=dataclasses.replace(base.stim, corrupt=mode))


@pytest.mark.parametrize("mode", ["alter", "drop"])
@pytest.mark.parametrize("bench", ["encoder", "tile", "dense_tile", "router", "system",
                                   "softmax", "add_norm", "axi_tile", "axi_system"])
def test_scoreboard_catches_corrupted_expectation(bench, mode):
    """One expected output event (AXI: output word) altered or dropped: the bench must fail
    on it."""
    r = regression.run_job(_corrupted(bench, mode), ROOT)
    assert not r.passed
    assert r.report.get("mismatches", 0) >= 1, r.error


def test_sram_bench_catches_wrong_golden_row():
    r = regression.run_job(_corrupted("sram", "alter"), ROOT)
    assert not r.passed
    assert "not the golden weight row" in r.error


def test_regression_summary(tmp_path):
    """The API behind ``matterhorn regress``: summary fields, JSON file, bad arguments."""
    s = regression.run_regression(
        4, 0, "icarus", out_dir=tmp_path, benches=("encoder",), quick=True
    )
    assert s["schema"] == regression.SCHEMA
    assert s["configurations"] == 1 and s["passed"] == 1 and s["mismatches"] == 0
    assert s["events"] > 0 and s["events_per_second"] > 0
    assert s["coverage"]["bins"] > 0
    assert (tmp_path / "regress_summary.json").is_file()
    bad_t = "T must be a power of two 2**n with n in 1..8 (2, 4, 8, ..., 256), not 5"
    with pytest.raises(ValueError, match=re.escape(bad_t)):
        regression.run_regression(5, 0, "icarus", out_dir=tmp_path)
    with pytest.raises(ValueError, match="T must be at most 64 for the generated RTL, not 128"):
        regression.run_regression(128, 0, "icarus", out_dir=tmp_path)
    with pytest.raises(ValueError, match="k must be in 0..3 for T=4, not 4"):
        regression.run_regression(4, 4, "icarus", out_dir=tmp_path)
    with pytest.raises(ValueError, match="sim must be one of"):
        regression.run_regression(4, 0, "modelsim", out_dir=tmp_path)


def test_waves_only_on_request(tmp_path):
    """Waveforms are written when asked for, and not otherwise (Icarus: FST in the run dir).

    Both runs share a folder, so the second reuses the first's Verilog (a build with waves is
    a build of its own); the run without waves goes first, into a folder with no dump yet."""
    regression.run_regression(4, 1, "icarus", out_dir=tmp_path, benches=("encoder",), quick=True)
    assert not list((tmp_path / "runs").glob("*/dump.*"))
    regression.run_regression(
        4, 1, "icarus", out_dir=tmp_path, benches=("encoder",), quick=True, waves=True
    )
    assert list((tmp_path / "runs").glob("*/dump.fst"))


def test_cli_regress(tmp_path, capsys):
    from matterhorn.cli import main

    out = tmp_path / "cli"
    argv = [
        "regress",
        "--T",
        "4",
        "--k",
        "0",
        "--sim",
        "icarus",
        "--bench",
        "encoder",
        "--quick",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "1/1 passed" in text and "coverage" in text
    assert (out / "regress_summary.json").is_file()
    assert main(["regress", "--T", "4", "--k", "9", "--out", str(out)]) == 2
    assert "k must be in 0..3 for T=4, not 9" in capsys.readouterr().err


def test_tile_bench_kills_a_threshold_mutant(tmp_path):
    """Negative control on the RTL side: one lane's ``V >= theta`` turned into ``V > theta`` in a
    copy of the generated tile must make the tile bench fail."""
    j = next(j for j in DEFAULT_JOBS if j.bench == "tile" and j.sim == "icarus")
    rtl_dir, manifest = regression.generate_rtl(dict(j.params), ROOT, modules=("mttfs_tile",))
    lines = (rtl_dir / "mttfs_tile.v").read_text().splitlines()
    compares = [i for i, line in enumerate(lines) if "$signed" in line and " >= " in line]
    assert len(compares) >= 2, "no signed >= compare found in mttfs_tile.v to mutate"
    lines[compares[1]] = lines[compares[1]].replace(" >= ", " > ", 1)
    (tmp_path / "mttfs_tile.v").write_text("\n".join(lines) + "\n")
    b = sim.build("icarus", [tmp_path / "mttfs_tile.v"], "mttfs_tile", tmp_path / "build")
    r = sim.run(b, "cocotb_tests.tb_tile", tile.config(j, manifest), tmp_path / "run")
    assert not r.passed
    assert r.report["mismatches"] > 0
