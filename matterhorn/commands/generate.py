"""``matterhorn generate``: Verilog of every top-level block plus manifest.json."""

from __future__ import annotations

import argparse
import sys

from matterhorn.commands import mesh_arg
from rtl_gen.params import RTLConfig
from rtl_gen.registry import BLOCKS

HELP = "elaborate the Amaranth RTL to Verilog (one file per top-level block) + manifest.json"

#: The units' sizes: option, RTLConfig field (its default is the option's), meaning.
UNIT_OPTIONS = (
    ("--seq-len", "seq_len", "longest softmax row (keys), 2..4096"),
    ("--head-dim", "head_dim", "d_k: products in a raw attention score"),
    ("--score-bits", "score_bits", "signed width of the raw scores (default: their range's)"),
    ("--hidden", "hidden", "the add + LayerNorm row (the model's hidden size), 2..4096"),
    ("--ffn-dim", "ffn_dim", "FFN width: the fan-in of the sums the add takes"),
    ("--residual-bits", "residual_bits", "signed width of the residual stream, 4..24"),
    ("--guard-bits", "guard_bits", "guard bits of the residual sum, 0..12"),
    ("--exp-frac-bits", "exp_frac_bits", "fraction bits of the softmax exponent, 1..12"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--T", type=int, default=16, help="time steps 2**n, n in 1..6")
    parser.add_argument("--k", type=int, default=1, help="dead-zone radius 0..T-1")
    parser.add_argument("--family", choices=("sym", "asym"), default="sym",
                        help="code family of the layer input")
    parser.add_argument("--i-max", type=int, nargs="+", metavar=("IN", "OUT"), default=None,
                        help="silent centres: one value for input and output, or IN OUT "
                        "(default: c, code 0 silent)")
    parser.add_argument("--weight-bits", type=int, default=1,
                        help="1 (+-1 weights) or signed 2..8")
    parser.add_argument("--n-in", type=int, default=16, help="input addresses of a tile")
    parser.add_argument("--tile-neurons", type=int, default=8, help="neurons per tile")
    parser.add_argument("--lanes", type=int, default=None,
                        help="comparator lanes of the fire phase (default: --tile-neurons)")
    parser.add_argument("--mesh", type=mesh_arg, default=(2, 2), metavar="RxC",
                        help="mesh rows x cols (default: 2x2)")
    parser.add_argument("--sram-macro", action="store_true",
                        help="emit mttfs_sram as a wrapper of a black-box macro")
    parser.add_argument("--axil-addr-width", type=int, default=16, metavar="BITS",
                        help="address bits of the AXI wrappers' AXI4-Lite slave")
    parser.add_argument("--axis-width", type=int, default=32, metavar="BITS",
                        help="TDATA bits of the AXI wrappers' AXI4-Stream ports: 8, 16, 32, 64")
    units = parser.add_argument_group(
        "the non-linear units (mttfs_softmax, mttfs_add_norm; docs/rtl_units.md)")
    for option, field, meaning in UNIT_OPTIONS:
        units.add_argument(option, type=int, default=getattr(RTLConfig, field), dest=field,
                           help=meaning)
    parser.add_argument("--module", action="append", metavar="NAME",
                        choices=tuple(b.module for b in BLOCKS),
                        help="only this module and what its Verilog needs (repeatable; "
                        "default: every module): " + ", ".join(b.module for b in BLOCKS))
    parser.add_argument("--prefix", default="", metavar="NAME",
                        help="put NAME before every module and file name, so several "
                        "configurations live in one design and one folder (default: none)")
    parser.add_argument("--lint", action="store_true",
                        help="run verilator --lint-only -Wall (with the listed waivers) after")
    parser.add_argument("--out", default="build/rtl", metavar="DIR", help="output folder")


def run(args: argparse.Namespace) -> int:
    from rtl_gen.generate import generate, lint, manifest_name
    from toolkit_base import console
    from toolkit_base.checks import check_out_writable
    from toolkit_base.toolchain import require

    if args.lint:
        require("verilator")  # before anything is written

    i_max_in = i_max_out = None
    if args.i_max is not None:
        if len(args.i_max) > 2:
            raise ValueError(f"--i-max takes one or two values (IN [OUT]), not {args.i_max}")
        i_max_in, i_max_out = args.i_max[0], args.i_max[-1]
    config = RTLConfig(
        T=args.T, k=args.k, family=args.family, i_max_in=i_max_in, i_max_out=i_max_out,
        weight_bits=args.weight_bits, n_in=args.n_in, tile_neurons=args.tile_neurons,
        lanes=args.lanes, mesh_rows=args.mesh[0], mesh_cols=args.mesh[1],
        sram_macro=args.sram_macro, axil_addr_width=args.axil_addr_width,
        axis_width=args.axis_width, **{field: getattr(args, field) for _, field, _ in UNIT_OPTIONS},
    )
    check_out_writable(args.out)  # staged in .rtl_gen-* inside it
    manifest = generate(config, args.out, args.module, prefix=args.prefix)
    derived = manifest["derived"]
    for name, entry in manifest["modules"].items():
        console.detail(f"{name}: {args.out}/{entry['file']} sha256 {entry['sha256'][:16]}")
    n = len(manifest["modules"])
    console.out(f"wrote {n} module{'s' * (n != 1)} and {manifest_name(args.prefix)} to "
                f"{args.out}")
    console.out(f"accumulator: {derived['acc_width']} bits, |V| <= {derived['acc_bound']} "
          f"({derived['acc_bound_formula'].split(' (golden')[0]})")
    if args.lint:
        try:
            lint(args.out, manifest)
        except RuntimeError as exc:
            print(f"matterhorn generate: {exc}", file=sys.stderr)
            return 1
        console.out("verilator lint: clean (waivers listed in manifest.json)")
    return 0
