"""Operand streams from the golden model, and the toggle statistics OpenSTA is given.

OpenSTA 2.0.17 has no ``read_vcd``/``read_saif``: switching activity enters as
``set_power_activity -activity A -duty D`` per port or pin, ``A`` in transitions per clock.
The figures given to it are measured here, on operand streams that the golden model
produces, not guessed:

- activation codes: heavy-tailed (Laplace) pre-activations quantized by
  :func:`golden_models.quantize` (round to nearest) at the scale that puts the paper's
  measured silent mass on code 0 (the mean of ``p(q=0)`` over the six symmetric spike-encoded
  positions of the SST-2 source QNN, paper Table "silent mass": 0.3715);
- 1-bit weights: ``+-1``, the sign of Gaussian weights (balanced);
- membranes and threshold tables: one :class:`golden_models.IntegerLayer` at the linear fan-in,
  its inputs M-TTFS encoded with :meth:`golden_models.Mask.at_zero` and dead zone ``k``, its
  thresholds from :func:`golden_models.threshold_table`; the compare stream is the
  ``(V, theta[t])`` pairs the fire phase evaluates (``t = 0 .. min(tau, T-2)``, the golden
  ``Counters.compare_ops``);
- encoder: codes of ``T`` levels, times and mask from :func:`golden_models.event_time` and
  :meth:`golden_models.Mask.transmitted`.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
import torch

from golden_models import CodeSpace, IntegerLayer, Mask, encode_events, quantize, threshold_table
from golden_models.mttfs import event_time, folded_init
from golden_models.quantizer import level_of

#: p(q=0) of the symmetric spike-encoded positions, SST-2 source QNN (paper, Table silent mass).
P_ZERO_SYM_SST2 = {
    "Q-proj. input": 0.264,
    "K-proj. input": 0.264,
    "V-proj. input": 0.293,
    "Query activation": 0.2,
    "Attn.-out. input": 0.878,
    "FFN-expand input": 0.33,
}
#: Default silent mass of the activation streams: the mean of :data:`P_ZERO_SYM_SST2`.
P_ZERO = round(sum(P_ZERO_SYM_SST2.values()) / len(P_ZERO_SYM_SST2), 4)
#: Operations per stream (clock cycles the statistics are taken over).
STREAM_LENGTH = 4096
#: Output neurons of the golden layer that feeds the compare, subtract and clamp streams.
LAYER_OUTPUTS = 256
#: Seed of every stream (the statistics, hence the report, are deterministic).
SEED = 20240611


@dataclass(frozen=True)
class BitActivity:
    """Toggle rate (transitions per clock) and duty (fraction of clocks at 1) of one bit."""

    activity: float
    duty: float


def wrap(values: np.ndarray, width: int) -> np.ndarray:
    """Two's complement wrap of integers to ``width`` bits (what a ``width``-bit register holds)."""
    v = np.asarray(values, dtype=np.int64)
    half = 1 << (width - 1)
    return ((v + half) % (1 << width)) - half


def bit_activity(values: np.ndarray, width: int) -> list[BitActivity]:
    """Per-bit toggle rate and duty of a register holding ``values`` clock after clock.

    Bit ``i`` of the list is bit ``i`` of the register (LSB first). Values are taken modulo
    ``2**width``, so signed values give their two's complement bits.
    """
    v = np.asarray(values, dtype=np.int64)
    if v.ndim != 1 or v.size < 2:
        raise ValueError(f"a stream needs at least 2 values, not {v.size}")
    out = []
    for i in range(width):
        # arithmetic shift: bits above 63 of an int64 repeat its sign, as a wider register would
        bits = (v >> min(i, 63)) & 1
        toggles = int(np.count_nonzero(bits[1:] != bits[:-1]))
        out.append(BitActivity(round(toggles / (v.size - 1), 6), round(float(bits.mean()), 6)))
    return out


def _generator(salt: int) -> torch.Generator:
    gen = torch.Generator()
    gen.manual_seed(SEED + salt)
    return gen


def laplace_alpha(p_zero: float) -> float:
    """Quantizer scale that gives a unit Laplace variable ``p(q=0) = p_zero`` under rounding.

    ``P(|a| < alpha/2) = 1 - exp(-alpha/2)`` for ``a ~ Laplace(0, 1)``.
    """
    if not 0.0 < p_zero < 1.0:
        raise ValueError(f"p_zero must be in (0, 1), not {p_zero!r}")
    return -2.0 * math.log1p(-p_zero)


def activation_codes(space: CodeSpace, n: int, p_zero: float, salt: int) -> torch.Tensor:
    """``n`` codes of ``space`` peaked at zero with silent mass ``p_zero`` (int64 tensor)."""
    u = torch.rand(n, generator=_generator(salt), dtype=torch.float64) - 0.5
    a = -torch.sign(u) * torch.log1p(-2.0 * u.abs())  # inverse CDF of Laplace(0, 1)
    return quantize(a, laplace_alpha(p_zero), space, rounding="round")


def event_stream(space: CodeSpace, k: int, n_in: int, salt: int) -> tuple[np.ndarray, np.ndarray]:
    """Golden events ``(addr, time)`` of M-TTFS encoded codes (:func:`activation_codes`, dead
    zone ``k`` at zero), vectors until :data:`STREAM_LENGTH` events, cut to that length."""
    mask = Mask.at_zero(space, k)
    idx, tim = [], []
    v = 0
    while sum(map(len, idx)) < STREAM_LENGTH:
        q = activation_codes(space, n_in, P_ZERO, salt=salt + v)
        i, t = encode_events(q, mask)
        idx.append(i.numpy())
        tim.append(t.numpy())
        v += 1
    return np.concatenate(idx)[:STREAM_LENGTH], np.concatenate(tim)[:STREAM_LENGTH]


