# amaranth: UnusedElaboratable=no
"""Amaranth-simulator tests of the system: encoder + tile mesh + sequencer (rtl_gen/system.py).

Every inference is compared with :func:`rtl_gen.mapper.system_reference`: the system output
events (order included), every tile's counters, the encoder counters, the number of flits and
the sum of their hop counts.
"""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from golden_models import IntegerLayer, encode_events
from golden_models.qnn import random_qnn
from rtl_gen.layouts import system_load_layout
from rtl_gen.mapper import (
    Edge,
    Graph,
    Stage,
    config_for_chain,
    map_chain,
    map_graph,
    system_reference,
)
from rtl_gen.params import RTLConfig
from rtl_gen.simulation import stream_put
from rtl_gen.simulation.mesh import load_system, simulate_system
from rtl_gen.system import System, system_from_config


def check_system(widths, *, T, k, N, mesh, weight_bits=1, families=None, lanes=None,
                 batch=4, seed=0, o_ready=0.6, distribution="uniform", reset_after=None,
                 blocks=None):
    qnn = random_qnn(widths, T=T, k=k, weight_bits=weight_bits, seed=seed,
                     distribution=distribution, families=families)
    layers = qnn.integer_layers()
    cfg = config_for_chain(layers, tile_neurons=N, mesh_rows=mesh[0], mesh_cols=mesh[1],
                           lanes=lanes)
    smap = map_chain(cfg, layers, blocks)
    inputs = qnn.random_input(batch, seed=seed + 1)
    results, total_events = check_map(smap, inputs, o_ready=o_ready, seed=seed,
                                      reset_after=reset_after)
    return smap, results, total_events


def check_map(smap, inputs, *, o_ready=0.6, seed=0, reset_after=None):
    """Simulate the mapped system on ``inputs``; every inference must equal
    :func:`system_reference`: output events in order, every node's counters, the encoder's,
    the flit and hop totals."""
    cfg, first = smap.config, smap.input_layer
    results = simulate_system(smap, inputs, o_ready=o_ready, seed=seed, reset_after=reset_after,
                              max_cycles=20_000)
    total_events = 0
    for b, (q, res) in enumerate(zip(inputs, results, strict=True)):
        ref = system_reference(smap, q)
        want = list(zip(ref.out_index.tolist(), ref.out_time.tolist(), strict=True))
        assert res.events == want, f"inference {b}: output events differ"
        for node, counters in ref.tile_counters.items():
            assert res.tile_counters[node] == counters.as_dict(), f"inference {b}, node {node}"
        assert res.encoder["events_out"] == ref.encoder_events
        assert res.encoder["events_suppressed"] == first.n_in - ref.encoder_events + (
            cfg.n_in - first.n_in)
        assert (res.flits, res.hops) == (len(ref.flits), ref.total_hops), f"inference {b}"
        total_events += sum(len(e) for e in ref.tile_events.values())
    return results, total_events


@pytest.mark.parametrize(
    ("T", "k", "weight_bits", "families"),
    [(8, 1, 1, None), (4, 0, 2, ("asym", "sym", "asym", "sym")), (16, 1, 1, None)],
)
def test_three_layers_on_2x2(T, k, weight_bits, families):
    # layer 0: two tiles, layer 1: one tile, layer 2: one tile
    smap, _, events = check_system((8, 8, 4, 4), T=T, k=k, N=4, mesh=(2, 2),
                                   weight_bits=weight_bits, families=families)
    assert [t.node for t in smap.tiles] == [0, 1, 2, 3]
    assert events > 0


def test_split_final_layer_fanout_padding_and_idle_node():
    # N = 3 on 2x3: layer 0 one tile feeding two layer-1 tiles, layer 1 padded (5 = 3 + 2),
    # final layer split over two tiles (the output merge), one node left idle
    smap, _, _ = check_system((6, 3, 5, 4), T=8, k=1, N=3, mesh=(2, 3), batch=5, seed=3)
    assert [len(t.dests) for t in smap.tiles] == [2, 2, 2, 0, 0]
    assert [t.n_live for t in smap.tiles] == [3, 3, 2, 3, 1]
    assert smap.tile_at(5) is None


def test_destination_range_wraps_to_the_next_mesh_row():
    # N = 4 on 2x2: the layer-0 tile (node 0) feeds nodes 1 = (1, 0) and 2 = (0, 1)
    smap, _, events = check_system((8, 4, 8, 4), T=8, k=1, N=4, mesh=(2, 2), seed=7)
    assert [(n, x, y) for n, x, y in smap.tiles[0].dests] == [(1, 1, 0), (2, 0, 1)]
    assert events > 0


