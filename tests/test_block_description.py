"""The block described once (golden_models.block_pieces): the description is a block, the
places that walk it agree with it, a design's name and masks have one home; a piece kind
added to a copy of the description fails at every place that must handle it (docs/design.md,
"Adding a piece kind"), a piece removed fails at the wiring."""

from __future__ import annotations

import dataclasses
import importlib

import pytest

from golden_models import CodeSpace, Mask, ttfs_mask
from golden_models.block_pieces import (
    ADD_NORM,
    ATTENTION,
    DESIGNS,
    KINDS,
    LINEAR,
    PIECE_NAMES,
    PIECES,
    Design,
    Piece,
    check_handlers,
    check_wiring,
    count_deliveries,
    counted_positions,
    piece,
)
from golden_models.positions import POSITION_KEYS

#: Every place that walks the block and keeps a handler per kind of piece: module -> table.
#: A new kind of piece needs an entry in each (and the kind in KINDS).
KIND_TABLES = {
    "regression.block": "RUNNERS",
    "regression.block_fast": "FAST_RUNNERS",
    "rtl_gen.block_map": "STAGES",
    "rtl_gen.block_map ": "EDGES",
    "matterhorn.block_gates": "JOBS",
    "matterhorn.block_gates ": "ACTIVITY",
    "synth_scripts.block_calibration": "CALIBRATORS",
}


def _table(module: str) -> dict:
    return getattr(importlib.import_module(module.strip()), KIND_TABLES[module])


def test_the_description_is_a_block():
    assert check_wiring() == PIECES
    assert PIECE_NAMES == ("query", "key", "value", "attention", "attn_out", "norm_attn",
                           "ffn_expand", "ffn_contract", "norm_ffn")
    # the eight spike-encoded positions, each counted by the piece that consumes it
    assert list(counted_positions()) == list(POSITION_KEYS)
    assert {p.kind for p in PIECES} == set(KINDS)


def test_every_place_has_a_handler_for_every_kind():
    for module in KIND_TABLES:
        assert set(_table(module)) == set(KINDS), module


def test_the_walkers_agree_with_the_description():
    """The mesh carries every piece's inputs; the pricing's attention nodes are the attention
    kind's units; the placement's node kinds are the pieces', in data-flow order."""
    from rtl_gen import block_map
    from synth_scripts.block_gates import NODE_COMPONENT

    for p in PIECES:
        assert set(p.signals) <= set(block_map.SIGNALS), p.name
    assert tuple(NODE_COMPONENT) == KINDS[ATTENTION].units
    assert list(block_map.KINDS) == [n for p in PIECES for n in p.nodes]
    assert block_map.PER_HEAD == KINDS[ATTENTION].per_head


def test_a_new_kind_fails_at_every_place_that_must_handle_it(monkeypatch):
    """A copy of the description with a piece of a new kind (a GELU unit of its own between
    the FFN layers): the description refuses the kind, and each walker stops at its kind table
    before it does any work, naming the table. These are the places docs/design.md lists."""
    gelu = Piece("ffn_gelu", "gelu", ("ffn_contract_in",), ("ffn_contract_in",), node="gelu")
    copy = (*PIECES[:7], gelu, *PIECES[7:])
    with pytest.raises(ValueError, match="kind 'gelu' is not one of linear, attention"):
        check_wiring(copy)
    failed = []
    for module in KIND_TABLES:
        with pytest.raises(NotImplementedError, match="no handler for piece kind 'gelu'") as e:
            check_handlers(_table(module), f"{module.strip()}.{KIND_TABLES[module]}", copy)
        failed.append(str(e.value).split()[0])
    assert failed == [f"{m.strip()}.{t}" for m, t in KIND_TABLES.items()]
    # the walkers themselves: each checks its table first
    from matterhorn import block_gates
    from regression import block, block_fast
    from rtl_gen import block_map
    from synth_scripts import block_calibration

    calls = [
        (block, lambda: block.run_block_pieces(None, None)),
        (block_fast, lambda: block_fast.run_block_fast(None, None)),
        (block_map, lambda: block_map.block_stages(None)),
        (block_map, lambda: block_map.block_edges(None)),
        (block_gates, lambda: block_gates.measure_block_gates(None, None, lib_path=None,
                                                              work=None)),
        (block_gates, lambda: block_gates.activity(None, None)),
        (block_calibration, lambda: block_calibration.calibrate(None, {}, tokens=1,
                                                                sentences=1)),
    ]
    walked = []
    for module, call in calls:
        monkeypatch.setattr(module, "PIECES", copy)
        with pytest.raises(NotImplementedError, match="'gelu'") as e:
            call()
        walked.append(str(e.value).split()[0])
    assert walked == failed


