"""M-TTFS reference: event-time bijection, temporal mask, dead zone, encode/decode, offset folding.

Integers throughout (docs/design.md, "The numerical contract"):

- event time ``tau = c - q`` (paper Eq. q_to_time), a bijection onto ``0..T-1``;
- silent set ``Omega_k = {t : |t - I_max| <= k}`` clipped to ``0..T-1`` (Eq. dz_set);
- an event ``(i, tau)`` is transmitted iff ``tau`` is not in ``Omega_k`` (Eq. mttfs_mask);
- dead-zone projection ``qbar = mu if |q - mu| <= k else q`` with ``mu = c - I_max``
  (Eq. qnn_deadzone); the same set as the mask by Eq. q_time_deadzone;
- centred value of a transmitted event ``d = c - tau - mu = q - mu`` (Eq. centered_decay, in
  units of alpha);
- folded init ``B[j] = mu * sum_i W[i, j]`` (Eq. folded_bias, in integer units).

Standard TTFS is the special case "silence at the lowest level without the terminal event":
:func:`ttfs_mask` gives the mask that reproduces it (``I_max = T-1``, ``k = 0``). The mask itself
(:class:`Mask`, :func:`transmitted`, :func:`ttfs_mask`) lives in :mod:`golden_models.mask`,
torch-free; the tensor checks in :mod:`golden_models.tensor_checks`.
"""

from __future__ import annotations

import torch

from golden_models.codespace import CodeSpace
from golden_models.mask import Mask
from golden_models.tensor_checks import check_codes, check_times


def event_time(q: torch.Tensor, space: CodeSpace) -> torch.Tensor:
    """The event time ``tau = c - q`` of each code."""
    return space.c - check_codes(q, space)


def code_of_time(tau: torch.Tensor, space: CodeSpace) -> torch.Tensor:
    """The code ``q = c - tau`` of each event time (inverse of :func:`event_time`)."""
    return space.c - check_times(tau, space.T)


def encode_dense(q: torch.Tensor, mask: Mask) -> torch.Tensor:
    """Transmitted spike trains ``s[..., t]`` (uint8, last dimension ``T``) of codes ``q``."""
    tau = event_time(q, mask.space)
    keep = mask.transmitted(tau)
    spikes = torch.zeros((*q.shape, mask.T), dtype=torch.uint8)
    spikes.scatter_(-1, tau.long().unsqueeze(-1), keep.to(torch.uint8).unsqueeze(-1))
    return spikes


def decode_dense(spikes: torch.Tensor, mask: Mask) -> torch.Tensor:
    """Projected codes ``qbar`` from spike trains ``[..., T]``; a silent train decodes to ``mu``."""
    if not isinstance(spikes, torch.Tensor) or spikes.dim() < 1 or spikes.shape[-1] != mask.T:
        shape = tuple(spikes.shape) if isinstance(spikes, torch.Tensor) else spikes
        raise ValueError(f"spikes must be a tensor with last dimension T={mask.T}, not {shape}")
    if spikes.dtype.is_floating_point:
        raise TypeError(f"spikes must hold 0/1 integers, not dtype {spikes.dtype}")
    counts = spikes.sum(-1)
    if spikes.numel() and (
        int(spikes.min()) < 0 or int(spikes.max()) > 1 or int(counts.max()) > 1
    ):
        raise ValueError("each spike train must hold at most one spike of value 1")
    if bool((spikes[..., list(mask.silent_times)] != 0).any()):
        raise ValueError(f"a spike falls in the silent set {mask.silent_times}")
    tau = spikes.to(torch.int64).argmax(-1)
    q = mask.space.c - tau
    return torch.where(counts > 0, q, torch.full_like(q, mask.mu))


def encode_events(q: torch.Tensor, mask: Mask) -> tuple[torch.Tensor, torch.Tensor]:
    """Sparse events ``(index, time)`` of ``q`` (flat indices into ``q``), in time order.

    Within one time step events are in ascending index order: the order the hardware emits them.
    """
    tau = event_time(q, mask.space).reshape(-1).to(torch.int64)
    keep = mask.transmitted(tau)
    index = torch.nonzero(keep, as_tuple=False).reshape(-1)
    time = tau[index]
    # stable sort by time keeps ascending index inside each step
    order = torch.sort(time, stable=True).indices
    return index[order], time[order]


def decode_events(
    index: torch.Tensor, time: torch.Tensor, shape: tuple[int, ...], mask: Mask
) -> torch.Tensor:
    """Projected codes ``qbar`` of ``shape`` from events; indices without an event decode to mu."""
    if index.shape != time.shape or index.dim() != 1:
        raise ValueError(
            f"index and time must be 1-D and of one shape, not {tuple(index.shape)} "
            f"and {tuple(time.shape)}"
        )
    check_times(time, mask.T, "time")
    numel = 1
    for s in shape:
        numel *= int(s)
    if index.numel():
        if int(index.min()) < 0 or int(index.max()) >= numel:
            raise ValueError(f"event index out of range 0..{numel - 1}")
        if torch.unique(index).numel() != index.numel():
            raise ValueError("an index carries more than one event")
        if bool((~mask.transmitted(time)).any()):
            raise ValueError(f"an event time falls in the silent set {mask.silent_times}")
    q = torch.full((numel,), mask.mu, dtype=torch.int64)
    q[index.long()] = mask.space.c - time.to(torch.int64)
    return q.reshape(shape)


def folded_init(weights: torch.Tensor, mu: int) -> torch.Tensor:
    """Folded init values ``B[j] = mu * sum_i W[i, j]`` for integer weights ``W[N_in, N_out]``."""
    if not isinstance(weights, torch.Tensor) or weights.dim() != 2:
        raise ValueError("weights must be a 2-D integer tensor [N_in, N_out]")
    if weights.dtype.is_floating_point:
        raise TypeError(f"weights must be integers, not dtype {weights.dtype}")
    return int(mu) * weights.to(torch.int64).sum(0)


def transmitted_count(q: torch.Tensor, mask: Mask) -> int:
    """Number of events the codes ``q`` transmit under ``mask``."""
    return int(mask.transmitted(event_time(q, mask.space)).sum())
