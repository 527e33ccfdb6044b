"""A whole encoder block on one mesh (rtl_gen/block_map.py, docs/rtl_block.md): node kinds and
counts, destination tables that feed every consumer input exactly once, XY paths and hops,
traffic sums, the document and its schema, one-line errors, and planted faults the checks
must catch."""

from __future__ import annotations

import dataclasses
import json
import random
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from golden_models.positions import POSITION_KEYS
from rtl_gen import block_map
from rtl_gen.block_map import (
    KINDS,
    ORDERS,
    SIGNALS,
    BlockShape,
    block_edges,
    block_stages,
    dense_events,
    place_block,
    read_document,
    smallest_mesh,
    write_document,
)
from rtl_gen.router import xy_route
from toolkit_base.schemas import validate
from toolkit_base.tables import markdown_table

DOC = Path(__file__).resolve().parent.parent / "docs" / "rtl_block.md"
MINILM = BlockShape.minilm()
BERT = BlockShape.bert_base()
TINY = BlockShape(32, 2, 16, 64, 16, 8)
#: Tiles that straddle head boundaries (48 neurons, heads of 32) and a tile of one neuron.
ODD = BlockShape(96, 3, 32, 100, 10, 40)
SMALL_N = BlockShape(8, 2, 4, 12, 3, 1)


# -- independent checkers (they do not use BlockPlacement.check) ---------------------------------


def fed_addresses(placement) -> dict[tuple[int, str], list[int]]:
    """(consumer node, signal) -> every address its destination tables deliver there."""
    fed: dict[tuple[int, str], list[int]] = {}
    for n in placement.nodes:
        for r in n.routes:
            for d in r.dests:
                fed.setdefault((d, r.signal), []).extend(r.offset + j for j in range(r.lo, r.hi))
    return fed


def assert_fed_once(placement) -> None:
    """Every input of every consumer node receives each of its addresses exactly once, and no
    node receives a signal it has no input for."""
    fed = fed_addresses(placement)
    for n in placement.nodes:
        for signal, size in placement.shape.inputs(n.kind).items():
            got = sorted(fed.pop((n.node, signal), []))
            assert got == list(range(size)), f"node {n.node} ({n.stage}) input {signal}"
    assert fed == {}, f"signals sent to nodes without that input: {sorted(fed)[:3]}"


def assert_xy(path, src, dst) -> None:
    """``path`` runs from ``src`` to ``dst`` one link a step, X first, then Y, each step the
    router's own decision (:func:`rtl_gen.router.xy_route`)."""
    assert path[0] == src and path[-1] == dst, (path, src, dst)
    steps = list(zip(path, path[1:], strict=False))
    turned = False
    for (x0, y0), (x1, y1) in steps:
        assert abs(x1 - x0) + abs(y1 - y0) == 1, f"{(x0, y0)} -> {(x1, y1)} is not one link"
        turned = turned or y1 != y0
        assert not (turned and x1 != x0), f"{path}: an X step after a Y step"
    port = {(1, 0): "east", (-1, 0): "west", (0, 1): "south", (0, -1): "north"}
    for (x0, y0), (x1, y1) in steps:
        assert port[x1 - x0, y1 - y0] == xy_route(x0, y0, *dst)
    assert len(path) - 1 == abs(dst[0] - src[0]) + abs(dst[1] - src[1])


def with_node(placement, i, **changes):
    """``placement`` with node ``i`` changed (not checked)."""
    nodes = list(placement.nodes)
    nodes[i] = dataclasses.replace(nodes[i], **changes)
    return dataclasses.replace(placement, nodes=tuple(nodes))


def with_route(placement, i, k, **changes):
    """``placement`` with route ``k`` of node ``i`` changed (not checked)."""
    routes = list(placement.nodes[i].routes)
    routes[k] = dataclasses.replace(routes[k], **changes)
    return with_node(placement, i, routes=tuple(routes))


# -- shape, stages, node counts --------------------------------------------------------------------


@pytest.mark.parametrize("shape, counts, mesh", [
    (MINILM, (8, 8, 8, 12, 12, 12, 8, 1, 32, 8, 1), (10, 11)),
    (BERT, (16, 16, 16, 12, 12, 12, 16, 1, 64, 16, 1), (13, 14)),
    (TINY, (4, 4, 4, 2, 2, 2, 4, 1, 8, 4, 1), (6, 6)),
])
def test_node_counts_and_mesh(shape, counts, mesh):
    p = place_block(shape)
    assert p.kind_counts() == dict(zip(KINDS, counts, strict=True))
    assert (p.rows, p.cols) == mesh == smallest_mesh(sum(counts))
    assert len(p.nodes) == sum(counts)


