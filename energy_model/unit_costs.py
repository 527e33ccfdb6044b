"""Unit costs: the paper's table, a synthesis report or a user file, each value with provenance.

Every file uses the shape of the paper's table (``paper_tables.json``)::

    {"unit_costs_pJ": {"E_MAC4": {"value": 0.06634, "unit": "pJ/op", "provenance": "..."}, ...}}

The section name is historical: the ``unit`` field decides the scale, so ``"fJ/op"`` works too.
A complete table (``--unit-costs FILE``) must hold every key of :data:`REQUIRED`; a synthesis
report may hold only some and is laid over a complete table (:meth:`UnitCosts.overlay`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from energy_model.quantity import Quantity, parse_energy_unit
from toolkit_base.jsonfile import naming, read_json

#: Each key the model uses and the denominator its unit must have.
REQUIRED: dict[str, str] = {
    "E_MAC4": "op",
    "E_MAC4x4": "op",
    "E_ACC1": "op",
    "E_ACC2": "op",
    "E_ACC4": "op",
    "E_CMP": "op",
    "E_SUB": "op",
    "E_clamp4": "op",
    "E_weight": "bit",
    "E_move_dense": "bit/hop",
    "E_move_event": "event/hop",
    "E_enc": "event",
}
#: Optional keys: our own router's per-hop event energy from a synthesis report (used only when
#: asked for: ``event_cost="router"``). Accumulators of other widths ``E_ACC<b>`` (rate-coded
#: rows at other T, events on ``b``-bit weights) and MACs of other weight widths ``E_MAC<b>x4``
#: (``b``-bit x 4-bit; the paper gives only ``E_MAC4`` = 1x4 and ``E_MAC4x4``) are optional too.
#: The non-linear units' costs, measured in gates (``synth_scripts.unit_gates``) and priced in
#: a component of their own (:mod:`energy_model.nonlinear`): per softmax row, per score of a
#: row, per channel of a residual-add + LayerNorm row.
NONLINEAR_KEYS: dict[str, str] = {"E_softmax_row": "row", "E_softmax_key": "key",
                                  "E_norm_channel": "channel"}
OPTIONAL: dict[str, str] = {"E_move_event_router": "event/hop", **NONLINEAR_KEYS}
#: The section of a file that holds the costs.
SECTION = "unit_costs_pJ"
#: The largest unit cost accepted, in pJ per item (1 uJ: a million times the paper's largest).
#: Larger values are typing errors, and near a float's range they overflow the report to
#: ``inf`` and its ratios to ``nan``.
MAX_PJ = 1e6
#: The ``schema`` of a synthesis report (``synth_scripts.report.SCHEMA``; a test keeps them equal).
SYNTH_SCHEMA = "matterhorn.synth_report/2"


def _denominator_of(key: str) -> str | None:
    if key in REQUIRED:
        return REQUIRED[key]
    if key in OPTIONAL:
        return OPTIONAL[key]
    if key.startswith("E_ACC") and key[5:].isdigit():
        return "op"
    if re.fullmatch(r"E_MAC[1-8]x4", key):
        return "op"
    return None


#: The words a synthesis report's provenance uses for a cost it carries from the paper
#: (``synth_scripts.report``).
BORROWED_MARK = "carried from the paper"


def borrowed(provenance: str) -> bool:
    """Whether a unit cost of this provenance is the paper's, not measured on our gates: from
    its table (provenance ``paper: ...``), or carried from it by a synthesis report where the
    open flow cannot produce it (``... carried from the paper ...``)."""
    return provenance.startswith("paper") or BORROWED_MARK in provenance


@dataclass(frozen=True)
class UnitCost:
    """One unit cost.

    Parameters
    ----------
    key : str
        Symbol, e.g. ``"E_MAC4"``.
    quantity : Quantity
        Value in joules per denominator (``J/op``, ``J/bit/hop`` ...).
    provenance : str
        Where the number comes from (file and, inside it, the producer's own note).
    note : str
        What the cost covers.
    """

    key: str
    quantity: Quantity
    provenance: str
    note: str = ""

    @property
    def joules(self) -> float:
        return self.quantity.value

    @property
    def borrowed(self) -> bool:
        """Whether the cost is the paper's, not measured on our gates (:func:`borrowed`)."""
        return borrowed(self.provenance)

    def to_json(self) -> dict:
        return {
            "value": self.quantity.pJ,
            "unit": "p" + self.quantity.unit,
            "note": self.note,
            "provenance": self.provenance,
        }


class UnitCosts(Mapping[str, UnitCost]):
    """An immutable table of unit costs, keyed by symbol; ``costs.joules("E_MAC4")`` in J."""

    def __init__(self, costs: Mapping[str, UnitCost], *, name: str = "") -> None:
        self._costs = dict(costs)
        self._name = name

    def __getitem__(self, key: str) -> UnitCost:
        return self._costs[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._costs)

    def __len__(self) -> int:
        return len(self._costs)

    @property
    def name(self) -> str:
        """A short label for the table as a whole (``"paper"``, a file name, ...)."""
        return self._name

    def joules(self, key: str) -> float:
        """The cost ``key`` in joules per item; a clear error if the table lacks it."""
        if key not in self._costs:
            raise ValueError(
                f"unit cost {key!r} is needed but missing from the unit costs {self._name!r} "
                f"(present: {', '.join(sorted(self._costs))})"
            )
        return self._costs[key].joules

    def with_value(self, key: str, joules: float, provenance: str) -> UnitCosts:
        """A copy with ``key`` replaced (e.g. the event cost of a sensitivity sweep)."""
        denominator = _denominator_of(key)
        if denominator is None:
            raise ValueError(f"unknown unit cost {key!r}; valid keys: {', '.join(REQUIRED)}")
        if not math.isfinite(joules) or not 0 <= joules <= MAX_PJ * 1e-12:
            raise ValueError(f"unit cost {key} must be in 0..{MAX_PJ:g} pJ, not "
                             f"{joules * 1e12:g} pJ")
        note = self._costs[key].note if key in self._costs else ""
        costs = dict(self._costs)
        costs[key] = UnitCost(key, Quantity(float(joules), "J/" + denominator), provenance, note)
        return UnitCosts(costs, name=self._name)

    def overlay(self, other: UnitCosts) -> UnitCosts:
        """A copy where every key of ``other`` replaces ours (provenance travels with it)."""
        costs = dict(self._costs)
        costs.update(other._costs)
        return UnitCosts(costs, name=f"{self._name} + {other._name}")

    def sources(self) -> dict[str, str]:
        """Key -> provenance, in key order."""
        return {key: cost.provenance for key, cost in self._costs.items()}

    def to_json(self) -> dict:
        return {key: cost.to_json() for key, cost in self._costs.items()}


def parse_unit_costs(data: object, *, origin: str, complete: bool = True) -> UnitCosts:
    """Check and convert the ``unit_costs_pJ`` section of a decoded JSON document.

    Parameters
    ----------
    data : object
        The whole document (a dict with a ``unit_costs_pJ`` section).
    origin : str
        Name of the file, used in messages and provenance (no directories).
    complete : bool
        Require every key of :data:`REQUIRED`.

    Raises
    ------
    ValueError
        Missing section or key, unknown key, value that is not a finite number >= 0, or a unit
        whose denominator does not match the key; the message names the key and the file.
    """
    if not isinstance(data, dict) or SECTION not in data:
        hint = "" if complete else " (a synthesis report has one only when run with a liberty)"
        raise ValueError(f"unit-cost file {origin} has no {SECTION!r} section{hint}")
    section = data[SECTION]
    if not isinstance(section, dict):
        raise ValueError(f"{SECTION!r} in {origin} must be an object of unit costs")
    costs = {}
    for key, entry in section.items():
        denominator = _denominator_of(key)
        if denominator is None:
            raise ValueError(
                f"unknown unit cost {key!r} in {origin}; valid keys: "
                f"{', '.join([*REQUIRED, *OPTIONAL])} (and E_ACC<bits>, E_MAC<bits>x4)"
            )
        if not isinstance(entry, dict) or "value" not in entry or "unit" not in entry:
            raise ValueError(
                f"unit cost {key!r} in {origin} must be an object with 'value' and 'unit'"
            )
        value = entry["value"]
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not (math.isfinite(value) and value >= 0)
        ):
            raise ValueError(f"unit cost {key!r} in {origin} must be a number >= 0, not {value!r}")
        scale, got = parse_energy_unit(entry["unit"], f"{key!r} in {origin}")
        if float(value) * scale > MAX_PJ * 1e-12:
            raise ValueError(
                f"unit cost {key!r} in {origin} must be at most {MAX_PJ:g} pJ, not {value!r} "
                f"{entry['unit']}"
            )
        if got != denominator:
            raise ValueError(
                f"unit cost {key!r} in {origin} has unit {entry['unit']!r}, expected an energy "
                f"per {denominator} such as 'pJ/{denominator}'"
            )
        own = entry.get("provenance") or entry.get("source") or ""
        provenance = f"{origin}: {own}" if own else origin
        costs[key] = UnitCost(
            key,
            Quantity(float(value) * scale, "J/" + denominator),
            provenance,
            str(entry.get("note", "")),
        )
    if complete:
        missing = [key for key in REQUIRED if key not in costs]
        if missing:
            raise ValueError(
                f"unit-cost file {origin} is missing {', '.join(repr(k) for k in missing)}"
            )
    return UnitCosts(costs, name=origin)


