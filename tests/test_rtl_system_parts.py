# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the system's sub-components (rtl_gen/system_parts.py)."""

from __future__ import annotations

import random

import pytest
from amaranth.hdl import ClockDomain, Module

from rtl_gen import registry
from rtl_gen.layouts import (
    SYSTEM_TARGETS,
    dense_codes_layout,
    dense_pack,
    node_layout,
    pack,
    route_layout,
)
from rtl_gen.params import RTLConfig
from rtl_gen.registry import Block, Node, Ref
from rtl_gen.simulation import run_simulator, stream_get, stream_put
from rtl_gen.system_parts import (
    CodeEvents,
    CodeGather,
    EventFork,
    Injector,
    NodeAdapter,
    OutputMerge,
    Sequencer,
    SystemConfig,
    node_component,
)

CFG = RTLConfig(T=8, k=1, n_in=8, tile_neurons=4, mesh_rows=1, mesh_cols=3)  # P = 3


def clocked(dut):
    """``dut`` inside a module with a ``sync`` domain (a combinational part has none)."""
    m = Module()
    m.domains.sync = ClockDomain()
    m.submodules.dut = dut
    return m


def test_system_config_registers_and_tile_beats():
    dut = SystemConfig(CFG)
    route = pack(route_layout(CFG), {"dst_x": 2, "dst_y": 0, "offset": 5})
    node = pack(node_layout(CFG), {"enable": 1, "layer": 1, "n_dst": 2, "out_offset": 7})
    got = {}

    async def bench(ctx):
        await stream_put(ctx, dut.load, {"node": 1, "target": SYSTEM_TARGETS["route"],
                                         "addr": 0, "data": route})
        await stream_put(ctx, dut.load, {"node": 2, "target": SYSTEM_TARGETS["node"],
                                         "addr": 0, "data": node})
        await stream_put(ctx, dut.load, {"node": 0, "target": SYSTEM_TARGETS["system"],
                                         "addr": 0, "data": 3})
        got["route"] = ctx.get(dut.route[1])
        got["node"] = ctx.get(dut.node[2])
        got["n_layers"] = ctx.get(dut.n_layers)
        got["other"] = ctx.get(dut.route[2].as_value())
        # a tile beat goes to the addressed tile only, and waits for its ready
        ctx.set(dut.load.valid, 1)
        ctx.set(dut.load.payload, {"node": 1, "target": SYSTEM_TARGETS["init"], "addr": 3,
                                   "data": 9})
        got["valid"] = [ctx.get(t.valid) for t in dut.tile]
        got["ready_before"] = ctx.get(dut.load.ready)
        ctx.set(dut.tile[1].ready, 1)
        got["ready_after"] = ctx.get(dut.load.ready)
        got["payload"] = ctx.get(dut.tile[1].payload)
        ctx.set(dut.running, 1)
        got["running"] = (ctx.get(dut.load.ready), ctx.get(dut.tile[1].valid))

    run_simulator(dut, bench)
    assert (got["route"].dst_x, got["route"].dst_y, got["route"].offset) == (2, 0, 5)
    assert (got["node"].enable, got["node"].layer, got["node"].n_dst,
            got["node"].out_offset) == (1, 1, 2, 7)
    assert (got["n_layers"], got["other"]) == (3, 0)
    assert got["valid"] == [0, 1, 0]
    assert (got["ready_before"], got["ready_after"]) == (0, 1)
    payload = got["payload"]
    assert (payload.target, payload.addr, payload.data) == (2, 3, 9)
    assert got["running"] == (0, 0)


def test_event_fork_gives_each_enabled_output_every_beat_once():
    dut = EventFork(CFG)
    beats = [{"addr": a, "tau": a % 8, "last": int(a == 5)} for a in range(6)]
    got = {0: [], 2: []}
    rng = random.Random(1)

    async def source(ctx):
        ctx.set(dut.en, 0b101)
        for beat in beats:
            await stream_put(ctx, dut.i, beat)

    def sink(n):
        async def take(ctx):
            for _ in beats:
                for _ in range(rng.randrange(3)):
                    await ctx.tick()
                payload = await stream_get(ctx, dut.o[n])
                got[n].append(int(payload.addr))
        return take

    async def disabled(ctx):
        while True:  # a disabled output never offers a beat
            _, _, valid = await ctx.tick().sample(dut.o[1].valid)
            assert not valid

    run_simulator(dut, source, sink(0), sink(2), background=[disabled])
    assert got == {0: list(range(6)), 2: list(range(6))}


