"""A whole encoder block priced in our gates, per piece and per component, for each design; the
paper's model at the measured rates beside it; the wall time.

The small random block (:func:`networks.block.random_block_model`) on ``--sentence`` (default
one short sentence), each design captured with its masks and priced by
:func:`matterhorn.block_gates.measure_block_gates` on the default NanGate 45 nm library (one
netlist cache for all designs). Prints, per design, the table of pieces x components in pJ per
token, the block's totals, each design's total and compute against the dense design's, and
the model / gates ratio of every component (:func:`matterhorn.block.model_ratios`, our
gates scaled to 22 nm); writes ``DIR/<design>.json`` (``BlockGates.to_json``).

With ``--validate``, instead: the validation of the method on the attention path
(:func:`matterhorn.block_gates.validate_attention`): per design, the path priced node by node as
the block's pricing does against one replay of its whole netlist on the same run.

With ``--compare PIECE``, instead: the same piece of each design priced in one run the old way
(every tile, every window, every head replayed, Verilator at ``-O0``, the attention path
recorded in the Amaranth simulator: the sample's pricing before the sampling options and the
fast harness's recording) and the new way (``--gate-tiles``, ``--gate-windows``,
``--gate-heads`` and ``--opt``, as ``matterhorn block`` takes them), task by task: the seconds
of each, the replayed cycles per second, and (``--errors DIR``, the output folder of
``benchmarks/bench_block_calibration.py``) the held-out errors of the calibrated pricing.
``--model minilm`` takes MiniLM's block 0 on its two shortest evaluation sentences.

    python benchmarks/bench_block_gates.py [--design dense --design mttfs-k1 ...]
        [--hidden 32 --heads 2 --ffn 64 --seq 12] [--sentence TEXT ...]
        [--sim icarus|verilator] [--out DIR] [--validate]
        [--compare PIECE [--model random|minilm] [--gate-tiles N] [--gate-windows N]
         [--gate-heads N] [--opt -O1] [--errors DIR]]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from golden_models.block_pieces import PIECE_NAMES, TILE_NEURONS  # noqa: E402
from synth_scripts.block_gates import TOTALS  # noqa: E402

SENTENCE = "A short sentence of six words."


def table(doc: dict) -> str:
    """The pieces x components of one design, pJ per token, and the block's totals."""
    head = f"| piece | {' | '.join(TOTALS)} |"
    lines = [head, "|" + " --- |" * (len(TOTALS) + 1)]
    for piece in PIECE_NAMES:
        e = doc["pieces"][piece]
        lines.append(f"| {piece} | " + " | ".join(f"{e[k]:.1f}" for k in TOTALS) + " |")
    t = doc["totals"]
    lines.append("| **block** | " + " | ".join(f"**{t[k]:.1f}**" for k in TOTALS) + " |")
    return "\n".join(lines)


def _priced_tasks(qnn, case, piece, pr, tile_neurons: int,
                  amaranth: bool = False) -> tuple[list, float]:
    """The piece's pricing tasks run here one after the other: per task its seconds and, for
    a tile, its replayed clocks a second; the piece assembled (its total seconds). With
    ``amaranth``, the attention path recorded in the Amaranth simulator (the way before the
    fast harness recorded it: ``price_attention``'s last argument, its recorder, None)."""
    from matterhorn.block_gates import JOBS, run_task
    from synth_scripts.block_attention import price_attention

    tasks, assemble = JOBS[piece.kind](qnn, case, piece, pr, tile_neurons)
    if amaranth:
        tasks = [(fn, (*args[:-1], None)) if fn is price_attention else (fn, args)
                 for fn, args in tasks]
    got, rows = [], []
    for t in tasks:
        result, seconds = run_task(t)
        got.append(result)
        rate = result["tile"]["replay_cycles_per_s"] if isinstance(result, dict) else None
        rows.append((seconds, rate))
    t0 = time.perf_counter()
    assemble(got)
    return rows, math.fsum(s for s, _ in rows) + time.perf_counter() - t0


