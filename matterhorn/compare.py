"""The energy verdict in our own gates: one layer, one set of inputs, five designs, one library.

For a workload (a golden integer layer and its input windows) every design runs the same layer
on the same inputs (docs/compare.md):

- ``dense``: the dense INT4 tile (:class:`rtl_gen.dense.DenseTile`): every code read, every
  output code sent, packed ``P`` per flit;
- ``ttfs``: the M-TTFS tile with the TTFS mask (silent lowest level, ``k = 0``) on both sides;
- ``mttfs-k0``, ``mttfs-k1``, ``mttfs-k2``: the M-TTFS tile at radius ``k`` around the
  calibrated silent centres.

Each design is simulated at RTL (Amaranth) and checked bit-exact against its golden model; the
same stimulus then drives the liberty-mapped netlist (:mod:`synth_scripts.gatelevel`), which
is checked cycle for cycle against the RTL and counts every net's toggles; the toggles times the
liberty's tables are the gate-level energy (:mod:`synth_scripts.gate_energy`). Components:

- ``compute``: the tile netlist (datapath, control, SRAM interface logic, clock) on the cycles
  it works (its clock gated when idle);
- ``movement``: the input flits of the layer moved ``HOPS`` hops through the generated router,
  priced by the router netlist on the same flits;
- ``sram``: the bits read from the SRAM arrays (weights, thresholds, init) times a cited
  per-bit read energy (not our gates: the macros are not synthesized);
- ``idle``: what the free-running clock adds: the tile's idle cycles and the router's clock on
  the cycles of the window it moves nothing.

``total`` is the free-running total, ``total_gated`` the total with idle blocks clock-gated.
The model column is the analytical model's prediction for the same counts: op counts from the
golden counters times the unit costs synthesized from the same library
(:func:`synth_scripts.run.synthesize`), never mixed with the paper's costs.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from synth_scripts.report import sig
from toolkit_base.checks import check_out_dir, check_rtl_T, check_seed, unique

SCHEMA = "matterhorn.compare/1"
DESIGNS = ("dense", "ttfs", "mttfs-k0", "mttfs-k1", "mttfs-k2")
#: Mesh of the movement figure and the mean XY distance between two distinct nodes of it.
MESH = 4
HOPS = 8 / 3
MINILM_SLICE = Path("build/minilm/slice_block0_qproj.json")


@dataclass(frozen=True)
class Workload:
    """A golden layer (its masks are the M-TTFS calibration) and its input code vectors."""

    name: str
    layer: object  # golden_models.IntegerLayer
    codes: torch.Tensor  # [windows, n_in]
    source: str


def random_workload(T: int = 16, *, n_in: int = 64, n_out: int = 8, windows: int = 16,
                    seed: int = 0) -> Workload:
    """A seeded random 1-bit-weight QNN layer (peaked activations) and random input windows."""
    from golden_models import random_qnn

    chain = random_qnn((n_in, n_out), T=T, weight_bits=1, rounding="round", seed=seed)
    return Workload(
        name="random",
        layer=chain.integer_layers()[0],
        codes=chain.random_input(windows, seed=seed + 1),
        source=f"golden_models.random_qnn(({n_in}, {n_out}), T={T}, weight_bits=1, "
        f"rounding='round', seed={seed}); {windows} random peaked input windows",
    )


def read_slice(path: str | os.PathLike) -> Workload:
    """The real MiniLM slice that ``matterhorn stats`` exports (``matterhorn.layer_slice/1``)."""
    from golden_models import CodeSpace, IntegerLayer, Mask
    from toolkit_base.schemas import validate

    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"slice {str(path)!r} is not a readable JSON document: {exc}") from exc
    validate(doc, "layer_slice", path.name)

    def mask(m):
        return Mask(CodeSpace(m["T"], m["family"]), m["i_max"], m["k"])

    layer = IntegerLayer(
        torch.tensor(doc["weights"], dtype=torch.int64), doc["weight_bits"],
        torch.tensor(doc["init"], dtype=torch.int64),
        torch.tensor(doc["theta"], dtype=torch.int64), mask(doc["in_mask"]),
        mask(doc["out_mask"]))
    codes = torch.tensor([v["q_in"] for v in doc["vectors"]], dtype=torch.int64)
    return Workload("minilm", layer, codes,
                    f"{path.name}: MiniLM block 0 Q projection, {layer.n_in} inputs x "
                    f"{layer.n_out} neurons, {layer.weight_bits}-bit weights, "
                    f"{codes.shape[0]} corpus tokens")


def design_layer(layer, design: str):
    """The golden layer of ``design``: the workload's layer with that design's masks."""
    from golden_models import Mask, ttfs_mask
    from golden_models.dense import with_masks

    sin, sout = layer.in_mask.space, layer.out_mask.space
    if design in ("dense", "ttfs"):
        return with_masks(layer, ttfs_mask(sin), ttfs_mask(sout))
    k = int(design.rsplit("k", 1)[1])
    return with_masks(layer, Mask(sin, layer.in_mask.i_max, k),
                      Mask(sout, layer.out_mask.i_max, k))


def _config(layer, design: str, *, macro: bool):
    from rtl_gen.params import RTLConfig

    return RTLConfig(
        T=layer.in_mask.T, k=layer.out_mask.k, family=layer.in_mask.space.family,
        i_max_in=layer.in_mask.i_max, i_max_out=layer.out_mask.i_max,
        weight_bits=layer.weight_bits, n_in=layer.n_in, tile_neurons=layer.n_out,
        lanes=min(layer.n_out, 8), mesh_rows=MESH, mesh_cols=MESH, sram_macro=macro)


# -- one design's tile: RTL trace (checked against the golden model), gates -------------------


@dataclass
class TileRun:
    trace: object  # synth_scripts.gatelevel.Trace
    load_cycles: int
    windows: int
    counters: list[dict]  # per window, as the tile counted
    flits: list[list[tuple[int, int]]]  # per window: the (addr, payload) of the input flits
    sram_bits: int  # SRAM array bits read over all windows


def _tile_testbench(dut, beats, windows, send_window, out_port):
    """Drive ``beats`` into ``load``, then each window; collect every output beat."""
    from rtl_gen.simulation import stream_put

    got: list[list[tuple]] = []
    marks: dict[str, int] = {}

    async def tb(ctx):
        clock = 0

        async def put(stream, payload):
            nonlocal clock
            clock += await stream_put(ctx, stream, payload)

        for target, addr, word in beats:
            await put(dut.load, {"target": target, "addr": addr, "data": word})
        marks["load"] = clock
        ctx.set(dut.o.ready, 1)
        for w in windows:
            for payload in send_window(w):
                await put(dut.i, payload)
            beats_out = []
            while True:
                _, _, valid, payload = await ctx.tick().sample(dut.o.valid, out_port(dut))
                clock += 1
                if valid:
                    beats_out.append(payload)
                    if payload.last:
                        break
            got.append(beats_out)
            while ctx.get(dut.busy):
                await ctx.tick()
                clock += 1

    return tb, got, marks


def run_tile(layer, design: str, codes: torch.Tensor) -> TileRun:
    """Simulate ``design``'s tile at RTL on ``codes``, check it against the golden model."""
    from golden_models import encode_events
    from golden_models.dense import run_dense
    from rtl_gen.dense import DenseTile, dense_counters, dense_load_beats, dense_pack, unpack_codes
    from rtl_gen.tile import NeuronTile, load_beats
    from synth_scripts import gatelevel

    cfg = _config(layer, design, macro=False)
    dense = design == "dense"
    dut = DenseTile(cfg) if dense else NeuronTile(cfg)
    tw, mask = cfg.time_width, (1 << cfg.time_width) - 1
    if dense:
        beats = dense_load_beats(cfg, layer)
        windows = [[int(q) & mask for q in row] for row in codes.tolist()]

        def send(w):
            return [*({"code": q, "last": 0} for q in w), {"code": 0, "last": 1}]

        def out_port(d):
            return d.o.payload

    else:
        beats = load_beats(cfg, layer)
        windows = [encode_events(row, layer.in_mask) for row in codes]

        def send(w):
            return [*({"addr": int(a), "tau": int(t), "last": 0}
                      for a, t in zip(w[0].tolist(), w[1].tolist(), strict=True)),
                    {"addr": 0, "tau": 0, "last": 1}]

        def out_port(d):
            return d.o.payload

    top = dut.elaborate(None)  # simulated instead of dut, so its SRAMs can be probed
    dut._MustUse__silence = True
    srams = {name: top.submodules[name] for name in ("weights", "thresholds", "init")}
    tb, got, marks = _tile_testbench(dut, beats, windows, send, out_port)
    extra = {f"{name}.bus__rdata": sram.bus.rdata for name, sram in srams.items()}
    trace = gatelevel.record(dut, tb, extra_inputs=extra, top=top)
    names = dense_counters(cfg) if dense else cfg.tile_counters
    counters, flits = [], []
    P = dense_pack(cfg)
    for n, (row, out) in enumerate(zip(codes, got, strict=True)):
        if dense:
            ref = run_dense(layer, row)
            pairs = []
            for b in out[:-1]:
                pairs += unpack_codes(cfg, int(b.addr), int(b.codes), layer.n_out)
            if [q for _, q in sorted(pairs)] != ref.codes.tolist():
                raise AssertionError(f"{design}: window {n}: RTL codes differ from the golden "
                                     "dense model")
            want = ref.counters.as_dict()
            raw = [int(q) & mask for q in row.tolist()]
            flits.append([(i, sum(c << (p * tw) for p, c in enumerate(raw[i:i + P])))
                          for i in range(0, len(raw), P)])
        else:
            res = layer.run_codes(row)
            events = [(int(b.addr), int(b.t)) for b in out[:-1]]
            if events != list(zip(res.out_index.tolist(), res.out_time.tolist(), strict=True)):
                raise AssertionError(f"{design}: window {n}: RTL events differ from the golden "
                                     "layer")
            want = res.counters.as_dict()
            index, t = encode_events(row, layer.in_mask)
            flits.append(list(zip(index.tolist(), t.tolist(), strict=True)))
        counters.append(want)
    # the counters the tile reports after the last window equal the golden ones
    last = {k: trace.values[f"cnt_{k}"][-1] for k in names}
    if last != counters[-1]:
        raise AssertionError(f"{design}: tile counters {last} differ from the golden "
                             f"{counters[-1]}")
    G = cfg.groups
    bits = 0
    for c in counters:
        reads = c["weight_row_reads"]
        bits += reads * cfg.weight_row_width + (cfg.T - 1) * G * cfg.theta_row_width \
            + G * cfg.init_row_width
    return TileRun(trace, marks["load"], len(windows), counters, flits, bits)


