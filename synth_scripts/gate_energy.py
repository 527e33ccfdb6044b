"""Energy of a replayed gate netlist: per-net toggles x the liberty's power tables.

Per net (aliases merged), toggled ``t`` times over the trace:

- switching: ``t * 1/2 C V^2``, ``C`` the summed capacitance of the sink pins plus the wire
  capacitance of the library's ``default_wire_load`` model at the net's fan-out (if it has one);
- internal energy of the driving cell's output pin: ``t/2`` rises and ``t/2`` falls, each the
  mean over the pin's ``internal_power`` groups (every related pin and ``when`` state: the
  replay does not know which input caused a toggle or the cell's state), looked up in the
  ``rise_power``/``fall_power`` table at the nominal input slew and the net's load ``C``
  (bilinear interpolation, linear extrapolation outside the table, as OpenSTA does);
- internal energy of sink input pins that have their own ``internal_power`` (a flip-flop's
  ``D``), per toggle, the mean of rise and fall at the nominal slew.

The clock net toggles twice a cycle: its switching and the flip-flops' clock-pin internal
energy are charged every cycle (the ``clock`` component). Leakage is the sum of the cells'
``cell_leakage_power`` over the trace's duration. Liberty energy tables are in
``capacitive_load_unit x voltage_unit^2`` (NanGate: fJ; sky130: pJ); everything is converted
to joules inside and reported in pJ.

Clock gating: with a per-cycle ``enable``, the flip-flops' clock (pins and net) is charged only
on enabled cycles; the integrated clock-gating cell (the liberty's smallest ``latch_posedge``
ICG) adds its clock-pin energy and root clock-net load every cycle, its gated-clock output on
enabled cycles, the enable net's toggles and its leakage. An edge at which a flip-flop output
changes must be enabled, or the gated block would compute something else: that is an error.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from synth_scripts import liberty as liberty_mod

__all__ = ["NOMINAL_SLEW_NS", "CellLibrary", "Energy", "energy", "read_cells"]

#: Input transition (ns) at which the power tables are read, for every pin of every net.
NOMINAL_SLEW_NS = 0.04

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[(){};:,]|[^\s(){};:,"]+')


@dataclass
class Group:
    kind: str
    args: list[str]
    attrs: dict[str, str] = field(default_factory=dict)
    complex: dict[str, list[str]] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)

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
    i = 0
    while i < len(toks):
        t = toks[i]
        if t == "}":
            stack.pop()
            i += 1
            continue
        if t == ";":
            i += 1
            continue
        nxt = toks[i + 1] if i + 1 < len(toks) else ";"
        if nxt == ":":
            j = i + 2
            vals = []
            while j < len(toks) and toks[j] not in (";", "}"):
                vals.append(_unquote(toks[j]))
                j += 1
            # an attribute may end at a line break without ';' (sky130 has a few)
            stack[-1].attrs[t] = " ".join(vals)
            i = j + (1 if j < len(toks) and toks[j] == ";" else 0)
        elif nxt == "(":
            j = i + 2
            args = []
            while toks[j] != ")":
                if toks[j] != ",":
                    args.append(_unquote(toks[j]))
                j += 1
            j += 1
            if j < len(toks) and toks[j] == "{":
                g = Group(t, args)
                stack[-1].groups.append(g)
                stack.append(g)
                i = j + 1
            else:
                stack[-1].complex[t] = args
                i = j
        else:
            i += 1
    return root.groups


def _floats(args: list[str]) -> list[float]:
    return [float(x) for a in args for x in a.replace(",", " ").split()]


@dataclass
class Table:
    """A power table: ``slew`` and ``load`` axes (either may be absent) and values."""

    slew: list[float] | None
    load: list[float] | None
    values: list[list[float]]  # [slew index][load index]

    def at(self, slew: float, load: float) -> float:
        rows = [_interp(self.load, row, load) if self.load else row[0] for row in self.values]
        return _interp(self.slew, rows, slew) if self.slew else rows[0]


def _interp(axis: list[float], vals: list[float], x: float) -> float:
    if len(axis) == 1:
        return vals[0]
    k = min(max(bisect.bisect_right(axis, x) - 1, 0), len(axis) - 2)
    x0, x1 = axis[k], axis[k + 1]
    return vals[k] + (vals[k + 1] - vals[k]) * (x - x0) / (x1 - x0)


@dataclass
class Pin:
    direction: str
    cap: float  # library capacitance units
    clock: bool
    rise: list[Table]  # internal_power rise tables (all groups)
    fall: list[Table]
    gate_role: str = ""  # "clock", "enable", "test" or "out" on a clock-gating cell

    def energy(self, slew: float, load: float) -> tuple[float, float]:
        """Mean internal energy (library units) of one rise and one fall."""
        r = sum(t.at(slew, load) for t in self.rise) / len(self.rise) if self.rise else 0.0
        f = sum(t.at(slew, load) for t in self.fall) / len(self.fall) if self.fall else 0.0
        return r, f


@dataclass
class CellInfo:
    name: str
    area: float
    leakage: float  # library leakage units
    pins: dict[str, Pin]
    sequential: bool
    clock_pin: str | None  # clocked_on pin of a flip-flop
    icg: str | None  # clock_gating_integrated_cell value


@dataclass
class CellLibrary:
    """What the energy needs from a liberty: units, wire load and the cells read so far."""

    name: str
    source_name: str
    voltage: float
    cap_f: float  # farad per capacitance unit
    time_s: float  # second per time unit
    leak_w: float  # watt per leakage unit
    wire: tuple[float, float, list[tuple[int, float]]] | None  # cap/length, slope, fanout_length
    cells: dict[str, CellInfo]
    flops: list[str]
    icgs: list[str]

    @property
    def energy_j(self) -> float:
        """Joule per unit of an internal-power table (capacitance x voltage^2 units)."""
        return self.cap_f

    def wire_cap(self, fanout: int) -> float:
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


_UNIT = {"f": 1e-15, "p": 1e-12, "n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1.0}


def _unit(text: str, base: str) -> float:
    m = re.fullmatch(rf"\s*([\d.eE+-]*)\s*([fpnum]?){base}\s*", text, re.I)
    if m is None:
        raise ValueError(f"liberty unit {text!r} is not a multiple of {base}")
    return float(m.group(1) or 1) * _UNIT[m.group(2).lower()]


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


def _cell(g: Group, templates) -> CellInfo:
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
        rise, fall = [], []
        for ip in p.find("internal_power"):
            rise += _tables(ip, templates, "rise_power")
            fall += _tables(ip, templates, "fall_power")
        role = next((r for r in ("clock", "enable", "test", "out")
                     if p.attrs.get(f"clock_gate_{r}_pin") == "true"), "")
        for name in p.args:
            pins[name] = Pin(direction, cap, p.attrs.get("clock") == "true", rise, fall, role)
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
    return CellInfo(g.args[0], float(g.attrs.get("area", 0)), leak, pins, bool(ff), clock,
                    g.attrs.get("clock_gating_integrated_cell"))


@functools.lru_cache(maxsize=4)
def _read(path: str, mtime: float, wanted: frozenset[str]) -> CellLibrary:
    text = liberty_mod.read_text(Path(path))
    starts = [(m.start(), m.group(1)) for m in liberty_mod._CELL.finditer(text)]
    if not starts:
        raise ValueError(f"liberty {Path(path).name!r} defines no cells")
    head = parse_groups(text[: starts[0][0]] + "}")[0]
    templates = {g.args[0]: [v for k, v in sorted(g.attrs.items()) if k.startswith("variable_")]
                 for g in head.groups if g.kind == "power_lut_template"}
    end = text.rstrip().rfind("}")
    bodies = {}
    flops, icgs = [], []
    for i, (pos, cell) in enumerate(starts):
        stop = starts[i + 1][0] if i + 1 < len(starts) else end
        body = text[pos:stop]
        if re.search(r"\bff\s*\(", body) and "statetable" not in body:
            flops.append(cell)
        m = re.search(r'clock_gating_integrated_cell\s*:\s*"?(\w+)', body)
        if m and m.group(1) == "latch_posedge":
            icgs.append(cell)
        if cell in wanted or (m and m.group(1) == "latch_posedge"):
            bodies[cell] = body
    cells = {}
    for cell, body in bodies.items():
        cells[cell] = _cell(parse_groups(body)[0], templates)
    wire = None
    default = head.attrs.get("default_wire_load")
    if default:
        for g in head.find("wire_load"):
            if g.args and g.args[0] == default:
                fl = []
                for k, v in g.complex.items():
                    if k == "fanout_length":
                        fl.append((int(float(v[0])), float(v[1])))
                # fanout_length repeats: complex attrs keep the last one, so read them raw
                raw = re.search(rf'wire_load\s*\(\s*"?{re.escape(default)}"?\s*\)\s*\{{(.*?)\}}',
                                text, re.S)
                fl = [(int(a), float(b)) for a, b in
                      re.findall(r"fanout_length\s*\(\s*([\d.]+)\s*,\s*([\d.eE+-]+)\s*\)",
                                 raw.group(1))] if raw else fl
                wire = (float(g.attrs["capacitance"]), float(g.attrs.get("slope", 0)),
                        sorted(fl))
    cap_unit = head.complex.get("capacitive_load_unit")
    if cap_unit is None:
        raise ValueError(f"liberty {Path(path).name!r} has no capacitive_load_unit")
    return CellLibrary(
        name=head.args[0],
        source_name=Path(path).name,
        voltage=float(head.attrs["nom_voltage"]),
        cap_f=float(cap_unit[0]) * _UNIT[cap_unit[1].lower()[0]],
        time_s=_unit(head.attrs["time_unit"], "s"),
        leak_w=_unit(head.attrs["leakage_power_unit"], "W"),
        wire=wire,
        cells=cells,
        flops=sorted(flops),
        icgs=sorted(icgs),
    )


def read_cells(lib: liberty_mod.Liberty, cells) -> CellLibrary:
    """The library data of ``lib`` (a prepared liberty) for ``cells`` and every ICG cell."""
    data = _read(str(lib.path), Path(lib.path).stat().st_mtime, frozenset(cells))
    return dataclasses.replace(data, source_name=lib.source_name)


# -- energy ------------------------------------------------------------------------------------

COMPONENTS = ("clock", "sequential", "combinational", "leakage")


def _pj(x: float) -> float:
    return float(f"{x * 1e12:.6g}")


@dataclass
class Energy:
    """Energy of one replay, in pJ: free-running clock and (with an enable) clock-gated."""

    top: str
    library: str
    cycles: int
    clock_ns: float
    slew_ns: float
    free: dict[str, float]  # component -> pJ over the trace, and "total"
    gated: dict[str, float] | None = None
    icg: str | None = None
    enabled_cycles: int | None = None
    detail: dict[str, float] = field(default_factory=dict)  # pJ, finer items

    def per_cycle(self, which: str = "free") -> dict[str, float]:
        d = self.free if which == "free" else self.gated
        if d is None:
            raise ValueError("no gated figure: energy() was called without an enable")
        return {k: float(f"{v / self.cycles:.6g}") for k, v in d.items()}

    def to_json(self) -> dict:
        out = {
            "top": self.top,
            "library": self.library,
            "cycles": self.cycles,
            "clock_ns": self.clock_ns,
            "slew_ns": self.slew_ns,
            "energy_pJ": {"free": self.free},
            "per_cycle_pJ": {"free": self.per_cycle("free")},
            "detail_pJ": self.detail,
        }
        if self.gated is not None:
            out["energy_pJ"]["gated"] = self.gated
            out["per_cycle_pJ"]["gated"] = self.per_cycle("gated")
            out["icg"] = self.icg
            out["enabled_cycles"] = self.enabled_cycles
        return out


def _enable_bits(enable, toggles) -> list[bool]:
    if callable(enable):
        enable = enable()
    bits = [bool(b) for b in enable]
    if len(bits) != toggles.cycles:
        raise ValueError(f"enable has {len(bits)} values, the trace {toggles.cycles} cycles")
    return bits


def sta_groups(e: Energy) -> dict[str, float]:
    """``e``'s free-running figure regrouped as OpenSTA ``report_power`` groups its own, in pJ.

    OpenSTA puts a flip-flop's clock-pin energy into ``sequential``, charges no switching to
    an ideal clock net or to nets driven by input ports; this drops and moves those items.
    """
    d, f = e.detail, e.free
    seq = d["clock_pins"] + f["sequential"] + d["leakage_sequential"]
    comb = f["combinational"] - d["inputs_switching"] + f["leakage"] - d["leakage_sequential"]
    return {"sequential": float(f"{seq:.6g}"), "combinational": float(f"{comb:.6g}"),
            "leakage": f["leakage"], "total": float(f"{seq + comb:.6g}")}


def _icg(lib: CellLibrary) -> str:
    """The smallest clock-gating cell with clock, enable and output pins and no test pin."""
    plain = [n for n in lib.icgs
             if {x.gate_role for x in lib.cells[n].pins.values()} >= {"clock", "enable", "out"}
             and not any(x.gate_role == "test" for x in lib.cells[n].pins.values())]
    if not plain:
        raise ValueError(f"liberty {lib.source_name!r} has no clock-gating cell without a test "
                         f"pin (it has {lib.icgs})")
    return min(plain, key=lambda name: (lib.cells[name].area, name))


def energy(net, toggles, *, clock_ns: float = 10.0, enable=None,
           slew_ns: float = NOMINAL_SLEW_NS, wire_load: bool = True) -> Energy:
    """Energy of ``net`` (a :class:`gatelevel.Netlist`) over the replay ``toggles``.

    Parameters
    ----------
    clock_ns : float
        Clock period: leakage is charged over ``cycles * clock_ns``.
    enable : sequence of bool, optional
        Per cycle: the block's clock runs (``True``) or is gated off. Gives the ``gated`` figure.
    slew_ns : float
        Input transition at which every power table is read.
    wire_load : bool
        Add the library's ``default_wire_load`` capacitance to every net.

    Raises
    ------
    ValueError
        The liberty has no flip-flop or no clock-gating cell; ``enable`` has the wrong length
        or is low at an edge where a flip-flop output changes.
    """
    if clock_ns <= 0:
        raise ValueError(f"clock_ns must be positive, not {clock_ns!r}")
    if slew_ns <= 0:
        raise ValueError(f"slew_ns must be positive, not {slew_ns!r}")
    types = {c.type for c in net.cells}
    lib = read_cells(net.lib, types)
    if not lib.flops:
        raise ValueError(f"liberty {lib.source_name!r} has no flip-flop cell")
    if not lib.icgs:
        raise ValueError(f"liberty {lib.source_name!r} has no integrated clock-gating cell "
                         "(clock_gating_integrated_cell : latch_posedge)")
    slew = slew_ns * 1e-9 / lib.time_s
    v2 = lib.voltage ** 2
    ej, cf = lib.energy_j, lib.cap_f
    # net -> driver (cell, pin) and sinks [(cell, pin)]
    drivers, sinks = {}, {}
    for c in net.cells:
        info = lib.cells[c.type]
        for pin, ref in c.pins.items():
            if ref is None or pin not in info.pins:
                continue
            if info.pins[pin].direction == "output":
                drivers[ref] = (c, pin)
            else:
                sinks.setdefault(ref, []).append((c, pin))

    def load(ref):
        s = sinks.get(ref, [])
        cap = sum(lib.cells[c.type].pins[p].cap for c, p in s)
        return cap + (lib.wire_cap(len(s)) if wire_load else 0.0)

    acc = {k: 0.0 for k in ("clock", "sequential", "combinational", "leakage")}
    detail = {"switching": 0.0, "internal": 0.0, "inputs_switching": 0.0, "clock_net": 0.0,
              "clock_pins": 0.0, "sequential_internal": 0.0, "combinational_internal": 0.0}
    clk = net.clock_net
    seq_types = {t for t in types if lib.cells[t].sequential}
    for ref, t in toggles.nets.items():
        if t == 0 or ref == clk:
            continue
        c_net = load(ref)
        sw = 0.5 * c_net * cf * v2 * t
        detail["switching"] += sw
        drv = drivers.get(ref)
        if drv is None:  # an input port (or an unconnected net)
            acc["combinational"] += sw
            detail["inputs_switching"] += sw
        else:
            cell, pin = drv
            r, f = lib.cells[cell.type].pins[pin].energy(slew, c_net)
            e_int = (r + f) / 2 * t * ej
            kind = "sequential" if cell.type in seq_types else "combinational"
            detail["internal"] += e_int
            detail[f"{kind}_internal"] += e_int
            acc[kind] += sw + e_int
        for cell, pin in sinks.get(ref, []):
            p = lib.cells[cell.type].pins[pin]
            if p.rise or p.fall:
                r, f = p.energy(slew, 0.0)
                e_int = (r + f) / 2 * t * ej
                kind = "sequential" if cell.type in seq_types else "combinational"
                detail["internal"] += e_int
                detail[f"{kind}_internal"] += e_int
                acc[kind] += e_int
    # the clock: every flip-flop clock pin (and anything else on the net) every cycle
    clock_pins = 0.0
    if clk is not None:
        for cell, pin in sinks.get(clk, []):
            r, f = lib.cells[cell.type].pins[pin].energy(slew, 0.0)
            clock_pins += (r + f) * ej
        c_clk = load(clk)
    else:
        c_clk = 0.0
    clock_net = c_clk * cf * v2  # two toggles a cycle: 2 x 1/2 C V^2
    per_cycle_clock = clock_pins + clock_net
    n = toggles.cycles
    acc["clock"] = per_cycle_clock * n
    detail["clock_pins"] = clock_pins * n
    detail["clock_net"] = clock_net * n
    duration = n * clock_ns * 1e-9
    acc["leakage"] = sum(lib.cells[c.type].leakage for c in net.cells) * lib.leak_w * duration
    detail["leakage_sequential"] = sum(
        lib.cells[c.type].leakage for c in net.cells if c.type in seq_types
    ) * lib.leak_w * duration
    free = {k: _pj(v) for k, v in acc.items()}
    free["total"] = _pj(sum(acc.values()))
    out = Energy(net.top, lib.name, n, clock_ns, slew_ns, free,
                 detail={k: _pj(v) for k, v in detail.items()})
    if enable is None:
        return out
    bits = _enable_bits(enable, toggles)
    for c, (on, changed) in enumerate(zip(bits, toggles.flop_changes, strict=True)):
        if changed and not on:
            raise ValueError(
                f"enable is low at cycle {c} but {changed} flip-flop outputs change at its "
                "edge: gating that clock would change what the block computes")
    on = sum(bits)
    icg = _icg(lib)
    info = lib.cells[icg]
    ck, en, gck = (next(p for p, x in info.pins.items() if x.gate_role == role)
                   for role in ("clock", "enable", "out"))
    r, f = info.pins[ck].energy(slew, 0.0)
    icg_ck = (r + f) * ej + info.pins[ck].cap * cf * v2  # its clock pin and its root-net load
    r, f = info.pins[gck].energy(slew, c_clk)
    icg_out = (r + f) * ej  # the gated clock: a rise and a fall on enabled cycles
    en_toggles = sum(a != b for a, b in zip(bits, bits[1:], strict=False))
    r, f = info.pins[en].energy(slew, 0.0)
    c_en = info.pins[en].cap + (lib.wire_cap(1) if wire_load else 0.0)
    icg_en = en_toggles * ((r + f) / 2 * ej + 0.5 * c_en * cf * v2)
    icg_leak = info.leakage * lib.leak_w * duration
    gated = dict(acc)
    gated["clock"] = per_cycle_clock * on + icg_ck * n + icg_out * on + icg_en
    gated["leakage"] = acc["leakage"] + icg_leak
    out.gated = {k: _pj(v) for k, v in gated.items()}
    out.gated["total"] = _pj(sum(gated.values()))
    out.icg = icg
    out.enabled_cycles = on
    out.detail.update({
        "icg_clock_pin_and_root_net": _pj(icg_ck * n),
        "icg_gated_clock_out": _pj(icg_out * on),
        "icg_enable": _pj(icg_en),
        "icg_leakage": _pj(icg_leak),
    })
    return out


# -- independent reference ---------------------------------------------------------------------


def opensta_reference(net, trace, workdir, *, clock_ns: float = 10.0,
                      slew_ns: float = NOMINAL_SLEW_NS) -> dict[str, dict[str, float]]:
    """OpenSTA ``report_power`` of ``net`` with the trace's measured input-port activity, in pJ
    over the trace (per group: internal, switching, leakage, total).

    Input activity and duty per bit are measured on the trace (:func:`activity.bit_activity`)
    and enter through ``set_power_activity -input_ports``; OpenSTA propagates them through the
    logic and across flip-flops. Inputs and the clock get the nominal slew, so the table
    look-ups of both calculations start from the same transition. Exact where the propagation
    is exact (registers, inverters, buffers); elsewhere OpenSTA's probabilistic propagation is
    an estimate, not a reference.
    """
    import numpy as np

    from synth_scripts import activity, flow

    acts = {}
    for port, width in net.inputs.items():
        if port in (net.clock, net.reset):
            continue
        vals = np.asarray(trace.values[port], dtype=np.int64)
        acts[port] = activity.bit_activity(vals, width)
    lines = [f"set_input_transition {slew_ns:g} [all_inputs]",
             f"set_clock_transition {slew_ns:g} [get_clocks clk]",
             *flow.activity_commands(acts)]
    if net.reset:
        lines.append(f"set_power_activity -input_ports [get_ports {net.reset}] "
                     "-activity 0 -duty 0")
    p = flow.power(net.top, net.path, lines, net.lib, clock_ns, Path(workdir))
    scale = trace.cycles * clock_ns * 1e-9 * 1e12  # W over the trace -> pJ
    return {g: {k: float(f"{v * scale:.6g}") for k, v in row.items()}
            for g, row in p["power_W"].items()}
