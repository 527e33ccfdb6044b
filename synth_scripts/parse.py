"""Parsers of the Yosys and OpenSTA outputs the flow reads.

Every parser raises :class:`ReportError` (a ValueError) naming the report and the missing or
malformed item, so a truncated or foreign file never becomes a silent zero.
"""

from __future__ import annotations

import json
import math
import re

#: Markers the power script prints around each design's reports.
BEGIN, END = "@@MH-BEGIN", "@@MH-END"


class ReportError(ValueError):
    """A tool report is missing, truncated or malformed."""


def _module_entry(data: dict, top: str, what: str) -> dict:
    modules = data.get("modules")
    if not isinstance(modules, dict):
        raise ReportError(f"{what}: no 'modules' object")
    for name in (f"\\{top}", top):
        if name in modules:
            return modules[name]
    raise ReportError(f"{what}: no module {top!r} (has {sorted(modules)})")


def stat_json(text: str, top: str, what: str = "yosys stat -json") -> dict:
    """Cells by type, cell count and (with ``-tech cmos``) transistor estimate of ``top``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReportError(f"{what}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(data, dict):
        raise ReportError(f"{what}: not a JSON object")
    entry = _module_entry(data, top, what)
    by_type = entry.get("num_cells_by_type")
    count = entry.get("num_cells")
    if not isinstance(by_type, dict) or not isinstance(count, int):
        raise ReportError(f"{what}: module {top!r} has no 'num_cells'/'num_cells_by_type'")
    if sum(by_type.values()) != count:
        raise ReportError(f"{what}: cells by type of {top!r} do not add up to num_cells={count}")
    out = {"cells": count, "cells_by_type": dict(sorted(by_type.items()))}
    if "estimated_num_transistors" in entry:
        # "N+" is a lower bound: the design holds cells the CMOS model does not know.
        m = re.fullmatch(r"(\d+)(\+?)", str(entry["estimated_num_transistors"]).strip())
        if m is None:
            raise ReportError(f"{what}: transistor estimate of {top!r} is not an integer")
        out["transistors"] = int(m.group(1))
        out["transistors_lower_bound"] = bool(m.group(2))
    return out


def ltp_length(text: str, top: str) -> int:
    """Logic depth: the length of ``ltp``'s longest topological path through ``top``."""
    m = re.search(rf"Longest topological path in {re.escape(top)} \(length=(\d+)\)", text)
    if m is None:
        raise ReportError(f"yosys ltp: no 'Longest topological path in {top} (length=N)' line")
    return int(m.group(1))


def liberty_area(text: str, top: str) -> float:
    """Cell area (library units, um^2 for sky130) from ``stat -liberty``."""
    m = re.search(rf"Chip area for (?:top )?module '\\?{re.escape(top)}':\s*([0-9.eE+-]+)", text)
    if m is None:
        raise ReportError(f"yosys stat -liberty: no 'Chip area for module {top!r}' line")
    return float(m.group(1))


def sta_sections(text: str) -> dict[str, str]:
    """Split the power script's output into one text per design; reject tool errors."""
    errors = [ln.strip() for ln in text.splitlines() if ln.lstrip().startswith("Error")]
    if errors:
        raise ReportError("OpenSTA reported errors: " + " | ".join(errors[:5]))
    sections: dict[str, str] = {}
    pattern = re.compile(rf"^{BEGIN} (\S+)$(.*?)^{END} \1$", re.MULTILINE | re.DOTALL)
    for m in pattern.finditer(text):
        sections[m.group(1)] = m.group(2)
    return sections


_NUM = r"([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_GROUPS = ("Sequential", "Combinational", "Macro", "Pad", "Total")


def power(text: str, top: str) -> dict[str, dict[str, float]]:
    """``report_power``'s table: per group internal, switching, leakage and total power (W)."""
    out: dict[str, dict[str, float]] = {}
    for group in _GROUPS:
        m = re.search(rf"^{group}\s+{_NUM}\s+{_NUM}\s+{_NUM}\s+{_NUM}", text, re.MULTILINE)
        if m is None:
            raise ReportError(f"OpenSTA report_power for {top!r}: no '{group}' row")
        vals = [float(x) for x in m.groups()]
        if not all(math.isfinite(v) and v >= 0 for v in vals):
            raise ReportError(f"OpenSTA report_power for {top!r}: bad '{group}' row {vals}")
        out[group.lower()] = dict(
            zip(("internal", "switching", "leakage", "total"), vals, strict=True)
        )
    total = out["total"]
    parts = total["internal"] + total["switching"] + total["leakage"]
    if total["total"] > 0 and abs(parts - total["total"]) > 1e-3 * total["total"]:
        raise ReportError(f"OpenSTA report_power for {top!r}: Total row does not add up")
    return out


def worst_slack(text: str, top: str) -> float:
    """``report_worst_slack``'s figure (library time unit)."""
    m = re.search(rf"^worst slack\s+{_NUM}", text, re.MULTILINE)
    if m is None:
        raise ReportError(f"OpenSTA report_worst_slack for {top!r}: no 'worst slack' line")
    return float(m.group(1))
