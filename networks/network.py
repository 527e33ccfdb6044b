"""A whole network of the integer QNN as its hardware runs it: a list of blocks, each one
design's :class:`networks.block.BlockCase`, and the sentence embedding the model defines
(docs/network.md).

:func:`network_case` reads every block of one design (:func:`networks.block.block_case`, the
design's masks set while the QNN is read) and the QNN's own sentence embeddings of the same
sentences (each alone, as the hardware takes them); :func:`stream_embedding` is the embedding
of a last stream as the hardware made it (the model's mean pooling,
:func:`networks.bert.mean_pool`, of :func:`networks.integer.last_hidden`), which must equal
the QNN's exactly. :func:`design_quality` measures a design's network on the evaluation split
(cosine to the float teacher, retrieval agreement), as ``matterhorn finetune`` does.

Which network each design runs (:func:`trained_k`): the network fine-tuned at the design's
radius, ``k = 0``'s for the lossless designs (dense INT4, TTFS and M-TTFS ``k = 0`` send the
same information: Proposition 2).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from golden_models.block_pieces import Design
from networks.bert import BertEncoder, mean_pool
from networks.block import BlockCase, block_case, design_masks
from networks.integer import last_hidden

__all__ = ["NetworkCase", "check_blocks", "design_quality", "network_case", "stream_embedding",
           "trained_k"]


def trained_k(design) -> int:
    """The radius of the fine-tuned network ``design`` (a :class:`Design` or its name) runs:
    its own for M-TTFS ``k >= 1``, 0 for dense INT4, TTFS and M-TTFS ``k = 0`` (lossless
    against the same QNN)."""
    design = design if isinstance(design, Design) else Design.parse(design)
    return design.k if design.encoding == "mttfs" else 0


def check_blocks(qnn: BertEncoder) -> None:
    """Raise ``ValueError`` (one line naming the block) unless every block of ``qnn`` has the
    sizes of the hardware generated for it: the model configuration's hidden width, heads and
    FFN width (one block's hardware serves them all)."""
    cfg = qnn.cfg
    h, f = cfg.hidden_size, cfg.intermediate_size
    want = {"query": (h, h), "key": (h, h), "value": (h, h), "attn_out": (h, h),
            "ffn_expand": (f, h), "ffn_contract": (h, f)}
    for b, layer in enumerate(qnn.layers):
        if layer.cfg.num_attention_heads != cfg.num_attention_heads:
            raise ValueError(f"block {b} has {layer.cfg.num_attention_heads} heads; the "
                             f"generated hardware's attention path has {cfg.num_attention_heads}")
        for name, shape in want.items():
            w = getattr(layer, name).w_int
            got = tuple(w.shape) if w is not None else None
            if got != shape:
                raise ValueError(f"block {b}'s {name} layer is {got} (out x in); the generated "
                                 f"hardware takes {shape} (hidden {h}, FFN {f}, "
                                 f"{cfg.num_attention_heads} heads)")


@dataclass(frozen=True)
class NetworkCase:
    """One design of a whole network on captured sentences: each block's case, in order
    (:class:`networks.block.BlockCase`), the token ids of each sentence and the QNN's sentence
    embeddings ``[sentences, hidden]`` with the design's masks, each sentence alone."""

    design: Design
    blocks: tuple[BlockCase, ...]
    tokens: tuple[tuple[int, ...], ...]
    embeddings: torch.Tensor

    @property
    def sentences(self) -> int:
        return len(self.tokens)

    def head(self, n: int) -> NetworkCase:
        """The same case on its first ``n`` sentences."""
        return NetworkCase(self.design, tuple(b.head(n) for b in self.blocks),
                           self.tokens[:n], self.embeddings[:n])


def network_case(qnn: BertEncoder, tokenizer, sentences: Sequence[str], design) -> NetworkCase:
    """``sentences`` through every block of ``qnn`` (integer mode, masks calibrated) as
    ``design`` (a :class:`Design` or its name): each block's case
    (:func:`networks.block.block_case`) and the QNN's embedding of each sentence alone."""
    design = design if isinstance(design, Design) else Design.parse(design)
    check_blocks(qnn)
    sentences = list(sentences)
    blocks = tuple(block_case(qnn, tokenizer, sentences, design, block=b)
                   for b in range(len(qnn.layers)))
    tokens, embs = [], []
    with design_masks(qnn, design), torch.no_grad():
        for s in sentences:
            ids, mask = tokenizer([s])
            tokens.append(tuple(int(t) for t in ids[0]))
            embs.append(qnn.embed(ids, mask))
    return NetworkCase(design, blocks, tuple(tokens), torch.cat(embs))


def stream_embedding(qnn: BertEncoder, r_out: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """The sentence embedding ``[hidden]`` of one sentence's last stream ``r_out [S, hidden]``
    (the integers the last block's LayerNorm made, as the hardware made them) and its attention
    mask ``valid [S]``: back to float on the host and mean-pooled, as the QNN's own
    :meth:`networks.bert.BertEncoder.embed` does (the same operations, so the same bits)."""
    hidden = last_hidden(qnn, r_out.to(torch.int64)[None])
    return mean_pool(hidden, valid.to(torch.int64)[None])[0]


def design_quality(qnn: BertEncoder, tokenizer, sentences: Sequence[str], design,
                   emb_float: torch.Tensor) -> tuple[dict, torch.Tensor]:
    """The quality of ``design``'s network on ``sentences`` (the evaluation split): the
    cosine of each sentence's embedding to the float teacher's ``emb_float`` (mean and
    minimum) and the top-1 retrieval agreement with it
    (:func:`networks.stats.retrieval_agreement`), with the design's masks set. The sentences
    run in batches of one length each (:func:`networks.finetune_report.length_groups`): every
    embedding is the one of the sentence alone. Returns the figures and the embeddings."""
    from networks.finetune_report import length_groups
    from networks.stats import retrieval_agreement

    design = design if isinstance(design, Design) else Design.parse(design)
    tokens = [tokenizer([s]) for s in sentences]
    embs: list[torch.Tensor | None] = [None] * len(tokens)
    with design_masks(qnn, design), torch.no_grad():
        for group in length_groups([int(ids.shape[1]) for ids, _ in tokens]):
            ids = torch.cat([tokens[i][0] for i in group])
            mask = torch.cat([tokens[i][1] for i in group])
            for i, e in zip(group, qnn.embed(ids, mask), strict=True):
                embs[i] = e
    emb = torch.stack(embs)
    cos = (emb * emb_float).sum(1) / (emb.norm(dim=1) * emb_float.norm(dim=1))
    quality = {"cos_float": {"mean": round(float(cos.mean()), 6),
                             "min": round(float(cos.min()), 6)},
               "retrieval_agreement": (round(retrieval_agreement(emb, emb_float), 6)
                                       if len(tokens) > 1 else None),
               "sentences": len(tokens)}
    return quality, emb
