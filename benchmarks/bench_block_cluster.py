"""A block priced in our gates in this process, on a local Dask cluster of 1 and 2 worker
processes, and on an existing cluster: wall time, per-task times, and the documents compared.

``matterhorn block --gates`` runs each design's pieces as a task, then the pricing's tasks
(each replayed tile, the attention path, each add+LayerNorm unit;
:class:`matterhorn.block_gates.DesignPricing`) spread over the workers
(:func:`matterhorn.block.run`). This bench prices the same block (the tiny random block of
the tests by default: hidden 8, 2 heads, FFN 16; ``--hidden 32 --heads 2 --ffn 64`` the
random block) on the same sentences, with one netlists folder (mapped and built by a first,
warming run, so that every way replays on cached builds), and prints for each way its wall
time and whether its document equals the one of the run in this process (wall-clock seconds
aside), then each pricing task's seconds (the figures docs/cluster.md scales to a bigger
block).

    python benchmarks/bench_block_cluster.py [--scheduler tcp://HOST:PORT] [--sentences N]
        [--hidden 8 --heads 2 --ffn 16 --seq 8] [--tile-neurons 8] [--gate-sentences 1]
        [--gate-tiles 0] [--sim icarus|verilator] [--out DIR]

With ``--scheduler``, start the scheduler and workers yourself, as a site would (every worker
in this folder, with the toolkit importable)::

    dask scheduler --host 127.0.0.1 --port 8786 &
    dask worker tcp://127.0.0.1:8786 --nthreads 1 --nworkers 2 &
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SENTENCES = ["Two words.", "Three words here.", "One more sentence of words."]


def figures(doc):
    """``doc`` without its wall-clock seconds."""
    if isinstance(doc, dict):
        return {k: figures(v) for k, v in doc.items() if k not in ("seconds", "sample_seconds")}
    if isinstance(doc, list):
        return [figures(v) for v in doc]
    return doc


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scheduler", default=None)
    ap.add_argument("--sentences", type=int, default=2)
    for name, default in (("hidden", 8), ("heads", 2), ("ffn", 16), ("seq", 8)):
        ap.add_argument(f"--{name}", type=int, default=default)
    ap.add_argument("--tile-neurons", type=int, default=8)
    ap.add_argument("--gate-sentences", type=int, default=1)
    ap.add_argument("--gate-tiles", type=int, default=0)
    ap.add_argument("--sim", choices=("icarus", "verilator"), default="verilator")
    ap.add_argument("--design", action="append", help="default: dense and mttfs-k1")
    ap.add_argument("--ways", default="warm,serial,local1,local2",
                    help="comma-separated: warm, serial, local1, local2 (and scheduler)")
    ap.add_argument("--out", type=Path, default=Path("build/bench_block_cluster"))
    args = ap.parse_args(argv)

    import torch

    from matterhorn.block import BlockSetup, GatesSetup, run
    from networks.block import random_block_model
    from regression.block_parts import seq_max_of
    from synth_scripts.gatelevel.liberty import default_liberty

    torch.set_num_threads(1)
    qnn, tok = random_block_model(hidden=args.hidden, heads=args.heads, ffn=args.ffn,
                                  seq=args.seq)
    st = BlockSetup(qnn, tok, "random", SENTENCES[:args.sentences], seq_max_of(qnn.cfg))
    designs = args.design or ["dense", "mttfs-k1"]
    out = args.out.resolve()  # the workers reach it by the same path
    gates = GatesSetup(default_liberty(), args.sim, out / "gates", sample=args.gate_sentences,
                       tiles=args.gate_tiles)
    ways = {"warm": {}, "serial": {}, "local1": {}, "local2": {"jobs": 2}}
    if args.scheduler:
        ways["scheduler"] = {"scheduler": args.scheduler}
    picked = [w for w in args.ways.split(",") if w] + (["scheduler"] if args.scheduler else [])
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; designs "
          f"{', '.join(designs)}; {len(st.sentences)} sentences")
    docs, walls = {}, {}
    for way in picked:
        kw = dict(ways[way])
        t0 = time.perf_counter()
        if way == "local1":  # -j 1 runs in this process: a cluster of one worker, given
            from distributed import LocalCluster

            with LocalCluster(n_workers=1, threads_per_worker=1, processes=True,
                              host="127.0.0.1", dashboard_address=":0") as lc:
                docs[way] = run(st, designs, tile_neurons=args.tile_neurons, gates=gates,
                                scheduler=lc.scheduler_address)
        else:
            docs[way] = run(st, designs, tile_neurons=args.tile_neurons, gates=gates, **kw)
        walls[way] = time.perf_counter() - t0
        same = figures(docs[way]) == figures(docs.get("serial", docs[way]))
        print(f"{way}: {walls[way]:.1f} s, load {os.getloadavg()[0]:.1f}, document "
              + ("equal to the serial run's" if same else "DIFFERS from the serial run's"),
              flush=True)
    last = docs[picked[-1]]
    for d in last["designs"]:
        per = last["gates"]["seconds"][d["design"]]
        print(f"{d['design']}: priced in {per} s")
    (args.out / "walls.json").write_text(json.dumps(walls, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
