"""Events and clock cycles simulated per second, per simulator, for the tile and the system:
the per-beat cocotb benches against the fast harness.

Runs the tile bench (T=16, 1-bit weights, 8 neurons, 16 inputs; 6 random layers of 24 windows)
and the mesh-system bench (3-layer random QNN on a 2x2 mesh, T=16, 32 inferences) on Icarus and
on Verilator, each in two modes:

- ``cocotb``: the per-beat benches (``tile``, ``system``): drivers with random idles, monitors
  with random ``ready``, scoreboards, coverage, all in Python, woken every clock;
- ``fast``: the same vectors in the fast harness (``tile-fast``, ``system-fast``,
  docs/regress.md "Fast mode"): stimulus and expected response in memories, the same random
  idles and stalls drawn in hardware, every output event and counter compared in the
  simulation; the vectors are played ``--repeat`` times over (Verilator; a tenth of that on
  Icarus, at least 1) so a run lasts long enough to time.

Columns: events checked (tile: input + output events; system: encoder events plus every tile's
input and output events), clock cycles, wall seconds of the simulation (bench included) and the
simulator process's CPU seconds, events/s and cycles/s on the wall clock, cycles per CPU second
(the figure that does not depend on how loaded the machine is), and the one-off build time.

Usage: ``python benchmarks/bench_regress.py [--out DIR] [--seed S] [--repeat R] [--json]
[--sim icarus|verilator] [--mode cocotb|fast]``.
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

SYSTEM = {"T": 16, "k": 1, "family": "sym", "distribution": "uniform", "shape": 0}


def make_job(bench: str, mode: str, simulator: str, seed: int, repeat: int):
    fast = {"repeat": max(1, repeat // 10 if simulator == "icarus" else repeat)}
    if bench == "tile":
        params = regress.block_params(16, 0, 1, seed)
        stim = {"windows": 24, "blocks": 6}
        if mode == "cocotb":
            return regress.job("tile", simulator, params, seed, **stim, reset=False)
        return regress.job("tile-fast", simulator, params, seed, **stim, **fast)
    if mode == "cocotb":
        return regress.job("system", simulator, SYSTEM, seed, inferences=32, reset=False)
    return regress.job("system-fast", simulator, SYSTEM, seed, inferences=32, **fast)


def measure(bench: str, mode: str, simulator: str, root: Path, seed: int, repeat: int) -> dict:
    j = make_job(bench, mode, simulator, seed, repeat)
    t0 = time.perf_counter()
    r = regress.run_job(j, root)
    wall = time.perf_counter() - t0
    if not r.passed:
        raise SystemExit(f"{j.name} failed: {r.error}")
    rep = r.report
    secs = float(rep["sim_seconds"])
    cpu = float(rep.get("cpu_seconds", 0.0))
    return {
        "bench": bench,
        "mode": mode,
        "sim": simulator,
        "events": rep["events"],
        "cycles": rep["cycles"],
        "sim_seconds": round(secs, 3),
        "cpu_seconds": round(cpu, 3),
        "events_per_second": round(rep["events"] / secs, 1),
        "cycles_per_second": round(rep["cycles"] / secs, 1),
        "cycles_per_cpu_second": round(rep["cycles"] / cpu, 1) if cpu > 0 else 0.0,
        "build_seconds": round(r.build_seconds, 1),
        "wall_seconds": round(wall, 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/bench_regress", help="build/run directory")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=100,
                    help="passes of the fast mode's vectors on Verilator (a tenth on Icarus)")
    ap.add_argument("--sim", choices=sim.SIMULATORS, action="append", help="[both]")
    ap.add_argument("--mode", choices=("cocotb", "fast"), action="append", help="[both]")
    ap.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = ap.parse_args()
    root = Path(args.out)
    rows = [
        measure(b, m, s, root, args.seed, args.repeat)
        for b in ("tile", "system")
        for s in (args.sim or sim.SIMULATORS)
        for m in (args.mode or ("cocotb", "fast"))
    ]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    print(
        f"{'bench':<7} {'mode':<7} {'sim':<10} {'events':>8} {'cycles':>8} {'sim s':>7} "
        f"{'cpu s':>6} {'events/s':>9} {'cycles/s':>9} {'cyc/cpu s':>10} {'build s':>8}"
    )
    for r in rows:
        print(
            f"{r['bench']:<7} {r['mode']:<7} {r['sim']:<10} {r['events']:>8} {r['cycles']:>8} "
            f"{r['sim_seconds']:>7.2f} {r['cpu_seconds']:>6.2f} {r['events_per_second']:>9.0f} "
            f"{r['cycles_per_second']:>9.0f} {r['cycles_per_cpu_second']:>10.0f} "
            f"{r['build_seconds']:>8.1f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
