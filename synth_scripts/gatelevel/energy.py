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
to joules inside and reported in pJ. The liberty is read by
:func:`synth_scripts.gatelevel.liberty.read`.

Clock gating: with a per-cycle ``enable``, the flip-flops' clock (pins and net) is charged only
on enabled cycles; the integrated clock-gating cell (the PDK table's,
:mod:`synth_scripts.gatelevel.pdk`;
for a library without a table its smallest plain ``latch_posedge`` ICG) adds its clock-pin
energy and root clock-net load every cycle, its gated-clock output on enabled cycles, the
enable net's toggles and its leakage. An edge at which a flip-flop output changes must be
enabled, or the gated block would compute something else: that is an error.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from synth_scripts.gatelevel import liberty as liberty_mod
from toolkit_base.files import kept_value, source_digest

__all__ = ["COMPONENTS", "NOMINAL_SLEW_NS", "Energy", "energy", "isolated_cells",
           "opensta_per_net", "opensta_reference", "sta_groups"]

#: Input transition (ns) at which the power tables are read, for every pin of every net.
NOMINAL_SLEW_NS = 0.04


# -- energy ------------------------------------------------------------------------------------

COMPONENTS = ("clock", "sequential", "combinational", "leakage")
#: An on-chip wire's capacitance per length (fF/um) when the liberty has no wire-load model: the
#: rule of thumb of N. Weste and D. Harris, "CMOS VLSI Design", 4th ed., Addison-Wesley, 2011
#: (about 0.2 fF/um for a wire at minimum pitch, nearly the same from node to node).
WIRE_FF_PER_UM = 0.2


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


def _icg(prepared: liberty_mod.Liberty) -> str:
    """The clock-gating cell of the liberty's PDK table (a library without one: its smallest
    plain ``latch_posedge`` integrated clock-gating cell), or ``ValueError``."""
    lib, cell = prepared.library, prepared.pdk.clock_gating_cell
    if cell is not None:
        return cell
    if not lib.icgs:
        raise ValueError(f"liberty {prepared.source_name!r} has no integrated clock-gating cell "
                         "(clock_gating_integrated_cell : latch_posedge)")
    if prepared.pdk.generic:
        raise ValueError(f"liberty {prepared.source_name!r} has no clock-gating cell without a "
                         f"test pin (it has {lib.icgs})")
    raise ValueError(f"liberty {prepared.source_name!r} lacks {prepared.pdk.missing[-1]}, the "
                     f"clock-gating cell of its PDK table {prepared.pdk.source}")


