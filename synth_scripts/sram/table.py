"""The table of characterized macros: by shape and corner, with provenance.

The toolkit ships one (:data:`TABLE`, package data, schema
``toolkit_base/schemas/sram_macros.json``): FreePDK45 macros of
:data:`synth_scripts.sram.macros.MACRO_SHAPES` at the nominal corner. :func:`regenerate` (the
command ``matterhorn sram``) compiles and measures shapes again, one ngspice at a time, and
writes the table after each shape, so an interrupted run keeps the shapes it finished.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from synth_scripts.sram.macros import MODEL_FILES, OPENRAM, TECH, Shape, openram_version
from synth_scripts.sram.spice import OPTIONS, Bench, Measurement, characterize, ngspice_version
from toolkit_base.files import write_atomic

__all__ = ["SCHEMA", "TABLE", "MacroTable", "load", "regenerate"]

#: The shipped table.
TABLE = Path(__file__).resolve().with_name("freepdk45_macros.json")
SCHEMA = "matterhorn.sram_macros/1"
#: The nominal corner of the shipped table.
NOMINAL = Bench().corner_name

METHOD = (
    "OpenRAM 1rw macro, netlist only (no layout, no DRC/LVS), analytical timing; ngspice "
    "testbench of synth_scripts.sram.spice over the netlist with every bit cell outside the "
    "accessed row trimmed to its access transistors (their bit-line load kept) and the trimmed "
    "cells' own leakage added back from a one-cell simulation; energy = V_dd x the supply's "
    "charge over a cycle, rising edge to rising edge; read = mean of a read whose outputs "
    "toggle and one whose outputs hold; write = mean of a write that changes no bit and one "
    "that changes every bit; deselected = a cycle with the clock running and csb high; leakage "
    "= the supply's mean power, clock stopped and deselected, after the accesses"
)


@dataclass
class MacroTable:
    """The table's document: ``macros`` (one entry per shape and corner) and what made it."""

    doc: dict
    source: str = "table"

    @property
    def macros(self) -> list[dict]:
        return self.doc["macros"]

    def shapes(self, corner: str = NOMINAL) -> list[Shape]:
        return sorted(Shape(m["words"], m["bits"]) for m in self.macros if m["corner"] == corner)

    def entry(self, shape: Shape, corner: str = NOMINAL) -> dict:
        """The entry of ``shape`` at ``corner``, or ``ValueError`` naming what the table holds."""
        for m in self.macros:
            if m["shape"] == shape.name and m["corner"] == corner:
                return m
        have = ", ".join(f"{m['shape']} {m['corner']}" for m in self.macros) or "nothing"
        raise ValueError(f"{self.source}: no macro {shape.name} at {corner} (it holds {have}); "
                       f"matterhorn sram --shapes {shape.name} measures it")

    def put(self, entry: dict) -> None:
        """Add ``entry``, replacing the one of the same shape and corner."""
        rest = [m for m in self.macros
                if (m["shape"], m["corner"]) != (entry["shape"], entry["corner"])]
        self.doc["macros"] = sorted([*rest, entry],
                                    key=lambda m: (m["corner"], m["words"], m["bits"]))

    def to_json(self) -> dict:
        return self.doc


def empty() -> MacroTable:
    return MacroTable({"schema": SCHEMA, "technology": TECH, "method": METHOD, "macros": []})


def load(path: str | os.PathLike | None = None) -> MacroTable:
    """The table at ``path`` (default: the shipped :data:`TABLE`), validated."""
    from toolkit_base.jsonfile import read_json
    from toolkit_base.schemas import validate

    path = TABLE if path is None else Path(path)
    doc = read_json(path, "SRAM macro table")
    validate(doc, "sram_macros", path.name)
    return MacroTable(doc, path.name)


def provenance(seconds: dict[str, float]) -> dict:
    """What made an entry: tool versions, the models, the simulator options."""
    return {
        "openram": openram_version(), "openram_package": OPENRAM, "ngspice": ngspice_version(),
        "technology": TECH,
        "models": [f"openram/technology/{TECH}/models/tran_models/models_nom/{f}"
                   for f in MODEL_FILES],
        "models_source": "FreePDK45 transistor models shipped by OpenRAM ('Customized PTM 45', "
                         "Apache-2.0)",
        "options": OPTIONS,
        "seconds_to_characterize": round(sum(seconds.values()), 1),
    }


def entry_of(m: Measurement) -> dict:
    """A table entry of measurement ``m`` with its provenance."""
    e = m.to_json()
    e["provenance"] = provenance(m.seconds)
    return e


def regenerate(shapes: Iterable[Shape], table: str | os.PathLike, work: str | os.PathLike, *,
               bench: Bench | None = None, trimmed: bool = True,
               on_shape: Callable[[Measurement], None] | None = None) -> MacroTable:
    """Measure ``shapes`` one after the other and write each into ``table`` (a JSON file, kept
    and extended when it exists, else made) as soon as it is measured."""
    table, work = Path(table), Path(work)
    bench = Bench() if bench is None else bench
    tab = load(table) if table.exists() else empty()
    for shape in shapes:
        m = characterize(shape, work / f"{shape.name}_{bench.corner_name}", bench,
                         trimmed=trimmed)
        tab.put(entry_of(m))
        table.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(table, json.dumps(tab.to_json(), indent=1, sort_keys=True) + "\n")
        if on_shape is not None:
            on_shape(m)
    return tab
