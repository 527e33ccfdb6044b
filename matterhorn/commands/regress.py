"""``matterhorn regress``: cocotb regression of the generated Verilog against the golden QNN."""

from __future__ import annotations

import argparse
import json

HELP = "cocotb regression of the generated Verilog against the golden model (Icarus/Verilator)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from toolkit_base.cluster import MAX_WORKERS

    parser.add_argument(
        "--T",
        type=int,
        nargs="+",
        default=[16],
        help="time steps, powers of two in 2..64 (one or more)",
    )
    parser.add_argument(
        "--k", type=int, nargs="+", default=[1], help="dead-zone radius (one or more)"
    )
    parser.add_argument(
        "--sim",
        choices=("icarus", "verilator"),
        action="append",
        help="simulator; repeat for both (default: icarus)",
    )
    parser.add_argument(
        "-j", "--jobs", "--workers", dest="jobs", type=int, default=1, metavar="N",
        help=f"jobs run at a time, 1..{MAX_WORKERS}: 1 in this process, more on a local Dask "
        "cluster of N worker processes",
    )
    parser.add_argument(
        "--scheduler", default=None, metavar="tcp://HOST:PORT",
        help="run the jobs on the workers of an existing Dask cluster (docs/cluster.md)",
    )
    parser.add_argument("--seed", type=int, default=0, help="stimulus seed, 0..2**31-1")
    parser.add_argument("--waves", action="store_true", help="dump waveforms (slow, large)")
    parser.add_argument(
        "--bench",
        # regression.benches.ALL_BENCHES, written out: importing the regression here would slow
        # every command down (tests/test_registry.py checks the two agree)
        choices=("encoder", "sram", "tile", "dense_tile", "router", "system", "attn_softmax",
                 "attention", "softmax", "add_norm", "axi_tile", "axi_system", "tile-fast",
                 "system-fast"),
        action="append",
        help="run only these benches; repeatable; softmax and add_norm run the non-linear units "
        "(docs/rtl_units.md); attention and attn_softmax run the attention path and its softmax "
        "node (docs/rtl_attention.md); axi_tile and axi_system run the AXI wrappers "
        "(docs/rtl_axi.md); tile-fast and system-fast run the tile's and the system's vectors "
        "in the fast harness (docs/regress.md, \"Fast mode\") (default: all per-beat benches)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="short run: one parameter set per T, fewer vectors"
    )
    parser.add_argument(
        "--out",
        default="build/regress",
        metavar="DIR",
        help="folder of builds, runs and regress_summary.json",
    )
    parser.add_argument("--json", action="store_true", help="print the summary JSON, no table")


def run(args: argparse.Namespace) -> int:
    from regression import BENCHES, format_table, run_regression
    from regression.summary import job_line
    from toolkit_base import console

    summary = run_regression(
        T=args.T,
        k=args.k,
        sims=tuple(args.sim or ("icarus",)),
        workers=args.jobs,
        seed=args.seed,
        waves=args.waves,
        out_dir=args.out,
        benches=tuple(args.bench or BENCHES),
        quick=args.quick,
        progress=job_line,
        scheduler=args.scheduler,
    )
    if args.json:
        console.out(json.dumps(summary, indent=1, sort_keys=True))
    else:
        console.out(format_table(summary))
        console.out(f"summary: {args.out}/regress_summary.json")
    return 0 if summary["status"] == "passed" else 1
