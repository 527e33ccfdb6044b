"""Event-cost sensitivity (paper, "Robustness to Sparse spike movement energy").

Every row's energy is affine in the sparse-event price ``x = E_move_event``:
``E(x) = a + b*x``. Two evaluations of the model give ``a`` and ``b`` exactly, so the crossover
against the dense QNN, ``x* = (a_D - a) / (b - b_D)``, and the advantage ``E_D(x) / E(x)`` have
closed forms; the sweep only samples them for plotting.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass

from energy_model.dims import ModelDims
from energy_model.model import Options, compute
from energy_model.quantity import PJ
from energy_model.rates import Rates
from energy_model.unit_costs import UnitCosts, paper_unit_costs

#: The paper's sweep range, pJ per event per hop: one dense bit up to Loihi's price.
PAPER_RANGE_PJ = (0.25, 3.0)


def linear_coefficients(
    model: ModelDims | str = "bert-base",
    rates: Rates | None = None,
    unit_costs: UnitCosts | None = None,
    options: Options | None = None,
) -> dict[str, tuple[float, float]]:
    """Row -> ``(a, b)``: total energy in J is ``a + b * x`` with ``x`` the event price in J."""
    return _coefficients(model, rates, unit_costs, options)[0]


def _coefficients(model, rates, unit_costs, options) -> tuple[dict[str, tuple[float, float]], str]:
    costs = paper_unit_costs() if unit_costs is None else unit_costs
    at0 = compute(model, rates, costs.with_value("E_move_event", 0.0, "sweep"), options)
    at1 = compute(model, rates, costs.with_value("E_move_event", PJ, "sweep"), options)
    coefficients = {
        r0.name: (r0.energy.total.value, (r1.energy.total.value - r0.energy.total.value) / PJ)
        for r0, r1 in zip(at0.rows, at1.rows, strict=True)
    }
    dense = next(r.name for r in at0.rows if r.spec.encoding == "dense")
    return coefficients, dense


#: The schema id of ``energy_sensitivity.json`` (toolkit_base/schemas/energy_sensitivity.json).
SCHEMA = "matterhorn.energy_sensitivity/1"


@dataclass(frozen=True)
class Sweep:
    """Closed-form sensitivity of every row to the event price.

    Members
    -------
    coefficients : dict[str, tuple[float, float]]
        Row -> ``(a [J], b [J per J of event price])``.
    dense : str
        Name of the dense QNN row (the reference).
    event_costs_pJ : tuple[float, ...]
        Sample points for plots and CSV.
    """

    coefficients: dict[str, tuple[float, float]]
    dense: str
    event_costs_pJ: tuple[float, ...]

    def total(self, row: str, event_cost_pJ: float) -> float:
        a, b = self.coefficients[row]
        return a + b * event_cost_pJ * PJ

    def advantage(self, row: str, event_cost_pJ: float) -> float:
        """Dense QNN energy over the row's energy at ``event_cost_pJ`` (>1: row is better)."""
        return self.total(self.dense, event_cost_pJ) / self.total(row, event_cost_pJ)

    def rel(self, row: str, event_cost_pJ: float) -> float:
        """Row energy relative to the dense QNN (the paper's figure's y axis)."""
        return 1.0 / self.advantage(row, event_cost_pJ)

    def crossover_pJ(self, row: str) -> float | None:
        """Event price at which the row costs exactly the dense QNN; None if they never cross."""
        a, b = self.coefficients[row]
        ad, bd = self.coefficients[self.dense]
        if b == bd:
            return None
        x = (ad - a) / (b - bd) / PJ
        return x if x >= 0 else None

    def crossovers_in_range(self) -> dict[str, float]:
        lo, hi = min(self.event_costs_pJ), max(self.event_costs_pJ)
        out = {}
        for row in self.coefficients:
            x = self.crossover_pJ(row) if row != self.dense else None
            if x is not None and lo <= x <= hi:
                out[row] = x
        return out

    def to_dict(self) -> dict:
        return {
            "schema": SCHEMA,
            "dense_row": self.dense,
            "model": "total_J = a_J + b * event_cost_J",
            "rows": {
                row: {
                    "a_J": a,
                    "b": b,
                    "crossover_pJ": self.crossover_pJ(row) if row != self.dense else None,
                    "advantage_at_range_ends": {
                        repr(x): self.advantage(row, x)
                        for x in (min(self.event_costs_pJ), max(self.event_costs_pJ))
                    },
                }
                for row, (a, b) in self.coefficients.items()
            },
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1) + "\n"

    def to_csv(self) -> str:
        """Relative energy of every row at each sampled event price."""
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        rows = list(self.coefficients)
        w.writerow(["event_cost_pJ", *rows])
        for x in self.event_costs_pJ:
            w.writerow([repr(x), *(repr(self.rel(r, x)) for r in rows)])
        return out.getvalue()


def sensitivity(
    model: ModelDims | str = "bert-base",
    rates: Rates | None = None,
    unit_costs: UnitCosts | None = None,
    options: Options | None = None,
    *,
    lo_pJ: float = PAPER_RANGE_PJ[0],
    hi_pJ: float = PAPER_RANGE_PJ[1],
    points: int = 56,
) -> Sweep:
    """The sensitivity of every row to the event price over ``lo_pJ..hi_pJ``."""
    if not 0 <= lo_pJ < hi_pJ:
        raise ValueError(f"event-cost range must satisfy 0 <= lo < hi, not {lo_pJ!r}..{hi_pJ!r}")
    if isinstance(points, bool) or not isinstance(points, int) or points < 2:
        raise ValueError(f"points must be an integer >= 2, not {points!r}")
    coefficients, dense = _coefficients(model, rates, unit_costs, options)
    step = (hi_pJ - lo_pJ) / (points - 1)
    xs = tuple(round(lo_pJ + i * step, 12) for i in range(points))
    return Sweep(coefficients, dense, xs)
