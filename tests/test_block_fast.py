# amaranth: UnusedElaboratable=no
"""A whole encoder block's pieces in the fast harness (regression.block_fast): the small random
block on Verilator and on Icarus agrees with the Amaranth simulator's run of the same pieces,
value for value and counter for counter; a golden value planted wrong is caught inside the
simulation, in the piece that produces it.

The builds are cached under ``build/block-tests`` (the Verilog of a tile and of the attention
path of each design; about a minute on Verilator the first time)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from golden_models.block_pieces import PIECE_NAMES
from networks.block import block_case, random_block_model
from regression.block import run_block, run_block_pieces
from regression.block_fast import run_block_fast

ROOT = Path(__file__).resolve().parents[1] / "build" / "block-tests"
#: Two sentences: 8 and 10 tokens with [CLS] and [SEP].
SENTENCES = ["A short sentence of six words.", "Another sentence, with eight words in it."]
#: The design and simulator of each case: a spiking design on Verilator, the dense one on Icarus.
CASES = [("mttfs-k1", "verilator"), ("dense", "icarus")]


@pytest.fixture(scope="module")
def model():
    return random_block_model(seq=12)


@pytest.fixture(scope="module")
def captured(model):
    qnn, tok = model
    return {design: block_case(qnn, tok, SENTENCES, design) for design, _ in CASES}


_clean: dict = {}


def _fast(model, case, sim, name):
    """The pieces of ``case`` on ``sim``; the clean runs (``<design>-clean``) once a module."""
    qnn, _ = model
    if name.endswith("-clean") and name in _clean:
        return _clean[name]
    out = run_block_fast(qnn, case, sim=sim, root=ROOT, name=name)
    if name.endswith("-clean"):
        _clean[name] = out
    return out


@pytest.mark.parametrize(("design", "sim"), CASES)
def test_the_fast_harness_agrees_with_the_amaranth_run(model, captured, design, sim):
    qnn, _ = model
    case = captured[design]
    fast = _fast(model, case, sim, f"{design}-clean")
    slow = run_block_pieces(qnn, case)
    assert [p.piece for p in fast] == list(PIECE_NAMES)
    for f, s in zip(fast, slow, strict=True):
        assert f.mismatches == 0, (f.piece, f.first_mismatch)
        assert f.checked == s.checked > 0, f.piece
        assert f.counters == s.counters, f.piece
        assert f.tiles == s.tiles
        # the harness's clocks hold the loads too: never fewer than the windows' own
        assert f.cycles >= s.cycles > 0, f.piece


def _planted(case, name: str, tensors: bool = False):
    """The case with one golden value of ``name`` (codes, or a tensor) moved to the other
    end of its range (a code moved by one may stay in the dead zone, silent either way)."""
    seqs = case.sequences
    s0 = seqs[0]
    where = dict(s0.tensors if tensors else s0.codes)
    bad = where[name].contiguous().clone()
    flat = bad.view(-1)
    lo, hi = int(flat.min()), int(flat.max())
    flat[3] = lo if int(flat[3]) != lo else hi
    where[name] = bad
    s0 = dataclasses.replace(s0, **{"tensors" if tensors else "codes": where})
    return dataclasses.replace(case, sequences=(s0, *seqs[1:]))


@pytest.mark.parametrize(("name", "tensors", "piece"), [
    ("query", False, "query"),            # a projection's output codes
    ("attn_sum", True, "attn_out"),       # a raw sum
    ("attn_out_in", False, "attention"),  # the attention path's output
    ("r1", True, "norm_attn"),            # an add+LayerNorm unit's new stream
    ("ffn_expand_in", False, "norm_attn"),  # the codes it walks
])
def test_a_golden_value_planted_wrong_is_caught_in_its_piece(model, captured, name, tensors,
                                                              piece):
    case = _planted(captured["mttfs-k1"], name, tensors)
    runs = {r.piece: r for r in _fast(model, case, "verilator", f"planted-{name}")}
    assert runs[piece].mismatches >= 1, piece
    assert runs[piece].first_mismatch.startswith(piece)


def test_run_block_takes_the_simulator(model):
    qnn, tok = model
    run = run_block(qnn, tok, SENTENCES[:1], "mttfs-k1", sim="verilator", root=ROOT)
    assert run.mismatches == 0 and run.tokens == 8
    with pytest.raises(ValueError, match="sim must be one of amaranth, icarus, verilator"):
        run_block(qnn, tok, SENTENCES[:1], "mttfs-k1", sim="questa")


def test_a_codes_mismatch_counts_every_value(model, captured):
    """A window whose expected codes are all wrong counts in the piece, not only once."""
    case = captured["mttfs-k1"]
    seqs = case.sequences
    c = dict(seqs[0].codes)
    c["ffn_contract_in"] = torch.zeros_like(c["ffn_contract_in"]) + 1
    case = dataclasses.replace(case, sequences=(dataclasses.replace(seqs[0], codes=c), *seqs[1:]))
    runs = {r.piece: r for r in _fast(model, case, "verilator", "planted-ffn")}
    assert runs["ffn_expand"].mismatches > 1
    assert runs["query"].mismatches == 0


def test_a_real_sentence_through_minilms_block_on_verilator(minilm, minilm_qnn, one_thread):
    """MiniLM's block 0 (converted post-training, M-TTFS k = 1) on a short real sentence, every
    piece on the generated Verilog: 0 mismatches at every position (the builds: the tiles of
    384 and 1,536 inputs and the twelve-head attention path with 128 key slots, about five
    minutes the first time)."""
    import copy

    from networks.integer import integer_mode_

    _, tok = minilm
    qnn = integer_mode_(copy.deepcopy(minilm_qnn))
    run = run_block(qnn, tok, ["The grammar is given here."], "mttfs-k1", sim="verilator",
                    root=ROOT)
    assert run.tokens == 8
    for p in run.pieces:
        assert p.mismatches == 0, (p.piece, p.first_mismatch)
    checked = {p.piece: p.checked for p in run.pieces}
    # every sum of both raw-sum layers, both norms' streams and codes (block 1's three feeds)
    assert checked["attn_out"] == checked["ffn_contract"] == 8 * 384
    assert checked["norm_attn"] == 2 * 8 * 384 and checked["norm_ffn"] == 4 * 8 * 384
    assert checked["query"] > 0 and checked["attention"] > 0


@pytest.mark.slow
def test_minilms_block_on_eight_sentences_every_design(tmp_path):
    """The deliverable's run (`matterhorn block --model minilm --rtl verilator`): eight
    evaluation sentences, every design, 0 mismatches (13 minutes on two cores with the
    builds; docs/rtl_block.md)."""
    from matterhorn.cli import main

    code = main(["block", "--model", "minilm", "--rtl", "verilator", "-j", "2",
                 "--out", str(tmp_path / "b")])
    assert code == 0


def test_a_piece_longer_than_the_memories_runs_in_parts(model, captured, monkeypatch):
    """Memories of a few hundred words: every piece in several runs, a tile's windows split
    with its image loaded again, a sentence's tokens split with its keys and values written
    again; the checks and counters are those of one run."""
    import regression.block_fast as bf

    case = captured["dense"]
    whole = _fast(model, case, "icarus", "dense-clean")
    monkeypatch.setattr(bf, "DEPTHS", {"seq": 512, "out": 256, "cnt": 4})
    parts = _fast(model, case, "icarus", "dense-parts")
    for a, b in zip(whole, parts, strict=True):
        assert b.mismatches == 0, (b.piece, b.first_mismatch)
        assert (a.checked, a.counters) == (b.checked, b.counters), a.piece
    runs = sorted(p.name for p in (ROOT / "runs").glob("dense-parts-*"))
    assert sum(name.startswith("dense-parts-attention-") for name in runs) >= 4, runs
    assert sum(name.startswith("dense-parts-ffn_contract-") for name in runs) >= 4, runs