def test_a_removed_piece_fails_at_the_wiring():
    """Without the FFN-contract layer, the second add+LayerNorm takes sums no piece makes."""
    copy = tuple(p for p in PIECES if p.name != "ffn_contract")
    with pytest.raises(ValueError, match="piece norm_ffn takes ffn_sum, which no piece before "
                                         "it makes"):
        check_wiring(copy)
    last = dataclasses.replace(PIECES[-1], next_block=False)
    with pytest.raises(ValueError, match="the block's last piece, and it alone, makes the next"):
        check_wiring((*PIECES[:-1], last))
    with pytest.raises(ValueError, match="piece key is described twice"):
        check_wiring((*PIECES[:2], PIECES[1], *PIECES[2:]))


def test_deliveries_are_counted_where_the_description_says():
    """A linear piece's input counter over its tiles; the attention path's per head."""
    counters = {p.name: {} for p in PIECES}
    tiles = dict.fromkeys(PIECE_NAMES, 1)
    for p in PIECES:
        if p.kind == LINEAR:
            counters[p.name] = {"events_in": 12}
    counters["ffn_expand"], tiles["ffn_expand"] = {"events_in": 24}, 2
    counters["attention"] = {"cnt_qk_events_in_h0": 3, "cnt_qk_events_in_h1": 4,
                             "cnt_pv_events_in_h0": 5, "cnt_sm_events_in_h0": 100}
    got = count_deliveries(counters, tiles, dense=False)
    assert got == {"q_proj_in": 12, "k_proj_in": 12, "v_proj_in": 12, "query": 7,
                   "attn_prob": 5, "attn_out_in": 12, "ffn_expand_in": 12,
                   "ffn_contract_in": 12}


def test_a_design_is_named_and_parsed_in_one_place():
    assert [Design.parse(d).name for d in DESIGNS] == list(DESIGNS)
    assert Design.parse("mttfs-k1") == Design("mttfs", 1) and Design.parse("dense").dense
    with pytest.raises(ValueError, match="design must be one of dense, ttfs, mttfs-k0"):
        Design.parse("mttfs-k9")
    with pytest.raises(ValueError, match="the mttfs design takes a radius k >= 0"):
        Design("mttfs")
    with pytest.raises(ValueError, match="the ttfs design takes no radius"):
        Design("ttfs", 1)


def test_a_design_hands_out_masks_and_changes_none():
    space = CodeSpace(16, "sym")
    calibrated = Mask(space, 7, 0)
    assert Design("ttfs").mask(calibrated) == ttfs_mask(space)
    assert Design("mttfs", 2).mask(calibrated) == Mask(space, 7, 2)
    assert Design("dense").mask(calibrated) == Mask(space, 7, 0)
    assert calibrated == Mask(space, 7, 0)


def test_add_norm_pieces_name_their_units():
    for p in PIECES:
        if p.kind == ADD_NORM:
            assert len(p.units) == 2 and p.node == p.name
    assert piece("norm_ffn").next_block and not piece("norm_attn").next_block
    with pytest.raises(KeyError, match="no piece 'gelu'"):
        piece("gelu")
