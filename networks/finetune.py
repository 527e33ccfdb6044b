"""Dead-zone quantization-aware fine-tuning of the W4A4 MiniLM QNN (paper, "Training the
Dead-Zone QNN").

The integer QNN of :func:`networks.ptq.convert` carries no gradient (integer weights,
integer codes). Training therefore runs on a float32 fake-quant *twin* initialised from it: the
same blocks, every linear layer's latent weight initialised to ``s * W_int`` and fake-quantized
back onto the fixed per-channel grid ``s``, every quant point quantized at its scale ``alpha``
(initialised from the calibration, learned by default: LSQ, see :func:`_learned_act`; fixed
with ``scale_lr = 0``) and, at the spike-encoded points, dead-zone projected around its
calibrated ``I_max`` with radius ``k``:

- ``k >= 1``: the paper's masked straight-through estimator
  (:class:`golden_models.quantizer.MaskedSTE`, Eq. masked_ste): no gradient where the code was
  projected to ``mu`` or the quantizer saturates;
- ``k = 0`` (and the key and value, which are never spike-encoded): the plain clipped STE. Read
  literally, the masked STE would also block the gradient where ``q = mu`` at ``k = 0``, which
  is 17-89 % of the values; at ``k = 0`` nothing is projected, so nothing should be blocked.

The teacher is the float model. The loss is distillation without labels:
``mean over the six blocks of MSE(student block output, teacher block output)`` over the real
tokens, plus ``EMBED_WEIGHT * (1 - cos)`` of the pooled sentence embeddings.
Trained: the latent weights and biases of all 36 linear layers and the LayerNorm gains and
shifts, and (``scale_lr > 0``) the activation scales; the token, position and type embeddings stay
fixed; ``I_max`` and ``k`` stay fixed, as in the paper (which also keeps ``alpha`` fixed:
``scale_lr = 0``). Learned scales are trained in the log domain (``alpha = exp(theta)``) with
their own peak learning rate on the same schedule: AdamW normalises each parameter's step, so
LSQ's gradient scale ``1/sqrt(N q_max)`` would cancel, and the log makes one learning rate a
relative step for scales of any size. :func:`to_qnn` rounds the result back onto the integer
contract: a QNN of the same form as the conversion's (with the learned scales), whose ``k = 0``
run is bit-exact to it and whose layers export to threshold tables unchanged.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

import torch
from torch import nn

from golden_models.bounds import accumulator_bound
from golden_models.fixed_point import ISQRT_BITS, bit_length, saturate
from golden_models.gelu import gelu_monotone
from golden_models.int_layernorm import (
    BIAS_FRAC_BITS,
    NORM_FRAC_BITS,
    RECIP_BITS,
    ROOT_BITS,
    IntLayerNorm,
    stream_scale,
)
from golden_models.int_softmax import PROB_BITS, IntSoftmax
from golden_models.quantizer import MaskedSTE, unsaturated
from golden_models.residual import BIAS_FRAC_BITS as ADD_BIAS_FRAC_BITS
from golden_models.residual import ResidualAdd
from networks.bert import BertEncoder, BertLayer, QLinear, QuantPoint, Tokenizer, mean_pool
from networks.integer import IntegerSpec, integer_mode_, score_bits
from toolkit_base.checks import check_int

#: Weight of the embedding term ``1 - cos`` against the mean block-output MSE.
EMBED_WEIGHT = 1.0


@dataclass(frozen=True)
class FinetuneConfig:
    """Settings of one fine-tuning run (all recorded in ``finetune.json``)."""

    k: int = 0
    steps: int = 1500
    batch: int = 16
    lr: float = 2e-3
    warmup: int = 30
    weight_decay: float = 0.0
    seed: int = 0
    #: Torch intra-op threads while training (set explicitly: same threads, same result). Two
    #: use both cores of the reference machine (1.7x one thread's speed when nothing else runs).
    threads: int = 2
    #: Peak learning rate of the learned activation scales (LSQ, in the log domain, same
    #: schedule); ``0`` keeps every ``alpha`` fixed at its calibrated value (the paper's setting).
    scale_lr: float = 5e-3
    #: Batches per length pool (:func:`batches`); 1: plain random batches.
    pool: int = 64

    def __post_init__(self) -> None:
        check_int("k", self.k, 0, 15)
        check_int("steps", self.steps, 1, 1_000_000)
        check_int("batch", self.batch, 1, 4096)
        check_int("warmup", self.warmup, 0, 1_000_000)
        check_int("seed", self.seed, 0, 2**63 - 1)
        check_int("threads", self.threads, 1, 256)
        check_int("pool", self.pool, 1, 1_000_000)
        if not (isinstance(self.lr, (int, float)) and 0 < self.lr < 1):
            raise ValueError(f"lr must be a number in (0, 1), not {self.lr!r}")
        if not (isinstance(self.scale_lr, (int, float)) and 0 <= self.scale_lr < 1):
            raise ValueError(f"scale_lr must be a number in [0, 1), not {self.scale_lr!r}")

    def as_dict(self) -> dict:
        return asdict(self)


class _LearnedAct(torch.autograd.Function):
    """The forward and backward of :func:`_learned_act` in one autograd node.

    The forward is ``alpha * qbar`` (``qbar``: the code, dead-zone projected where ``mu`` is
    given). The backward is, operation for operation, the one autograd derives for the
    straight-through expression ``(where(passed, v, qbar) + (qbar - where(...)).detach()) *
    alpha`` with ``v = x / alpha`` (the same products, quotients and sums, so the same float32
    values), without its four graph nodes and their intermediate tensors.
    """

    @staticmethod
    def forward(ctx, x, alpha, q_min, q_max, shift, mu, k):
        ctx.set_materialize_grads(False)  # the codes (second output) take no gradient
        v = x / alpha
        level = torch.floor(v + shift)
        q = level.clamp(q_min, q_max)
        passed = level == q  # not clipped
        if mu is not None:
            keep = (q - mu).abs() > k
            q = torch.where(keep, q, float(mu))
            passed &= keep
        ctx.save_for_backward(x, alpha, q, passed)
        ctx.mark_non_differentiable(q)
        return q * alpha, q

    @staticmethod
    def backward(ctx, grad, _):
        x, alpha, q, passed = ctx.saved_tensors
        # out = t * alpha (t = qbar): MulBackward
        g_alpha = (grad * q).sum_to_size(alpha.shape)
        # t = soft + const, soft = where(passed, v, qbar): AddBackward, WhereBackward
        g_v = torch.where(passed, grad * alpha, 0)
        # v = x / alpha: DivBackward
        g_alpha = g_alpha + (-g_v * ((x / alpha) / alpha)).sum_to_size(alpha.shape)
        return g_v / alpha, g_alpha, None, None, None, None, None


def _learned_act(x: torch.Tensor, point: QuantPoint, k: int) -> torch.Tensor:
    """``alpha * qbar`` with a learned ``alpha = exp(point.log_alpha)`` (LSQ).

    Same forward and input gradient as :func:`_fake_act` (masked STE at the spike-encoded points
    for ``k >= 1``, clipped STE elsewhere); the scale's gradient is LSQ's, ``d xbar / d alpha =
    qbar - x/alpha`` where the gradient passes and ``qbar`` (``mu``, ``q_min`` or ``q_max``, in
    code units) where it is blocked: the dead-zone centre stays fixed in code units.
    """
    return _learned_act_codes(x, point, k)[0]


def _learned_act_codes(
    x: torch.Tensor, point: QuantPoint, k: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`_learned_act`'s output and its codes ``qbar`` (float32, integer-valued, no
    gradient)."""
    space = point.space
    mu = point.mask.mu if point.spike and k > 0 else None
    shift = 0.5 if point.rounding == "round" else 0.0
    return _LearnedAct.apply(
        x, point.log_alpha.exp(), space.q_min, space.q_max, shift, mu, k
    )