def _read_json(path: str | Path, what: str = "unit-cost file") -> object:
    return read_json(path, what)


def paper_table() -> dict:
    """The paper's unit-cost file as written (``energy_model/data/paper_unit_costs.json``).

    The one home of the paper's unit costs (Appendix 'Energy Model and Unit Costs'): ``source``,
    ``unit_costs_pJ`` (per key ``value``, ``unit``, ``note``, ``provenance``) and the formula
    ``parameters``. :func:`paper_unit_costs` is its checked form; the synthesis report carries
    and compares the values from here (:mod:`synth_scripts.report`).
    """
    text = resources.files("energy_model").joinpath("data/paper_unit_costs.json").read_text()
    return json.loads(text)


def paper_unit_costs() -> UnitCosts:
    """The paper's unit-cost table (Appendix 'Energy Model and Unit Costs'), bundled as data."""
    costs = parse_unit_costs(paper_table(), origin="paper")
    return UnitCosts(costs, name="paper")


def load_unit_costs(path: str | Path, *, complete: bool = True) -> UnitCosts:
    """Read a unit-cost file (user table or ``synth_report.json``); see :func:`parse_unit_costs`."""
    with naming(path, "unit-cost file"):
        return parse_unit_costs(_read_json(path), origin=Path(path).name, complete=complete)


