"""A synthesized block's entry in ``synth_report.json``: its synthesis (generic and mapped
cells), its power (OpenSTA's ``report_power``) and its energy per operation, figures to six
significant digits (:func:`sig`). What the report (:mod:`synth_scripts.report`) and the block
specifications beneath it (:mod:`synth_scripts.blocks`, :mod:`synth_scripts.system_area`)
share."""

from __future__ import annotations

import math

__all__ = ["energy", "power_entry", "sig", "synth_entry"]


def sig(x: float | None, digits: int = 6) -> float | None:
    """``x`` rounded to ``digits`` significant digits (stable text in the report)."""
    if x is None:
        return None
    if x == 0 or not math.isfinite(x):
        return x
    return round(x, digits - 1 - int(math.floor(math.log10(abs(x)))))


def energy(power_W: dict, clock_ns: float, ops_per_clock: float = 1.0) -> dict:
    """Energy per operation from ``report_power``'s table: power x period / operations."""
    period = clock_ns * 1e-9
    total = power_W["total"]
    e = total["total"] * period / ops_per_clock * 1e12
    leak = total["leakage"] * period / ops_per_clock * 1e12
    return {
        "per_op": sig(e),
        "dynamic": sig(e - leak),
        "leakage": sig(leak),
        "leakage_share": sig(total["leakage"] / total["total"], 4) if total["total"] else 0.0,
        "sequential_share": (
            sig(power_W["sequential"]["total"] / total["total"], 4) if total["total"] else 0.0
        ),
        "combinational_per_op": sig(
            power_W["combinational"]["total"] * period / ops_per_clock * 1e12
        ),
    }


def power_entry(p: dict) -> dict:
    """The ``power`` section of a report entry from one OpenSTA ``report_power`` result."""
    w = p["power_W"]
    return {
        "total_W": w["total"]["total"],
        "internal_W": w["total"]["internal"],
        "switching_W": w["total"]["switching"],
        "leakage_W": w["total"]["leakage"],
        "sequential_W": w["sequential"]["total"],
        "combinational_W": w["combinational"]["total"],
        "worst_slack_ns": p["worst_slack"],
    }


def synth_entry(r) -> tuple[dict, dict | None]:
    """The ``generic`` and ``mapped`` sections of a synthesized module's report entry."""
    generic = {
        "cells": r.generic["cells"],
        "cells_by_type": r.generic["cells_by_type"],
        "transistors": r.generic["transistors"],
        "transistors_lower_bound": r.generic["transistors_lower_bound"],
        "logic_depth": r.depth,
    }
    mapped = None
    if r.mapped is not None:
        mapped = {
            "cells": r.mapped["cells"],
            "cells_by_type": r.mapped["cells_by_type"],
            "area_um2": sig(r.area_um2),
            "flip_flops": r.flops,
            "netlist": f"netlists/{r.top}.v",
        }
    return generic, mapped