def _slice(trace, start: int, stop: int):
    from synth_scripts.gatelevel import Trace

    return Trace(trace.ports, {k: v[start:stop] for k, v in trace.values.items()})


def tile_energy(layer, design: str, run: TileRun, lib_path: Path, work: Path, sim: str,
                clock_ns: float, netlists: dict) -> dict:
    """Gate-level energy of the windows (the load phase subtracted), free-running and gated."""
    from amaranth.back import verilog

    from rtl_gen.dense import DenseTile
    from rtl_gen.sram import MACRO_NAME
    from rtl_gen.tile import NeuronTile
    from synth_scripts import gate_energy, gatelevel

    kind = "dense" if design == "dense" else "mttfs"
    if kind not in netlists:
        cfg = _config(layer, design, macro=True)
        comp = DenseTile(cfg) if kind == "dense" else NeuronTile(cfg)
        text = verilog.convert(comp, name=f"{kind}_tile", emit_src=False)
        netlists[kind] = gatelevel.map_netlist(text, f"{kind}_tile", lib_path, work / kind,
                                               cut_macros={MACRO_NAME: "RDATA"})
    net = netlists[kind]
    tr = run.trace

    def enable(t):
        return [bool(b or v or lv) for b, v, lv in zip(
            t.values["busy"], t.values["i__valid"], t.values["load__valid"], strict=True)]

    def measure(t, name):
        tog = gatelevel.replay(net, t, work / design / name, sim=sim)
        return gate_energy.energy(net, tog, clock_ns=clock_ns, enable=enable(t)), tog

    def idle_clock(e):
        # the clock energy of the cycles the block does not work
        per_cycle = (e.detail["clock_pins"] + e.detail["clock_net"]) / e.cycles
        return per_cycle * (e.cycles - e.enabled_cycles)

    full, tog = measure(tr, "all")
    load, _ = measure(_slice(tr, 0, run.load_cycles), "load")
    n = run.windows
    free = full.free["total"] - load.free["total"]
    gated = full.gated["total"] - load.gated["total"]
    idle = idle_clock(full) - idle_clock(load)
    cycles = tr.cycles - run.load_cycles
    busy = sum(enable(_slice(tr, run.load_cycles, tr.cycles)))
    return {
        "free_pJ": free / n,
        "gated_pJ": gated / n,
        "idle_clock_pJ": idle / n,
        "cycles": cycles / n,
        "busy_cycles": busy / n,
        "cells": len(net.cells),
        "replay_cycles_per_s": round(tog.cycles_per_s, 1),
    }


