"""The non-linear units in gates: area, energy per row from a gate-level replay, cycles per row.

For the softmax unit (``rtl_gen.softmax``) and the residual-add + LayerNorm unit
(``rtl_gen.add_norm``), built from one :class:`rtl_gen.params.RTLConfig` (a model's units:
``regression.units.minilm_config``), on golden cases (``regression.units``: rows the integer
MiniLM computes, with its constants):

1. the unit runs the cases at RTL in Amaranth (:func:`synth_scripts.gatelevel.record`); every
   output is checked against the golden units before anything is measured;
2. its netlist is mapped to the liberty with the row buffers and the channel SRAM cut out
   (``sram_macro``; their read data enter as inputs, as for the tiles);
3. the netlist replays the trace (:func:`synth_scripts.gatelevel.replay`, every output compared
   every cycle) and its toggles are priced (:func:`synth_scripts.gatelevel.energy.energy`), free and
   with the clock gated while the unit is idle.

The load phase is replayed alone and subtracted. The softmax's rows come in two groups of
different lengths (the prefix ending with the first group is replayed too), which gives the
two terms of its energy, ``E(row of L keys) = E_row + L * E_key``; the LayerNorm's rows all
have ``hidden`` channels, so its energy is per row and per channel. The buffers' bits read and
written per key and per channel are counted (the energy model prices them at its SRAM bit cost,
``E_weight``), never added to the gates' figure.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from synth_scripts import gatelevel
from synth_scripts.gatelevel import energy as gate_energy

#: Units mapped without ABC's equivalence steps (:func:`synth_scripts.flow.mapping`,
#: ``no_fraig``): the add+LayerNorm unit's wide multipliers (``N*S2 - S1**2``, ``D * F``) keep
#: ``&fraig -x`` busy for over an hour at 32 channels.
NO_FRAIG = frozenset({"add_norm"})

__all__ = ["UnitRun", "measure", "run_add_norm", "run_softmax", "unit_costs"]


@dataclass
class UnitRun:
    """A unit's RTL run: the recorded trace, the clocks where its phases end, the rows' sizes
    and cycles, and the SRAM bits it read and wrote."""

    unit: str
    trace: object  # gatelevel.Trace
    load_end: int  # the clock of the last load beat
    group_end: int | None  # the clock of the first group's last row (softmax)
    rows: list[int]  # entries per row (keys or channels)
    row_cycles: list[int]  # clocks per row, first input beat to last output beat
    groups: tuple[int, int]  # rows in the first and second group
    bits_per_entry: int


def _record(dut, bench, sram_names):
    from rtl_gen.simulation import elaborated

    top, module = elaborated(dut)
    extra = {f"{name}.bus__rdata": module.submodules[name].bus.rdata for name in sram_names}
    return gatelevel.record(dut, bench, extra_inputs=extra, top=top)


def run_softmax(config, load, short_rows, long_rows, expected) -> UnitRun:
    """Run the softmax unit on ``load``, then ``short_rows`` and ``long_rows`` (lists of
    ``(scores, valid)``); ``expected`` are the golden codes of all rows, in order.

    Raises
    ------
    AssertionError
        A row's codes differ from the golden codes.
    """
    from rtl_gen.simulation.units import softmax_testbench
    from rtl_gen.softmax import Softmax

    cfg = replace(config, sram_macro=False)
    dut = Softmax(cfg)
    out, ends = [], []
    rows = list(short_rows) + list(long_rows)
    bench = softmax_testbench(dut, cfg, rows, load, out, on_load=ends.append)
    trace = _record(dut, bench, ["row"])
    got = [r.codes for r in out]
    if got != list(expected):
        bad = next(i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b)
        raise AssertionError(f"softmax: row {bad}: RTL codes differ from the golden softmax")
    return UnitRun("softmax", trace, ends[0], out[len(short_rows) - 1].end,
                   [len(s) for s, _ in rows], [r.clocks for r in out],
                   (len(short_rows), len(long_rows)), 3 * (cfg.score_bits + 1))


def run_add_norm(config, load, rows, expected) -> UnitRun:
    """Run the residual-add + LayerNorm unit on ``load`` then ``rows`` (``(r, V)``);
    ``expected`` are the golden ``(stream, codes)`` of every row."""
    from rtl_gen.add_norm import AddNorm
    from rtl_gen.layouts import norm_channel_layout
    from rtl_gen.simulation.units import add_norm_testbench

    cfg = replace(config, sram_macro=False)
    dut = AddNorm(cfg)
    out, ends = [], []
    bench = add_norm_testbench(dut, cfg, rows, load, out, on_load=ends.append)
    trace = _record(dut, bench, ["channels", "row"])
    if [(r.r, r.codes) for r in out] != list(expected):
        raise AssertionError("add_norm: the RTL's rows differ from the golden units")
    # per channel: the channel word read in both passes, the sum written and read back
    bits = 2 * norm_channel_layout(cfg).size + 2 * cfg.sum_bits
    return UnitRun("add_norm", trace, ends[0], None, [cfg.hidden] * len(rows),
                   [r.clocks for r in out], (len(rows), 0), bits)


def _slice(trace, stop: int):
    return gatelevel.Trace(trace.ports, {k: v[:stop] for k, v in trace.values.items()})


def _enable(trace, inputs: tuple[str, ...]) -> list[bool]:
    cols = [trace.values[n] for n in ("busy", *inputs)]
    return [any(bits) for bits in zip(*cols, strict=True)]


def measure(run: UnitRun, config, lib_path, work, *, sim: str = "verilator",
            clock_ns: float = 10.0, netlists: dict | None = None,
            one_replay: bool = False, netlist_dir: Path | None = None) -> dict:
    """Area, energy per row (free and gated) and cycles per row of ``run`` on the liberty at
    ``lib_path`` (the unit mapped once; the load phase subtracted).

    ``netlists``, when given, keeps the mapped netlist by the digest of the unit's Verilog
    across calls (the same unit measured on other rows); ``netlist_dir``, when given, is where it
    is mapped (a folder named by the module and that digest), else ``work/netlist``.
    ``energy_pJ.idle_clock_per_row`` is the part of ``free_per_row`` that is the clock of the
    cycles the unit is idle (neither busy nor offered a beat); ``leakage_per_row`` the part of
    ``free_per_row`` and ``gated_per_row`` that is its cells' leakage. With ``one_replay`` a unit
    measured per row (no groups: the add+LayerNorm) is replayed once and only its clocks after
    the load are counted (``gatelevel.replay(start=...)``) instead of subtracting a replay of
    the load alone.
    """
    import hashlib

    from amaranth.back import verilog

    from rtl_gen.registry import block
    from rtl_gen.sram import MACRO_NAME
    from synth_scripts.gatelevel.netlist import kept_verilog

    work = Path(work)
    b = block(run.unit)
    macro = replace(config, sram_macro=True)
    text = kept_verilog(netlist_dir, (b.module, repr(macro)),
                        lambda: verilog.convert(b.build(macro), name=b.module, emit_src=False))
    key = (b.module, hashlib.sha256(text.encode()).hexdigest()[:16])
    netlists = {} if netlists is None else netlists
    if key not in netlists:
        where = (Path(netlist_dir) / f"{b.module}_{key[1]}" if netlist_dir is not None
                 else work / "netlist")
        netlists[key] = gatelevel.map_netlist(text, b.module, lib_path, where,
                                              cut_macros={MACRO_NAME: "RDATA"},
                                              no_fraig=run.unit in NO_FRAIG)
    net = netlists[key]
    cells = net.lib.library.cells
    area = sum(cells[c.type].area for c in net.cells)
    inputs = ("i__valid", "load__valid") if run.unit == "softmax" else (
        "r__valid", "v__valid", "load__valid")

    idle, leak = {}, {}

    def energy(stop: int, name: str):
        t = _slice(run.trace, stop)
        tog = gatelevel.replay(net, t, work / name, sim=sim)
        e = gate_energy.energy(net, tog, clock_ns=clock_ns, enable=_enable(t, inputs))
        # the clock energy of the cycles the unit is idle
        per_cycle = (e.detail["clock_pins"] + e.detail["clock_net"]) / e.cycles
        idle[name] = per_cycle * (e.cycles - e.enabled_cycles)
        leak[name] = e.free["leakage"]  # the cells' leakage, in both figures
        return e.free["total"], e.gated["total"]

    total = run.trace.cycles
    if one_replay and run.group_end is None:
        tog = gatelevel.replay(net, run.trace, work / "rows", sim=sim, start=run.load_end)
        e = gate_energy.energy(net, tog, clock_ns=clock_ns,
                               enable=_enable(run.trace, inputs)[run.load_end:])
        per_cycle = (e.detail["clock_pins"] + e.detail["clock_net"]) / e.cycles
        idle["all"], idle["load"] = per_cycle * (e.cycles - e.enabled_cycles), 0.0
        leak["all"], leak["load"] = e.free["leakage"], 0.0
        load, full = (0.0, 0.0), (e.free["total"], e.gated["total"])
    else:
        load = energy(run.load_end, "load")
        full = energy(total, "all")
    out = {
        "unit": run.unit,
        "module": b.module,
        "liberty": net.lib.source_name,
        "library": net.lib.name,
        "clock_ns": clock_ns,
        "cells": len(net.cells),
        "area_um2": round(area, 3),
        "rows": len(run.rows),
        "entries_per_row": run.rows,
        "cycles_per_row": run.row_cycles,
        "buffer_bits_per_entry": run.bits_per_entry,
    }
    n_a, n_b = run.groups
    if run.group_end is None:
        free, gated = (f - s for f, s in zip(full, load, strict=True))
        n = len(run.rows)
        out["energy_pJ"] = {"free_per_row": free / n, "gated_per_row": gated / n,
                            "gated_per_entry": gated / n / run.rows[0],
                            "idle_clock_per_row": (idle["all"] - idle["load"]) / n,
                            "leakage_per_row": (leak["all"] - leak["load"]) / n}
        return out
    mid = energy(run.group_end, "first_group")
    e_a = [m - s for m, s in zip(mid, load, strict=True)]
    e_b = [f - m for f, m in zip(full, mid, strict=True)]
    len_a = sum(run.rows[:n_a]) / n_a
    len_b = sum(run.rows[n_a:]) / n_b
    # n_a (E_row + len_a E_key) = e_a, n_b (E_row + len_b E_key) = e_b
    per_a, per_b = e_a[1] / n_a, e_b[1] / n_b
    key = (per_b - per_a) / (len_b - len_a)
    out["energy_pJ"] = {
        "free_per_row": (e_a[0] + e_b[0]) / (n_a + n_b),
        "gated_per_row": (e_a[1] + e_b[1]) / (n_a + n_b),
        "gated_per_row_fixed": per_a - key * len_a,
        "gated_per_entry": key,
        "idle_clock_per_row": (idle["all"] - idle["load"]) / (n_a + n_b),
        "leakage_per_row": (leak["all"] - leak["load"]) / (n_a + n_b),
        "groups": {"rows": [n_a, n_b], "mean_entries": [len_a, len_b],
                   "gated_per_row": [per_a, per_b]},
    }
    return out


def unit_costs(softmax: dict, add_norm: dict, *, divide_by: float = 1.0,
               where: str) -> dict:
    """The units' costs in the shape of a unit-cost table's ``unit_costs_pJ`` section
    (``energy_model.unit_costs``): ``E_softmax_row``, ``E_softmax_key``, ``E_norm_channel``,
    gated figures, divided by ``divide_by`` (a node scaling), ``where`` naming the library and
    scaling."""
    what = (f"gate-level replay of recorded MiniLM rows (synth_scripts.unit_gates), logic only "
            f"(row buffers and channel SRAM cut out, their bits counted apart); {where}")
    e_s, e_n = softmax["energy_pJ"], add_norm["energy_pJ"]
    return {
        "E_softmax_row": {"value": e_s["gated_per_row_fixed"] / divide_by, "unit": "pJ/row",
                          "note": "the softmax unit's fixed energy per row (the reciprocal and "
                          "the phase changes)", "provenance": what},
        "E_softmax_key": {"value": e_s["gated_per_entry"] / divide_by, "unit": "pJ/key",
                          "note": "the softmax unit's energy per score of a row (three passes)",
                          "provenance": what},
        "E_norm_channel": {"value": e_n["gated_per_entry"] / divide_by, "unit": "pJ/channel",
                           "note": "the residual-add + LayerNorm unit's energy per channel, "
                           "its row's root and reciprocal shared over "
                           f"{add_norm['entries_per_row'][0]} channels", "provenance": what},
    }
