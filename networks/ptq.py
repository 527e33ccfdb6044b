"""Post-training conversion of a float BERT encoder into a W4A4 QNN and its M-TTFS masks.

The recipe follows the paper's LLaMA track (training-free, no fine-tuning at any radius):

1. weights: per-output-channel symmetric integers (``weight_bits``, levels ``-2**(b-1) ..
   2**(b-1)-1``), the scale of each channel chosen by a mean-squared-error search over clipping
   ratios of ``max|w| / (2**(b-1)-1)``;
2. activations: one scale per position and block, chosen by a mean-squared-error search over
   clipping ratios of the calibration split's largest magnitude (observed on the model with
   integer weights and float activations), rounding ``"round"`` (docs/design.md, "The
   numerical contract");
3. masks: ``I_max`` of each position and block is the mode of its event-time histogram on the
   calibration split (paper Eq. mttfs_imax; ties go to the earlier time), the dead zone of
   radius ``k`` around it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from golden_models.codespace import CodeSpace
from golden_models.mask import Mask
from golden_models.quantizer import quantize
from networks.bert import CONSUMER, BertEncoder, QuantPoint, Tokenizer

#: Clipping ratios of the activation scale search.
ACT_RATIOS = torch.linspace(0.05, 1.0, 64, dtype=torch.float64)
#: Clipping ratios of the per-channel weight scale search.
WEIGHT_RATIOS = torch.linspace(0.5, 1.0, 26, dtype=torch.float64)
#: Activation samples kept per quant point and sentence for the scale search.
SAMPLES_PER_CALL = 4096
#: Samples per quant point the scale search runs on (a random subset of all kept samples).
MAX_SAMPLES = 65536


@dataclass(frozen=True)
class PTQConfig:
    """Settings of the post-training conversion."""

    weight_bits: int = 4
    act_bits: int = 4
    rounding: str = "round"
    seed: int = 0
    #: SmoothQuant migration strength (0: no smoothing).
    smooth: float = 0.0
    #: Empirical bias correction of the linear layers after the scales are calibrated.
    bias_correction: bool = True

    def __post_init__(self) -> None:
        for name in ("weight_bits", "act_bits"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not 2 <= v <= 8:
                raise ValueError(f"{name} must be an integer in 2..8, not {v!r}")
        if not isinstance(self.smooth, (int, float)) or not 0 <= self.smooth <= 1:
            raise ValueError(f"smooth must be a number in 0..1, not {self.smooth!r}")


def weight_scales(w: torch.Tensor, bits: int, rounding: str = "round") -> torch.Tensor:
    """Per-output-channel scales ``[out]`` of ``w [out, in]`` minimising the squared error.

    The search runs in float32 (it only ranks candidates); the scales returned are float64.
    """
    space = CodeSpace(2**bits, "sym")
    top = w.to(torch.float64).abs().amax(1).clamp(min=1e-12) / space.c
    w32, top32 = w.to(torch.float32), top.to(torch.float32)
    shift = 0.5 if rounding == "round" else 0.0
    best_err = torch.full_like(top32, float("inf"))
    best_r = torch.ones_like(top)
    for r in WEIGHT_RATIOS:
        s = (top32 * float(r))[:, None]
        q = torch.floor(w32 / s + shift).clamp_(space.q_min, space.q_max)
        err = ((q * s - w32) ** 2).sum(1)
        better = err < best_err
        best_r = torch.where(better, r, best_r)
        best_err = torch.where(better, err, best_err)
    return top * best_r


def quantize_weights_(model: BertEncoder, bits: int = 4, rounding: str = "round") -> None:
    """Give every linear layer of the blocks integer weights (in place)."""
    space = CodeSpace(2**bits, "sym")
    for lin in model.linears():
        s = weight_scales(lin.weight, bits, rounding)
        lin.w_int = quantize(lin.weight.to(torch.float64), s[:, None], space, rounding)
        lin.w_scale = s
        lin.weight_bits = bits


def activation_scale(x: torch.Tensor, space: CodeSpace, rounding: str = "round") -> float:
    """The scale of samples ``x`` (1-D) that minimises the squared quantization error."""
    x = x.to(torch.float64).reshape(-1)
    top = float(x.abs().max()) if space.family == "sym" else float(x.clamp(min=0).max())
    if not top > 0:
        return 1.0  # an all-zero (or all-negative asym) position: any scale codes it as 0
    best, best_err = top / space.c, float("inf")
    for r in ACT_RATIOS:
        a = top / space.c * float(r)
        err = float(((quantize(x, a, space, rounding) * a - x) ** 2).mean())
        if err < best_err:
            best, best_err = a, err
    return best


def smooth_(
    model: BertEncoder, tokenizer: Tokenizer, sentences: Sequence[str], strength: float
) -> None:
    """Per-channel smoothing of every linear layer's input (SmoothQuant; in place).

    Input channel ``i`` of a linear layer is divided by ``s_i = max|x_i|**strength /
    max|W[:, i]|**(1 - strength)`` before it is quantized, and the layer's weight column is
    multiplied by ``s_i`` before the weights are quantized: the float function is unchanged, and
    outlier channels move from the activations into the weights. In hardware the division is
    part of the producer (a per-neuron threshold table or the encoder after a LayerNorm), so the
    integer contract of the consuming layer is the same.
    """
    if strength == 0:
        return
    amax: dict[int, torch.Tensor] = {}

    def observe(point: QuantPoint, x: torch.Tensor) -> None:
        m = x.detach().abs().reshape(-1, x.shape[-1]).amax(0).to(torch.float64)
        amax[id(point)] = torch.maximum(amax[id(point)], m) if id(point) in amax else m

    pairs = _consumer_pairs(model)
    for p, _ in pairs:
        p.smooth = None
    _run_hooked(model, tokenizer, sentences, [p for p, _ in pairs], "observer", observe)
    for p, lin in pairs:
        w_max = lin.weight.detach().abs().amax(0).to(torch.float64).clamp(min=1e-8)
        s = (amax[id(p)].clamp(min=1e-8) ** strength / w_max ** (1 - strength)).clamp(min=1e-5)
        p.smooth = s
        lin.weight.data = (lin.weight.to(torch.float64) * s[None, :]).to(lin.weight.dtype)


def _per_sentence(model: BertEncoder, tokenizer: Tokenizer, sentences: Sequence[str]) -> None:
    # one sentence a call: no padding, so every observed value belongs to a real token
    with torch.no_grad():
        for s in sentences:
            ids, mask = tokenizer([s])
            model(ids, mask)


def _run_hooked(
    model: BertEncoder,
    tokenizer: Tokenizer,
    sentences: Sequence[str],
    points: Sequence[QuantPoint],
    hook: str,
    fn: Callable,
) -> None:
    """Run the sentences with ``fn`` as the ``hook`` ("observer" or "recorder") of ``points``.

    The hooks are removed afterwards, also when the run fails, so the model is left clean.
    """
    for p in points:
        setattr(p, hook, fn)
    try:
        _per_sentence(model, tokenizer, sentences)
    finally:
        for p in points:
            setattr(p, hook, None)


def _consumer_pairs(model: BertEncoder) -> list[tuple[QuantPoint, torch.nn.Module]]:
    """Every quant point that feeds a linear layer, with that layer, block by block."""
    return [
        (layer.points[name], getattr(layer, lin))
        for layer in model.layers
        for name, lin in CONSUMER.items()
    ]


def calibrate_scales_(
    model: BertEncoder, tokenizer: Tokenizer, sentences: Sequence[str], cfg: PTQConfig
) -> None:
    """Set the activation scale of every quant point from the float activations (in place)."""
    if not sentences:
        raise ValueError("calibration needs at least one sentence")
    gen = torch.Generator().manual_seed(cfg.seed)
    samples: dict[int, list[torch.Tensor]] = {}

    def observe(point: QuantPoint, x: torch.Tensor) -> None:
        flat = x.detach().reshape(-1)
        if flat.numel() > SAMPLES_PER_CALL:
            idx = torch.randint(flat.numel(), (SAMPLES_PER_CALL,), generator=gen)
            # the largest magnitude sets the search range: keep it
            flat = torch.cat([flat[idx], flat[flat.abs().argmax()].reshape(1)])
        samples.setdefault(id(point), []).append(flat.to(torch.float64))

    points = model.points()
    for p in points:
        p.alpha, p.mask, p.recorder = None, None, None
    _run_hooked(model, tokenizer, sentences, points, "observer", observe)
    for p in points:
        x = torch.cat(samples[id(p)])
        if x.numel() > MAX_SAMPLES:
            top = x[x.abs().argmax()].reshape(1)
            x = torch.cat([x[torch.randperm(x.numel(), generator=gen)[:MAX_SAMPLES]], top])
        p.rounding = cfg.rounding
        p.alpha = activation_scale(x, p.space, cfg.rounding)


def correct_biases_(model: BertEncoder, tokenizer: Tokenizer, sentences: Sequence[str]) -> None:
    """Empirical bias correction of every linear layer fed by a quant point (in place).

    The mean quantization error ``e_i = E[x_i - alpha * q_i]`` of each input channel, measured
    on the calibration split through the quantized network, is pushed through the integer
    weights into the layer's bias: ``b += (s * W) @ e``. Clipping the negative tail of GELU at
    the asymmetric FFN-contract input is the main systematic error this removes. The bias is
    part of the threshold tables, so the integer contract is unchanged.
    """
    err: dict[int, torch.Tensor] = {}
    count: dict[int, int] = {}

    def observe(point: QuantPoint, x: torch.Tensor) -> None:
        xs = x.detach().to(torch.float64)
        if point.smooth is not None:
            xs = xs / point.smooth
        e = xs - quantize(xs, point.alpha, point.space, point.rounding) * point.alpha
        e = e.reshape(-1, x.shape[-1])
        err[id(point)] = err.get(id(point), 0) + e.sum(0)
        count[id(point)] = count.get(id(point), 0) + e.shape[0]

    pairs = _consumer_pairs(model)
    _run_hooked(model, tokenizer, sentences, [p for p, _ in pairs], "observer", observe)
    for p, lin in pairs:
        mean_err = err[id(p)] / count[id(p)]
        w = lin.w_int.to(torch.float64) * lin.w_scale[:, None]
        lin.bias.data = (lin.bias.to(torch.float64) + w @ mean_err).to(lin.bias.dtype)


def code_histograms(
    model: BertEncoder, tokenizer: Tokenizer, sentences: Sequence[str]
) -> dict[tuple[int, str], torch.Tensor]:
    """Event-time histograms ``[T]`` (pre-mask) of every spike-encoded point, per sentence run."""
    hist: dict[tuple[int, str], torch.Tensor] = {}

    def record(point: QuantPoint, q: torch.Tensor, n_events: int) -> None:
        tau = (point.space.c - q).reshape(-1)
        h = torch.bincount(tau, minlength=point.space.T)
        key = (point.block, point.name)
        hist[key] = hist.get(key, 0) + h

    _run_hooked(model, tokenizer, sentences, model.spike_points(), "recorder", record)
    return hist


def calibrate_masks_(
    model: BertEncoder, tokenizer: Tokenizer, sentences: Sequence[str]
) -> dict[tuple[int, str], torch.Tensor]:
    """Set ``I_max`` of every spike-encoded point to its calibration mode, ``k = 0`` (in place).

    Returns the calibration histograms.
    """
    set_masks_(model, None)
    hist = code_histograms(model, tokenizer, sentences)
    for p in model.spike_points():
        i_max = int(torch.argmax(hist[(p.block, p.name)]))  # first maximum: earlier time
        p.mask = Mask(p.space, i_max, 0)
    return hist


def set_masks_(model: BertEncoder, k: int | None) -> None:
    """Dead-zone radius ``k`` at every spike-encoded point (keeping ``I_max``); None: no mask."""
    for p in model.spike_points():
        if k is None:
            p.mask = None
        else:
            if p.mask is None:
                raise ValueError("masks are not calibrated; call calibrate_masks_ first")
            p.mask = Mask(p.space, p.mask.i_max, k)


def convert(
    float_model: BertEncoder,
    tokenizer: Tokenizer,
    calibration: Sequence[str],
    cfg: PTQConfig | None = None,
) -> BertEncoder:
    """A float64 W4A4 QNN copy of ``float_model`` with calibrated scales and ``k = 0`` masks.

    The QNN runs in float64 so that every linear layer evaluates exactly the affine map its
    integer form (:class:`golden_models.integer_layer.IntegerLayer`) inverts.
    """
    cfg = cfg or PTQConfig()
    qnn = copy.deepcopy(float_model).to(torch.float64)
    for p in qnn.points():
        p.space = CodeSpace(2**cfg.act_bits, p.space.family)
    smooth_(qnn, tokenizer, calibration, cfg.smooth)
    quantize_weights_(qnn, cfg.weight_bits, cfg.rounding)
    calibrate_scales_(qnn, tokenizer, calibration, cfg)
    if cfg.bias_correction:
        correct_biases_(qnn, tokenizer, calibration)
    calibrate_masks_(qnn, tokenizer, calibration)
    return qnn
