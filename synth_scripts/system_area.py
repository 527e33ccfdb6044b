"""Synthesis of the whole ``mttfs_system`` (encoder, tiles, routers, sequencer, ...) with its
hierarchy kept, so the area of every tile and router instance is reported beside the blocks.

The system is elaborated with SRAM macros (``sram_macro=True``): each macro is a black box of
no area, so what is counted is logic and registers. Yosys synthesizes without flattening (the
generated Verilog has one module per instance), maps onto the liberty when there is one (the
one mapping script, :func:`synth_scripts.flow.mapping`), and
``stat`` gives every module's own cells and area; an instance's figure is the sum over its
module and the modules below it. Instances are grouped by kind: ``tile``, ``router``,
``injector``, ``encoder``, ``config``, ``sequencer``, ``fork``, ``merge`` and ``glue`` (the
top module and the mesh's own wiring).

:func:`synthesize_system` writes ``system_area.json`` (schema ``matterhorn.system_area/1``) and
``system_area.md``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from rtl_gen import registry
from synth_scripts import flow, parse
from synth_scripts.entries import sig
from synth_scripts.gatelevel import liberty
from toolkit_base import toolchain
from toolkit_base.files import write_atomic
from toolkit_base.schemas import validate
from toolkit_base.tables import markdown_table

__all__ = ["KINDS", "SYSTEM_JSON", "SYSTEM_MD", "SYSTEM_N_IN", "group", "synthesize_system"]

SYSTEM_JSON = "system_area.json"
SYSTEM_MD = "system_area.md"
SCHEMA = "matterhorn.system_area/1"
#: Vector length of the synthesized system (the encoder's logic grows with it).
SYSTEM_N_IN = 64
#: Instance kinds, in report order, by the first component of the instance path: a node's
#: block (``<block>_x<x>_y<y>``, every node block of :mod:`rtl_gen.registry`), then the rest.
KINDS = (*(b.name for b in registry.node_blocks()), "router", "injector", "encoder", "config",
         "sequencer", "fork", "merge", "glue")
_PREFIX = {**{f"{b.name}_": b.name for b in registry.node_blocks()},
           "mesh.router_": "router", "inject_": "injector", "encoder": "encoder",
           "config": "config", "sequencer": "sequencer", "fork": "fork", "merge": "merge"}

_SCRIPT = """read_verilog -lib sram_macro_stub.v
read_verilog mttfs_system.v
hierarchy -top mttfs_system
synth -top mttfs_system
dfflegalize -cell $_DFF_P_ 01
techmap
opt_clean
tee -q -o generic_stat.txt stat
"""


def group(module: str, top: str = "mttfs_system") -> tuple[str, str]:
    """``(kind, instance)`` of a module of the generated system: ``mttfs_system.mesh.router_x0_y1
    .fifo_east`` belongs to instance ``mesh.router_x0_y1`` of kind ``router``."""
    if module == top:
        return "glue", top
    rest = module.removeprefix(top + ".")
    for prefix, kind in _PREFIX.items():
        if rest.startswith(prefix):
            depth = prefix.count(".") + 1
            return kind, ".".join(rest.split(".")[:depth])
    if rest == "mesh":
        return "glue", "mesh"
    raise ValueError(f"module {module!r} of the system belongs to no known instance kind")


def _own_cells(text: str) -> dict[str, dict[str, int]]:
    """Per module of a hierarchical ``stat`` text, its own leaf cells by type (instances of
    other modules left out). (Yosys 0.23's ``stat -json`` of a hierarchy is not valid JSON.)"""
    out: dict[str, dict[str, int]] = {}
    for m in re.finditer(r"^=== (\S+) ===\n(.*?)(?=^=== |\Z)", text, re.MULTILINE | re.DOTALL):
        if m.group(1) == "design":
            continue
        cells = re.search(r"Number of cells:\s+(\d+)\n((?:\s+\S+\s+\d+\n)*)", m.group(2))
        if cells is None:
            raise parse.ReportError(f"yosys stat: module {m.group(1)!r} has no cell count")
        by_type = {t.lstrip("\\"): int(n) for t, n in re.findall(r"(\S+)\s+(\d+)", cells.group(2))}
        if sum(by_type.values()) != int(cells.group(1)):
            raise parse.ReportError(f"yosys stat: cells of {m.group(1)!r} do not add up")
        out[m.group(1).lstrip("\\")] = by_type
    if not out:
        raise parse.ReportError("yosys stat: no module statistics")
    return {name: {c: n for c, n in cells.items() if c not in out} for name, cells in out.items()}


def _areas(text: str) -> dict[str, float]:
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r"Chip area for module '\\?([^']+)':\s*([0-9.eE+-]+)", text)}


def _summarize(own: dict[str, dict[str, int]], area: dict[str, float] | None) -> dict:
    inst: dict[tuple[str, str], dict] = {}
    for module, cells in own.items():
        if module == "mttfs_sram_macro":
            continue
        kind, name = group(module)
        e = inst.setdefault((kind, name), {"cells": 0, "area": 0.0})
        e["cells"] += sum(cells.values())
        if area is not None:
            e["area"] += area.get(module, 0.0)
    kinds = {}
    for kind in KINDS:
        rows = sorted((n, e) for (k, n), e in inst.items() if k == kind)
        if not rows:
            continue
        cells = [e["cells"] for _, e in rows]
        entry = {"instances": len(rows), "cells": sum(cells),
                 "cells_per_instance": {"min": min(cells), "max": max(cells),
                                        "mean": sig(sum(cells) / len(rows))}}
        if area is not None:
            a = [e["area"] for _, e in rows]
            entry["area"] = sig(sum(a))
            entry["area_per_instance"] = {"min": sig(min(a)), "max": sig(max(a)),
                                          "mean": sig(sum(a) / len(rows))}
        kinds[kind] = entry
    return kinds


