"""Typed stimulus options of each bench, and the one home of the backpressure defaults.

A :class:`regression.jobs.Job` carries one of these frozen dataclasses (hashable, so a job can
key a cache). Every field has the default the regression runs with; ``matterhorn regress``
never changes them, the benchmarks and the self-checks do (``corrupt``, longer runs).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "AttentionStimulus",
    "AddNormStimulus",
    "AXI_CORRUPT_MODES",
    "AxiStimulus",
    "DenseTileStimulus",
    "P_IDLE",
    "P_STALL",
    "SYSTEM_P_IDLE",
    "EncoderStimulus",
    "FastSystemStimulus",
    "FastTileStimulus",
    "RouterStimulus",
    "SoftmaxStimulus",
    "SramStimulus",
    "SystemStimulus",
    "TileStimulus",
]

#: Probability of an idle cycle on a bench's input stream (no beat offered).
P_IDLE = 0.25
#: Probability of a low ``ready`` on a bench's output stream (backpressure).
P_STALL = 0.35
#: The system bench offers its inputs a little more often: its windows are long already.
SYSTEM_P_IDLE = 0.2
#: Self-check modes: alter or drop one expected item, so the bench must fail.
CORRUPT_MODES = (None, "alter", "drop")
#: Where the rows of the non-linear units' benches come from.
UNIT_SOURCES = ("random", "minilm")


@dataclass(frozen=True)
class EncoderStimulus:
    """``vectors`` code vectors; one reset in the middle of a vector when ``reset``."""

    vectors: int = 40
    reset: bool = True
    p_idle: float = P_IDLE
    p_stall: float = P_STALL
    corrupt: str | None = None


@dataclass(frozen=True)
class SramStimulus:
    """Golden weight rows written then read over ``windows`` windows, then ``random_ops``
    random reads and writes; ``p_idle`` is the chance of an idle cycle after an access."""

    windows: int = 12
    random_ops: int = 64
    reset: bool = True
    p_idle: float = 0.2
    corrupt: str | None = None


@dataclass(frozen=True)
class TileStimulus:
    """``blocks`` random layers (each loaded once) of ``windows`` windows, radii ``ks``; one
    reset during integrate and one during fire when ``reset``."""

    ks: tuple[int, ...] = (0, 1, 2)
    blocks: int = 6
    windows: int = 8
    reset: bool = True
    p_idle: float = P_IDLE
    p_stall: float = P_STALL
    corrupt: str | None = None


@dataclass(frozen=True)
class DenseTileStimulus:
    """``blocks`` random layers (each loaded once) of ``windows`` windows of codes for the dense
    INT4 baseline tile."""

    blocks: int = 3
    windows: int = 4
    p_idle: float = P_IDLE
    p_stall: float = P_STALL
    corrupt: str | None = None


@dataclass(frozen=True)
class RouterStimulus:
    """``rounds`` passes over every mesh position, ``flits`` per input port (twice that on the
    local port); one reset between phases when ``reset``. Three rounds, not two: with two, one
    (input, output, stalled) bin of the T=16 set was hit once or not at all, depending on
    where in a clock step the bench's waits resume."""

    flits: int = 10
    rounds: int = 3
    reset: bool = True
    p_idle: float = P_IDLE
    p_stall: float = P_STALL
    corrupt: str | None = None


@dataclass(frozen=True)
class SystemStimulus:
    """``inferences`` random input vectors through the mapped QNN; one reset when ``reset``."""

    inferences: int = 8
    reset: bool = True
    p_idle: float = SYSTEM_P_IDLE
    p_stall: float = P_STALL
    corrupt: str | None = None


@dataclass(frozen=True)
class FastTileStimulus:
    """The tile bench's blocks and windows (:class:`TileStimulus`, no resets) run by the fast
    harness (:mod:`regression.fast`), played ``repeat`` times over; ``p_idle`` / ``p_stall``
    as the per-beat bench's, drawn in hardware. ``corrupt``: ``"alter"``, ``"drop"`` (one
    expected event) or ``"weight"`` (a flipped weight row loaded), so the run must fail."""

    ks: tuple[int, ...] = (0, 1, 2)
    blocks: int = 6
    windows: int = 8
    repeat: int = 1
    p_idle: float = P_IDLE
    p_stall: float = P_STALL
    corrupt: str | None = None


@dataclass(frozen=True)
class FastSystemStimulus:
    """The system bench's inferences (:class:`SystemStimulus`, no reset) run by the fast
    harness, played ``repeat`` times over; ``corrupt``: ``"alter"`` or ``"drop"``."""

    inferences: int = 8
    repeat: int = 1
    p_idle: float = SYSTEM_P_IDLE
    p_stall: float = P_STALL
    corrupt: str | None = None


@dataclass(frozen=True)
class AttentionStimulus:
    """The attention benches' sequences (``attention``, ``attn_softmax``), run by the fast
    harness: ``sequences`` random ones, or ``sentences`` of MiniLM's calibration split when the
    job's parameters say ``source = "minilm"``; masks at radius ``k``; played ``repeat`` times
    over. ``corrupt``: ``"alter"``, ``"drop"`` (one expected event), ``"key-drop"``,
    ``"key-alter"``, ``"key-stale"`` (a key write lost, changed, or of the previous sequence:
    ``regression.attention``), so the run must fail."""

    sequences: int = 3
    sentences: int = 8
    k: int = 1
    repeat: int = 1
    p_idle: float = P_IDLE
    p_stall: float = P_STALL
    corrupt: str | None = None


#: Self-check modes of the AXI benches: one expected output word altered or dropped, or
#: ``"load"``: bit 0 of every ``LOAD_DATA`` word flipped on its way in (wrong images, a fault
#: the expectation does not know).
AXI_CORRUPT_MODES = (None, "alter", "drop", "load")


@dataclass(frozen=True)
class AxiStimulus:
    """``runs`` input vectors (inferences or windows) through an AXI wrapper; every AXI channel
    pauses with probability ``p_pause`` on a clock; ``bad_tlast``: the system's second vector
    carries a stray TLAST; ``corrupt``: one of :data:`AXI_CORRUPT_MODES`."""

    runs: int = 4
    p_pause: float = 0.3
    bad_tlast: bool = True
    corrupt: str | None = None


@dataclass(frozen=True)
class SoftmaxStimulus:
    """``cases`` random softmax units (constants loaded, then ``rows`` rows each, the corner
    rows first), or with ``source="minilm"`` the rows the integer MiniLM's six softmax units
    see on ``sentences`` evaluation sentences (``rows`` per block)."""

    cases: int = 2
    rows: int = 12
    source: str = "random"
    sentences: int = 2
    p_idle: float = P_IDLE
    p_stall: float = P_STALL
    corrupt: str | None = None


@dataclass(frozen=True)
class AddNormStimulus:
    """``cases`` random residual-add + LayerNorm units, ``rows`` rows each, or with
    ``source="minilm"`` the rows MiniLM's twelve LayerNorms see on ``sentences`` sentences."""

    cases: int = 2
    rows: int = 4
    source: str = "random"
    sentences: int = 2
    p_idle: float = P_IDLE
    p_stall: float = P_STALL
    corrupt: str | None = None
