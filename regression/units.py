"""Golden cases of the non-linear units: constants, rows and the expected outputs.

A :class:`SoftmaxCase` is one ``golden_models.int_softmax.IntSoftmax`` with its walk table and
rows of raw scores; a :class:`NormCase` one ``golden_models.residual.ResidualAdd`` and
``golden_models.int_layernorm.IntLayerNorm`` with the walk tables of the positions the new
stream feeds, and rows ``(r, V)``. Every expected output comes from those golden functions and
``golden_models.integer_layer.fire``; nothing is recomputed here.

Cases are random (:func:`random_softmax_case`, :func:`random_norm_case`: random scales and
gains, random rows and the corner rows: an empty row, no valid key, one key, a full row, the
extreme scores, a constant row, sums that saturate) or recorded from the integer MiniLM QNN
running sentences (:func:`record_minilm`: the rows its softmax and LayerNorm units see, with
its own constants).
"""

from __future__ import annotations

import dataclasses
import math
import random
from dataclasses import dataclass

import torch

from golden_models import CodeSpace, accumulator_bound, fire, threshold_table
from golden_models.int_layernorm import IntLayerNorm, stream_scale
from golden_models.int_softmax import PROB_BITS, IntSoftmax
from golden_models.positions import POSITION_FAMILY
from golden_models.residual import ResidualAdd
from rtl_gen.params import RTLConfig, unit_fields

__all__ = ["NormCase", "SoftmaxCase", "minilm_config", "random_norm_case",
           "random_softmax_case", "record_minilm"]

#: Code spaces of the units' outputs (golden_models.positions).
PROB_FAMILY = POSITION_FAMILY["Attn. probability"]
STREAM_FAMILY = POSITION_FAMILY["Q-proj. input"]


@dataclass
class SoftmaxCase:
    """An ``IntSoftmax``, its walk table ``theta`` (``T - 1`` over ``u``) and rows
    ``(scores, valid)``; :meth:`expected` gives each row's codes."""

    unit: IntSoftmax
    theta: list[int]
    rows: list[tuple[list[int], list[bool]]]
    T: int

    def expected(self) -> list[list[int]]:
        space = CodeSpace(self.T, PROB_FAMILY)
        out = []
        for scores, valid in self.rows:
            if not scores:
                out.append([])
                continue
            u = self.unit(torch.tensor(scores, dtype=torch.int64),
                          torch.tensor(valid, dtype=torch.bool))
            out.append((space.c - fire(u, torch.tensor(self.theta), self.T)).tolist())
        return out


@dataclass
class NormCase:
    """A ``ResidualAdd`` and ``IntLayerNorm`` pair, up to three walk tables over the new
    stream, and rows ``(r, V)``; :meth:`expected` gives each row's stream and codes."""

    add: ResidualAdd
    norm: IntLayerNorm
    thetas: list[list[int]]
    rows: list[tuple[list[int], list[int]]]
    T: int

    def expected(self) -> list[tuple[list[int], list[list[int]]]]:
        from rtl_gen.layouts import NORM_CODES

        space = CodeSpace(self.T, STREAM_FAMILY)
        out = []
        for r, v in self.rows:
            new = self.norm(self.add(torch.tensor(r), torch.tensor(v)))
            codes = [(space.c - fire(new, torch.tensor(t), self.T)).tolist()
                     for t in self.thetas]
            # a position without a table walks to the terminal time T - 1
            codes += [[space.c - (self.T - 1)] * len(r)] * (NORM_CODES - len(codes))
            out.append((new.tolist(), codes))
        return out


def _walk_table(scale: float, alpha: float, space: CodeSpace, rounding: str, lo: int,
                hi: int) -> list[int]:
    one = torch.tensor([float(scale)], dtype=torch.float64)
    return threshold_table(one, torch.zeros(1, dtype=torch.float64), alpha, space, rounding,
                           (lo, hi))[0].tolist()