def synthesize_system(
    config,
    out_dir: str | os.PathLike,
    *,
    liberty_file: str | os.PathLike | None = None,
    default_liberty: bool = True,
    environ: dict | None = None,
) -> dict:
    """Synthesize ``mttfs_system`` for ``config`` (an :class:`rtl_gen.params.RTLConfig`; SRAM
    macros are cut whatever its ``sram_macro``); write and return the area report.

    Raises
    ------
    toolkit_base.toolchain.ToolNotFoundError
        Yosys is not installed.
    synth_scripts.flow.ToolError, synth_scripts.parse.ReportError
        Yosys failed or its statistics are malformed.
    """
    from rtl_gen.params import RTLConfig
    from rtl_gen.sram import MACRO_STUB
    from rtl_gen.system import system_from_config
    from rtl_gen.verilog_text import to_verilog

    cfg = RTLConfig(**{**config.as_dict(), "sram_macro": True})
    yosys = toolchain.require("yosys")
    lib_path = liberty.resolve(liberty_file, environ, default=default_liberty)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".synth-system-", dir=out_dir) as tmp:
        work = Path(tmp).resolve()
        lib = liberty.prepare(lib_path, work) if lib_path is not None else None
        text = to_verilog(system_from_config(cfg), "mttfs_system")
        (work / "mttfs_system.v").write_text(text, encoding="utf-8")
        (work / "sram_macro_stub.v").write_text(MACRO_STUB, encoding="utf-8")
        script = _SCRIPT
        if lib is not None:
            script += flow.mapping(lib, work)
            script += ("opt_clean -purge\ntee -q -o liberty_stat.txt stat -liberty "
                       f"{flow.relative(lib.path, work)}\n")
        (work / "synth.ys").write_text(script, encoding="utf-8")
        flow.run_tool([yosys, "-q", "-s", "synth.ys"], work, work / "yosys.log",
                      "yosys on mttfs_system")
        generic = _summarize(_own_cells(_read(work / "generic_stat.txt")), None)
        mapped = None
        total_area = None
        if lib is not None:
            stat_text = _read(work / "liberty_stat.txt")
            areas = _areas(stat_text)
            mapped = _summarize(_own_cells(stat_text), areas)
            top = re.search(r"Chip area for top module '\\?mttfs_system':\s*([0-9.eE+-]+)",
                            stat_text)
            if top is None or abs(float(top.group(1)) - sum(areas.values())) > 1e-3 * sum(
                    areas.values()):
                raise parse.ReportError("yosys stat -liberty: module areas do not add up to "
                                        "the top module's")
            total_area = sig(float(top.group(1)))
        doc = {
            "schema": SCHEMA,
            "mesh": [cfg.mesh_rows, cfg.mesh_cols],
            "parameters": {k: v for k, v in cfg.as_dict().items() if k != "sram_macro"},
            "sram_macros": "black boxes of no area (interface logic counted in the tiles)",
            "liberty": None if lib is None else lib.name,
            "generic": generic,
            "mapped": mapped,
            "area_total": total_area,
            "area_unit": None if lib is None else "um^2 (library units)",
        }
    validate(doc, "system_area", SYSTEM_JSON)
    write_atomic(out_dir / SYSTEM_JSON, json.dumps(doc, indent=2, sort_keys=True) + "\n")
    write_atomic(out_dir / SYSTEM_MD, markdown(doc))
    return doc


def _read(path: Path) -> str:
    if not path.is_file():
        raise parse.ReportError(f"tool output {path.name!r} was not written")
    return path.read_text(encoding="utf-8")


def markdown(doc: dict) -> str:
    """``system_area.md``: instances, cells and area per instance kind."""
    rows, mapped = [], doc["mapped"]
    for kind, g in doc["generic"].items():
        m = (mapped or {}).get(kind, {})
        a = m.get("area_per_instance", {})
        rows.append([kind, g["instances"], g["cells_per_instance"]["mean"],
                     m.get("cells_per_instance", {}).get("mean", "-"),
                     a.get("mean", "-"), f"{a['min']}..{a['max']}" if a else "-",
                     m.get("area", "-")])
    r, c = doc["mesh"]
    head = [f"# mttfs_system on a {r}x{c} mesh: area per instance", "",
            (f"Library: {doc['liberty'] or 'none (generic cells only)'}; "
             f"SRAM macros: {doc['sram_macros']}; n_in {doc['parameters']['n_in']}, "
             f"N {doc['parameters']['tile_neurons']}, T {doc['parameters']['T']}."), ""]
    table = markdown_table(
        ["kind", "instances", "generic cells / inst.", "mapped cells / inst.",
         "area / inst.", "area range", "area, all"], rows)
    tail = ["", f"Total area: {doc['area_total']} {doc['area_unit']}." if mapped else ""]
    return "\n".join([*head, *table, *tail]) + "\n"
