"""Checks of the integer tensors of the contract: codes of a code space, event times ``0..T-1``.

Below both :mod:`golden_models.mask` (whose tensor methods call them) and
:mod:`golden_models.mttfs`, so neither imports the other for them.
"""

from __future__ import annotations

import torch

from golden_models.codespace import CodeSpace

__all__ = ["check_codes", "check_integer_tensor", "check_times"]


def check_integer_tensor(x: object, name: str, of: str, holds: str) -> torch.Tensor:
    """Return ``x`` if it is a torch tensor of an integer dtype, else raise ``TypeError``.

    The messages read "``name`` must be a torch.Tensor of ``of``" and "``name`` must hold
    ``holds``".
    """
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of {of}, not {type(x).__name__}")
    if x.dtype.is_floating_point or x.dtype.is_complex or x.dtype == torch.bool:
        raise TypeError(f"{name} must hold {holds}, not dtype {x.dtype}")
    return x


def check_codes(q: torch.Tensor, space: CodeSpace, name: str = "q") -> torch.Tensor:
    """Return ``q`` if it is an integer tensor of levels of ``space``, else raise."""
    check_integer_tensor(q, name, "integer codes", "integer codes")
    if q.numel():
        lo, hi = int(q.min()), int(q.max())
        if lo < space.q_min or hi > space.q_max:
            bad = lo if lo < space.q_min else hi
            raise ValueError(
                f"{name} holds {bad}, outside the levels {space.q_min}..{space.q_max} of {space}"
            )
    return q


def check_times(tau: torch.Tensor, T: int, name: str = "tau") -> torch.Tensor:
    """Return ``tau`` if it is an integer tensor of event times ``0..T-1``, else raise."""
    check_integer_tensor(tau, name, "event times", "integer event times")
    if tau.numel():
        lo, hi = int(tau.min()), int(tau.max())
        if lo < 0 or hi >= T:
            raise ValueError(f"{name} holds {lo if lo < 0 else hi}, outside the times 0..{T - 1}")
    return tau
