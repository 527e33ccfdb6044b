# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the XY mesh router and the mesh (rtl_gen/router.py)."""

from __future__ import annotations

import random

import pytest
from amaranth.sim import Simulator

from rtl_gen.layouts import flit_layout
from rtl_gen.router import PORTS, Mesh, Router, xy_route
from rtl_gen.simulation.mesh import simulate_zero_load

ADDR_W, TIME_W = 12, 4


def flit(dst_x, dst_y, addr, t, hops=0):
    return {"dst_x": dst_x, "dst_y": dst_y, "addr": addr, "t": t, "hops": hops}


def run_mesh_traffic(rows, cols, traffic, *, seed, p_valid=0.7, p_ready=0.6, max_cycles=20000):
    """Inject ``traffic[(x, y)] = [(dst_x, dst_y, addr, t), ...]`` with random gaps, drain the
    local outputs with random backpressure; return the deliveries and the cycle count.

    Also checks the stream rule on every local output: once valid, a flit stays valid with the
    same payload until it is taken.
    """
    rng = random.Random(seed)
    dut = Mesh(rows, cols, addr_width=ADDR_W, time_width=TIME_W)
    nodes = [(x, y) for y in range(rows) for x in range(cols)]
    queues = {n: list(traffic.get(n, [])) for n in nodes}
    total = sum(len(q) for q in queues.values())
    received = {n: [] for n in nodes}  # in arrival order: (src-addr, t, hops)
    stats = {}

    async def bench(ctx):
        cycles = 0
        offered = {n: False for n in nodes}
        held = {}
        got = 0
        while got < total:
            assert cycles < max_cycles, "mesh did not deliver all flits (deadlock or loss)"
            sampled = []
            for n in nodes:
                x, y = n
                port = dut.i[y][x]
                if not offered[n] and queues[n] and rng.random() < p_valid:
                    offered[n] = True
                    dx, dy, addr, t = queues[n][0]
                    ctx.set(port.payload, flit(dx, dy, addr, t))
                ctx.set(port.valid, offered[n])
                ctx.set(dut.o[y][x].ready, rng.random() < p_ready)
                sampled += [port.ready, dut.o[y][x].valid, dut.o[y][x].ready,
                            dut.o[y][x].payload]
            _, _, *vals = await ctx.tick().sample(*sampled)
            cycles += 1
            for k, n in enumerate(nodes):
                in_ready, o_valid, o_ready, payload = vals[4 * k: 4 * k + 4]
                if offered[n] and in_ready:
                    queues[n].pop(0)
                    offered[n] = False
                if o_valid:
                    value = (payload.dst_x, payload.dst_y, payload.addr, payload.t,
                             payload.hops)
                    if n in held:
                        assert held[n] == value, f"payload changed while stalled at {n}"
                    if o_ready:
                        received[n].append(value)
                        held.pop(n, None)
                        got += 1
                    else:
                        held[n] = value
                else:
                    assert n not in held, f"valid dropped before the flit was taken at {n}"
        # nothing is left inside and nothing more arrives
        for _ in range(2 * (rows + cols)):
            for n in nodes:
                ctx.set(dut.i[n[1]][n[0]].valid, 0)
                ctx.set(dut.o[n[1]][n[0]].ready, 1)
            _, _, *valids = await ctx.tick().sample(
                *(dut.o[y][x].valid for x, y in nodes))
            assert not any(valids), "a flit was delivered twice"
        assert not ctx.get(dut.busy)
        stats["cycles"] = cycles

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return received, stats["cycles"]


def random_traffic(rows, cols, per_node, rng):
    """Random destinations; ``addr`` encodes source node and sequence number."""
    traffic = {}
    for y in range(rows):
        for x in range(cols):
            src = y * cols + x
            traffic[x, y] = [
                (rng.randrange(cols), rng.randrange(rows), (src << 6) | s, rng.randrange(2**TIME_W))
                for s in range(per_node)
            ]
    return traffic


