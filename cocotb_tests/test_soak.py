"""The router soak on Verilator, shortened for the suite (the million-flit run is
benchmarks/bench_soak.py): one clean run on the 4x4 mesh must pass every check and agree with
the Python model (slow), and each planted fault must fail it, on a 2x2 build of the same harness:
the same sources, checkers and fault stage at a quarter of the 4x4's size, whose Verilator build
was most of this file's time (the 4x4 mesh's checkers are checked in the Amaranth simulator by
tests/test_soak.py, with the drop, the reorder and three mutant routers)."""

from __future__ import annotations

from pathlib import Path

import pytest

from regression.soak import SoakParams, build_soak, expected_traffic, run_soak, verdict

ROOT = Path(__file__).resolve().parents[1] / "build" / "cocotb"
#: 100 000 flits (6250 per node) under backpressure and a 25 % hotspot.
CLEAN = SoakParams(flits=6250, seed=11, p_valid=192, p_ready=192, p_hot=64, hot=5)
#: The planted faults' mesh and hotspot (node (1, 1): flits reach it over 0, 1 and 2 hops).
FAULT_MESH, FAULT_HOT = (2, 2), 3


@pytest.fixture(scope="module")
def soak_build():
    b, _ = build_soak(ROOT)  # beside the regression's builds; benchmarks/bench_soak.py reuses it
    return b


@pytest.fixture(scope="module")
def fault_build():
    b, _ = build_soak(ROOT, *FAULT_MESH)
    return b


@pytest.mark.slow
def test_soak_100k_flits(soak_build, tmp_path):
    r = run_soak(soak_build, CLEAN, tmp_path / "run")
    assert verdict(CLEAN, r, expected_traffic(CLEAN)) == []
    assert r.recv == r.sent == 100_000
    assert r.node_recv[CLEAN.hot] > 2 * max(n for i, n in enumerate(r.node_recv) if i != 5)


def test_fault_mesh_passes_without_a_fault(fault_build, tmp_path):
    """The 2x2 build delivers a clean run exactly (so the faults below are what fails)."""
    p = SoakParams(*FAULT_MESH, flits=500, seed=3, hot=FAULT_HOT)
    r = run_soak(fault_build, p, tmp_path / "run")
    assert verdict(p, r) == []
    assert r.recv == r.sent == p.total == 2000


@pytest.mark.parametrize(("fault", "counter"), [("drop", "err_order"),
                                                ("duplicate", "err_order"),
                                                ("reorder", "err_order"),
                                                ("misroute", "err_dst")])
def test_soak_catches_a_planted_fault(fault_build, tmp_path, fault, counter):
    p = SoakParams(*FAULT_MESH, flits=500, seed=3, hot=FAULT_HOT, fault=fault, fault_at=100)
    r = run_soak(fault_build, p, tmp_path / "run")
    assert verdict(p, r)
    assert r.errors[counter] >= 1
    if fault == "drop":
        assert r.stalled and r.recv == r.sent - 1
    if fault == "duplicate":
        assert r.recv == r.sent + 1
