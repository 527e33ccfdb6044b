"""The AXI wrappers beyond the regression's jobs.

The wrappers are bench kinds of the regression (``axi_tile``, ``axi_system``; regression/axi.py,
cocotb_tests/tb_axi.py): ``test_regression.py`` runs them in its default and slow sets (whole
layers loaded over AXI4-Lite and run over AXI4-Stream with random pauses on every channel,
bit-exact against the golden model, counters read while a layer runs, SLVERR on an unmapped
address) and checks that one expected output word altered or dropped fails them. Here: a planted
fault of the hardware's side, which the expectation does not know (a bit flipped in every load
data word: wrong images), must fail the same bench, and the plan runs once per sweep.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import regression
from regression.axi import plan

ROOT = Path(__file__).resolve().parents[1] / "build" / "cocotb"


def test_axi_system_catches_the_wrong_images():
    # the default regression's job (its Verilog and build are shared), with the wrong images
    base = next(j for j in regression.regression_jobs((4, 8, 16), (0, 1, 2), ("icarus",))
                if j.bench == "axi_system")
    j = regression.job("axi_system", "icarus", dict(base.params), base.seed, corrupt="load")
    r = regression.run_job(j, ROOT)
    assert not r.passed and r.report["mismatches"] > 0, r.error


def test_plan_runs_once_per_sweep():
    point = SimpleNamespace(T=8, index=0, variant=0, ks=(1, 2), base_seed=2,
                            params={"family": "asym"})
    assert plan(point) == ({"T": 8, "k": 1, "family": "asym"}, 2008, {})
    assert plan(SimpleNamespace(**{**vars(point), "index": 1})) is None
    assert plan(SimpleNamespace(**{**vars(point), "variant": 1})) is None