# -- the router: one hop per flit --------------------------------------------------------------


def router_energy(flits: list[tuple[int, int]], payload_width: int, addr_width: int,
                  lib_path: Path, work: Path, sim: str, clock_ns: float, cache: dict) -> dict:
    """Energy of the generated router moving ``flits`` one hop each (one per clock, west to
    east), and of its idle clock, from the gate netlist."""
    from amaranth.back import verilog

    from rtl_gen.router import Router
    from synth_scripts import gate_energy, gatelevel

    key = (payload_width, addr_width)
    if key not in cache:
        router = Router(MESH, MESH, addr_width=addr_width, time_width=payload_width)
        text = verilog.convert(router, name="mttfs_router", emit_src=False)
        cache[key] = (router, gatelevel.map_netlist(
            text, "mttfs_router", lib_path, work / f"router_{payload_width}_{addr_width}"))
    router_ref, net = cache[key]
    dut = Router(MESH, MESH, addr_width=addr_width, time_width=payload_width)

    def trace_of(items, idle):
        async def tb(ctx):
            ctx.set(dut.x, 1)
            ctx.set(dut.y, 1)
            ctx.set(dut.o_east.ready, 1)
            for a, p in items:
                ctx.set(dut.i_west.valid, 1)
                ctx.set(dut.i_west.payload, {"dst_x": 3, "dst_y": 1, "addr": a, "t": p,
                                             "hops": 0})
                await ctx.tick()
            ctx.set(dut.i_west.valid, 0)
            for _ in range(idle):
                await ctx.tick()
        return gatelevel.record(dut, tb)

    tag = f"{payload_width}_{len(flits)}"
    loaded = trace_of(flits, 4)
    idle = trace_of([], 64)
    e_loaded = gate_energy.energy(net, gatelevel.replay(net, loaded, work / f"r{tag}", sim=sim),
                                  clock_ns=clock_ns)
    e_idle = gate_energy.energy(net, gatelevel.replay(net, idle, work / f"ri{tag}", sim=sim),
                                clock_ns=clock_ns)
    idle_per_clock = e_idle.free["total"] / idle.cycles
    per_hop = (e_loaded.free["total"] - 4 * idle_per_clock) / max(len(flits), 1)
    return {"per_hop_pJ": per_hop, "idle_per_clock_pJ": idle_per_clock,
            "cells": len(net.cells)}


