"""Integer ranges and register widths of the numerical contract (no torch: the RTL imports them).

The weight range of a ``b``-bit weight, the largest partial sum a membrane can reach and the
two's complement width that holds it: :mod:`rtl_gen.params` derives the accumulator width from
these, so no membrane can overflow.
"""

from __future__ import annotations

from golden_models.codespace import CodeSpace
from toolkit_base.checks import check_integer

__all__ = ["accumulator_bound", "score_bits", "signed_width", "weight_range"]


def weight_range(weight_bits: int) -> tuple[int, int]:
    """Integer weight range: ``+-1`` for 1 bit, else ``[-2**(b-1), 2**(b-1)-1]``."""
    check_integer("weight_bits", weight_bits)
    if not 1 <= weight_bits <= 8:
        raise ValueError(f"weight_bits must be in 1..8, not {weight_bits!r}")
    if weight_bits == 1:
        return -1, 1
    return -(2 ** (weight_bits - 1)), 2 ** (weight_bits - 1) - 1




def accumulator_bound(n_in: int, weight_bits: int, space: CodeSpace) -> int:
    """Largest ``|V|`` any partial sum can reach, for any ``I_max``, order of events and weights.

    A partial sum is ``B + sum over a subset of events of W*d`` with ``|B| <= n_in*w*|mu|`` and
    ``|d| <= T-1``; ``|mu| <= max|q|``. Hence ``n_in * w_max * (max|q| + T - 1)``.
    """
    lo, hi = weight_range(weight_bits)
    w_max = max(-lo, hi)
    return int(n_in) * w_max * (space.max_abs + space.T - 1)


def signed_width(bound: int) -> int:
    """Bits of a two's complement register that holds every integer in ``[-bound, bound]``."""
    return max(int(bound).bit_length() + 1, 2)


def score_bits(query: CodeSpace, key: CodeSpace, head_dim: int) -> int:
    """Signed width of a raw attention score ``sum_d q[d] * k[d]`` of ``head_dim`` products of
    a query code and a key code (docs/integer_contract.md, "The block, tensor by tensor")."""
    check_integer("head_dim", head_dim)
    corners = (query.q_min * key.q_min, query.q_max * key.q_max, query.q_min * key.q_max,
               query.q_max * key.q_min)
    return signed_width(head_dim * max(abs(c) for c in corners))
