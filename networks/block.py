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

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from golden_models import IntegerLayer
from golden_models.mask import ttfs_mask
from golden_models.mttfs import folded_init
from networks.bert import BertConfig, BertEncoder, BertLayer
from networks.integer import TAPPED

__all__ = [
    "LINEARS",
    "RECORDED",
    "BlockSequence",
    "HashTokenizer",
    "block_layers",
    "capture_block",
    "random_block_model",
]

#: The block's linear layers: the position each consumes and the position of its codes
#: (``None``: its raw sums go to a residual add).
LINEARS = {
    "query": ("q_proj_in", "query"),
    "key": ("k_proj_in", "key"),
    "value": ("v_proj_in", "value"),
    "attn_out": ("attn_out_in", None),
    "ffn_expand": ("ffn_expand_in", "ffn_contract_in"),
    "ffn_contract": ("ffn_contract_in", None),
}
#: The positions :func:`capture_block` records (their codes before the mask).
RECORDED = ("q_proj_in", "k_proj_in", "v_proj_in", "query", "key", "value", "attn_prob",
            "attn_out_in", "ffn_expand_in", "ffn_contract_in")
#: The table of each code-producing linear layer in ``IntegerBlock.tables``.
_TABLE = {"query": "query", "key": "key", "value": "value", "ffn_expand": "ffn_contract_in"}


def _check_integer(layer: BertLayer) -> None:
    if layer.int_block is None:
        raise ValueError("the block is not in integer mode: call networks.integer.integer_mode_")
    for name in RECORDED:
        p = layer.points[name]
        if p.spike and p.mask is None:
            raise ValueError(f"the {name} position has no mask: set the masks (networks.ptq)")


def block_layers(layer: BertLayer) -> dict[str, IntegerLayer]:
    """The six linear layers of ``layer`` (integer mode, masks set) as tiles hold them, keyed
    as :data:`LINEARS`.

    A code-producing layer carries its position's threshold table (GELU folded into the
    FFN-expand layer's, ``networks.integer``); a raw-sum layer (attention output, FFN
    contract) never fires, so its table is all zeros and its output mask is its input's: the
    tile in raw-sum mode sends ``V = B + sum W * d = sum W * qbar`` (Proposition 2), the
    integer sum the residual add takes.
    """
    _check_integer(layer)
    out = {}
    for name, (p_in, p_out) in LINEARS.items():
        lin, mask_in = getattr(layer, name), layer.points[p_in].mask
        w = lin.w_int.T.contiguous()  # [n_in, n_out]
        if p_out is None:
            theta = torch.zeros(w.shape[1], mask_in.T - 1, dtype=torch.int64)
            mask_out = mask_in
        else:
            theta = layer.int_block.tables[_TABLE[name]]
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


def random_block_model(*, seed: int = 0, calibration: Sequence[str] | None = None,
                       weight_bits: int = 4, hidden: int = RANDOM_DIMS["hidden"],
                       heads: int = RANDOM_DIMS["heads"], ffn: int = RANDOM_DIMS["ffn"],
                       seq: int = RANDOM_DIMS["seq"]) -> tuple[BertEncoder, HashTokenizer]:
    """A one-block random BERT-family model, converted post-training
    (:func:`networks.ptq.convert`, W``weight_bits``A4) on ``calibration`` sentences (default:
    the first 16 of the ``pydoc-topics`` corpus's calibration split) and put in integer mode,
    masks at ``k = 0``; its tokenizer truncates to ``seq`` tokens."""
    from networks.corpus import load_corpus
    from networks.integer import integer_mode_
    from networks.ptq import PTQConfig, convert

    torch.manual_seed(seed)
    cfg = BertConfig(vocab_size=512, hidden_size=hidden, num_hidden_layers=1,
                     num_attention_heads=heads, intermediate_size=ffn,
                     max_position_embeddings=seq)
    model = BertEncoder(cfg)
    for lin in model.linears():
        torch.nn.init.normal_(lin.weight, std=hidden ** -0.5)
        torch.nn.init.normal_(lin.bias, std=0.1)
    model.requires_grad_(False)
    tok = HashTokenizer(cfg.vocab_size, seq)
    texts = list(calibration) if calibration is not None else (
        load_corpus("pydoc-topics").calibration[:16])
    qnn = convert(model, tok, texts, PTQConfig(weight_bits=weight_bits))
    integer_mode_(qnn)
    return qnn, tok
