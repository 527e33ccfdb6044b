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
import re
import sys

from matterhorn import __version__

#: Subcommands in the order ``--help`` lists them.
COMMANDS = ("demo", "generate", "regress", "synth", "energy", "stats", "compare", "flow",
            "prove", "finetune", "layer", "attention")


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, not {text!r}") from None


def _number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number, not {text!r}") from None


_ARGUMENT = re.compile(r"argument (?P<option>\S+): (?P<what>.*)", re.DOTALL)
#: argparse's own wording -> ours, after the option's name.
_WORDING = {"expected one argument": "needs a value",
            "expected at least one argument": "needs at least one value"}


def one_line(message: str) -> str:
    """An argparse error as the toolkit's one line: ``--windows must be an integer, not '1.5'``
    rather than ``argument --windows: invalid int value: '1.5'``."""
    text = " ".join(str(message).split())
    m = _ARGUMENT.fullmatch(text)
    if m is None:
        return text
    option, what = m["option"], _WORDING.get(m["what"], m["what"])
    return f"{option} {what}" if what.startswith(("must", "needs")) else f"{option}: {what}"


class Parser(argparse.ArgumentParser):
    """argparse with the toolkit's errors: one line ``matterhorn COMMAND: error: MESSAGE``
    naming the option and the value, exit status 2, no usage block (docs/reliability.md).
    ``type=int`` and ``type=float`` options say what they need in the same words."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register("type", int, _integer)
        self.register("type", float, _number)

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {one_line(message)}\n")


def _load(name: str):
    return importlib.import_module(f"matterhorn.commands.{name}")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
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
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a bad option (one line printed), --help, --version
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 2
    try:
        with terminate_as_interrupt():  # SIGTERM unwinds like Ctrl-C: staging folders go
            return int(args._run(args) or 0)
    except (ValueError, TypeError, OSError, ToolNotFoundError, ToolError) as exc:
        print(f"matterhorn {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        signo = 15 if isinstance(exc, Terminated) else 2
        _quiet_after_interrupt()
        print(f"matterhorn {args.command}: interrupted; the run is incomplete", file=sys.stderr)
        return 128 + signo


def _quiet_after_interrupt() -> None:
    """The interrupted line is the last: Amaranth components that an interrupted elaboration
    never used are collected after it, each with an ``UnusedElaboratable`` warning."""
    import warnings

    if "amaranth" in sys.modules:
        from amaranth.hdl import UnusedElaboratable

        warnings.filterwarnings("ignore", category=UnusedElaboratable)


if __name__ == "__main__":
    sys.exit(main())