# -- the analytical model on the same counts ---------------------------------------------------


def model_energy(design: str, counters: dict, layer, costs: dict, flits: float,
                 sram_bit: float) -> dict:
    """The paper's formulas for one window with our counts and our synthesized unit costs.

    ``costs`` are ``unit_costs_pJ_native`` of a synth report of the same library. Compute:
    spiking ``accumulate_ops * E_MAC`` + ``compare_ops * E_CMP``; dense ``mac_ops * E_MAC`` +
    ``2 * codes_out * E_clamp4`` (the paper's dense quantization). ``E_MAC`` is ``E_MAC4`` for
    1-bit weights, ``E_MAC4x4`` otherwise. SRAM: the paper's bit counts (``weight_bits`` per
    delivery; 4 bits per threshold read). Movement: flits x hops x our router's hop cost.
    """
    c = {k: v["value"] for k, v in costs.items()}
    mac = c["E_MAC4"] if layer.weight_bits == 1 else c["E_MAC4x4"]
    hop = c["E_move_event_router"]
    if design == "dense":
        compute = counters["mac_ops"] * mac + 2 * counters["codes_out"] * c["E_clamp4"]
        bits = counters["mac_ops"] * layer.weight_bits
    else:
        compute = counters["accumulate_ops"] * mac + counters["compare_ops"] * c["E_CMP"]
        bits = counters["accumulate_ops"] * layer.weight_bits + 4 * counters["threshold_reads"]
    out = {"sram": bits * sram_bit, "compute": compute, "movement": flits * HOPS * hop,
           "idle": 0.0}
    out["total"] = sum(out.values())
    return out


