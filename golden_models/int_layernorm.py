"""Integer LayerNorm: one row of the residual sum in, the next residual stream out
(docs/integer_contract.md, "LayerNorm").

For a row ``h[0..N-1]`` (signed, ``in_bits`` wide) the unit computes, in integers only::

    S1 = sum h            S2 = sum h*h
    U  = N*S2 - S1*S1                       # = N**2 * var(h) >= 0, exact
    k  = (62 - bit_length(U)) // 2          # U * 4**k has 61 or 62 bits (U > 0)
    R  = isqrt(U * 4**k)                    # 2**30 <= R < 2**31: 2**k * N * std(h)
    F  = 2**(P + 31) // R                   # 2**P < F <= 2**(P+1): one division a row
    D  = N*h - S1                           # = N * (h - mean), exact
    n  = rshift_round(D * F, 31 + P - f - k)          # 2**f * (h - mean) / std
    r  = saturate(rshift_round(G*n + (B << (g+f-b)), g + f), out_bits)

with per-channel gains ``G = round(gamma / s_out * 2**g)`` (``GAIN_BITS`` signed) and biases
``B = round(beta / s_out * 2**b)``. The float counterpart is ``(gamma * (h - mean) / std +
beta) / s_out``; :meth:`IntLayerNorm.error_bound` bounds the difference.

Departures from I-BERT (Kim et al., ICML 2021, Algorithm 4 and ``IntLayerNorm`` of the public
code, ``kssteven418/I-BERT``, ``fairseq/quantization/utils/quant_modules.py``): the mean is not
rounded (``D = N*h - S1`` is exact), the variance is the exact ``N*S2 - S1**2`` rather than a sum
of squares shifted to fit 32 bits, the square root is the digit-by-digit ``floor`` (I-BERT's is
Newton's iteration, and its public code calls a float ``sqrt``), and the radicand is normalised
by an even shift so the root always has 31 bits: the relative error of ``1/std`` is below
``2**-P`` whatever the row's spread. ``eps`` is left out: it only matters for a row whose
spread is below the stream's resolution, and ``R >= 2**30`` whenever ``U > 0``; a constant row
(``U = 0``) gives ``D = 0``, hence ``r = round(beta / s_out)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from golden_models.fixed_point import (
    ISQRT_BITS,
    as_int64,
    bit_length,
    isqrt,
    rshift_round,
    saturate,
    signed_limits,
)
from toolkit_base.checks import check_int

#: ``f``: fraction bits of the normalised value ``n``.
NORM_FRAC_BITS = 16
#: ``P``: the reciprocal ``F`` of the root carries ``P + 1`` bits.
RECIP_BITS = 24
#: Signed width of the per-channel gains ``G``.
GAIN_BITS = 24
#: ``b``: fraction bits of the per-channel biases ``B``.
BIAS_FRAC_BITS = 8
#: Bits of the normalised root ``R`` (``2**30 <= R < 2**31``).
ROOT_BITS = ISQRT_BITS // 2
#: Largest row length (bounds every width below 63 bits together with ``in_bits``).
MAX_ROW = 4096


def stream_scale(gamma: torch.Tensor, beta: torch.Tensor, bits: int) -> float:
    """The residual stream's scale after a LayerNorm of gains ``gamma`` and shifts ``beta``.

    A normalised row has ``|(h - mean) / std| <= sqrt(N - 1)`` in every channel, so the output
    never exceeds ``max_i |gamma_i| * sqrt(N - 1) + |beta_i|``; that bound maps onto the largest
    code of a ``bits``-wide stream. No calibration, and the stream cannot overflow (beyond the
    unit's rounding, which :func:`saturate` absorbs).
    """
    check_int("bits", bits, 2, 32)
    g = torch.as_tensor(gamma, dtype=torch.float64).reshape(-1)
    b = torch.as_tensor(beta, dtype=torch.float64).reshape(-1)
    if g.shape != b.shape or not g.numel():
        raise ValueError(f"gamma and beta must have one non-empty shape, not {g.shape}, {b.shape}")
    bound = float((g.abs() * math.sqrt(g.numel() - 1) + b.abs()).max())
    if not math.isfinite(bound):
        raise ValueError(f"gamma and beta must be finite, not a bound of {bound!r}")
    return bound / (2 ** (bits - 1) - 1) if bound > 0 else 1.0


def layernorm_reference(
    h: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor, s_out: float
) -> torch.Tensor:
    """The float counterpart in output units: ``(gamma * (h - mean) / std + beta) / s_out``
    (float64, population ``std``, no ``eps``; a constant row gives ``beta / s_out``)."""
    x = h.to(torch.float64)
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    std = var.sqrt()
    norm = torch.where(std > 0, (x - mean) / torch.where(std > 0, std, 1.0), 0.0)
    return (gamma.to(torch.float64) * norm + beta.to(torch.float64)) / s_out


@dataclass(frozen=True)
class IntLayerNorm:
    """The integer LayerNorm of one row length, its constants derived from a float LayerNorm.

    Parameters
    ----------
    n : int
        Row length ``N`` (the hidden size), 1..4096.
    in_bits : int
        Signed width of the input row (the residual sum).
    out_bits : int
        Signed width of the output (the residual stream); the output saturates there.
    gain : int64 tensor ``[N]``
        ``G = round(gamma / s_out * 2**g)``, ``|G| < 2**(GAIN_BITS - 1)``.
    bias : int64 tensor ``[N]``
        ``B = round(beta / s_out * 2**BIAS_FRAC_BITS)``.
    gain_shift : int
        ``g``.
    """

    n: int
    in_bits: int
    out_bits: int
    gain: torch.Tensor
    bias: torch.Tensor
    gain_shift: int

    def __post_init__(self) -> None:
        check_int("n", self.n, 1, MAX_ROW)
        check_int("out_bits", self.out_bits, 2, 32)
        check_int("in_bits", self.in_bits, 2, 40)
        check_int("gain_shift", self.gain_shift, 0, 40)
        for name in ("gain", "bias"):
            t = as_int64(getattr(self, name), name)
            if tuple(t.shape) != (self.n,):
                raise ValueError(f"{name} must have shape ({self.n},), not {tuple(t.shape)}")
            object.__setattr__(self, name, t)
        if int(self.gain.abs().max()) >= 2 ** (GAIN_BITS - 1):
            top = int(self.gain.abs().max())
            raise ValueError(f"gain must fit {GAIN_BITS} signed bits, not {top}")
        # every intermediate below 2**62 (docs/integer_contract.md, "LayerNorm", widths)
        n, w = self.n, self.in_bits
        if n * n * 4 ** (w - 1) >= 2**ISQRT_BITS:
            raise ValueError(
                f"in_bits={w} with a row of {n} cannot hold the variance N*S2 - S1**2 in "
                f"{ISQRT_BITS} bits; the largest valid in_bits is {self.max_in_bits(n)}"
            )
        if n * 2 ** (w + RECIP_BITS + 1) >= 2**62:
            raise ValueError(f"in_bits={w} with a row of {n}: N*h*F exceeds 62 bits")
        if self.acc_top(n, int(self.bias.abs().max()), self.gain_shift) >= 2**62:
            raise ValueError(
                f"gain_shift={self.gain_shift} and biases up to {int(self.bias.abs().max())} "
                "overflow 62 bits: the output scale is too fine for the LayerNorm's shifts"
            )

    @staticmethod
    def max_in_bits(n: int) -> int:
        """The widest input row of length ``n`` whose variance fits the square root's radicand."""
        w = 2
        while n * n * 4**w < 2**ISQRT_BITS:
            w += 1
        return w

    @property
    def norm_bound(self) -> int:
        """Largest ``|n|`` (:meth:`row_norm_bound` of the row)."""
        return self.row_norm_bound(self.n)

    @staticmethod
    def row_norm_bound(n: int) -> int:
        """Largest ``|n|`` of a row of ``n``: ``2**f * sqrt(N - 1)`` with the reciprocal's
        slack, plus rounding."""
        spread = math.sqrt(max(n - 1, 0)) * (1 + 2**-RECIP_BITS)
        return math.ceil(2**NORM_FRAC_BITS * spread) + 1

    @staticmethod
    def acc_top(n: int, bias_max: int, gain_shift: int) -> int:
        """The bound of ``|G*n + (B << (g+f-b))|`` (the accumulator, which must stay below
        ``2**62``) for a row of ``n``, biases up to ``bias_max`` and shift ``gain_shift``."""
        lift = gain_shift + NORM_FRAC_BITS - BIAS_FRAC_BITS
        return 2 ** (GAIN_BITS - 1) * IntLayerNorm.row_norm_bound(n) + bias_max * 2**lift

    def widths(self) -> dict[str, int]:
        """Register widths (bits) of the unit's intermediates, each from its exact bound.

        Signed: ``in``, ``s1``, ``centred`` (``D``), ``product`` (``D * F``), ``norm``
        (``n``), ``gain``, ``bias``, ``acc`` (``G * n + B'``), ``out``. Unsigned: ``s2``,
        ``variance`` (``U``), ``radicand``, ``root`` (``R``), ``recip`` (``F``).
        """
        n, w = self.n, self.in_bits
        h_max = 2 ** (w - 1)  # the largest |h|
        d_max = (n - 1) * (2**w - 1)
        f_max = 2 ** (RECIP_BITS + 1)
        b_max = int(self.bias.abs().max()) if self.n else 0
        lift = self.gain_shift + NORM_FRAC_BITS - BIAS_FRAC_BITS
        acc_max = (2 ** (GAIN_BITS - 1) - 1) * self.norm_bound + b_max * 2**lift
        return {
            "in": w,
            "s1": (n * h_max).bit_length() + 1,
            "s2": (n * h_max * h_max).bit_length(),
            "variance": (n * n * h_max * h_max).bit_length(),
            "radicand": ISQRT_BITS,
            "root": ROOT_BITS,
            "recip": f_max.bit_length(),
            "centred": d_max.bit_length() + 1,
            "product": (d_max * f_max).bit_length() + 1,
            "norm": self.norm_bound.bit_length() + 1,
            "gain": GAIN_BITS,
            "bias": b_max.bit_length() + 1,
            "acc": acc_max.bit_length() + 1,
            "out": self.out_bits,
        }

    @classmethod
    def from_float(
        cls,
        gamma: torch.Tensor,
        beta: torch.Tensor,
        s_out: float,
        in_bits: int,
        out_bits: int,
    ) -> IntLayerNorm:
        """Constants of the LayerNorm ``gamma * norm(h) + beta`` with output scale ``s_out``.

        ``g`` is the largest shift (at most 40) at which every gain fits ``GAIN_BITS`` and the
        accumulator ``G*n + (B << (g+f-b))`` stays below ``2**62`` (a layer whose gains are
        all zero, or tiny, would otherwise take the cap and lift its biases past 62 bits).

        Raises
        ------
        ValueError
            One line naming the value: a gain too large for ``GAIN_BITS`` at ``g = 0`` (the
            output scale is too coarse), or a bias ``|beta| / s_out`` at or beyond the output
            stream's range ``2**(out_bits-1)`` (the width of the hardware's bias field,
            ``out_bits + b`` signed bits: docs/rtl_units.md).
        """
        gamma = torch.as_tensor(gamma, dtype=torch.float64).reshape(-1)
        beta = torch.as_tensor(beta, dtype=torch.float64).reshape(-1)
        if gamma.shape != beta.shape:
            raise ValueError(f"gamma and beta must have one shape, not {gamma.shape}, {beta.shape}")
        if not (isinstance(s_out, (int, float)) and math.isfinite(s_out) and s_out > 0):
            raise ValueError(f"s_out must be positive and finite, not {s_out!r}")
        ratio = gamma / s_out
        top = float(ratio.abs().max()) if gamma.numel() else 0.0
        if not math.isfinite(top):
            raise ValueError("gamma must be finite")
        g = 40 if top == 0 else min(40, GAIN_BITS - 2 - math.floor(math.log2(top)))
        while g >= 0 and int(torch.round(ratio * 2.0**g).abs().max()) >= 2 ** (GAIN_BITS - 1):
            g -= 1
        if g < 0:
            raise ValueError(
                f"gain |gamma|/s_out up to {top!r} does not fit {GAIN_BITS} signed bits: "
                "the output scale is too coarse"
            )
        check_int("out_bits", out_bits, 2, 32)
        lifted = torch.round(beta / s_out * 2.0**BIAS_FRAC_BITS)
        b_top = float(lifted.abs().max()) if beta.numel() else 0.0
        if not b_top < 2.0 ** (out_bits - 1 + BIAS_FRAC_BITS):
            raise ValueError(
                f"|beta| / s_out up to {b_top / 2**BIAS_FRAC_BITS:.6g} is beyond the output "
                f"stream's range (below 2**{out_bits - 1} = {2 ** (out_bits - 1)})"
            )
        bias = lifted.to(torch.int64)
        b_max = int(b_top)
        while g > 0 and cls.acc_top(int(gamma.numel()), b_max, g) >= 2**62:
            g -= 1
        gain = torch.round(ratio * 2.0**g).to(torch.int64)
        return cls(int(gamma.numel()), in_bits, out_bits, gain, bias, g)

    def __call__(self, h: torch.Tensor) -> torch.Tensor:
        """The output rows ``[..., N]`` (int64) of integer rows ``h [..., N]``."""
        h = as_int64(h, "h")
        if h.dim() == 0 or h.shape[-1] != self.n:
            raise ValueError(f"h must have rows of {self.n}, not shape {tuple(h.shape)}")
        lo, hi = signed_limits(self.in_bits)
        if h.numel() and (int(h.min()) < lo or int(h.max()) > hi):
            raise ValueError(
                f"h must fit {self.in_bits} signed bits ({lo}..{hi}), not "
                f"{int(h.min())}..{int(h.max())}"
            )
        n = self.n
        s1 = h.sum(-1, keepdim=True)
        u = n * (h * h).sum(-1, keepdim=True) - s1 * s1
        k = torch.where(u > 0, (ISQRT_BITS - bit_length(u)) // 2, 0)
        root = isqrt(torch.bitwise_left_shift(u, 2 * k))
        root = torch.where(u > 0, root, 2 ** (ROOT_BITS - 1))  # any value: D = 0 there
        recip = torch.div(2 ** (RECIP_BITS + ROOT_BITS), root, rounding_mode="floor")
        d = n * h - s1
        norm = rshift_round(d * recip, ROOT_BITS + RECIP_BITS - NORM_FRAC_BITS - k)
        lift = self.gain_shift + NORM_FRAC_BITS - BIAS_FRAC_BITS
        acc = self.gain * norm + self.bias * 2**lift
        return saturate(rshift_round(acc, self.gain_shift + NORM_FRAC_BITS), self.out_bits)

    def error_bound(self) -> float:
        """Largest ``|r - clamp(reference)|`` in output units (:func:`layernorm_reference`).

        The final rounding (1/2), the bias's rounding, the rounding of ``n`` times the largest
        gain, the gains' rounding times ``sqrt(N - 1)``, and the relative error of ``1/std``
        (``F`` and ``R`` are floors: below ``2**-P + 2**-30``, with slack) times the largest
        output magnitude.
        """
        g_max = float(self.gain.abs().max())
        spread = math.sqrt(max(self.n - 1, 0))
        scale = 2.0 ** (self.gain_shift + NORM_FRAC_BITS)
        return (
            0.5
            + 2.0 ** -(BIAS_FRAC_BITS + 1)
            + g_max / scale / 2
            + spread * 2.0 ** -(self.gain_shift + 1)
            + g_max / 2.0**self.gain_shift * spread * (2.0**-RECIP_BITS + 2.0**-29)
        )
