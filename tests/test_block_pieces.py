# amaranth: UnusedElaboratable=no
"""A whole encoder block through its hardware pieces (regression.block), in the Amaranth
simulator: the small random block, each piece fed by the one before it, bit-exact against the
integer QNN at every position for every design; planted faults are caught; the tap of the
integer block sees what the block computes."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from golden_models import encode_events
from golden_models.block_pieces import DESIGNS, PIECE_NAMES, Design
from networks.block import BlockSequence, block_case, capture_block, random_block_model
from networks.integer import TAPPED, block_forward
from regression.block import run_block, run_block_pieces

#: A short sentence: 8 tokens with [CLS] and [SEP] (the pieces run in the Python simulator).
SENTENCE = "A short sentence of six words."


@pytest.fixture(scope="module")
def model():
    return random_block_model(seq=12)


@pytest.fixture(scope="module")
def runs(model):
    """Every design; the FFN-expand layer (64 neurons) in two tiles of the default 48."""
    qnn, tok = model
    return {d: run_block(qnn, tok, [SENTENCE], d) for d in DESIGNS}


@pytest.mark.parametrize("design", DESIGNS)
def test_every_piece_is_bit_exact(runs, design):
    run = runs[design]
    assert [p.piece for p in run.pieces] == list(PIECE_NAMES)
    for p in run.pieces:
        assert p.checked > 0, p.piece
        assert p.mismatches == 0, (p.piece, p.first_mismatch)
    assert run.tokens == 8 and run.cycles > 0


def test_deliveries_follow_the_designs(runs):
    """Dense delivers every code; TTFS, then M-TTFS at growing k, deliver fewer events."""
    dense = runs["dense"]
    assert dense.deliveries == dense.values
    for p in dense.values:
        counts = [runs[d].deliveries[p] for d in ("dense", "mttfs-k0", "mttfs-k1", "mttfs-k2")]
        assert counts == sorted(counts, reverse=True), p
        assert runs["ttfs"].deliveries[p] <= dense.values[p]


def test_flits_per_neuron_add_up_to_the_deliveries(runs):
    """The per-neuron flit counts the mesh's traffic is priced on are the deliveries the
    pieces counted, position by position."""
    for run in runs.values():
        for p, n in run.deliveries.items():
            assert sum(run.flits[p]) == n, (run.design, p)
        assert sum(run.flits["key"]) == run.values["q_proj_in"]  # one write per code
        assert {p.piece: p.tiles for p in run.pieces}["ffn_expand"] == 2


def test_model_energy_at_the_measured_rates(runs):
    from energy_model.dims import ModelDims
    from matterhorn.block import model_block_energy

    dims = ModelDims("random block", hidden=32, ffn=64, heads=2, layers=1, weight_bits=4)
    energy = model_block_energy(list(runs.values()), dims)
    assert set(energy) == set(DESIGNS)
    totals = {d: e["total_J"] for d, e in energy.items()}
    assert totals["mttfs-k2"] < totals["mttfs-k1"] < totals["mttfs-k0"]


def _case(model, design):
    qnn, tok = model
    return block_case(qnn, tok, [SENTENCE], design)


def test_planted_faults_are_caught_at_their_pieces(model):
    """Four expectations corrupted (by one LSB, or an event silenced), each at another piece:
    exactly those four pieces report it (what a hardware bug at each would look like; every
    piece is fed by the hardware before it, so a fault does not spread)."""
    qnn, _ = model
    case = _case(model, "mttfs-k1")
    [seq] = case.sequences
    codes, tensors = dict(seq.codes), dict(seq.tensors)
    tensors["attn_sum"] = tensors["attn_sum"].clone()
    tensors["attn_sum"][3, 5] += 1
    tensors["r_out"] = tensors["r_out"].clone()
    tensors["r_out"][0, 0] += 1
    # an event of the FFN-expand tile silenced (a code moved inside the dead zone would be an
    # equivalent mutant: the mask hides it)
    q = codes["ffn_contract_in"] = codes["ffn_contract_in"].clone()
    mask = case.masks["ffn_contract_in"]
    index, _ = encode_events(q[2], mask)
    q[2, int(index[0])] = mask.mu
    codes["key"] = codes["key"].clone()
    codes["key"][1, 0] -= 1
    planted = dataclasses.replace(seq, codes=codes, tensors=tensors)
    pieces = run_block_pieces(qnn, dataclasses.replace(case, sequences=(planted,)))
    # a key code one lower is its event one step later: one event missing, one extra
    assert {p.piece: p.mismatches for p in pieces if p.mismatches} == {
        "attn_out": 1, "norm_ffn": 1, "ffn_expand": 1, "key": 2}


def test_the_tap_sees_what_the_block_computes(model):
    """Captured at k = 0, the masks the random block's QNN is calibrated with: its own
    forward, outside the capture, computes what the tap saw."""
    qnn, tok = model
    [seq] = _case(model, "mttfs-k0").sequences
    assert set(seq.tensors) == set(TAPPED)
    layer = qnn.layers[0]
    out = block_forward(layer, seq.tensors["r_in"][None], seq.valid[None])
    assert torch.equal(out[0], seq.tensors["r_out"])
    assert layer.tap is None  # capture_block leaves no tap behind


def test_block_layers_reproduce_the_qnn(model):
    case = _case(model, "mttfs-k1")
    [seq], layers = case.sequences, case.layers
    for name, p_in, p_out in (("query", "q_proj_in", "query"), ("key", "k_proj_in", "key"),
                              ("ffn_expand", "ffn_expand_in", "ffn_contract_in")):
        for i in range(seq.length):
            r = layers[name].run_codes(seq.codes[p_in][i])
            assert torch.equal(layers[name].out_mask.space.c - r.tau, seq.codes[p_out][i])


def test_bad_input(model, masks):
    qnn, tok = model
    with pytest.raises(ValueError, match="design must be one of dense, ttfs"):
        Design.parse("mttfs-k9")
    with pytest.raises(ValueError, match="block must be in 0..0, not 1"):
        capture_block(qnn, tok, [SENTENCE], block=1)
    with pytest.raises(ValueError, match="at least one sentence"):
        capture_block(qnn, tok, [])
    assert isinstance(_case(model, "ttfs").sequences[0], BlockSequence)
    assert all(p.mask == m for p, m in zip(qnn.spike_points(), masks, strict=True))


@pytest.fixture
def masks(model):
    """The QNN's calibrated masks before the test: a case leaves them as they were."""
    return [p.mask for p in model[0].spike_points()]