def random_softmax_case(config: RTLConfig, seed: int, *, rows: int = 12) -> SoftmaxCase:
    """A random softmax of ``config``'s row and widths: a scale that spreads the scores' range
    over 1 to 40 nats, a probability table of a random ``alpha``, and ``rows`` rows: the
    corners first (empty, no valid key, one key, a full row of equal scores, a full row at
    the score extremes), then random lengths, masks and spreads."""
    rng = random.Random(f"softmax:{seed}")
    sb, n = config.score_bits, config.seq_len
    lo, hi = -(1 << (sb - 1)), (1 << (sb - 1)) - 1
    scale = math.exp(rng.uniform(math.log(1.0), math.log(40.0))) / hi
    unit = IntSoftmax.from_scale(scale, n, sb, config.exp_frac_bits)
    space = CodeSpace(config.T, PROB_FAMILY)
    alpha = rng.uniform(0.3, 1.5) / (space.T - 1)
    theta = _walk_table(2.0**-PROB_BITS, alpha, space, rng.choice(("floor", "round")), 0,
                        2**PROB_BITS)
    out = [([], []), ([rng.randrange(lo, hi + 1) for _ in range(3)], [False] * 3),
           ([rng.randrange(lo, hi + 1)], [True]), ([7] * n, [True] * n),
           ([rng.choice((lo, hi)) for _ in range(n)], [True] * (n - 1) + [False]),
           ([min(lo + 5 + j, hi) for j in range(n)], [True] * n)]  # scores one apart
    while len(out) < rows:
        length = rng.randrange(1, n + 1)
        spread = rng.choice((4, 64, hi - lo))
        base = rng.randrange(lo, hi + 1)
        scores = [min(hi, max(lo, base + rng.randrange(-spread, spread + 1)))
                  for _ in range(length)]
        p = rng.choice((1.0, 0.8, 0.3))
        out.append((scores, [rng.random() < p for _ in range(length)]))
    return SoftmaxCase(unit, theta, out[:max(rows, 1)], config.T)


def random_norm_case(config: RTLConfig, seed: int, *, rows: int = 6) -> NormCase:
    """A random residual add and LayerNorm of ``config``'s row and widths (gains around 1, an
    outlier channel, random biases; the add's scale such that its sums move the stream by up
    to a few times its range), three walk tables of random ``alpha``, and ``rows`` rows: a
    constant row, a row whose sums saturate the residual sum, then random rows at random
    spreads."""
    rng = random.Random(f"norm:{seed}")
    g = torch.Generator().manual_seed(rng.randrange(2**31))
    n, wb = config.hidden, config.residual_bits
    gamma = (1 + 0.4 * torch.randn(n, generator=g, dtype=torch.float64))
    gamma[rng.randrange(n)] *= 8
    beta = 0.3 * torch.randn(n, generator=g, dtype=torch.float64)
    s = stream_scale(gamma, beta, wb)
    norm = IntLayerNorm.from_float(gamma, beta, s, config.sum_bits, wb)
    bound = accumulator_bound(config.hidden, config.weight_bits,
                              CodeSpace(config.T, POSITION_FAMILY["Attn.-out. input"]))
    lo, hi = -(1 << (wb - 1)), (1 << (wb - 1)) - 1
    scale = rng.uniform(0.5, 4.0) * s * hi / bound * torch.rand(n, generator=g,
                                                                dtype=torch.float64)
    add = ResidualAdd.from_float(scale + 1e-9, 40 * s * torch.randn(n, generator=g,
                                                                   dtype=torch.float64),
                                 s, wb, config.sum_bits, bound)
    space = CodeSpace(config.T, STREAM_FAMILY)
    thetas = [_walk_table(s, rng.uniform(0.02, 0.4), space, rng.choice(("floor", "round")), lo,
                          hi) for _ in range(3)]
    out = [([3] * n, [0] * n),
           ([hi] * n, [bound if j % 2 else -bound for j in range(n)])]
    while len(out) < rows:
        shift = rng.randrange(0, wb - 1)
        out.append(([rng.randrange(lo, hi + 1) >> shift for _ in range(n)],
                    [rng.randrange(-bound, bound + 1) >> rng.randrange(0, 8) for _ in range(n)]))
    return NormCase(add, norm, thetas, out[:max(rows, 1)], config.T)


