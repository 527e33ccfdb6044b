"""The paper's analytical energy model (Eqs. opt-fc and opto-score), per position and per block.

Every row is a sum over the eight spike-encoded positions of one encoder block. At position
``p`` with ``D`` deliveries (elements times fan-out), ``N`` outputs of the consuming layer, ``KV``
K/V elements written there, per-step rate ``r``, ``s = T*r`` events per value per window and
``w`` the weight width (:attr:`ModelDims.weight_bits`: 1 for the paper's BERT, 4 for LLaMA-2):

Dense QNN (``a`` activation bits)
    Move ``D*a*E_move_dense`` (+ the same again on attention positions: the K/V operand moves too)
    W-read ``(D*w | D*a on attention) * E_weight``; KV-write ``KV*a*E_weight``
    Compute ``D*(MAC(w) | E_MAC4x4 on attention) + 2*N*E_clamp4``; ``MAC(1) = E_MAC4``,
    ``MAC(4) = E_MAC4x4``, other ``w``: ``E_MAC<w>x4`` from the table (:func:`mac_key`)
TTFS family (Otters T=15, Matterhorn TTFS and M-TTFS; ``s <= 1``: one spike per value at most)
    Move ``s*D*E_move_event``
    W-read ``(s*D*(w | v) + T*N*threshold_bits) * E_weight``, ``v = ceil(log2 T)``;
    KV-write ``KV*v*E_weight``
    Compute ``s*D*(EV + E_enc) + T*N*E_CMP``, ``EV = MAC(w)`` (attention path at E_MAC4)
Rate-coded (``b = log2 T``; ``s`` up to ``T``)
    Move ``s*D*E_move_event``
    W-read ``s*D*(w | b) * E_weight``; KV-write ``KV*b*E_weight``
    Compute ``s*D*(E_ACC<w> | E_ACC<b>) + T*N*E_CMP + s*N*E_SUB`` (a reset per output spike)
Bit-serial QNN (``e`` routed bit-events per delivery)
    Move ``e*D*E_move_event``; W-read ``e*D*(w | attention read bits)*E_weight``;
    KV-write ``KV*a*E_weight`` only with :attr:`Options.bitserial_kv_write`;
    Compute ``e*D*(E_ACC<w> | E_ACC1 on attention) + 2*N*E_clamp4``

The K/V write (the key and value codes written into the attention tiles' memories as run-time
weights, at the K- and V-projection positions) is the component ``kvwrite`` of its own: the
paper folds it into its W-read column, which is ``wread + kvwrite`` here
(:mod:`energy_model.reproduction` compares them so).

At ``w = 1`` these are the paper's formulas. The event operators at ``w > 1`` (``MAC(w)``,
``E_ACC<w>``) are our choice, :attr:`Options.event_accumulate`; ``"one-bit"`` keeps ``E_MAC4``
and ``E_ACC1``. :func:`position_ops` gives the operation counts behind every term. Each
asymmetry of these conventions is an :class:`Options` field; the defaults are the paper's.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace

from energy_model.dims import ModelDims, PositionCounts, block_totals, position_counts, preset
from energy_model.quantity import Quantity, format_sig
from energy_model.rates import BitEvents, Rate, Rates, check_ttfs_events
from energy_model.unit_costs import UnitCosts, paper_unit_costs

#: Energy components, in the paper's column order.
COMPONENTS = ("move", "wread", "kvwrite", "compute")
COMPONENT_LABELS = {"move": "Move", "wread": "W-read", "kvwrite": "KV-write",
                    "compute": "Compute", "total": "Total"}
ENCODINGS = ("rate", "ttfs", "dense", "bit-serial")
#: Values of :attr:`Options.event_accumulate`.
EVENT_ACCUMULATES = ("weight-width", "one-bit")


@dataclass(frozen=True)
class Options:
    """Named conventions of the accounting. Defaults reproduce the paper.

    Parameters
    ----------
    qnn_kv_operand_move : bool
        Dense QNN: charge movement for the K/V operand of every attention delivery as well as
        the activation (paper: yes; the spiking rows move only the activation).
    bitserial_kv_write : bool
        Bit-serial QNN: charge the K/V write (paper: no; every other row pays it).
    bitserial_attention_read_bits : int
        Bit-serial QNN: bits read per attention delivery (paper: 1, like a 1-bit weight; the
        other rows read ``activation_bits``).
    pooler_amortization : bool
        Add the QNN pooler transfer (``B*C`` values delivered to ``C`` outputs at
        ``activation_bits`` dense bits each) divided over ``layers`` blocks to every row's Move
        (paper: below the printed precision, left out).
    attention_outputs : {"paper", "exact"}
        Outputs of ``P V``: ``B*h*S^2`` like ``Q K^T`` (paper) or ``B*h*S*d_k``.
    activation_bits : int or None
        ``a``: activation and K/V width of the dense and bit-serial QNN; ``None`` (default)
        means ``log2 T`` of the rates (the source QNN of a ``T``-step network: 4 at the paper's
        T=16). :func:`compute` records the resolved value in the report. TTFS-family
        rows use ``ceil(log2 T)`` of their own ``T`` (4 at T=15 and T=16); rate-coded rows
        ``log2 T``.
    threshold_bits : int
        TTFS family: threshold-table bits read per output per step (paper: 4).
    rate_reset_per_spike : bool
        Rate-coded rows: one ``E_SUB`` reset per output spike (paper: yes).
    bit_convention : {"signed", "magnitude"}
        How bit-events are counted from a code histogram (see :mod:`energy_model.histogram`);
        recorded in reports; the conversion itself happens when rates are built.
    event_accumulate : {"weight-width", "one-bit"}
        What one delivered event's accumulate costs on a linear layer when the weights are wider
        than 1 bit (:attr:`ModelDims.weight_bits` ``w`` > 1). The paper is silent: all its
        spiking rows are W1. ``"weight-width"`` (default): the operator of the weight's width,
        as the paper pairs them at ``w = 1``. TTFS-family events pay the dense path's
        ``w``-bit x INT4 MAC (its table gives ``E_MAC4`` to "QNN and TTFS linear paths" alike:
        ``E_MAC4x4`` at ``w = 4``); rate-coded and bit-serial events pay ``E_ACC<w>`` (it
        charges an accumulate of the operand's width: ``E_ACC1`` for 1-bit weights, ``E_ACC4``
        and ``E_ACC2`` for the 4- and 2-bit attention operands). ``"one-bit"``: keep the paper's
        W1 operators (``E_MAC4``, ``E_ACC1``) at any ``w``; only the weight read widens. Both
        are the paper's model at ``w = 1``.
    """

    qnn_kv_operand_move: bool = True
    bitserial_kv_write: bool = False
    bitserial_attention_read_bits: int = 1
    pooler_amortization: bool = False
    attention_outputs: str = "paper"
    activation_bits: int | None = None
    threshold_bits: int = 4
    rate_reset_per_spike: bool = True
    bit_convention: str = "signed"
    event_accumulate: str = "weight-width"

    def __post_init__(self) -> None:
        for name in (
            "qnn_kv_operand_move",
            "bitserial_kv_write",
            "pooler_amortization",
            "rate_reset_per_spike",
        ):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, not {getattr(self, name)!r}")
        for name in ("bitserial_attention_read_bits", "activation_bits", "threshold_bits"):
            v = getattr(self, name)
            if v is None and name == "activation_bits":
                continue
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 16:
                raise ValueError(f"{name} must be an integer in 1..16, not {v!r}")
        if self.attention_outputs not in ("paper", "exact"):
            raise ValueError(
                f"attention_outputs must be 'paper' or 'exact', not {self.attention_outputs!r}"
            )
        if self.bit_convention not in ("signed", "magnitude"):
            raise ValueError(
                f"bit_convention must be 'signed' or 'magnitude', not {self.bit_convention!r}"
            )
        if self.event_accumulate not in EVENT_ACCUMULATES:
            raise ValueError(
                "event_accumulate must be 'weight-width' or 'one-bit', "
                f"not {self.event_accumulate!r}"
            )

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class RowSpec:
    """One row of the table: an encoding with its activity input.

    Parameters
    ----------
    name : str
    encoding : {"rate", "ttfs", "dense", "bit-serial"}
    T : int, optional
        Time steps (rate and TTFS families).
    rate : Rate, optional
        Per-step spike rate (rate and TTFS families).
    bit_events : BitEvents, optional
        Bit-events per delivery (bit-serial).
    k : int, optional
        Mask radius the row belongs to (M-TTFS and bit-serial).
    """

    name: str
    encoding: str
    T: int | None = None
    rate: Rate | None = None
    bit_events: BitEvents | None = None
    k: int | None = None

    def __post_init__(self) -> None:
        if self.encoding not in ENCODINGS:
            raise ValueError(f"encoding must be one of {ENCODINGS}, not {self.encoding!r}")
        if self.encoding in ("rate", "ttfs") and (self.T is None or self.rate is None):
            raise ValueError(f"row {self.name!r} ({self.encoding}) needs T and a rate")
        if self.encoding == "bit-serial" and self.bit_events is None:
            raise ValueError(f"row {self.name!r} (bit-serial) needs bit_events")
        if self.T is not None and (
            isinstance(self.T, bool) or not isinstance(self.T, int) or self.T < 1
        ):
            raise ValueError(f"T of row {self.name!r} must be a positive integer, not {self.T!r}")
        if self.encoding == "ttfs":
            check_ttfs_events(self.T, self.rate, f"row {self.name!r}")


def rows_of(rates: Rates) -> list[RowSpec]:
    """The rows of a report in the paper's order: baselines, dense QNN, bit-serial, TTFS, M-TTFS."""
    rows = [RowSpec(b.name, b.encoding, b.T, b.rate) for b in rates.baselines]
    rows.append(RowSpec("Matterhorn QNN (dense)", "dense"))
    for k, bits in rates.bit_serial.items():
        rows.append(RowSpec(f"Bit-serial QNN (k={k} pattern)", "bit-serial", bit_events=bits, k=k))
    if rates.ttfs is not None:
        rows.append(RowSpec("Matterhorn TTFS", "ttfs", rates.T, rates.ttfs))
    for k, rate in rates.mttfs.items():
        rows.append(RowSpec(f"Matterhorn M-TTFS (k={k})", "ttfs", rates.T, rate, k=k))
    return rows


