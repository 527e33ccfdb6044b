"""The activation quantizer and the masked straight-through estimator.

``q = clip(floor(a/alpha), c-(T-1), c)`` (paper Eq. qnn_code), with a rounding mode: ``"floor"``
(the paper's) or ``"round"`` (``floor(a/alpha + 1/2)``, for models converted after training
without quantization-aware training; docs/design.md, "The numerical contract").
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


def unsaturated(a: torch.Tensor, alpha, space: CodeSpace, rounding: str = "floor") -> torch.Tensor:
    """Boolean: is ``a/alpha`` inside the quantizer's unsaturated range?

    For ``"floor"`` this is the paper's ``q_min <= a/alpha < q_max + 1`` (Eq. masked_ste); for
    ``"round"`` the same range shifted by one half, ``q_min - 1/2 <= a/alpha < q_max + 1/2``:
    in both cases exactly the inputs whose unclipped level lies in ``q_min .. q_max``.
    """
    offset = 0.5 if check_rounding(rounding) == "round" else 0.0
    x = a / alpha + offset
    return (x >= space.q_min) & (x < space.q_max + 1)


class MaskedSTE(torch.autograd.Function):
    """Quantize, dead-zone project and dequantize, with the masked straight-through estimator.

    Forward: ``xbar = alpha * qbar`` with ``q = clip(level(a/alpha), q_min, q_max)`` and
    ``qbar = mu if |q - mu| <= k else q`` (Eqs. qnn_code, qnn_deadzone, qnn_activation).
    Backward (Eq. masked_ste): ``dL/da = dL/dxbar * I(unsaturated) * I(|q - mu| > k)``; the
    projected values are constant in ``a``, so they get no gradient. ``alpha`` and the mask are
    fixed during fine-tuning (Section "Training the Dead-Zone QNN") and get no gradient.

    Call as ``MaskedSTE.apply(a, alpha, space, mu, k, rounding)``.
    """

    @staticmethod
    def forward(ctx, a, alpha, space, mu, k, rounding):
        q = quantize(a.detach(), alpha, space, rounding)
        keep = (q - mu).abs() > k
        qbar = torch.where(keep, q, torch.full_like(q, mu))
        ctx.save_for_backward(unsaturated(a.detach(), alpha, space, rounding) & keep)
        return (qbar.to(a.dtype) * torch.as_tensor(alpha, dtype=a.dtype)).to(a.dtype)

    @staticmethod
    def backward(ctx, grad):
        (pass_mask,) = ctx.saved_tensors
        return grad * pass_mask.to(grad.dtype), None, None, None, None, None


class ActivationQuantizer(torch.nn.Module):
    """Training-side activation quantizer: quantize, dead-zone project, masked STE.

    Parameters
    ----------
    alpha : float
        Activation scale ``alpha > 0`` (a buffer: fixed while fine-tuning).
    T : int
        Levels and time steps, a power of two ``2**n``, ``n`` in 1..8.
    family : {"sym", "asym"}
    rounding : {"floor", "round"}
    i_max : int or None
        Silent centre (event time); ``None`` means the paper's global rule, code 0 silent.
    k : int
        Dead-zone radius, ``0 <= k < T``.

    Members
    -------
    space : CodeSpace
    mask : Mask
        The temporal mask the converted M-TTFS position uses (same ``I_max`` and ``k``).
    """

    def __init__(
        self,
        alpha: float,
        *,
        T: int,
        family: str = "sym",
        rounding: str = "floor",
        i_max: int | None = None,
        k: int = 0,
    ) -> None:
        from golden_models.mask import Mask

        space = CodeSpace(T, family)
        check_scale(alpha)
        check_rounding(rounding)
        if isinstance(alpha, torch.Tensor):
            alpha = float(alpha)
        mask = Mask.at_zero(space, k) if i_max is None else Mask(space, i_max, k)
        super().__init__()
        self.register_buffer("alpha", torch.tensor(float(alpha), dtype=torch.float64))
        self._space = space
        self._rounding = rounding
        self._mask = mask

    @property
    def space(self) -> CodeSpace:
        return self._space

    @property
    def rounding(self) -> str:
        return self._rounding

    @property
    def mask(self):
        return self._mask

    def set_mask(self, i_max: int, k: int | None = None) -> None:
        """Replace the silent centre (and optionally the radius), e.g. after calibration."""
        from golden_models.mask import Mask

        self._mask = Mask(self._space, i_max, self._mask.k if k is None else k)

    def codes(self, a: torch.Tensor) -> torch.Tensor:
        """Integer codes ``q`` before the dead zone (what calibration histograms)."""
        return quantize(a, float(self.alpha), self._space, self._rounding)

    def projected_codes(self, a: torch.Tensor) -> torch.Tensor:
        """Integer codes ``qbar`` after the dead zone."""
        return self._mask.project(self.codes(a))

    def forward(self, a: torch.Tensor) -> torch.Tensor:
        """Dead-zone-adjusted activation ``alpha * qbar`` with the masked STE gradient."""
        if not isinstance(a, torch.Tensor) or not a.dtype.is_floating_point:
            raise TypeError("a must be a floating-point torch.Tensor")
        return MaskedSTE.apply(
            a, float(self.alpha), self._space, self._mask.mu, self._mask.k, self._rounding
        )

    def extra_repr(self) -> str:
        m = self._mask
        return (
            f"alpha={float(self.alpha):g}, T={self._space.T}, family={self._space.family!r}, "
            f"rounding={self._rounding!r}, i_max={m.i_max}, k={m.k}"
        )