def test_smallest_mesh_is_near_square():
    for n in range(1, 300):
        rows, cols = smallest_mesh(n)
        assert rows <= cols <= rows + 1 and rows * cols >= n
        smaller = (rows - 1, cols) if rows == cols else (rows, rows)  # the next smaller one
        assert smaller[0] * smaller[1] < n


def test_stages_in_data_flow_order():
    names = [s.name for s in block_stages(TINY)]
    assert names == ["q_proj", "k_proj", "v_proj", "qk_h0", "softmax_h0", "pv_h0", "qk_h1",
                     "softmax_h1", "pv_h1", "attn_out", "norm_attn", "ffn_expand",
                     "ffn_contract", "norm_ffn"]
    assert list(dict.fromkeys(s.kind for s in block_stages(TINY))) == list(KINDS)


def test_shape_of_a_model_configuration():
    cfg = SimpleNamespace(hidden_size=768, num_attention_heads=12, intermediate_size=3072)
    assert BlockShape.of(cfg, seq_max=128, tile_neurons=48) == BERT
    with pytest.raises(ValueError, match="^hidden_size 380 must be a multiple of "
                                         "num_attention_heads 12$"):
        BlockShape.of(SimpleNamespace(hidden_size=380, num_attention_heads=12,
                                      intermediate_size=1536), seq_max=8, tile_neurons=8)


@pytest.mark.parametrize("args, error, message", [
    ((380, 12, 32, 1536, 128, 48), ValueError,
     "hidden must be heads x head_dim = 12 x 32 = 384, not 380"),
    ((384, 12, 32, 1536, 128, 0), ValueError, "tile_neurons must be in 1..256, not 0"),
    ((384, 12, 32, 1536, 300, 48), ValueError, "seq_max must be in 1..256, not 300"),
    ((384, 0, 32, 1536, 128, 48), ValueError, "heads must be in 1..256, not 0"),
    ((384, 12, 32, -1, 128, 48), ValueError, "ffn must be in 1..65536, not -1"),
    ((384, 12, 300, 1536, 128, 48), ValueError, "head_dim must be in 1..256, not 300"),
    ((384, "12", 32, 1536, 128, 48), TypeError, "heads must be an integer, not '12'"),
    ((384, 12, 32, 1536, 128, True), TypeError, "tile_neurons must be an integer, not True"),
])
def test_bad_shapes_are_one_line(args, error, message):
    with pytest.raises(error) as info:
        BlockShape(*args)
    assert str(info.value) == message


# -- destination tables ----------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [MINILM, BERT, TINY, ODD, SMALL_N], ids=str)
@pytest.mark.parametrize("order", ORDERS)
def test_every_input_fed_exactly_once(shape, order):
    assert_fed_once(place_block(shape, order=order))


@pytest.mark.parametrize("shape", [TINY, ODD, MINILM], ids=str)
def test_destinations_follow_the_data_flow(shape):
    """Each producer neuron reaches the consumers block_forward gives it, at the address that
    consumer reads: a query or key code of dimension d of head h at qk_h row d, a value code
    at pv_h, pv_h's output d at every attn_out tile's input h*d_k + d, an FFN-expand output f
    at every FFN-contract tile's input f, a norm's codes at every tile of its stage."""
    p, dk = place_block(shape), shape.head_dim
    seen = set()
    for n in p.nodes:
        for r in n.routes:
            for j in range(r.lo, r.hi):
                i = n.lo + j  # the stage's neuron
                want = {
                    "query": (f"qk_h{i // dk}", i % dk), "key": (f"qk_h{i // dk}", i % dk),
                    "value": (f"pv_h{i // dk}", i % dk),
                    "attn_out_in": ("attn_out", (n.head or 0) * dk + i),
                }.get(r.signal)
                for d in r.dests:
                    stage = p.node(d).stage
                    got = (stage, r.offset + j)
                    if want is not None:
                        assert got == want, (n.stage, r.signal, i)
                    else:
                        assert r.offset + j == i, (n.stage, r.signal, i)
                    seen.add((r.signal, n.kind, p.node(d).kind))
    # every edge kind of the block occurs, and each consumer stage is reached on all its nodes
    assert {(e.signal, e.src.split("_h")[0], e.dst.split("_h")[0])
            for e in block_edges(shape)} == seen
    for n in p.nodes:
        for r in n.routes:
            consumers = {p.node(d).stage for d in r.dests}
            assert len(consumers) == 1
            assert r.dests == tuple(m.node for m in p.stage_nodes(consumers.pop()))


