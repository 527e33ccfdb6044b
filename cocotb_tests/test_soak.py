"""The router soak on Verilator, shortened for the suite (the million-flit run is
benchmarks/bench_soak.py): one clean run must pass every check and agree with the Python model,
and a planted fault on the same build must fail it."""

from __future__ import annotations

from pathlib import Path

import pytest

from regression.soak import SoakParams, build_soak, expected_traffic, run_soak, verdict

ROOT = Path(__file__).resolve().parents[1] / "build" / "cocotb"
#: 100 000 flits (6250 per node) under backpressure and a 25 % hotspot.
CLEAN = SoakParams(flits=6250, seed=11, p_valid=192, p_ready=192, p_hot=64, hot=5)


@pytest.fixture(scope="module")
def soak_build():
    b, _ = build_soak(ROOT)  # beside the regression's builds; benchmarks/bench_soak.py reuses it
    return b


@pytest.mark.slow
def test_soak_100k_flits(soak_build, tmp_path):
    r = run_soak(soak_build, CLEAN, tmp_path / "run")
    assert verdict(CLEAN, r, expected_traffic(CLEAN)) == []
    assert r.recv == r.sent == 100_000
    assert r.node_recv[CLEAN.hot] > 2 * max(n for i, n in enumerate(r.node_recv) if i != 5)


@pytest.mark.parametrize(("fault", "counter"), [("drop", "err_order"),
                                                ("duplicate", "err_order"),
                                                ("reorder", "err_order"),
                                                ("misroute", "err_dst")])
def test_soak_catches_a_planted_fault(soak_build, tmp_path, fault, counter):
    p = SoakParams(flits=500, seed=3, fault=fault, fault_at=100)
    r = run_soak(soak_build, p, tmp_path / "run")
    assert verdict(p, r)
    assert r.errors[counter] >= 1
    if fault == "drop":
        assert r.stalled and r.recv == r.sent - 1
    if fault == "duplicate":
        assert r.recv == r.sent + 1
