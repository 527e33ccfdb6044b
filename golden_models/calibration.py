"""Calibration: event-time histograms of QNN codes and the silent centre ``I_max``.

Because ``tau = c - q`` is a bijection (Eq. q_to_time), the pre-mask event-time histogram of a
position (Eq. mttfs_histogram) is the histogram of its QNN codes read backwards; no time-step
simulation is needed. ``I_max`` is its argmax (Eq. mttfs_imax). Tensors are processed in
chunks of ``chunk`` elements so memory stays bounded for any calibration set.

Tie rule of :func:`select_i_max`: among the event times whose count is the largest (or, with
``near_tie > 0``, within a relative ``near_tie`` of the largest), pick the one whose code is
closest to zero; if ``+m`` and ``-m`` are both candidates, the one with the larger count, then
the earlier event time (the larger code). With the default ``near_tie=0`` this is an exact
argmax; only exact ties are broken. The paper's LayerNorm outputs often peak at ``-1`` by a
hair (a floor quantizer maps ``[-alpha, 0)`` to ``-1``); ``near_tie`` lets a caller resolve
such a near tie to code 0, the paper's global rule.
"""

from __future__ import annotations

import torch

from golden_models.codespace import CodeSpace, check_integer
from golden_models.tensor_checks import check_integer_tensor

#: Default chunk size (elements) for the streaming histogram: 4 Mi int8 codes = 4 MiB.
DEFAULT_CHUNK = 1 << 22
# bincount runs a min and a max reduction before counting; above ATen's grain size (32768)
# those go parallel, and on a busy 2-core machine the OpenMP hand-off costs ten times the
# counting. Pieces of at most this size keep the reductions serial: measured 5e8 codes/s
# against 1e8 for whole 4 Mi chunks (benchmarks/bench_golden.py).
_SERIAL_GRAIN = 1 << 15


def _check_chunk(chunk: object) -> int:
    check_integer("chunk", chunk)
    if chunk < 1:
        raise ValueError(f"chunk must be at least 1, not {chunk!r}")
    return chunk


def _byte_tables(dtype: torch.dtype, space: CodeSpace) -> tuple[torch.Tensor, torch.Tensor]:
    """For 8-bit codes: the code each byte value stands for, and its event time (-1: invalid)."""
    byte = torch.arange(256, dtype=torch.int64)
    code = byte - 256 * (byte >= 128) if dtype == torch.int8 else byte
    valid = (code >= space.q_min) & (code <= space.q_max)
    time = torch.where(valid, space.c - code, torch.full_like(code, -1))
    return code, time


def _raise_bad_code(part: torch.Tensor, space: CodeSpace) -> None:
    wide = part.to(torch.int64)
    bad = wide[(wide < space.q_min) | (wide > space.q_max)][0]
    raise ValueError(
        f"q holds {int(bad)}, outside the levels {space.q_min}..{space.q_max} of {space}"
    )


def event_histogram(
    q: torch.Tensor, space: CodeSpace, *, chunk: int = DEFAULT_CHUNK
) -> torch.Tensor:
    """Counts ``n_t`` of the event times ``t = 0..T-1`` of the codes ``q`` (int64 ``[T]``).

    ``q`` may have any shape and integer dtype. Every code is range-checked: one outside
    ``q_min..q_max`` raises :class:`ValueError` naming it.

    8-bit codes (int8 or uint8) take the fast path: one ``bincount`` over the bytes viewed as
    uint8 (no per-element arithmetic at all), then the bijection ``tau = c - q`` and the range
    check are applied to the 256-bin byte histogram. Wider dtypes are shifted to ``0..T-1``
    first. Either way ``chunk`` elements are processed at a time, so memory stays bounded.
    """
    check_integer_tensor(q, "q", "integer codes", "integer codes")
    chunk = _check_chunk(chunk)
    flat = q.reshape(-1)
    counts = torch.zeros(space.T, dtype=torch.int64)
    eight_bit = flat.dtype in (torch.int8, torch.uint8)
    if eight_bit:
        _, time = _byte_tables(flat.dtype, space)
        valid = time >= 0
        invalid = ~valid
        target = time[valid]
    for start in range(0, flat.numel(), chunk):
        part = flat[start : start + chunk]
        if eight_bit:
            raw = torch.zeros(256, dtype=torch.int64)
            for piece in part.view(torch.uint8).split(_SERIAL_GRAIN):
                raw += torch.bincount(piece, minlength=256)
            if bool(raw[invalid].any()):
                _raise_bad_code(part, space)
            counts.index_add_(0, target, raw[valid])
            continue
        shifted = part - space.q_min if space.q_min else part
        lo, hi = torch.aminmax(shifted)
        if int(lo) < 0 or int(hi) >= space.T:
            _raise_bad_code(part, space)
        # bincount of the code shifted to 0..T-1, flipped, is the histogram of tau = c - q
        counts += torch.bincount(shifted, minlength=space.T).flip(0)
    return counts


