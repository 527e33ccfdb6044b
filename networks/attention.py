"""The attention path of a real block in integer mode, as the attention hardware sees it.

:func:`attention_path` takes the constants of one block of the integer MiniLM QNN
(:func:`networks.integer.integer_mode_`) into a :class:`golden_models.attention.AttentionPath`;
:func:`capture_attention` runs sentences through the QNN and records, at that block, the codes
the hardware takes (the query codes before their mask, the key and value codes) and the codes
it must produce (``attn_prob`` and ``attn_out_in`` before their masks), and checks that the
golden path reproduces the QNN's codes on every one (docs/rtl_attention.md, "Real sentences").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from golden_models.attention import AttentionPath
from networks.bert import BertEncoder, BertLayer, Tokenizer

__all__ = ["AttentionSequence", "attention_path", "capture_attention"]

#: The positions :func:`capture_attention` records.
RECORDED = ("query", "key", "value", "attn_prob", "attn_out_in")


def attention_path(layer: BertLayer) -> AttentionPath:
    """The attention constants of ``layer`` (a block of a QNN in integer mode)."""
    blk = layer.int_block
    if blk is None:
        raise ValueError("the block is not in integer mode: call networks.integer.integer_mode_")
    pt = layer.points
    for name in ("query", "attn_prob", "attn_out_in"):
        if pt[name].mask is None:
            raise ValueError(f"the {name} position has no mask: set the masks (networks.ptq)")
    return AttentionPath(
        head_dim=layer.cfg.head_dim,
        query_mask=pt["query"].mask,
        kv_space=pt["key"].space,
        softmax=blk.softmax,
        prob_theta=blk.tables["attn_prob"],
        prob_mask=pt["attn_prob"].mask,
        ctx_theta=blk.tables["attn_out_in"],
        ctx_mask=pt["attn_out_in"].mask,
    )


@dataclass(frozen=True)
class AttentionSequence:
    """One sequence at one block: what the attention hardware takes and must produce.

    ``query``, ``keys``, ``values`` are ``[S, heads * d_k]`` codes (the query before its mask),
    ``valid [S]`` the attention mask (``False`` at padding), ``prob_codes [heads, S, S]`` and
    ``ctx_codes [S, heads * d_k]`` the QNN's ``attn_prob`` and ``attn_out_in`` codes before
    their masks; ``tokens`` the sentence's own tokens (``valid.sum()``).
    """

    query: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    valid: torch.Tensor
    prob_codes: torch.Tensor
    ctx_codes: torch.Tensor

    @property
    def length(self) -> int:
        return int(self.query.shape[0])

    @property
    def tokens(self) -> int:
        return int(self.valid.sum())


def _tokens_first(t: torch.Tensor) -> torch.Tensor:
    """``[heads, S, d_k]`` codes as ``[S, heads * d_k]``."""
    h, s, d = t.shape
    return t.transpose(0, 1).reshape(s, h * d)


def capture_attention(
    qnn: BertEncoder,
    tokenizer: Tokenizer,
    sentences: Sequence[str],
    *,
    block: int = 0,
    batch: int = 1,
) -> list[AttentionSequence]:
    """Run ``sentences`` through ``qnn`` (integer mode, masks set) and capture block ``block``'s
    attention, one :class:`AttentionSequence` per sentence.

    ``batch`` sentences run together, padded to the longest of them: each sequence then has
    that length and its padding as invalid keys, as the QNN computes it.

    Raises
    ------
    ValueError
        ``qnn`` is not in integer mode, ``block`` is out of range, or no sentence is given.
    RuntimeError
        The golden path's codes differ from the QNN's in any sequence.
    """
    if qnn.integer is None:
        raise ValueError("the QNN is not in integer mode: call networks.integer.integer_mode_")
    if not 0 <= block < len(qnn.layers):
        raise ValueError(f"block must be in 0..{len(qnn.layers) - 1}, not {block!r}")
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise ValueError(f"batch must be a positive integer, not {batch!r}")
    sentences = list(sentences)
    if not sentences:
        raise ValueError("sentences must hold at least one sentence")
    layer = qnn.layers[block]
    path = attention_path(layer)
    out: list[AttentionSequence] = []
    for start in range(0, len(sentences), batch):
        out.extend(_capture_batch(qnn, tokenizer, layer, path,
                                  sentences[start:start + batch]))
    return out


def _capture_batch(qnn, tokenizer, layer, path, sentences) -> list[AttentionSequence]:
    seen: dict[str, torch.Tensor] = {}

    def record(point, q, n_events):
        seen[point.name] = q.detach().clone()

    saved = {p: layer.points[p].recorder for p in RECORDED}
    try:
        for p in RECORDED:
            layer.points[p].recorder = record
        ids, mask = tokenizer(sentences)
        with torch.no_grad():
            qnn(ids, mask)
    finally:
        for p, r in saved.items():
            layer.points[p].recorder = r
    out = []
    for b in range(ids.shape[0]):
        seq = AttentionSequence(
            query=_tokens_first(seen["query"][b]),
            keys=_tokens_first(seen["key"][b]),
            values=_tokens_first(seen["value"][b]),
            valid=mask[b].to(torch.bool),
            prob_codes=seen["attn_prob"][b],
            ctx_codes=seen["attn_out_in"][b],
        )
        run = path.run(seq.query, seq.keys, seq.values, seq.valid)
        heads = seq.prob_codes.shape[0]
        for i, row in enumerate(run.windows):
            for h in range(heads):
                if not torch.equal(row[h].prob_codes, seq.prob_codes[h, i]):
                    raise RuntimeError(f"sentence {b}: attn_prob codes of token {i}, head {h} "
                                       "differ from the QNN's")
            if not torch.equal(torch.cat([w.out_codes for w in row]), seq.ctx_codes[i]):
                raise RuntimeError(f"sentence {b}: attn_out_in codes of token {i} differ from "
                                   "the QNN's")
        out.append(seq)
    return out
