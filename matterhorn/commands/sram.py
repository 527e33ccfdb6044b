"""``matterhorn sram``: SRAM macros from OpenRAM, their energy per access measured with ngspice."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = ("SRAM macros (OpenRAM, FreePDK45): measure read, write, deselected and leakage energy "
        "with ngspice into a macro table, or show the shipped one")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from synth_scripts.sram.macros import MACRO_SHAPES

    parser.add_argument("--shapes", nargs="+", metavar="WORDSxBITS",
                        default=[s.name for s in MACRO_SHAPES],
                        help="macro shapes to compile and measure, one ngspice at a time")
    parser.add_argument("--out", type=Path, default=Path("build/sram"), metavar="DIR",
                        help="output folder: the macro table freepdk45_macros.json (extended "
                        "when it is there) and, in work/, OpenRAM's output, the netlists, "
                        "testbenches and ngspice logs")
    parser.add_argument("--period", type=float, default=4.0, metavar="NS",
                        help="clock period of the testbench")
    parser.add_argument("--vdd", type=float, default=1.0, metavar="V", help="supply")
    parser.add_argument("--temp", type=float, default=25.0, metavar="C", help="temperature")
    parser.add_argument("--full", action="store_true",
                        help="simulate the whole netlist, not the trimmed one (slower: for "
                        "validating the trimming)")
    parser.add_argument("--show", action="store_true",
                        help="measure nothing: print the shipped table, its cross-check against "
                        "the per-bit figure, and MiniLM's block memories banked into macros")


def _positive(name: str, value: float) -> float:
    if not value > 0:
        raise ValueError(f"--{name} must be positive, not {value!r}")
    return value


def run(args: argparse.Namespace) -> int:
    from synth_scripts.sram import macros, report
    from synth_scripts.sram.spice import Bench
    from synth_scripts.sram.table import TABLE, load
    from toolkit_base import console
    from toolkit_base.checks import check_out_writable, unique

    if args.show:
        for line in report.show():
            console.out(line)
        return 0
    shapes = [macros.Shape.parse(s) for s in unique(args.shapes)]
    bench = Bench(vdd=_positive("vdd", args.vdd), temp=args.temp,
                  period_ns=_positive("period", args.period))
    report.require_tools()  # both tools, before any work
    out = Path(check_out_writable(args.out, subdirs=("work",)))
    table = out / TABLE.name
    if table.exists():
        load(table)  # a malformed table is refused before the first simulation
    with console.steps("characterizing", total=len(shapes)) as steps:
        def done(m) -> None:
            steps.advance(report.measured_line(m))

        report.regenerate(shapes, table, out / "work", bench=bench, trimmed=not args.full,
                          on_shape=done)
    for line in report.against_shipped(shapes, table, bench.corner_name):
        console.out(line)
    console.out(f"wrote {table}")
    return 0