class _PinEnergies:
    """What :func:`energy` reads of the liberty for one netlist at one slew: per net its load,
    its driver's (kind, mean of the rise and fall internal energy at that load) and its sink
    pins' (kind, mean internal energy); the clock pins' rise + fall; the leakage sums. Read
    once per netlist, slew and wire load and kept on it and beside it (:func:`_pin_energies`):
    the tables' interpolation was most of a replay's pricing."""

    def __init__(self, net, slew: float, wire_load: bool):
        lib = net.lib.library
        seq_types = {t for t in {c.type for c in net.cells} if lib.cells[t].sequential}
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

        def kind(cell) -> str:
            return "sequential" if cell.type in seq_types else "combinational"

        def priced(ref) -> tuple:
            s = sinks.get(ref, [])
            c_net = (sum(lib.cells[c.type].pins[p].cap for c, p in s)
                     + (lib.wire_cap(len(s)) if wire_load else 0.0))
            driver = None
            if ref in drivers:
                cell, pin = drivers[ref]
                r, f = lib.cells[cell.type].pins[pin].energy(slew, c_net)
                driver = (kind(cell), (r + f) / 2)
            sink_pins = []
            for cell, pin in s:
                p = lib.cells[cell.type].pins[pin]
                if p.rise or p.fall:
                    r, f = p.energy(slew, 0.0)
                    sink_pins.append((kind(cell), (r + f) / 2))
            return c_net, driver, tuple(sink_pins)

        #: net -> (load, driver or None, sink pins), every net of the netlist
        self.nets = {ref: priced(ref) for ref in net.nets}
        self.clock_pins = []
        if net.clock_net is not None:
            for cell, pin in sinks.get(net.clock_net, []):
                r, f = lib.cells[cell.type].pins[pin].energy(slew, 0.0)
                self.clock_pins.append(r + f)
        self.leakage = sum(lib.cells[c.type].leakage for c in net.cells)
        self.leakage_sequential = sum(lib.cells[c.type].leakage for c in net.cells
                                      if c.type in seq_types)
        self.matrices: dict = {}

    def __getstate__(self) -> dict:
        return {**self.__dict__, "matrices": {}}  # kept without the replays' matrices

    def load(self, ref) -> float:
        """Net ``ref``'s load (its sink pins' capacitance and the wire load's)."""
        return self.nets[ref][0]

    def of(self, ref) -> tuple:
        """``(load, driver or None, sink pins)`` of net ``ref``."""
        return self.nets[ref]

    def per_toggle(self, refs: tuple, clock, sw: float, ej: float):
        """Per net of ``refs`` (a replay's nets, in its order) what one transition of it adds
        to each of :data:`_PER_TOGGLE` (the clock net: nothing; it is charged by the cycle):
        a matrix kept per order of nets, so a replay's windows are priced by one product."""
        import numpy as np

        key = (refs, clock, sw, ej)
        kept = self.matrices.get(key)
        if kept is None:
            col = {k: i for i, k in enumerate(_PER_TOGGLE)}
            kept = np.zeros((len(refs), len(_PER_TOGGLE)))
            for i, ref in enumerate(refs):
                if ref == clock:
                    continue
                c_net, driver, sink_pins = self.of(ref)
                row = kept[i]
                row[col["switching"]] = sw * c_net
                if driver is None:  # an input port (or an unconnected net)
                    row[col["combinational"]] += sw * c_net
                    row[col["inputs_switching"]] = sw * c_net
                else:
                    kind, half = driver
                    row[col[kind]] += sw * c_net + half * ej
                    row[col["internal"]] += half * ej
                    row[col[f"{kind}_internal"]] += half * ej
                for kind, half in sink_pins:
                    row[col["internal"]] += half * ej
                    row[col[f"{kind}_internal"]] += half * ej
                    row[col[kind]] += half * ej
            self.matrices[key] = kept
        return kept


#: What a net's transition costs, by where :func:`energy` puts it: the components
#: ``combinational`` and ``sequential`` (its switching, and the internal energy of its driver
#: and sinks, each by its cell's kind) and the detail's items.
_PER_TOGGLE = ("combinational", "sequential", "switching", "internal", "inputs_switching",
               "sequential_internal", "combinational_internal")


def _pin_energies(net, slew: float, wire_load: bool) -> _PinEnergies:
    """:class:`_PinEnergies` of ``net`` at ``slew`` and ``wire_load``, kept on it and, for a
    netlist read by :func:`synth_scripts.gatelevel.netlist.map_netlist`, beside its
    ``netlist.v`` (``pins-<key>.pickle``) under the netlist's, the liberty's and this module's
    digests, so another task or run reads them instead of the liberty's tables again."""
    key = (slew, wire_load)
    if key not in net.priced:
        make = partial(_PinEnergies, net, slew, wire_load)
        if net.digest:
            what = f"{net.digest} {net.lib.sha256} {slew!r} {wire_load} {source_digest(__file__)}"
            name = hashlib.sha256(what.encode()).hexdigest()[:16]
            net.priced[key] = kept_value(Path(net.path).parent / f"pins-{name}.pickle", what,
                                         make)
        else:
            net.priced[key] = make()
    return net.priced[key]


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
    import numpy as np

    if clock_ns <= 0:
        raise ValueError(f"clock_ns must be positive, not {clock_ns!r}")
    if slew_ns <= 0:
        raise ValueError(f"slew_ns must be positive, not {slew_ns!r}")
    lib = net.lib.library
    icg = _icg(net.lib)
    slew = slew_ns * 1e-9 / lib.time_s
    v2 = lib.voltage ** 2
    ej, cf = lib.energy_j, lib.cap_f
    pins = _pin_energies(net, slew, wire_load)
    acc = {k: 0.0 for k in ("clock", "sequential", "combinational", "leakage")}
    detail = {"switching": 0.0, "internal": 0.0, "inputs_switching": 0.0, "clock_net": 0.0,
              "clock_pins": 0.0, "sequential_internal": 0.0, "combinational_internal": 0.0}
    clk = net.clock_net
    # every net's transitions times what one of them costs (pins.per_toggle), in one product
    counts = np.fromiter(toggles.nets.values(), dtype=float, count=len(toggles.nets))
    summed = counts @ pins.per_toggle(tuple(toggles.nets), clk, 0.5 * cf * v2, ej)
    for k, v in zip(_PER_TOGGLE, summed.tolist(), strict=True):
        (acc if k in acc else detail)[k] += v
    # the clock: every flip-flop clock pin (and anything else on the net) every cycle
    clock_pins = 0.0
    if clk is not None:
        for r_f in pins.clock_pins:
            clock_pins += r_f * ej
        c_clk = pins.load(clk)
    else:
        c_clk = 0.0
    clock_net = c_clk * cf * v2  # two toggles a cycle: 2 x 1/2 C V^2
    per_cycle_clock = clock_pins + clock_net
    n = toggles.cycles
    acc["clock"] = per_cycle_clock * n
    detail["clock_pins"] = clock_pins * n
    detail["clock_net"] = clock_net * n
    duration = n * clock_ns * 1e-9
    acc["leakage"] = pins.leakage * lib.leak_w * duration
    detail["leakage_sequential"] = pins.leakage_sequential * lib.leak_w * duration
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


