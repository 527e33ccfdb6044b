"""A whole real layer on the mesh: MiniLM's block-0 Q projection (384 x 384), both simulators.

Converts MiniLM post-training (``--calibration`` sentences of ``pydoc-topics``), captures the
whole block-0 Q projection at radius ``k`` with ``--windows`` real token windows, partitions it
into tiles of ``--tile-neurons`` neurons on a ``--mesh`` mesh (:func:`regression.layer.run_layer`)
and runs it on each simulator; every output event and counter is compared with the golden QNN.
Prints per simulator: windows, events (encoder, tile inputs, outputs), clock cycles, the
one-off generate and build times and the wall time of the run.

Usage: ``python benchmarks/bench_layer.py [--windows 64] [--tile-neurons 48] [--mesh 3x3]
[--sims icarus,verilator] [--out DIR] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from golden_models.block_pieces import TILE_NEURONS  # noqa: E402
from regression.layer import DEFAULT_MESH, minilm_q_projection, run_layer  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=64, help="token windows (inferences)")
    ap.add_argument("--k", type=int, default=1, help="dead-zone radius")
    ap.add_argument("--calibration", type=int, default=6, help="calibration sentences")
    ap.add_argument("--tile-neurons", type=int, default=TILE_NEURONS)
    ap.add_argument("--mesh", default="x".join(map(str, DEFAULT_MESH)), help="ROWSxCOLS")
    ap.add_argument("--sims", default="icarus,verilator")
    ap.add_argument("--out", default="build/bench_layer", help="build/run directory")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args()
    rows, cols = (int(v) for v in args.mesh.lower().split("x"))
    import torch

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    sl = minilm_q_projection(args.windows, k=args.k, calibration=args.calibration)
    print(f"MiniLM block-0 Q projection {sl.layer.n_in}x{sl.layer.n_out}, k={args.k}, "
          f"{sl.q_in.shape[0]} windows captured in {time.perf_counter() - t0:.1f} s", flush=True)
    rows_out = []
    for name in args.sims.split(","):
        t0 = time.perf_counter()
        run = run_layer(sl.layer, list(sl.q_in), name, tile_neurons=args.tile_neurons,
                        mesh=(rows, cols), out_dir=args.out, name="minilm-q")
        wall = time.perf_counter() - t0
        if not run.passed:
            raise SystemExit(f"{name}: the layer run failed: {run.error}")
        fig = {"sim": name, "tiles": run.tiles, "mesh": f"{rows}x{cols}",
               "tile_neurons": args.tile_neurons, **run.figures,
               "generate_seconds": round(run.generate_seconds, 1), "wall_seconds": round(wall, 1)}
        rows_out.append(fig)
        print(" ".join(f"{k}={v}" for k, v in fig.items()), flush=True)
    if args.json:
        print(json.dumps(rows_out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
