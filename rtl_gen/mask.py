"""The temporal mask in hardware: is an event time outside the dead zone ``Omega_k``?

One Amaranth expression for the tile's output mask and the encoder's input mask. It mirrors
:meth:`golden_models.Mask.transmitted` (``(tau - i_max).abs() > k``), the one definition of
the mask in the golden model (docs/golden_models.md).
"""

from __future__ import annotations

__all__ = ["transmitted"]


def transmitted(t, i_max, k):
    """``|t - i_max| > k``: the event time ``t`` is transmitted (outside ``Omega_k``).

    Parameters
    ----------
    t, i_max, k : Value or int
        Event time and silent centre (``0..T-1``), dead-zone radius; signals or constants.
    """
    return abs(t - i_max) > k