def check_delivery(rows, cols, traffic, received):
    """Exactly once, in order per (source, destination), hop count == Manhattan distance."""
    for (x, y), got in received.items():
        for dx, dy, _addr, _t, _hops in got:
            assert (dx, dy) == (x, y), f"flit for {(dx, dy)} ejected at {(x, y)}"
        by_src = {}
        for _dx, _dy, addr, t, hops in got:
            src = addr >> 6
            sx, sy = src % cols, src // cols
            assert hops == abs(sx - x) + abs(sy - y), f"hops {hops} from {(sx, sy)} to {(x, y)}"
            by_src.setdefault((sx, sy), []).append((addr, t))
        for (sx, sy), seq in by_src.items():
            sent = [(a, t) for dx, dy, a, t in traffic[sx, sy] if (dx, dy) == (x, y)]
            assert seq == sent, f"flits from {(sx, sy)} to {(x, y)} lost, duplicated or reordered"
        expected = sum(1 for f in traffic.values() for dx, dy, *_ in f if (dx, dy) == (x, y))
        assert len(got) == expected


@pytest.mark.parametrize(
    ("rows", "cols", "per_node", "seed"),
    [(1, 1, 12, 1), (1, 4, 24, 2), (3, 1, 24, 3), (2, 2, 30, 4), (3, 3, 24, 5), (4, 4, 12, 6)],
)
def test_random_traffic_backpressure(rows, cols, per_node, seed):
    rng = random.Random(seed)
    traffic = random_traffic(rows, cols, per_node, rng)
    received, _ = run_mesh_traffic(rows, cols, traffic, seed=seed)
    check_delivery(rows, cols, traffic, received)


def test_hotspot_heavy_backpressure():
    # every node sends to (1, 1); the sink takes a flit one cycle in five
    rng = random.Random(7)
    traffic = {(x, y): [(1, 1, ((y * 3 + x) << 6) | s, rng.randrange(16)) for s in range(8)]
               for y in range(3) for x in range(3)}
    received, _ = run_mesh_traffic(3, 3, traffic, seed=7, p_valid=1.0, p_ready=0.2)
    check_delivery(3, 3, traffic, received)


def test_zero_load_latency_one_clock_per_hop():
    # each single flit: ejected (hops + 1) clocks after the clock that injected it
    rows, cols = 3, 4
    seen = []
    for trip in simulate_zero_load(rows, cols, addr_width=ADDR_W, time_width=TIME_W, addr=5, t=3,
                                   max_clocks=20):
        seen.append((trip.src, trip.dst, trip.clocks, trip.hops))
        assert not trip.busy_after
    assert len(seen) == (rows * cols) ** 2
    for (sx, sy), (dx, dy), wait, hops in seen:
        dist = abs(sx - dx) + abs(sy - dy)
        assert (wait, hops) == (dist + 1, dist), ((sx, sy), (dx, dy))


def test_router_xy_decision_and_hop_increment():
    # a stand-alone router with its position on input ports, every destination from every port
    rows, cols = 3, 3
    dut = Router(rows, cols, addr_width=ADDR_W, time_width=TIME_W)
    results = []

    async def bench(ctx):
        for p in PORTS:
            ctx.set(getattr(dut, f"o_{p}").ready, 1)
        for x in range(cols):
            for y in range(rows):
                ctx.set(dut.x, x)
                ctx.set(dut.y, y)
                for p in PORTS:
                    for dx in range(cols):
                        for dy in range(rows):
                            port = getattr(dut, f"i_{p}")
                            ctx.set(port.payload, flit(dx, dy, 1, 2, hops=1))
                            ctx.set(port.valid, 1)
                            await ctx.tick()
                            ctx.set(port.valid, 0)
                            outs = [getattr(dut, f"o_{q}") for q in PORTS]
                            _, _, *vals = await ctx.tick().sample(
                                *(o.valid for o in outs), *(o.payload.hops for o in outs))
                            fired = [q for q, v in zip(PORTS, vals[:5], strict=True) if v]
                            hops = [h for v, h in zip(vals[:5], vals[5:], strict=True) if v]
                            results.append(((x, y), (dx, dy), fired, hops))

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    for (x, y), (dx, dy), fired, hops in results:
        want = xy_route(x, y, dx, dy)
        assert fired == [want]
        assert hops == [1 if want == "local" else 2]


