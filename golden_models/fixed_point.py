"""Fixed-point primitives of the integer non-linear units (docs/integer_contract.md,
"Non-linear units").

Every function here is exact integer arithmetic on int64 tensors: shifts, adds, compares and
products whose widths the callers bound below 63 bits. They are what the softmax, LayerNorm
and residual-add units are built from, and what their RTL must reproduce bit for bit:

- :func:`rshift_round`: ``floor((x + 2**(n-1)) / 2**n)``, a right shift that rounds half up;
- :func:`bit_length`: the position of the leading one (a leading-zero count);
- :func:`isqrt`: ``floor(sqrt(u))`` by the digit-by-digit (restoring) method, 31 iterations for
  a 62-bit radicand, one subtract-and-compare each;
- :func:`fixed_multiplier`: ``ratio ~= M / 2**S`` with ``M`` of a declared width (computed once,
  when a unit's constants are derived; never at run time);
- :func:`saturate`: the clamp of a saturating register.
"""

from __future__ import annotations

import math

import torch

from toolkit_base.checks import check_int, check_integer

#: Radicand width of :func:`isqrt` (its result has ``ISQRT_BITS // 2`` bits).
ISQRT_BITS = 62
#: Largest magnitude any intermediate may reach: one bit below int64's.
INT_LIMIT_BITS = 62


def as_int64(x: object, name: str) -> torch.Tensor:
    """``x`` as an int64 tensor if it holds integers, else ``TypeError`` naming ``name``."""
    if isinstance(x, torch.Tensor):
        if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
            raise TypeError(f"{name} must hold integers, not dtype {x.dtype}")
        return x.to(torch.int64)
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"{name} must be an integer tensor, not {x!r}")
    return torch.tensor(x, dtype=torch.int64)


def signed_limits(bits: int) -> tuple[int, int]:
    """``(lo, hi)`` of a ``bits``-wide two's complement register (``bits`` in 2..62)."""
    check_int("bits", bits, 2, INT_LIMIT_BITS)
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def saturate(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Clamp ``x`` into a ``bits``-wide two's complement register."""
    lo, hi = signed_limits(bits)
    return x.clamp(lo, hi)


def rshift_round(x: torch.Tensor, n: int | torch.Tensor) -> torch.Tensor:
    """``floor((x + 2**(n-1)) / 2**n)`` for ``n >= 1``, ``x`` for ``n = 0`` (round half up).

    ``n`` is an int or an int64 tensor broadcastable to ``x`` (a per-row shift), in 0..62.
    In RTL: add the constant ``2**(n-1)``, then an arithmetic shift right.
    Computed as that shift (torch's ``>>`` of int64 is arithmetic: ``floor(x / 2**n)``), not as
    an integer division, which is several times slower.
    """
    x = as_int64(x, "x")
    if isinstance(n, torch.Tensor):
        n = as_int64(n, "n")
        if n.numel() and (int(n.min()) < 0 or int(n.max()) > INT_LIMIT_BITS):
            raise ValueError(f"shift n must be in 0..{INT_LIMIT_BITS}, not {n.min()}..{n.max()}")
        one = torch.ones_like(n)
        half = torch.where(n > 0, torch.bitwise_left_shift(one, (n - 1).clamp(min=0)), 0)
        return torch.bitwise_right_shift(x + half, n)
    check_int("n", n, 0, INT_LIMIT_BITS)
    if n == 0:
        return x
    return torch.bitwise_right_shift(x + 2 ** (n - 1), n)


def bit_length(x: torch.Tensor) -> torch.Tensor:
    """Bits of each non-negative ``x`` (``0`` for ``0``): ``floor(log2 x) + 1``.

    A binary search over shifts of 32, 16, ..., 1 (the RTL's leading-zero count).
    """
    x = as_int64(x, "x")
    if x.numel() and int(x.min()) < 0:
        raise ValueError(f"bit_length needs non-negative integers, not {int(x.min())}")
    n = torch.zeros_like(x)
    for step in (32, 16, 8, 4, 2, 1):
        big = x >= 2**step
        n = n + big.to(torch.int64) * step
        x = torch.where(big, x >> step, x)
    return n + (x > 0).to(torch.int64)


def isqrt(u: torch.Tensor) -> torch.Tensor:
    """``floor(sqrt(u))`` of integers ``0 <= u < 2**62``, exactly.

    The digit-by-digit method: one result bit per iteration, from the top, 31 iterations; each
    compares the remainder with ``res + one`` and subtracts. No division, no float.
    """
    u = as_int64(u, "u")
    if u.numel() and (int(u.min()) < 0 or int(u.max()) >= 2**ISQRT_BITS):
        raise ValueError(
            f"isqrt needs integers in 0..2**{ISQRT_BITS}-1, not {int(u.min())}..{int(u.max())}"
        )
    rem = u.clone()
    res = torch.zeros_like(u)
    one = 2 ** (ISQRT_BITS - 2)  # the largest power of four below 2**62
    while one:
        cand = res + one
        ge = rem >= cand
        rem = torch.where(ge, rem - cand, rem)
        res = torch.where(ge, (res >> 1) + one, res >> 1)
        one >>= 2
    return res


def fixed_multiplier(
    ratio: float | torch.Tensor, bits: int, *, min_shift: int = 0, max_shift: int = 60
) -> tuple[torch.Tensor, int]:
    """Integers ``M`` (``0 <= M < 2**bits``) and one shift ``S`` with ``M / 2**S ~= ratio``.

    ``S`` is the largest shift in ``min_shift..max_shift`` at which every ``round(ratio * 2**S)``
    stays below ``2**bits``: the largest ratio gets ``bits`` significant bits, the others share
    its shift. This runs once, when a unit's constants are derived from the float model.

    Raises
    ------
    ValueError
        A ratio that is not positive and finite, or one too large for ``bits`` at ``min_shift``.
    """
    check_int("bits", bits, 2, 32)
    check_integer("min_shift", min_shift)
    r = torch.as_tensor(ratio, dtype=torch.float64)
    if not bool(torch.isfinite(r).all()) or not bool((r > 0).all()):
        raise ValueError(f"ratio must be positive and finite, not {ratio!r}")
    top = float(r.max())
    shift = min(max_shift, bits - 1 - math.floor(math.log2(top)))
    while shift >= min_shift and int(torch.round(r * 2.0**shift).max()) >= 2**bits:
        shift -= 1
    if shift < min_shift:
        raise ValueError(
            f"ratio {top!r} does not fit a {bits}-bit multiplier with a shift of at least "
            f"{min_shift}"
        )
    m = torch.round(r * 2.0**shift).to(torch.int64)
    return m, int(shift)