class HistogramAccumulator:
    """Streaming event-time histogram of one position over a calibration set.

    Parameters
    ----------
    space : CodeSpace
    chunk : int
        Elements per chunk when a batch is large.
    """

    def __init__(self, space: CodeSpace, *, chunk: int = DEFAULT_CHUNK) -> None:
        if not isinstance(space, CodeSpace):
            raise TypeError(f"space must be a CodeSpace, not {space!r}")
        self._space = space
        self._chunk = _check_chunk(chunk)
        self._counts = torch.zeros(space.T, dtype=torch.int64)

    @property
    def space(self) -> CodeSpace:
        return self._space

    @property
    def counts(self) -> torch.Tensor:
        """Counts per event time ``t = 0..T-1`` (a copy)."""
        return self._counts.clone()

    @property
    def total(self) -> int:
        return int(self._counts.sum())

    def update(self, q: torch.Tensor) -> None:
        """Add the codes ``q`` of one batch."""
        self._counts += event_histogram(q, self._space, chunk=self._chunk)

    def probabilities(self) -> torch.Tensor:
        """``p_t`` (float64), Eq. mttfs_histogram."""
        return probabilities(self._counts)

    def i_max(self, *, near_tie: float = 0.0) -> int:
        return select_i_max(self._counts, self._space, near_tie=near_tie)


def check_counts(counts: object, space: CodeSpace) -> torch.Tensor:
    if not isinstance(counts, torch.Tensor):
        counts = torch.as_tensor(counts)
    if counts.dtype.is_floating_point or counts.dtype == torch.bool:
        raise TypeError(f"counts must hold integers, not dtype {counts.dtype}")
    if tuple(counts.shape) != (space.T,):
        raise ValueError(
            f"counts must have shape ({space.T},) for {space}, not {tuple(counts.shape)}"
        )
    if bool((counts < 0).any()):
        raise ValueError("counts must be non-negative")
    if int(counts.sum()) == 0:
        raise ValueError("counts are all zero: calibrate on at least one activation")
    return counts.to(torch.int64)


def probabilities(counts: torch.Tensor) -> torch.Tensor:
    """Normalised histogram ``p_t = n_t / sum n`` in float64."""
    counts = torch.as_tensor(counts)
    total = int(counts.sum())
    if total <= 0:
        raise ValueError("counts are all zero: calibrate on at least one activation")
    return counts.to(torch.float64) / total


def select_i_max(counts: torch.Tensor, space: CodeSpace, *, near_tie: float = 0.0) -> int:
    """The silent centre ``I_max = argmax_t n_t`` (Eq. mttfs_imax), ties broken toward code 0.

    Parameters
    ----------
    counts : int tensor ``[T]``
        Event-time counts, e.g. from :func:`event_histogram`.
    space : CodeSpace
    near_tie : float
        Relative tolerance in ``[0, 1)``: times with ``n_t >= (1 - near_tie) * max n`` are
        candidates. ``0`` (default) is the exact argmax.

    Returns
    -------
    int
        An event time in ``0..T-1``.
    """
    counts = check_counts(counts, space)
    if isinstance(near_tie, bool) or not isinstance(near_tie, (int, float)):
        raise TypeError(f"near_tie must be a number, not {near_tie!r}")
    if not 0.0 <= near_tie < 1.0:
        raise ValueError(f"near_tie must be in [0, 1), not {near_tie!r}")
    top = int(counts.max())
    floor = (1.0 - near_tie) * top if near_tie else top
    best_key, best_t = None, -1
    for t in range(space.T):
        n = int(counts[t])
        if n < floor:
            continue
        key = (abs(space.c - t), -n, t)  # closest to code 0, then larger count, then earlier
        if best_key is None or key < best_key:
            best_key, best_t = key, t
    return best_t


def calibrate(
    batches, space: CodeSpace, *, near_tie: float = 0.0, chunk: int = DEFAULT_CHUNK
) -> tuple[torch.Tensor, int]:
    """Histogram an iterable of code tensors of one position; return ``(counts, I_max)``."""
    acc = HistogramAccumulator(space, chunk=chunk)
    if isinstance(batches, torch.Tensor):
        batches = (batches,)
    for q in batches:
        acc.update(q)
    return acc.counts, acc.i_max(near_tie=near_tie)


__all__ = [
    "DEFAULT_CHUNK",
    "HistogramAccumulator",
    "calibrate",
    "check_counts",
    "event_histogram",
    "probabilities",
    "select_i_max",
]