def test_round_robin_is_fair():
    # all five inputs keep requesting the local output: grants rotate through every input
    dut = Router(1, 1, x=0, y=0, addr_width=ADDR_W, time_width=TIME_W)
    order = []

    async def bench(ctx):
        counters = dict.fromkeys(PORTS, 0)
        ctx.set(dut.o_local.ready, 1)
        for _ in range(40):
            for i, p in enumerate(PORTS):
                port = getattr(dut, f"i_{p}")
                ctx.set(port.payload, flit(0, 0, (i << 6) | counters[p], 0))
                ctx.set(port.valid, 1)
            _, _, *vals = await ctx.tick().sample(
                dut.o_local.valid, dut.o_local.payload.addr,
                *(getattr(dut, f"i_{p}").ready for p in PORTS))
            valid, addr, readies = vals[0], vals[1], vals[2:]
            for p, r in zip(PORTS, readies, strict=True):
                if r:
                    counters[p] += 1
            if valid:
                order.append(addr >> 6)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    steady = order[5:35]
    for k in range(len(steady) - 4):
        assert sorted(steady[k:k + 5]) == [0, 1, 2, 3, 4], steady
    assert len(order) >= 38  # one flit per clock


def test_flit_layout_fields():
    layout = flit_layout(3, 5, 10, 4)
    fields = [(name, field.offset, field.width) for name, field in layout]
    # dst_x: 0..4 (3 bits), dst_y: 0..2 (2 bits), hops up to 6 (3 bits)
    assert fields == [("dst_x", 0, 3), ("dst_y", 3, 2), ("addr", 5, 10), ("t", 15, 4),
                      ("hops", 19, 3)]
    assert [f[0] for f in flit_layout(1, 1, 1, 1)] == ["dst_x", "dst_y", "addr", "t", "hops"]
    assert flit_layout(1, 1, 1, 1).size == 5


@pytest.mark.parametrize(
    ("call", "exc", "message"),
    [
        (lambda: Router(0, 2), ValueError, "rows must be 1..16, not 0"),
        (lambda: Router(2, 17), ValueError, "cols must be 1..16, not 17"),
        (lambda: Router(2.0, 2), TypeError, "rows must be an integer, not 2.0"),
        (lambda: Router(2, True), TypeError, "cols must be an integer, not True"),
        (lambda: Router(2, 3, x=3, y=0), ValueError, "x must be 0..2, not 3"),
        (lambda: Router(2, 3, x=0, y=-1), ValueError, "y must be 0..1, not -1"),
        (lambda: Router(2, 3, x="0"), TypeError, "x must be an integer, not '0'"),
        (lambda: Router(2, 2, addr_width=0), ValueError, "addr_width must be 1..32, not 0"),
        (lambda: Router(2, 2, time_width=17), ValueError, "time_width must be 1..16, not 17"),
        (lambda: Mesh(2, 0), ValueError, "cols must be 1..16, not 0"),
        (lambda: Mesh(2, 2, addr_width=None), TypeError,
         "addr_width must be an integer, not None"),
    ],
)
def test_parameter_errors(call, exc, message):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == message


def test_ports_and_position():
    r = Router(2, 4, addr_width=8, time_width=3)
    names = list(r.signature.members)
    assert names == [*(f"i_{p}" for p in PORTS), *(f"o_{p}" for p in PORTS), "busy", "x", "y"]
    assert r.position == (None, None)
    fixed = Router(2, 4, x=1, y=1)
    assert "x" not in fixed.signature.members and fixed.position == (1, 1)