def test_injector_walks_its_destination_range_row_major():
    cfg = RTLConfig(T=8, k=1, n_in=8, tile_neurons=4, mesh_rows=2, mesh_cols=3)
    dut = Injector(cfg)
    flits = []

    async def bench(ctx):
        ctx.set(dut.route, {"dst_x": 1, "dst_y": 0, "offset": 4})
        ctx.set(dut.n_dst, 4)  # nodes 1, 2, 3, 4: the walk wraps from (2, 0) to (0, 1)
        await stream_put(ctx, dut.i, {"addr": 3, "t": 6, "last": 0})
        await stream_put(ctx, dut.i, {"addr": 0, "t": 7, "last": 0})  # starts again at node 1
        ctx.set(dut.n_dst, 0)  # no destination: the event is dropped at once
        clocks = await stream_put(ctx, dut.i, {"addr": 1, "t": 2, "last": 0})
        flits.append(("dropped after", clocks))

    async def drain(ctx):
        for _ in range(8):
            for _ in range(len(flits) % 3):  # some backpressure
                await ctx.tick()
            p = await stream_get(ctx, dut.o)
            flits.append((int(p.dst_x), int(p.dst_y), int(p.addr), int(p.t), int(p.hops)))

    run_simulator(dut, bench, drain)
    walk = [(1, 0), (2, 0), (0, 1), (1, 1)]
    assert flits == ([(x, y, 7, 6, 0) for x, y in walk] + [(x, y, 4, 7, 0) for x, y in walk]
                     + [("dropped after", 1)])


def test_output_merge_orders_by_time_then_address():
    dut = OutputMerge(CFG)
    streams = {0: [(0, 1), (1, 3)], 2: [(0, 1), (3, 2)]}  # (addr, t), time order per node
    out = []

    def source(n):
        async def put(ctx):
            for addr, t in streams[n]:
                await stream_put(ctx, dut.i[n], {"addr": addr, "t": t, "last": 0})
            ctx.set(dut.done, ctx.get(dut.done) | 1 << n)  # the node's tile emitted its marker
        return put

    async def bench(ctx):
        ctx.set(dut.final, 0b101)
        ctx.set(dut.offset[0], 0)
        ctx.set(dut.offset[2], 4)
        ctx.set(dut.active, 1)
        while not out or not out[-1][2]:
            p = await stream_get(ctx, dut.o)
            out.append((int(p.addr), int(p.t), int(p.last)))

    run_simulator(clocked(dut), bench, source(0), source(2))
    # node 2's events are global addresses 4 and 7; the marker comes once both nodes are done
    assert out == [(0, 1, 0), (4, 1, 0), (7, 2, 0), (1, 3, 0), (0, 0, 1)]


def test_output_merge_waits_for_every_final_node():
    dut = OutputMerge(CFG)
    seen = []

    async def bench(ctx):
        ctx.set(dut.final, 0b011)
        ctx.set(dut.active, 1)
        ctx.set(dut.i[0].valid, 1)
        ctx.set(dut.i[0].payload, {"addr": 2, "t": 5, "last": 0})
        seen.append(ctx.get(dut.o.valid))  # node 1 neither shows an event nor is done
        ctx.set(dut.done, 0b010)
        seen.append(ctx.get(dut.o.valid))

    run_simulator(clocked(dut), bench)
    assert seen == [0, 1]


def test_sequencer_walks_layers():
    dut = Sequencer(CFG)
    log = []

    async def bench(ctx):
        for n, layer in enumerate((0, 1, 2)):
            ctx.set(dut.node[n], {"enable": 1, "layer": layer, "n_dst": 1, "out_offset": 0})
        ctx.set(dut.n_layers, 3)
        log.append(("first", ctx.get(dut.first), "final", ctx.get(dut.final)))
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        ctx.set(dut.mesh_busy, 1)
        ctx.set(dut.tile_done, 0b001)  # layer 0 done while flits are in flight
        await ctx.tick()
        ctx.set(dut.tile_done, 0)
        await ctx.tick()
        log.append(("busy mesh", ctx.get(dut.mark)))
        ctx.set(dut.mesh_busy, 0)
        await ctx.tick()
        log.append(("marker", ctx.get(dut.mark), ctx.get(dut.final_stage)))
        ctx.set(dut.mark_taken, 0b010)
        await ctx.tick()
        ctx.set(dut.mark_taken, 0)
        ctx.set(dut.tile_done, 0b010)
        await ctx.tick()
        ctx.set(dut.tile_done, 0)
        await ctx.tick()
        log.append(("final", ctx.get(dut.mark), ctx.get(dut.final_stage)))
        ctx.set(dut.finish, 1)
        await ctx.tick()
        log.append(("end", ctx.get(dut.running), ctx.get(dut.done)))

    run_simulator(dut, bench)
    assert log == [("first", 0b001, "final", 0b100), ("busy mesh", 0), ("marker", 0b010, 0),
                   ("final", 0b100, 1), ("end", 0, 0)]


