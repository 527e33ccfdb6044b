"""``matterhorn demo``: a random QNN layer, TTFS vs M-TTFS spike counts, exactness checks."""

from __future__ import annotations

import argparse

HELP = "golden-model demo: random QNN layer, TTFS vs M-TTFS spike counts, exact equality"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--T", type=int, default=16, help="time steps / levels, 2**n")
    parser.add_argument("--k", type=int, default=1,
                        help="largest dead-zone radius shown; rows for k = 0..K")
    parser.add_argument("--seed", type=int, default=0, help="random seed, 0..2**31-1")
    parser.add_argument("--n-in", type=int, default=64, help="layer inputs, 1..4096")
    parser.add_argument("--n-out", type=int, default=32,
                        help="layer outputs, 1..4096")
    parser.add_argument("--batch", type=int, default=256,
                        help="input vectors, 1..4096")


def run(args: argparse.Namespace) -> int:
    from golden_models.demo import run_demo
    from toolkit_base import console

    result = run_demo(T=args.T, k=args.k, seed=args.seed, n_in=args.n_in, n_out=args.n_out,
                      batch=args.batch)
    console.out(result.report())
    return 0 if result.exact else 1
