"""The residual add: a tile's integer sums enter the residual stream (docs/integer_contract.md,
"Residual add").

The attention-output projection and the second FFN layer do not fire codes: their integer sums
``V[j]`` (the membranes, ``sum_i W[i, j] * qbar[i]``) join the residual stream ``r`` (scale
``s``). The layer's real output is ``bias[j] + scale[j] * V[j]`` (``scale = s_w[j] * alpha_in``),
so in stream units::

    add[j] = rshift_round(M[j] * V[j] + (B[j] << (S - b)), S)   # ~ (bias + scale * V) / s
    h[j]   = saturate(r[j] + add[j], sum_bits)

with per-channel multipliers ``M = round(scale / s * 2**S)`` (``MULT_BITS`` unsigned, one shift
``S`` for the layer) and biases ``B = round(bias / s * 2**b)`` (``b = BIAS_FRAC_BITS``). ``h``
is the LayerNorm's input; its width ``sum_bits`` is the stream's plus guard bits, and the
register saturates.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from golden_models.fixed_point import (
    as_int64,
    fixed_multiplier,
    rshift_round,
    saturate,
    signed_limits,
)
from toolkit_base.checks import check_int

#: Unsigned width of the per-channel multipliers ``M``.
MULT_BITS = 24
#: ``b``: fraction bits of the per-channel biases ``B``.
BIAS_FRAC_BITS = 8


def residual_reference(
    r: torch.Tensor, v: torch.Tensor, scale: torch.Tensor, bias: torch.Tensor, s: float
) -> torch.Tensor:
    """The float counterpart in stream units: ``r + (bias + scale * V) / s`` (float64)."""
    return r.to(torch.float64) + (
        bias.to(torch.float64) + scale.to(torch.float64) * v.to(torch.float64)
    ) / s


@dataclass(frozen=True)
class ResidualAdd:
    """One residual add: constants of one layer and the widths of its streams.

    Parameters
    ----------
    stream_bits : int
        Signed width of the residual stream ``r``.
    sum_bits : int
        Signed width of the saturating sum ``h`` (at least ``stream_bits``).
    acc_bound : int
        Largest ``|V|`` the layer's sums can reach (``accumulator_bound`` of its tile).
    mult : int64 tensor ``[N]``
        ``M``, ``0 <= M < 2**MULT_BITS``.
    bias : int64 tensor ``[N]``
        ``B``, with ``BIAS_FRAC_BITS`` fraction bits.
    shift : int
        ``S >= BIAS_FRAC_BITS``.
    """

    stream_bits: int
    sum_bits: int
    acc_bound: int
    mult: torch.Tensor
    bias: torch.Tensor
    shift: int

    def __post_init__(self) -> None:
        check_int("stream_bits", self.stream_bits, 2, 32)
        check_int("sum_bits", self.sum_bits, self.stream_bits, 40)
        check_int("acc_bound", self.acc_bound, 1, 2**36)
        check_int("shift", self.shift, BIAS_FRAC_BITS, 60)
        mult, bias = as_int64(self.mult, "mult"), as_int64(self.bias, "bias")
        if mult.dim() != 1 or bias.shape != mult.shape:
            raise ValueError(f"mult and bias must be one 1-D shape, not {mult.shape}, {bias.shape}")
        if mult.numel() and (int(mult.min()) < 0 or int(mult.max()) >= 2**MULT_BITS):
            raise ValueError(f"mult must be in 0..2**{MULT_BITS}-1")
        b_max = int(bias.abs().max()) if bias.numel() else 0
        if self.acc_top(self.acc_bound, b_max, self.shift) >= 2**62:
            raise ValueError(
                f"M * V + B overflows 62 bits (shift {self.shift}, sums up to {self.acc_bound})"
            )
        object.__setattr__(self, "mult", mult)
        object.__setattr__(self, "bias", bias)

    @staticmethod
    def acc_top(acc_bound: int, bias_max: int, shift: int) -> int:
        """The bound of ``|M*V + (B << (S-b))|`` (the accumulator, which must stay below
        ``2**62``) for sums up to ``acc_bound``, biases up to ``bias_max`` and shift ``S``."""
        return 2**MULT_BITS * acc_bound + bias_max * 2 ** (shift - BIAS_FRAC_BITS)

    @classmethod
    def from_float(
        cls,
        scale: torch.Tensor,
        bias: torch.Tensor,
        s_stream: float,
        stream_bits: int,
        sum_bits: int,
        acc_bound: int,
    ) -> ResidualAdd:
        """The add of a layer whose real output is ``bias + scale * V``, into a stream of scale
        ``s_stream``.

        ``S`` is the largest shift at which every multiplier fits ``MULT_BITS``, at most
        ``61 - MULT_BITS - bit_length(acc_bound)`` and small enough that the accumulator
        ``M*V + (B << (S-b))`` stays below ``2**62`` (a near-zero scale would otherwise take
        the largest shift and lift the biases past 62 bits).

        Raises
        ------
        ValueError
            One line naming the value: a ratio ``scale / s_stream`` too large for a
            ``MULT_BITS`` multiplier at ``S = b``, or a bias ``|bias| / s_stream`` at or beyond
            ``2**sum_bits`` (twice the sum's range: the width of the hardware's bias field,
            ``sum_bits + b + 1`` signed bits, docs/rtl_units.md).
        """
        if not (isinstance(s_stream, (int, float)) and math.isfinite(s_stream) and s_stream > 0):
            raise ValueError(f"s_stream must be positive and finite, not {s_stream!r}")
        # a shift of at least b within 61 - MULT_BITS - bit_length(acc_bound) (below)
        check_int("acc_bound", acc_bound, 1, 2 ** (61 - MULT_BITS - BIAS_FRAC_BITS) - 1)
        scale = torch.as_tensor(scale, dtype=torch.float64).reshape(-1)
        bias = torch.as_tensor(bias, dtype=torch.float64).reshape(-1)
        check_int("sum_bits", sum_bits, 2, 40)
        lifted = torch.round(bias / s_stream * 2.0**BIAS_FRAC_BITS)
        b_top = float(lifted.abs().max()) if bias.numel() else 0.0
        if not b_top < 2.0 ** (sum_bits + BIAS_FRAC_BITS):
            raise ValueError(
                f"|bias| / s_stream up to {b_top / 2**BIAS_FRAC_BITS:.6g} is beyond twice the "
                f"sum's range (below 2**{sum_bits} = {2**sum_bits})"
            )
        b_max = int(b_top)
        max_shift = 61 - MULT_BITS - int(acc_bound).bit_length()
        while max_shift > BIAS_FRAC_BITS and cls.acc_top(acc_bound, b_max, max_shift) >= 2**62:
            max_shift -= 1
        mult, shift = fixed_multiplier(
            scale / s_stream, MULT_BITS, min_shift=BIAS_FRAC_BITS, max_shift=max_shift
        )
        return cls(stream_bits, sum_bits, acc_bound, mult, lifted.to(torch.int64), shift)

    def widths(self) -> dict[str, int]:
        """Register widths (bits, all signed but ``mult``): the stream, the layer's sums, the
        multipliers, the biases, ``M * V + B'``, and the saturating sum."""
        b_max = int(self.bias.abs().max()) if self.bias.numel() else 0
        acc = (2**MULT_BITS - 1) * self.acc_bound + b_max * 2 ** (self.shift - BIAS_FRAC_BITS)
        return {
            "stream": self.stream_bits,
            "sum_in": self.acc_bound.bit_length() + 1,
            "mult": MULT_BITS,
            "bias": b_max.bit_length() + 1,
            "acc": acc.bit_length() + 1,
            "sum": self.sum_bits,
        }

    def __call__(self, r: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """``h = saturate(r + add(V), sum_bits)`` for stream rows ``r`` and sums ``v``
        (``[..., N]``)."""
        r, v = as_int64(r, "r"), as_int64(v, "v")
        n = self.mult.numel()
        if r.shape != v.shape or r.dim() == 0 or r.shape[-1] != n:
            raise ValueError(f"r and v must be one shape [..., {n}], not {r.shape}, {v.shape}")
        lo, hi = signed_limits(self.stream_bits)
        if r.numel() and (int(r.min()) < lo or int(r.max()) > hi):
            raise ValueError(f"r must fit {self.stream_bits} signed bits ({lo}..{hi})")
        if v.numel() and int(v.abs().max()) > self.acc_bound:
            raise ValueError(f"v must lie in -{self.acc_bound}..{self.acc_bound}")
        acc = self.mult * v + self.bias * 2 ** (self.shift - BIAS_FRAC_BITS)
        return saturate(r + rshift_round(acc, self.shift), self.sum_bits)

    def error_bound(self, v: torch.Tensor) -> torch.Tensor:
        """Largest ``|h - clamp(reference)|`` at sums ``v``: the rounding (1/2), the multipliers'
        rounding (``|V| / 2**(S+1)``) and the bias's (``2**-(b+1)``)."""
        return 0.5 + v.abs().to(torch.float64) / 2.0 ** (self.shift + 1) + 2.0 ** -(
            BIAS_FRAC_BITS + 1
        )
