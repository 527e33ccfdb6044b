"""The non-linear units on both simulators at MiniLM's sizes, on the rows the integer MiniLM
QNN computes (the default regression runs them on random rows, ``test_regression.py``).

The RTL is generated for MiniLM's units (hidden 384, heads of 32, FFN 1536, rows of 512 keys:
``regression.benches.units.minilm_params``); the rows and constants are recorded from the
integer QNN on two evaluation sentences, every block (``regression.units.record_minilm``).
About two minutes on two cores (the MiniLM-sized Verilog is generated and built on both
simulators), hence ``slow``; the Amaranth simulator runs the same rows in the default suite
(``tests/test_rtl_units.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import regression
from regression import sim
from regression.benches.units import minilm_params

ROOT = Path(__file__).resolve().parents[1] / "build" / "cocotb"


@pytest.mark.slow
@pytest.mark.parametrize("simulator", sim.SIMULATORS)
@pytest.mark.parametrize(("bench", "rows"), [("softmax", 3), ("add_norm", 1)])
def test_minilm_rows(bench, rows, simulator):
    j = regression.job(bench, simulator, minilm_params(), 0, source="minilm", rows=rows)
    r = regression.run_job(j, ROOT)
    assert r.passed, f"{j.name}: {r.error}"
    rep = r.report
    assert rep["mismatches"] == 0 and rep["source"] == "minilm"
    # every block's unit: six softmax units, twelve LayerNorms
    assert rep["vectors"] == (6 * rows if bench == "softmax" else 12 * rows)
