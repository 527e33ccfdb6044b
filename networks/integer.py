"""The integer mode of the BERT QNN: every tensor between two spike encoders an integer
(docs/integer_contract.md, "The integer encoder block").

In float mode (:class:`networks.bert.BertLayer`) softmax, LayerNorm, GELU and the residual adds
run in float64 between the spike-encoded positions. In integer mode (:func:`integer_mode_`) a
block is the hardware's data flow, in int64 and nothing else:

============================  ==================================================================
tensor                        integer form
============================  ==================================================================
residual stream ``r``         ``residual_bits`` signed, scale ``s`` of the LayerNorm that wrote it
                              (:func:`golden_models.int_layernorm.stream_scale`: no overflow)
Q/K/V-proj., FFN-expand in    threshold walk over ``r`` (one table per position)
query, key, value codes       threshold walk over the projection's sums (the linear contract)
attention scores ``A``        raw sums ``qbar . k`` (``score_bits``), scale folded into the softmax
attention probabilities       :class:`~golden_models.int_softmax.IntSoftmax`, then a walk over ``u``
attention-out input           threshold walk over the raw sums ``pbar . v``
residual sums ``h``           :class:`~golden_models.residual.ResidualAdd` (``residual_bits +
                              guard_bits``, saturating)
LayerNorm                     :class:`~golden_models.int_layernorm.IntLayerNorm` onto the stream
FFN-contract input            GELU folded into the first FFN tile's table
                              (:func:`golden_models.gelu.gelu_table`)
============================  ==================================================================

The integer constants (tables, multipliers, gains) are derived from the float QNN's parameters
by :func:`integer_mode_`; derive them again after changing the parameters. The embeddings and
their LayerNorm stay on the host: its output is rounded onto the first stream, and the last
stream is scaled back to float for pooling.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import torch

from golden_models.bounds import accumulator_bound, score_bits
from golden_models.codespace import CodeSpace
from golden_models.fixed_point import saturate, signed_limits
from golden_models.gelu import gelu_table
from golden_models.int_layernorm import IntLayerNorm, stream_scale
from golden_models.int_softmax import PROB_BITS, IntSoftmax
from golden_models.integer_layer import fire, threshold_table
from golden_models.residual import ResidualAdd
from toolkit_base.checks import check_int

if TYPE_CHECKING:
    from networks.bert import BertEncoder, BertLayer

#: The positions whose codes are a threshold walk over the residual stream.
STREAM_INPUTS = ("q_proj_in", "k_proj_in", "v_proj_in", "ffn_expand_in")
#: The integer tensors of a block that :func:`block_forward` hands to ``layer.tap``, in order:
#: the input stream, the attention scores ``[B, heads, S, S]`` and probabilities ``u``, the
#: attention-output tile's sums, the first residual sum and stream, the FFN-contract tile's
#: sums, the second residual sum and the output stream (``[B, S, width]`` unless said).
TAPPED = ("r_in", "scores", "u", "attn_sum", "h1", "r1", "ffn_sum", "h2", "r_out")


@dataclass(frozen=True)
class IntegerSpec:
    """Widths of the integer mode (recorded in ``finetune.json`` as ``integer``).

    Parameters
    ----------
    residual_bits : int
        Signed width of the residual stream (4..24).
    guard_bits : int
        Extra bits of the saturating residual sum over the stream (0..12).
    exp_frac_bits : int
        Fraction bits of the softmax exponent: its table has ``2**exp_frac_bits`` entries (1..12).
    """

    residual_bits: int = 16
    guard_bits: int = 5
    exp_frac_bits: int = 6

    def __post_init__(self) -> None:
        check_int("residual_bits", self.residual_bits, 4, 24)
        check_int("guard_bits", self.guard_bits, 0, 12)
        check_int("exp_frac_bits", self.exp_frac_bits, 1, 12)

    @property
    def sum_bits(self) -> int:
        """Width of the residual sum, the LayerNorm's input."""
        return self.residual_bits + self.guard_bits

    def as_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: object) -> IntegerSpec:
        if not isinstance(d, dict) or set(d) != set(cls.__dataclass_fields__):
            raise ValueError(
                f"integer must be an object with keys {sorted(cls.__dataclass_fields__)}, "
                f"not {d!r}"
            )
        return cls(**d)


def integer_spec(integer: bool, residual_bits: int | None = None) -> IntegerSpec | None:
    """The spec of the command-line options ``--integer`` and ``--residual-bits`` (``None``:
    float mode); ``--residual-bits`` alone is refused."""
    if residual_bits is not None and not integer:
        raise ValueError(f"--residual-bits {residual_bits} needs --integer")
    if not integer:
        return None
    if residual_bits is None:
        return IntegerSpec()
    if isinstance(residual_bits, bool) or not isinstance(residual_bits, int) or not (
        4 <= residual_bits <= 24
    ):
        raise ValueError(f"--residual-bits must be in 4..24, not {residual_bits!r}")
    return IntegerSpec(residual_bits=residual_bits)


