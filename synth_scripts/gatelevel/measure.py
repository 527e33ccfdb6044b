"""A mapped netlist replayed on a recorded run and priced, window by window
(:func:`replay_energy`); the generated router moving flits one hop each
(:func:`router_energy`). The primitives under ``matterhorn compare``'s designs and the
block's pricing (:mod:`synth_scripts.gate_compare`, :mod:`synth_scripts.block_pricing`)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["MESH", "bus_flips", "held_on", "replay_energy", "router_energy"]

#: Mesh (rows, columns) the compared tiles and the router are generated for; the movement
#: figure's mean hop count is :func:`rtl_gen.router.mean_hops` of it.
MESH = (4, 4)


def _slice(trace, start: int, stop: int):
    from synth_scripts.gatelevel.trace import Trace

    return Trace(trace.ports, {k: v[start:stop] for k, v in trace.values.items()})


def bus_flips(words) -> int:
    """The bits a bus flips carrying ``words`` (ints) one after another."""
    return sum((a ^ b).bit_count() for a, b in zip(words, words[1:], strict=False))


def held_on(columns, hold: int) -> list[bool]:
    """Per clock: whether any of ``columns`` (their values clock by clock) is high on it or on
    one of the ``hold`` clocks before: a block's clock enable (:func:`replay_energy`'s)."""
    on = [any(bits) for bits in zip(*columns, strict=True)]
    return [any(on[max(c - hold, 0):c + 1]) for c in range(len(on))]


def replay_energy(net, trace, load_cycles: int, windows: int, work: Path, sim: str,
                  clock_ns: float, *, enable_ports: tuple[str, ...] = (
                      "busy", "i__valid", "load__valid"), hold: int = 0,
                  one_replay: bool = False, marks: list[int] | None = None) -> dict:
    """Replay ``trace`` on the mapped ``net`` and its first ``load_cycles`` clocks alone, and
    price the difference (what the ``windows`` after the load cost) per window.

    The block is enabled (its clock runs when gated) on a clock where any of
    ``enable_ports`` is high (trace columns: the netlist's ports, or signals recorded beside
    them), and the ``hold`` clocks after (a block whose registers settle on the edge after its
    last busy clock). Returns per window ``free_pJ`` and ``gated_pJ`` (the clock gated while
    not enabled), ``idle_clock_pJ`` (the clock energy of the cycles it is not enabled, in the
    free figure), ``leakage_pJ`` (the cells' leakage over the window's clocks, in both the
    free and the gated figure), ``cycles``, ``busy_cycles``; and ``cells``,
    ``replay_cycles_per_s``.
    With ``one_replay``, the trace is replayed once and only its clocks after the load are
    counted (``replay(start=...)``) instead of subtracting a replay of the load
    alone: half the builds; the clock at the boundary is the only difference.

    With ``marks`` (``one_replay`` only: the cycles where the windows after the load start,
    the first ``load_cycles``), each window is priced on its own as well: ``windows``, per
    window ``free_pJ``, ``gated_pJ``, ``idle_clock_pJ``, ``cycles`` and ``busy_cycles`` (what
    :mod:`synth_scripts.block_calibration` fits).
    """
    from synth_scripts.gatelevel import energy as gate_energy
    from synth_scripts.gatelevel.toggles import replay

    def enable(t):
        return held_on([t.values[p] for p in enable_ports], hold)

    def measure(t, name):
        tog = replay(net, t, work / name, sim=sim)
        return gate_energy.energy(net, tog, clock_ns=clock_ns, enable=enable(t)), tog

    def idle_clock(e):
        # the clock energy of the cycles the block does not work
        per_cycle = (e.detail["clock_pins"] + e.detail["clock_net"]) / e.cycles
        return per_cycle * (e.cycles - e.enabled_cycles)

    n = windows
    per_window = None
    if marks is not None and not one_replay:
        raise ValueError("marks need one_replay")
    if one_replay:
        tog = replay(net, trace, work / "all", sim=sim, start=load_cycles,
                               marks=marks)
        on = enable(trace)[load_cycles:]
        e = gate_energy.energy(net, tog, clock_ns=clock_ns, enable=on)
        free, gated, idle = e.free["total"], e.gated["total"], idle_clock(e)
        leak = e.free["leakage"]
        if marks is not None:
            per_window = []
            for i, lo in enumerate(tog.segment_starts):
                seg = tog.segment(i)
                w = gate_energy.energy(net, seg, clock_ns=clock_ns, enable=on[lo:lo + seg.cycles])
                per_window.append({"free_pJ": w.free["total"], "gated_pJ": w.gated["total"],
                                   "idle_clock_pJ": idle_clock(w),
                                   "leakage_pJ": w.free["leakage"], "cycles": seg.cycles,
                                   "busy_cycles": w.enabled_cycles})
    else:
        full, tog = measure(trace, "all")
        load, _ = measure(_slice(trace, 0, load_cycles), "load")
        free = full.free["total"] - load.free["total"]
        gated = full.gated["total"] - load.gated["total"]
        idle = idle_clock(full) - idle_clock(load)
        leak = full.free["leakage"] - load.free["leakage"]
    cycles = trace.cycles - load_cycles
    busy = sum(enable(_slice(trace, load_cycles, trace.cycles)))
    out = {} if per_window is None else {"windows": per_window}
    return out | {
        "free_pJ": free / n,
        "gated_pJ": gated / n,
        "idle_clock_pJ": idle / n,
        "leakage_pJ": leak / n,
        "cycles": cycles / n,
        "busy_cycles": busy / n,
        "cells": len(net.cells),
        "area_um2": net.area(),
        "replay_cycles_per_s": round(tog.cycles_per_s, 1),
    }


def router_energy(flits: list[tuple[int, int]], payload_width: int, addr_width: int,
                  lib_path: Path, work: Path, sim: str, clock_ns: float, cache: dict, *,
                  mesh: tuple[int, int] = MESH, netlist_dir: Path | None = None) -> dict:
    """Energy of the generated router moving ``flits`` one hop each (one per clock, west to
    east, from node (1, 1) towards the last column), and of its idle clock, from the gate
    netlist; its cells and area, and the transitions its east link's wires (payload and valid)
    make per flit (``link_toggles_per_flit``, what :func:`synth_scripts.gatelevel.energy.link_pJ`
    prices). ``cache`` keeps the mapped netlists by flit width and mesh across designs;
    ``netlist_dir`` is where they are mapped (default ``work``), a folder per netlist named by
    its widths and the digest of its Verilog."""
    import hashlib

    from amaranth.back import verilog

    from rtl_gen.router import Router
    from synth_scripts.gatelevel import energy as gate_energy
    from synth_scripts.gatelevel.netlist import kept_verilog, map_netlist
    from synth_scripts.gatelevel.toggles import replay
    from synth_scripts.gatelevel.trace import record

    rows, cols = mesh
    key = (payload_width, addr_width, rows, cols)
    if key not in cache:
        text = kept_verilog(
            netlist_dir, ("mttfs_router", repr((rows, cols, addr_width, payload_width))),
            lambda: verilog.convert(Router(rows, cols, addr_width=addr_width,
                                           time_width=payload_width),
                                    name="mttfs_router", emit_src=False))
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        cache[key] = map_netlist(
            text, "mttfs_router", lib_path,
            (netlist_dir or work) / f"router_{payload_width}_{addr_width}_{digest}")
    net = cache[key]

    def trace_of(items, idle):
        dut = Router(rows, cols, addr_width=addr_width, time_width=payload_width)

        async def tb(ctx):
            ctx.set(dut.x, 1)
            ctx.set(dut.y, 1)
            ctx.set(dut.o_east.ready, 1)
            for a, p in items:
                ctx.set(dut.i_west.valid, 1)
                ctx.set(dut.i_west.payload, {"dst_x": cols - 1, "dst_y": 1, "addr": a, "t": p,
                                             "hops": 0})
                await ctx.tick()
            ctx.set(dut.i_west.valid, 0)
            for _ in range(idle):
                await ctx.tick()
        return record(dut, tb)

    tag = f"{payload_width}_{len(flits)}"
    loaded = trace_of(flits, 4)
    e_loaded = gate_energy.energy(net, replay(net, loaded, work / f"r{tag}", sim=sim),
                                  clock_ns=clock_ns)
    # the idle clock depends on the netlist alone: replayed once per netlist and clock
    idle_key = ("idle", *key, clock_ns)
    if idle_key not in cache:
        idle = trace_of([], 64)
        e_idle = gate_energy.energy(net, replay(net, idle, work / f"ri{tag}", sim=sim),
                                    clock_ns=clock_ns)
        cache[idle_key] = e_idle.free["total"] / idle.cycles
    idle_per_clock = cache[idle_key]
    per_hop = (e_loaded.free["total"] - 4 * idle_per_clock) / max(len(flits), 1)
    # the link the flits leave on: its wires' transitions, clock to clock, as the RTL drove them
    words = [p << 1 | v for p, v in zip(loaded.values["o_east__payload"],
                                        loaded.values["o_east__valid"], strict=True)]
    link = bus_flips(words)
    return {"per_hop_pJ": per_hop, "idle_per_clock_pJ": idle_per_clock,
            "cells": len(net.cells), "area_um2": net.area(),
            "link_toggles_per_flit": link / max(len(flits), 1)}