def test_head_boundary_inside_a_tile():
    """The Q tile of neurons 40..79 (tiles of 40, heads of 32) holds dimensions 8..31 of head 1
    and 0..15 of head 2: two routes, the second with a negative offset (its addresses are
    not)."""
    p = place_block(ODD)
    q1 = p.stage_nodes("q_proj")[1]  # neurons 40..79: head 1 (32..63) and head 2 (64..95)
    assert [(r.signal, r.lo, r.hi, r.offset) for r in q1.routes] == [
        ("query", 0, 24, 8), ("query", 24, 40, -24)]
    assert [p.node(r.dests[0]).stage for r in q1.routes] == ["qk_h1", "qk_h2"]


def test_residual_stream_waits_at_the_adds():
    """The block's stream goes from norm_ffn (the previous block's) to norm_attn, and the
    stream after the first LayerNorm from norm_attn to norm_ffn: one value per channel."""
    p = place_block(TINY)
    (na,), (nf,) = p.stage_nodes("norm_attn"), p.stage_nodes("norm_ffn")
    assert [(r.signal, r.dests) for r in nf.routes if r.signal.startswith("residual")] == [
        ("residual_in", (na.node,))]
    assert [(r.signal, r.dests) for r in na.routes if r.signal.startswith("residual")] == [
        ("residual_mid", (nf.node,))]


# -- placement -------------------------------------------------------------------------------------


def test_consecutive_nodes_are_neighbours_along_the_serpentine():
    p = place_block(MINILM, order="serpentine")
    for a, b in zip(p.nodes, p.nodes[1:], strict=False):
        assert p.hops(a.node, b.node) == 1
    q = place_block(MINILM)
    for h in range(MINILM.heads):
        (qk,), (sm,), (pv,) = (q.stage_nodes(f"{k}_h{h}") for k in ("qk", "softmax", "pv"))
        assert q.hops(qk.node, sm.node) == q.hops(sm.node, pv.node) == 1


@pytest.mark.parametrize("shape", [MINILM, BERT, TINY], ids=str)
def test_norms_sit_where_their_broadcast_is_shortest(shape):
    """Each add + LayerNorm node is at the place of the run of tiles it feeds where its hops to
    them sum least; the default moves fewer flit-hops than the serpentine and the row-major
    order on the dense design."""
    p, plain = place_block(shape), place_block(shape, order="serpentine")
    costs = {o: place_block(shape, order=o).traffic(dense_events(shape)).flit_hops
             for o in ORDERS}
    assert costs["centred"] < costs["serpentine"] <= costs["row_major"]
    for norm, fans in (("norm_ffn", ("q_proj", "k_proj", "v_proj")),
                       ("norm_attn", ("ffn_expand",))):

        def total(q, norm=norm, fans=fans):
            (src,) = q.stage_nodes(norm)
            return sum(q.hops(src.node, n.node) for n in q.nodes if n.stage in fans)

        assert total(p) < total(plain)
        (src,) = p.stage_nodes(norm)
        assert any(n.stage in fans for n in p.nodes if p.hops(src.node, n.node) == 1)


def test_paths_are_xy_and_hops_are_manhattan():
    p = place_block(MINILM)
    pairs = 0
    for n in p.nodes:
        for r in n.routes:
            for d in r.dests:
                m = p.node(d)
                path = p.path(n.node, d)
                assert_xy(path, (n.x, n.y), (m.x, m.y))
                assert p.hops(n.node, d) == len(path) - 1 == abs(n.x - m.x) + abs(n.y - m.y)
                pairs += 1
    assert pairs > 400


def test_a_yx_path_is_caught():
    """The XY checker can fail: a path that goes Y first, and one that skips a router."""
    with pytest.raises(AssertionError, match="X step after a Y step"):
        assert_xy(((0, 0), (0, 1), (1, 1), (2, 1)), (0, 0), (2, 1))
    with pytest.raises(AssertionError, match="not one link"):
        assert_xy(((0, 0), (2, 0), (2, 1)), (0, 0), (2, 1))