def _bits_of_T(T: int, name: str) -> int:
    if T & (T - 1):
        raise ValueError(f"rate-coded row {name!r} needs T a power of two (b = log2 T), not {T}")
    return max(T.bit_length() - 1, 1)


def mac_key(weight_bits: int) -> str:
    """The unit cost of one ``weight_bits``-bit x INT4 MAC.

    The paper's table has two: ``E_MAC4`` "INT4 MAC, 1-bit W x 4-bit A" (b = 1) and
    ``E_MAC4x4`` "4-bit x 4-bit MAC" (b = 4). For any other width it gives no figure, and we
    invent none: ``E_MAC<b>x4`` must come from the unit-cost table (a user table or a synthesis
    report); :func:`compute` says so if it is missing.
    """
    return {1: "E_MAC4", 4: "E_MAC4x4"}.get(weight_bits, f"E_MAC{weight_bits}x4")


def event_op(encoding: str, weight_bits: int, options: Options) -> str:
    """The operator one delivered event pays on a linear layer (the paper: W1 rows only)."""
    w = weight_bits if options.event_accumulate == "weight-width" else 1
    if encoding == "ttfs":
        return mac_key(w)
    return f"E_ACC{w}"  # rate-coded and bit-serial: an add of the weight, no multiply


def layer_ops(
    encoding: str,
    *,
    deliveries: float,
    read_bits: float,
    op: str,
    outputs: float = 0,
    compares: float = 0,
    threshold_reads: float = 0,
    threshold_bits: int = 4,
    encodes: float | None = None,
) -> dict[str, dict[str, float]]:
    """W-read and Compute op counts of one layer's deliveries: the formulas' common core.

    Dense QNN: W-read ``deliveries * read_bits`` bits, Compute ``deliveries`` x ``op`` (the
    MAC) and ``2 * outputs`` x ``E_clamp4``. TTFS family: W-read ``deliveries * read_bits +
    threshold_reads * threshold_bits`` bits, Compute ``deliveries`` x ``op`` (the event's
    operator), ``encodes`` x ``E_enc`` (left out when ``None``: no encoder in what is priced)
    and ``compares`` x ``E_CMP``. :func:`position_ops` fills the counts from a position's
    dimensions and rates (``T*N`` compares and threshold reads); :func:`window_ops` from the
    counters of one tile window.
    """
    if encoding == "dense":
        return {
            "wread": {"E_weight": deliveries * read_bits},
            "compute": {op: deliveries, "E_clamp4": 2 * outputs},
        }
    if encoding != "ttfs":
        raise ValueError(f"layer_ops covers 'dense' and 'ttfs', not {encoding!r}")
    compute = {op: deliveries}
    if encodes is not None:
        compute["E_enc"] = encodes
    compute["E_CMP"] = compares
    return {
        "wread": {"E_weight": deliveries * read_bits + threshold_reads * threshold_bits},
        "compute": compute,
    }


