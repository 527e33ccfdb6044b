"""One design of ``matterhorn compare`` measured in gates (docs/compare.md, "Method").

A design is a golden layer run by one of the two registered tiles (:func:`tile_block`) on a
workload's input windows (:data:`golden_models.workloads.DESIGNS`): ``dense`` by
:class:`rtl_gen.dense.DenseTile`, the others by :class:`rtl_gen.tile.NeuronTile`.
:func:`measure_design` measures one:

1. :func:`run_tile`: the tile in the Amaranth simulator, driven by the one tile driver
   (:class:`rtl_gen.driver.TileDriver`), its output and counters checked against the golden
   model window by window; the stimulus is recorded (:func:`synth_scripts.gatelevel.record`)
   and the driver's trace hook collects the input flits.
2. :func:`tile_energy`: the tile's liberty-mapped netlist (SRAM macros cut out) replayed on that
   trace; the toggles priced by the liberty (:mod:`synth_scripts.gate_energy`), the load phase
   subtracted, free-running and clock-gated.
3. :func:`router_energy`: the generated router's netlist moving the design's own input flits
   one hop each, and idling.
4. SRAM: the bits read from the arrays times a cited per-bit read energy (the PDK table's
   ``sram_bit``, scaled to the library by :func:`synth_scripts.scaling.sram_bit_pJ`): not our
   gates, the macros are not synthesized.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = [
    "MESH",
    "DesignGates",
    "TileRun",
    "design_config",
    "measure_design",
    "replay_energy",
    "router_energy",
    "run_tile",
    "tile_energy",
]

#: Mesh (rows, columns) the compared tiles and the router are generated for; the movement
#: figure's mean hop count is :func:`rtl_gen.router.mean_hops` of it.
MESH = (4, 4)
#: Per-bit SRAM read energy, the cited source, and the node and supply it holds for.
def design_config(layer, *, macro: bool, mesh: tuple[int, int] = MESH):
    """The tile configuration that runs ``layer`` (its masks, widths and sizes) on ``mesh``."""
    from rtl_gen.params import RTLConfig

    return RTLConfig(
        T=layer.in_mask.T, k=layer.out_mask.k, family=layer.in_mask.space.family,
        i_max_in=layer.in_mask.i_max, i_max_out=layer.out_mask.i_max,
        weight_bits=layer.weight_bits, n_in=layer.n_in, tile_neurons=layer.n_out,
        lanes=min(layer.n_out, 8), mesh_rows=mesh[0], mesh_cols=mesh[1], sram_macro=macro)


# -- one design's tile: RTL trace (checked against the golden model), gates -------------------


@dataclass
class TileRun:
    """A design's RTL run: the recorded stimulus and what the windows did."""

    trace: object  # synth_scripts.gatelevel.Trace
    load_cycles: int
    windows: int
    counters: list[dict]  # per window, as the tile counted (equal to the golden counters)
    flits: list[list[tuple[int, int]]]  # per window: the (addr, payload) of the input flits
    sram_bits: int  # SRAM array bits read over all windows
    #: the trace's cycle where each window after the load starts (the first the load's end)
    marks: list[int] = field(default_factory=list)


def _flits(cfg, dense: bool, beats: list[dict]) -> list[tuple[int, int]]:
    """The input flits of one window from its input beats (the marker left out): one per event,
    or ``P`` codes packed per flit for the dense design."""
    if not dense:
        return [(b["addr"], b["tau"]) for b in beats]
    from rtl_gen.dense import dense_pack

    P, tw = dense_pack(cfg), cfg.time_width
    codes = [b["code"] for b in beats]
    return [(i, sum(c << (p * tw) for p, c in enumerate(codes[i:i + P])))
            for i in range(0, len(codes), P)]


def tile_block(design: str):
    """The registered tile (:func:`rtl_gen.registry.tiles`) that runs ``design``: the dense
    tile for ``dense``, the spiking tile for TTFS and M-TTFS."""
    from rtl_gen import registry

    want = "dense" if design == "dense" else "spiking"
    return next(b for b in registry.tiles() if b.design == want)