def test_a_given_larger_mesh():
    p = place_block(MINILM, (12, 12))
    assert (p.rows, p.cols) == (12, 12)
    assert {n.node for n in p.nodes} <= set(range(144)) and len(p.nodes) == 110
    assert_fed_once(p)


def test_mesh_errors_are_one_line():
    with pytest.raises(ValueError) as info:
        place_block(MINILM, (8, 8))
    assert str(info.value) == (
        "the block needs 110 nodes (24 projection, 36 attention, 8 attention-output, "
        "32 FFN-expand, 8 FFN-contract, 2 add+norm), the 8x8 mesh has 64; the smallest that "
        "fits is 10x11")
    with pytest.raises(ValueError) as info:
        place_block(BlockShape.bert_base(tile_neurons=16))
    assert str(info.value) == (
        "the block needs 470 nodes (144 projection, 36 attention, 48 attention-output, "
        "192 FFN-expand, 48 FFN-contract, 2 add+norm); no mesh up to 16x16 fits: use larger "
        "tiles (tile_neurons)")
    for mesh, message in (((17, 4), "mesh rows must be in 1..16, not 17"),
                          ("10x11", ("mesh must be (rows, cols), two integers in 1..16, not "
                                    "'10x11'")),
                          ((10, 11, 1), ("mesh must be (rows, cols), two integers in 1..16, "
                                        "not (10, 11, 1)"))):
        with pytest.raises(ValueError) as info:
            place_block(MINILM, mesh)
        assert str(info.value) == message
    with pytest.raises(ValueError, match="^order must be one of"):
        place_block(TINY, order="spiral")
    with pytest.raises(TypeError, match="^shape must be an rtl_gen.block_map.BlockShape"):
        place_block((384, 12, 32, 1536, 128, 48))


# -- traffic ---------------------------------------------------------------------------------------


def random_events(p, seed=0, as_tensor=True):
    g = random.Random(seed)
    out = {}
    for s in SIGNALS:
        counts = [g.choice((0, 0, 1, 2, 5)) for _ in range(p.signal_width(s))]
        out[s] = torch.tensor(counts) if as_tensor else counts
    return out


def brute_force(p, events):
    """Every flit one at a time: (edge name, hops, path) per flit."""
    bases = {}
    for s in SIGNALS:
        base = 0
        for st_ in block_stages(p.shape):
            if any(e.signal == s and e.src == st_.name for e in p.edges):
                bases[s, st_.name] = base
                base += st_.width
    for n in p.nodes:
        for r in n.routes:
            counts = [int(c) for c in events.get(r.signal, [])]
            for j in range(r.lo, r.hi):
                c = counts[bases[r.signal, n.stage] + n.lo + j] if counts else 0
                for d in r.dests:
                    for _ in range(c):
                        yield (f"{r.signal}:{n.stage}->{p.node(d).stage}", p.path(n.node, d))


@pytest.mark.parametrize("shape", [TINY, ODD, MINILM], ids=str)
def test_traffic_sums_are_consistent(shape):
    p = place_block(shape)
    events = random_events(p)
    t = p.traffic(events)
    assert sum(t.routers.values()) == t.flits + t.flit_hops
    assert sum(t.links.values()) == t.flit_hops
    assert len(t.routers) == p.rows * p.cols
    flits = list(brute_force(p, events))
    assert t.flits == len(flits) and t.flit_hops == sum(len(path) - 1 for _, path in flits)
    per_edge, routers, links = {}, {}, {}
    for name, path in flits:
        f, h = per_edge.get(name, (0, 0))
        per_edge[name] = (f + 1, h + len(path) - 1)
        for r in path:
            routers[r] = routers.get(r, 0) + 1
        for link in zip(path, path[1:], strict=False):
            links[link] = links.get(link, 0) + 1
    assert {k: (e.flits, e.flit_hops) for k, e in t.edges.items() if e.flits} == per_edge
    assert {k: v for k, v in t.routers.items() if v} == routers
    assert t.links == links
    assert set(t.edges) == {e.name for e in p.edges}
    assert sum(e.flits for e in t.by_signal().values()) == t.flits
    doc = json.loads(json.dumps(t.as_dict()))
    assert sum(r["flits"] for r in doc["routers"]) == t.flits + t.flit_hops
    assert sum(link["flits"] for link in doc["links"]) == t.flit_hops


