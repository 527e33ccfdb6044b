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


#: The pricing's sampling options (``--gate-tiles``, ``--gate-heads``, ``--gate-windows``) as
#: :class:`matterhorn.block.GatesSetup` takes them, with their ranges.
GATE_SAMPLING = (("tiles", 4096), ("heads", 4096), ("windows", 1 << 20))


def add_gate_sampling_arguments(parser) -> None:
    """``--gate-tiles``, ``--gate-heads`` and ``--gate-windows`` of the commands that price a
    block's sample in gates (block, network; checked by :func:`gate_sampling`)."""
    parser.add_argument("--gate-tiles", type=int, default=None, metavar="N",
                        help="with --gates: N tiles of each linear piece replayed in the "
                        "sample, spread over the layer, the others priced by their fits "
                        "(docs/block_gates.md); 0: every tile (default: 0)")
    parser.add_argument("--gate-heads", type=int, default=None, metavar="N",
                        help="with --gates: N heads of the attention path replayed in the "
                        "sample, spread over the heads, the others priced by their fits; 0: "
                        "every head (default: 0)")
    parser.add_argument("--gate-windows", type=int, default=None, metavar="N",
                        help="with --gates: N windows (tokens) of each replayed tile and rows "
                        "of each add+LayerNorm unit replayed in the sample, spread over its "
                        "tokens; 0: every one (default: 0)")


def gate_sampling(args, gates: bool) -> dict:
    """The sampling options of :func:`add_gate_sampling_arguments`, checked: ``{"tiles",
    "heads", "windows"}`` (0 where not given); one given without ``--gates`` is refused."""
    from toolkit_base.checks import check_int

    got = {}
    for name, top in GATE_SAMPLING:
        value = getattr(args, f"gate_{name}")
        if value is not None and not gates:
            raise ValueError(f"--gate-{name} {value} prices in gates: add --gates")
        got[name] = 0 if value is None else value
        check_int(f"--gate-{name}", got[name], 0, top)
    return got


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
