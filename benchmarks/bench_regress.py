"""Events simulated per second by the cocotb benches, per simulator, for the tile and the system.

Runs the tile bench (T=16, 1-bit weights, 8 neurons, 16 inputs) and the mesh-system bench
(3-layer random QNN on a 2x2 mesh, T=16) on Icarus and on Verilator with a larger stimulus than
the regression, and prints:

- events/s: events checked (tile: input + output events; system: encoder events plus every
  tile's input and output events) per second of simulation, bench included (cocotb coroutines,
  drivers, monitors, scoreboards);
- cycles/s: clock cycles per second of the same runs;
- the one-off build time of each simulator (cached afterwards).

Usage: ``python benchmarks/bench_regress.py [--out DIR] [--seed S] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import regression as regress  # noqa: E402
from regression import sim  # noqa: E402


def measure(bench: str, simulator: str, root: Path, seed: int) -> dict:
    if bench == "tile":
        params = regress.block_params(16, 0, 1, seed)
        j = regress.job("tile", simulator, params, seed, windows=24, blocks=6, reset=False)
    else:
        params = {"T": 16, "k": 1, "family": "sym", "distribution": "uniform", "shape": 0}
        j = regress.job("system", simulator, params, seed, inferences=32, reset=False)
    t0 = time.perf_counter()
    r = regress.run_job(j, root)
    wall = time.perf_counter() - t0
    if not r.passed:
        raise SystemExit(f"{j.name} failed: {r.error}")
    rep = r.report
    secs = float(rep["sim_seconds"])
    return {
        "bench": bench,
        "sim": simulator,
        "events": rep["events"],
        "cycles": rep["cycles"],
        "sim_seconds": round(secs, 3),
        "events_per_second": round(rep["events"] / secs, 1),
        "cycles_per_second": round(rep["cycles"] / secs, 1),
        "build_seconds": round(r.build_seconds, 1),
        "wall_seconds": round(wall, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/bench_regress", help="build/run directory")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args()
    root = Path(args.out)
    rows = [measure(b, s, root, args.seed) for b in ("tile", "system") for s in sim.SIMULATORS]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(
        f"{'bench':<8} {'sim':<10} {'events':>7} {'cycles':>7} {'sim s':>7} {'events/s':>9} "
        f"{'cycles/s':>9} {'build s':>8}"
    )
    for r in rows:
        print(
            f"{r['bench']:<8} {r['sim']:<10} {r['events']:>7} {r['cycles']:>7} "
            f"{r['sim_seconds']:>7.2f} {r['events_per_second']:>9.0f} "
            f"{r['cycles_per_second']:>9.0f} {r['build_seconds']:>8.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