def test_traffic_of_one_flit():
    """One query event of head 1, dimension 1 (neuron 17 of the Q projection)."""
    p = place_block(TINY)
    events = {"query": [0] * 32}
    events["query"][17] = 1
    t = p.traffic(events)
    src = p.stage_nodes("q_proj")[2]  # neurons 16..23
    (dst,) = p.stage_nodes("qk_h1")
    path = p.path(src.node, dst.node)
    hops = abs(src.x - dst.x) + abs(src.y - dst.y)
    assert t.edges["query:q_proj->qk_h1"].flits == 1
    assert t.edges["query:q_proj->qk_h1"].flit_hops == hops == len(path) - 1
    assert t.flits == 1 and t.signals == ("query",)
    assert {k for k, v in t.routers.items() if v} == set(path)
    assert all(t.routers[r] == 1 for r in path)
    assert set(t.links) == set(zip(path, path[1:], strict=False))


def test_a_broadcast_sends_one_flit_per_destination():
    p = place_block(MINILM)
    t = p.traffic({"ffn_expand_in": [0] * 383 + [1]})
    assert t.flits == 32  # one code to every FFN-expand tile
    (na,) = p.stage_nodes("norm_attn")
    assert t.routers[na.x, na.y] == 32


def test_dense_events_fit_every_signal():
    p = place_block(TINY)
    events = dense_events(TINY, tokens=3, seq_len=10)
    assert tuple(events) == tuple(SIGNALS)
    assert all(len(events[s]) == p.signal_width(s) for s in SIGNALS)
    assert sum(events["scores"]) == 3 * 10 * TINY.heads
    assert set(POSITION_KEYS) <= set(SIGNALS)
    t = p.traffic(events)
    assert t.edges["scores:qk_h0->softmax_h0"].flits == 30
    assert t.edges["q_proj_in:norm_ffn->q_proj"].flits == 3 * 32 * 4


@pytest.mark.parametrize("events, message", [
    ({"queries": [1]}, "events has unknown signal 'queries'; the signals are ("),
    ({"query": [1] * 31}, ("events['query'] must be 32 integers >= 0 (one per producer neuron), "
                          "not [1, 1,")),
    ({"query": [-1] * 32}, "events['query'] must be 32 integers >= 0"),
    ({"query": [0.5] * 32}, "events['query'] must be 32 integers >= 0"),
    ({"query": torch.ones(2, 16, dtype=torch.int64)}, "events['query'] must be 32 integers"),
    ([1, 2], "events must map signals to per-neuron counts, not [1, 2]"),
])
def test_bad_traffic_counts(events, message):
    with pytest.raises(ValueError) as info:
        place_block(TINY).traffic(events)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)


# -- planted faults: the checks must catch them ----------------------------------------------------


def first_route(p, signal):
    return next((i, k) for i, n in enumerate(p.nodes) for k, r in enumerate(n.routes)
                if r.signal == signal)


@pytest.mark.parametrize("signal", ["query", "attn_out_in", "ffn_contract_in", "q_proj_in",
                                    "key"])
@pytest.mark.parametrize("delta", [1, -1])
def test_an_off_by_one_offset_is_caught(signal, delta):
    p = place_block(TINY)
    i, k = first_route(p, signal)
    bad = with_route(p, i, k, offset=p.nodes[i].routes[k].offset + delta)
    with pytest.raises(ValueError, match=f"input {signal}: (addresses .* (fed twice|fed by no "
                                         f"node)|node .* sends addresses .*, outside)"):
        bad.check()
    with pytest.raises(AssertionError):
        assert_fed_once(bad)


def test_a_swapped_coordinate_is_caught():
    p = place_block(TINY)
    i = next(i for i, n in enumerate(p.nodes) if n.x != n.y)
    n = p.nodes[i]
    with pytest.raises(ValueError, match=f"^node {n.node} .* is at \\({n.y}, {n.x}\\), which "
                                         f"is node {n.x * p.cols + n.y}$"):
        with_node(p, i, x=n.y, y=n.x).check()


