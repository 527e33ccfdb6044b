# amaranth: UnusedElaboratable=no
"""The attention path on the mesh (rtl_gen.attention) against the golden attention path
(golden_models.attention), in the Amaranth simulator: every output event and every counter of
every window; the order of a sequence (an early query is held; a planted bug that lets it
through, or keeps the previous sequence's rows, is caught); bad input."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from formal.harness import module_over, mutant_module
from golden_models.attention import AttentionPath
from golden_models.mask import Mask
from rtl_gen.attn_images import (
    attention_reference,
    check_sequence,
    config_beats,
    dense_reference,
    kv_beats,
)
from rtl_gen.attn_params import AttentionConfig
from rtl_gen.simulation.attention import simulate_attention


def _sequence(cfg: AttentionConfig, S: int, seed: int, pad=()):
    g = torch.Generator().manual_seed(seed)
    lo, hi = cfg.query_space.q_min, cfg.query_space.q_max + 1
    width = cfg.heads * cfg.head_dim
    q, k, v = (torch.randint(lo, hi, (S, width), generator=g) for _ in range(3))
    valid = torch.ones(S, dtype=torch.bool)
    for j in pad:
        valid[j] = False
    return q, k, v, valid


def _mismatches(cfg, path, sequences, results, reference=attention_reference) -> list[str]:
    out = []
    for s, ((q, k, v, valid), windows) in enumerate(zip(sequences, results, strict=True)):
        ref = reference(cfg, path, q, k, v, valid)
        assert len(windows) == len(ref)
        for i, (r, w) in enumerate(zip(ref, windows, strict=True)):
            if r["out"] != w.events:
                out.append(f"sequence {s} token {i}: events {w.events} != {r['out']}")
            for name, value in r["counters"].items():
                if w.counters[name] != value:
                    out.append(f"sequence {s} token {i}: {name} {w.counters[name]} != {value}")
    return out


def _events(cfg, path, sequences) -> int:
    return sum(len(r["out"]) for q, k, v, valid in sequences
               for r in attention_reference(cfg, path, q, k, v, valid))


@pytest.mark.parametrize(("cfg", "k", "seed"), [
    (AttentionConfig(heads=2, head_dim=8, seq_max=8, T=16, kv_pack=4), 1, 0),
    (AttentionConfig(heads=3, head_dim=4, seq_max=6, T=16, kv_pack=1), 0, 1),
    (AttentionConfig(heads=1, head_dim=6, seq_max=5, T=8), 2, 2),
    (AttentionConfig(heads=2, head_dim=4, seq_max=4, T=4, kv_pack=2), 1, 3),
])
def test_sequences_bit_exact(cfg, k, seed):
    """Sequences of the longest, a short and a one-token length, padded keys, backpressure on
    both ends, the first query offered while the keys are written: every event and counter."""
    path = AttentionPath.random(cfg.head_dim, T=cfg.T, k=k, seq_len=cfg.seq_max, seed=seed)
    sequences = [_sequence(cfg, cfg.seq_max, seed, pad=(1,)),
                 _sequence(cfg, max(cfg.seq_max // 2, 1), seed + 10),
                 _sequence(cfg, 1, seed + 20)]
    results = simulate_attention(cfg, path, sequences, o_ready=0.7, i_valid=0.8, seed=seed,
                                 early_query=True)
    assert _mismatches(cfg, path, sequences, results) == []
    assert _events(cfg, path, sequences) > 0


def test_offsets_fold_into_run_time_init():
    """Silent centres away from code 0 (``mu != 0`` at the query and at attn_prob): the folded
    init of both tiles is summed from the run-time weights as they are written."""
    cfg = AttentionConfig(heads=2, head_dim=4, seq_max=6, T=16, kv_pack=2)
    base = AttentionPath.random(4, T=16, k=1, seq_len=6, seed=4)
    path = dataclasses.replace(base, query_mask=Mask(cfg.query_space, 5, 1),
                               prob_mask=Mask(cfg.prob_space, 12, 1))
    assert path.query_mask.mu != 0 and path.prob_mask.mu != 0
    sequences = [_sequence(cfg, 6, 5, pad=(0, 3)), _sequence(cfg, 4, 6)]
    results = simulate_attention(cfg, path, sequences, o_ready=0.8, seed=1, kv_order="kind")
    assert _mismatches(cfg, path, sequences, results) == []


def test_no_valid_key():
    """A sequence whose keys are all padding: every probability is 0 (the golden softmax's
    row without a valid key)."""
    cfg = AttentionConfig(heads=1, head_dim=4, seq_max=4, T=16)
    path = AttentionPath.random(4, T=16, k=0, seq_len=4, seed=7)
    sequences = [_sequence(cfg, 3, 8, pad=(0, 1, 2))]
    results = simulate_attention(cfg, path, sequences, seed=2)
    assert _mismatches(cfg, path, sequences, results) == []


@pytest.mark.parametrize(("cfg", "seed"), [
    (AttentionConfig(heads=2, head_dim=4, seq_max=6, T=16, kv_pack=2), 12),
    (AttentionConfig(heads=1, head_dim=6, seq_max=5, T=8), 13),
])
def test_dense_counterpart_bit_exact(cfg, seed):
    """The dense design on the same memories and softmax: every output code of every head
    (address order) and every counter equal ``AttentionPath.run_dense``; padding,
    backpressure, an early query held."""
    path = AttentionPath.random(cfg.head_dim, T=cfg.T, k=1, seq_len=cfg.seq_max, seed=seed)
    sequences = [_sequence(cfg, cfg.seq_max, seed, pad=(2,)), _sequence(cfg, 2, seed + 1)]
    results = simulate_attention(cfg, path, sequences, o_ready=0.7, i_valid=0.8, seed=seed,
                                 early_query=True, dense=True)
    assert _mismatches(cfg, path, sequences, results, dense_reference) == []
    assert all(len(w.events) == cfg.heads * cfg.head_dim for ws in results for w in ws)


def test_planted_bug_dense_code_is_caught():
    """A dense probability x value tile that sends each neuron's code one level off: the
    comparison reports it."""
    cfg = AttentionConfig(heads=1, head_dim=4, seq_max=4, T=16)
    path = AttentionPath.random(4, T=16, k=1, seq_len=4, seed=14)
    sequences = [_sequence(cfg, 4, 15)]
    bad = _mutant_attention("m.d.sync += q.eq(c - step.t)", "m.d.sync += q.eq(c - step.t + 1)")
    results = simulate_attention(cfg, path, sequences, dense=True,
                                 component=bad.AttentionSystem(cfg, dense=True))
    assert _mismatches(cfg, path, sequences, results, dense_reference)


def _mutant_attention(old: str, new: str):
    return module_over("rtl_gen.attention", mutant_module("rtl_gen.kv_tiles", old, new))


def test_planted_bug_early_query_is_caught():
    """A design whose memories say ``complete`` before the keys are written takes the early
    query: the driver sees it taken before the sequence is complete."""
    cfg = AttentionConfig(heads=1, head_dim=4, seq_max=4, T=16)
    path = AttentionPath.random(4, T=16, k=1, seq_len=4, seed=9)
    bad = _mutant_attention("            & (self.length != 0))",
                            "            | (self.length != 0))")
    with pytest.raises(RuntimeError, match="taken before the sequence's keys and values"):
        simulate_attention(cfg, path, [_sequence(cfg, 4, 1)], early_query=True,
                           component=bad.AttentionSystem(cfg))


def test_planted_bug_stale_rows_are_caught():
    """A design whose written bits survive into the next sequence runs the second sequence on
    the first one's key and value rows: the comparison reports it."""
    cfg = AttentionConfig(heads=1, head_dim=4, seq_max=4, T=16)
    path = AttentionPath.random(4, T=16, k=0, seq_len=4, seed=11)
    sequences = [_sequence(cfg, 4, 1), _sequence(cfg, 3, 2)]
    bad = _mutant_attention("m.d.sync += [written.eq(0), ", "m.d.sync += [")
    results = simulate_attention(cfg, path, sequences, seed=3, component=bad.AttentionSystem(cfg))
    found = _mismatches(cfg, path, sequences, results)
    assert found and all(m.startswith("sequence 1") for m in found)


