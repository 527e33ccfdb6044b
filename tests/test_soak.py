"""The router soak harness in the Amaranth simulator: the harness agrees with its Python model
and its checkers catch planted faults and mutant routers (the long runs are on Verilator:
cocotb_tests/test_soak.py, benchmarks/bench_soak.py)."""

from __future__ import annotations

import inspect
import textwrap

import pytest

from regression.soak import SoakParams, expected_traffic, simulate_soak, verdict
from rtl_gen import router as router_mod
from rtl_gen.router import Mesh, Router

SHORT = {"flits": 20, "seed": 7}


def test_2000_flits_deliver_the_model_stream_exactly():
    p = SoakParams(flits=125, seed=7)
    r = simulate_soak(p, record=True)
    assert verdict(p, r) == []
    traffic = expected_traffic(p)
    want = {}
    for s, dsts in enumerate(traffic.dsts):
        for d in dsts:
            seq = len(want.setdefault((s, d), []))
            dist = abs(s % 4 - d % 4) + abs(s // 4 - d // 4)
            want[(s, d)].append((seq, dist, d % 4, d // 4))
    # every pair's flits, in delivery order, are the model's: exactly once, in order, right hops
    assert r.streams == want
    assert r.recv == p.total == 2000
    assert sum(1 for s, d in want if d == p.hot) == 16  # every source reached the hotspot


def test_model_counts_follow_the_hotspot_fraction():
    p = SoakParams(flits=2000, p_hot=128, hot=10)
    counts = expected_traffic(p).pair_counts(16)
    to_hot = sum(counts[s * 16 + 10] for s in range(16))
    # half of the flits go to the hotspot on purpose, plus 1/16 of the rest
    assert abs(to_hot / p.total - (0.5 + 0.5 / 16)) < 0.02
    assert expected_traffic(SoakParams(flits=50, seed=3)) != expected_traffic(
        SoakParams(flits=50, seed=4))


@pytest.mark.parametrize(
    ("fault", "counter"),
    # duplicate and misroute too on Verilator (cocotb_tests/test_soak.py)
    [("drop", "err_order"), ("reorder", "err_order")],
)
def test_checkers_catch_a_planted_fault(fault, counter):
    p = SoakParams(**SHORT, fault=fault, fault_at=10)
    r = simulate_soak(p)
    problems = verdict(p, r)
    assert problems
    assert r.errors[counter] >= 1, r.errors
    if fault == "drop":
        assert r.stalled and r.recv == r.sent - 1
    if fault == "reorder":  # nothing lost: only the order check sees it
        assert r.recv == r.sent and r.errors["err_order"] == 2
        assert r.pair_sent == r.pair_recv


def _mutant_router(old: str, new: str) -> type[Router]:
    """``Router`` with one source line of ``elaborate`` changed (the test fails if the line is
    not found, so the mutant cannot silently become the original)."""
    src = textwrap.dedent(inspect.getsource(Router.elaborate))
    assert src.count(old) == 1, old
    ns = dict(vars(router_mod))
    exec(compile(src.replace(old, new), "<mutant>", "exec"), ns)
    return type("MutantRouter", (Router,), {"elaborate": ns["elaborate"]})


def _mesh_of(router_cls):
    src = textwrap.dedent(inspect.getsource(Mesh.elaborate))
    ns = dict(vars(router_mod), Router=router_cls)
    exec(compile(src, "<mutant mesh>", "exec"), ns)
    return type("MutantMesh", (Mesh,), {"elaborate": ns["elaborate"]})


_AT_11 = "((x == 1) & (y == 1))"
MUTANTS = {
    # the output pops its selected input whenever the next FIFO is ready, valid or not: loss
    "drop": ("take = out.valid & out.ready", "take = out.ready"),
    # router (1, 1) sends flits bound east to the south instead (delivered, two hops too many)
    "wrong_turn": (
        "want[_S].eq(fifo.r.valid & ~go_x & (f.dst_y > y)),",
        (f"want[_S].eq(fifo.r.valid & ((~go_x & (f.dst_y > y)) | ((f.dst_x > x) & {_AT_11}))), "
         f"want[_E].eq(fifo.r.valid & (f.dst_x > x) & ~{_AT_11}),"),
    ),
    # the local output adds a hop too
    "local_hop": ("if o != _L:", "if True:"),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_soak_catches_a_mutant_router(name):
    old, new = MUTANTS[name]
    p = SoakParams(**SHORT, limit=3000)
    r = simulate_soak(p, mesh=_mesh_of(_mutant_router(old, new)))
    assert verdict(p, r), name
    if name == "wrong_turn":
        assert r.errors["err_hops"] > 0 and r.errors["err_order"] == 0
        assert r.recv == r.sent
    if name == "local_hop":
        assert r.errors["err_hops"] == r.recv


@pytest.mark.parametrize(
    ("kw", "msg"),
    [({"p_valid": 0}, "p_valid must be 1..256, not 0"),
     ({"hot": 16}, "hot must be 0..15, not 16"),
     ({"fault": "flip"}, "fault must be one of"),
     ({"seq_width": 33}, "seq_width must be 1..32, not 33")],
)
def test_bad_parameters(kw, msg):
    with pytest.raises(ValueError, match=msg):
        SoakParams(**kw)