@dataclass(frozen=True)
class IntegerBlock:
    """The integer constants of one encoder block."""

    #: Stream scales: the block's input, after the attention LayerNorm, its output.
    s_in: float
    s_mid: float
    s_out: float
    #: Thresholds ``[T-1]`` over the stream, per stream-fed position.
    encoders: dict[str, torch.Tensor]
    #: Thresholds ``[N, T-1]`` of the projections' outputs (query, key, value), the FFN tile's
    #: (GELU folded), and ``[T-1]`` over the probabilities and the context sums.
    tables: dict[str, torch.Tensor]
    softmax: IntSoftmax
    add_attn: ResidualAdd
    norm_attn: IntLayerNorm
    add_ffn: ResidualAdd
    norm_ffn: IntLayerNorm
    spec: IntegerSpec


def check_integer_ready(qnn: BertEncoder) -> None:
    """Raise unless ``qnn`` is a converted QNN the integer mode can run."""
    for p in qnn.points():
        if p.alpha is None:
            raise ValueError("the QNN is not calibrated: convert it with networks.ptq")
        if p.smooth is not None:
            raise ValueError(
                "the integer mode supports the conversion without smoothing (smooth=0)"
            )
    if any(lin.w_int is None for lin in qnn.linears()):
        raise ValueError("the QNN has no integer weights: convert it with networks.ptq")


def check_spec(spec: IntegerSpec, hidden_size: int) -> IntegerSpec:
    """Raise unless the LayerNorm over ``hidden_size`` channels can hold ``spec``'s sums."""
    top = IntLayerNorm.max_in_bits(hidden_size)
    if spec.sum_bits > top:
        raise ValueError(
            f"residual_bits={spec.residual_bits} with guard_bits={spec.guard_bits} gives "
            f"{spec.sum_bits}-bit residual sums; a LayerNorm over {hidden_size} channels holds "
            f"at most {top} (residual_bits <= {top - spec.guard_bits})"
        )
    return spec


def stream_scales(qnn: BertEncoder, spec: IntegerSpec) -> list[float]:
    """Scales of the ``2 L + 1`` streams: the embeddings' LayerNorm, then per block the
    attention and the FFN LayerNorm."""
    norms = [qnn.embed_norm]
    norms += [n for layer in qnn.layers for n in (layer.attn_norm, layer.ffn_norm)]
    return [
        stream_scale(n.weight.detach(), n.bias.detach(), spec.residual_bits) for n in norms
    ]


def _linear_table(layer: BertLayer, lin_name: str, p_in: str, p_out: str) -> torch.Tensor:
    """The threshold table of a projection: the float expression :class:`QLinear` evaluates,
    inverted over the tile's accumulator range (as ``networks.rtl_slice.capture_slice``)."""
    lin, pi, po = getattr(layer, lin_name), layer.points[p_in], layer.points[p_out]
    bound = accumulator_bound(lin.w_int.shape[1], lin.weight_bits, pi.space)
    scale = lin.w_scale * pi.alpha
    return threshold_table(
        scale, lin.bias.to(torch.float64), po.alpha, po.space, po.rounding, (-bound, bound)
    )


def _walk_table(scale: float, alpha: float, space: CodeSpace, rounding: str, lo: int, hi: int):
    """The one table ``[T-1]`` of codes ``level(scale * v / alpha)`` over integers ``lo..hi``."""
    one = torch.tensor([float(scale)], dtype=torch.float64)
    zero = torch.zeros(1, dtype=torch.float64)
    return threshold_table(one, zero, alpha, space, rounding, (lo, hi))[0]


