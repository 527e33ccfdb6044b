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
(``BlockGates.dump``) instead of replaying it again.

    python benchmarks/bench_block_calibration.py [--model random|minilm] [--sentences 8]
        [--sample 0 ...] [--held-out 1] [--design dense --design mttfs-k1 ...]
        [--sim icarus|verilator] [--netlists DIR] [--measured DESIGN=FILE ...] [--out DIR]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from golden_models.block_pieces import PIECE_NAMES  # noqa: E402
from synth_scripts.block_gates import COMPONENTS  # noqa: E402


def _pct(e) -> str:
    return "" if e is None else f"{100 * e:+.1f} %"


def main(argv=None) -> int:
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
    args = ap.parse_args(argv)

    import torch

    from matterhorn.block import setup
    from matterhorn.block_gates import activity, measure_block_gates
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
    for d in designs:
        case = block_case(st.qnn, st.tokenizer, st.sentences, d)
        sample = dataclasses.replace(case, sequences=tuple(case.sequences[i] for i in sample_ix))
        held = dataclasses.replace(case, sequences=(case.sequences[args.held_out],))
        t0 = time.perf_counter()
        priced = measure_block_gates(st.qnn, sample, lib_path=lib, work=args.out / d,
                                     sim=args.sim, cache=cache, netlist_dir=netlists,
                                     windows=True)
        t_sample = time.perf_counter() - t0
        t0 = time.perf_counter()
        if d in measured_files:
            full = BlockGates.load(json.loads(Path(measured_files[d]).read_text()))
        else:
            full = measure_block_gates(st.qnn, held, lib_path=lib,
                                       work=args.out / f"{d}-held-out", sim=args.sim,
                                       cache=cache, netlist_dir=netlists)
        t_full = time.perf_counter() - t0
        t0 = time.perf_counter()
        act = activity(st.qnn, held)
        cal = calibrate(priced, act, tokens=full.tokens, sentences=1)
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