def position_ops(
    spec: RowSpec, c: PositionCounts, options: Options, *, weight_bits: int = 1
) -> dict[str, dict[str, float]]:
    """Operation counts of row ``spec`` at one position, per component and unit cost.

    Returns ``{"move": {key: n}, "wread": {key: n}, "kvwrite": {key: n}, "compute": {key: n}}``
    where ``n`` is in the
    unit cost's own denominator (ops, bits, events, bit-hops); energy is ``sum(n * E[key])``.
    ``weight_bits`` is the linear layers' weight width ``w`` (:attr:`ModelDims.weight_bits`):
    every row reads ``w`` bits per weight access on a linear layer (the paper: ``E_weight`` is
    "one per-bit value for reads and writes", Appendix C; its W1 rows read 1 bit). Attention
    operands (K, V) are activations: their widths do not follow ``w``.
    """
    D, N, KV, att = c.deliveries, c.outputs, c.kv_elements, c.attention
    a = options.activation_bits
    if a is None:
        raise ValueError("options.activation_bits is unresolved (None): compute() resolves it")
    w = weight_bits
    if spec.encoding == "dense":
        # Appendix C: E_MAC4 "QNN and TTFS linear paths" (1-bit W x 4-bit A), E_MAC4x4 "QNN
        # attention path"; a b-bit weight pays the b-bit x 4-bit MAC (mac_key).
        move = {"E_move_dense": D * a * (2 if att and options.qnn_kv_operand_move else 1)}
        core = layer_ops("dense", deliveries=D, outputs=N, read_bits=a if att else w,
                         op="E_MAC4x4" if att else mac_key(w))
        wread = {"E_weight": core["wread"]["E_weight"]}
        kvwrite = {"E_weight": KV * a}
        compute = core["compute"]
    elif spec.encoding == "bit-serial":
        ev = spec.bit_events.at(c.position) * D
        read_bits = options.bitserial_attention_read_bits if att else w
        move = {"E_move_event": ev}
        wread = {"E_weight": ev * read_bits}
        kvwrite = {"E_weight": KV * a if options.bitserial_kv_write else 0}
        compute = {
            "E_ACC1" if att else event_op("bit-serial", w, options): ev,
            "E_clamp4": 2 * N,
        }
    elif spec.encoding == "ttfs":
        T = spec.T
        # K/V codes of a T-step row are ceil(log2 T) bits: 4 for Otters (T=15) and T=16
        kv = max((T - 1).bit_length(), 1)
        s = T * spec.rate.at(c.position)
        move = {"E_move_event": s * D}
        # the paper charges the TTFS attention path E_MAC4 too ("attention path also at E_MAC4")
        core = layer_ops("ttfs", deliveries=s * D, read_bits=kv if att else w,
                         op="E_MAC4" if att else event_op("ttfs", w, options),
                         compares=T * N, threshold_reads=T * N,
                         threshold_bits=options.threshold_bits, encodes=s * D)
        wread = {"E_weight": core["wread"]["E_weight"]}
        kvwrite = {"E_weight": KV * kv}
        compute = core["compute"]
    else:  # rate-coded
        T = spec.T
        b = _bits_of_T(T, spec.name)
        s = T * spec.rate.at(c.position)
        move = {"E_move_event": s * D}
        wread = {"E_weight": s * D * (b if att else w)}
        kvwrite = {"E_weight": KV * b}
        compute = {f"E_ACC{b}" if att else event_op("rate", w, options): s * D, "E_CMP": T * N}
        if options.rate_reset_per_spike:
            compute["E_SUB"] = s * N
    return {"move": move, "wread": wread, "kvwrite": kvwrite, "compute": compute}