# -- everything --------------------------------------------------------------------------------


def sram_bit_pJ(lib) -> float:
    """The PDK table's per-bit SRAM read energy at the library's node and nominal supply."""
    from synth_scripts import scaling

    return scaling.sram_bit_pJ(lib)


def compare_workload(wl: Workload, lib_path: Path, costs: dict, work: Path, *, sim: str,
                     clock_ns: float, progress: Callable[[str], None]) -> dict:
    from rtl_gen.dense import dense_pack
    from synth_scripts import liberty

    lib = liberty.prepare(lib_path, work / "lib")
    e_bit = sram_bit_pJ(lib)
    netlists: dict = {}
    routers: dict = {}
    designs = []
    for design in DESIGNS:
        t0 = time.perf_counter()
        layer = design_layer(wl.layer, design)
        run = run_tile(layer, design, wl.codes)
        tile = tile_energy(layer, design, run, lib_path, work, sim, clock_ns, netlists)
        cfg = _config(layer, design, macro=False)
        width = dense_pack(cfg) * cfg.time_width if design == "dense" else cfg.time_width
        all_flits = [f for w in run.flits for f in w]
        router = router_energy(all_flits[:256], width, cfg.in_addr_width, lib_path, work, sim,
                               clock_ns, routers)
        n = run.windows
        flits = len(all_flits) / n
        hop_pJ = flits * HOPS * router["per_hop_pJ"]
        move_clocks = flits * HOPS
        router_idle = max(tile["cycles"] - move_clocks, 0.0) * router["idle_per_clock_pJ"]
        gates = {
            "sram": run.sram_bits / n * e_bit,
            "compute": tile["free_pJ"] - tile["idle_clock_pJ"],
            "movement": hop_pJ,
            "idle": tile["idle_clock_pJ"] + router_idle,
        }
        gates["total"] = sum(gates.values())
        # gated: no idle clock, but the clock-gating cell's own energy
        gates["total_gated"] = gates["sram"] + gates["movement"] + tile["gated_pJ"]
        mean = {k: sum(c[k] for c in run.counters) / n for k in run.counters[0]}
        model = model_energy(design, mean, layer, costs, flits, e_bit)
        designs.append({
            "design": design,
            "events": flits if design != "dense" else None,
            "flits": flits,
            "counters": {k: round(v, 4) for k, v in mean.items()},
            "cycles": round(tile["cycles"], 2),
            "busy_cycles": round(tile["busy_cycles"], 2),
            "energy_pJ": {"gates": _round(gates), "model": _round(model)},
            "error": {k: _ratio(model[k], gates[k]) for k in ("sram", "compute", "movement",
                                                               "total")},
            "gate_cells": {"tile": tile["cells"], "router": router["cells"]},
            "router_pJ": {"per_hop": sig(router["per_hop_pJ"], 5),
                          "idle_per_clock": sig(router["idle_per_clock_pJ"], 5)},
        })
        progress(f"  {wl.name} {design}: {gates['total']:.4g} pJ per window in gates "
                 f"({time.perf_counter() - t0:.1f} s)")
    dense = designs[0]["energy_pJ"]
    for d in designs:
        g, m = d["energy_pJ"]["gates"], d["energy_pJ"]["model"]
        d["rel_dense"] = {
            "gates": sig(g["total"] / dense["gates"]["total"], 5),
            "gates_gated": sig(g["total_gated"] / dense["gates"]["total_gated"], 5),
            "model": sig(m["total"] / dense["model"]["total"], 5),
        }
    return {"name": wl.name, "source": wl.source, "n_in": wl.layer.n_in,
            "n_out": wl.layer.n_out, "weight_bits": wl.layer.weight_bits,
            "windows": int(wl.codes.shape[0]), "designs": designs,
            "sram_pJ_per_bit": sig(e_bit, 5)}