def load_synth_report(path: str | Path) -> UnitCosts:
    """The unit costs of a ``synth_report.json`` (``matterhorn synth``), to lay over a table.

    Raises
    ------
    ValueError
        The ``schema`` field is not :data:`SYNTH_SCHEMA`, or the ``unit_costs_pJ`` section is
        missing or empty (it would silently leave every paper cost in place); the message names
        the file and what was expected. See also :func:`parse_unit_costs`.
    """
    with naming(path, "synthesis report"):
        return _load_synth_report(path)


def _load_synth_report(path: str | Path) -> UnitCosts:
    name = Path(path).name
    doc = _read_json(path, "synthesis report")
    if not isinstance(doc, dict):
        raise ValueError(f"synthesis report {name} must hold a JSON object")
    if doc.get("schema") != SYNTH_SCHEMA:
        got = "has no 'schema' field" if "schema" not in doc else f"has schema {doc['schema']!r}"
        raise ValueError(f"synthesis report {name} {got}, expected {SYNTH_SCHEMA!r}")
    if doc.get(SECTION) == {}:
        raise ValueError(
            f"synthesis report {name} has an empty {SECTION!r} section, expected at least one "
            "unit cost"
        )
    return parse_unit_costs(doc, origin=name, complete=False)


def resolve_unit_costs(
    unit_costs: str | Path | UnitCosts | None = "paper",
    *,
    synth: str | Path | None = None,
    event_cost_pJ: float | str | None = None,
) -> UnitCosts:
    """The table the CLI and the flow use: base table, then synthesis overlay, then event cost.

    Parameters
    ----------
    unit_costs : "paper", path or UnitCosts
        The complete base table.
    synth : path, optional
        A ``synth_report.json``; every key in its ``unit_costs_pJ`` section replaces the base.
    event_cost_pJ : float or "router", optional
        Override of ``E_move_event`` in pJ per event per hop; ``"router"`` takes the table's
        ``E_move_event_router`` (our synthesized router, from a synthesis report).
    """
    if unit_costs is None or (isinstance(unit_costs, str) and unit_costs == "paper"):
        table = paper_unit_costs()
    elif isinstance(unit_costs, UnitCosts):
        table = unit_costs
    else:
        table = load_unit_costs(unit_costs)
    if synth is not None:
        table = table.overlay(load_synth_report(synth))
    if isinstance(event_cost_pJ, str) and event_cost_pJ == "router":
        if "E_move_event_router" not in table:
            raise ValueError(
                "event cost 'router' needs E_move_event_router from a synthesis report (--synth)"
            )
        router = table["E_move_event_router"]
        return table.with_value("E_move_event", router.joules, router.provenance)
    if event_cost_pJ is not None:
        if (
            isinstance(event_cost_pJ, bool)
            or not isinstance(event_cost_pJ, int | float)
            or not (math.isfinite(event_cost_pJ) and 0 <= event_cost_pJ <= MAX_PJ)
        ):
            raise ValueError(f"event cost must be a number of pJ in 0..{MAX_PJ:g}, not "
                             f"{event_cost_pJ!r}")
        table = table.with_value("E_move_event", event_cost_pJ * 1e-12, "command line --event-cost")
    return table