def _golden(block, cfg, layer, row):
    """The golden model's window on codes ``row``: its output (the raw sums with
    ``cfg.raw_sums``; the dense design's codes; the spiking design's events ``(index, t)``) and
    its counters."""
    from golden_models import encode_events
    from golden_models.dense import run_dense_sums

    dense = block.node.i == "codes"
    if cfg.raw_sums:
        return (run_dense_sums(layer, row) if dense
                else layer.run_sums(*encode_events(row, layer.in_mask)))
    if dense:
        return block.node.run(layer, row)
    return block.node.run(layer, encode_events(row, layer.in_mask))


def golden_counters(layer, design: str, config, row) -> dict[str, int]:
    """The counters of ``design``'s tile (configuration ``config``, as :func:`run_tile`'s) on
    one window of codes ``row``, from the golden model: what the tile counts (:func:`run_tile`
    checks they are equal)."""
    return _golden(tile_block(design), config, layer, row)[1].as_dict()


def _check_window(block, cfg, layer, design: str, n: int, row, run) -> dict:
    """The golden model's window ``n`` (codes ``row``) against the tile's ``run``: its output
    (codes, events, or with ``cfg.raw_sums`` the integer sums) and counters; returns the
    golden counters."""
    from golden_models import CodeSpace
    from rtl_gen.dense import unpack_codes

    dense = block.node.i == "codes"
    out, ref_counters = _golden(block, cfg, layer, row)
    if cfg.raw_sums:
        if [(b["addr"], b["sum"]) for b in run.output[:-1]] != list(enumerate(out.tolist())):
            raise AssertionError(f"{design}: window {n}: RTL sums differ from the golden "
                                 "layer's raw sums")
    elif dense:
        pairs = []
        for b in run.output[:-1]:
            pairs += unpack_codes(cfg, b["addr"], b["codes"], layer.n_out)
        # a beat carries c - tau in the tile's (input) family: its code in the output's
        shift = layer.out_mask.space.c - CodeSpace(cfg.T, cfg.family).c
        if [q + shift for _, q in sorted(pairs)] != out.tolist():
            raise AssertionError(f"{design}: window {n}: RTL codes differ from the golden "
                                 "dense model")
    else:
        index, t = out
        events = [(b["addr"], b["t"]) for b in run.output[:-1]]
        if events != list(zip(index.tolist(), t.tolist(), strict=True)):
            raise AssertionError(f"{design}: window {n}: RTL events differ from the golden "
                                 "layer")
    want = ref_counters.as_dict()
    if run.counters != want:
        raise AssertionError(f"{design}: window {n}: tile counters {run.counters} differ "
                             f"from the golden {want}")
    return want


def run_tile(layer, design: str, codes: torch.Tensor, *, mesh: tuple[int, int] = MESH,
             config=None) -> TileRun:
    """Simulate ``design``'s tile at RTL on ``codes``, check it against the golden model.

    ``config`` (an :class:`rtl_gen.params.RTLConfig`) is the tile's, when not
    :func:`design_config`'s (e.g. a tile in raw-sum mode, ``raw_sums``: its windows send the
    integer sums, checked against ``IntegerLayer.run_sums`` or
    ``golden_models.dense.run_dense_sums``); its ``sram_macro`` is ignored (the RTL runs the
    behavioural SRAMs).

    Raises
    ------
    AssertionError
        A window's output or counters differ from the golden model's.
    """
    from dataclasses import replace

    from golden_models import encode_events
    from rtl_gen.driver import TileDriver, Window
    from rtl_gen.simulation import elaborated
    from synth_scripts import gatelevel

    cfg = (design_config(layer, macro=False, mesh=mesh) if config is None
           else replace(config, sram_macro=False))
    block = tile_block(design)
    dense = block.node.i == "codes"  # the port kinds of the registered block decide the beats
    mask = (1 << cfg.time_width) - 1
    windows = []
    for n, row in enumerate(codes):
        if dense:
            beats = [*({"code": int(q) & mask, "last": 0} for q in row.tolist()),
                     {"code": 0, "last": 1}]
        else:
            index, t = encode_events(row, layer.in_mask)
            beats = [*({"addr": a, "tau": b, "last": 0}
                       for a, b in zip(index.tolist(), t.tolist(), strict=True)),
                     {"addr": 0, "tau": 0, "last": 1}]
        load = block.node.image(cfg, layer) if n == 0 else None
        windows.append(Window(load, beats))
    inputs: list[list[dict]] = [[] for _ in windows]
    load_cycles = 0

    def on_beat(beat):
        nonlocal load_cycles
        if beat.port == "load":
            load_cycles = beat.cycle
        elif beat.port == "i" and not beat.payload["last"]:
            inputs[beat.window].append(beat.payload)

    dut = block.build(cfg)
    names = block.counters(cfg)
    driver = TileDriver(dut, windows, names, on_beat=on_beat)
    # simulated as one elaboration whose SRAMs are probed: their read data drive the netlist's
    # cut macro outputs
    top, module = elaborated(dut)
    extra = {f"{name}.bus__rdata": module.submodules[name].bus.rdata
             for name in ("weights", "thresholds", "init")}
    trace = gatelevel.record(dut, driver.testbench, extra_inputs=extra, top=top)
    counters = [_check_window(block, cfg, layer, design, n, row, run)
                for n, (row, run) in enumerate(zip(codes, driver.results, strict=True))]
    bits = sum(tile_sram_bits(cfg, c) for c in counters)
    # a window's cycles run to its output marker: the next one's start there
    marks = [load_cycles, *(r.cycles["last_out"] for r in driver.results[:-1])]
    return TileRun(trace, load_cycles, len(windows), counters,
                   [_flits(cfg, dense, beats) for beats in inputs], bits, marks)


