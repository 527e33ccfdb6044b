"""``matterhorn flow``: generate, regress, measure, synthesize and estimate energy in one go."""

from __future__ import annotations

import argparse

HELP = "the whole flow (generate, regress, stats, synth, energy) into one report folder"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from matterhorn.flow import SIMULATORS, STAGES

    parser.add_argument(
        "--T", type=int, default=16, help="time steps, a power of two in 2..64 (default 16)"
    )
    parser.add_argument("--k", type=int, default=1, help="dead-zone radius 0..T-1 (default 1)")
    parser.add_argument(
        "--out", default="build/flow", metavar="DIR", help="report folder (default build/flow)"
    )
    parser.add_argument(
        "--sim",
        action="append",
        choices=SIMULATORS,
        help="simulator of the regression stage; repeat for both (default icarus)",
    )
    parser.add_argument("--seed", type=int, default=1, help="seed of every stimulus (default 1)")
    parser.add_argument(
        "--liberty", metavar="FILE", help="liberty (.lib or .lib.gz) for area and energy"
    )
    parser.add_argument(
        "--clock-ns", type=float, default=10.0, help="clock period of the power analysis"
    )
    parser.add_argument(
        "--rates-file",
        metavar="F",
        help="statistics JSON (e.g. from matterhorn stats) for the measured-energy stage",
    )
    parser.add_argument(
        "--skip", action="append", choices=STAGES, default=[], help="skip a stage (repeatable)"
    )


#: The stages' folders inside ``--out`` (matterhorn.flow.run_flow; docs/reliability.md).
STAGE_DIRS = ("rtl", "regress", "stats", "synth", "energy", "energy_paper", "energy_measured",
              "compare")


def run(args: argparse.Namespace) -> int:
    from matterhorn.flow import FlowConfig, run_flow
    from toolkit_base.checks import check_out_writable

    cfg = FlowConfig(
        T=args.T,
        k=args.k,
        out_dir=args.out,
        sims=tuple(args.sim or ("icarus",)),
        seed=args.seed,
        liberty=args.liberty,
        clock_ns=args.clock_ns,
        rates_file=args.rates_file,
        skip=tuple(args.skip),
    )
    # what the stages would find wrong only after the ones before them ran (minutes)
    check_out_writable(cfg.out_dir, subdirs=STAGE_DIRS)
    if cfg.liberty is not None and not ("synth" in cfg.skip and "compare" in cfg.skip):
        from matterhorn.commands import check_liberty

        check_liberty(cfg.liberty)
    if cfg.rates_file is not None and "energy" not in cfg.skip:
        import energy_model as em

        em.load_stats(cfg.rates_file)
    result = run_flow(cfg)
    summary = cfg.out_dir / "summary.md"
    print(summary.read_text())
    return 0 if result.ok else 1
