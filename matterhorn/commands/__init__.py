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
        raise argparse.ArgumentTypeError(f"mesh must be ROWSxCOLS such as 2x2, not {text!r}")
    return int(match.group(1)), int(match.group(2))
