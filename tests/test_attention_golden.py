"""The golden attention path (golden_models.attention) and its capture from MiniLM
(networks.attention): equal to the integer QNN's own codes, Proposition 2 through both products,
the dense counterpart, the counters, bad input."""

from __future__ import annotations

import copy
import dataclasses

import pytest
import torch

from golden_models.attention import AttentionPath
from golden_models.mask import Mask


def _codes(path, S, heads, seed):
    g = torch.Generator().manual_seed(seed)
    sp, kv = path.query_mask.space, path.kv_space
    w = heads * path.head_dim
    return (torch.randint(sp.q_min, sp.q_max + 1, (S, w), generator=g),
            torch.randint(kv.q_min, kv.q_max + 1, (S, w), generator=g),
            torch.randint(kv.q_min, kv.q_max + 1, (S, w), generator=g))


@pytest.mark.parametrize("seed", range(4))
def test_events_equal_the_projected_products(seed):
    """The tiles' event sums equal the products of the dead-zone projected codes (Prop. 2):
    scores = qbar . k, context = pbar . v, from the events and the folded offsets."""
    path = AttentionPath.random(8, T=16, k=1 + seed % 2, seq_len=6, seed=seed)
    path = dataclasses.replace(path, query_mask=Mask(path.query_mask.space, 5 + seed, 1))
    q, k, v = _codes(path, 6, 1, seed)
    valid = torch.tensor([True, True, False, True, True, True])
    qm, pm = path.query_mask, path.prob_mask
    for i, w in enumerate(path.run_head(q, k, v, valid)):
        from golden_models.mttfs import encode_events

        idx, tm = encode_events(q[i], qm)
        folded = qm.mu * k.sum(1) + (k[:, idx] * qm.centred(tm)[None, :]).sum(1)
        assert torch.equal(w.scores, folded)
        assert torch.equal(w.scores, k @ qm.project(q[i]))
        ctx = pm.mu * v.sum(0) + (v[w.prob_index] * pm.centred(w.prob_time)[:, None]).sum(0)
        assert torch.equal(w.ctx, ctx)
        assert w.score.accumulate_ops == idx.numel() * 6 and w.score.key_writes == 6 * 8
        assert w.softmax.exp_ops == 5 and w.context.value_writes == 6 * 8
        assert w.softmax.events_out + w.softmax.events_suppressed == 6
        assert int(w.u[2]) == 0  # a padded key gets no probability


def test_dense_counterpart_is_the_path_at_k0():
    """Without masks the dense design computes the spiking path's codes at k = 0."""
    path = AttentionPath.random(4, T=16, k=0, seq_len=5, seed=3)
    q, k, v = _codes(path, 5, 2, 1)
    valid = torch.ones(5, dtype=torch.bool)
    spiking = path.run(q, k, v, valid)
    dense = path.run_dense(q, k, v, valid)
    for i in range(5):
        for h in range(2):
            assert torch.equal(dense[i][h].out_codes, spiking.windows[i][h].out_codes)
            assert torch.equal(dense[i][h].prob_codes, spiking.windows[i][h].prob_codes)
            assert dense[i][h].score.mac_ops == 4 * 5 and dense[i][h].context.codes_out == 4


def test_bad_input():
    path = AttentionPath.random(4, T=16, k=1, seq_len=4, seed=0)
    q, k, v = _codes(path, 4, 1, 0)
    valid = torch.ones(4, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"^query has 6 codes per token, not a multiple of "
                                         r"head_dim=4$"):
        path.check_sequence(q[:, :3].repeat(1, 2), k[:, :3].repeat(1, 2),
                            v[:, :3].repeat(1, 2), valid)
    bad = v.clone()
    bad[0, 0] = 8
    with pytest.raises(ValueError, match=r"^values holds 8, outside the levels -8..7"):
        path.run(q, k, bad, valid)
    with pytest.raises(TypeError, match=r"^valid must be a bool tensor"):
        path.run(q, k, v, torch.ones(4))
    with pytest.raises(ValueError, match=r"cannot hold the raw scores of head_dim=4"):
        dataclasses.replace(path, softmax=dataclasses.replace(path.softmax, score_bits=8))


def test_minilm_block0_captured_and_reproduced(minilm, pydoc_corpus, minilm_qnn, one_thread):
    """The golden path of block 0 reproduces the integer QNN's attn_prob and attn_out_in codes
    on real sentences, alone and padded together (capture_attention checks every code)."""
    from networks.attention import attention_path, capture_attention
    from networks.integer import integer_mode_
    from networks.ptq import set_masks_

    _, tok = minilm
    qnn = integer_mode_(copy.deepcopy(minilm_qnn))
    set_masks_(qnn, 1)
    sentences = pydoc_corpus.calibration[:3]
    alone = capture_attention(qnn, tok, sentences)
    padded = capture_attention(qnn, tok, sentences, batch=3)
    assert [s.length for s in alone] == [s.tokens for s in padded]
    assert len({s.length for s in padded}) == 1 and min(s.tokens for s in padded) < padded[0].length
    path = attention_path(qnn.layers[0])
    assert path.head_dim == 32 and alone[0].query.shape[1] == 12 * 32


def test_capture_catches_a_path_unlike_the_qnn(minilm, pydoc_corpus, minilm_qnn, monkeypatch):
    """A golden path whose attn_out_in table differs from the QNN's is refused by the capture."""
    import networks.attention as na
    from networks.integer import integer_mode_
    from networks.ptq import set_masks_

    _, tok = minilm
    qnn = integer_mode_(copy.deepcopy(minilm_qnn))
    set_masks_(qnn, 1)
    shipped = na.attention_path
    monkeypatch.setattr(na, "attention_path", lambda layer: dataclasses.replace(
        shipped(layer), ctx_theta=shipped(layer).ctx_theta - 40))
    with pytest.raises(RuntimeError, match="attn_out_in codes of token 0 differ from the QNN's"):
        na.capture_attention(qnn, tok, pydoc_corpus.calibration[:1])
