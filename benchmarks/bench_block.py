"""Speed of ``matterhorn block`` (docs/rtl_block.md): sentences through a whole block's
hardware pieces, per design: wall time, simulated clocks per second (the pieces' clocks over the
wall time of their simulation), tokens per second, and the wall time of the whole run. The
pieces run one after the other in the Amaranth simulator, or (``--rtl verilator|icarus``) in
the fast harness on the generated Verilog, built into ``--root`` (cached: run it twice to see
the run without the builds). With ``--jobs N``, the wall time of ``matterhorn block``'s run
(:func:`matterhorn.block.run`) with N designs at a time, each in a worker process. Prints
figures, asserts nothing.

    python benchmarks/bench_block.py [--model random] [--sentences 8] [--design mttfs --k 1]
        [--rtl verilator] [--root build/block] [--jobs 2]
"""

from __future__ import annotations

import argparse
import resource
import time

import torch

from golden_models.block_pieces import TILE_NEURONS
from matterhorn import block
from regression.block import run_block


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="random", help="random, minilm or a folder [random]")
    ap.add_argument("--sentences", type=int, default=8, help="evaluation sentences [8]")
    ap.add_argument("--design", action="append", choices=("dense", "ttfs", "mttfs"))
    ap.add_argument("--k", type=int, action="append")
    ap.add_argument("--tile-neurons", type=int, default=TILE_NEURONS)
    ap.add_argument("--rtl", choices=("amaranth", "icarus", "verilator"), default="amaranth",
                    help="the pieces' simulator [amaranth]")
    ap.add_argument("--root", default=None,
                    help="with --rtl verilator|icarus: the Verilog, builds and runs "
                    "[build/block]")
    ap.add_argument("--jobs", type=int, default=None,
                    help="time block.run with this many designs at a time instead")
    args = ap.parse_args()
    torch.set_num_threads(1)
    designs = block.check_designs(args.design or ("dense", "ttfs", "mttfs"), args.k or (0, 1, 2))
    t0 = time.perf_counter()
    st = block.setup(args.model, args.sentences)
    setup_s = time.perf_counter() - t0
    print(f"{st.name}: {len(st.sentences)} sentences, set-up (load, convert) {setup_s:.1f} s, "
          f"the pieces on {args.rtl}")
    if args.jobs is not None:
        t = time.perf_counter()
        doc = block.run(st, designs, tile_neurons=args.tile_neurons, jobs=args.jobs,
                        rtl=args.rtl, rtl_root=args.root)
        wall = time.perf_counter() - t
        bad = sum(d["mismatches"] for d in doc["designs"])
        print(f"{len(designs)} designs, {args.jobs} at a time: {bad} mismatches, {wall:.1f} s "
              f"wall ({wall + setup_s:.1f} s with the set-up)")
        return
    total_cycles = total_tokens = 0
    for d in designs:
        t = time.perf_counter()
        r = run_block(st.qnn, st.tokenizer, st.sentences, d, tile_neurons=args.tile_neurons,
                      sim=args.rtl, root=args.root)
        wall = time.perf_counter() - t
        total_cycles += r.cycles
        total_tokens += r.tokens
        print(f"{d}: {r.mismatches} mismatches, {r.tokens} tokens, {r.cycles} clocks, "
              f"{wall:.1f} s: {r.cycles / wall:.0f} clocks/s, {r.tokens / wall:.2f} tokens/s")
    wall = time.perf_counter() - t0
    peak = max(resource.getrusage(who).ru_maxrss for who in
               (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 2**20
    print(f"all {len(designs)} designs: {wall:.1f} s wall (set-up included), "
          f"{total_cycles / (wall - setup_s):.0f} clocks/s, peak memory {peak:.2f} GiB "
          "(this process or a simulator)")


if __name__ == "__main__":
    main()