def build_block(
    layer: BertLayer, spec: IntegerSpec, scales: tuple[float, float, float]
) -> IntegerBlock:
    """The integer constants of ``layer`` with stream scales ``(s_in, s_mid, s_out)``."""
    s_in, s_mid, s_out = scales
    pt, cfg = layer.points, layer.cfg
    lo, hi = signed_limits(spec.residual_bits)
    encoders = {}
    for name in STREAM_INPUTS:
        s = s_in if name != "ffn_expand_in" else s_mid
        p = pt[name]
        encoders[name] = _walk_table(s, p.alpha, p.space, p.rounding, lo, hi)
    tables = {
        "query": _linear_table(layer, "query", "q_proj_in", "query"),
        "key": _linear_table(layer, "key", "k_proj_in", "key"),
        "value": _linear_table(layer, "value", "v_proj_in", "value"),
    }
    row_max = cfg.max_position_embeddings
    prob = pt["attn_prob"]
    tables["attn_prob"] = _walk_table(
        2.0**-PROB_BITS, prob.alpha, prob.space, prob.rounding, 0, 2**PROB_BITS
    )
    value, ctx = pt["value"], pt["attn_out_in"]
    ctx_bound = row_max * prob.space.max_abs * value.space.max_abs
    tables["attn_out_in"] = _walk_table(
        prob.alpha * value.alpha, ctx.alpha, ctx.space, ctx.rounding, -ctx_bound, ctx_bound
    )
    ffn, fin, fout = layer.ffn_expand, pt["ffn_expand_in"], pt["ffn_contract_in"]
    bound = accumulator_bound(ffn.w_int.shape[1], ffn.weight_bits, fin.space)
    tables["ffn_contract_in"] = gelu_table(
        ffn.w_scale * fin.alpha, ffn.bias.to(torch.float64), fout.alpha, fout.space,
        fout.rounding, (-bound, bound),
    )
    query, key = pt["query"], pt["key"]
    sbits = score_bits(query.space, key.space, cfg.head_dim)
    softmax = _derived("softmax", lambda: IntSoftmax.from_scale(
        query.alpha * key.alpha / math.sqrt(cfg.head_dim), row_max, sbits, spec.exp_frac_bits
    ))

    def add(lin_name: str, p_in: str, s: float) -> ResidualAdd:
        lin, p = getattr(layer, lin_name), pt[p_in]
        acc = accumulator_bound(lin.w_int.shape[1], lin.weight_bits, p.space)
        return ResidualAdd.from_float(
            lin.w_scale * p.alpha, lin.bias.to(torch.float64), s, spec.residual_bits,
            spec.sum_bits, acc,
        )

    def norm(ln, s: float) -> IntLayerNorm:
        return IntLayerNorm.from_float(
            ln.weight.detach().to(torch.float64), ln.bias.detach().to(torch.float64), s,
            spec.sum_bits, spec.residual_bits,
        )

    return IntegerBlock(
        s_in, s_mid, s_out, encoders, tables, softmax,
        _derived("add_attn", lambda: add("attn_out", "attn_out_in", s_in)),
        _derived("norm_attn", lambda: norm(layer.attn_norm, s_mid)),
        _derived("add_ffn", lambda: add("ffn_contract", "ffn_contract_in", s_mid)),
        _derived("norm_ffn", lambda: norm(layer.ffn_norm, s_out)),
        spec,
    )


def _derived(unit: str, derive: Callable[[], object]) -> object:
    """``derive()``, a unit's constants; a value its registers cannot hold is refused in one
    line naming the unit (an :class:`IntegerBlock` field) and the value."""
    try:
        return derive()
    except ValueError as exc:
        raise ValueError(f"{unit}: {exc}") from None


def integer_mode_(qnn: BertEncoder, spec: IntegerSpec | None = None) -> BertEncoder:
    """Switch ``qnn`` to the integer mode with ``spec`` (in place; returns it).

    The constants are derived from the QNN's current parameters: call again after changing
    them (fine-tuning's :func:`networks.finetune.to_qnn` and :func:`networks.checkpoint.load`
    do).
    """
    spec = IntegerSpec() if spec is None else spec
    if not isinstance(spec, IntegerSpec):
        raise TypeError(f"spec must be an IntegerSpec, not {spec!r}")
    check_integer_ready(qnn)
    check_spec(spec, qnn.cfg.hidden_size)
    scales = stream_scales(qnn, spec)
    blocks = []
    for i, layer in enumerate(qnn.layers):
        try:
            blocks.append(
                build_block(layer, spec, (scales[2 * i], scales[2 * i + 1], scales[2 * i + 2])))
        except ValueError as exc:  # one line naming the block and the unit
            raise ValueError(f"block {i}, {exc}") from None
    for layer, blk in zip(qnn.layers, blocks, strict=True):
        layer.int_block = blk
    qnn.integer = spec
    return qnn


def float_mode_(qnn: BertEncoder) -> BertEncoder:
    """Switch ``qnn`` back to float non-linearities (in place; returns it)."""
    for layer in qnn.layers:
        layer.int_block = None
    qnn.integer = None
    return qnn


