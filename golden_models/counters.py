"""The activity counters of one layer window: one list of names, shared by model, RTL and benches.

:class:`Counters` is what the golden :class:`golden_models.IntegerLayer` counts;
:data:`COUNTER_DEFINITIONS` says what each counter counts, in the same order, for the manifest;
:data:`COUNTER_NAMES` is the order the tile's ``cnt_*`` ports, the manifest and the regression
summary use. No torch here: :mod:`rtl_gen.params` derives the counter widths from these names.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = [
    "COUNTER_DEFINITIONS",
    "COUNTER_NAMES",
    "DENSE_COUNTER_DEFINITIONS",
    "DENSE_COUNTER_NAMES",
    "ENCODER_COUNTER_DEFINITIONS",
    "Counters",
    "DenseCounters",
]


@dataclass(frozen=True)
class Counters:
    """Activity of one layer window, as the RTL counts it (docs/design.md, "The hardware").

    ``compare_ops`` and ``threshold_reads`` count (neuron, step) pairs: a neuron is compared at
    steps ``0 .. min(tau_out, T-2)`` and stops once it has fired.
    """

    events_in: int = 0
    weight_row_reads: int = 0
    accumulate_ops: int = 0
    compare_ops: int = 0
    threshold_reads: int = 0
    events_out: int = 0
    events_suppressed: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


#: Counter names of a tile window, in the order of :class:`Counters`.
COUNTER_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Counters))

#: What each tile counter counts (one window), for the manifest.
COUNTER_DEFINITIONS = {
    "events_in": "input event beats (marker beats excluded)",
    "weight_row_reads": "weight SRAM rows read, one per input event",
    "accumulate_ops": "membrane updates, N per input event",
    "compare_ops": "(neuron, step) compares: not-yet-fired neurons at t <= T-2",
    "threshold_reads": "thresholds consumed, one per compare (the threshold SRAM reads "
    "(T-1)*G rows of L thresholds per window)",
    "events_out": "output events emitted (outside the dead zone)",
    "events_suppressed": "neurons that fired inside the dead zone, not emitted",
}

#: What each encoder counter counts (the last vector), for the manifest.
ENCODER_COUNTER_DEFINITIONS = {
    "events_out": "events emitted for the last vector",
    "events_suppressed": "codes of the last vector inside the dead zone, not emitted",
}


@dataclass(frozen=True)
class DenseCounters:
    """Activity of one window of the dense INT4 baseline (:func:`golden_models.dense.run_dense`).

    ``compare_ops`` and ``threshold_reads`` count (neuron, step) pairs as :class:`Counters` does.
    """

    codes_in: int = 0
    weight_row_reads: int = 0
    mac_ops: int = 0
    compare_ops: int = 0
    threshold_reads: int = 0
    codes_out: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


#: Counter names of a dense window, in the order of :class:`DenseCounters`.
DENSE_COUNTER_NAMES: tuple[str, ...] = tuple(f.name for f in fields(DenseCounters))

#: What each dense-tile counter counts (one window), for the manifest.
DENSE_COUNTER_DEFINITIONS = {
    "codes_in": "input code beats (marker beats excluded), one per input address",
    "weight_row_reads": "weight SRAM rows read, one per input code",
    "mac_ops": "membrane multiply-accumulates, N per input code",
    "compare_ops": COUNTER_DEFINITIONS["compare_ops"],
    "threshold_reads": COUNTER_DEFINITIONS["threshold_reads"],
    "codes_out": "output codes sent (all N), packed P per beat",
}
