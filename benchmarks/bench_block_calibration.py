"""The validation of the block's calibrated pricing: a sentence outside the sample priced both
ways, calibrated and replayed in full, per piece and per component; the wall time of each.

``matterhorn block --gates`` replays ``--gate-sentences`` sentences window by window and prices
every other one by the fits to the windows' counters (:mod:`synth_scripts.block_calibration`).
This bench takes the run's sentences (:func:`matterhorn.block.setup`: the evaluation split,
lengths spread), prices the ``--sample`` sentences window by window
(:func:`matterhorn.block_gates.measure_block_gates` with ``windows=True``), calibrates the
``--held-out`` sentence from them (:func:`matterhorn.block_gates.activity`,
:func:`synth_scripts.block_calibration.calibrate`), prices it in full, and prints the error of
each piece's total and of the block's components (calibrated / replayed - 1); writes
``DIR/<design>.json``. ``--measured FILE`` takes a held-out pricing dumped earlier
(``BlockGates.dump``) instead of replaying it again. ``--gate-tiles N``, ``--gate-heads N`` and
``--gate-windows N`` replay only that many tiles of each linear piece, heads of the attention
path, and windows (rows) of each tile (add+LayerNorm unit) in the sample (``matterhorn block``'s
options of the same names); ``--tile-neurons N`` cuts the layers into tiles of N neurons (more
tiles a layer on the small block). ``--piece P`` prices only that piece (e.g. ``attention`` on
MiniLM, where the whole block would take an hour),
sample and held-out sentence alike (both window by window, kept as
``DIR/<design>-<piece>-sample.dump.json`` and ``-held-out.dump.json`` and read back by a later
run, so the fits can be studied again in seconds), and prints its components.

    python benchmarks/bench_block_calibration.py [--model random|minilm] [--sentences 8]
        [--sample 0 ...] [--held-out 1] [--design dense --design mttfs-k1 ...]
        [--sim icarus|verilator] [--netlists DIR] [--measured DESIGN=FILE ...] [--out DIR]
        [--gate-tiles N] [--gate-heads N] [--tile-neurons N] [--piece P]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from golden_models.block_pieces import PIECE_NAMES, TILE_NEURONS  # noqa: E402
from synth_scripts.block_gates import COMPONENTS, TOTALS  # noqa: E402


def _pct(e) -> str:
    return "" if e is None else f"{100 * e:+.1f} %"


def piece_only(args) -> int:
    """One piece of each design: its sample priced window by window, the held-out sentence
    calibrated from it and replayed in full; per component, both and the error."""
    import torch

    from golden_models.block_pieces import PIECES
    from matterhorn.block import setup
    from matterhorn.block_gates import JOBS, activity, measure_path, run_task
    from networks.block import block_case
    from synth_scripts.block_calibration import CALIBRATORS
    from synth_scripts.block_pricing import Pricing
    from synth_scripts.gatelevel.liberty import default_liberty

    torch.set_num_threads(1)
    piece = next(p for p in PIECES if p.name == args.piece)
    designs = args.design or ["dense", "mttfs-k1"]
    sample_ix = args.sample or [0]
    tn = args.tile_neurons or TILE_NEURONS
    st = setup(args.model, args.sentences)
    netlists = args.netlists or args.out / "netlists"
    args.out.mkdir(parents=True, exist_ok=True)
    cache: dict = {}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")

    def priced(case, work, sampled):
        # the held-out sentence is replayed in full, window by window too: its windows'
        # figures are kept in its dump beside the sample's, to study the fits on them
        pr = Pricing.prepare(default_liberty(), work, sim=args.sim, cache=cache,
                             netlist_dir=netlists, windows=True,
                             replay_tiles=args.gate_tiles if sampled else 0,
                             replay_heads=args.gate_heads if sampled else 0,
                             replay_windows=args.gate_windows if sampled else 0)
        tasks, assemble = JOBS[piece.kind](st.qnn, case, piece, pr, tn)
        return assemble([run_task(t)[0] for t in tasks]), pr

    def kept(dump: Path, case, work, sampled):
        """The piece priced on ``case``, or read from ``dump`` where an earlier run left it."""
        from synth_scripts.block_gates import PieceGates

        if dump.exists():
            got = PieceGates(**json.loads(dump.read_text()))
            return got, Pricing.prepare(default_liberty(), work, sim=args.sim, cache=cache,
                                        netlist_dir=netlists), None
        t0 = time.perf_counter()
        got, pr = priced(case, work, sampled)
        dump.write_text(json.dumps(dataclasses.asdict(got)) + "\n")
        return got, pr, time.perf_counter() - t0

    for d in designs:
        case = block_case(st.qnn, st.tokenizer, st.sentences, d)
        sample = dataclasses.replace(case, sequences=tuple(case.sequences[i] for i in sample_ix))
        held = dataclasses.replace(case, sequences=(case.sequences[args.held_out],))
        got, pr, t_sample = kept(args.out / f"{d}-{piece.name}-sample.dump.json", sample,
                                 args.out / d, True)
        full, _, t_full = kept(args.out / f"{d}-{piece.name}-held-out.dump.json", held,
                               args.out / f"{d}-held-out", False)
        path = measure_path(st.qnn, held, root=netlists / "fast", sim=args.sim)
        act = activity(st.qnn, held, tile_neurons=tn, path=path)[piece.name]
        # the input flits' hops (a piece's hops hold the attention path's inner ones too)
        cal, fits = CALIBRATORS[piece.kind](piece, got, act, float(full.hops) - act.inner_hops,
                                            pr.sram, st.qnn.cfg.num_attention_heads, d)
        print(f"\n## {d}, {piece.name}: sample {sample_ix} ({sample.tokens} tokens, "
              + ("priced earlier" if t_sample is None else f"{t_sample:.0f} s")
              + f"), held-out sentence {args.held_out} ({held.tokens} tokens, "
              + ("replayed earlier" if t_full is None else f"replayed in {t_full:.0f} s")
              + ")\n")
        print("| pJ per token | " + " | ".join(TOTALS) + " |")
        print("|" + " --- |" * (len(TOTALS) + 1))
        rows = {"calibrated": cal.energy_pJ, "replayed": full.energy_pJ}
        for what, e in rows.items():
            print(f"| {what} | " + " | ".join(f"{e[k] / held.tokens:,.0f}" for k in TOTALS)
                  + " |")
        print("| error | " + " | ".join(
            _pct(cal.energy_pJ[k] / full.energy_pJ[k] - 1 if full.energy_pJ[k] else None)
            for k in TOTALS) + " |")
        parts = sorted(set(cal.parts) & set(full.parts))
        print("\nparts (pJ per token, calibrated / replayed): " + ", ".join(
            f"{k} {cal.parts[k] / held.tokens:,.0f} / {full.parts[k] / held.tokens:,.0f}"
            f" ({_pct(cal.parts[k] / full.parts[k] - 1 if full.parts[k] else None)})"
            for k in parts))
        (args.out / f"{d}-{piece.name}.json").write_text(json.dumps(
            {"calibrated": cal.energy_pJ, "replayed": full.energy_pJ, "parts": {
                "calibrated": cal.parts, "replayed": full.parts}, "fits": fits,
             "tokens": held.tokens, "seconds": {"sample": t_sample and round(t_sample, 1),
                                                 "held_out": t_full}}, indent=1) + "\n")
    return 0


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="random")
    ap.add_argument("--sentences", type=int, default=8)
    ap.add_argument("--sample", type=int, action="append", help="default: 0 (the shortest)")
    ap.add_argument("--held-out", type=int, default=1)
    ap.add_argument("--design", action="append", help="default: dense and mttfs-k1")
    ap.add_argument("--sim", choices=("icarus", "verilator"), default="verilator")
    ap.add_argument("--netlists", type=Path, default=None,
                    help="the netlists' folder (default: OUT/netlists)")
    ap.add_argument("--measured", action="append", default=[], metavar="DESIGN=FILE",
                    help="the held-out sentence of DESIGN priced in full earlier "
                    "(BlockGates.dump JSON)")
    ap.add_argument("--out", type=Path, default=Path("build/block_calibration"))
    ap.add_argument("--gate-tiles", type=int, default=0)
    ap.add_argument("--gate-heads", type=int, default=0)
    ap.add_argument("--gate-windows", type=int, default=0)
    ap.add_argument("--tile-neurons", type=int, default=None)
    ap.add_argument("--piece", default=None, help="price this piece only")
    return ap


def main(argv=None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    if args.piece is not None:
        return piece_only(args)

    import torch

    from matterhorn.block import setup
    from matterhorn.block_gates import activity, measure_block_gates, measure_path
    from networks.block import block_case
    from synth_scripts.block_calibration import calibrate, compare
    from synth_scripts.block_gates import BlockGates
    from synth_scripts.gatelevel.liberty import default_liberty

    torch.set_num_threads(1)
    designs = args.design or ["dense", "mttfs-k1"]
    sample_ix = args.sample or [0]
    if args.held_out in sample_ix:
        ap.error(f"--held-out {args.held_out} is in the sample {sample_ix}")
    measured_files = dict(m.split("=", 1) for m in args.measured)
    st = setup(args.model, args.sentences)
    if max(*sample_ix, args.held_out) >= len(st.sentences):
        ap.error(f"the run has {len(st.sentences)} sentences (0..{len(st.sentences) - 1})")
    lib = default_liberty()
    netlists = args.netlists or args.out / "netlists"
    args.out.mkdir(parents=True, exist_ok=True)
    cache: dict = {}
    tn = args.tile_neurons or TILE_NEURONS
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    for d in designs:
        case = block_case(st.qnn, st.tokenizer, st.sentences, d)
        sample = dataclasses.replace(case, sequences=tuple(case.sequences[i] for i in sample_ix))
        held = dataclasses.replace(case, sequences=(case.sequences[args.held_out],))
        t0 = time.perf_counter()
        priced = measure_block_gates(st.qnn, sample, lib_path=lib, work=args.out / d,
                                     sim=args.sim, cache=cache, netlist_dir=netlists,
                                     windows=True, tile_neurons=tn,
                                     replay_tiles=args.gate_tiles, replay_heads=args.gate_heads,
                                     replay_windows=args.gate_windows)
        t_sample = time.perf_counter() - t0
        t0 = time.perf_counter()
        if d in measured_files:
            full = BlockGates.load(json.loads(Path(measured_files[d]).read_text()))
        else:
            full = measure_block_gates(st.qnn, held, lib_path=lib,
                                       work=args.out / f"{d}-held-out", sim=args.sim,
                                       cache=cache, netlist_dir=netlists, tile_neurons=tn)
        t_full = time.perf_counter() - t0
        t0 = time.perf_counter()
        path = measure_path(st.qnn, held, root=netlists / "fast", sim=args.sim)
        act = activity(st.qnn, held, tile_neurons=tn, path=path)
        cal = calibrate(priced, act, tokens=full.tokens, sentences=1)
        if d not in measured_files:
            (args.out / f"{d}-held-out.dump.json").write_text(json.dumps(full.dump()) + "\n")
        t_cal = time.perf_counter() - t0
        c = compare(cal, full)
        print(f"\n## {d}: sample {sample_ix} ({priced.tokens} tokens, {t_sample:.0f} s "
              f"replayed window by window), held-out sentence {args.held_out} "
              f"({full.tokens} tokens): calibrated in {t_cal:.1f} s, "
              + ("replayed earlier" if d in measured_files else f"replayed in {t_full:.0f} s"))
        print("\n| piece | calibrated pJ/token | replayed pJ/token | error |")
        print("| --- | ---: | ---: | ---: |")
        for p in PIECE_NAMES:
            r = c["pieces"][p]["total"]
            print(f"| {p} | {r['calibrated']:,.0f} | {r['measured']:,.0f} | {_pct(r['error'])} |")
        print("\n| block | " + " | ".join((*COMPONENTS, "total", "gated_total")) + " |")
        print("|" + " --- |" * (len(COMPONENTS) + 3))
        for what in ("calibrated", "measured"):
            print(f"| {what} | " + " | ".join(f"{c['block'][k][what]:,.0f}"
                                              for k in (*COMPONENTS, "total", "gated_total"))
                  + " |")
        print("| error | " + " | ".join(_pct(c["block"][k]["error"])
                                       for k in (*COMPONENTS, "total", "gated_total")) + " |")
        (args.out / f"{d}.json").write_text(json.dumps(
            {"compare": c, "fits": cal.method["fits"], "seconds": {
                "sample": round(t_sample, 1), "held_out": round(t_full, 1),
                "calibration": round(t_cal, 1)}}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
