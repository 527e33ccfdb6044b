# amaranth: UnusedElaboratable=no
"""A whole encoder block priced in our gates (matterhorn.block_gates, synth_scripts.block_gates):
the small random block, the dense and the M-TTFS k=1 designs on one short sentence, every piece
checked bit-exact at RTL, mapped to NanGate 45 nm and replayed in Icarus; the components add up,
gating saves, M-TTFS tiles compute less than dense ones; bad input is refused before anything
runs.

The measurement is marked slow: about 4.5 minutes of CPU (2 of them Yosys and ABC mapping the
28,000-cell add+LayerNorm unit, which no block size makes smaller), 13 minutes of wall time on
two cores shared with other jobs (load 6). The arithmetic of the result and bad input run by
default."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from golden_models.block_pieces import PIECE_NAMES as PIECES
from golden_models.block_pieces import PIECES as DESCRIBED
from golden_models.block_pieces import count_deliveries
from matterhorn.block import model_ratios
from matterhorn.block_gates import measure_block_gates
from networks.block import block_case
from synth_scripts.block_gates import COMPONENTS, TOTALS, SramCosts

#: Tiny but whole: 2 heads of 4, FFN 16, a sentence of four tokens with [CLS] and [SEP] (the
#: add+LayerNorm unit alone is 28,000 cells at any width; every netlist is replayed in Icarus).
DIMS = {"hidden": 8, "heads": 2, "ffn": 16, "seq": 8}
SENTENCE = "Two words."
DESIGNS = ("dense", "mttfs-k1")


@pytest.fixture(scope="module")
def model():
    from networks.block import random_block_model

    return random_block_model(**DIMS)


def each_design(model, measure, lib, work, **kwargs) -> dict:
    """``measure(qnn, case, ...)`` of both designs on the sentence (each design's case), in
    Icarus, one netlist cache (the add+LayerNorm unit mapped once)."""
    qnn, tok = model
    cache: dict = {}
    return {d: measure(qnn, block_case(qnn, tok, [SENTENCE], d), lib_path=lib, work=work / d,
                       sim="icarus", cache=cache, **kwargs) for d in DESIGNS}


def deliveries(g) -> dict:
    """The events (codes for the dense design) a priced design's pieces counted at each
    position, as a run counts them."""
    return count_deliveries({p.piece: p.counters for p in g.pieces},
                            {p.piece: p.tiles for p in g.pieces}, g.design == "dense")


@pytest.fixture(scope="module")
def measured(model, nangate_lib, tmp_path_factory):  # only the slow tests use it
    """Tiles of 8 neurons: the FFN-expand layer (16) on two tiles, the others on one."""
    return each_design(model, measure_block_gates, nangate_lib,
                       tmp_path_factory.mktemp("block_gates"), tile_neurons=8)


@pytest.mark.slow
@pytest.mark.parametrize("design", DESIGNS)
def test_every_piece_is_priced(measured, design):
    g = measured[design]
    assert [p.piece for p in g.pieces] == list(PIECES)
    assert g.tokens == 4 and g.sentences == 1
    for p in g.pieces:
        e = p.energy_pJ
        assert e["total"] > 0 and e["gated_total"] > 0, p.piece
        assert min(e[c] for c in COMPONENTS) >= 0, (p.piece, e)
        assert math.isclose(sum(e[c] for c in COMPONENTS), e["total"], rel_tol=1e-9)
        # every piece reads an array, moves its input and works
        assert e["sram_read"] > 0 and e["movement"] > 0, p.piece
        assert e["compute"] + e["nonlinear"] > 0, p.piece
    per = g.per_token()
    assert set(per) == set(PIECES) and all(set(v) == set(TOTALS) for v in per.values())
    # which piece holds which component
    assert per["attention"]["sram_write"] > 0  # the key and value writes
    assert per["attention"]["nonlinear"] > 0 and per["attention"]["compute"] > 0
    for name in ("norm_attn", "norm_ffn"):
        assert per[name]["nonlinear"] > 0 and per[name]["compute"] == 0
    for name in ("query", "attn_out", "ffn_contract"):
        assert per[name]["nonlinear"] == 0 and per[name]["sram_write"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("design", DESIGNS)
def test_totals_and_gating(measured, design):
    g = measured[design]
    t = g.totals()
    assert set(t) == set(TOTALS)
    assert t["total"] > 0
    assert math.isclose(t["total"], sum(t[c] for c in COMPONENTS), rel_tol=1e-9)
    assert 0 < t["gated_total"] <= t["total"]


@pytest.mark.slow
def test_mttfs_tiles_compute_less_than_dense(measured):
    """The six tiles: M-TTFS integrates its events, dense multiplies every code. (Not the
    attention path: at d_k = 4 its M-TTFS nodes, which fold the query's silent offset into
    every key written and walk the probability events in time, cost more than the dense ones
    in these gates.)"""
    tiles = ("query", "key", "value", "attn_out", "ffn_expand", "ffn_contract")
    dense, k1 = ({p: e["compute"] for p, e in measured[d].per_token().items()} for d in DESIGNS)
    assert sum(k1[p] for p in tiles) < sum(dense[p] for p in tiles)
    assert k1["ffn_expand"] < dense["ffn_expand"] and k1["ffn_contract"] < dense["ffn_contract"]
    # fewer deliveries at every position than the dense design's codes
    assert all(deliveries(measured["mttfs-k1"])[p] <= n
               for p, n in deliveries(measured["dense"]).items())


@pytest.mark.slow
@pytest.mark.parametrize("design", DESIGNS)
def test_a_layer_on_two_tiles_counts_its_input_once(measured, design):
    """The FFN-expand layer on two tiles: each tile takes the whole input, the pricing counts
    its flits once and its deliveries once (the dense design delivers every code)."""
    g = measured[design]
    tiles = {p.piece: p.tiles for p in g.pieces}
    assert tiles["ffn_expand"] == 2 and tiles["query"] == tiles["ffn_contract"] == 1
    if design == "dense":  # the sentence's 4 tokens x 8 codes
        assert deliveries(g)["ffn_expand_in"] == 4 * 8


@pytest.mark.slow
def test_json_and_sources(measured):
    doc = json.loads(json.dumps(measured["mttfs-k1"].to_json()))
    assert doc["unit"] == "pJ per token" and doc["library"] == "NangateOpenCellLibrary"
    assert set(doc["pieces"]) == set(PIECES) and set(doc["totals"]) == set(TOTALS)
    assert doc["pieces"]["attention"]["total"] == pytest.approx(
        measured["mttfs-k1"].per_token()["attention"]["total"])
    src = doc["sources"]
    assert set(COMPONENTS) <= set(src)
    assert src["sram_read"].startswith("our FreePDK45 macros") and doc["sram_macros"]
    assert doc["totals"]["leakage"] > 0 and doc["totals"]["sram_deselected"] > 0
    assert "rtl_gen.router.Router" in src["movement"]
    assert doc["detail"]["attention"]["cells"]["sm"] > 0


@pytest.mark.slow
def test_model_beside_the_gates(model, measured):
    from regression.block import run_block

    qnn, tok = model
    runs = [run_block(qnn, tok, [SENTENCE], d) for d in DESIGNS]
    ratios = model_ratios([measured[d] for d in DESIGNS], runs)
    assert set(ratios) == set(DESIGNS)
    for row in ratios.values():
        assert set(row) == {"movement", "sram_read", "sram_write", "compute", "total",
                            "gated_total"}
        assert row["total"]["model_pJ"] > 0 and row["total"]["gates_pJ"] > 0


def test_bad_input(model, nangate_lib, tmp_path):
    qnn, tok = model
    with pytest.raises(ValueError, match="design must be one of dense, ttfs"):
        block_case(qnn, tok, [SENTENCE], "mttfs-k9")
    ttfs = block_case(qnn, tok, [SENTENCE], "ttfs")
    with pytest.raises(ValueError, match="at least one captured sentence"):
        measure_block_gates(qnn, ttfs.head(0), lib_path=nangate_lib, work=tmp_path)


def test_the_arithmetic_of_a_result():
    """A piece's total is its components; the gated total its SRAM, movement and gated logic;
    the block's figures are per token; a wide value travels as 16-bit flits."""
    from synth_scripts.block_gates import BlockGates, piece_gates
    from synth_scripts.block_pricing import flit_pieces

    p = piece_gates("query", sram_read=1.0, compute=2.0, movement=0.5, idle=0.25,
                    gated_logic=2.125, flits=3, hops=3.0, cycles=10.0, cells={"tile": 1})
    assert p.energy_pJ["total"] == 3.75 and p.energy_pJ["gated_total"] == 3.625
    p.energy_pJ["idle"] = 1.0
    with pytest.raises(AssertionError, match="query: components sum to 4.5 pJ, total 3.75 pJ"):
        p.check()
    pieces = [piece_gates(name, compute=8.0, gated_logic=6.0, flits=0, hops=0.0, cycles=1.0,
                          cells={})
              for name in PIECES]
    g = BlockGates("dense", 4, 1, pieces, "lib", "lib.lib", 10.0, "icarus", 0.1, 2.0, {}, {},
                   1.0)
    assert g.per_token()["attention"] == {**dict.fromkeys(TOTALS, 0.0), "compute": 2.0,
                                          "total": 2.0, "gated_total": 1.5}
    assert g.totals()["total"] == 2.0 * len(PIECES)
    doc = json.loads(json.dumps(g.to_json()))
    assert doc["unit"] == "pJ per token" and doc["detail"]["query"]["cycles_per_token"] == 0.25
    assert flit_pieces(3, -1, 21) == [(3, 0xFFFF), (3, 0x1F)] and flit_pieces(0, 5, 16) == [(0, 5)]
    # what a run keeps of it (matterhorn.block.kept): all of it, through JSON
    pieces[2].parts["router_hops"] = 0.1 + 0.2  # a float that prints long
    assert BlockGates.load(json.loads(json.dumps(g.dump()))) == g


def test_a_layer_that_took_no_event_counts_zero(monkeypatch):
    """A linear piece whose tiles all took no event (MiniLM's FFN-contract input at k = 2)
    keeps its ``events_in`` counter at 0: the deliveries count 0 there, not a KeyError."""
    from types import SimpleNamespace

    from synth_scripts import block_pricing
    from synth_scripts.gatelevel import tile as gate_tile

    run = SimpleNamespace(windows=1, sram_bits=0, counters=[{"events_in": 0}, {"events_in": 0}],
                          flits=[[]])
    tile = {"free_pJ": 1.0, "idle_clock_pJ": 0.5, "gated_pJ": 0.75, "leakage_pJ": 0.0,
            "cycles": 10, "cells": 5, "area_um2": 100.0}
    router = {"per_hop_pJ": 1.0, "idle_per_clock_pJ": 0.1, "cells": 3, "area_um2": 44.0,
              "link_toggles_per_flit": 0.0}
    monkeypatch.setattr(gate_tile, "run_tile", lambda *a, **k: run)
    monkeypatch.setattr(gate_tile, "tile_energy", lambda *a, **k: tile)
    pr = SimpleNamespace(lib_path=None, work=Path("unused"), sim="icarus", clock_ns=10.0,
                         windows=False, replay_tiles=0, replay_windows=0, cache={},
                         netlist_dir=None, sram_table=None, sram=SramCosts(None, 0.1, 10.0),
                         sram_bit_pJ=0.1,
                         hops=lambda name, n: float(n), router=lambda *a, **k: router,
                         wires=lambda *a, **k: 0.0)
    config = SimpleNamespace(time_width=4, in_addr_width=6)
    p = block_pricing.price_linear(pr, "ffn_contract", [(None, config), (None, config)],
                                   "mttfs-k2", None)
    assert p.counters == {"events_in": 0} and p.tiles == 2
    assert count_deliveries({name: p.counters for name in PIECES},
                            {name: p.tiles for name in PIECES}, False)["ffn_contract_in"] == 0


def test_a_sample_of_tiles_spread_over_the_layer(monkeypatch):
    """``replay_tiles`` runs that many tiles of a linear piece, spread from the first to the
    last, and the first of every other configuration (a last, narrower tile); the piece
    still has all its tiles (their routers), and each window sample names its tile."""
    from types import SimpleNamespace

    from synth_scripts import block_pricing
    from synth_scripts.block_pricing import spread
    from synth_scripts.gatelevel import tile as gate_tile

    assert spread(8, 2) == [0, 7] and spread(32, 4) == [0, 10, 21, 31]
    assert spread(3, 0) == spread(3, 5) == [0, 1, 2] and spread(5, 1) == [0]
    assert spread(8, 2, keep=[5]) == [0, 5, 7]
    ran = []

    def run_tile(layer, design, codes, *, config):
        ran.append(layer)
        return SimpleNamespace(windows=1, sram_bits=1, counters=[{"events_in": 1}], flits=[[]])

    tile = {"free_pJ": 1.0, "idle_clock_pJ": 0.5, "gated_pJ": 0.75, "leakage_pJ": 0.0,
            "cycles": 10, "cells": 5, "area_um2": 100.0, "windows": [
                {"free_pJ": 1.0, "idle_clock_pJ": 0.5, "gated_pJ": 0.75, "cycles": 10,
                 "busy_cycles": 8}]}
    router = {"per_hop_pJ": 1.0, "idle_per_clock_pJ": 0.1, "cells": 3, "area_um2": 44.0,
              "link_toggles_per_flit": 0.0}
    monkeypatch.setattr(gate_tile, "run_tile", run_tile)
    monkeypatch.setattr(gate_tile, "tile_energy", lambda *a, **k: tile)
    pr = SimpleNamespace(lib_path=None, work=Path("unused"), sim="icarus", clock_ns=10.0,
                         windows=True, replay_tiles=2, replay_windows=0, cache={},
                         netlist_dir=None, sram_table=None, sram=SramCosts(None, 0.1, 10.0),
                         sram_bit_pJ=0.1, hops=lambda name, n: float(n),
                         router=lambda *a, **k: router, wires=lambda *a, **k: 0.0)
    wide, narrow = (SimpleNamespace(time_width=4, in_addr_width=6, n=n) for n in (48, 16))
    tiles = [(i, wide) for i in range(6)] + [(6, narrow), (7, narrow)]
    p = block_pricing.price_linear(pr, "ffn_expand", tiles, "mttfs-k1", None)
    assert ran == [0, 6, 7] and p.tiles == 8
    assert [s["instance"] for s in p.samples] == [0, 6, 7]
    assert p.samples[0]["busy"] == 8 and p.energy_pJ["compute"] == 3 * 0.5


def test_a_pricing_goes_to_a_worker_without_its_netlists(nangate_lib, tmp_path):
    """A pricing task's :class:`Pricing` travels without the netlists kept in this process
    (a worker reads them from the netlists' folder); everything else goes with it, and a
    sample of tiles or heads needs the windows."""
    import pickle

    from synth_scripts.block_pricing import Pricing

    pr = Pricing.prepare(nangate_lib, tmp_path, sim="icarus", windows=True, replay_tiles=2,
                         replay_heads=3)
    pr.cache["tiles"] = {"dense": object()}
    back = pickle.loads(pickle.dumps(pr))
    assert back.cache == {} and pr.cache["tiles"]
    assert (back.replay_tiles, back.replay_heads, back.netlist_dir) == (2, 3,
                                                                        tmp_path / "netlists")
    assert back.sram_bit_pJ == pr.sram_bit_pJ and back.sources() == pr.sources()
    with pytest.raises(ValueError, match="replay_tiles 2 prices a sample: it needs windows"):
        Pricing.prepare(nangate_lib, tmp_path, replay_tiles=2)
    with pytest.raises(ValueError, match="replay_heads must be a whole number >= 0"):
        Pricing.prepare(nangate_lib, tmp_path, windows=True, replay_heads=-1)


def test_a_pricing_hands_out_its_longest_tasks_first(model, nangate_lib, tmp_path):
    """A design's pricing tasks ranked as a run hands them out (``DesignPricing.ranks``): the
    attention path first, then the path's activity over the run, the add+LayerNorm units, the
    tiles last; a rank per task, names and tasks in step."""
    from golden_models.block_pieces import ADD_NORM, ATTENTION, LINEAR
    from matterhorn.block_gates import RANK, DesignPricing

    qnn, tok = model
    case = block_case(qnn, tok, [SENTENCE, "Three words here."], "mttfs-k1")
    dp = DesignPricing(qnn, case, lib_path=nangate_lib, work=tmp_path, sim="icarus",
                       tile_neurons=8, windows=True, whole=case)
    ranks, names = dp.ranks(), dp.names()
    assert len(ranks) == len(names) == len(dp.tasks)
    order = [names[i] for i in sorted(range(len(ranks)), key=lambda i: (ranks[i], i))]
    assert order[:2] == ["mttfs-k1-attention-0", "mttfs-k1-path"]
    assert {n.rsplit("-", 1)[0] for n in order[2:4]} == {"mttfs-k1-norm_attn", "mttfs-k1-norm_ffn"}
    assert all(RANK[LINEAR] == ranks[names.index(n)] for n in order[4:])
    assert RANK[ATTENTION] < RANK["path"] < RANK[ADD_NORM] < RANK[LINEAR]


@pytest.mark.slow
def test_the_pricing_on_a_cluster_equals_the_local_run(model, nangate_lib, tmp_path, capfd):
    """``matterhorn block --gates -j 2``: each design's run a task, then its pricing's tasks
    (each replayed tile, the attention path, each add+LayerNorm unit) spread over two worker
    processes, the longest handed out first, sharing the netlists and builds of one folder:
    the document is the one a run in this process writes, figure for figure (the wall-clock
    seconds aside), and each task is shown as it ends. Two sentences, the shorter replayed,
    one tile of the two-tile FFN-expand layer: calibrated."""
    from matterhorn.block import BlockSetup, GatesSetup, run
    from regression.block_parts import seq_max_of

    qnn, tok = model
    st = BlockSetup(qnn, tok, "tiny random", [SENTENCE, "Three words here."],
                    seq_max_of(qnn.cfg))

    def figures(doc):
        if isinstance(doc, dict):
            return {k: figures(v) for k, v in doc.items() if k not in ("seconds",
                                                                          "sample_seconds")}
        if isinstance(doc, list):
            return [figures(v) for v in doc]
        return doc

    docs = []
    for jobs in (1, 2):
        gates = GatesSetup(nangate_lib, "icarus", tmp_path / "gates", sample=1, tiles=1)
        docs.append(run(st, list(DESIGNS), tile_neurons=8, gates=gates, jobs=jobs))
    local, cluster = docs
    assert cluster["gates"]["method"]["dense"]["calibrated"]
    fits = cluster["gates"]["method"]["mttfs-k1"]["fits"]["ffn_expand"]["tile"]
    assert fits["replayed"] == [0]
    assert figures(cluster) == figures(local)
    assert "[pricing 20/20, " in capfd.readouterr().err


def _setup(model):
    from matterhorn.block import BlockSetup
    from regression.block_parts import seq_max_of

    qnn, tok = model
    return BlockSetup(qnn, tok, "tiny random", [SENTENCE], seq_max_of(qnn.cfg))


def test_hops_per_flit_follow_the_placement(model):
    """Each piece's hops per input flit are its signals' flit-hops on the block's placement
    over the flits their producers sent: at least one hop (every consumer node is another
    node), more where a flit is multicast to several consumer nodes."""
    from golden_models.block_pieces import TILE_NEURONS
    from matterhorn.block import hops_per_flit
    from regression.block import run_block
    from regression.block_parts import seq_max_of
    from rtl_gen.block_map import BlockShape, place_block

    qnn, tok = model
    run = run_block(qnn, tok, [SENTENCE], "mttfs-k1")
    placement = place_block(BlockShape.of(qnn.cfg, seq_max=seq_max_of(qnn.cfg),
                                          tile_neurons=TILE_NEURONS))
    hops = hops_per_flit(placement, run.flits)
    assert list(hops) == list(PIECES)
    by_signal = placement.traffic(run.flits).by_signal()
    for piece in DESCRIBED:
        sent = sum(sum(run.flits[s]) for s in piece.signals)
        assert sent > 0, piece.name
        assert hops[piece.name] == sum(by_signal[s].flit_hops for s in piece.signals) / sent
        assert hops[piece.name] >= 1.0, piece.name
    # the attention path's inputs go to every head's nodes: more than one hop per flit sent
    assert hops["attention"] > 1.0


@pytest.mark.slow
def test_block_document_with_gates(model, measured, tmp_path):
    """``matterhorn block``'s document with the gates: per block at the workload, the
    model beside them, the verdict in our gates first, a valid block.json."""
    from golden_models.block_pieces import TILE_NEURONS
    from matterhorn import block, block_report
    from regression.block import run_block

    st = _setup(model)
    runs = [run_block(st.qnn, st.tokenizer, st.sentences, d) for d in DESIGNS]
    dims = block.workload_dims(st)
    doc = block.block_document(st, runs, block.model_block_energy(runs, dims), dims, block=0,
                               tile_neurons=TILE_NEURONS, gates=measured)
    paths = block.write(doc, tmp_path / "out")
    doc = json.loads(paths[0].read_text())
    tokens = doc["workload"]["batch"] * doc["workload"]["seq"]
    for d in doc["designs"]:
        g = d["energy_pJ"]["gates"]
        assert set(g) == set(TOTALS)
        assert math.isclose(g["total"], measured[d["design"]].totals()["total"] * tokens)
        assert set(d["gates_per_token_pJ"]) == set(PIECES)
    assert doc["pdk"] == "NangateOpenCellLibrary"
    assert set(doc["gates"]["model_vs_gates"]) == set(DESIGNS)
    r = block_report.ratio(doc, source="gates")
    lines = block_report.verdict(doc)
    assert lines[1].startswith("In our gates (NangateOpenCellLibrary, 10 ns clock), an M-TTFS "
                               f"k=1 block costs {r:.3f}x the dense INT4 block")
    md = (tmp_path / "out" / "block.md").read_text()
    assert "## Energy per block in our gates" in md and "not our gates" in md


@pytest.mark.slow
def test_the_attention_path_node_by_node_agrees_with_its_whole_netlist(model, nangate_lib,
                                                                      tmp_path):
    """The validation of the method (docs/block_gates.md): the attention path priced node by
    node, as the block's pricing does, against one replay of its whole netlist on the same
    run. Measured: 1.15x (dense) and 1.14x (M-TTFS k=1) the whole, the designs' ratio within
    1.1 %; a pricing off by more than a quarter, or one that moves the designs' ratio by more
    than 5 %, fails."""
    from matterhorn.block_gates import validate_attention

    got = each_design(model, validate_attention, nangate_lib, tmp_path)
    for v in got.values():
        assert 0.8 < v["ratio"] < 1.25, v
        assert v["pieces_pJ"] == pytest.approx(v["nodes_pJ"] + v["routers_pJ"])
    dense, k1 = got["dense"], got["mttfs-k1"]
    assert (k1["pieces_pJ"] / dense["pieces_pJ"]) == pytest.approx(
        k1["whole_pJ"] / dense["whole_pJ"], rel=0.05)


# -- the memories priced by access ---------------------------------------------------------------


def test_memories_priced_by_access_against_memory_energy():
    """A piece's memories at the shipped macros: each memory's counts (a tile's, a head's, an
    add+LayerNorm unit's) and :func:`synth_scripts.sram.pricing.memory_energy` of each by
    hand, exactly; a linear piece's components and gated total from them."""
    from synth_scripts.block_gates import (
        SramCosts,
        attention_accesses,
        linear_piece,
        norm_accesses,
        tile_accesses,
    )
    from synth_scripts.sram import pricing, table
    from synth_scripts.sram.shapes import MemoryShape

    tab = table.load()
    tile = {m.path: m for m in (MemoryShape("weights.mem", 384, 192),
                                MemoryShape("thresholds.mem", 15, 864),
                                MemoryShape("init.mem", 1, 864))}
    plan = {"shapes": {k: m.to_json() for k, m in tile.items()}, "groups": 3, "walk": 15}
    acc = tile_accesses(plan, 4, {"weight_row_reads": 100, "events_in": 7})
    assert acc == {"weights.mem": {"reads": 100}, "thresholds.mem": {"reads": 15 * 3 * 4},
                   "init.mem": {"reads": 3 * 4}}
    assert tile_accesses({**plan, "walk": 0}, 4, {})["thresholds.mem"] == {"reads": 0}
    counters = {"cnt_qk_weight_row_reads_h1": 5, "cnt_qk_key_writes_h1": 7,
                "cnt_sm_scores_in_h1": 3, "cnt_pv_weight_row_reads_h1": 11,
                "cnt_pv_value_writes_h1": 13, "cnt_qk_weight_row_reads_h0": 99}
    assert attention_accesses(counters, 1) == {
        "qk": {"reads": 5, "granule_writes": 7}, "sm": {"reads": 6, "writes": 3},
        "pv": {"reads": 11, "granule_writes": 13}}
    assert norm_accesses(4, 3) == {"channels.mem": {"reads": 24},
                                   "row.mem": {"reads": 12, "writes": 12}}
    head = {"qk": MemoryShape("weights.mem", 32, 512, granularity=4),
            "sm": MemoryShape("softmax.row.mem", 512, 14),
            "pv": MemoryShape("weights.mem", 128, 128, granularity=4)}
    sram = SramCosts(tab, 0.2, 10.0)
    cycles = 1000
    got = sram.price([(plan["shapes"], acc, cycles),
                      ({k: m.to_json() for k, m in head.items()},
                       attention_accesses(counters, 1), cycles)], read_bits=1, write_bits=1)
    by_hand = [pricing.memory_energy(tile[k], reads=a["reads"], idle_cycles=cycles - a["reads"],
                                     cycles=cycles, clock_ns=10.0, table=tab)
               for k, a in acc.items()]
    by_hand += [
        pricing.memory_energy(head["qk"], reads=5, granule_writes=7, idle_cycles=988,
                              cycles=cycles, clock_ns=10.0, table=tab),
        pricing.memory_energy(head["sm"], reads=6, writes=3, idle_cycles=991, cycles=cycles,
                              clock_ns=10.0, table=tab),
        pricing.memory_energy(head["pv"], reads=11, granule_writes=13, idle_cycles=976,
                              cycles=cycles, clock_ns=10.0, table=tab)]
    def summed(what: str) -> float:  # a piece's uses (the tile, the head), each summed
        return (sum(getattr(e, what) for e in by_hand[:3])
                + sum(getattr(e, what) for e in by_hand[3:]))

    assert got == {"read": summed("read"), "write": summed("write"),
                   "deselected": summed("deselected"), "leakage": summed("leakage")}
    # the weights, from the table's 256 x 32 entry: 6 x 2 macros, 6 read a word, 6 deselected
    e = tab.entry(pricing.bank(tile["weights.mem"]).macro)
    w = by_hand[0]
    assert w.read == pytest.approx(100 * 6 * e["read_pJ"], rel=1e-12)
    assert w.deselected == pytest.approx((100 * 6 + 900 * 12) * e["deselected_pJ"], rel=1e-12)
    assert w.leakage == pytest.approx(12 * e["leakage_uW"] * 1e-6 * 1000 * 10e-9 * 1e12,
                                      rel=1e-12)
    # the piece: the cells' leakage out of compute and the gated logic, into leakage
    costs = {"per_hop": 0.0, "wire_per_hop": 0.0, "idle_per_clock": 0.0}
    p = linear_piece("query", logic=50.0, idle=5.0, gated=40.0, cell_leakage=3.0,
                     cycles=cycles, read_bits=1, sram=got, flits=0, hops=0.0, tiles=1,
                     unit_costs=costs, cells={}, counters={})
    e = p.energy_pJ
    assert (e["sram_read"], e["sram_write"], e["sram_deselected"]) == (
        got["read"], got["write"], got["deselected"])
    assert e["compute"] == 47.0 and e["idle"] == 5.0 and e["leakage"] == 3.0 + got["leakage"]
    assert e["gated_total"] == pytest.approx(got["read"] + got["write"] + 37.0 + e["leakage"],
                                             rel=1e-12)
    assert e["total"] == pytest.approx(sum(e[c] for c in COMPONENTS), rel=1e-12)


def test_the_memories_sources(nangate_lib, sky130_lib, tmp_path):
    """NanGate 45 prices its memories at our FreePDK45 macros; sky130 (no macro table in its
    process) keeps the per-bit figure and says so; every component says where its figures
    come from."""
    from synth_scripts.block_pricing import Pricing

    ng = Pricing.prepare(nangate_lib, tmp_path / "ng")
    assert ng.sram_table is not None
    src = ng.sources()
    assert set(COMPONENTS) <= set(src)
    for c in ("sram_read", "sram_write", "sram_deselected"):
        assert src[c].startswith("our FreePDK45 macros (OpenRAM 1.2.48, ngspice"), src[c]
    assert "TT 1 V 25 C" in src["sram_read"] and "our FreePDK45 macros" in src["leakage"]
    for c in ("compute", "nonlinear", "movement", "idle", "leakage"):
        assert src[c].startswith("our gates"), src[c]
    sky = Pricing.prepare(sky130_lib, tmp_path / "sky")
    assert sky.sram_table is None
    src = sky.sources()
    assert src["sram_read"].startswith("NOT our gates: per-bit")
    assert src["sram_write"].startswith("NOT our gates: per-bit")
    assert "not priced" in src["sram_deselected"] and "not priced" in src["leakage"]
    assert src["leakage"].startswith("our gates")
    # the per-bit path: bits x the figure, whatever the uses
    assert sky.sram.price([({}, {"x": {"reads": 9}}, 10)], read_bits=10, write_bits=2) == {
        "read": 10 * sky.sram_bit_pJ, "write": 2 * sky.sram_bit_pJ, "deselected": 0.0,
        "leakage": 0.0}


def test_the_verdict_against_the_clock_period():
    """Leakage scales with the clock period, every other component is per clock: the ratio
    at another period by hand."""
    from matterhorn.block_report import by_clock

    dense = {"total": 100.0, "gated_total": 60.0, "leakage": 20.0}
    k1 = {"total": 90.0, "gated_total": 50.0, "leakage": 30.0}
    doc = {"gates": {"clock_ns": 10.0},
           "designs": [{"design": "dense", "energy_pJ": {"gates": dense}},
                       {"design": "mttfs-k1", "energy_pJ": {"gates": k1}}]}
    at10, at20 = by_clock(doc, (10.0, 20.0))
    assert at10 == {"clock_ns": 10.0, "total": 0.9, "gated_total": 50.0 / 60.0,
                    "leakage_share_dense": 0.2}
    assert at20 == {"clock_ns": 20.0, "total": 120.0 / 120.0, "gated_total": 80.0 / 80.0,
                    "leakage_share_dense": 40.0 / 120.0}
    assert by_clock({**doc, "gates": None}) == []


def test_the_memories_by_the_bit_beside_the_macros():
    """``PieceGates.per_bit`` of a piece priced at the macros equals the same piece priced by
    the bit (every component and both totals), for a linear piece and the attention path;
    the block's ``per_bit_totals`` sums them per token; the report's ratio from them."""
    from matterhorn.block_report import by_bit
    from synth_scripts.block_gates import (
        TOTALS,
        BlockGates,
        SramCosts,
        attention_piece,
        linear_piece,
    )

    macros = {"read": 11.0, "write": 2.5, "deselected": 7.0, "leakage": 4.0}
    bit = SramCosts(None, 0.2, 10.0)
    costs = {"per_hop": 0.5, "wire_per_hop": 0.1, "idle_per_clock": 0.01, "inner_per_hop": 0.3,
             "inner_wire_per_hop": 0.05}

    def linear(sram):
        return linear_piece("query", logic=50.0, idle=5.0, gated=40.0, cell_leakage=3.0,
                            cycles=100, read_bits=30, sram=sram, flits=4, hops=6.0, tiles=2,
                            unit_costs=costs, cells={}, counters={})

    def attention(sram):
        energy = {"compute": 20.0, "nonlinear": 9.0, "idle": 4.0, "gated": 25.0,
                  "leakage": 2.0, "qk_leakage": 1.0, "sm_leakage": 0.5, "pv_leakage": 0.5}
        return attention_piece(energy, read_bits=40, write_bits=12, sram=sram, flits=8,
                               hops=5.0, inner_hops=7.0, heads=2, cycles=50, unit_costs=costs,
                               cells={}, counters={})

    for build, bits in ((linear, (30, 0)), (attention, (40, 12))):
        at_macros = build(macros)
        by_bits = build(bit.price([], read_bits=bits[0], write_bits=bits[1]))
        assert at_macros.memory_leakage == 4.0 and by_bits.memory_leakage == 0.0
        got = at_macros.per_bit(0.2)
        assert got.keys() == by_bits.energy_pJ.keys()
        for k in TOTALS:
            assert got[k] == pytest.approx(by_bits.energy_pJ[k], rel=1e-12, abs=1e-12), k
        assert by_bits.per_bit(0.2) == pytest.approx(by_bits.energy_pJ, rel=1e-12)
    pieces = [linear(macros), attention(macros)]
    g = BlockGates("mttfs-k1", tokens=4, sentences=1, pieces=pieces, library="x",
                   liberty="x", clock_ns=10.0, simulator="icarus", sram_bit_pJ=0.2,
                   divide_by=1.0, sources={}, dims={}, seconds=0.0, sram_macros=True)
    want = [linear(bit.price([], read_bits=30, write_bits=0)),
            attention(bit.price([], read_bits=40, write_bits=12))]
    totals = g.per_bit_totals()
    for k in TOTALS:
        assert totals[k] == pytest.approx(sum(p.energy_pJ[k] for p in want) / 4, rel=1e-12)
    assert BlockGates.load(g.dump()).per_bit_totals() == totals
    doc = {"gates": {"sram_pJ_per_bit": 0.2}, "designs": [
        {"design": "dense", "energy_pJ": {"gates_sram_by_bit": {"total": 10.0,
                                                               "gated_total": 8.0}}},
        {"design": "mttfs-k1", "energy_pJ": {"gates_sram_by_bit": {"total": 5.0,
                                                                  "gated_total": 2.0}}}]}
    assert by_bit(doc) == {"total": 0.5, "gated_total": 0.25, "bit_pJ": 0.2}
    assert by_bit({"gates": {}, "designs": [{"design": "dense", "energy_pJ": {}}]}) is None
