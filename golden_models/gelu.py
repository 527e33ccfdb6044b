"""GELU folded into the first FFN tile's threshold table, and its monotone variant
(docs/integer_contract.md, "GELU").

The first FFN layer's tile fires its output codes by a threshold walk over the integer sum
``V``: ``tau = min{t : V >= theta[t]}``. A walk realises ``code(V) = quantize(f(a(V)))`` with
``a(V) = bias + scale * V`` exactly when ``code`` is non-decreasing in ``V``, that is when ``f``
is. GELU is not: ``gelu(x) = x * Phi(x)`` falls from 0 at ``-inf`` to its minimum
``GELU_MIN = -0.16997`` at ``GELU_X_MIN = -0.75179`` and only then rises. The unit therefore
realises the monotone variant

    ``gelu_monotone(x) = GELU_MIN if x < GELU_X_MIN else gelu(x)``

(the tail clamped at the minimum). I-BERT's i-GELU (Kim et al., ICML 2021, Algorithm 3)
clamps its erf polynomial at ``|x| >= 1.769 * sqrt(2)``, where its GELU becomes exactly 0; it
keeps the dip between, so it is not monotone either and could not be folded into a walk. Here
the float GELU itself enters the table, so no polynomial is needed. For an asymmetric code space
(levels ``0..T-1``, the FFN-contract input of the paper's Table of modes) the two give the same
codes at every input: every negative value rounds or clips to level 0
(:func:`same_codes_as_gelu`). For a symmetric space they differ only where the clamped tail
reaches a negative level, ``x < GELU_X_MIN``.

The table is derived once from the float function (``threshold_table(activation=...)``, the
same bisection as a linear layer's table); at run time the tile compares integers only.
"""

from __future__ import annotations

import torch

from golden_models.codespace import CodeSpace
from golden_models.integer_layer import threshold_table

#: Where GELU has its minimum: the root of ``Phi(x) + x * phi(x)``.
GELU_X_MIN = -0.7517915246935645
#: GELU's minimum value, ``gelu(GELU_X_MIN)``.
GELU_MIN = -0.16997120747990369


def gelu(x: torch.Tensor) -> torch.Tensor:
    """Exact (erf) GELU, ``x * Phi(x)`` (as ``torch.nn.functional.gelu``)."""
    return torch.nn.functional.gelu(x)


def gelu_monotone(x: torch.Tensor) -> torch.Tensor:
    """GELU with its tail clamped at the minimum: non-decreasing, equal to GELU for
    ``x >= GELU_X_MIN``. Differentiable (zero gradient on the clamped tail)."""
    return torch.where(x < GELU_X_MIN, GELU_MIN, gelu(x))


def same_codes_as_gelu(space: CodeSpace) -> bool:
    """Whether ``quantize(gelu_monotone(x)) == quantize(gelu(x))`` for every ``x`` in ``space``.

    True exactly for the asymmetric family: its lowest level is 0 and both functions are
    negative wherever they differ.
    """
    return space.q_min == 0


def gelu_table(
    scale: torch.Tensor,
    bias: torch.Tensor,
    alpha_out: float,
    space_out: CodeSpace,
    rounding: str,
    v_range: tuple[int, int],
) -> torch.Tensor:
    """Thresholds ``[N, T-1]`` whose walk over ``V`` gives
    ``clip(level(gelu_monotone(bias + scale * V) / alpha_out))`` at every integer ``V`` in
    ``v_range`` (:func:`golden_models.integer_layer.threshold_table`)."""
    return threshold_table(
        scale, bias, alpha_out, space_out, rounding, v_range, activation=gelu_monotone
    )