def price(
    ops: dict[str, dict[str, float]], cost: Callable[[str], float]
) -> dict[str, float]:
    """Each component of ``ops`` priced: ``sum(n * cost(key))`` in the unit of ``cost``."""
    return {comp: sum(n * cost(key) for key, n in counts.items()) for comp, counts in ops.items()}


def energy_of(ops: dict[str, dict[str, float]], costs: UnitCosts) -> dict[str, float]:
    """Move, W-read, KV-write and Compute in joules of the op counts ``ops``
    (:func:`position_ops`)."""
    return price({comp: ops[comp] for comp in COMPONENTS}, costs.joules)


def _pooler_ops(dims: ModelDims, options: Options) -> dict[str, dict[str, float]]:
    deliveries = dims.batch * dims.hidden * dims.hidden
    bits = deliveries * options.activation_bits / dims.layers
    return {"move": {"E_move_dense": bits}, "wread": {}, "kvwrite": {}, "compute": {}}


@dataclass(frozen=True)
class Breakdown:
    """Move, W-read, KV-write and Compute of one row (or one position of a row), in joules."""

    move: Quantity
    wread: Quantity
    kvwrite: Quantity
    compute: Quantity

    @property
    def total(self) -> Quantity:
        return self.move + self.wread + self.kvwrite + self.compute

    @classmethod
    def of(cls, parts: dict[str, float]) -> Breakdown:
        return cls(*(Quantity(parts[c], "J") for c in COMPONENTS))

    def to_json(self) -> dict:
        return {
            "move_J": self.move.value,
            "wread_J": self.wread.value,
            "kvwrite_J": self.kvwrite.value,
            "compute_J": self.compute.value,
            "total_J": self.total.value,
        }


