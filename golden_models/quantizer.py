"""The activation quantizer and the masked straight-through estimator.

``q = clip(floor(a/alpha), c-(T-1), c)`` (paper Eq. qnn_code), with a rounding mode: ``"floor"``
(the paper's) or ``"round"`` (``floor(a/alpha + 1/2)``, for models converted after training
without quantization-aware training; DESIGN.md, "Rounding").
"""

from __future__ import annotations

import torch

from golden_models.codespace import CodeSpace

ROUNDINGS = ("floor", "round")


def check_rounding(rounding: object) -> str:
    if rounding not in ROUNDINGS:
        raise ValueError(f"rounding must be one of {ROUNDINGS}, not {rounding!r}")
    return rounding  # type: ignore[return-value]


def check_scale(alpha: object, name: str = "alpha") -> None:
    """Raise unless ``alpha`` is a positive finite number or tensor of them."""
    t = torch.as_tensor(alpha, dtype=torch.float64)
    if not bool(torch.isfinite(t).all()) or not bool((t > 0).all()):
        raise ValueError(f"{name} must be positive and finite, not {alpha!r}")


def level_of(x: torch.Tensor, rounding: str = "floor") -> torch.Tensor:
    """Unclipped integer level of ``x = a/alpha`` under the rounding mode (float tensor)."""
    check_rounding(rounding)
    return torch.floor(x + 0.5) if rounding == "round" else torch.floor(x)


def quantize(
    a: torch.Tensor, alpha: float | torch.Tensor, space: CodeSpace, rounding: str = "floor"
) -> torch.Tensor:
    """Integer codes (int64) of activations ``a`` at scale ``alpha`` (scalar or broadcastable)."""
    check_scale(alpha)
    if not isinstance(a, torch.Tensor) or not a.dtype.is_floating_point:
        raise TypeError("a must be a floating-point torch.Tensor")
    level = level_of(a / alpha, rounding)
    return level.clamp(space.q_min, space.q_max).to(torch.int64)