def _round(d: dict) -> dict:
    return {k: sig(v, 5) for k, v in d.items()}


def _ratio(model: float, gates: float) -> float | None:
    return sig(model / gates - 1.0, 4) if gates else None


PAPER_REL_K1 = 0.67


def compare(T: int = 16, k: int = 1, out_dir: str | os.PathLike = "build/compare", *,
            liberties: list | None = None, slice_path: str | os.PathLike | None = None,
            windows: int = 16, seed: int = 0, sim: str = "icarus", clock_ns: float = 10.0,
            progress: Callable[[str], None] = print) -> dict:
    """Run every design on every workload with every library; write compare.json/.md/.png.

    Parameters
    ----------
    T, k : int
        Levels of the random workload, and the radius the verdict names (``mttfs-k{k}``,
        one of 0..2).
    liberties : list of paths, optional
        Default: the NanGate 45 nm library, and sky130 from ``PDK_ROOT`` when set.
    slice_path : path, optional
        The MiniLM slice (``matterhorn stats --model minilm`` writes it); default
        ``build/minilm/slice_block0_qproj.json`` when it exists.
    """
    from golden_models import check_k, check_T
    from synth_scripts import liberty
    from synth_scripts.run import check_clock, synthesize
    from toolkit_base.schemas import validate

    check_rtl_T(check_T(T))
    check_k(k, T)
    if k > 2:
        raise ValueError(f"k must be 0, 1 or 2 (the compared radii), not {k!r}")
    clock_ns = check_clock(clock_ns)
    if not isinstance(windows, int) or isinstance(windows, bool) or not 1 <= windows <= 256:
        raise ValueError(f"windows must be in 1..256, not {windows!r}")
    if sim not in ("icarus", "verilator"):
        raise ValueError(f"sim must be 'icarus' or 'verilator', not {sim!r}")
    check_seed(seed)
    check_out_dir(out_dir)
    if liberties is None:
        liberties = [p for p in (liberty.resolve(None, {}),
                                 liberty.resolve(None, default=False)) if p is not None]
        liberties = list(dict.fromkeys(liberties))
    libs = []
    for p in liberties:
        path = Path(p)
        if not path.is_file():
            raise FileNotFoundError(f"liberty file {str(p)!r} does not exist")
        libs.append(path)
    if not libs:
        raise FileNotFoundError("no liberty: install the default with "
                                f"'{liberty.DEFAULT_INSTALL}' or pass --liberty FILE")
    libs = list(unique(libs))
    from regression.sim import ensure_simulator
    from toolkit_base import toolchain

    for tool in ("yosys", "sta"):  # every tool, before anything runs
        toolchain.require(tool)
    ensure_simulator(sim)
    workloads = [random_workload(T, windows=windows, seed=seed)]
    if slice_path is None and MINILM_SLICE.is_file():
        slice_path = MINILM_SLICE
    missing = None
    if slice_path is not None:
        wl = read_slice(slice_path)
        workloads.append(Workload(wl.name, wl.layer, wl.codes[:windows], wl.source))
    else:
        missing = (f"minilm: no slice at {MINILM_SLICE}; run 'matterhorn stats --model minilm "
                   "--out build/minilm' (needs the models extra) or pass --slice FILE")
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    doc = {"schema": SCHEMA, "parameters": {"T": T, "k": k, "windows": windows, "seed": seed,
                                             "clock_ns": clock_ns, "simulator": sim,
                                             "mesh": f"{MESH}x{MESH}", "hops": sig(HOPS, 5)},
           "pdks": []}
    with tempfile.TemporaryDirectory(prefix=".compare-", dir=out.parent) as tmp:
        tmp = Path(tmp)
        for lib_path in libs:
            lib = liberty.prepare(lib_path, tmp / "libinfo" / lib_path.name)
            progress(f"[compare] {lib.name}: unit costs (matterhorn synth, operators)")
            synth = synthesize(T, k, tmp / f"synth_{lib_path.name}", liberty_file=lib_path,
                               clock_ns=clock_ns, blocks=True)
            costs = synth["unit_costs_pJ_native"]
            entry = {"pdk": lib.name, "liberty": lib_path.name, "sha256": lib.sha256,
                     "technology": synth["scaling"]["technology_label"],
                     "scaling_divide_by": synth["scaling"]["divide_by"],
                     "unit_costs_pJ": {k2: sig(v["value"], 5) for k2, v in costs.items()},
                     "unit_cost_source": "synthesized by matterhorn synth on this library "
                     "(unit_costs_pJ_native); E_move_event_router for a hop",
                     "sram_bit_source": lib.pdk.sram_bit["source"],
                     "workloads": []}
            for wl in workloads:
                progress(f"[compare] {lib.name}: workload {wl.name}")
                entry["workloads"].append(compare_workload(
                    wl, lib_path, costs, tmp / lib_path.name / wl.name, sim=sim,
                    clock_ns=clock_ns, progress=progress))
            doc["pdks"].append(entry)
        doc["missing"] = [missing] if missing else []
        doc["pdk"] = doc["pdks"][0]["pdk"]
        doc["workloads"] = doc["pdks"][0]["workloads"]
        validate(doc, "compare", "compare.json")
        stage = tmp / "out"
        stage.mkdir()
        (stage / "compare.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        (stage / "compare.md").write_text(markdown(doc), encoding="utf-8")
        plot(doc, stage / "compare.png")
        out.mkdir(parents=True, exist_ok=True)
        for name in ("compare.json", "compare.png", "compare.md"):  # the summary last
            os.replace(stage / name, out / name)
    progress(f"[compare] done in {time.perf_counter() - t_start:.0f} s: {out}/compare.md")
    return doc


def verdict(wl: dict, k: int) -> str:
    d = {x["design"]: x for x in wl["designs"]}[f"mttfs-k{k}"]
    r = d["rel_dense"]
    return (f"in our gates, M-TTFS k={k} costs {r['gates']:.3g}x the dense INT4 design "
            f"({r['gates_gated']:.3g}x with idle blocks clock-gated); the model predicts "
            f"{r['model']:.3g}x; the paper reports {PAPER_REL_K1}x")


def markdown(doc: dict) -> str:
    p = doc["parameters"]
    lines = [f"# M-TTFS against a dense INT4 design, in gates (T={p['T']})", ""]
    lines += [("Energy per window (one token through one layer) in pJ, from the liberty-mapped "
               "netlists simulated on the workload; `model` is the analytical model on the "
               "same counts with unit costs synthesized on the same library. SRAM arrays are "
               "priced per bit from a cited figure, not from our gates (below)."), ""]
    for entry in doc["pdks"]:
        lines += [f"## {entry['technology']} (`{entry['liberty']}`)", ""]
        for wl in entry["workloads"]:
            lines += [f"### {wl['name']}: {wl['source']}", "",
                      "**Verdict:** " + verdict(wl, p["k"]) + ".", "",
                      ("| design | flits | cycles | SRAM | compute | movement | idle | total "
                       "| gated | Rel. gates | Rel. gated | model total | Rel. model | "
                       "model err |"),
                      ("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
                       "---: | ---: | ---: | ---: |")]
            for d in wl["designs"]:
                g, m, r = d["energy_pJ"]["gates"], d["energy_pJ"]["model"], d["rel_dense"]
                err = d["error"]["total"]
                lines.append(
                    f"| {d['design']} | {d['flits']:.4g} | {d['cycles']:.4g} | {g['sram']:.4g} "
                    f"| {g['compute']:.4g} | {g['movement']:.4g} | {g['idle']:.4g} | "
                    f"{g['total']:.4g} | {g['total_gated']:.4g} | {r['gates']:.3g} | "
                    f"{r['gates_gated']:.3g} | {m['total']:.4g} | {r['model']:.3g} | "
                    f"{'-' if err is None else f'{err:+.0%}'} |")
            lines += ["", "Model error per component (model / gates - 1): "
                      + "; ".join(f"{d['design']} " + ", ".join(
                          f"{c} {'-' if d['error'][c] is None else format(d['error'][c], '+.0%')}"
                          for c in ("sram", "compute", "movement")) for d in wl["designs"]),
                      ""]
        lines += ["Unit costs of the model (synthesized on this library, "
                  f"{entry['technology']}, unscaled): "
                  + ", ".join(f"{k} {v:g}" for k, v in entry["unit_costs_pJ"].items()
                              if not k.startswith(("E_weight", "E_move_dense", "E_move_event")))
                  + f", E_move_event_router {entry['unit_costs_pJ']['E_move_event_router']:g}.",
                  "", f"SRAM: {entry['sram_bit_source']}.", ""]
    for m in doc["missing"]:
        lines += [f"Not run: {m}.", ""]
    lines += ["Method: docs/compare.md."]
    return "\n".join(lines) + "\n"


def plot(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(e, w) for e in doc["pdks"] for w in e["workloads"]]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
    colors = {"sram": "#4c72b0", "compute": "#dd8452", "movement": "#55a868", "idle": "#c7c7c7"}
    for ax, (e, w) in zip(axes[0], panels, strict=True):
        names = [d["design"] for d in w["designs"]]
        bottom = [0.0] * len(names)
        for comp, color in colors.items():
            vals = [d["energy_pJ"]["gates"][comp] for d in w["designs"]]
            ax.bar(names, vals, bottom=bottom, color=color, label=comp)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        model = [d["energy_pJ"]["model"]["total"] for d in w["designs"]]
        ax.plot(names, model, "k_", markersize=18, label="model total")
        ax.set_title(f"{w['name']}, {e['technology']}", fontsize=9)
        ax.set_ylabel("pJ per window")
        ax.tick_params(axis="x", labelrotation=45, labelsize=8)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


__all__ = ["DESIGNS", "SCHEMA", "compare", "random_workload", "read_slice", "run_tile"]