@dataclass(frozen=True)
class RowResult:
    """One row of an energy report.

    Members
    -------
    spec : RowSpec
    energy : Breakdown
        Per block.
    positions : dict[str, Breakdown]
        Per spike-encoded position (plus ``"Pooler (amortized)"`` if that option is on).
    rel : float
        Total relative to the dense QNN row.
    effective_rate : float or None
        Delivery-weighted per-step rate (what drives Move), as a fraction.
    events_per_delivery : float or None
        Routed events per delivery (``s`` for spiking rows, bit-events for bit-serial).
    ops : dict[str, dict[str, dict[str, float]]]
        Per position (as ``positions``): the operation counts per component and unit cost
        (:func:`position_ops`), in the unit cost's own denominator.
    """

    spec: RowSpec
    energy: Breakdown
    positions: dict[str, Breakdown]
    rel: float
    effective_rate: float | None
    events_per_delivery: float | None
    ops: dict[str, dict[str, dict[str, float]]] = field(default_factory=dict)

    def op_totals(self) -> dict[str, float]:
        """Operation count per unit cost summed over the block (all components)."""
        out: dict[str, float] = {}
        for per_comp in self.ops.values():
            for counts in per_comp.values():
                for key, n in counts.items():
                    out[key] = out.get(key, 0) + n
        return out

    @property
    def name(self) -> str:
        return self.spec.name

    def to_json(self) -> dict:
        spec = self.spec
        activity = None
        if spec.rate is not None:
            activity = spec.rate.to_json()
        elif spec.bit_events is not None:
            activity = spec.bit_events.to_json()
        return {
            "name": spec.name,
            "encoding": spec.encoding,
            "T": spec.T,
            "k": spec.k,
            "rate_percent": None if self.effective_rate is None else self.effective_rate * 100,
            "events_per_delivery": self.events_per_delivery,
            "activity": activity,
            **self.energy.to_json(),
            "rel_to_dense_qnn": self.rel,
            "positions": {
                p: {**b.to_json(), "ops": self.ops.get(p, {})} for p, b in self.positions.items()
            },
        }


