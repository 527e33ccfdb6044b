"""Integer softmax: one row of raw attention scores in, probabilities in fixed point out
(docs/integer_contract.md, "Softmax").

The scores are the raw integer sums of the query x key tile, ``A = sum_d Q[d] * K[d]``; the
real score is ``c * A`` with ``c = alpha_query * alpha_key / sqrt(d_k)``. For a row ``A[0..L-1]``
and its padding mask ``valid`` the unit computes, in integers only::

    m    = max over valid j of A[j]                 # first pass over the buffered row
    z    = m - A                                    # >= 0
    t    = rshift_round(z * M, S)                   # ~ z * c * log2(e) * 2**Ft  (M: 16 bits)
    i, f = t >> Ft, t & (2**Ft - 1)                 # integer and fraction of the exponent
    e    = EXP2[f] >> i   if valid and i <= E else 0     # 2**E * 2**(-t / 2**Ft)
    sum  = sum over j of e                          # >= 2**E: the maximum contributes 2**E
    rcp  = 2**Pd // sum                             # one division a row
    u    = rshift_round(e * rcp, Pd - Pu)           # probability * 2**Pu, 0..2**Pu

``EXP2[f] = round(2**E * 2**(-f / 2**Ft))`` for ``f = 0 .. 2**Ft - 1`` is the unit's only table
(:func:`exp2_table`; ``E = EXP_BITS``). The attention-probability codes are a threshold walk over
``u`` (``threshold_table`` with scale ``2**-Pu``), like every other requantization.

Sources and departures. The base-2 exponential and the split of the exponent into an integer
shift and a fraction follow Softermax (Stevens et al., DAC 2021), which folds ``log2(e)`` into the
score scale; here it is folded into the one fixed-point multiplier ``M`` together with both
activation scales and ``1/sqrt(d_k)``. Softermax approximates ``2**(-f)`` piecewise linearly
and keeps an online running maximum; this unit reads ``2**(-f)`` from a table of ``2**Ft``
entries and takes the maximum in a first pass over the buffered row (the row is buffered anyway:
every probability waits for the row's sum), so the result is a function of the row alone,
independent of the order in which the scores arrive. I-BERT (Kim et al., ICML 2021, i-exp,
Algorithm 2; ``IntSoftmax`` of the public code, ``kssteven418/I-BERT``) also splits the exponent
at ``ln 2`` but evaluates the fraction by a second-order polynomial; its normalisation
(``floor(2**32 / sum)``, then a product and a shift) is the one used here, with ``Pd`` sized
from the longest row so the reciprocal keeps ``Pu + 2`` bits.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from golden_models.fixed_point import as_int64, fixed_multiplier, rshift_round, signed_limits
from toolkit_base.checks import check_int

#: ``E``: ``EXP2[0] = 2**E``; a table entry has ``E + 1`` bits.
EXP_BITS = 15
#: ``Pu``: fraction bits of the output probability ``u``.
PROB_BITS = 16
#: Width of the score multiplier ``M`` (``2**15 <= M < 2**16``).
MULT_BITS = 16
#: Largest row the unit may be built for.
MAX_ROW = 4096


def exp2_table(frac_bits: int) -> torch.Tensor:
    """``EXP2[f] = round(2**E * 2**(-f / 2**frac_bits))``, ``f = 0 .. 2**frac_bits - 1`` (int64).

    The table is the definition: the RTL holds these integers. Rounding half up of float64
    values that are never within ``1e-9`` of a half (checked), so the table is reproducible.
    """
    check_int("frac_bits", frac_bits, 1, 12)
    f = torch.arange(2**frac_bits, dtype=torch.float64)
    exact = 2.0**EXP_BITS * torch.exp2(-f / 2**frac_bits)
    if bool(((exact - torch.floor(exact) - 0.5).abs() < 1e-9).any()):
        raise ValueError("an EXP2 entry lies on a rounding tie")  # never, for 1..12 bits
    return torch.floor(exact + 0.5).to(torch.int64)


def recip_bits(row_max: int) -> int:
    """``Pd``: the reciprocal ``2**Pd // sum`` keeps ``Pu + 2`` bits for a sum up to
    ``row_max * 2**E``."""
    return EXP_BITS + math.ceil(math.log2(max(row_max, 2))) + PROB_BITS + 2


def softmax_reference(scores: torch.Tensor, valid: torch.Tensor, scale: float) -> torch.Tensor:
    """The float counterpart: ``softmax(scale * A)`` over the valid entries (float64), 0 at
    the others and in rows without a valid entry."""
    x = scores.to(torch.float64) * scale
    x = x.masked_fill(~valid, -math.inf)
    top = x.amax(-1, keepdim=True)
    top = torch.where(torch.isfinite(top), top, 0.0)
    e = torch.exp(x - top)
    total = e.sum(-1, keepdim=True)
    return torch.where(total > 0, e / torch.where(total > 0, total, 1.0), 0.0)


@dataclass(frozen=True)
class IntSoftmax:
    """The integer softmax of one score scale, row length and score width.

    Parameters
    ----------
    row_max : int
        Longest row the unit takes (the model's longest sequence).
    score_bits : int
        Signed width of the raw scores.
    frac_bits : int
        ``Ft``: fraction bits of the exponent; the table has ``2**Ft`` entries.
    mult, shift : int
        ``M`` and ``S`` of ``t = rshift_round(z * M, S)``.
    """

    row_max: int
    score_bits: int
    frac_bits: int
    mult: int
    shift: int

    def __post_init__(self) -> None:
        check_int("row_max", self.row_max, 1, MAX_ROW)
        check_int("score_bits", self.score_bits, 2, 24)
        check_int("frac_bits", self.frac_bits, 1, 12)
        check_int("mult", self.mult, 0, 2**MULT_BITS - 1)
        check_int("shift", self.shift, 0, 62 - self.score_bits - MULT_BITS)
        object.__setattr__(self, "_table", exp2_table(self.frac_bits))

    @classmethod
    def from_scale(
        cls, scale: float, row_max: int, score_bits: int, frac_bits: int = 6
    ) -> IntSoftmax:
        """The unit for real scores ``scale * A``: ``M / 2**S ~= scale * log2(e) * 2**Ft``."""
        if not (isinstance(scale, (int, float)) and math.isfinite(scale) and scale > 0):
            raise ValueError(f"scale must be positive and finite, not {scale!r}")
        check_int("score_bits", score_bits, 2, 24)
        check_int("frac_bits", frac_bits, 1, 12)
        m, s = fixed_multiplier(
            scale * math.log2(math.e) * 2**frac_bits,
            MULT_BITS,
            max_shift=62 - score_bits - MULT_BITS,
        )
        return cls(row_max, score_bits, frac_bits, int(m), s)

    @property
    def table(self) -> torch.Tensor:
        """``EXP2`` (:func:`exp2_table`)."""
        return self._table  # type: ignore[attr-defined]

    @property
    def recip_bits(self) -> int:
        return recip_bits(self.row_max)

    @property
    def scale(self) -> float:
        """The real score scale the constants stand for: ``M / 2**(S + Ft) / log2(e)``."""
        return self.mult / 2.0 ** (self.shift + self.frac_bits) / math.log2(math.e)

    def widths(self) -> dict[str, int]:
        """Register widths (bits) of the unit's intermediates; ``signed`` ones carry a sign.

        ``score`` (signed) and ``z`` (unsigned: ``0 <= z < 2**score_bits``), the product
        ``z * M``, the saturated exponent ``t`` (``t >= (E + 1) * 2**Ft`` gives ``e = 0``), an
        exponential ``e <= 2**E``, the row's ``sum <= row_max * 2**E``, the reciprocal
        ``rcp <= 2**(Pd - E)``, ``e * rcp <= 2**Pd``, and ``u <= 2**Pu``.
        """
        pd = self.recip_bits
        return {
            "score": self.score_bits,
            "z": self.score_bits,
            "z_times_mult": self.score_bits + MULT_BITS,
            "exponent": ((EXP_BITS + 1) * 2**self.frac_bits).bit_length(),
            "exp": EXP_BITS + 1,
            "sum": (self.row_max * 2**EXP_BITS).bit_length(),
            "recip": (2 ** (pd - EXP_BITS)).bit_length(),
            "product": (2**pd).bit_length(),
            "prob": PROB_BITS + 1,
        }

    def __call__(self, scores: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """Probabilities ``u`` (int64, ``2**Pu`` is one) of score rows ``[..., L]``.

        ``valid`` (bool, broadcastable to the scores) marks the keys that take part; the others
        get ``u = 0``, as does every entry of a row without a valid key.
        """
        a = as_int64(scores, "scores")
        if a.dim() == 0:
            raise ValueError("scores must have a row dimension")
        if a.shape[-1] > self.row_max:
            raise ValueError(
                f"row length {a.shape[-1]} exceeds the unit's row_max={self.row_max}"
            )
        lo, hi = signed_limits(self.score_bits)
        if a.numel() and (int(a.min()) < lo or int(a.max()) > hi):
            raise ValueError(
                f"scores must fit {self.score_bits} signed bits ({lo}..{hi}), not "
                f"{int(a.min())}..{int(a.max())}"
            )
        if valid is None:
            valid = torch.ones_like(a, dtype=torch.bool)
        elif not isinstance(valid, torch.Tensor) or valid.dtype != torch.bool:
            raise TypeError("valid must be a bool tensor")
        e = self.exponentials(a, valid.expand_as(a))
        total = e.sum(-1, keepdim=True)
        pd = self.recip_bits
        rcp = torch.div(2**pd, total.clamp(min=1), rounding_mode="floor")
        return rshift_round(e * rcp, pd - PROB_BITS)

    def exponentials(self, scores: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """The row's exponentials ``e = EXP2[f] >> i`` (int64, ``2**E`` is one; zero for an
        invalid key) of score rows ``[..., L]`` checked by :meth:`__call__`, ``valid`` bool of
        the same shape: what the unit sums and scales by the reciprocal."""
        lo, _ = signed_limits(self.score_bits)
        top = torch.where(valid, scores, lo).amax(-1, keepdim=True)
        z = torch.where(valid, top - scores, 0)
        t = rshift_round(z * self.mult, self.shift)
        whole = (t >> self.frac_bits).clamp(max=EXP_BITS + 1)
        frac = t & (2**self.frac_bits - 1)
        e = torch.bitwise_right_shift(self.table[frac], whole)  # EXP2 >> (E + 1) is 0
        return torch.where(valid, e, 0)

    def error_bound(self, length: int, p: torch.Tensor | float = 1.0) -> torch.Tensor | float:
        """Largest ``|u / 2**Pu - softmax|`` at a probability ``p`` in a row of ``length``.

        With ``a = 2**d - 1`` the relative error of an exponential (``d``: the exponent's
        rounding, half a table step, plus the multiplier's relative error ``1/(2M)`` over the
        exponents that matter, up to ``E + 2``) and the absolute error ``3/2`` of an entry
        (table rounding and the shift's floor), ``|e/sum - p| <= (2 a p + 1.5 (1 + L p) /
        2**E) / (1 - a - 1.5 L / 2**E)``; the reciprocal's floor and the output rounding add
        ``2**-(Pu+2)`` and ``2**-(Pu+1)``.
        """
        d = 2.0 ** -(self.frac_bits + 1) + (EXP_BITS + 2) * 0.5 / max(self.mult, 1)
        a = 2.0**d - 1
        tail = 1.5 / 2**EXP_BITS
        core = (2 * a * p + tail * (1 + length * p)) / (1 - a - tail * length)
        return core + 2.0 ** -(PROB_BITS + 2) + 2.0 ** -(PROB_BITS + 1)
