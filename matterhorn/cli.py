"""The ``matterhorn`` console script: argument parsing only, over the Python API.

Each subcommand lives in ``matterhorn/commands/<name>.py`` and provides

- ``HELP``: one line for the command list,
- ``add_arguments(parser)``: its options,
- ``run(args) -> int``: the call into the API, returning the exit status.

Every subcommand also takes ``-q/--quiet`` (no output but errors), ``-v/--verbose`` (more of
the result) and ``--debug`` (the traceback of any error; or ``MATTERHORN_DEBUG=1``), before
the subcommand (``matterhorn -q demo``) or after it (``matterhorn demo -q``): what the
console shows is :mod:`toolkit_base.console`'s. Help texts end each option with its default in
one style, ``(default: X)`` (:class:`HelpFormatter`).

Errors of the user's making (bad parameters, malformed files, missing tools) are raised by the
toolkit as :class:`ValueError` or :class:`TypeError` (a ``raise`` statement of the toolkit's
own code), :class:`OSError` (a missing file, a path that is not a directory, no permission),
:class:`toolkit_base.toolchain.ToolNotFoundError` or :class:`toolkit_base.toolchain.ToolError`
(a tool that ran and failed) and printed as one line, exit status 2. Any other exception, and a
``ValueError`` or ``TypeError`` raised by Python or a library inside the toolkit, is a bug of
the toolkit: one line ``internal error`` with the hint to run again with ``--debug``, exit
status 70. SIGINT and SIGTERM end the command with one line and status 130 / 143 after its
staging folders are removed (docs/reliability.md). A command whose module cannot be imported is
an error naming it (exit status 70), not a missing command.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
import traceback
from pathlib import Path

from matterhorn import __version__

#: Exit status of an internal error (a bug of the toolkit; sysexits' EX_SOFTWARE).
INTERNAL_ERROR = 70
#: The project's packages: a ``raise`` in their code is a deliberate check.
_PACKAGES = ("toolkit_base", "golden_models", "networks", "rtl_gen", "regression",
             "cocotb_tests", "synth_scripts", "energy_model", "formal", "matterhorn")
_ROOT = Path(__file__).resolve().parent.parent

#: Subcommands in the order ``--help`` lists them.
COMMANDS = ("demo", "generate", "regress", "synth", "energy", "stats", "compare", "flow",
            "prove", "finetune", "layer", "attention", "block", "sram", "qonnx", "network")


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


class HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default in one style, ``(default: X)``: appended from
    the option's default unless the text already says it (a default in words, such as
    ``(default: the recipe's)``); flags and options without a default say nothing."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if ("(default:" in text or action.nargs == 0 or default in (None, [], ())
                or default is argparse.SUPPRESS or action.option_strings == []):
            return text
        if isinstance(default, (list, tuple)):
            value = " ".join(str(v) for v in default)
        else:
            value = str(default)
        return f"{text} (default: {value})"


class CommandImportError(RuntimeError):
    """A command's module failed to import: a broken installation or a bug, never a command
    to leave out."""


def _load(name: str):
    return importlib.import_module(f"matterhorn.commands.{name}")


#: The console options, every subcommand's and the command's own (before the subcommand):
#: ``(flags, name, help)``.
CONSOLE = (
    (("-q", "--quiet"), "quiet", "print nothing but errors: no result lines, no progress"),
    (("-v", "--verbose"), "verbose",
     "print more of the result (the whole report where there is one)"),
    (("--debug",), "debug", "show the traceback of an error (also: MATTERHORN_DEBUG=1)"),
)


def _console_options(parser: argparse.ArgumentParser, prefix: str = "") -> None:
    """The console options on ``parser``; ``prefix`` names their destinations apart (the
    command's own, given before the subcommand: ``matterhorn -q demo``)."""
    group = parser.add_argument_group("console")
    talk = group.add_mutually_exclusive_group()
    for flags, name, text in CONSOLE:
        where = group if name == "debug" else talk
        where.add_argument(*flags, dest=prefix + name, action="store_true", help=text)


def _common() -> argparse.ArgumentParser:
    """The options every subcommand takes."""
    common = argparse.ArgumentParser(add_help=False)
    _console_options(common)
    return common


def build_parser() -> argparse.ArgumentParser:
    """The parser of every command; :class:`CommandImportError` when a command's module cannot
    be imported."""
    parser = Parser(
        prog="matterhorn",
        description="Masked time-to-first-spike (M-TTFS) hardware toolkit: golden model, RTL, "
        "regression, synthesis and energy.",
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"matterhorn {__version__}")
    _console_options(parser, prefix="top_")  # also before the subcommand: matterhorn -q demo
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = _common()
    for name in COMMANDS:
        try:
            module = _load(name)
        except Exception as exc:  # any failure: the command exists and is broken
            raise CommandImportError(
                f"the command {name!r} cannot be loaded: module matterhorn.commands.{name} "
                f"failed to import ({type(exc).__name__}: {' '.join(str(exc).split())})"
            ) from exc
        p = sub.add_parser(name, help=module.HELP, description=module.HELP, parents=[common],
                           formatter_class=HelpFormatter)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def _debug_env() -> bool:
    return os.environ.get("MATTERHORN_DEBUG", "") not in ("", "0")


def raised_by_toolkit(exc: BaseException) -> bool:
    """Whether ``exc`` comes from a ``raise`` statement in the toolkit's own code (a check that
    refused an input), rather than from Python or a library (a bug of the toolkit)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return False
    last = frames[-1]
    try:
        rel = Path(last.filename).resolve().relative_to(_ROOT)
    except ValueError:
        return False
    return rel.parts[0] in _PACKAGES and (last.line or "").lstrip().startswith("raise")


def _set_console(args: argparse.Namespace) -> bool:
    """Set the console's level from the options; returns whether tracebacks are shown."""
    from toolkit_base import console

    for name in ("quiet", "verbose", "debug"):  # given before the subcommand or after it
        setattr(args, name, bool(getattr(args, name, False) or getattr(args, f"top_{name}", False)))
    if args.quiet and args.verbose:
        raise ValueError("-q/--quiet and -v/--verbose cannot be given together")
    debug = bool(getattr(args, "debug", False)) or _debug_env()
    if debug:
        console.set_level(console.DEBUG)
    elif getattr(args, "quiet", False):
        console.set_level(console.QUIET)
    elif getattr(args, "verbose", False):
        console.set_level(console.VERBOSE)
    else:
        console.set_level(console.NORMAL)
    return debug


def main(argv: list[str] | None = None) -> int:
    from toolkit_base.signals import Terminated, terminate_as_interrupt
    from toolkit_base.toolchain import ToolError, ToolNotFoundError

    _quiet_toolkit_warnings()
    try:
        parser = build_parser()
    except CommandImportError as exc:
        if _debug_env():
            traceback.print_exception(exc.__cause__ or exc, file=sys.stderr)
        print(f"matterhorn: internal error: {exc}; reinstall the toolkit (pip install -e .) or "
              "run with MATTERHORN_DEBUG=1 for the traceback", file=sys.stderr)
        return INTERNAL_ERROR
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # a bad option (one line printed), --help, --version
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 2
    try:
        debug = _set_console(args)
    except ValueError as exc:
        print(f"matterhorn {args.command}: error: {exc}", file=sys.stderr)
        return 2
    try:
        with terminate_as_interrupt():  # SIGTERM unwinds like Ctrl-C: staging folders go
            return int(args._run(args) or 0)
    except KeyboardInterrupt as exc:
        signo = 15 if isinstance(exc, Terminated) else 2
        _quiet_after_interrupt()
        print(f"matterhorn {args.command}: interrupted; the run is incomplete", file=sys.stderr)
        return 128 + signo
    except Exception as exc:  # noqa: BLE001 - every error ends in one line (or a traceback)
        if debug:
            traceback.print_exception(exc, file=sys.stderr)
        user = isinstance(exc, (OSError, ToolNotFoundError, ToolError)) or (
            isinstance(exc, (ValueError, TypeError)) and raised_by_toolkit(exc))
        if user:
            print(f"matterhorn {args.command}: error: {exc}", file=sys.stderr)
            return 2
        message = " ".join(f"{type(exc).__name__}: {exc}".split())
        hint = "" if debug else "; run again with --debug for the traceback, and report it"
        print(f"matterhorn {args.command}: internal error (a bug of the toolkit): "
              f"{message}{hint}", file=sys.stderr)
        return INTERNAL_ERROR


def _quiet_toolkit_warnings() -> None:
    """No ``UnusedElaboratable`` warning for the toolkit's own Amaranth objects (components
    built for their description and never elaborated): they say nothing to a user. Amaranth
    issues the warning at the file where the object was made, which is the filter's module."""
    import warnings

    own = "|".join(_PACKAGES)
    warnings.filterwarnings("ignore", message=r".* created but never used",
                            module=rf".*[/\\]({own})[/\\]")


def _quiet_after_interrupt() -> None:
    """The interrupted line is the last: Amaranth components that an interrupted elaboration
    never used are collected after it, each with an ``UnusedElaboratable`` warning."""
    import warnings

    if "amaranth" in sys.modules:
        from amaranth.hdl import UnusedElaboratable

        warnings.filterwarnings("ignore", category=UnusedElaboratable)


if __name__ == "__main__":
    sys.exit(main())