def walk(v: torch.Tensor, theta: torch.Tensor, space: CodeSpace) -> torch.Tensor:
    """Codes ``c - tau`` of the threshold walk of integers ``v`` over ``theta`` (one table
    ``[T-1]``, or one per channel ``[N, T-1]`` for ``v [..., N]``).

    ``tau`` is :func:`golden_models.integer_layer.fire`'s, the first ``t`` with ``v >=
    theta[t]``. Every table of the integer mode is non-increasing (``threshold_table``), so that
    is the number of thresholds above ``v``: a binary search per value, not a pass over all
    ``T - 1`` thresholds (a table that is not non-increasing takes ``fire``).
    """
    if theta.dim() not in (1, 2) or not bool((theta[..., 1:] <= theta[..., :-1]).all()):
        return space.c - fire(v, theta, space.T)
    rising = theta.to(torch.int64).flip(-1).contiguous()
    v = v.to(torch.int64)
    if theta.dim() == 1:
        at_most = torch.searchsorted(rising, v, right=True)
    else:
        n = theta.shape[0]
        if v.dim() == 0 or v.shape[-1] != n:
            raise ValueError(f"v must have {n} channels last, not shape {tuple(v.shape)}")
        rows = v.reshape(-1, n).T.contiguous()
        at_most = torch.searchsorted(rising, rows, right=True).T.reshape(v.shape)
    return space.c - (theta.shape[-1] - at_most)


def block_forward(layer: BertLayer, r: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """One block in integer mode: stream rows ``r [B, S, H]`` (int64) and the valid keys
    ``valid [B, S]`` (bool) in, the next stream out. The codes of every position go through its
    quant point's mask and recorder (:meth:`networks.bert.QuantPoint.emit`); the integer
    tensors of :data:`TAPPED` past ``layer.tap`` when it is set."""
    blk: IntegerBlock = layer.int_block
    pt, tab = layer.points, blk.tables
    b, s, h = r.shape
    nh, dk = layer.cfg.num_attention_heads, layer.cfg.head_dim

    def heads(t: torch.Tensor) -> torch.Tensor:
        return t.view(b, s, nh, dk).transpose(1, 2)

    def codes(name: str, v: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
        return pt[name].emit(walk(v, theta, pt[name].space))

    def tapped(name: str, t: torch.Tensor) -> torch.Tensor:
        if layer.tap is not None:
            layer.tap(name, t)
        return t

    tapped("r_in", r)
    cq = codes("q_proj_in", r, blk.encoders["q_proj_in"])
    ck = codes("k_proj_in", r, blk.encoders["k_proj_in"])
    cv = codes("v_proj_in", r, blk.encoders["v_proj_in"])
    def projection(name: str, q: torch.Tensor) -> torch.Tensor:
        # codes are emitted per head, as the float mode quantizes them ([B, heads, S, d_k])
        v = getattr(layer, name).integer_sum(q)
        return pt[name].emit(heads(walk(v, tab[name], pt[name].space)))

    query, key, value = projection("query", cq), projection("key", ck), projection("value", cv)
    scores = tapped("scores", _int_matmul(query, key.transpose(-1, -2)))
    u = tapped("u", blk.softmax(scores, valid[:, None, None, :]))
    prob = codes("attn_prob", u, tab["attn_prob"])
    ctx = _int_matmul(prob, value).transpose(1, 2).reshape(b, s, h)
    cc = codes("attn_out_in", ctx, tab["attn_out_in"])
    h1 = tapped("h1", blk.add_attn(r, tapped("attn_sum", layer.attn_out.integer_sum(cc))))
    r1 = tapped("r1", blk.norm_attn(h1))
    cf = codes("ffn_expand_in", r1, blk.encoders["ffn_expand_in"])
    cm = codes("ffn_contract_in", layer.ffn_expand.integer_sum(cf), tab["ffn_contract_in"])
    h2 = tapped("h2", blk.add_ffn(r1, tapped("ffn_sum", layer.ffn_contract.integer_sum(cm))))
    return tapped("r_out", blk.norm_ffn(h2))


def _int_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` of small integer codes, exactly: float64 holds every partial sum (below
    ``2**53``: rows of at most 4096 products of 8-bit codes), whatever the order."""
    return (a.to(torch.float64) @ b.to(torch.float64)).to(torch.int64)


def encoder_forward(
    qnn: BertEncoder, x: torch.Tensor, attention_mask: torch.Tensor
) -> torch.Tensor:
    """The blocks in integer mode: the embeddings' LayerNorm output ``x [B, S, H]`` (float, the
    host's) onto the first stream, every block in integers, the last stream back to float."""
    spec = qnn.integer
    s_in = qnn.layers[0].int_block.s_in
    r = saturate(torch.round(x.to(torch.float64) / s_in).to(torch.int64), spec.residual_bits)
    valid = attention_mask.to(torch.bool)
    for layer in qnn.layers:
        r = block_forward(layer, r, valid)
    return last_hidden(qnn, r)


def last_hidden(qnn: BertEncoder, r: torch.Tensor) -> torch.Tensor:
    """The last stream ``r [..., H]`` (integers, the last block's LayerNorm's) back to float on
    the host, for pooling: ``r`` times that LayerNorm's stream scale (the one home of it:
    :func:`encoder_forward`, and the embedding of the stream the hardware made,
    :func:`networks.network.stream_embedding`)."""
    return r.to(torch.float64) * qnn.layers[-1].int_block.s_out