def _act_codes(
    x: torch.Tensor, point: QuantPoint, k: int
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`_fake_act`'s output and, where it comes at no cost (learned scales), its codes
    (else ``None``: :func:`_codes` recovers them)."""
    if point.alpha is not None and getattr(point, "log_alpha", None) is not None:
        return _learned_act_codes(x, point, k)
    return _fake_act(x, point, k), None


def _fake_act(x: torch.Tensor, point: QuantPoint, k: int) -> torch.Tensor:
    """``alpha * qbar`` of the point, with the masked STE (k >= 1) or the clipped STE."""
    if point.alpha is None:
        raise ValueError("the QNN is not calibrated: convert it with networks.ptq")
    if getattr(point, "log_alpha", None) is not None:
        return _learned_act(x, point, k)
    space, alpha = point.space, point.alpha
    if point.spike and k > 0:
        return MaskedSTE.apply(x, alpha, space, point.mask.mu, k, point.rounding)
    shift = 0.5 if point.rounding == "round" else 0.0
    xq = torch.floor(x / alpha + shift).clamp(space.q_min, space.q_max) * alpha
    keep = unsaturated(x.detach(), alpha, space, point.rounding).to(x.dtype)
    return x * keep + (xq - x * keep).detach()


def _fake_linear(x: torch.Tensor, lin: QLinear) -> torch.Tensor:
    """The linear layer with its latent weight fake-quantized per channel (STE)."""
    s = lin.scale32[:, None]
    top = 2 ** (lin.weight_bits - 1)
    w = lin.weight
    wd = w.detach()  # the quantization's steps need no graph: only the sum below carries one
    wq = torch.floor(wd / s + 0.5).clamp(-top, top - 1) * s
    return nn.functional.linear(x, w + (wq - wd), lin.bias)


def _qkv(
    layer: BertLayer, x: torch.Tensor, k: int
) -> tuple[tuple[torch.Tensor, torch.Tensor | None], ...]:
    """The twin's query, key and value ``[B, heads, S, d_k]`` of the block input ``x``: the
    three projections of their fake-quantized inputs, fake-quantized at their points; each with
    its codes where :func:`_act_codes` gives them."""
    b, s, _ = x.shape
    nh, dk = layer.cfg.num_attention_heads, layer.cfg.head_dim
    pt = layer.points
    out = []
    for p_in, lin, p_out in (("q_proj_in", layer.query, "query"), ("k_proj_in", layer.key, "key"),
                             ("v_proj_in", layer.value, "value")):
        y = _fake_linear(_fake_act(x, pt[p_in], k), lin).view(b, s, nh, dk).transpose(1, 2)
        out.append(_act_codes(y, pt[p_out], k))
    return tuple(out)


def _block(layer: BertLayer, x: torch.Tensor, bias: torch.Tensor, k: int) -> torch.Tensor:
    """:meth:`BertLayer.forward` of the fake-quant twin (same data flow, trainable)."""
    b, s, h = x.shape
    dk, pt = layer.cfg.head_dim, layer.points
    (query, _), (key, _), (value, _) = _qkv(layer, x, k)
    scores = query @ key.transpose(-1, -2) / math.sqrt(dk) + bias
    prob = _fake_act(torch.softmax(scores, dim=-1), pt["attn_prob"], k)
    ctx = (prob @ value).transpose(1, 2).reshape(b, s, h)
    ctx = _fake_act(ctx, pt["attn_out_in"], k)
    x = layer.attn_norm(x + _fake_linear(ctx, layer.attn_out))
    xf = _fake_act(x, pt["ffn_expand_in"], k)
    mid = nn.functional.gelu(_fake_linear(xf, layer.ffn_expand))
    mid = _fake_act(mid, pt["ffn_contract_in"], k)
    return layer.ffn_norm(x + _fake_linear(mid, layer.ffn_contract))


def _ste(value: torch.Tensor, exact: torch.Tensor) -> torch.Tensor:
    """``exact`` forward, ``value``'s gradient (straight through an integer function)."""
    return value + (exact.to(value.dtype) - value).detach()


class _ResidualSTE(torch.autograd.Function):
    """``exact`` forward; backward, the gradients of ``x + codes @ weight.T + bias``.

    The straight-through residual add of the integer mode without computing the float sum it
    takes its gradient from (the integer sums are computed anyway: :func:`_int_residual`). The
    gradients are the ones autograd gives ``torch.nn.functional.linear`` (the same products).
    """

    @staticmethod
    def forward(ctx, exact, x, codes, weight, bias):  # noqa: ARG004 - x: identity gradient
        ctx.save_for_backward(codes, weight)
        return exact

    @staticmethod
    def backward(ctx, grad):
        codes, weight = ctx.saved_tensors
        g = grad.reshape(-1, grad.shape[-1])
        c = codes.reshape(-1, codes.shape[-1])
        need = ctx.needs_input_grad
        g_codes = g.mm(weight).view(codes.shape) if need[2] else None
        g_weight = g.t().mm(c) if need[3] else None
        g_bias = g.sum(0) if need[4] else None
        return None, grad if need[1] else None, g_codes, g_weight, g_bias


def _alpha(point: QuantPoint) -> float:
    """The point's current scale (learned or fixed), as a number."""
    if getattr(point, "log_alpha", None) is not None:
        return math.exp(float(point.log_alpha.detach()))
    return float(point.alpha)


def _codes(t: torch.Tensor, alpha: float) -> torch.Tensor:
    """The integer codes (float32, integer-valued) of a fake-quantized tensor ``t = alpha *
    qbar``: ``t`` is within a few float32 roundings of ``alpha * qbar``, far closer than half a
    code for codes of at most 8 bits."""
    return torch.round(t.detach() / alpha)


def _on_stream(
    x: torch.Tensor, x64: torch.Tensor, s: float, bits: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """``x`` rounded onto a stream of scale ``s`` and width ``bits`` (saturating), as
    :func:`networks.integer.encoder_forward` rounds ``x64``; identity gradient. Returns the
    float tensor and the stream's integers."""
    r = saturate(torch.round(x64 / s).to(torch.int64), bits)
    return _ste(x, r.to(torch.float64) * s), r


def _isqrt(u: torch.Tensor) -> torch.Tensor:
    """``floor(sqrt(u))`` of int64 ``0 <= u < 2**62``: :func:`golden_models.fixed_point.isqrt`'s
    values (tested equal) from the float64 root, off by at most one (its error is below
    ``2**-21``), corrected by one exact integer step each way (``(r + 1)**2 <= 2**62``)."""
    r = torch.sqrt(u.to(torch.float64)).to(torch.int64)
    r = r - (r * r > u).to(torch.int64)
    return r + ((r + 1) * (r + 1) <= u).to(torch.int64)


def _layernorm(unit: IntLayerNorm, h: torch.Tensor) -> torch.Tensor:
    """``unit(h)``, the same integers (tested equal), in fewer passes over the rows: for
    the twin's residual sums, in range by construction (not checked again).

    ``D * F + half = h * (N F) - (S1 F - half)``: the centring folded into the per-row factors
    (no overflow: ``|h| N F`` and ``|S1| F`` are below ``N 2**(in_bits + P)``, which the unit
    keeps below ``2**61``); the output rounding's half folded into the per-channel bias; the
    root by :func:`_isqrt`.
    """
    n = unit.n
    s1 = h.sum(-1, keepdim=True)
    u = n * (h * h).sum(-1, keepdim=True) - s1 * s1
    k = torch.where(u > 0, (ISQRT_BITS - bit_length(u)) // 2, 0)
    root = torch.where(u > 0, _isqrt(torch.bitwise_left_shift(u, 2 * k)), 2 ** (ROOT_BITS - 1))
    recip = torch.div(2 ** (RECIP_BITS + ROOT_BITS), root, rounding_mode="floor")
    shift = ROOT_BITS + RECIP_BITS - NORM_FRAC_BITS - k  # >= 9: k <= 30
    half = torch.bitwise_left_shift(torch.ones_like(shift), shift - 1)
    norm = torch.bitwise_right_shift(h * (n * recip) - (s1 * recip - half), shift)
    out_shift = unit.gain_shift + NORM_FRAC_BITS
    offset = unit.bias * 2 ** (out_shift - BIAS_FRAC_BITS) + 2 ** (out_shift - 1)
    return saturate(torch.bitwise_right_shift(unit.gain * norm + offset, out_shift), unit.out_bits)


def _residual_add(unit: ResidualAdd, r: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``unit(r, v)``, the same integers (tested equal), with the rounding's half folded into
    the per-channel bias; ``r`` and ``v`` in range by construction (not checked again)."""
    offset = unit.bias * 2 ** (unit.shift - ADD_BIAS_FRAC_BITS) + 2 ** (unit.shift - 1)
    add = torch.bitwise_right_shift(unit.mult * v + offset, unit.shift)
    return saturate(r + add, unit.sum_bits)


def _int_norm(
    ln: nn.LayerNorm, h: torch.Tensor, h_int: torch.Tensor, spec: IntegerSpec
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """The integer LayerNorm of the integer mode (forward), the float LayerNorm's gradient;
    returns the output on its stream, the stream's integers and its scale."""
    gamma = ln.weight.detach().to(torch.float64)
    beta = ln.bias.detach().to(torch.float64)
    s = stream_scale(gamma, beta, spec.residual_bits)
    unit = IntLayerNorm.from_float(gamma, beta, s, spec.sum_bits, spec.residual_bits)
    r = _layernorm(unit, h_int)
    return _ste(ln(h), r.to(torch.float64) * s), r, s


def _int_residual(
    x: torch.Tensor,
    r: torch.Tensor,
    xbar: torch.Tensor,
    q: torch.Tensor | None,
    point: QuantPoint,
    lin: QLinear,
    s: float,
    spec: IntegerSpec,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The residual add of the integer mode: the stream ``x`` (its integers ``r``, scale ``s``)
    plus the layer ``lin`` applied to the point's dequantized codes ``xbar`` (the codes ``q``,
    ``None``: recovered from ``xbar``), the way :class:`golden_models.residual.ResidualAdd`
    computes it from the integer sums (forward), the float sum's gradient
    (:class:`_ResidualSTE`). Returns the float tensor and its integers."""
    alpha = _alpha(point)
    q = _codes(xbar, alpha) if q is None else q
    top = 2 ** (lin.weight_bits - 1)
    w_int = torch.floor(lin.weight.detach() / lin.scale32[:, None] + 0.5).clamp(-top, top - 1)
    acc = accumulator_bound(w_int.shape[1], lin.weight_bits, point.space)
    # exact: every partial sum an integer of at most acc (as QLinear's accumulate)
    dtype = torch.float32 if acc < 2**24 else torch.float64
    v = (q.to(dtype) @ w_int.T.to(dtype)).to(torch.int64)
    unit = ResidualAdd.from_float(
        lin.w_scale * alpha, lin.bias.detach().to(torch.float64), s, spec.residual_bits,
        spec.sum_bits, acc,
    )
    h_int = _residual_add(unit, r, v)
    exact = (h_int.to(torch.float64) * s).to(x.dtype)
    w = lin.weight
    w_eff = w + (w_int * lin.scale32[:, None] - w.detach())  # _fake_linear's weight
    return _ResidualSTE.apply(exact, x, xbar, w_eff, lin.bias), h_int


#: Score elements the integer softmax takes at once (its int64 intermediates: 16 MiB each).
SOFTMAX_CHUNK = 2**21


def _int_softmax(unit: IntSoftmax, scores: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """``unit`` over score rows ``[B, heads, S, S]`` with the valid keys ``[B, S]``, a few
    sentences at a time (at most :data:`SOFTMAX_CHUNK` elements: bounded peak memory)."""
    b = scores.shape[0]
    per = max(1, SOFTMAX_CHUNK // max(1, scores[0].numel()))
    if per >= b:
        return unit(scores, valid[:, None, None, :])
    return torch.cat(
        [unit(scores[i : i + per], valid[i : i + per, None, None, :]) for i in range(0, b, per)]
    )


def _block_integer(
    layer: BertLayer,
    x: torch.Tensor,
    r: torch.Tensor,
    s_in: float,
    bias: torch.Tensor,
    valid: torch.Tensor,
    k: int,
    spec: IntegerSpec,
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """The twin of :func:`networks.integer.block_forward`: the integer functions' values
    forward, the float functions' gradients backward (straight through). ``x`` is on the
    stream ``s_in``, ``r`` its integers; returns the block's output stream, its integers and its
    scale."""
    b, s, h = x.shape
    dk, pt = layer.cfg.head_dim, layer.points
    (query, cq), (key, ck), (value, _) = _qkv(layer, x, k)
    raw = query @ key.transpose(-1, -2)
    aq, ak = _alpha(pt["query"]), _alpha(pt["key"])
    sbits = score_bits(pt["query"].space, pt["key"].space, dk)
    cq = _codes(query, aq) if cq is None else cq
    ck = _codes(key, ak) if ck is None else ck
    # the raw integer sums of the codes, exactly (|A| < 2**sbits <= 2**24)
    scores = (cq @ ck.transpose(-1, -2)).to(torch.int64)
    unit = IntSoftmax.from_scale(
        aq * ak / math.sqrt(dk), layer.cfg.max_position_embeddings, sbits, spec.exp_frac_bits
    )
    u = _int_softmax(unit, saturate(scores, sbits), valid)
    exact = u.to(raw.dtype) * 2.0**-PROB_BITS
    prob = _ste(torch.softmax(raw / math.sqrt(dk) + bias, dim=-1), exact)
    prob = _fake_act(prob, pt["attn_prob"], k)
    ctx = (prob @ value).transpose(1, 2).reshape(b, s, h)
    ctx, cc = _act_codes(ctx, pt["attn_out_in"], k)
    h1, h1_int = _int_residual(x, r, ctx, cc, pt["attn_out_in"], layer.attn_out, s_in, spec)
    x1, r1, s_mid = _int_norm(layer.attn_norm, h1, h1_int, spec)
    xf = _fake_act(x1, pt["ffn_expand_in"], k)
    mid = gelu_monotone(_fake_linear(xf, layer.ffn_expand))
    mid, cm = _act_codes(mid, pt["ffn_contract_in"], k)
    h2, h2_int = _int_residual(
        x1, r1, mid, cm, pt["ffn_contract_in"], layer.ffn_contract, s_mid, spec
    )
    return _int_norm(layer.ffn_norm, h2, h2_int, spec)


def block_outputs(
    model: BertEncoder, ids: torch.Tensor, mask: torch.Tensor, k: int | None = None
) -> list[torch.Tensor]:
    """Outputs ``[B, S, H]`` of every block: of the float model (``k=None``) or of the twin
    (in integer mode when the model is: ``model.integer``)."""
    b, s = ids.shape
    pos = torch.arange(s)
    x = (
        model.word_embeddings(ids)
        + model.position_embeddings(pos)[None]
        + model.token_type_embeddings(torch.zeros_like(ids))
    )
    spec = getattr(model, "integer", None)
    if k is not None and spec is not None:
        # the stream's integers from the float64 LayerNorm, as the QNN computes it
        norm = model.embed_norm
        with torch.no_grad():
            # the rows first, then float64 (not the whole vocabulary's table every step)
            x64 = (
                model.word_embeddings.weight[ids].to(torch.float64)
                + model.position_embeddings.weight[pos].to(torch.float64)[None]
                + model.token_type_embeddings.weight[0].to(torch.float64)
            )
            x64 = nn.functional.layer_norm(
                x64, norm.normalized_shape,
                norm.weight.detach().to(torch.float64), norm.bias.detach().to(torch.float64),
                norm.eps,
            )
    x = model.embed_norm(x)
    keep = mask[:, None, None, :].to(torch.bool)
    bias = torch.zeros(keep.shape, dtype=x.dtype).masked_fill(~keep, torch.finfo(x.dtype).min)
    outs = []
    if k is not None and spec is not None:
        s_in = stream_scale(norm.weight.detach(), norm.bias.detach(), spec.residual_bits)
        x, r = _on_stream(x, x64, s_in, spec.residual_bits)
        valid = mask.to(torch.bool)
        for layer in model.layers:
            x, r, s_in = _block_integer(layer, x, r, s_in, bias, valid, k, spec)
            outs.append(x)
        return outs
    for layer in model.layers:
        x = layer(x, bias) if k is None else _block(layer, x, bias, k)
        outs.append(x)
    return outs


def pooled(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over the real tokens, L2-normalised (:func:`networks.bert.mean_pool`)."""
    return mean_pool(hidden, mask)


def twin(qnn: BertEncoder, learn_scales: bool = False) -> BertEncoder:
    """The float32 fake-quant twin of a converted QNN, its trainable parameters marked.

    With ``learn_scales`` every quant point gets a trainable ``log_alpha`` (initialised from
    its calibrated ``alpha``)."""
    if any(p.alpha is None or (p.spike and p.mask is None) for p in qnn.points()):
        raise ValueError("the QNN is not calibrated: convert it with networks.ptq")
    if any(p.smooth is not None for p in qnn.points()):
        raise ValueError("fine-tuning supports the conversion without smoothing (smooth=0)")
    student = copy.deepcopy(qnn)
    student.to(torch.float32)
    student.requires_grad_(False)
    for lin in student.linears():
        lin.weight.data = (lin.w_int.to(torch.float64) * lin.w_scale[:, None]).to(torch.float32)
        lin.scale32 = lin.w_scale.to(torch.float32)
        lin.weight.requires_grad_(True)
        lin.bias.requires_grad_(True)
    for m in student.modules():
        if isinstance(m, nn.LayerNorm):
            m.requires_grad_(True)
    if learn_scales:
        for p in student.points():
            p.log_alpha = nn.Parameter(torch.tensor(math.log(p.alpha), dtype=torch.float32))
    return student


def to_qnn(student: BertEncoder, qnn: BertEncoder) -> BertEncoder:
    """The trained twin rounded back onto the integer contract: a float64 QNN like ``qnn``.

    Weights are re-quantized on the fixed per-channel scales (``round``, the conversion's
    mode); biases and LayerNorm parameters are copied; learned activation scales are written
    to the points' ``alpha`` (else ``qnn``'s stay); the masks (``I_max``, ``k``) are ``qnn``'s.
    """
    from golden_models.codespace import CodeSpace
    from golden_models.quantizer import quantize

    out = copy.deepcopy(qnn)
    for lin_s, lin_q in zip(student.linears(), out.linears(), strict=True):
        space = CodeSpace(2**lin_q.weight_bits, "sym")
        w = lin_s.weight.detach().to(torch.float64)
        lin_q.w_int = quantize(w, lin_q.w_scale[:, None], space, "round")
        lin_q.bias.data = lin_s.bias.detach().to(torch.float64)
        lin_q._w64 = None
    norms_s = [m for m in student.modules() if isinstance(m, nn.LayerNorm)]
    norms_q = [m for m in out.modules() if isinstance(m, nn.LayerNorm)]
    for ns, nq in zip(norms_s, norms_q, strict=True):
        nq.weight.data = ns.weight.detach().to(torch.float64)
        nq.bias.data = ns.bias.detach().to(torch.float64)
    for ps, pq in zip(student.points(), out.points(), strict=True):
        if getattr(ps, "log_alpha", None) is not None:
            pq.alpha = math.exp(float(ps.log_alpha.detach()))
    if out.integer is not None:
        integer_mode_(out, out.integer)  # the integer constants of the new parameters
    return out


def batches(
    lengths: Sequence[int], batch: int, steps: int, seed: int, pool: int = 1
) -> list[list[int]]:
    """Sentence indices of every step: seeded permutations, epoch after epoch.

    With ``pool > 1`` the batches are length-pooled: the order is cut into pools of ``pool *
    batch`` sentences; each pool is sorted by token count (``lengths``), cut into batches, and its
    batches are shuffled. A batch then pads little (a padded batch costs its longest sentence),
    and every sentence is still seen once an epoch. ``pool = 1`` gives plain random batches.
    """
    gen = torch.Generator().manual_seed(seed)
    order: list[int] = []
    out: list[list[int]] = []
    while len(out) < steps:
        while len(order) < pool * batch:
            order += torch.randperm(len(lengths), generator=gen).tolist()
        chunk, order = order[: pool * batch], order[pool * batch :]
        if pool > 1:
            chunk.sort(key=lambda i: lengths[i])
        group = [chunk[i : i + batch] for i in range(0, len(chunk), batch)]
        if pool > 1:
            group = [group[i] for i in torch.randperm(len(group), generator=gen).tolist()]
        out += group
    return out[:steps]


def lr_at(step: int, cfg: FinetuneConfig) -> float:
    """Linear warm-up, then cosine decay to zero."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    t = (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup)
    return cfg.lr * 0.5 * (1 + math.cos(math.pi * t))


def distill_loss(
    student: BertEncoder,
    teacher: BertEncoder,
    ids: torch.Tensor,
    mask: torch.Tensor,
    k: int,
) -> torch.Tensor:
    """Mean block-output MSE over real tokens + ``EMBED_WEIGHT * (1 - cos)`` of the embeddings."""
    with torch.no_grad():
        t_out = block_outputs(teacher, ids, mask)
    s_out = block_outputs(student, ids, mask, k)
    m = mask[..., None].to(torch.float32)
    n = m.sum() * s_out[0].shape[-1]
    mse = sum(((s - t) ** 2 * m).sum() / n for s, t in zip(s_out, t_out, strict=True))
    cos = (pooled(s_out[-1], mask) * pooled(t_out[-1], mask)).sum(1)
    return mse / len(s_out) + EMBED_WEIGHT * (1 - cos).mean()


@dataclass
class TrainLog:
    """Loss at every step and the training time."""

    losses: list[float]
    seconds: float


def train(
    teacher: BertEncoder,
    qnn: BertEncoder,
    tokenizer: Tokenizer,
    sentences: Sequence[str],
    cfg: FinetuneConfig,
    progress: Callable[[int, float], None] | None = None,
) -> tuple[BertEncoder, TrainLog]:
    """Fine-tune ``qnn`` at radius ``cfg.k`` on ``sentences``; return the new QNN and the log.

    Deterministic: the data order comes from ``cfg.seed``, torch's seed is set, and the run
    uses ``cfg.threads`` intra-op threads (restored afterwards).
    """
    if len(sentences) < cfg.batch:
        raise ValueError(
            f"fine-tuning needs at least batch={cfg.batch} training sentences, not {len(sentences)}"
        )
    saved = torch.get_num_threads()
    torch.set_num_threads(cfg.threads)
    try:
        torch.manual_seed(cfg.seed)
        student = twin(qnn, learn_scales=cfg.scale_lr > 0)
        scales = [
            p.log_alpha for p in student.points() if getattr(p, "log_alpha", None) is not None
        ]
        chosen = {id(p) for p in scales}
        params = [p for p in student.parameters() if p.requires_grad and id(p) not in chosen]
        groups = [{"params": params, "weight_decay": cfg.weight_decay, "ratio": 1.0}]
        if scales:
            groups.append({"params": scales, "weight_decay": 0.0, "ratio": cfg.scale_lr / cfg.lr})
        opt = torch.optim.AdamW(groups, lr=cfg.lr)
        teacher = copy.deepcopy(teacher).to(torch.float32).eval()
        losses = []
        start = time.perf_counter()
        lengths = [int(tokenizer([t])[1].sum()) for t in sentences]
        order = batches(lengths, cfg.batch, cfg.steps, cfg.seed, cfg.pool)
        for step, idx in enumerate(order):
            for group in opt.param_groups:
                group["lr"] = lr_at(step, cfg) * group["ratio"]
            ids, mask = tokenizer([sentences[i] for i in idx])
            loss = distill_loss(student, teacher, ids, mask, cfg.k)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            if progress is not None:
                progress(step, losses[-1])
        seconds = time.perf_counter() - start
        return to_qnn(student, qnn), TrainLog(losses, seconds)
    finally:
        torch.set_num_threads(saved)
