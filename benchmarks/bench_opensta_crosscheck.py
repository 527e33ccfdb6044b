"""The toggle-count energy against OpenSTA's ``report_power`` fed the same activity: one tile and
one attention node of the small random block, on one sentence.

OpenSTA 2.0.17 reads no VCD or SAIF and its per-pin activity does not work; measured activity
enters only on input ports. :func:`synth_scripts.gatelevel.energy.opensta_per_net` therefore
gives it a netlist of the same cells each on its own (every cell input pin driven by an input
port carrying its net's measured toggles a clock and duty, every cell output pin loaded with
its net's capacitance): OpenSTA prices every pin from the measured activity of the nets at
the cell's inputs, and estimates each output's from them, one gate deep. The same toggles
priced by :func:`synth_scripts.gatelevel.energy.energy`, grouped as OpenSTA groups them, are
set beside it.

    python benchmarks/bench_opensta_crosscheck.py [--sentence TEXT] [--design dense|mttfs-k1]
        [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SENTENCE = "A short sentence of six words."


def tile(qnn, case, lib, out: Path):
    """The query layer's first tile: its netlist (SRAM macros cut) and its recorded run."""
    from dataclasses import replace

    from amaranth.back import verilog

    from regression.block_parts import tile_config, tile_slices
    from rtl_gen.sram import MACRO_NAME
    from synth_scripts.gatelevel.netlist import map_netlist
    from synth_scripts.gatelevel.tile import run_tile, tile_block

    design = case.design.name
    sub = tile_slices(case.layers["query"], 48)[0][2]
    cfg = tile_config(sub, raw_sums=False)
    run = run_tile(sub, design, case.cat("q_proj_in"), config=cfg)
    kind = "dense" if design == "dense" else "mttfs"
    text = verilog.convert(tile_block(design).build(replace(cfg, sram_macro=True)),
                           name=f"{kind}_tile", emit_src=False)
    net = map_netlist(text, f"{kind}_tile", lib, out / "tile_net",
                      cut_macros={MACRO_NAME: "RDATA"})
    return net, run.trace


def node(qnn, case, lib, out: Path, part: str = "sm"):
    """Head 0's ``part`` node of the attention path (memories cut) and its recorded trace."""
    from amaranth.back import verilog

    from regression.block_parts import attention_config
    from rtl_gen.attn_softmax import SoftmaxNode
    from rtl_gen.kv_tiles import ContextTile, DenseContextTile, ScoreTile
    from rtl_gen.simulation.attention import simulate_attention
    from synth_scripts.gatelevel.attention import AttentionRecorder
    from synth_scripts.gatelevel.netlist import map_netlist

    acfg = attention_config(qnn, case.block)
    dense = case.design.dense
    rec = AttentionRecorder()
    simulate_attention(acfg, case.path, [(s.codes["query"], s.codes["key"], s.codes["value"],
                                          s.valid) for s in case.sequences],
                       dense=dense, runner=rec)
    comp = {"qk": lambda: ScoreTile(acfg, dense=dense),
            "sm": lambda: SoftmaxNode(acfg, dense=dense),
            "pv": lambda: DenseContextTile(acfg) if dense else ContextTile(acfg)}[part]()
    text = verilog.convert(comp, name=f"attn_{part}", emit_src=False)
    net = map_netlist(text, f"attn_{part}", lib, out / f"{part}_net", cut_memories=True)
    return net, rec.node_trace(0, part, net.cut)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sentence", default=SENTENCE)
    ap.add_argument("--design", default="mttfs-k1")
    ap.add_argument("--part", default="sm", choices=("qk", "sm", "pv"))
    ap.add_argument("--out", type=Path, default=Path("build/opensta_crosscheck"))
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")

    import torch

    from networks.block import block_case, random_block_model
    from synth_scripts.gatelevel.energy import opensta_per_net
    from synth_scripts.gatelevel.liberty import default_liberty
    from synth_scripts.gatelevel.toggles import net_activity

    torch.set_num_threads(1)
    qnn, tok = random_block_model(seq=12)
    case = block_case(qnn, tok, [args.sentence], args.design)
    lib = default_liberty()
    out = args.out.resolve()
    print(f"load average {os.getloadavg()[0]:.1f}; {args.design}, NanGate 45 nm, 10 ns, "
          "0.04 ns slew, wire load on")
    results = {}
    for what, make in (("tile", tile), (f"attention node {args.part}",
                                        lambda *a: node(*a, part=args.part))):
        net, trace = make(qnn, case, lib, out)
        tog, high = net_activity(net, trace, out / f"{what.replace(' ', '_')}_values")
        r = opensta_per_net(net, tog, high, out / f"{what.replace(' ', '_')}_sta")
        results[what] = r
        print(f"\n{what}: {r['cells']} cells, {r['cycles']} clocks, pJ ours / OpenSTA "
              "(ours with OpenSTA 2.0.17's rise + fall a transition / OpenSTA):")
        for g in ("sequential", "combinational", "leakage", "total"):
            theirs = (r["opensta"]["total"]["leakage"] if g == "leakage"
                      else r["opensta"][g]["total"])
            print(f"  {g}: {r['ours'][g]:,.1f} / {theirs:,.1f} = {r['ratio'][g]:.3f} "
                  f"({r['ours_rise_plus_fall'][g]:,.1f} / {theirs:,.1f} = "
                  f"{r['ratio_rise_plus_fall'][g]:.3f})")
        print("  OpenSTA's split: " + ", ".join(
            f"{g} internal {r['opensta'][g]['internal']:,.1f}, switching "
            f"{r['opensta'][g]['switching']:,.1f}" for g in ("sequential", "combinational")))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "crosscheck.json").write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
