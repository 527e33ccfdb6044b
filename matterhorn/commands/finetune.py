"""``matterhorn finetune``: dead-zone fine-tuning of a real model's W4A4 QNN (MiniLM)."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = ("dead-zone quantization-aware fine-tuning of a BERT-family model's W4A4 QNN (MiniLM "
        "or a model folder; masked STE, distillation)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="minilm", metavar="minilm|FOLDER",
                        help="the shipped all-MiniLM-L6-v2, or a local Hugging Face folder of a "
                        "BERT-family encoder")
    parser.add_argument(
        "--k", type=int, nargs="+", required=True, help="dead-zone radius (several: one run each)"
    )
    parser.add_argument(
        "--corpus",
        default="pydoc-topics",
        help="corpus name or a .txt file (one sentence a line): its calibration split trains, "
        "its evaluation split measures",
    )
    parser.add_argument(
        "--extra",
        nargs="*",
        default=None,
        help="extra training corpora, calibration split only (default: python-docstrings; "
        "give none to train on the corpus alone)",
    )
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help="training steps from the conversion (k = 0; every radius with --start conversion; "
        "default: the recipe's)",
    )
    parser.add_argument(
        "--k-steps",
        type=int,
        default=None,
        help="training steps of a radius k >= 1 started from the fine-tuned k = 0 QNN "
        "(default: the recipe's)",
    )
    parser.add_argument(
        "--start",
        default="k0",
        help="where a radius k >= 1 starts: k0, the fine-tuned k = 0 QNN (trained first unless "
        "DIR/k0 holds one of the same settings), or conversion",
    )
    parser.add_argument(
        "--lr", type=float, default=None, help="peak learning rate (default: the recipe's)"
    )
    parser.add_argument(
        "--scale-lr",
        type=float,
        default=None,
        help="peak learning rate of the learned activation scales (LSQ, log domain); "
        "0 keeps them fixed (default: the recipe's)",
    )
    parser.add_argument("--batch", type=int, default=16, help="sentences per step")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data order and torch")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads (default: the recipe's; one is fastest when another job shares "
        "two cores)",
    )
    parser.add_argument("--sentences", type=int, default=None, help="evaluation sentences")
    parser.add_argument("--calibration", type=int, default=None, help="conversion sentences")
    parser.add_argument("--training", type=int, default=None, help="training sentences")
    parser.add_argument(
        "--integer",
        action="store_true",
        help="fine-tune and measure the integer-only QNN (integer softmax, LayerNorm, GELU "
        "table and residual adds: docs/integer_contract.md)",
    )
    parser.add_argument(
        "--residual-bits",
        type=int,
        default=None,
        help="width of the integer residual stream (with --integer; default 16)",
    )
    parser.add_argument("--no-plots", action="store_true", help="write no plot")
    parser.add_argument("--out", default="build/finetune", metavar="DIR", help="output folder")


def run(args: argparse.Namespace) -> int:
    from networks.finetune_report import (
        EXTRA_CORPORA,
        STARTS,
        finetune_minilm,
    )
    from networks.hf_folder import resolve_model
    from networks.integer import integer_spec
    from toolkit_base import console
    from toolkit_base.checks import check_out_dir

    if args.start not in STARTS:
        raise ValueError(f"--start must be one of {STARTS}, not {args.start!r}")
    if args.k_steps is not None and args.start != "k0":
        raise ValueError("--k-steps needs --start k0 (from the conversion every k trains --steps)")
    integer = integer_spec(args.integer, args.residual_bits)
    out = Path(check_out_dir(args.out))
    resolve_model(args.model)  # the family and the files, before anything else
    ks = list(dict.fromkeys(args.k))  # a repeated radius runs once
    doc = finetune_minilm(
        ks,
        out,
        corpus=args.corpus,
        extra=EXTRA_CORPORA if args.extra is None else args.extra,
        **({} if args.steps is None else {"steps": args.steps}),
        **({} if args.threads is None else {"threads": args.threads}),
        **({} if args.lr is None else {"lr": args.lr}),
        **({} if args.scale_lr is None else {"scale_lr": args.scale_lr}),
        **({} if args.k_steps is None else {"k_steps": args.k_steps}),
        batch=args.batch,
        seed=args.seed,
        sentences=args.sentences,
        calibration=args.calibration,
        training=args.training,
        model=args.model,
        start=args.start,
        integer=integer,
        plot=None if args.no_plots else _plot(),
        progress=console.note,
    )
    for r in doc["runs"]:
        b, a = r["before"], r["after"]
        console.out(
            f"k={r['k']}: cosine to float {b['cos_float']['mean']:.4f} -> "
            f"{a['cos_float']['mean']:.4f}, retrieval agreement {b['retrieval_agreement']:.3f} "
            f"-> {a['retrieval_agreement']:.3f}, spike rate {100 * b['rates']['network']:.2f}% "
            f"-> {100 * a['rates']['network']:.2f}%"
        )
    names = ", ".join(f"k{r['k']}" for r in doc["runs"])
    console.out(f"wrote {out}/finetune.json, summary.md (checkpoints {names})")
    return 0


def _plot():
    from energy_model.plots import plot_finetune

    return plot_finetune