@pytest.mark.slow
def test_8x8_mesh_every_node_used():
    # N = 1: 24 + 24 + 16 tiles fill the 64 nodes; each layer-0 tile's range spans three rows
    smap, results, events = check_system((8, 24, 24, 16), T=8, k=1, N=1, mesh=(8, 8), batch=1,
                                         seed=2)
    assert len(smap.tiles) == 64 and smap.tiles[0].dests[0][0] == 24
    assert events > 0 and results[0].flits > 0


def test_lane_groups_and_multibit_weights():
    check_system((6, 4, 4, 4), T=4, k=1, N=4, lanes=3, mesh=(2, 2), weight_bits=3, seed=5)


def test_everything_silent_gives_empty_windows():
    # k = T-1: every event is in the dead zone; every window is a lone marker
    _, results, events = check_system((4, 2, 2, 2), T=4, k=3, N=2, mesh=(1, 3), batch=2)
    assert events == 0
    assert all(r.events == [] and r.flits == 0 for r in results)


@st.composite
def system_cases(draw):
    T = draw(st.sampled_from([2, 4, 8, 16]))
    k = draw(st.integers(0, min(T - 1, 2)))
    N = draw(st.integers(2, 4))
    widths = tuple(draw(st.integers(2, 9)) for _ in range(4))
    tiles = sum(-(-w // N) for w in widths[1:])
    return dict(widths=widths, T=T, k=k, N=N, mesh=(2, -(-tiles // 2)),
                weight_bits=draw(st.sampled_from([1, 2, 4])), lanes=draw(st.integers(1, N)),
                o_ready=draw(st.sampled_from([1.0, 0.5, 0.2])), seed=draw(st.integers(0, 999)))


@settings(max_examples=6, deadline=None, derandomize=True)
@given(case=system_cases())
def test_random_chains(case):
    check_system(batch=2, **case)


@pytest.mark.parametrize("reset_after", [3, 20, 34, 51, 58])
def test_reset_mid_inference(reset_after):
    # rst while collecting codes (3), integrating layer 0 (20), with layer-0 flits in the mesh
    # (34), with layer-1 flits in the mesh (51), while emitting outputs (58): the system returns
    # to idle, and after a reload the next inferences are exact
    check_system((8, 8, 4, 4), T=8, k=0, N=4, mesh=(2, 2), batch=2, seed=7,
                 reset_after=reset_after)


def test_single_layer_on_one_node():
    check_system((5, 3), T=8, k=0, N=3, mesh=(1, 1), batch=3, o_ready=1.0)


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_ports_and_load_layout():
    cfg = RTLConfig(T=8, k=1, n_in=8, tile_neurons=4, mesh_rows=2, mesh_cols=2)
    dut = system_from_config(cfg)
    assert isinstance(dut, System)
    members = list(dut.signature.members)
    assert members[:4] == ["load", "i", "o", "busy"]
    assert members[4:] == [f"cnt_{c}_n{n}" for n in range(4) for c in cfg.tile_counters] + [
        "cnt_enc_events_out", "cnt_enc_events_suppressed", "cnt_flits", "cnt_hops"]
    fields = [(name, f.width) for name, f in system_load_layout(cfg)]
    assert fields == [("node", 2), ("target", 3), ("addr", cfg.load_addr_width),
                      ("data", cfg.load_data_width)]


def test_rejects_non_config():
    with pytest.raises(TypeError) as info:
        System({"T": 8})
    assert str(info.value) == "config must be an RTLConfig, not {'T': 8}"


def test_loads_refused_while_busy():
    from amaranth.sim import Simulator

    qnn = random_qnn((4, 2, 2), T=4, k=0, seed=2, distribution="uniform")
    layers = qnn.integer_layers()
    cfg = config_for_chain(layers, tile_neurons=2, mesh_rows=1, mesh_cols=2)
    smap = map_chain(cfg, layers)
    dut = System(cfg)
    seen = []

    async def bench(ctx):
        await load_system(ctx, dut, smap.load_beats())
        for q in smap.pad_input(torch.tensor([1, -2, 0, 1])).tolist():
            await stream_put(ctx, dut.i, {"q": q})
        # a node-configuration beat offered while the inference runs
        ctx.set(dut.load.valid, 1)
        ctx.set(dut.load.payload, {"node": 0, "target": 5, "addr": 0, "data": 0})
        ctx.set(dut.o.ready, 1)
        while True:
            _, _, busy, ready, valid, last = await ctx.tick().sample(
                dut.busy, dut.load.ready, dut.o.valid, dut.o.payload.last)
            seen.append((busy, ready))
            if valid and last:
                break
        ctx.set(dut.load.valid, 0)

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert all(busy and not ready for busy, ready in seen)


# -- mixed mesh: dense tiles beside M-TTFS tiles -----------------------------------------------


def chain_output(layers, q):
    """The golden chain on its own: its last layer's output events."""
    index, time = encode_events(q, layers[0].in_mask)
    for layer in layers:
        res = layer.run_events(index, time)
        index, time = res.out_index, res.out_time
    return list(zip(index.tolist(), time.tolist(), strict=True))


@pytest.mark.parametrize(
    ("blocks", "T", "k", "weight_bits", "families"),
    [(("tile", "dense_tile", "tile"), 8, 1, 1, None),
     (("dense_tile", "tile", "tile"), 16, 1, 1, None),
     (("dense_tile", "dense_tile", "tile"), 4, 1, 2, ("asym", "sym", "asym", "sym"))],
)
def test_dense_tiles_on_the_mesh_beside_spiking_tiles(blocks, T, k, weight_bits, families):
    # a dense node behind its adapters computes its layer as the spiking tiles do: the system
    # output is the golden chain's, and the dense node's own counters are the dense model's
    smap, results, events = check_system((8, 8, 4, 4), T=T, k=k, N=4, mesh=(2, 2), seed=11,
                                         weight_bits=weight_bits, families=families,
                                         blocks=blocks)
    dense = [t.node for t in smap.tiles if t.block == "dense_tile"]
    assert dense and [smap.node_blocks[n] for n in dense] == ["dense_tile"] * len(dense)
    assert all(set(results[0].tile_counters[n]) >= {"codes_in", "mac_ops"} for n in dense)
    assert all(results[0].tile_counters[n]["codes_in"] == smap.config.n_in for n in dense)
    assert events > 0
    qnn = random_qnn((8, 8, 4, 4), T=T, k=k, weight_bits=weight_bits, seed=11,
                     distribution="uniform", families=families)
    layers = qnn.integer_layers()
    for q, res in zip(qnn.random_input(4, seed=12), results, strict=True):
        assert res.events == chain_output(layers, q)


def _neurons(layer, lo, hi):
    return IntegerLayer(layer.weights[:, lo:hi], layer.weight_bits, layer.init[lo:hi],
                        layer.theta[lo:hi], layer.in_mask, layer.out_mask)


def test_a_graph_two_producers_feed_one_consumer():
    # layer 0 as two stages of 4 neurons each (one on a dense tile) feeding layer 1 at inputs
    # 0..3 and 4..7: the graph computes the chain, with a 2-stage level 0 and a 2-input edge
    qnn = random_qnn((8, 8, 4, 4), T=8, k=1, seed=21, distribution="uniform")
    l0, l1, l2 = qnn.integer_layers()
    graph = Graph(
        (Stage(_neurons(l0, 0, 4)), Stage(_neurons(l0, 4, 8), "dense_tile"), Stage(l1),
         Stage(l2)),
        (Edge(None, 0), Edge(None, 1), Edge(0, 2, 0), Edge(1, 2, 4), Edge(2, 3)),
    )
    cfg = config_for_chain([l0, l1, l2], tile_neurons=4, mesh_rows=2, mesh_cols=2)
    smap = map_graph(cfg, graph)
    assert [(t.layer, t.level, t.block, t.dest_offset) for t in smap.tiles] == [
        (0, 0, "tile", 0), (1, 0, "dense_tile", 4), (2, 1, "tile", 0), (3, 2, "tile", 0)]
    inputs = qnn.random_input(4, seed=22)
    results, events = check_map(smap, inputs)
    assert events > 0 and sum(r.flits for r in results) > 0
    for q, res in zip(inputs, results, strict=True):
        assert res.events == chain_output([l0, l1, l2], q)


def test_system_nodes_are_checked():
    cfg = RTLConfig(T=4, k=1, n_in=4, tile_neurons=2, mesh_rows=1, mesh_cols=2)
    assert System(cfg).nodes == ("tile", "tile")
    assert System(cfg, ["dense_tile", "tile"]).nodes == ("dense_tile", "tile")
    with pytest.raises(ValueError, match=r"nodes must name 2 blocks \(one per node of the "
                                         r"1x2 mesh\), not 1"):
        System(cfg, ["tile"])
    with pytest.raises(ValueError, match=r"nodes\[1\] must be a node block \('tile', "
                                         r"'dense_tile'\), not 'router'"):
        System(cfg, ["tile", "router"])
    with pytest.raises(TypeError, match="nodes must be a sequence of block names, not 'tile'"):
        System(cfg, "tile")