def isolated_cells(net, *, wire_load: bool = True) -> tuple[str, dict[str, str], dict]:
    """``net`` with every cell on its own: each cell input pin that the netlist connects to
    a net (other than the clock) is driven by an input port of that net (``n<i>``, shared by
    the net's sinks), each cell output pin drives an output port of its own (``q<i>``) whose
    load is the original net's (its sink pins' capacitance and, with ``wire_load``, the wire
    load model's at its fan-out: what :func:`energy` charges). Returns the Verilog (module
    ``isolated``), input port -> net, and output port -> (net, load in the liberty's
    capacitance unit).

    OpenSTA 2.0.17 takes measured activity only on input ports (its per-pin activity does not
    work, and it reads no VCD or SAIF): on this netlist every net's measured activity enters,
    each cell's output activity being OpenSTA's own estimate from its inputs' (one gate deep)."""
    pins = _pin_energies(net, NOMINAL_SLEW_NS * 1e-9 / net.lib.library.time_s, wire_load)
    lib = net.lib.library
    ins: dict[str, str] = {}
    by_net: dict[str, str] = {}
    outs: dict[str, tuple] = {}
    body = []
    for k, c in enumerate(net.cells):
        info = lib.cells[c.type]
        conns = []
        for pin, ref in c.pins.items():
            if ref is None or pin not in info.pins:
                continue
            if info.pins[pin].direction == "output":
                port = f"q{len(outs)}"
                outs[port] = (ref, pins.load(ref))
            elif ref == net.clock_net:
                port = "clk"
            else:
                if ref not in by_net:
                    by_net[ref] = f"n{len(by_net)}"
                    ins[by_net[ref]] = ref
                port = by_net[ref]
            conns.append(f".{pin}({port})")
        body.append(f"  {c.type} u{k} ({', '.join(conns)});")
    ports = ["clk", *ins, *outs]
    text = "\n".join([f"module isolated ({', '.join(ports)});", "  input clk;",
                      *(f"  input {p};" for p in ins), *(f"  output {p};" for p in outs),
                      *body, "endmodule", ""])
    return text, ins, outs


