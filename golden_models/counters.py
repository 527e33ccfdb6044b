"""The activity counters of one layer window: one list of names, shared by model, RTL and benches.

:class:`Counters` is what the golden :class:`golden_models.IntegerLayer` counts;
:data:`COUNTER_DEFINITIONS` says what each counter counts, in the same order, for the manifest;
:data:`COUNTER_NAMES` is the order the tile's ``cnt_*`` ports, the manifest and the regression
summary use. No torch here: :mod:`rtl_gen.params` derives the counter widths from these names.
"""

from __future__ import annotations

from dataclasses import dataclass, fields

__all__ = [
    "CONTEXT_COUNTER_DEFINITIONS",
    "CONTEXT_COUNTER_NAMES",
    "COUNTER_DEFINITIONS",
    "COUNTER_NAMES",
    "DENSE_COUNTER_DEFINITIONS",
    "DENSE_COUNTER_NAMES",
    "ENCODER_COUNTER_DEFINITIONS",
    "SCORE_COUNTER_DEFINITIONS",
    "SCORE_COUNTER_NAMES",
    "SOFTMAX_COUNTER_DEFINITIONS",
    "SOFTMAX_COUNTER_NAMES",
    "ContextCounters",
    "Counters",
    "DENSE_CONTEXT_COUNTER_NAMES",
    "DENSE_SCORE_COUNTER_NAMES",
    "DenseContextCounters",
    "DenseCounters",
    "DenseScoreCounters",
    "ScoreCounters",
    "SoftmaxCounters",
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


# -- the attention path of one head (docs/rtl_attention.md) --------------------------------------


@dataclass(frozen=True)
class ScoreCounters:
    """Activity of the query x key tile of one head in one query window.

    ``key_writes`` counts the key codes written into its memory since the sequence started
    (every window of a sequence reports the same number).
    """

    events_in: int = 0
    weight_row_reads: int = 0
    accumulate_ops: int = 0
    scores_out: int = 0
    key_writes: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


#: Counter names of the query x key tile, in the order of :class:`ScoreCounters`.
SCORE_COUNTER_NAMES: tuple[str, ...] = tuple(f.name for f in fields(ScoreCounters))

#: What each query x key counter counts, for the manifest.
SCORE_COUNTER_DEFINITIONS = {
    "events_in": "query event beats of the head (marker beats excluded)",
    "weight_row_reads": "key-memory rows read, one per query event (row = head dimension)",
    "accumulate_ops": "score updates, S (the sequence's key slots) per query event",
    "scores_out": "raw scores sent to the softmax unit, S per window",
    "key_writes": "key codes written into the key memory since the sequence started",
}


@dataclass(frozen=True)
class SoftmaxCounters:
    """Activity of the softmax unit and the ``attn_prob`` encoder of one head, one window.

    ``compare_ops`` counts (key slot, step) compares of the probability walk as
    :class:`Counters` counts a tile's.
    """

    scores_in: int = 0
    exp_ops: int = 0
    divisions: int = 0
    compare_ops: int = 0
    events_out: int = 0
    events_suppressed: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


#: Counter names of the softmax unit, in the order of :class:`SoftmaxCounters`.
SOFTMAX_COUNTER_NAMES: tuple[str, ...] = tuple(f.name for f in fields(SoftmaxCounters))

#: What each softmax counter counts, for the manifest.
SOFTMAX_COUNTER_DEFINITIONS = {
    "scores_in": "raw scores received (marker beats excluded)",
    "exp_ops": "exponentials looked up in the EXP2 table, one per valid key",
    "divisions": "reciprocals of the row's sum, one per row",
    "compare_ops": "(key slot, step) compares of the attn_prob walk: not-yet-fired slots at "
    "t <= T-2",
    "events_out": "attn_prob events emitted (outside the dead zone)",
    "events_suppressed": "key slots whose attn_prob code falls in the dead zone, not emitted",
}


@dataclass(frozen=True)
class ContextCounters:
    """Activity of the probability x value tile of one head in one query window: the tile's
    :class:`Counters` and the value codes written since the sequence started."""

    events_in: int = 0
    weight_row_reads: int = 0
    accumulate_ops: int = 0
    compare_ops: int = 0
    threshold_reads: int = 0
    events_out: int = 0
    events_suppressed: int = 0
    value_writes: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


#: Counter names of the probability x value tile, in the order of :class:`ContextCounters`.
CONTEXT_COUNTER_NAMES: tuple[str, ...] = tuple(f.name for f in fields(ContextCounters))

#: What each probability x value counter counts, for the manifest.
CONTEXT_COUNTER_DEFINITIONS = {
    "events_in": "attn_prob event beats (marker beats excluded)",
    "weight_row_reads": "value-memory rows read, one per attn_prob event (row = key slot)",
    "accumulate_ops": "membrane updates, d_k per attn_prob event",
    "compare_ops": COUNTER_DEFINITIONS["compare_ops"],
    "threshold_reads": "thresholds of the shared attn_out_in table consumed, one per compare",
    "events_out": "attn_out_in events emitted (outside the dead zone)",
    "events_suppressed": "head dimensions whose attn_out_in code falls in the dead zone",
    "value_writes": "value codes written into the value memory since the sequence started",
}


@dataclass(frozen=True)
class DenseScoreCounters:
    """The query x key tile of the dense design, one window: every query code read."""

    codes_in: int = 0
    weight_row_reads: int = 0
    mac_ops: int = 0
    scores_out: int = 0
    key_writes: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


#: Counter names of the dense query x key tile.
DENSE_SCORE_COUNTER_NAMES: tuple[str, ...] = tuple(f.name for f in fields(DenseScoreCounters))


@dataclass(frozen=True)
class DenseContextCounters:
    """The probability x value tile of the dense design, one window: every probability code
    read, every output code sent (:class:`DenseCounters` and the value codes written)."""

    codes_in: int = 0
    weight_row_reads: int = 0
    mac_ops: int = 0
    compare_ops: int = 0
    threshold_reads: int = 0
    codes_out: int = 0
    value_writes: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


#: Counter names of the dense probability x value tile.
DENSE_CONTEXT_COUNTER_NAMES: tuple[str, ...] = tuple(
    f.name for f in fields(DenseContextCounters))