def test_code_gather_sends_every_address_in_order_with_the_silent_code_for_the_missing():
    cfg = RTLConfig(T=8, k=1, n_in=6, tile_neurons=4)  # sym: c = 3
    dut = CodeGather(cfg)
    events = [(4, 0), (1, 6), (0, 3)]  # any order; addresses 2, 3, 5 get no event
    windows = []

    async def source(ctx):
        ctx.set(dut.i_max, 2)  # silent code c - 2 = 1
        for _ in range(2):  # the second window starts with nothing seen
            for a, tau in events:
                await stream_put(ctx, dut.i, {"addr": a, "tau": tau, "last": 0})
            await stream_put(ctx, dut.i, {"addr": 0, "tau": 0, "last": 1})
            events[:] = [(5, 7)]

    async def sink(ctx):
        for _ in range(2):
            codes = []
            while True:
                for _ in range(len(codes) % 2):  # backpressure
                    await ctx.tick()
                p = await stream_get(ctx, dut.o)
                if p.last:
                    break
                codes.append(int(p.code))
            windows.append(codes)

    run_simulator(dut, source, sink)
    # codes modulo 2**3: c - tau for an event, c - i_max = 1 for none
    assert windows == [[0, 5, 1, 1, 3, 1], [1, 1, 1, 1, 1, (3 - 7) % 8]]


def test_code_events_emits_the_codes_outside_the_dead_zone_in_address_order():
    cfg = RTLConfig(T=8, k=1, n_in=4, tile_neurons=5)  # P = 5 codes of 3 bits per beat
    assert dense_pack(cfg) == 5
    dut = CodeEvents(cfg)
    layout = dense_codes_layout(cfg)
    codes = [3, 1, 0, -4, 2]  # t = c - q = 0, 2, 3, 7, 1
    out = []

    async def source(ctx):
        ctx.set(dut.i_max, 2)
        ctx.set(dut.k, 1)  # t in 1..3 is dropped
        await stream_put(ctx, dut.i, {"addr": 0, "codes": pack(layout, codes), "last": 0})
        await stream_put(ctx, dut.i, {"addr": 0, "codes": 0, "last": 1})

    async def sink(ctx):
        while True:
            await ctx.tick()  # backpressure on every beat
            p = await stream_get(ctx, dut.o)
            out.append((int(p.addr), int(p.t), int(p.last)))
            if p.last:
                break

    run_simulator(dut, source, sink)
    assert out == [(0, 0, 0), (3, 7, 0), (0, 0, 1)]


def test_code_events_skips_the_padding_codes_of_the_last_beat():
    cfg = RTLConfig(T=16, k=0, n_in=4, tile_neurons=6)  # P = 4: beats of neurons 0..3, 4..7
    dut = CodeEvents(cfg)
    layout = dense_codes_layout(cfg)
    out = []

    async def source(ctx):
        ctx.set(dut.i_max, 15)  # code -8 is silent
        await stream_put(ctx, dut.i, {"addr": 0, "codes": pack(layout, [0, 1, 2, 3]),
                                      "last": 0})
        await stream_put(ctx, dut.i, {"addr": 4, "codes": pack(layout, [4, 5, 0, 0]),
                                      "last": 0})
        await stream_put(ctx, dut.i, {"addr": 0, "codes": 0, "last": 1})

    async def sink(ctx):
        while not out or not out[-1][2]:
            p = await stream_get(ctx, dut.o)
            out.append((int(p.addr), int(p.t), int(p.last)))

    run_simulator(dut, source, sink)
    assert out == [(j, 7 - j, 0) for j in range(6)] + [(0, 0, 1)]


def test_node_component_wraps_only_a_codes_block():
    cfg = RTLConfig(T=4, k=1, n_in=4, tile_neurons=2)
    tile, dense = registry.block("tile"), registry.block("dense_tile")
    assert type(node_component(cfg, tile)).__name__ == "NeuronTile"
    wrapped = node_component(cfg, dense)
    assert isinstance(wrapped, NodeAdapter)
    ports = {"__".join(map(str, p)) for p, _ in wrapped.signature.members.flatten()}
    assert {"load__valid", "i__payload", "o__payload", "busy", "cnt_codes_in"} <= ports
    # a registered block that declares node ports its component lacks is refused
    fake = Block("fake", "fake", Ref("rtl_gen.encoder:Encoder"), "docs/x.md", "x",
                 counters=tile.counters,
                 node=Node("events", "events", tile.node.image, tile.node.run))
    with pytest.raises(ValueError, match=r"block 'fake' lacks the mesh node ports "
                       r"\[.*'i', 'load', 'o'\] of its declared kinds \(i: events, o: events\)"):
        node_component(cfg, fake)
    with pytest.raises(ValueError, match="block 'router' has no mesh node ports"):
        node_component(cfg, registry.block("router"))
