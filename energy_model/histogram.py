"""From a code histogram to the model's inputs: spike rates and bit-serial bit-events.

The masks are the ones of :mod:`golden_models.mttfs` (one definition of the dead zone): a value
with code ``q`` is silent iff ``q`` is in ``Mask.silent_codes`` (``|q - mu| <= k``), otherwise it
sends exactly one event. Standard TTFS is ``ttfs_mask`` (silence on the lowest level).

Bit-serial QNN (paper, "Spike Rate and Energy" and Appendix "Bit-serial QNN accounting"): values
in the dead zone are projected to ``mu`` and skipped; every other value sends one routed event
per one-bit of its centred value ``d = q - mu`` (``d = q`` at the paper's ``mu = 0``). The paper
names two readings, both implemented:

- ``"signed"``: one-bits of the two's-complement code of ``d`` ("active bit of the remaining
  signed code", main text). ``-1`` in 4 bits is ``1111``: 4 events.
- ``"magnitude"``: one-bits of ``|d|`` ("nonzero bits of its magnitude", appendix). ``-1``: 1 event.

Asymmetric positions at ``mu = 0`` have no negative values, so both readings agree there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from golden_models.codespace import CodeSpace
from golden_models.mask import Mask, ttfs_mask

#: Bit-event conventions; the default is the one the paper's printed rows fit.
BIT_CONVENTIONS = ("signed", "magnitude")


@dataclass(frozen=True)
class Histogram:
    """Counts of the integer codes of one spike-encoded position.

    Parameters
    ----------
    space : CodeSpace
        Code space (``T`` and family) the codes belong to.
    counts : Mapping[int, int | float]
        Code -> count (or probability). Codes absent count 0.
    """

    space: CodeSpace
    counts: Mapping[int, float]

    def __post_init__(self) -> None:
        if not isinstance(self.space, CodeSpace):
            raise TypeError(f"space must be a CodeSpace, not {self.space!r}")
        clean = {}
        for code, count in self.counts.items():
            if isinstance(code, bool) or not isinstance(code, int):
                raise TypeError(f"histogram codes must be integers, not {code!r}")
            if not self.space.q_min <= code <= self.space.q_max:
                raise ValueError(
                    f"histogram code {code} is outside the levels "
                    f"{self.space.q_min}..{self.space.q_max} of {self.space}"
                )
            if isinstance(count, bool) or not isinstance(count, int | float) or not count >= 0:
                raise ValueError(f"histogram count of code {code} must be >= 0, not {count!r}")
            clean[code] = count
        if sum(clean.values()) <= 0:
            raise ValueError("histogram is empty (all counts are 0)")
        object.__setattr__(self, "counts", dict(sorted(clean.items())))

    @property
    def total(self) -> float:
        return float(sum(self.counts.values()))

    def probability(self, code: int) -> float:
        return self.counts.get(code, 0) / self.total

    def mode(self) -> int:
        """The most frequent code (lowest code on a tie)."""
        best = max(self.counts.values())
        return min(code for code, count in self.counts.items() if count == best)


def events_per_value(hist: Histogram, mask: Mask) -> float:
    """Events per value per window ``s``: the fraction of values outside the mask's silent set."""
    if mask.space != hist.space:
        raise ValueError(f"mask is for {mask.space}, histogram for {hist.space}")
    silent = set(mask.silent_codes)
    return sum(c for q, c in hist.counts.items() if q not in silent) / hist.total


def spike_rate(hist: Histogram, mask: Mask) -> float:
    """Per-step spike rate ``r = s / T`` (a fraction, not a percentage)."""
    return events_per_value(hist, mask) / mask.space.T


def ttfs_rate(hist: Histogram) -> float:
    """Per-step spike rate of standard TTFS (silence on the lowest level)."""
    return spike_rate(hist, ttfs_mask(hist.space))


def mttfs_rate(hist: Histogram, k: int, mu: int = 0) -> float:
    """Per-step spike rate of M-TTFS with dead-zone radius ``k`` around ``mu`` (paper: 0)."""
    return spike_rate(hist, Mask(hist.space, hist.space.i_max_of(mu), k))


def _signed_width(lo: int, hi: int) -> int:
    width = 1
    while not (-(1 << (width - 1)) <= lo and hi <= (1 << (width - 1)) - 1):
        width += 1
    return width


def code_bits(d: int, space: CodeSpace, mu: int, convention: str) -> int:
    """One-bits (bit-serial events) of the centred value ``d`` under ``convention``."""
    if convention not in BIT_CONVENTIONS:
        raise ValueError(f"bit convention must be one of {BIT_CONVENTIONS}, not {convention!r}")
    if convention == "magnitude" or d >= 0:
        return abs(d).bit_count()
    width = _signed_width(space.q_min - mu, space.q_max - mu)
    return (d & ((1 << width) - 1)).bit_count()


def bit_events_per_value(
    hist: Histogram, k: int, *, mu: int = 0, convention: str = "signed"
) -> float:
    """Routed bit-events per value (= per delivery) of the bit-serial QNN under the ``k`` mask.

    Parameters
    ----------
    hist : Histogram
    k : int
        Dead-zone radius of the mask pattern; values with ``|q - mu| <= k`` are skipped.
    mu : int
        Silent integer (the paper's global rule: 0).
    convention : {"signed", "magnitude"}
        See the module docstring.
    """
    mask = Mask(hist.space, hist.space.i_max_of(mu), k)
    silent = set(mask.silent_codes)
    bits = sum(
        count * code_bits(q - mu, hist.space, mu, convention)
        for q, count in hist.counts.items()
        if q not in silent
    )
    return bits / hist.total