@dataclass(frozen=True)
class EnergyReport:
    """The result of :func:`compute`: rows, inputs and their provenance."""

    model: ModelDims
    rates: Rates
    unit_costs: UnitCosts
    options: Options
    rows: tuple[RowResult, ...]
    counts: dict[str, int] = field(default_factory=dict)
    #: The non-linear units' own component (energy_model.nonlinear), in no row's total; None
    #: when the unit costs have none of their keys.
    nonlinear: object = None

    def row(self, name: str) -> RowResult:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(f"no row {name!r}; rows: {', '.join(r.name for r in self.rows)}")

    def to_dict(self) -> dict:
        return {
            "schema": "matterhorn.energy_report/1",
            "unit": "J per encoder block",
            "model": self.model.to_json(),
            "counts_per_block": self.counts,
            "options": self.options.to_json(),
            "unit_costs": self.unit_costs.to_json(),
            "rates": self.rates.to_json(),
            "rows": [r.to_json() for r in self.rows],
            **({} if self.nonlinear is None else
               {"nonlinear_units": self.nonlinear.to_json()}),
        }

    def to_json(self) -> str:
        """Deterministic JSON text (same inputs, same bytes)."""
        return json.dumps(self.to_dict(), indent=1) + "\n"

    def to_csv(self) -> str:
        """One line per row: Move, W-read, KV-write, Compute, Total in mJ per block, and Rel."""
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(
            [
                "row",
                "encoding",
                "T",
                "k",
                "rate_percent",
                "events_per_delivery",
                "move_mJ",
                "wread_mJ",
                "kvwrite_mJ",
                "compute_mJ",
                "total_mJ",
                "rel_to_dense_qnn",
            ]
        )
        for r in self.rows:
            w.writerow(
                [
                    r.name,
                    r.spec.encoding,
                    _blank(r.spec.T),
                    _blank(r.spec.k),
                    _blank(None if r.effective_rate is None else repr(r.effective_rate * 100)),
                    _blank(None if r.events_per_delivery is None else repr(r.events_per_delivery)),
                    repr(r.energy.move.mJ),
                    repr(r.energy.wread.mJ),
                    repr(r.energy.kvwrite.mJ),
                    repr(r.energy.compute.mJ),
                    repr(r.energy.total.mJ),
                    repr(r.rel),
                ]
            )
        return out.getvalue()

    def positions_csv(self) -> str:
        """One line per (row, position): the per-position breakdown in mJ per block."""
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["row", "position", "move_mJ", "wread_mJ", "kvwrite_mJ", "compute_mJ",
                    "total_mJ"])
        for r in self.rows:
            for p, b in r.positions.items():
                w.writerow(
                    [
                        r.name,
                        p,
                        repr(b.move.mJ),
                        repr(b.wread.mJ),
                        repr(b.kvwrite.mJ),
                        repr(b.compute.mJ),
                        repr(b.total.mJ),
                    ]
                )
        return out.getvalue()

    def ops_csv(self) -> str:
        """One line per (row, position, component, unit cost): the operation count behind it."""
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["row", "position", "component", "unit_cost", "count", "per", "energy_mJ"])
        for r in self.rows:
            for p, per_comp in r.ops.items():
                for comp in COMPONENTS:
                    for key, n in per_comp[comp].items():
                        joules = n * self.unit_costs.joules(key)
                        per = self.unit_costs[key].quantity.unit.split("/", 1)[1]
                        w.writerow([r.name, p, comp, key, repr(float(n)), per, repr(joules * 1e3)])
        return out.getvalue()

    def borrowed(self) -> dict[str, list[str]]:
        """Component (``move``, ``wread``, ``kvwrite``, ``compute``) -> the borrowed unit costs
        (:attr:`UnitCost.borrowed`: the paper's, not our gates) its figures are priced with,
        over every row; components priced with none are left out."""
        used: dict[str, set[str]] = {}
        for r in self.rows:
            for per_comp in r.ops.values():
                for comp in COMPONENTS:
                    used.setdefault(comp, set()).update(
                        key for key, n in per_comp[comp].items() if n)
        return {comp: sorted(k for k in keys if self.unit_costs[k].borrowed)
                for comp, keys in used.items()
                if any(self.unit_costs[k].borrowed for k in keys)}

    def borrowed_note(self) -> list[str]:
        """The lines that say which columns are priced with the paper's unit costs."""
        borrowed = self.borrowed()
        if not borrowed:
            return []
        keys = sorted({k for ks in borrowed.values() for k in ks})

        def costs(names) -> str:
            return ", ".join(f"{k} {format_sig(self.unit_costs[k].quantity.pJ)} "
                             f"{'p' + self.unit_costs[k].quantity.unit}" for k in names)

        if all(c.borrowed for c in self.unit_costs.values()) and "move" in borrowed:
            return [("* every column: priced with the paper's unit costs (22 nm, borrowed, not "
                    f"our gates), movement at {costs(borrowed['move'])}")]
        cols = ", ".join(COMPONENT_LABELS[c] for c in COMPONENTS if c in borrowed)
        return [(f"* {cols}: priced with the paper's unit costs (22 nm, borrowed, not our "
                f"gates): {costs(keys)}")]

    def table(self) -> str:
        """The paper's table layout: mJ per block to four significant digits, and Rel.

        A column priced with a borrowed unit cost (the paper's, not our gates) is marked
        ``*`` and the note under the table names the costs."""
        borrowed = self.borrowed()
        names = COMPONENT_LABELS
        head = ["Model", "T", "Rate/step",
                *(names[c] + ("*" if c in borrowed else "") for c in COMPONENTS),
                "Total", "Rel."]
        lines = []
        for r in self.rows:
            rate = "n/a" if r.effective_rate is None else f"{r.effective_rate * 100:.2f}%"
            if r.spec.encoding == "bit-serial":
                rate = f"{r.events_per_delivery:.3g} bit/dlv"
            lines.append(
                [
                    r.name,
                    "n/a" if r.spec.T is None else str(r.spec.T),
                    rate,
                    *(format_sig(getattr(r.energy, c).mJ) for c in COMPONENTS),
                    format_sig(r.energy.total.mJ),
                    f"{r.rel:.2f}x",
                ]
            )
        widths = [max(len(x) for x in col) for col in zip(head, *lines, strict=True)]
        fmt = "  ".join([f"{{:<{widths[0]}}}"] + [f"{{:>{w}}}" for w in widths[1:]])
        title = (
            f"Energy per encoder block (mJ), {self.model.name}, B={self.model.batch}, "
            f"S={self.model.seq}; event cost "
            f"{format_sig(self.unit_costs['E_move_event'].quantity.pJ)} pJ"
        )
        rule = "-" * (sum(widths) + 2 * (len(widths) - 1))
        out = [title, fmt.format(*head), rule, *(fmt.format(*x) for x in lines)]
        if self.nonlinear is not None:
            nl = self.nonlinear
            wread = "not charged" if nl.wread is None else f"{format_sig(nl.wread.mJ)} mJ"
            out.append(f"Non-linear units (softmax, residual add + LayerNorm), in no row's "
                       f"total: compute {format_sig(nl.compute.mJ)} mJ, buffers {wread}")
        out.extend(self.borrowed_note())
        return "\n".join(out) + "\n"