def compare(args) -> int:
    """``--compare PIECE``: the piece of each design the old way and the new way."""
    import torch

    from golden_models.block_pieces import PIECES
    from networks.block import block_case
    from synth_scripts.block_pricing import Pricing
    from synth_scripts.gatelevel import liberty, toggles

    torch.set_num_threads(1)
    piece = next(p for p in PIECES if p.name == args.compare)
    designs = args.design or ["dense", "mttfs-k1"]
    if args.model == "minilm":
        from matterhorn.block import setup

        st = setup("minilm", 8)
        qnn, tok, sentences = st.qnn, st.tokenizer, st.sentences[:2]
    else:
        from networks.block import random_block_model

        qnn, tok = random_block_model(hidden=args.hidden, heads=args.heads, ffn=args.ffn,
                                      seq=args.seq)
        sentences = args.sentence or [SENTENCE, "Three words here."]
    lib = liberty.default_liberty()
    out = args.out.resolve()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; {args.model}, "
          f"{len(sentences)} sentences; new: --gate-tiles {args.gate_tiles} --gate-windows "
          f"{args.gate_windows} --gate-heads {args.gate_heads}, Verilator {args.opt}")
    print("\n| design | piece | old s | new s | old/new | old tasks | new tasks | replayed "
          "clocks/s old | new |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for d in designs:
        case = block_case(qnn, tok, sentences, d)
        timed = {}
        for way, kw, opt in (("old", {}, "-O0"),
                             ("new", {"replay_tiles": args.gate_tiles,
                                      "replay_windows": args.gate_windows,
                                      "replay_heads": args.gate_heads}, args.opt)):
            toggles.VERILATOR_OPT = opt
            pr = Pricing.prepare(lib, out / way / d, sim=args.sim, windows=True,
                                 netlist_dir=out / "netlists", **kw)
            timed[way] = _priced_tasks(qnn, case, piece, pr, TILE_NEURONS, amaranth=way == "old")
        toggles.VERILATOR_OPT = "-O0"
        (old, t_old), (new, t_new) = timed["old"], timed["new"]

        def rate(rows):
            r = [x for _, x in rows if x is not None]
            return f"{sum(r) / len(r):,.0f}" if r else "-"

        print(f"| {d} | {piece.name} | {t_old:.0f} | {t_new:.0f} | {t_old / t_new:.1f} | "
              f"{len(old)} | {len(new)} | {rate(old)} | {rate(new)} |")
    if args.errors is not None:
        print("\nheld-out errors of the calibrated pricing (bench_block_calibration):")
        for f in sorted(Path(args.errors).glob("*.json")):
            if f.name.endswith(".dump.json"):
                continue
            doc = json.loads(f.read_text())
            if "compare" in doc:
                b = doc["compare"]["block"]
                print(f"  {f.stem}: block " + ", ".join(
                    f"{k} {100 * b[k]['error']:+.1f} %" for k in TOTALS
                    if b[k]["error"] is not None))
            elif "calibrated" in doc:
                c, r = doc["calibrated"], doc["replayed"]
                print(f"  {f.stem}: " + ", ".join(
                    f"{k} {100 * (c[k] / r[k] - 1):+.1f} %" for k in TOTALS if r[k]))
    return 0


def main(argv=None) -> int:
    from networks.block import RANDOM_DIMS, random_block_model

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--design", action="append", help="default: dense and mttfs-k1")
    ap.add_argument("--sentence", action="append", help=f"default: {SENTENCE!r}")
    for name in ("hidden", "heads", "ffn"):
        ap.add_argument(f"--{name}", type=int, default=RANDOM_DIMS[name])
    ap.add_argument("--seq", type=int, default=12)
    ap.add_argument("--sim", choices=("icarus", "verilator"), default="icarus")
    ap.add_argument("--out", type=Path, default=Path("build/block_gates"))
    ap.add_argument("--validate", action="store_true",
                    help="the attention path node by node against its whole netlist")
    ap.add_argument("--compare", metavar="PIECE", default=None,
                    help="the piece priced the old way and the new way, side by side")
    ap.add_argument("--model", default="random", choices=("random", "minilm"))
    ap.add_argument("--gate-tiles", type=int, default=2)
    ap.add_argument("--gate-windows", type=int, default=8)
    ap.add_argument("--gate-heads", type=int, default=3)
    ap.add_argument("--opt", default="-O0", help="the new way's Verilator C++ optimisation")
    ap.add_argument("--errors", type=Path, default=None,
                    help="bench_block_calibration's output folder: its held-out errors")
    args = ap.parse_args(argv)
    warnings.simplefilter("ignore")
    if args.compare is not None:
        return compare(args)

    import torch

    from matterhorn.block import model_ratios
    from matterhorn.block_gates import measure_block_gates, validate_attention
    from networks.block import block_case
    from regression.block import run_case
    from synth_scripts.gatelevel import liberty

    torch.set_num_threads(1)
    designs = args.design or ["dense", "mttfs-k1"]
    sentences = args.sentence or [SENTENCE]
    qnn, tok = random_block_model(hidden=args.hidden, heads=args.heads, ffn=args.ffn,
                                  seq=args.seq)
    args.out.mkdir(parents=True, exist_ok=True)
    cache: dict = {}
    gates, runs = [], []
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for design in designs:
        t0 = time.perf_counter()
        case = block_case(qnn, tok, sentences, design)
        if args.validate:
            v = validate_attention(qnn, case, lib_path=liberty.default_liberty(),
                                   work=args.out / "work" / design, sim=args.sim, cache=cache)
            (args.out / f"validate-{design}.json").write_text(json.dumps(v, indent=1) + "\n")
            print(f"{design}: the whole attention path {v['whole_pJ']:.1f} pJ "
                  f"({v['whole_cells']} cells), node by node {v['pieces_pJ']:.1f} pJ (nodes "
                  f"{v['nodes_pJ']:.1f} + routers {v['routers_pJ']:.1f}; "
                  f"{v['pieces_cells']} cells): {v['ratio']:.3f}, {v['cycles']} clocks, "
                  f"{time.perf_counter() - t0:.0f} s")
            continue
        g = measure_block_gates(qnn, case, lib_path=liberty.default_liberty(),
                                work=args.out / "work" / design, sim=args.sim, cache=cache)
        wall = time.perf_counter() - t0
        doc = g.to_json()
        (args.out / f"{design}.json").write_text(json.dumps(doc, indent=1) + "\n")
        gates.append(g)
        runs.append(run_case(qnn, case))  # the rates the model is priced at
        pieces = ", ".join(f"{p} {d['seconds']:.0f}" for p, d in doc["detail"].items())
        print(f"\n## {design}: {g.tokens} tokens, {wall:.0f} s ({pieces})\n")
        print(table(doc))
    if args.validate:
        return 0
    if "dense" in designs:
        dense = gates[designs.index("dense")].totals()
        print("\nagainst dense (total, gated total, compute):")
        for g in gates:
            t = g.totals()
            print(f"  {g.design}: {t['total'] / dense['total']:.3f}, "
                  f"{t['gated_total'] / dense['gated_total']:.3f}, "
                  f"{t['compute'] / dense['compute']:.3f}")
    print("\nmodel / gates (paper's unit costs at 22 nm; gates scaled to 22 nm):")
    for design, row in model_ratios(gates, runs).items():
        print(f"  {design}: " + ", ".join(
            f"{k} {v['model_pJ']:.3g}/{v['gates_pJ']:.3g} = {v['ratio']:.3g}"
            for k, v in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
