"""Wall time of a regression sweep: in this process, on threads, on a local Dask cluster.

Runs the same regression jobs (Icarus, the encoder, SRAM and tile benches, quick stimulus, at
every ``--T``) three ways, each in a fresh build root (generation, builds and runs included):

- serial: one after the other in this process (``workers=1``);
- threads: two at a time on a thread pool in this process (how sweeps ran before
  ``toolkit_base.cluster``);
- cluster: a local Dask cluster of two worker processes (``workers=2``; start-up and shut-down of
  the cluster included).

and prints the job count, the wall time of each and whether every summary is the serial one
(timings aside). The figures depend on the machine's load; the cluster's start-up and its
workers' first imports cost a few seconds per run.

Usage: ``python benchmarks/bench_cluster.py [--T 4 8 16] [--out DIR] [--json]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from regression.benches import BENCH_KINDS  # noqa: E402
from regression.cache import generate_rtl  # noqa: E402
from regression.execute import run_job, run_jobs  # noqa: E402
from regression.planner import regression_jobs  # noqa: E402
from regression.summary import summarize, without_timings  # noqa: E402

BENCHES = ("encoder", "sram", "tile")


def threads(jobs, root: Path, n: int):
    """The executor sweeps had before: generation here, then a thread pool."""
    for j in jobs:
        generate_rtl(BENCH_KINDS[j.bench].params(j), root, modules=(BENCH_KINDS[j.bench].top,))
    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(functools.partial(run_job, root=root), jobs))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--T", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--out", default="build/bench_cluster")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    out = Path(args.out).resolve()
    jobs = regression_jobs(args.T, [1], ["icarus"], benches=BENCHES, quick=True)
    runs = {
        "serial": lambda root: run_jobs(jobs, root, workers=1),
        "threads": lambda root: threads(jobs, root, 2),
        "cluster": lambda root: run_jobs(jobs, root, workers=2),
    }
    figures, summaries = {}, {}
    for name, fn in runs.items():
        root = out / name
        shutil.rmtree(root, ignore_errors=True)  # the benchmark's own folder
        t0 = time.perf_counter()
        results = fn(root)
        wall = time.perf_counter() - t0
        summaries[name] = summarize(results, wall, {})
        figures[name] = {"wall_seconds": round(wall, 1),
                         "passed": summaries[name]["passed"]}
    doc = {
        "jobs": len(jobs),
        "T": args.T,
        "benches": list(BENCHES),
        "runs": figures,
        "identical_to_serial": {
            name: without_timings(summaries[name]) == without_timings(summaries["serial"])
            for name in runs
        },
    }
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        print(f"{len(jobs)} jobs (Icarus; {', '.join(BENCHES)}; quick; T={args.T})")
        for name, f in figures.items():
            same = "same results" if doc["identical_to_serial"][name] else "DIFFERENT RESULTS"
            print(f"  {name:<8} wall {f['wall_seconds']:7.1f} s, {f['passed']}/{len(jobs)} passed, "
                  f"{same}")
    return 0 if all(doc["identical_to_serial"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
