"""The paper's analytical energy model, driven by unit costs and spike rates with provenance.

Typical use::

    import energy_model as em
    report = em.compute(model="bert-base", rates=em.Rates.paper(), unit_costs=em.paper_unit_costs())
    print(report.table())
    report.to_json(); report.to_csv()
    em.write_report(report, "build/energy", sweep=em.sensitivity())

Plots are in :mod:`energy_model.plots` (imported on use: matplotlib is slow to load); the
comparison with the paper's printed tables is in :mod:`energy_model.reproduction`.
"""

from energy_model.dims import (
    PRESETS,
    ModelDims,
    PositionCounts,
    block_totals,
    position_counts,
    preset,
)
from energy_model.histogram import (
    BIT_CONVENTIONS,
    Histogram,
    bit_events_per_value,
    events_per_value,
    mttfs_rate,
    ttfs_rate,
)
from energy_model.model import (
    Breakdown,
    EnergyReport,
    Options,
    RowResult,
    RowSpec,
    compute,
    energy_of,
    event_op,
    layer_ops,
    mac_key,
    position_ops,
    price,
    rows_of,
)
from energy_model.output import write_report
from energy_model.quantity import Quantity
from energy_model.rates import (
    Baseline,
    BitEvents,
    Rate,
    Rates,
    load_stats,
    paper_baselines,
    paper_reference,
)
from energy_model.sensitivity import Sweep, linear_coefficients, sensitivity
from energy_model.unit_costs import (
    REQUIRED,
    SYNTH_SCHEMA,
    UnitCost,
    UnitCosts,
    load_synth_report,
    load_unit_costs,
    paper_table,
    paper_unit_costs,
    resolve_unit_costs,
)
from energy_model.window import HOP_KEY, window_ops
from golden_models.positions import POSITIONS

__all__ = [
    "BIT_CONVENTIONS",
    "HOP_KEY",
    "POSITIONS",
    "PRESETS",
    "REQUIRED",
    "SYNTH_SCHEMA",
    "Baseline",
    "BitEvents",
    "Breakdown",
    "EnergyReport",
    "Histogram",
    "ModelDims",
    "Options",
    "PositionCounts",
    "Quantity",
    "Rate",
    "Rates",
    "RowResult",
    "RowSpec",
    "Sweep",
    "UnitCost",
    "UnitCosts",
    "bit_events_per_value",
    "block_totals",
    "compute",
    "energy_of",
    "event_op",
    "events_per_value",
    "layer_ops",
    "linear_coefficients",
    "mac_key",
    "load_stats",
    "load_synth_report",
    "load_unit_costs",
    "mttfs_rate",
    "paper_baselines",
    "paper_reference",
    "paper_table",
    "paper_unit_costs",
    "position_counts",
    "position_ops",
    "preset",
    "price",
    "resolve_unit_costs",
    "rows_of",
    "sensitivity",
    "ttfs_rate",
    "window_ops",
    "write_report",
]
