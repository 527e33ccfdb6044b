"""The ``matterhorn`` console script: argument parsing only, over the Python API.

Each subcommand lives in ``matterhorn/commands/<name>.py`` and provides

- ``HELP``: one line for the command list,
- ``add_arguments(parser)``: its options,
- ``run(args) -> int``: the call into the API, returning the exit status.

Errors of the user's making (bad parameters, malformed files, missing tools) are raised as
:class:`ValueError`, :class:`TypeError`, :class:`OSError` (a missing file, a path that is not a
directory, no permission),
:class:`toolkit_base.toolchain.ToolNotFoundError` or :class:`toolkit_base.toolchain.ToolError` (a
tool that ran and failed) and printed as one line, exit status 2. SIGINT and SIGTERM end the
command with one line and status 130 / 143 after its staging folders are removed
(docs/reliability.md).
"""

from __future__ import annotations

import argparse
import importlib
import sys

from matterhorn import __version__

#: Subcommands in the order ``--help`` lists them.
COMMANDS = ("demo", "generate", "regress", "synth", "energy", "stats", "compare", "flow",
            "prove", "finetune", "layer")


def _load(name: str):
    return importlib.import_module(f"matterhorn.commands.{name}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="matterhorn",
        description="Masked time-to-first-spike (M-TTFS) hardware toolkit: golden model, RTL, "
        "regression, synthesis and energy.",
    )
    parser.add_argument("--version", action="version", version=f"matterhorn {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMANDS:
        try:
            module = _load(name)
        except ModuleNotFoundError as exc:
            if exc.name != f"matterhorn.commands.{name}":
                raise
            continue  # not built yet
        p = sub.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    from toolkit_base.signals import Terminated, terminate_as_interrupt
    from toolkit_base.toolchain import ToolError, ToolNotFoundError

    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with terminate_as_interrupt():  # SIGTERM unwinds like Ctrl-C: staging folders go
            return int(args._run(args) or 0)
    except (ValueError, TypeError, OSError, ToolNotFoundError, ToolError) as exc:
        print(f"matterhorn {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        signo = 15 if isinstance(exc, Terminated) else 2
        print(f"matterhorn {args.command}: interrupted; the run is incomplete", file=sys.stderr)
        return 128 + signo


if __name__ == "__main__":
    sys.exit(main())