def tile_sram_bits(cfg, counters: dict[str, int]) -> int:
    """The SRAM array bits a tile of configuration ``cfg`` reads in a window with
    ``counters``: its weight rows, the init rows and, unless it sends raw sums, a threshold row
    per step of the walk and lane group."""
    G = cfg.groups
    walk = 0 if cfg.raw_sums else (cfg.T - 1) * G * cfg.theta_row_width
    return counters["weight_row_reads"] * cfg.weight_row_width + walk + G * cfg.init_row_width


def _slice(trace, start: int, stop: int):
    from synth_scripts.gatelevel import Trace

    return Trace(trace.ports, {k: v[start:stop] for k, v in trace.values.items()})


def tile_energy(layer, design: str, run: TileRun, lib_path: Path, work: Path, sim: str,
                clock_ns: float, netlists: dict, *, mesh: tuple[int, int] = MESH,
                config=None, one_replay: bool = False, netlist_dir: Path | None = None,
                windows: bool = False) -> dict:
    """Gate-level energy of the windows (the load phase subtracted), free-running and gated.

    ``netlists`` caches the mapped tile netlists by kind (``dense``, ``mttfs``) across designs;
    with ``config`` (the tile's :class:`rtl_gen.params.RTLConfig`, as :func:`run_tile`'s) by
    kind and the digest of the tile's Verilog, so tiles that generate the same Verilog share
    one netlist. ``one_replay``: :func:`replay_energy`'s. ``netlist_dir``: where the netlist is
    mapped (a folder named by kind and digest in it; default ``work``). ``windows`` (with
    ``one_replay``): each window priced on its own too (:func:`replay_energy`'s ``marks``).
    """
    import hashlib
    from dataclasses import replace

    from amaranth.back import verilog

    from rtl_gen.sram import MACRO_NAME
    from synth_scripts import gatelevel

    kind = "dense" if design == "dense" else "mttfs"
    key, text = kind, None
    if config is not None:
        comp = tile_block(design).build(replace(config, sram_macro=True))
        text = verilog.convert(comp, name=f"{kind}_tile", emit_src=False)
        key = (kind, hashlib.sha256(text.encode()).hexdigest()[:16])
    if key not in netlists:
        if text is None:
            comp = tile_block(design).build(design_config(layer, macro=True, mesh=mesh))
            text = verilog.convert(comp, name=f"{kind}_tile", emit_src=False)
        where = (netlist_dir or work) / (kind if config is None else f"{kind}_{key[1]}")
        netlists[key] = gatelevel.map_netlist(text, f"{kind}_tile", lib_path, where,
                                              cut_macros={MACRO_NAME: "RDATA"})
    return replay_energy(netlists[key], run.trace, run.load_cycles, run.windows,
                         work / design, sim, clock_ns, one_replay=one_replay,
                         marks=run.marks if windows else None)


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
    free figure), ``cycles``, ``busy_cycles``; and ``cells``, ``replay_cycles_per_s``.
    With ``one_replay``, the trace is replayed once and only its clocks after the load are
    counted (``gatelevel.replay(start=...)``) instead of subtracting a replay of the load
    alone: half the builds; the clock at the boundary is the only difference.

    With ``marks`` (``one_replay`` only: the cycles where the windows after the load start,
    the first ``load_cycles``), each window is priced on its own as well: ``windows``, per
    window ``free_pJ``, ``gated_pJ``, ``idle_clock_pJ``, ``cycles`` and ``busy_cycles`` (what
    :mod:`synth_scripts.calibration` fits).
    """
    from synth_scripts import gate_energy, gatelevel

    def enable(t):
        on = [any(bits) for bits in zip(*(t.values[p] for p in enable_ports), strict=True)]
        return [any(on[max(c - hold, 0):c + 1]) for c in range(len(on))]

    def measure(t, name):
        tog = gatelevel.replay(net, t, work / name, sim=sim)
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
        tog = gatelevel.replay(net, trace, work / "all", sim=sim, start=load_cycles,
                               marks=marks)
        on = enable(trace)[load_cycles:]
        e = gate_energy.energy(net, tog, clock_ns=clock_ns, enable=on)
        free, gated, idle = e.free["total"], e.gated["total"], idle_clock(e)
        if marks is not None:
            per_window = []
            for i, lo in enumerate(tog.segment_starts):
                seg = tog.segment(i)
                w = gate_energy.energy(net, seg, clock_ns=clock_ns, enable=on[lo:lo + seg.cycles])
                per_window.append({"free_pJ": w.free["total"], "gated_pJ": w.gated["total"],
                                   "idle_clock_pJ": idle_clock(w), "cycles": seg.cycles,
                                   "busy_cycles": w.enabled_cycles})
    else:
        full, tog = measure(trace, "all")
        load, _ = measure(_slice(trace, 0, load_cycles), "load")
        free = full.free["total"] - load.free["total"]
        gated = full.gated["total"] - load.gated["total"]
        idle = idle_clock(full) - idle_clock(load)
    cycles = trace.cycles - load_cycles
    busy = sum(enable(_slice(trace, load_cycles, trace.cycles)))
    out = {} if per_window is None else {"windows": per_window}
    return out | {
        "free_pJ": free / n,
        "gated_pJ": gated / n,
        "idle_clock_pJ": idle / n,
        "cycles": cycles / n,
        "busy_cycles": busy / n,
        "cells": len(net.cells),
        "area_um2": net.area(),
        "replay_cycles_per_s": round(tog.cycles_per_s, 1),
    }


# -- the router: one hop per flit --------------------------------------------------------------


def router_energy(flits: list[tuple[int, int]], payload_width: int, addr_width: int,
                  lib_path: Path, work: Path, sim: str, clock_ns: float, cache: dict, *,
                  mesh: tuple[int, int] = MESH, netlist_dir: Path | None = None) -> dict:
    """Energy of the generated router moving ``flits`` one hop each (one per clock, west to
    east, from node (1, 1) towards the last column), and of its idle clock, from the gate
    netlist; its cells and area, and the transitions its east link's wires (payload and valid)
    make per flit (``link_toggles_per_flit``, what :func:`synth_scripts.gate_energy.link_pJ`
    prices). ``cache`` keeps the mapped netlists by flit width and mesh across designs;
    ``netlist_dir`` is where they are mapped (default ``work``), a folder per netlist named by
    its widths and the digest of its Verilog."""
    import hashlib

    from amaranth.back import verilog

    from rtl_gen.router import Router
    from synth_scripts import gate_energy, gatelevel

    rows, cols = mesh
    key = (payload_width, addr_width, rows, cols)
    if key not in cache:
        text = verilog.convert(Router(rows, cols, addr_width=addr_width,
                                      time_width=payload_width),
                               name="mttfs_router", emit_src=False)
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        cache[key] = gatelevel.map_netlist(
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
        return gatelevel.record(dut, tb)

    tag = f"{payload_width}_{len(flits)}"
    loaded = trace_of(flits, 4)
    e_loaded = gate_energy.energy(net, gatelevel.replay(net, loaded, work / f"r{tag}", sim=sim),
                                  clock_ns=clock_ns)
    # the idle clock depends on the netlist alone: replayed once per netlist and clock
    idle_key = ("idle", *key, clock_ns)
    if idle_key not in cache:
        idle = trace_of([], 64)
        e_idle = gate_energy.energy(net, gatelevel.replay(net, idle, work / f"ri{tag}", sim=sim),
                                    clock_ns=clock_ns)
        cache[idle_key] = e_idle.free["total"] / idle.cycles
    idle_per_clock = cache[idle_key]
    per_hop = (e_loaded.free["total"] - 4 * idle_per_clock) / max(len(flits), 1)
    # the link the flits leave on: its wires' transitions, clock to clock, as the RTL drove them
    words = [p << 1 | v for p, v in zip(loaded.values["o_east__payload"],
                                        loaded.values["o_east__valid"], strict=True)]
    link = sum((a ^ b).bit_count() for a, b in zip(words, words[1:], strict=False))
    return {"per_hop_pJ": per_hop, "idle_per_clock_pJ": idle_per_clock,
            "cells": len(net.cells), "area_um2": net.area(),
            "link_toggles_per_flit": link / max(len(flits), 1)}


# -- one design, all components ------------------------------------------------------------------


@dataclass(frozen=True)
class DesignGates:
    """One design measured in gates, per window (means over the workload's windows).

    ``energy_pJ``: ``sram``, ``compute``, ``movement``, ``idle``, ``total`` (free-running) and
    ``total_gated`` (idle blocks clock-gated); ``counters``: the golden counters; ``flits``:
    input flits; ``router``: the router's ``per_hop_pJ``, ``idle_per_clock_pJ`` and ``cells``.
    """

    counters: dict[str, float]
    flits: float
    cycles: float
    busy_cycles: float
    energy_pJ: dict[str, float]
    tile_cells: int
    router: dict


def measure_design(layer, design: str, codes: torch.Tensor, *, lib_path: Path, work: Path,
                   sim: str, clock_ns: float, hops: float, sram_bit: float, cache: dict,
                   mesh: tuple[int, int] = MESH) -> DesignGates:
    """Run ``design`` (its golden ``layer``) on ``codes`` at RTL and in gates.

    ``hops`` is the mean hop count of a flit, ``sram_bit`` the per-bit SRAM read energy in
    pJ (:func:`synth_scripts.scaling.sram_bit_pJ`); ``cache`` keeps mapped netlists across the
    designs of a library.
    """
    from rtl_gen.dense import dense_pack

    run = run_tile(layer, design, codes, mesh=mesh)
    tile = tile_energy(layer, design, run, lib_path, work, sim, clock_ns,
                       cache.setdefault("tiles", {}), mesh=mesh)
    cfg = design_config(layer, macro=False, mesh=mesh)
    width = dense_pack(cfg) * cfg.time_width if design == "dense" else cfg.time_width
    all_flits = [f for w in run.flits for f in w]
    router = router_energy(all_flits[:256], width, cfg.in_addr_width, lib_path, work, sim,
                           clock_ns, cache.setdefault("routers", {}), mesh=mesh)
    n = run.windows
    flits = len(all_flits) / n
    move_clocks = flits * hops
    router_idle = max(tile["cycles"] - move_clocks, 0.0) * router["idle_per_clock_pJ"]
    gates = {
        "sram": run.sram_bits / n * sram_bit,
        "compute": tile["free_pJ"] - tile["idle_clock_pJ"],
        "movement": flits * hops * router["per_hop_pJ"],
        "idle": tile["idle_clock_pJ"] + router_idle,
    }
    gates["total"] = sum(gates.values())
    # gated: no idle clock, but the clock-gating cell's own energy
    gates["total_gated"] = gates["sram"] + gates["movement"] + tile["gated_pJ"]
    return DesignGates(
        counters={k: sum(c[k] for c in run.counters) / n for k in run.counters[0]},
        flits=flits, cycles=tile["cycles"], busy_cycles=tile["busy_cycles"], energy_pJ=gates,
        tile_cells=tile["cells"], router=router)