def test_bad_input_one_line():
    cfg = AttentionConfig(heads=2, head_dim=4, seq_max=4, T=16)
    path = AttentionPath.random(4, T=16, k=1, seq_len=4, seed=0)
    q, k, v, valid = _sequence(cfg, 4, 0)
    long = _sequence(cfg, 5, 0)
    with pytest.raises(ValueError, match=r"^sequence length 5 exceeds the design's seq_max=4"):
        check_sequence(cfg, path, *long)
    with pytest.raises(ValueError, match=r"^query has 4 codes per token, the design 2 heads x "
                                         r"4 = 8$"):
        check_sequence(cfg, path, q[:, :4], k[:, :4], v[:, :4], valid)
    wide = AttentionPath.random(8, T=16, k=1, seq_len=4, seed=0)
    with pytest.raises(ValueError, match=r"^head dimension 8 does not match the design's "
                                         r"head_dim=4$"):
        config_beats(cfg, wide)
    bad = k.clone()
    bad[2, 3] = 9
    with pytest.raises(ValueError, match=r"^keys holds 9, outside the levels -8..7"):
        check_sequence(cfg, path, q, bad, v, valid)
    low = v.clone()
    low[0, 0] = -9
    with pytest.raises(ValueError, match=r"^values holds -9, outside the levels -8..7"):
        kv_beats(cfg, k, low)
