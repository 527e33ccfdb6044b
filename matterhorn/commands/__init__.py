"""One module per ``matterhorn`` subcommand (see :mod:`matterhorn.cli`), and the argument
types they share."""

from __future__ import annotations

import argparse
import re


def mesh_arg(text: str) -> tuple[int, int]:
    """``--mesh``/``--system`` value ``RxC`` as ``(rows, cols)`` (their range is checked by
    :class:`rtl_gen.params.RTLConfig`)."""
    match = re.fullmatch(r"(\d+)x(\d+)", text)
    if not match:
        raise argparse.ArgumentTypeError(f"must be ROWSxCOLS such as 2x2, not {text!r}")
    return int(match.group(1)), int(match.group(2))


def add_design_arguments(parser) -> None:
    """``--design dense|ttfs|mttfs`` and ``--k``, repeatable, of the commands that compare the
    designs (block, network; checked by ``matterhorn.block.check_designs``)."""
    parser.add_argument("--design", action="append", choices=("dense", "ttfs", "mttfs"),
                        help="design, repeatable (default: all three)")
    parser.add_argument("--k", type=int, action="append",
                        help="M-TTFS dead-zone radius 0..2, repeatable (default: 0, 1 and 2)")


def check_liberty(path) -> str:
    """Return ``path`` if it is a liberty the synthesis can use, else raise (one line naming
    it): read and checked as ``synth_scripts.gatelevel.liberty.prepare`` reads it, into a temporary
    folder outside ``--out``, so a command that synthesizes late (``flow``, ``compare``)
    refuses a bad one before any work."""
    import tempfile
    from pathlib import Path

    from synth_scripts.gatelevel import liberty
    from toolkit_base.checks import check_file

    check_file(path, "liberty file")
    with tempfile.TemporaryDirectory(prefix="matterhorn-liberty-") as tmp:
        liberty.prepare(Path(path), Path(tmp))
    return path