def _blank(x: object) -> object:
    return "" if x is None else x


def _effective(
    spec: RowSpec, counts: Sequence[PositionCounts]
) -> tuple[float | None, float | None]:
    total = sum(c.deliveries for c in counts)
    if spec.encoding in ("rate", "ttfs"):
        r = sum(spec.rate.at(c.position) * c.deliveries for c in counts) / total
        return r, r * spec.T
    if spec.encoding == "bit-serial":
        return None, sum(spec.bit_events.at(c.position) * c.deliveries for c in counts) / total
    return None, None


def _check_mac_cost(
    weight_bits: int, costs: UnitCosts, options: Options, specs: Sequence[RowSpec]
) -> None:
    """A clear error when a weight width has no MAC in the table (the paper gives b = 1 and 4)."""
    needed = {mac_key(weight_bits)} if any(s.encoding == "dense" for s in specs) else set()
    if any(s.encoding == "ttfs" for s in specs):
        needed.add(event_op("ttfs", weight_bits, options))
    for key in sorted(needed - {"E_MAC4", "E_MAC4x4"}):
        if key not in costs:
            raise ValueError(
                f"weight_bits={weight_bits} needs the unit cost {key!r} (a {weight_bits}-bit x "
                f"4-bit MAC), which the unit costs {costs.name!r} lack: the paper gives only "
                "E_MAC4 (1-bit weights) and E_MAC4x4 (4-bit weights); add it with --unit-costs "
                "or --synth"
            )


