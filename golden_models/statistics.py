"""Spike statistics of a position: transmitted events per activation, spike rate, ``s``.

Every activation has exactly one pre-mask event time, so with the histogram ``p_t`` of a
position (Eq. mttfs_histogram) a mask with silent set ``Omega`` transmits

    ``s_tx = 1 - sum_{t in Omega} p_t``        (Eq. dz_event_count)

events per activation and per window. The per-step spike rate is ``rate = s_tx / T``, and the
paper's ``s = rate * T`` (Table spike_rate) equals ``s_tx``. Standard TTFS is the mask whose
silent set is the lowest level (``I_max = T-1``, ``k = 0``; :func:`golden_models.ttfs_mask`).

:class:`PositionStats` is the JSON record the energy model reads; its schema is in
``docs/golden_models.md`` and :meth:`PositionStats.from_dict` checks it field by field.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

import torch

from golden_models.calibration import check_counts, event_histogram, select_i_max
from golden_models.codespace import FAMILIES, CodeSpace
from golden_models.mask import Mask, ttfs_mask
from golden_models.mttfs import event_time
from toolkit_base.files import write_atomic
from toolkit_base.schemas import validate

#: Identifier and version of the statistics file format.
SCHEMA = "matterhorn.golden_stats/1"
SCHEMA_VERSION = 1
#: Dead-zone radii recorded by default.
DEFAULT_KS = (0, 1, 2, 3, 4)


def events_per_activation(counts: torch.Tensor, mask: Mask) -> float:
    """``s_tx = 1 - sum_{t in Omega_k} p_t`` from event-time counts ``[T]``."""
    counts = check_counts(counts, mask.space)
    silent = int(counts[list(mask.silent_times)].sum())
    total = int(counts.sum())
    return (total - silent) / total


def transmitted_events(counts: torch.Tensor, mask: Mask) -> int:
    """Number of transmitted events ``sum_{t not in Omega_k} n_t`` (exact integer)."""
    counts = check_counts(counts, mask.space)
    return int(counts.sum()) - int(counts[list(mask.silent_times)].sum())


def spike_rate(s_tx: float, T: int) -> float:
    """Per-step spike rate ``s_tx / T`` (the paper's rate; ``s = rate * T``)."""
    return s_tx / T


def events_per_activation_of_codes(q: torch.Tensor, mask: Mask) -> float:
    """``s_tx`` counted directly on codes (no histogram): transmitted events / activations."""
    if q.numel() == 0:
        raise ValueError("q is empty: no activations to count")
    tau = event_time(q, mask.space)
    return int(mask.transmitted(tau).sum()) / q.numel()


@dataclass(frozen=True)
class Rate:
    """Events per activation ``s`` and per-step spike rate of one mask."""

    s: float
    rate: float
    silent_times: tuple[int, ...]
    k: int | None = None  # None for TTFS

    def as_dict(self) -> dict:
        d = {"s": self.s, "rate": self.rate, "silent_times": list(self.silent_times)}
        if self.k is not None:
            d["k"] = self.k
        return d


def _rate(counts: torch.Tensor, mask: Mask, k: int | None) -> Rate:
    s = events_per_activation(counts, mask)
    return Rate(s, spike_rate(s, mask.T), mask.silent_times, k)


@dataclass(frozen=True)
class PositionStats:
    """Statistics of one spike-encoded position (JSON-serialisable with :meth:`as_dict`).

    Parameters
    ----------
    name : str
        Position name, e.g. ``"FFN-contract input"``.
    space : CodeSpace
    counts : tuple of int
        Event-time counts ``n_t``, ``t = 0..T-1`` (code ``c - t``).
    i_max : int
        Silent centre used for the M-TTFS rates.
    ks : tuple of int
        Dead-zone radii to report (those ``< T``).
    """

    name: str
    space: CodeSpace
    counts: tuple[int, ...]
    i_max: int
    ks: tuple[int, ...] = DEFAULT_KS

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise TypeError(f"name must be a string, not {self.name!r}")
        check_counts(torch.tensor(self.counts, dtype=torch.int64), self.space)
        Mask(self.space, self.i_max, 0)
        for k in self.ks:
            if isinstance(k, bool) or not isinstance(k, int) or k < 0:
                raise ValueError(f"ks must hold integers >= 0, not {k!r}")

    @classmethod
    def from_codes(
        cls,
        name: str,
        q: torch.Tensor,
        space: CodeSpace,
        *,
        i_max: int | None = None,
        near_tie: float = 0.0,
        ks: tuple[int, ...] = DEFAULT_KS,
    ) -> PositionStats:
        """Histogram the codes ``q`` and calibrate ``I_max`` (unless given)."""
        counts = event_histogram(q, space)
        return cls.from_counts(name, counts, space, i_max=i_max, near_tie=near_tie, ks=ks)

    @classmethod
    def from_counts(
        cls,
        name: str,
        counts: torch.Tensor,
        space: CodeSpace,
        *,
        i_max: int | None = None,
        near_tie: float = 0.0,
        ks: tuple[int, ...] = DEFAULT_KS,
    ) -> PositionStats:
        counts = check_counts(counts, space)
        if i_max is None:
            i_max = select_i_max(counts, space, near_tie=near_tie)
        return cls(name, space, tuple(int(n) for n in counts), i_max, tuple(ks))

    @property
    def total(self) -> int:
        return sum(self.counts)

    @property
    def probabilities(self) -> list[float]:
        return [n / self.total for n in self.counts]

    @property
    def p_q0(self) -> float:
        """Fraction of activations with code 0."""
        return self.counts[self.space.c] / self.total

    @property
    def p_mode(self) -> float:
        """Fraction of activations at the silent centre, ``p_{I_max}``."""
        return self.counts[self.i_max] / self.total

    def _t(self) -> torch.Tensor:
        return torch.tensor(self.counts, dtype=torch.int64)

    def ttfs(self) -> Rate:
        """Standard TTFS: the lowest level is silent."""
        return _rate(self._t(), ttfs_mask(self.space), None)

    def mttfs(self, k: int) -> Rate:
        """M-TTFS with silent centre ``I_max`` and radius ``k``."""
        return _rate(self._t(), Mask(self.space, self.i_max, k), k)

    def as_dict(self) -> dict:
        sp = self.space
        return {
            "name": self.name,
            "T": sp.T,
            "family": sp.family,
            "c": sp.c,
            "activations": self.total,
            "histogram": list(self.counts),
            "i_max": self.i_max,
            "mu": sp.c - self.i_max,
            "p_q0": self.p_q0,
            "p_mode": self.p_mode,
            "ttfs": self.ttfs().as_dict(),
            "mttfs": [self.mttfs(k).as_dict() for k in self.ks if k < sp.T],
        }

    @classmethod
    def from_dict(cls, d: object) -> PositionStats:
        """Read a record written by :meth:`as_dict`; a malformed one raises naming the field."""
        if not isinstance(d, dict):
            raise TypeError(f"a position record must be a JSON object, not {type(d).__name__}")
        for key, typ in (("name", str), ("T", int), ("family", str), ("histogram", list),
                         ("i_max", int), ("mttfs", list)):
            if key not in d:
                raise ValueError(f"position record lacks the field {key!r}")
            if not isinstance(d[key], typ) or isinstance(d[key], bool):
                raise TypeError(f"field {key!r} must be {typ.__name__}, not {d[key]!r}")
        if d["family"] not in FAMILIES:
            raise ValueError(f"field 'family' must be one of {FAMILIES}, not {d['family']!r}")
        space = CodeSpace(d["T"], d["family"])
        hist = d["histogram"]
        if len(hist) != space.T or not all(isinstance(n, int) and n >= 0 for n in hist):
            raise ValueError(f"field 'histogram' must hold {space.T} counts >= 0, not {hist!r}")
        ks = []
        for i, r in enumerate(d["mttfs"]):
            if not isinstance(r, dict) or not isinstance(r.get("k"), int):
                raise ValueError(f"field 'mttfs[{i}].k' must be an integer")
            ks.append(r["k"])
        stats = cls(d["name"], space, tuple(hist), d["i_max"], tuple(ks))
        # a record whose derived figures disagree with its histogram is corrupt
        for i, r in enumerate(d["mttfs"]):
            if not math.isclose(r.get("s", math.nan), stats.mttfs(r["k"]).s, abs_tol=1e-12):
                raise ValueError(f"field 'mttfs[{i}].s' disagrees with the histogram")
        return stats


def _mean(stats: list[PositionStats], get) -> float:
    total = sum(p.total for p in stats)
    return sum(get(p) * p.total for p in stats) / total


def stats_document(positions: list[PositionStats]) -> dict:
    """The statistics file: all positions plus activation-weighted averages of ``s``."""
    if not positions:
        raise ValueError("positions is empty: nothing to record")
    ks = sorted(set.intersection(*(set(k for k in p.ks if k < p.space.T) for p in positions)))
    return {
        "schema": SCHEMA,
        "version": SCHEMA_VERSION,
        "positions": [p.as_dict() for p in positions],
        "average": {
            "activations": sum(p.total for p in positions),
            "ttfs": {"s": _mean(positions, lambda p: p.ttfs().s)},
            "mttfs": [{"k": k, "s": _mean(positions, lambda p, k=k: p.mttfs(k).s)} for k in ks],
        },
    }


def write_stats(path: str | os.PathLike, positions: list[PositionStats]) -> None:
    """Write :func:`stats_document` as deterministic JSON (temporary file, then rename)."""
    text = json.dumps(stats_document(positions), indent=1, sort_keys=True) + "\n"
    write_atomic(path, text, prefix=".stats-")


def read_stats(path: str | os.PathLike) -> list[PositionStats]:
    """Read a statistics file, checking its schema."""
    with open(path) as f:
        doc = json.load(f)
    validate(doc, "golden_stats", os.path.basename(path))
    return [PositionStats.from_dict(p) for p in doc["positions"]]


__all__ = [
    "DEFAULT_KS",
    "SCHEMA",
    "SCHEMA_VERSION",
    "PositionStats",
    "Rate",
    "events_per_activation",
    "events_per_activation_of_codes",
    "read_stats",
    "spike_rate",
    "stats_document",
    "transmitted_events",
    "write_stats",
]