def binary_weights(shape: tuple[int, ...], salt: int) -> torch.Tensor:
    """``+-1`` weights: the sign of Gaussian weights (int64 tensor)."""
    w = torch.randn(shape, generator=_generator(salt), dtype=torch.float64)
    return torch.where(w >= 0, 1, -1).to(torch.int64)


@dataclass(frozen=True)
class LayerStreams:
    """What one golden layer gives the fire-phase operators."""

    v: np.ndarray  # compare-stream membranes, one per compare op
    theta: np.ndarray  # compare-stream thresholds
    levels: np.ndarray  # pre-clip output levels (the clamp's input), one per neuron
    compare_ops: int
    events_in: int
    transmitted_fraction: float


@functools.lru_cache(maxsize=8)
def layer_streams(T: int, k: int, fan_in: int, p_zero: float, vectors: int = 4) -> LayerStreams:
    """Run a golden M-TTFS layer ``fan_in -> LAYER_OUTPUTS`` on ``vectors`` input vectors.

    Cached: the operand streams and the report's summary use the same run (do not modify the
    returned arrays).
    """
    space = CodeSpace(T, "sym")
    in_mask = Mask.at_zero(space, k)
    out_mask = Mask.at_zero(space, k)
    weights = binary_weights((fan_in, LAYER_OUTPUTS), salt=11)
    codes = activation_codes(space, fan_in * vectors, p_zero, salt=12).reshape(vectors, fan_in)
    # Scale the membrane to a unit pre-activation and place the output quantizer so that the
    # output codes carry the same silent mass as the inputs (round to nearest).
    v_all = torch.stack([in_mask.project(c) for c in codes]).to(torch.float64) @ weights.to(
        torch.float64
    )
    sigma = float(v_all.std()) or 1.0
    scale = torch.full((LAYER_OUTPUTS,), 1.0 / sigma, dtype=torch.float64)
    bias = torch.zeros(LAYER_OUTPUTS, dtype=torch.float64)
    alpha_out = 2.0 * float(torch.special.ndtri(torch.tensor((1.0 + p_zero) / 2.0)))
    layer = IntegerLayer(
        weights=weights,
        weight_bits=1,
        init=folded_init(weights, in_mask.mu),
        theta=torch.zeros(LAYER_OUTPUTS, T - 1, dtype=torch.int64),
        in_mask=in_mask,
        out_mask=out_mask,
    )
    theta = threshold_table(
        scale, bias, alpha_out, space, rounding="round", v_range=layer.v_range()
    )
    layer = IntegerLayer(weights, 1, layer.init, theta, in_mask, out_mask)
    v_cmp, th_cmp, levels = [], [], []
    compares = events = transmitted = 0
    for c in codes:
        res = layer.run_codes(c)
        compares += res.counters.compare_ops
        events += res.counters.events_in
        transmitted += res.counters.events_out
        for j in range(LAYER_OUTPUTS):
            steps = min(int(res.tau[j]) + 1, T - 1)
            v_cmp.extend([int(res.v[j])] * steps)
            th_cmp.extend(int(x) for x in theta[j, :steps])
        pre = level_of((bias + scale * res.v.to(torch.float64)) / alpha_out, "round")
        levels.extend(int(x) for x in pre)
    return LayerStreams(
        v=np.asarray(v_cmp, dtype=np.int64),
        theta=np.asarray(th_cmp, dtype=np.int64),
        levels=np.asarray(levels, dtype=np.int64),
        compare_ops=compares,
        events_in=events,
        transmitted_fraction=transmitted / (vectors * LAYER_OUTPUTS),
    )


def _fit(values: np.ndarray, n: int) -> np.ndarray:
    """``n`` values: ``values`` repeated (or cut) to length ``n``."""
    reps = -(-n // values.size)
    return np.tile(values, reps)[:n]


def operand_streams(
    T: int, k: int, fan_in: int, p_zero: float = P_ZERO, n: int = STREAM_LENGTH
) -> dict[str, dict[str, np.ndarray]]:
    """Input-port streams of every operator (``{operator: {port: values}}``), ``n`` clocks each.

    Values are the integers the ports carry (signed codes as signed integers; a 1-bit weight as
    bit 1 for ``+1`` and 0 for ``-1``).
    """
    s16 = CodeSpace(16, "sym")
    sT = CodeSpace(T, "sym")
    w = binary_weights((n,), salt=1)
    wbit = ((w + 1) // 2).numpy()
    q4 = activation_codes(s16, n, p_zero, salt=2).numpy()
    q4b = activation_codes(s16, n, p_zero, salt=3).numpy()
    q2 = activation_codes(CodeSpace(4, "sym"), n, p_zero, salt=4).numpy()
    qT = activation_codes(sT, n, p_zero, salt=5)
    lay = layer_streams(T, k, fan_in, p_zero)
    return {
        "acc1": {"x": wbit},
        "acc2": {"x": q2},
        "acc4": {"x": q4},
        "mac4": {"w": wbit, "a": q4},
        "mac4x4": {"a": q4, "b": q4b},
        "cmp": {"v": _fit(lay.v, n), "theta": _fit(lay.theta, n)},
        "sub": {"v": _fit(lay.v, n), "theta": _fit(lay.theta, n)},
        "clamp4": {"x": _fit(lay.levels, n)},
        "enc": {"q": qT.numpy()},
    }


def encoder_outputs(q: np.ndarray, T: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Golden encoder: event times and transmitted flags of codes ``q`` (mask at zero, ``k``)."""
    mask = Mask.at_zero(CodeSpace(T, "sym"), k)
    tau = event_time(torch.as_tensor(q, dtype=torch.int64), mask.space)
    return tau.numpy(), mask.transmitted(tau).numpy().astype(np.int64)