def compute(
    model: ModelDims | str = "bert-base",
    rates: Rates | None = None,
    unit_costs: UnitCosts | None = None,
    options: Options | None = None,
    *,
    rows: Sequence[RowSpec] | None = None,
    softmax_bits_per_key: float | None = None,
    norm_bits_per_channel: float | None = None,
) -> EnergyReport:
    """Energy per encoder block of every row.

    Parameters
    ----------
    model : ModelDims or preset name
        Default BERT-base at the paper's B=64, S=128.
    rates : Rates
        Activity inputs; default :meth:`Rates.paper` (SST-2).
    unit_costs : UnitCosts
        Default the paper's table.
    options : Options
        Accounting conventions; default the paper's.
    rows : sequence of RowSpec, optional
        Explicit rows instead of those derived from ``rates``; a dense QNN row is added if
        missing, since Rel. needs it.
    softmax_bits_per_key, norm_bits_per_channel : float, optional
        The non-linear units' buffer bits (``synth_scripts.unit_gates``); with the units' costs
        in ``unit_costs`` the report has their component (:mod:`energy_model.nonlinear`).
    """
    dims = preset(model) if isinstance(model, str) else model
    if not isinstance(dims, ModelDims):
        raise TypeError(f"model must be a ModelDims or a preset name, not {model!r}")
    rates = Rates.paper() if rates is None else rates
    costs = paper_unit_costs() if unit_costs is None else unit_costs
    options = Options() if options is None else options
    if options.activation_bits is None:
        options = replace(options, activation_bits=max(rates.T.bit_length() - 1, 1))
    specs = list(rows_of(rates) if rows is None else rows)
    if not any(s.encoding == "dense" for s in specs):
        specs.insert(0, RowSpec("Matterhorn QNN (dense)", "dense"))
    counts = position_counts(dims, attention_outputs=options.attention_outputs)
    _check_mac_cost(dims.weight_bits, costs, options, specs)

    raw = []
    for spec in specs:
        ops = {
            c.position: position_ops(spec, c, options, weight_bits=dims.weight_bits)
            for c in counts
        }
        if options.pooler_amortization:
            ops["Pooler (amortized)"] = _pooler_ops(dims, options)
        per_pos = {p: energy_of(o, costs) for p, o in ops.items()}
        totals = {comp: math.fsum(p[comp] for p in per_pos.values()) for comp in COMPONENTS}
        raw.append((spec, ops, per_pos, totals))
    dense_spec, dense_ops, _, dense_totals = next(r for r in raw if r[0].encoding == "dense")
    dense_total = sum(dense_totals.values())
    if not dense_total > 0:
        charged = (k for o in dense_ops.values() for c in o.values() for k, n in c.items() if n)
        keys = sorted(set(charged))
        raise ValueError(
            f"Rel. is undefined: the dense QNN row {dense_spec.name!r} costs 0 J per block "
            f"(its unit costs {', '.join(keys)} are all 0)"
        )
    results = []
    for spec, ops, per_pos, totals in raw:
        rate, events = _effective(spec, counts)
        results.append(
            RowResult(
                spec=spec,
                energy=Breakdown.of(totals),
                positions={p: Breakdown.of(v) for p, v in per_pos.items()},
                rel=sum(totals.values()) / dense_total,
                effective_rate=rate,
                events_per_delivery=events,
                ops=ops,
            )
        )
    from energy_model.nonlinear import nonlinear_units

    return EnergyReport(
        model=dims,
        rates=rates,
        unit_costs=costs,
        options=options,
        rows=tuple(results),
        counts=block_totals(dims, attention_outputs=options.attention_outputs),
        nonlinear=nonlinear_units(dims, costs, softmax_bits_per_key=softmax_bits_per_key,
                                  norm_bits_per_channel=norm_bits_per_channel),
    )
