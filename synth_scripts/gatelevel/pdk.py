"""PDKs as data: one table per standard-cell library, and how a liberty finds its table.

Each ``pdks/<name>.json`` beside this module (schema ``matterhorn.pdk/1``,
``toolkit_base/schemas/pdk.json``) holds what the flows need to know about one cell library
and cannot read from the liberty itself, each with its source: node and supply, the corner,
the cells synthesis must not use, the tie cells, the clock-gating cell, the node model that
scales its energies to 22 nm (Stillmaker & Baas) and the per-bit SRAM read energy. Adding a PDK
is adding one table (docs/synth.md, "Adding a PDK").

A liberty is matched to a table by its library name (``library (NAME)``) against each table's
``match.library`` glob patterns: :func:`match`. A library no table matches gets
:data:`GENERIC`: no dont-use cells, tie and clock-gating cells found in the liberty itself
(:mod:`synth_scripts.gatelevel.liberty` fills them in), no technology scaling and no SRAM figure,
so the flows that need those two (the 22 nm figures of ``synth``, ``compare``) stop with a message
that names the library and this module's tables.
"""

from __future__ import annotations

import fnmatch
import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from toolkit_base.schemas import validate

__all__ = ["GENERIC", "SCHEMA", "Pdk", "load", "match", "table", "tables"]

SCHEMA = "matterhorn.pdk/1"
#: Where the tables are: ``<name>.json`` files in this package folder.
TABLES = "pdks"


@dataclass(frozen=True)
class Pdk:
    """A PDK table, or the generic defaults of a library no table matches.

    ``tie_high``/``tie_low`` are ``(cell, pin)``. For a prepared liberty
    (:attr:`synth_scripts.gatelevel.liberty.Liberty.pdk`) the cells named here are those the liberty
    defines: a table's cell it lacks is None (``missing`` says which), a generic library's are
    found in it.
    """

    name: str
    label: str
    patterns: tuple[str, ...]  # glob patterns on the library name
    node_nm: int | None
    supply_V: float | None
    corner: dict | None
    dont_use: tuple[str, ...]
    tie_high: tuple[str, str] | None
    tie_low: tuple[str, str] | None
    clock_gating_cell: str | None
    scaling: dict | None  # model, other_model, fit_nominal_V, source
    sram_bit: dict | None  # pJ_per_bit, node, vdd_V, source
    source: str  # the table's file name, or how the generic defaults are chosen
    missing: tuple[str, ...] = field(default=())  # table cells the liberty does not define

    @property
    def generic(self) -> bool:
        """True for a library that no table matches."""
        return self.name == GENERIC.name

    def matches(self, library_name: str) -> bool:
        return any(fnmatch.fnmatchcase(library_name, p) for p in self.patterns)

    def dont_use_cell(self, cell: str) -> bool:
        return any(fnmatch.fnmatchcase(cell, p) for p in self.dont_use)


#: What a library without a table gets (docs/synth.md, "An unknown liberty").
GENERIC = Pdk(
    name="generic",
    label="unknown library",
    patterns=(),
    node_nm=None,
    supply_V=None,
    corner=None,
    dont_use=(),
    tie_high=None,
    tie_low=None,
    clock_gating_cell=None,
    scaling=None,
    sram_bit=None,
    source="no PDK table matches: no dont-use cells; tie cells are the liberty's smallest cells "
    "whose output function is constant 1 or 0; the clock-gating cell is its smallest "
    "latch_posedge integrated clock-gating cell without a test pin; no technology scaling and "
    "no SRAM figure",
)


def _from_table(doc: dict, source: str) -> Pdk:
    tie = doc["tie_cells"]
    return Pdk(
        name=doc["name"],
        label=doc["label"],
        patterns=tuple(doc["match"]["library"]),
        node_nm=doc["node_nm"],
        supply_V=doc["supply_V"],
        corner=doc["corner"],
        dont_use=tuple(doc["dont_use"]["cells"]),
        tie_high=(tie["high"]["cell"], tie["high"]["pin"]),
        tie_low=(tie["low"]["cell"], tie["low"]["pin"]),
        clock_gating_cell=doc["clock_gating_cell"]["cell"],
        scaling=doc["scaling"],
        sram_bit=doc["sram_bit"],
        source=source,
    )


def load(path: str | Path) -> Pdk:
    """Read and check one table file.

    Raises
    ------
    ValueError
        Not JSON, not the schema (naming the field), or ``name`` is not the file's stem.
    """
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path.name}: not valid JSON: {exc}") from exc
    validate(doc, "pdk", path.name)
    if doc["name"] != path.stem:
        raise ValueError(f"{path.name}: field 'name': {doc['name']!r} is not the file's name "
                         f"{path.stem!r}")
    return _from_table(doc, path.name)


def _folder() -> Path:
    return Path(str(resources.files("synth_scripts.gatelevel").joinpath(TABLES)))


@functools.cache
def tables(folder: str | None = None) -> dict[str, Pdk]:
    """Every table of ``folder`` (default: this package's ``pdks/``), by name, checked."""
    root = Path(folder) if folder is not None else _folder()
    out = {}
    for path in sorted(root.glob("*.json")):
        t = load(path)
        out[t.name] = t
    if not out:
        raise ValueError(f"no PDK table in {root.name}/")
    return out


def table(name: str) -> Pdk:
    """The table ``name``, or ``ValueError`` naming the known ones."""
    known = tables()
    if name not in known:
        raise ValueError(f"PDK must be one of {', '.join(known)}, not {name!r}")
    return known[name]


def match(library_name: str, folder: str | None = None) -> Pdk:
    """The table whose ``match.library`` patterns match ``library_name``, else :data:`GENERIC`.

    Raises
    ------
    ValueError
        Two tables match the library (their patterns overlap).
    """
    found = [t for t in tables(folder).values() if t.matches(library_name)]
    if len(found) > 1:
        raise ValueError(f"liberty library {library_name!r} matches more than one PDK table: "
                         + ", ".join(t.source for t in found))
    return found[0] if found else GENERIC