def opensta_per_net(net, toggles, high: dict[str, int], workdir, *, clock_ns: float = 10.0,
                    slew_ns: float = NOMINAL_SLEW_NS) -> dict:
    """OpenSTA ``report_power`` of ``net``'s cells fed every net's measured activity (toggles
    a clock and duty, ``toggles`` and ``high`` of one run: :func:`synth_scripts.gatelevel.
    toggles.net_activity`) through :func:`isolated_cells`, against :func:`energy` of the same
    toggles regrouped as OpenSTA groups it (:func:`sta_groups`); pJ over the run.

    Where the two can differ: the internal energy of each cell's output pin, charged at the
    measured toggles here and at OpenSTA's estimate from the cell's inputs there (the
    switching of the same nets is charged at the measured toggles by both); the weight of
    state-dependent (``when``) tables (a plain mean here, duty-weighted there); and OpenSTA
    2.0.17 charges an output transition the rise table's energy plus the fall table's, where
    its later versions and :func:`energy` take their mean (``ours_rise_plus_fall``: ours
    with that convention)."""
    from synth_scripts import flow

    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    text, ins, outs = isolated_cells(net)
    (workdir / "isolated.v").write_text(text, encoding="utf-8")
    n = toggles.cycles
    lines = [f"set_input_transition {slew_ns:g} [all_inputs]",
             f"set_clock_transition {slew_ns:g} [get_clocks clk]",
             # timed against the clock: the flip-flops' inputs end paths (a slack to report)
             "set_input_delay 0 -clock clk [get_ports {n*}]"]
    for port, ref in ins.items():
        lines.append(f"set_power_activity -input_ports [get_ports {port}] -activity "
                     f"{toggles.nets.get(ref, 0) / n:.6f} -duty {high.get(ref, 0) / n:.6f}")
    for port, (_, load) in outs.items():
        lines.append(f"set_load {load:.6g} [get_ports {port}]")
    p = flow.power("isolated", workdir / "isolated.v", lines, net.lib, clock_ns, workdir)
    scale = n * clock_ns * 1e-9 * 1e12  # W over the run -> pJ
    sta = {g: {k: float(f"{v * scale:.6g}") for k, v in row.items()}
           for g, row in p["power_W"].items()}
    ours = sta_groups(energy(net, toggles, clock_ns=clock_ns, slew_ns=slew_ns))
    # OpenSTA 2.0.17 charges an output transition the rise table's energy plus the fall
    # table's (later versions take their mean, as energy() does): ours that way too
    lib = net.lib.library
    pins = _pin_energies(net, slew_ns * 1e-9 / lib.time_s, True)
    extra = {"sequential": 0.0, "combinational": 0.0}
    for ref, t in toggles.nets.items():
        if t and ref != net.clock_net:
            driver = pins.of(ref)[1]
            if driver is not None:
                extra[driver[0]] += driver[1] * t * lib.energy_j
    summed = {g: ours[g] + _pj(extra[g]) for g in extra}
    summed["leakage"] = ours["leakage"]
    summed["total"] = summed["sequential"] + summed["combinational"]
    theirs = {g: sta[g]["total"] for g in ("sequential", "combinational", "total")}
    theirs["leakage"] = sta["total"]["leakage"]

    def ratio(a: dict) -> dict:
        return {g: a[g] / v if v else None for g, v in theirs.items()}

    return {"cycles": n, "cells": len(net.cells), "ours": ours, "ours_rise_plus_fall": summed,
            "opensta": sta, "ratio": ratio(ours), "ratio_rise_plus_fall": ratio(summed)}


# -- the wires between nodes -------------------------------------------------------------------


def wire_capacitance(lib) -> tuple[float, str]:
    """A wire's capacitance in fF per micrometre, and where the figure comes from: the
    capacitance per unit length of the default wire-load model of ``lib`` (a
    :class:`synth_scripts.gatelevel.liberty.Library`; its length unit taken as the micrometre of its
    areas), else :data:`WIRE_FF_PER_UM`."""
    if lib.wire is not None:
        ff = lib.wire[0] * lib.cap_f / 1e-15
        return ff, (f"{ff:.4g} fF/um, the capacitance per unit length of the liberty's default "
                    f"wire-load model ({lib.name}; Weste & Harris's rule of thumb is about "
                    f"{WIRE_FF_PER_UM:g} fF/um)")
    return WIRE_FF_PER_UM, (f"{WIRE_FF_PER_UM:g} fF/um, N. Weste and D. Harris, 'CMOS VLSI "
                            f"Design', 4th ed., 2011 (the liberty {lib.name} has no wire-load "
                            "model)")


def link_pJ(lib, length_um: float) -> float:
    """The energy, pJ, of one transition on a wire ``length_um`` long: ``1/2 C V^2``, ``C`` its
    capacitance (:func:`wire_capacitance`), ``V`` the liberty's nominal voltage. A link between
    two nodes of a mesh is as long as the nodes' pitch, the square root of a node's area."""
    if length_um < 0:
        raise ValueError(f"length_um must be at least 0, not {length_um!r}")
    ff, _ = wire_capacitance(lib)
    return 0.5 * ff * 1e-15 * length_um * lib.voltage ** 2 * 1e12