def test_other_corruptions_are_caught():
    p = place_block(TINY)
    i, k = first_route(p, "ffn_sum")
    r = p.nodes[i].routes[k]
    with pytest.raises(ValueError, match="fed by no node"):
        with_node(p, i, routes=()).check()  # a gap: one producer's table lost
    with pytest.raises(ValueError, match="which has no such input"):
        with_route(p, i, k, dests=(*r.dests, p.stage_nodes("q_proj")[0].node)).check()
    with pytest.raises(ValueError, match="routes ffn_sum neurons 0..8, it holds 8"):
        with_route(p, i, k, hi=r.hi + 1).check()
    j = next(j for j, n in enumerate(p.nodes) if n.node != p.nodes[i].node)
    with pytest.raises(ValueError, match="^node .* holds"):
        with_node(p, j, node=p.nodes[i].node, x=p.nodes[i].x, y=p.nodes[i].y).check()
    with pytest.raises(ValueError, match="is off the 6x6 mesh"):
        with_node(p, i, x=6, node=p.nodes[i].y * 6 + 6).check()
    with pytest.raises(ValueError, match="^stage ffn_contract has neuron ranges"):
        with_node(p, i, lo=1).check()


def test_a_generator_mutant_is_caught(monkeypatch):
    """place_block checks its own result: a planted off-by-one in the edges (head 1's
    attn_out_in one address down) or an overlapping partition fails it."""
    edges = block_map.block_edges

    def shifted(shape):
        return tuple(dataclasses.replace(e, offset=e.offset - 1)
                     if e.signal == "attn_out_in" and e.src == "pv_h1" else e
                     for e in edges(shape))

    monkeypatch.setattr(block_map, "block_edges", shifted)
    with pytest.raises(ValueError, match="input attn_out_in: addresses 15..15 fed twice"):
        place_block(TINY)
    monkeypatch.setattr(block_map, "block_edges", edges)
    partition = block_map.partition
    monkeypatch.setattr(block_map, "partition",
                        lambda n, N: tuple((lo, min(hi + 1, n)) for lo, hi in partition(n, N)))
    with pytest.raises(ValueError, match="fed twice"):
        place_block(TINY)


# -- any shape -------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(heads=st.integers(1, 4), head_dim=st.integers(1, 24), ffn=st.integers(1, 90),
       seq_max=st.integers(1, 24), n=st.integers(1, 48), order=st.sampled_from(ORDERS),
       seed=st.integers(0, 9))
def test_any_block_that_fits(heads, head_dim, ffn, seq_max, n, order, seed):
    shape = BlockShape(heads * head_dim, heads, head_dim, ffn, seq_max, n)
    stages = block_stages(shape)
    assume(max(smallest_mesh(sum(len(s.parts) for s in stages))) <= 16)
    p = place_block(shape, order=order)
    assert_fed_once(p)
    t = p.traffic(random_events(p, seed, as_tensor=False))
    assert sum(t.routers.values()) == t.flits + t.flit_hops
    assert sum(t.links.values()) == t.flit_hops


# -- the document ----------------------------------------------------------------------------------


def test_document_is_deterministic_and_valid(tmp_path):
    doc = place_block(TINY).document()
    validate(doc, "block_placement", "block.json")
    assert json.dumps(doc) == json.dumps(place_block(TINY).document())
    a, b = write_document(place_block(TINY), tmp_path / "a.json"), tmp_path / "b.json"
    write_document(place_block(TINY), b)
    assert a.read_bytes() == b.read_bytes()
    assert read_document(a) == json.loads(json.dumps(doc))


def test_document_content():
    p = place_block(TINY)
    doc = p.document()
    assert doc["schema"] == "matterhorn.block_placement/1"
    assert doc["mesh"] == {"rows": 6, "cols": 6} and doc["order"] == "centred"
    assert doc["node_counts"] == p.kind_counts()
    assert [(d["node"], d["x"], d["y"], d["stage"], d["part"], d["neurons"])
            for d in doc["nodes"]] == [(n.node, n.x, n.y, n.stage, n.part, [n.lo, n.hi])
                                       for n in p.nodes]
    for d, n in zip(doc["nodes"], p.nodes, strict=True):
        for dr, r in zip(d["routes"], n.routes, strict=True):
            assert dr["dests"] == list(r.dests) and dr["offset"] == r.offset
            assert dr["hops"] == [p.hops(n.node, x) for x in r.dests]
    assert set(doc["mean_hops"]) == set(SIGNALS)
    assert doc["mean_hops"]["scores"] == doc["mean_hops"]["attn_prob"] == 1.0
    assert [e["signal"] for e in doc["edges"]] == [e.signal for e in p.edges]


def test_document_rejected_when_malformed(tmp_path):
    path = write_document(place_block(TINY), tmp_path / "block.json")
    doc = json.loads(path.read_text())
    doc["nodes"][0]["kind"] = "tile"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError) as info:
        read_document(path)
    assert str(info.value).startswith("block.json: field 'nodes[0].kind': 'tile' is not one of")


