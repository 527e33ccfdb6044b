"""The temporal mask of M-TTFS: the one definition of which event times are sent.

- silent set ``Omega_k = {t : |t - I_max| <= k}`` clipped to ``0..T-1`` (Eq. dz_set);
- an event at ``tau`` is transmitted iff ``|tau - I_max| > k`` (Eq. mttfs_mask):
  :func:`transmitted`.

No torch at import: the energy model, the cocotb benches and the coverage model import the mask
without loading torch; the tensor methods of :class:`Mask` load it when called.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from golden_models.codespace import CodeSpace, check_i_max, check_k

if TYPE_CHECKING:
    import torch

__all__ = ["Mask", "transmitted", "ttfs_mask"]


def transmitted(t, i_max, k):
    """The temporal mask: is an event at time ``t`` sent, ``|t - I_max| > k`` (outside ``Omega_k``)?

    The one definition of the mask test. It works on ``int`` (a ``bool``), on torch tensors
    (element-wise) and on Amaranth values (a 1-bit expression): :class:`golden_models.Mask`, the
    cocotb benches and the coverage model all call it.
    """
    return abs(t - i_max) > k


@dataclass(frozen=True)
class Mask:
    """The temporal mask of one spike-encoded position: code space, silent centre and radius.

    Parameters
    ----------
    space : CodeSpace
    i_max : int
        Silent centre, an event time in ``0..T-1`` (the histogram mode, Eq. mttfs_imax).
    k : int
        Dead-zone radius, ``0 <= k < T``; ``k = 0`` is core (lossless) M-TTFS.
    """

    space: CodeSpace
    i_max: int
    k: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.space, CodeSpace):
            raise TypeError(f"space must be a CodeSpace, not {self.space!r}")
        check_i_max(self.i_max, self.space.T)
        check_k(self.k, self.space.T)

    @classmethod
    def at_zero(cls, space: CodeSpace, k: int = 0) -> Mask:
        """The paper's global rule: silence on code 0 (``I_max = c``)."""
        return cls(space, space.c, k)

    @property
    def T(self) -> int:
        return self.space.T

    @property
    def mu(self) -> int:
        """The silent integer ``mu = c - I_max``."""
        return self.space.c - self.i_max

    @property
    def silent_times(self) -> tuple[int, ...]:
        """``Omega_k``: the event times that are never transmitted, ascending."""
        return tuple(t for t in range(self.T) if not transmitted(t, self.i_max, self.k))

    @property
    def silent_codes(self) -> tuple[int, ...]:
        """The codes the dead zone maps to ``mu`` (``|q - mu| <= k``), ascending."""
        return tuple(sorted(self.space.c - t for t in self.silent_times))

    def transmitted(self, tau: torch.Tensor) -> torch.Tensor:
        """Boolean tensor: is each event time outside ``Omega_k``?"""
        from golden_models.tensor_checks import check_times

        check_times(tau, self.T)
        return transmitted(tau, self.i_max, self.k)

    def project(self, q: torch.Tensor) -> torch.Tensor:
        """Dead-zone projection ``qbar`` (Eq. qnn_deadzone)."""
        import torch

        from golden_models.tensor_checks import check_codes

        check_codes(q, self.space)
        return torch.where((q - self.mu).abs() <= self.k, torch.full_like(q, self.mu), q)

    def centred(self, tau: torch.Tensor) -> torch.Tensor:
        """Centred value ``d = c - tau - mu`` of an event at ``tau`` (Eq. centered_decay)."""
        from golden_models.tensor_checks import check_times

        check_times(tau, self.T)
        return self.space.c - tau - self.mu


def ttfs_mask(space: CodeSpace) -> Mask:
    """Standard TTFS as a mask: the lowest level (time ``T-1``) is the silent one, ``k = 0``."""
    return Mask(space, space.T - 1, 0)