def minilm_config(qnn, **fields) -> RTLConfig:
    """The units' :class:`RTLConfig` of an integer-mode QNN (``networks.bert.BertEncoder``):
    its dimensions (the softmax row is the model's ``max_position_embeddings``, the row its
    golden softmax is built for), code width, weight width and integer spec; ``fields`` are
    further RTLConfig arguments."""
    cfg, spec = qnn.cfg, qnn.integer
    if spec is None:
        raise ValueError("the QNN is not in integer mode (networks.integer.integer_mode_)")
    layer = qnn.layers[0]
    return RTLConfig(
        T=layer.points["attn_prob"].space.T, weight_bits=layer.query.weight_bits,
        **unit_fields(hidden=cfg.hidden_size, heads=cfg.num_attention_heads,
                      ffn=cfg.intermediate_size, seq_len=cfg.max_position_embeddings),
        residual_bits=spec.residual_bits, guard_bits=spec.guard_bits,
        exp_frac_bits=spec.exp_frac_bits, **fields)


class _Recorder:
    """Stands in for a golden unit: calls it and keeps its inputs."""

    def __init__(self, unit, seen: list):
        self.unit, self.seen = unit, seen

    def __call__(self, *args):
        self.seen.append(args)
        return self.unit(*args)


def record_minilm(qnn, tok, sentences, *, softmax_rows: int = 8, norm_rows: int = 4,
                  seed: int = 0) -> tuple[list[SoftmaxCase], list[NormCase]]:
    """The rows MiniLM's softmax and LayerNorm units see on ``sentences``, per block, with the
    block's constants: ``softmax_rows`` (head, query) rows and ``norm_rows`` token rows per
    block and unit, drawn at random (``seed``) from every sentence's rows.

    ``qnn`` is in integer mode (``networks.integer.integer_mode_``); it is left as it was.
    """
    from networks.integer import encoder_forward

    rng = random.Random(f"minilm:{seed}")
    layers = list(qnn.layers)
    saved = [layer.int_block for layer in layers]
    seen = [{"softmax": [], "add_attn": [], "norm_attn": [], "add_ffn": [], "norm_ffn": []}
            for _ in layers]
    try:
        for layer, blk, rec in zip(layers, saved, seen, strict=True):
            layer.int_block = dataclasses.replace(
                blk, **{name: _Recorder(getattr(blk, name), rec[name]) for name in rec})
        with torch.no_grad():
            for sentence in sentences:
                ids, mask = tok([sentence])
                x = qnn.embed_norm(qnn.word_embeddings(ids)
                                   + qnn.position_embeddings(torch.arange(ids.shape[1]))[None]
                                   + qnn.token_type_embeddings(torch.zeros_like(ids)))
                encoder_forward(qnn, x, mask)
    finally:
        for layer, blk in zip(layers, saved, strict=True):
            layer.int_block = blk
    T = layers[0].points["attn_prob"].space.T
    soft, norms = [], []
    for b, (blk, rec) in enumerate(zip(saved, seen, strict=True)):
        rows = []
        for scores, valid in rec["softmax"]:
            s = scores.reshape(-1, scores.shape[-1])
            v = valid.expand_as(scores).reshape(-1, scores.shape[-1])
            rows += [(s[i].tolist(), v[i].tolist()) for i in range(s.shape[0])]
        soft.append(SoftmaxCase(blk.softmax, blk.tables["attn_prob"].tolist(),
                                rng.sample(rows, min(softmax_rows, len(rows))), T))
        nxt = saved[b + 1].encoders if b + 1 < len(saved) else {}
        for add, feeds in (("add_attn", ["ffn_expand_in"]),
                           ("add_ffn", ["q_proj_in", "k_proj_in", "v_proj_in"])):
            enc = blk.encoders if add == "add_attn" else nxt
            rows = []
            for r, v in rec[add]:
                rr, vv = r.reshape(-1, r.shape[-1]), v.reshape(-1, v.shape[-1])
                rows += [(rr[i].tolist(), vv[i].tolist()) for i in range(rr.shape[0])]
            norm = blk.norm_attn if add == "add_attn" else blk.norm_ffn
            norms.append(NormCase(getattr(blk, add), norm,
                                  [enc[name].tolist() for name in feeds if name in enc],
                                  rng.sample(rows, min(norm_rows, len(rows))), T))
    return soft, norms
