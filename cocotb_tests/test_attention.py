"""The attention benches' self-checks: one expected event altered or dropped, and a key row
dropped, altered or of the previous sequence on its way to the key memory; each run must fail
(the default jobs themselves run in test_regression.py)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

import regression
from regression import sim

ROOT = Path(__file__).resolve().parents[1] / "build" / "cocotb"
RANDOM = next(j for j in regression.regression_jobs((16,), (1,), ("icarus",), seed=0)
              if j.bench == "attention")


def _run(mode: str, bench: str = "attention") -> regression.JobResult:
    base = RANDOM if bench == "attention" else next(
        j for j in regression.regression_jobs((16,), (1,), ("icarus",), seed=0)
        if j.bench == bench)
    return regression.run_job(dataclasses.replace(
        base, stim=dataclasses.replace(base.stim, corrupt=mode)), ROOT)


@pytest.mark.parametrize("mode", ["alter", "drop", "key-alter", "key-stale"])
def test_corrupted_run_fails_on_a_mismatch(mode):
    r = _run(mode)
    assert not r.passed
    assert r.report["mismatches"] >= 1, r.error
    assert "err_out" in r.error or "err_cnt" in r.error


def test_dropped_key_row_stalls_the_sequence():
    """A key write that never arrives: the queries stay held, the harness reports the stall."""
    r = _run("key-drop")
    assert not r.passed
    assert "stalled" in r.error and "beats_in: 0" in r.error


@pytest.mark.parametrize("mode", ["alter", "drop"])
def test_softmax_bench_catches_corrupted_expectation(mode):
    r = _run(mode, "attn_softmax")
    assert not r.passed and r.report["mismatches"] >= 1


def test_minilm_job_is_planned_on_real_sentences():
    jobs = regression.regression_jobs((16,), (1,), sim.SIMULATORS, seed=0)
    real = [j for j in jobs if j.bench == "attention" and dict(j.params)["source"] == "minilm"]
    assert {j.sim for j in real} == set(sim.SIMULATORS)
    p = dict(real[0].params)
    assert (p["mesh_rows"], p["n_in"], p["tile_neurons"]) == (12, 32, 64)
