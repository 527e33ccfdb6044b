"""``matterhorn prove``: formal proofs of the hardware's invariants, and their mutants."""

from __future__ import annotations

import argparse

HELP = "prove the RTL's invariants with SymbiYosys (each with a planted bug it must catch)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--out", default="build/prove", metavar="DIR",
                        help="output folder: prove_summary.json, summary.md and the "
                        "SymbiYosys work folders under jobs/")
    parser.add_argument("--only", nargs="+", metavar="NAME", default=None,
                        help="check only these properties (names as in docs/formal.md)")
    parser.add_argument("--list", action="store_true",
                        help="list the properties and their mutants, check nothing")


def run(args: argparse.Namespace) -> int:
    from formal.properties import select
    from toolkit_base import console

    if args.list:
        for prop in select(args.only):
            console.out(f"{prop.name}: {prop.target}, {prop.mode} depth {prop.depth}: "
                        f"{prop.statement}")
            for mutant in prop.mutants:
                console.out(f"    mutant {mutant.name}: {mutant.what}")
        return 0
    from formal.prove import JOBS, SUMMARY, SUMMARY_MD, prove
    from toolkit_base.checks import check_out_writable

    select(args.only)  # every name, before anything is written
    check_out_writable(args.out, subdirs=(JOBS,))
    doc = prove(args.out, args.only)
    t = doc["totals"]
    console.out(f"{t['proven']} of {t['properties']} properties hold, {t['mutants_caught']} of "
                f"{t['mutants']} mutants caught, {t['seconds']:.1f} s")
    console.out(f"summary: {args.out}/{SUMMARY}, {args.out}/{SUMMARY_MD}")
    return 0 if doc["passed"] else 1
