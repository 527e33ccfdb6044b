"""Wall time of ``matterhorn compare`` on defaults and of the default ``matterhorn flow``.

Targets (issue: energy in our gates): compare under 5 minutes, the flow under 2 minutes, on
2 cores, both with the default NanGate 45 nm library. Compare's MiniLM workload runs when
``build/minilm/slice_block0_qproj.json`` exists (``matterhorn stats --model minilm``).

    python benchmarks/bench_compare.py [--only compare|flow] [--sim icarus|verilator]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

from matterhorn.compare import compare
from matterhorn.flow import FlowConfig, run_flow

TARGETS_S = {"compare": 300.0, "flow": 120.0}


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("compare", "flow"), default=None)
    parser.add_argument("--sim", choices=("icarus", "verilator"), default="icarus")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp:
        if args.only in (None, "compare"):
            start = time.perf_counter()
            doc = compare(16, 1, f"{tmp}/compare", liberties=None, sim=args.sim,
                          progress=lambda _: None)
            wall = time.perf_counter() - start
            names = [f"{e['technology']}/{w['name']}" for e in doc["pdks"]
                     for w in e["workloads"]]
            print(f"matterhorn compare (defaults, {', '.join(names)}; {args.sim}): "
                  f"{wall:.1f} s (target {TARGETS_S['compare']:.0f} s)")
        if args.only in (None, "flow"):
            start = time.perf_counter()
            result = run_flow(FlowConfig(out_dir=f"{tmp}/flow"), progress=lambda _: None)
            wall = time.perf_counter() - start
            stages = ", ".join(f"{k} {v.get('wall_s', 0):.0f} s"
                               for k, v in result.stages.items())
            print(f"matterhorn flow (defaults, NanGate 45 nm): {wall:.1f} s "
                  f"(target {TARGETS_S['flow']:.0f} s; {stages}); ok={result.ok}")
    print(f"load average at start: {load:.1f} on {os.cpu_count()} cores")
    return 0


if __name__ == "__main__":
    raise SystemExit(run())
