"""The code space of an n-bit activation: levels, families and parameter checks.

An ``n``-bit activation has ``T = 2**n`` integer levels ``c-(T-1) .. c``. The largest level is
``c = T/2 - 1`` for the symmetric family and ``c = T - 1`` for the asymmetric family (paper,
Section "M-TTFS: Distribution-Aware Silent-State Assignment"). Every other module takes a
:class:`CodeSpace` instead of loose ``T``/``c`` numbers, so the checks live here once.
"""

from __future__ import annotations

from dataclasses import dataclass

from toolkit_base.checks import check_integer

#: The two quantizer families of the paper's Table of modes.
FAMILIES = ("sym", "asym")
#: Supported activation bit widths (T = 2**n).
MIN_BITS, MAX_BITS = 1, 8


def check_T(T: object) -> int:
    """Return ``T`` if it is a power of two ``2**n`` with ``n`` in 1..8, else raise."""
    check_integer("T", T)
    if T < 2 ** MIN_BITS or T > 2 ** MAX_BITS or T & (T - 1):
        raise ValueError(
            f"T must be a power of two 2**n with n in {MIN_BITS}..{MAX_BITS} "
            f"(2, 4, 8, ..., 256), not {T!r}"
        )
    return T


def check_k(k: object, T: int) -> int:
    """Return the dead-zone radius ``k`` if ``0 <= k < T``, else raise."""
    check_integer("k", k)
    if not 0 <= k < T:
        raise ValueError(f"k must be in 0..{T - 1} for T={T}, not {k!r}")
    return k


def check_i_max(i_max: object, T: int) -> int:
    """Return the silent centre ``I_max`` if it is an event time ``0..T-1``, else raise."""
    check_integer("I_max", i_max)
    if not 0 <= i_max < T:
        raise ValueError(f"I_max must be in 0..{T - 1} for T={T}, not {i_max!r}")
    return i_max


@dataclass(frozen=True)
class CodeSpace:
    """The integer levels of an ``n``-bit activation.

    Parameters
    ----------
    T : int
        Number of levels and of time steps, ``2**n`` with ``n`` in 1..8.
    family : {"sym", "asym"}
        ``"sym"``: levels ``-T/2 .. T/2-1``; ``"asym"``: levels ``0 .. T-1``.
    """

    T: int
    family: str = "sym"

    def __post_init__(self) -> None:
        check_T(self.T)
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, not {self.family!r}")

    @property
    def n_bits(self) -> int:
        return self.T.bit_length() - 1

    @property
    def c(self) -> int:
        """The largest level."""
        return self.T // 2 - 1 if self.family == "sym" else self.T - 1

    @property
    def q_max(self) -> int:
        return self.c

    @property
    def q_min(self) -> int:
        """The smallest level ``c - (T-1)``."""
        return self.c - (self.T - 1)

    @property
    def max_abs(self) -> int:
        """Largest magnitude of any level."""
        return max(abs(self.q_min), abs(self.q_max))

    def mu(self, i_max: int) -> int:
        """The silent integer ``mu = c - I_max`` (paper Eq. silent_integer)."""
        return self.c - check_i_max(i_max, self.T)

    def i_max_of(self, q: int) -> int:
        """The event time of code ``q``: the ``I_max`` that makes ``q`` silent."""
        if not self.q_min <= q <= self.q_max:
            raise ValueError(
                f"code must be in {self.q_min}..{self.q_max} for {self}, not {q!r}"
            )
        return self.c - q

    def __str__(self) -> str:
        return f"T={self.T} {self.family}"
