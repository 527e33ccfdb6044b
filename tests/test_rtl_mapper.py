"""Tests of the chain-to-mesh mapper and the system reference (rtl_gen/mapper.py)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from golden_models import IntegerLayer, Mask, decode_events, folded_init, threshold_table
from golden_models.codespace import CodeSpace
from golden_models.qnn import random_qnn
from rtl_gen.layouts import SYSTEM_TARGETS
from rtl_gen.mapper import (
    Edge,
    Graph,
    Stage,
    chain_graph,
    config_for_chain,
    map_chain,
    map_graph,
    system_reference,
)
from rtl_gen.params import RTLConfig


def chain(widths=(8, 8, 4, 4), T=8, k=1, weight_bits=1, seed=0, families=None):
    qnn = random_qnn(widths, T=T, k=k, weight_bits=weight_bits, seed=seed,
                     distribution="uniform", families=families)
    return qnn, qnn.integer_layers()


def hand_chain(widths, T, seed):
    """A chain built from IntegerLayer + threshold_table + folded_init directly."""
    g = torch.Generator().manual_seed(seed)
    space = CodeSpace(T, "sym")
    masks = [Mask(space, int(torch.randint(0, T, (1,), generator=g)), 1) for _ in widths]
    layers = []
    for i in range(len(widths) - 1):
        w = torch.randint(0, 2, (widths[i], widths[i + 1]), generator=g) * 2 - 1
        scale = torch.rand(widths[i + 1], generator=g, dtype=torch.float64) + 0.5
        bias = torch.randn(widths[i + 1], generator=g, dtype=torch.float64)
        theta = threshold_table(scale, bias, 2.0, space)
        layers.append(IntegerLayer(w, 1, folded_init(w, masks[i].mu), theta, masks[i],
                                   masks[i + 1]))
    return layers


def test_placement_and_destinations():
    _, layers = chain()
    cfg = config_for_chain(layers, tile_neurons=4, mesh_rows=2, mesh_cols=2)
    smap = map_chain(cfg, layers)
    got = [(t.layer, t.part, t.node, (t.x, t.y), t.neuron_offset, t.n_live, t.final,
            t.dests) for t in smap.tiles]
    assert got == [
        (0, 0, 0, (0, 0), 0, 4, False, ((2, 0, 1),)),
        (0, 1, 1, (1, 0), 4, 4, False, ((2, 0, 1),)),
        (1, 0, 2, (0, 1), 0, 4, False, ((3, 1, 1),)),
        (2, 0, 3, (1, 1), 0, 4, True, ()),
    ]
    assert [t.dest_offset for t in smap.tiles] == [0, 4, 0, 0]


def test_reference_matches_chain_and_qnn():
    qnn, layers = chain(seed=3)
    cfg = config_for_chain(layers, tile_neurons=4, mesh_rows=2, mesh_cols=2)
    smap = map_chain(cfg, layers)
    for b, q in enumerate(qnn.random_input(6, seed=1)):
        ref = system_reference(smap, q)
        # per-layer golden run
        idx, tim = None, None
        res = layers[0].run_codes(q)
        for layer in layers[1:]:
            idx, tim = res.out_index, res.out_time
            res = layer.run_events(idx, tim)
        assert torch.equal(ref.out_index, res.out_index), b
        assert torch.equal(ref.out_time, res.out_time), b
        # and the float QNN: decoded output = dead-zone projection of the QNN's codes
        q_out = qnn(q.unsqueeze(0))[-1][0]
        mask = layers[-1].out_mask
        assert torch.equal(decode_events(ref.out_index, ref.out_time, (4,), mask),
                           mask.project(q_out))


def test_flits_and_hops():
    qnn, layers = chain(seed=5)
    cfg = config_for_chain(layers, tile_neurons=4, mesh_rows=2, mesh_cols=2)
    smap = map_chain(cfg, layers)
    q = qnn.random_input(1, seed=2)[0]
    ref = system_reference(smap, q)
    # every layer-0 event goes node 0/1 -> node 2, every layer-1 event node 2 -> node 3
    l0 = [(a + t.neuron_offset, tt) for t in smap.tiles_of(0) for a, tt in ref.tile_events[t.node]]
    l1 = ref.tile_events[2]
    assert sorted(l0) == sorted(zip(*(x.tolist() for x in ref.layer_events[0]), strict=True))
    assert len(ref.flits) == len(l0) + len(l1)
    for f in ref.flits:
        assert (f.src, f.dst, f.hops) in {(0, 2, 1), (1, 2, 2), (2, 3, 1)}
    assert ref.total_hops == sum(f.hops for f in ref.flits)
    assert ref.encoder_events == layers[0].run_codes(q).counters.events_in


@settings(max_examples=15, deadline=None, derandomize=True)
@given(seed=st.integers(0, 10_000), n_out=st.integers(1, 11), N=st.integers(1, 5),
       T=st.sampled_from([2, 4, 16]))
def test_padding_is_silent_and_counters_add_up(seed, n_out, N, T):
    layers = hand_chain((6, n_out, 3), T, seed)
    tiles = -(-n_out // N) + -(-3 // N)
    cfg = config_for_chain(layers, tile_neurons=N, mesh_rows=1, mesh_cols=tiles)
    smap = map_chain(cfg, layers)
    g = torch.Generator().manual_seed(seed)
    q = torch.randint(CodeSpace(T).q_min, CodeSpace(T).q_max + 1, (6,), generator=g)
    ref = system_reference(smap, q)
    for li, layer in enumerate(layers):
        golden = layer.run_codes(q) if li == 0 else layer.run_events(*ref.layer_events[li - 1])
        parts = smap.tiles_of(li)
        events = sorted((a + t.neuron_offset, tt) for t in parts for a, tt in
                        ref.tile_events[t.node])
        want = sorted(zip(golden.out_index.tolist(), golden.out_time.tolist(), strict=True))
        assert events == want
        c = [ref.tile_counters[t.node] for t in parts]
        assert sum(x.events_out for x in c) == golden.counters.events_out
        pads = len(parts) * N - layer.n_out
        i_max = layer.out_mask.i_max
        extra = pads * min(i_max + 1, T - 1)
        assert sum(x.compare_ops for x in c) == golden.counters.compare_ops + extra
        assert sum(x.events_suppressed for x in c) == golden.counters.events_suppressed + pads
        assert all(x.events_in == golden.counters.events_in for x in c)


def test_load_beats_structure():
    _, layers = chain(seed=1)
    cfg = config_for_chain(layers, tile_neurons=4, mesh_rows=2, mesh_cols=3)
    smap = map_chain(cfg, layers)
    beats = smap.load_beats()
    route = [(n, a, d) for n, tg, a, d in beats if tg == SYSTEM_TARGETS["route"]]
    # cols = 3: dst_x 2 bits, dst_y 1 bit; node 2 is (2, 0), node 3 is (0, 1)
    assert route == [(0, 0, 2 | 0 << 2 | 0 << 3), (1, 0, 2 | 0 << 2 | 4 << 3),
                     (2, 0, 0 | 1 << 2 | 0 << 3)]
    nodes = [(n, d) for n, tg, a, d in beats if tg == SYSTEM_TARGETS["node"]]
    # 6 nodes: layer 3 bits, n_dst 3 bits, enable bit first
    assert nodes == [(0, 1 | 0 << 1 | 1 << 4), (1, 1 | 0 << 1 | 1 << 4),
                     (2, 1 | 1 << 1 | 1 << 4), (3, 1 | 2 << 1 | 0 << 4), (4, 0), (5, 0)]
    assert beats[-1] == (0, SYSTEM_TARGETS["system"], 0, 3)
    per_tile = [sum(1 for n, tg, *_ in beats if n == node and tg < 4) for node in range(4)]
    # n_in weight rows + (T-1) threshold rows + 1 init row + 1 config beat
    assert per_tile == [8 + 7 + 2, 8 + 7 + 2, 8 + 7 + 2, 4 + 7 + 2]


def test_pad_input():
    _, layers = chain(widths=(5, 4, 4, 4))
    cfg = config_for_chain(layers, tile_neurons=4, mesh_rows=2, mesh_cols=2, n_in=8)
    smap = map_chain(cfg, layers)
    q = torch.tensor([1, -2, 0, 3, -4])
    padded = smap.pad_input(q)
    assert padded.tolist() == [1, -2, 0, 3, -4] + [layers[0].in_mask.mu] * 3
    assert layers[0].in_mask.transmitted(3 - padded[5:]).tolist() == [False] * 3


def test_errors():
    _, layers = chain()
    cfg = config_for_chain(layers, tile_neurons=4, mesh_rows=2, mesh_cols=2)
    small = config_for_chain(layers, tile_neurons=4, mesh_rows=1, mesh_cols=3)
    with pytest.raises(ValueError) as info:
        map_chain(small, layers)
    assert str(info.value) == ("the chain needs 4 tiles of 4 neurons ([2, 1, 1] per layer), "
                               "the 1x3 mesh has 3 nodes")
    with pytest.raises(ValueError) as info:
        map_chain(cfg, [layers[0], layers[2]])
    assert str(info.value) == "layers[1] has 4 inputs, layers[0] has 8 outputs"
    with pytest.raises(TypeError) as info:
        map_chain(cfg, [layers[0], "x"])
    assert str(info.value) == "layers[1] must be a golden_models.IntegerLayer, not 'x'"
    with pytest.raises(ValueError) as info:
        map_chain(cfg, [])
    assert str(info.value) == "layers must be a non-empty list of IntegerLayer, not []"
    smap = map_chain(cfg, layers)
    with pytest.raises(ValueError) as info:
        system_reference(smap, torch.zeros(5, dtype=torch.int64))
    assert str(info.value) == "q must hold 8 codes (layer 0 inputs), not 5"
    with pytest.raises(ValueError) as info:
        smap.pad_input(torch.zeros(9, dtype=torch.int64))
    assert str(info.value) == "q must hold 8 codes (layer 0 inputs), not 9"
    with pytest.raises(TypeError) as info:
        map_chain({"T": 8}, layers)
    assert str(info.value) == "config must be an RTLConfig, not {'T': 8}"
    narrow = RTLConfig(T=8, k=1, i_max_in=cfg.i_max_in, n_in=4, tile_neurons=4)
    with pytest.raises(ValueError) as info:
        map_chain(narrow, layers)
    assert str(info.value) == "layers[0] has 8 inputs, a tile has 4 rows (n_in)"
    other = RTLConfig(T=8, k=0, i_max_in=cfg.i_max_in, n_in=8, tile_neurons=4)
    with pytest.raises(ValueError) as info:
        map_chain(other, layers)
    assert str(info.value).startswith("layers[0].in_mask Mask(")
    assert str(info.value).endswith("of the config (T, family, i_max_in, k)")


def _half(layer, lo, hi):
    return IntegerLayer(layer.weights[:, lo:hi], layer.weight_bits, layer.init[lo:hi],
                        layer.theta[lo:hi], layer.in_mask, layer.out_mask)


def test_a_chain_is_the_graph_of_one_edge_per_stage():
    _, layers = chain()
    cfg = config_for_chain(layers, tile_neurons=4, mesh_rows=2, mesh_cols=2)
    graph = chain_graph(layers)
    assert graph.edges == (Edge(None, 0), Edge(0, 1), Edge(1, 2))
    assert map_graph(cfg, graph).load_beats() == map_chain(cfg, layers).load_beats()
    # a dense node's image holds every row of the tile (its adapter sends every code)
    smap = map_chain(cfg, layers, ("tile", "dense_tile", "tile"))
    dense = smap.tile_at(2)
    assert (dense.block, dense.tile_layer.n_in) == ("dense_tile", cfg.n_in)
    assert smap.node_blocks == ("tile", "tile", "dense_tile", "tile")


def test_graph_levels_offsets_and_output_order():
    _, (l0, l1, l2) = chain()
    # level 0: two halves of layer 0; level 1: layer 1 fed by both; level 2: layer 2
    graph = Graph((Stage(l1), Stage(_half(l0, 4, 8)), Stage(_half(l0, 0, 4)), Stage(l2)),
                  (Edge(2, 0, 0), Edge(1, 0, 4), Edge(None, 1), Edge(None, 2), Edge(0, 3)))
    cfg = config_for_chain([l0, l1, l2], tile_neurons=4, mesh_rows=2, mesh_cols=2)
    smap = map_graph(cfg, graph)
    # placed in level order, stage order within a level
    assert [(t.layer, t.node, t.level, t.dest_offset) for t in smap.tiles] == [
        (1, 0, 0, 4), (2, 1, 0, 0), (0, 2, 1, 0), (3, 3, 2, 0)]
    assert smap.n_layers == 3
    qnn, _ = chain()
    for q in qnn.random_input(6, seed=3):
        ref = system_reference(smap, q)
        want = system_reference(map_chain(cfg, [l0, l1, l2]), q)
        assert torch.equal(ref.out_index, want.out_index)
        assert torch.equal(ref.out_time, want.out_time)


def test_graph_errors():
    _, (l0, l1, l2) = chain()
    cfg = config_for_chain([l0, l1, l2], tile_neurons=4, mesh_rows=2, mesh_cols=2)
    # consumes and produces one position, so stages of it may form a cycle
    square = IntegerLayer(l0.weights, 1, l0.init, l0.theta, l0.in_mask, l0.in_mask)
    cases = [
        (Graph((Stage(l0), Stage(l1), Stage(l0)), (Edge(None, 0), Edge(0, 1), Edge(None, 2))),
         ("stages[2] is at level 0 of 1: only the last level's stages, all of them, feed the "
          "system output")),
        (Graph((Stage(l0), Stage(l1), Stage(l2, "dense_tile")),
               (Edge(None, 0), Edge(0, 1), Edge(1, 2))),
         ("stages[2] runs on 'dense_tile', whose codes output cannot feed the system output "
         "(the merge takes events in time order)")),
        (Graph((Stage(l0), Stage(l1), Stage(l1)), (Edge(None, 0), Edge(0, 1), Edge(0, 2))),
         "stages[0] feeds more than one stage (a node holds one destination range)"),
        (Graph((Stage(square), Stage(square), Stage(square)),
               (Edge(None, 0), Edge(2, 1), Edge(1, 2))),
         "stages [1, 2] are not reached from the system input (the graph has a cycle)"),
        (Graph((Stage(l0), Stage(l1)), (Edge(None, 0), Edge(0, 1, 2))),
         ("stages[0] feeds inputs 2..9 of stages[1], which has 8 inputs, some fed twice or too "
         "few")),
        (Graph((Stage(l0), Stage(l1)), (Edge(None, 0), Edge(None, 1))),
         "stages[1] reads the input with 8 inputs and " + str(l1.in_mask) + ", stages[0] with "
         "8 and " + str(l0.in_mask)),
        (Graph((Stage(l0), Stage(l1)), (Edge(None, 0),)), "stages[1] is fed by no edge"),
        (Graph((Stage(l0, "router"),), (Edge(None, 0),)),
         "stages[0].block must be a node block ('tile', 'dense_tile'), not 'router'"),
        (Graph((Stage(l0),), (Edge(None, 3),)),
         ("edge Edge(src=None, dst=3, offset=0) must join a producer (a stage index or None, "
         "the input) to another stage of 0..0, at an offset >= 0")),
    ]
    for graph, message in cases:
        with pytest.raises(ValueError) as info:
            map_graph(cfg, graph)
        assert str(info.value) == message
    with pytest.raises(TypeError, match="graph must be an rtl_gen.mapper.Graph, not"):
        map_graph(cfg, [l0])
    with pytest.raises(ValueError, match=r"blocks must name one block per layer \(3\), not 2"):
        map_chain(cfg, [l0, l1, l2], ("tile", "tile"))
