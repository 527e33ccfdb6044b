"""One encoder block of the integer QNN, piece by piece: what each piece of the block's
hardware takes and must produce (docs/rtl_block.md).

:func:`block_layers` gives the block's six linear layers as the tiles hold them
(:class:`golden_models.IntegerLayer`: weights, folded init, threshold table, masks);
:func:`capture_block` runs sentences through the QNN in integer mode and records, per
sentence, the codes of every position before its mask (what an encoder or a tile's fire phase
produces; the mask then decides the events), the key and value codes, and the integer tensors
between them (:data:`networks.integer.TAPPED`: scores, probabilities, the raw sums, the
residual sums and streams), plus the next block's stream-fed codes that the block's last
LayerNorm walks. Every figure is the QNN's own (its recorders and its ``tap``); nothing is
recomputed here.

:func:`random_block_model` is the small random model the tests and the flow run: a
BERT-family block of a few dozen channels, converted like a real one.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from golden_models import IntegerLayer
from golden_models.block_pieces import (
    ADD_NORM,
    LINEAR,
    NEXT_BLOCK,
    PIECES,
    Design,
    counted_positions,
)
from golden_models.mask import ttfs_mask
from golden_models.mttfs import folded_init
from networks.bert import BertConfig, BertEncoder, BertLayer
from networks.integer import TAPPED

__all__ = [
    "RECORDED",
    "BlockCase",
    "BlockSequence",
    "HashTokenizer",
    "block_case",
    "block_layers",
    "capture_block",
    "design_masks",
    "random_block_model",
    "random_float_model",
]
#: The positions :func:`capture_block` records (their codes before the mask).
RECORDED = ("q_proj_in", "k_proj_in", "v_proj_in", "query", "key", "value", "attn_prob",
            "attn_out_in", "ffn_expand_in", "ffn_contract_in")


def _check_integer(layer: BertLayer) -> None:
    if layer.int_block is None:
        raise ValueError("the block is not in integer mode: call networks.integer.integer_mode_")
    for name in RECORDED:
        p = layer.points[name]
        if p.spike and p.mask is None:
            raise ValueError(f"the {name} position has no mask: set the masks (networks.ptq)")


def block_layers(layer: BertLayer) -> dict[str, IntegerLayer]:
    """The linear pieces' layers of ``layer`` (integer mode, masks set) as tiles hold them,
    keyed by piece (``golden_models.block_pieces``, the pieces of kind ``linear``).

    A code-producing layer carries its position's threshold table (GELU folded into the
    FFN-expand layer's, ``networks.integer``); a raw-sum layer (attention output, FFN
    contract) never fires, so its table is all zeros and its output mask is its input's: the
    tile in raw-sum mode sends ``V = B + sum W * d = sum W * qbar`` (Proposition 2), the
    integer sum the residual add takes.
    """
    _check_integer(layer)
    out = {}
    for piece in PIECES:
        if piece.kind != LINEAR:
            continue
        name, [p_in], [p_out] = piece.name, piece.inputs, piece.outputs
        lin, mask_in = getattr(layer, name), layer.points[p_in].mask
        w = lin.w_int.T.contiguous()  # [n_in, n_out]
        if piece.raw_sums:
            theta = torch.zeros(w.shape[1], mask_in.T - 1, dtype=torch.int64)
            mask_out = mask_in
        else:
            theta = layer.int_block.tables[p_out]  # the table of the codes it makes
            point = layer.points[p_out]
            # key and value are written as codes, not events: their tiles' output mask is
            # standard TTFS's, which drops no code's information (k = 0)
            mask_out = point.mask if point.mask is not None else ttfs_mask(point.space)
        out[name] = IntegerLayer(weights=w, weight_bits=lin.weight_bits,
                                 init=folded_init(w, mask_in.mu), theta=theta,
                                 in_mask=mask_in, out_mask=mask_out)
    return out


@dataclass(frozen=True)
class BlockSequence:
    """One sentence through one block, as the block's hardware sees it.

    ``codes[p]``: the codes of position ``p`` (:data:`RECORDED`) before its mask, tokens
    first: ``[S, width]``, except ``attn_prob`` ``[heads, S, S]``. ``tensors[name]``: the
    integer tensors of :data:`networks.integer.TAPPED` of this sentence (batch dimension
    dropped). ``next_codes``: the codes of the next block's stream-fed positions (the block's
    last LayerNorm walks them; empty for the last block). ``valid [S]``: the attention mask.
    """

    valid: torch.Tensor
    codes: dict[str, torch.Tensor]
    tensors: dict[str, torch.Tensor]
    next_codes: dict[str, torch.Tensor]

    @property
    def length(self) -> int:
        return int(self.valid.numel())

    def value(self, name: str, *, next_block: bool = False) -> torch.Tensor:
        """The codes of position ``name`` (of the next block's with ``next_block``), or the
        integer tensor ``name`` (:data:`networks.integer.TAPPED`)."""
        if next_block:
            return self.next_codes[name]
        return self.codes[name] if name in self.codes else self.tensors[name]


def _tokens_first(name: str, q: torch.Tensor) -> torch.Tensor:
    """One sentence's codes of position ``name`` as :class:`BlockSequence` keeps them."""
    if name in ("query", "key", "value"):  # [heads, S, d_k] -> [S, heads * d_k]
        h, s, d = q.shape
        return q.transpose(0, 1).reshape(s, h * d)
    return q


def capture_block(qnn: BertEncoder, tokenizer, sentences: Sequence[str], *,
                  block: int = 0) -> list[BlockSequence]:
    """Run each sentence alone through ``qnn`` (integer mode, masks set) and record block
    ``block`` (:class:`BlockSequence`).

    Raises
    ------
    ValueError
        ``qnn`` is not in integer mode, ``block`` is out of range, or no sentence is given.
    """
    if qnn.integer is None:
        raise ValueError("the QNN is not in integer mode: call networks.integer.integer_mode_")
    if isinstance(block, bool) or not isinstance(block, int) or not (
            0 <= block < len(qnn.layers)):
        raise ValueError(f"block must be in 0..{len(qnn.layers) - 1}, not {block!r}")
    sentences = list(sentences)
    if not sentences:
        raise ValueError("sentences must hold at least one sentence")
    layer = qnn.layers[block]
    _check_integer(layer)
    nxt = qnn.layers[block + 1] if block + 1 < len(qnn.layers) else None
    points = [layer.points[p] for p in RECORDED]
    feeds = [nxt.points[p] for p in ("q_proj_in", "k_proj_in", "v_proj_in")] if nxt else []
    return [_capture_one(qnn, tokenizer, s, layer, points, feeds) for s in sentences]


def _capture_one(qnn, tokenizer, sentence, layer, points, feeds) -> BlockSequence:
    codes, nexts, tensors = {}, {}, {}

    def record(point, q, n_events):
        (nexts if point in feeds else codes)[point.name] = q[0].detach().clone()

    def tap(name, t):
        tensors[name] = t[0].detach().clone()

    try:
        for p in (*points, *feeds):
            p.recorder = record
        layer.tap = tap
        ids, mask = tokenizer([sentence])
        with torch.no_grad():
            qnn(ids, mask)
    finally:
        for p in (*points, *feeds):
            p.recorder = None
        layer.tap = None
    missing = [n for n in TAPPED if n not in tensors]
    if missing:
        raise RuntimeError(f"the block ran without its integer mode ({missing} not seen)")
    return BlockSequence(
        valid=mask[0].to(torch.bool),
        codes={n: _tokens_first(n, q) for n, q in codes.items()},
        tensors=tensors,
        next_codes=nexts,
    )


@contextlib.contextmanager
def design_masks(qnn: BertEncoder, design: Design):
    """Every spike-encoded position of ``qnn`` with ``design``'s mask
    (:meth:`golden_models.block_pieces.Design.mask` of its calibrated one) while the block is
    read, the calibrated masks back after: the QNN's forward reads its positions' masks."""
    points = qnn.spike_points()
    saved = [p.mask for p in points]
    if any(m is None for m in saved):
        raise ValueError("masks are not calibrated; convert the model with networks.ptq")
    try:
        for p, m in zip(points, saved, strict=True):
            p.mask = design.mask(m)
        yield
    finally:
        for p, m in zip(points, saved, strict=True):
            p.mask = m


@dataclass(frozen=True)
class BlockCase:
    """One design of one block on captured sentences: what every piece takes and must make
    (``golden_models.block_pieces``), read from the QNN once, with the design's masks
    (:func:`block_case`).

    ``sequences``: the captured sentences (:class:`BlockSequence`); ``layers``: each linear
    piece's layer as its tiles hold it (:func:`block_layers`); ``path``: the attention
    constants (:func:`networks.attention.attention_path`); ``units``: each add+LayerNorm
    piece's golden residual add, LayerNorm and the walk tables of the codes it makes (the
    next block's, or none for the last block); ``masks``: each position's mask as the design
    sets it; ``T``: the block's time steps."""

    design: Design
    block: int
    sequences: tuple[BlockSequence, ...]
    layers: dict[str, IntegerLayer]
    path: object  # golden_models.attention.AttentionPath
    units: dict[str, tuple]
    masks: dict[str, object]
    T: int

    @property
    def tokens(self) -> int:
        return sum(s.length for s in self.sequences)

    def cat(self, name: str, *, next_block: bool = False) -> torch.Tensor:
        """:meth:`BlockSequence.value` of every sentence, tokens one after the other."""
        return torch.cat([s.value(name, next_block=next_block) for s in self.sequences])

    def values(self) -> dict[str, int]:
        """Values held at each counted spike-encoded position over the sentences (the spike
        rate's denominator)."""
        out: dict[str, int] = {}
        for s in self.sequences:
            for p in counted_positions():
                out[p] = out.get(p, 0) + int(s.codes[p].numel())
        return out

    def head(self, n: int) -> BlockCase:
        """The same case on its first ``n`` sentences."""
        return dataclasses.replace(self, sequences=self.sequences[:n])

    def fed(self, made: dict[str, torch.Tensor]) -> tuple[BlockCase, int]:
        """The same case with its inputs (``golden_models.block_pieces.BLOCK_INPUTS``) taken
        from ``made``: what the block before made as the next block's inputs (its last piece's
        outputs by name, :data:`~golden_models.block_pieces.NEXT_BLOCK`: the three stream-fed
        positions' codes and the stream ``r_out``), every sentence's tokens one after the
        other. Returns the case and the values of ``made`` that differ from the inputs the
        QNN gave this block (0 when the block before made exactly what the QNN did)."""
        differ = 0
        seqs, at = [], 0
        for s in self.sequences:
            codes, tensors = dict(s.codes), dict(s.tensors)
            for out, name in NEXT_BLOCK.items():
                got = made[out][at:at + s.length].to(torch.int64)
                where = codes if name in codes else tensors
                if got.shape != where[name].shape:
                    raise ValueError(f"{out}: {tuple(got.shape)} values made, the block takes "
                                     f"{tuple(where[name].shape)}")
                differ += int((got != where[name]).sum())
                where[name] = got
            seqs.append(dataclasses.replace(s, codes=codes, tensors=tensors))
            at += s.length
        tokens = sorted({int(v.shape[0]) for v in made.values()})
        if tokens != [at]:
            raise ValueError(f"the block before made values of {tokens} tokens, this block's "
                             f"sentences hold {at}")
        return dataclasses.replace(self, sequences=tuple(seqs)), differ


def block_case(qnn: BertEncoder, tokenizer, sentences: Sequence[str], design, *,
               block: int = 0) -> BlockCase:
    """``sentences`` through block ``block`` of ``qnn`` (integer mode, masks calibrated) as
    ``design`` (a :class:`golden_models.block_pieces.Design` or its name): captured
    (:func:`capture_block`) with the design's masks, and the block's layers, attention
    constants and units read with them, once (:class:`BlockCase`)."""
    from networks.attention import attention_path

    design = design if isinstance(design, Design) else Design.parse(design)
    with design_masks(qnn, design):
        sequences = tuple(capture_block(qnn, tokenizer, sentences, block=block))
        layer = qnn.layers[block]
        blk = layer.int_block
        nxt = qnn.layers[block + 1].int_block if block + 1 < len(qnn.layers) else None
        units = {}
        for p in PIECES:
            if p.kind == ADD_NORM:
                walks = blk if not p.next_block else nxt
                codes = p.outputs[:-1] if walks is not None else ()
                units[p.name] = (*(getattr(blk, u) for u in p.units),
                                 [walks.encoders[c] for c in codes])
        return BlockCase(design, block, sequences, block_layers(layer), attention_path(layer),
                         units, {n: layer.points[n].mask for n in counted_positions()},
                         layer.points["attn_prob"].space.T)


# -- the small random model ----------------------------------------------------------------------


class HashTokenizer:
    """Words to ids by a fixed hash (no vocabulary file): ``[CLS] word... [SEP]``, truncated
    to ``max_length`` tokens, no padding (one sentence at a time, as ``capture_block`` runs)."""

    def __init__(self, vocab_size: int, max_length: int):
        if vocab_size < 8:
            raise ValueError(f"vocab_size must be at least 8, not {vocab_size!r}")
        self.vocab_size, self.max_length = vocab_size, max_length

    def _ids(self, sentence: str) -> list[int]:
        words = [sum((i + 1) * ord(c) for i, c in enumerate(w)) for w in sentence.split()]
        body = [4 + h % (self.vocab_size - 4) for h in words][: self.max_length - 2]
        return [2, *body, 3]

    def __call__(self, sentences: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        rows = [self._ids(s) for s in sentences]
        width = max(len(r) for r in rows)
        ids = torch.zeros(len(rows), width, dtype=torch.int64)
        mask = torch.zeros(len(rows), width, dtype=torch.int64)
        for i, r in enumerate(rows):
            ids[i, : len(r)] = torch.tensor(r)
            mask[i, : len(r)] = 1
        return ids, mask


#: The small random model's dimensions: hidden, heads, FFN, longest sequence.
RANDOM_DIMS = {"hidden": 32, "heads": 2, "ffn": 64, "seq": 16}


def random_float_model(*, seed: int = 0, hidden: int = RANDOM_DIMS["hidden"],
                       heads: int = RANDOM_DIMS["heads"], ffn: int = RANDOM_DIMS["ffn"],
                       seq: int = RANDOM_DIMS["seq"], layers: int = 1,
                       ) -> tuple[BertEncoder, HashTokenizer]:
    """A random float BERT-family model of ``layers`` blocks (the float teacher of
    :func:`random_block_model`) and its tokenizer, which truncates to ``seq`` tokens."""
    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=512, hidden_size=hidden, num_hidden_layers=layers,
                     num_attention_heads=heads, intermediate_size=ffn,
                     max_position_embeddings=seq)
    model = BertEncoder(cfg)
    for lin in model.linears():
        torch.nn.init.normal_(lin.weight, std=hidden ** -0.5)
        torch.nn.init.normal_(lin.bias, std=0.1)
    model.requires_grad_(False)
    return model, HashTokenizer(cfg.vocab_size, seq)


def random_block_model(*, seed: int = 0, calibration: Sequence[str] | None = None,
                       weight_bits: int = 4, hidden: int = RANDOM_DIMS["hidden"],
                       heads: int = RANDOM_DIMS["heads"], ffn: int = RANDOM_DIMS["ffn"],
                       seq: int = RANDOM_DIMS["seq"], layers: int = 1,
                       ) -> tuple[BertEncoder, HashTokenizer]:
    """A random BERT-family model of ``layers`` blocks (one by default), converted
    post-training (:func:`networks.ptq.convert`, W``weight_bits``A4) on ``calibration``
    sentences (default: the first 16 of the ``pydoc-topics`` corpus's calibration split) and
    put in integer mode, masks at ``k = 0``; its tokenizer truncates to ``seq`` tokens."""
    from networks.corpus import load_corpus
    from networks.integer import integer_mode_
    from networks.ptq import PTQConfig, convert

    model, tok = random_float_model(seed=seed, hidden=hidden, heads=heads, ffn=ffn, seq=seq,
                                    layers=layers)
    texts = list(calibration) if calibration is not None else (
        load_corpus("pydoc-topics").calibration[:16])
    qnn = convert(model, tok, texts, PTQConfig(weight_bits=weight_bits))
    integer_mode_(qnn)
    return qnn, tok
