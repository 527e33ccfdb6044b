"""The AXI wrappers under cocotbext-axi: whole layers loaded over AXI4-Lite and run over
AXI4-Stream, bit-exact against the golden model, with random pauses on every channel; counters
read while a layer runs are one run's; SLVERR on an unmapped address. The system on Icarus and
the tile on Verilator here; the system on Verilator is ``slow`` (its build is the long part).
A planted fault (a bit flipped in every load data word) must fail the same bench."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from regression.axi import AxiStimulus, job_config, job_params, plan, run_axi

ROOT = Path(__file__).resolve().parents[1] / "build" / "cocotb"


def _job(kind: str, seed: int, **stim):
    """A regression job's shape: T = 8, k = 1, the network of ``seed``."""
    return SimpleNamespace(params=(("T", 8), ("k", 1)), seed=seed,
                           stim=AxiStimulus(**stim) if stim else None)


def _run(kind: str, sim_name: str, tmp_path, seed: int, *, corrupt: bool = False):
    from rtl_gen.params import RTLConfig
    from rtl_gen.regmap import register_map

    job = _job(kind, seed)
    config = RTLConfig(**job_params(kind, job))
    bench = job_config(kind, job, {"parameters": config.as_dict()})
    if corrupt:  # a planted fault: bit 0 of every LOAD_DATA word flipped on its way in
        words = {r.address for r in register_map(kind, config).registers
                 if r.name.startswith("LOAD_DATA[")}
        bench["writes"] = [[a, v ^ 1 if a in words else v] for a, v in bench["writes"]]
    return run_axi(kind, config, bench, sim_name, ROOT, tmp_path / "run")


def _system(sim_name, tmp_path, *, corrupt=False):
    return _run("system", sim_name, tmp_path, 3, corrupt=corrupt)


def test_axi_system_on_icarus(tmp_path):
    run = _system("icarus", tmp_path)
    assert run.passed, run.error
    r = run.report
    assert r["runs"] == 4 and r["reads_while_running_checked"] >= 4


def test_axi_system_catches_the_wrong_images(tmp_path):
    run = _system("icarus", tmp_path, corrupt=True)
    assert not run.passed and run.report["mismatches"] > 0


def test_axi_tile_on_verilator(tmp_path):
    run = _run("tile", "verilator", tmp_path, 4)
    assert run.passed, run.error
    assert run.report["reads_while_running_checked"] >= 4


@pytest.mark.slow
def test_axi_system_on_verilator(tmp_path):
    run = _system("verilator", tmp_path)
    assert run.passed, run.error


@pytest.mark.slow
def test_axi_tile_on_icarus(tmp_path):
    run = _run("tile", "icarus", tmp_path, 4)
    assert run.passed, run.error


def test_plan_runs_once_per_sweep():
    point = SimpleNamespace(T=8, index=0, variant=0, ks=(1, 2), base_seed=2)
    assert plan(point) == ({"T": 8, "k": 1}, 2008, {})
    assert plan(SimpleNamespace(**{**vars(point), "index": 1})) is None
    assert plan(SimpleNamespace(**{**vars(point), "variant": 1})) is None