# -- the page --------------------------------------------------------------------------------------


def doc_tables() -> dict[str, list[str]]:
    """The tables of docs/rtl_block.md that the code computes (checked below)."""
    models = (("MiniLM", MINILM), ("BERT-base", BERT), ("tiny", TINY))
    sizes = []
    for name, shape in models:
        p = place_block(shape)
        cost = {o: place_block(shape, order=o).traffic(dense_events(shape)) for o in ORDERS}
        c = cost["centred"]
        sizes.append((name, (f"{shape.hidden}, {shape.heads} x {shape.head_dim}, {shape.ffn}, "
                            f"{shape.seq_max}"), shape.tile_neurons,
                      " / ".join(str(v) for v in p.kind_counts().values()), len(p.nodes),
                      f"{p.rows}x{p.cols}", f"{c.flits:,}",
                      " / ".join(f"{cost[o].flit_hops:,}" for o in ORDERS),
                      f"{c.flit_hops / c.flits:.2f}"))
    mesh = markdown_table(
        ["block", "H, heads x d_k, F, seq_max", "N", "nodes per kind", "nodes", "mesh",
         "flits / token", "flit-hops / token (centred / serpentine / row-major)",
         "mean hops"], sizes, align="llrlrlrrr")
    hops = {name: place_block(shape).mean_hops() for name, shape in models}
    rows = [(f"`{s}`", *(f"{hops[name][s]:.2f}" for name, _ in models),
             f"{place_block(MINILM, order='row_major').mean_hops()[s]:.2f}") for s in SIGNALS]
    per_signal = markdown_table(["signal", "MiniLM", "BERT-base", "tiny", "MiniLM row-major"],
                                rows, align="lrrrr")
    return {"sizes": mesh, "hops": per_signal, "routes_tiny": route_table(place_block(TINY)),
            "map_minilm": grid(place_block(MINILM)), "map_tiny": grid(place_block(TINY))}


def route_table(p) -> list[str]:
    """Every node's destination table: its routes as ``signal j=lo..hi-1 -> dests @ offset``."""
    def route(r):
        dests = ",".join(str(d) for d in r.dests)
        return f"{r.signal} {r.lo}..{r.hi - 1} -> {dests} @ {r.offset:+d}"

    rows = [(n.node, f"({n.x}, {n.y})", n.stage, n.part, f"{n.lo}..{n.hi - 1}",
             "; ".join(route(r) for r in n.routes)) for n in p.nodes]
    return markdown_table(["node", "(x, y)", "stage", "part", "neurons", "routes"], rows,
                          align="rllrll")


def grid(p) -> list[str]:
    """The mesh, one line per row: each node's stage, shortened."""
    short = {"q_proj": "Q", "k_proj": "K", "v_proj": "V", "qk": "qk", "softmax": "sm",
             "pv": "pv", "attn_out": "O", "norm_attn": "N1", "ffn_expand": "E",
             "ffn_contract": "C", "norm_ffn": "N2"}
    at = {(n.x, n.y): short[n.kind] + ("" if n.head is None else str(n.head)) for n in p.nodes}
    return [" ".join(f"{at.get((x, y), '.'):>4}" for x in range(p.cols)).rstrip()
            for y in range(p.rows)]


def test_the_page_shows_what_the_code_computes():
    text = DOC.read_text(encoding="utf-8")
    for name, lines in doc_tables().items():
        assert "\n".join(lines) in text, f"docs/rtl_block.md: table {name} differs:\n" + \
            "\n".join(lines)
    assert re.search(r"`rtl_gen/block_map.py`", text)


def test_the_page_names_the_hot_spots():
    p = place_block(MINILM)
    t = p.traffic(dense_events(MINILM))
    (na,), (nf,) = p.stage_nodes("norm_attn"), p.stage_nodes("norm_ffn")
    top = sorted(t.routers.values(), reverse=True)
    assert top[:2] == [t.routers[na.x, na.y], t.routers[nf.x, nf.y]]
    text = " ".join(DOC.read_text(encoding="utf-8").split())
    assert (f"the busiest router is `norm_attn`'s ({top[0]:,} flits" in text
            and f"then `norm_ffn`'s ({top[1]:,})" in text
            and f"the mean is {round(sum(top) / len(top)):,} per router" in text)
