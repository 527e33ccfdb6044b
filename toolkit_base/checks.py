"""Integer parameter checks shared by several packages, each check and message written once.

The code space checks of the paper (``T`` a power of two up to 256, ``k``, ``I_max``) live in
:mod:`golden_models.codespace` and build on :func:`check_integer`; the generated RTL supports a
smaller range of ``T``, and :func:`check_rtl_T` is the one place that says so.
"""

from __future__ import annotations

__all__ = ["MAX_RTL_T", "check_int", "check_integer", "check_rtl_T"]

#: The generated RTL supports ``T = 2**n`` with ``n`` in 1..6.
MAX_RTL_T = 64


def check_integer(name: str, value: object) -> int:
    """Return ``value`` if it is an ``int`` (``bool`` excluded), else raise ``TypeError``.

    The type half of every integer parameter check; each caller adds its own range.
    """
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    return value


def check_int(name: str, value: object, lo: int, hi: int, *, must_be: str = "must be in") -> int:
    """Return ``value`` if it is an ``int`` (not ``bool``) in ``lo..hi``, else raise.

    Parameters
    ----------
    name : str
        Parameter name, first word of the message.
    value : object
    lo, hi : int
        Valid range, both ends included.
    must_be : str
        Wording before the range in the ``ValueError``: ``"T must be in 2..64, not 128"``; the
        router's parameters read ``"rows must be 1..64, not 0"`` (``must_be="must be"``).

    Raises
    ------
    TypeError
        ``value`` is not an integer.
    ValueError
        ``value`` is outside ``lo..hi``.
    """
    check_integer(name, value)
    if not lo <= value <= hi:
        raise ValueError(f"{name} {must_be} {lo}..{hi}, not {value!r}")
    return value


def check_rtl_T(T: int) -> int:
    """Return ``T`` if the generated RTL supports it (``T <= 64``), else raise ``ValueError``.

    ``T`` has passed :func:`golden_models.codespace.check_T` (a power of two up to 256).
    """
    if T > MAX_RTL_T:
        raise ValueError(f"T must be at most {MAX_RTL_T} for the generated RTL, not {T!r}")
    return T
