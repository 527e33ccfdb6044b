"""Speed of ``matterhorn network`` (docs/network.md): sentences through every block of a network
in the generated hardware, block after block, per design: wall time per block and in all,
simulated clocks per second (the fast harness's clocks over the wall time), tokens per second,
and the values checked. The builds go to ``--root`` (cached: run it twice to see the run without
them). Prints figures, asserts nothing.

    python benchmarks/bench_network.py [--model random|minilm|FOLDER] [--checkpoints DIR]
        [--sentences 8] [--design dense --design mttfs --k 1] [--rtl verilator]
        [--root build/network/fast]
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from golden_models.block_pieces import TILE_NEURONS
from matterhorn import block, network
from networks.network import network_case
from regression.network import run_network


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="random", help="random, minilm or a folder [random]")
    ap.add_argument("--checkpoints", default=None,
                    help="the fine-tuned networks (matterhorn finetune --integer), DIR/k<k>; "
                    "without: the post-training conversion")
    ap.add_argument("--sentences", type=int, default=8, help="evaluation sentences [8]")
    ap.add_argument("--design", action="append", choices=("dense", "ttfs", "mttfs"))
    ap.add_argument("--k", type=int, action="append")
    ap.add_argument("--tile-neurons", type=int, default=TILE_NEURONS)
    ap.add_argument("--rtl", choices=("amaranth", "icarus", "verilator"), default="verilator",
                    help="the pieces' simulator [verilator]")
    ap.add_argument("--root", default="build/network/fast",
                    help="the Verilog, builds and runs [build/network/fast]")
    args = ap.parse_args()
    torch.set_num_threads(1)
    designs = block.check_designs(args.design or ("dense", "ttfs", "mttfs"), args.k or (0, 1, 2))
    converted = args.model != "random" and args.checkpoints is None
    checkpoints = network.check_checkpoints(args.model, args.checkpoints, designs,
                                            converted=converted)
    t0 = time.perf_counter()
    st = network.setup(args.model, args.sentences, designs, checkpoints=checkpoints,
                       evaluation=2)
    setup_s = time.perf_counter() - t0
    lengths = [int(st.tokenizer([s])[1].sum()) for s in st.sentences]
    print(f"{st.model}: {len(st.sentences)} sentences ({sum(lengths)} tokens, {min(lengths)} to "
          f"{max(lengths)}), set-up {setup_s:.1f} s, the pieces on {args.rtl}")
    for d in designs:
        net = st.network(d)
        t = time.perf_counter()
        case = network_case(net.qnn, st.tokenizer, st.sentences, d)
        capture = time.perf_counter() - t
        r = run_network(net.qnn, case, tile_neurons=args.tile_neurons, sim=args.rtl,
                        root=args.root)
        wall = time.perf_counter() - t
        blocks = ", ".join(f"{s:.0f}" for s in r.seconds)
        print(f"{d} ({net.name}): {r.mismatches} mismatches in {r.checked} values, embeddings "
              f"equal {sum(r.equal)} of {len(r.equal)}; {wall:.1f} s ({capture:.1f} s the QNN's "
              f"capture; blocks {blocks} s), {r.cycles} clocks: {r.cycles / wall:.0f} clocks/s, "
              f"{r.tokens / wall:.3f} tokens/s")
    wall = time.perf_counter() - t0
    peak = max(resource.getrusage(who).ru_maxrss for who in
               (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 2**20
    print(f"all {len(designs)} designs: {wall:.1f} s wall (set-up included), peak memory "
          f"{peak:.2f} GiB (this process or a simulator)")


if __name__ == "__main__":
    main()
