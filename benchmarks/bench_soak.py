"""Router soak on Verilator: a million flits through a 4x4 mesh, checked inside the simulation.

Run: ``./run bench soak`` (or ``.venv/bin/python benchmarks/bench_soak.py [--flits N]``).

Every node sends ``--flits`` / 16 flits with random gaps (``p_valid``), a quarter of them to
the hotspot node 5 (``p_hot = 64/256``) and the rest uniformly, into sinks whose ``ready`` is
random (``p_ready``). The harness (regression/soak_rtl.py) checks every flit (destination, hops
= Manhattan distance, in order per (source, destination)) and the bench compares the per-pair
counts with the Python model of the sources (exactly once). Prints the Verilator build time
(0 when cached), flits, clocks, flits/s, clocks/s and the verdict; exits 1 if the run failed.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from regression.soak import (  # noqa: E402
    SoakParams,
    build_soak,
    expected_traffic,
    run_soak,
    verdict,
)


def _child_cpu() -> float:
    """CPU seconds of the finished child processes (the simulator, the compiler): on a shared
    machine the wall time says more about the load than about the simulation."""
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flits", type=int, default=1_000_000, help="flits in total (default 1e6)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--p-valid", type=int, default=192, help="offer probability, 256ths")
    ap.add_argument("--p-ready", type=int, default=192, help="sink ready probability, 256ths")
    ap.add_argument("--p-hot", type=int, default=64, help="hotspot fraction, 256ths")
    ap.add_argument("--out", default=str(ROOT / "build" / "cocotb"),
                    help="build cache (shared with the test suite)")
    args = ap.parse_args(argv)
    p = SoakParams(flits=-(-args.flits // 16), seed=args.seed, p_valid=args.p_valid,
                   p_ready=args.p_ready, p_hot=args.p_hot, hot=5)
    t0 = time.perf_counter()
    cpu0 = _child_cpu()
    b, build_s = build_soak(args.out)
    total_s = time.perf_counter() - t0
    print(f"Verilator build: {build_s:.1f} s, {_child_cpu() - cpu0:.1f} s CPU "
          f"(with the harness's Verilog {total_s:.1f} s)")
    traffic = expected_traffic(p)
    t1 = time.perf_counter()
    cpu1 = _child_cpu()
    r = run_soak(b, p, Path(args.out) / "soak" / f"run-{p.total}-{p.seed}")
    wall = time.perf_counter() - t1
    cpu = _child_cpu() - cpu1
    problems = verdict(p, r, traffic)
    print(f"4x4 mesh, seed {p.seed}, p_valid {p.p_valid}/256, p_ready {p.p_ready}/256, "
          f"hotspot node {p.hot} at {p.p_hot}/256")
    print(f"flits delivered   {r.recv} of {r.sent} sent ({p.total} planned)")
    print(f"clocks            {r.cycles}")
    print(f"flits/clock       {r.recv / max(r.cycles, 1):.3f}")
    print(f"flits/s           {r.flits_per_second:,.0f}  (start to done, {r.seconds:.1f} s)")
    print(f"clocks/s          {r.cycles_per_second:,.0f}")
    print(f"run incl. start-up and read-out: {wall:.1f} s wall, {cpu:.1f} s CPU "
          f"({r.cycles / max(cpu, 1e-9):,.0f} clocks per CPU second)")
    print(f"checker counters  {r.errors}")
    print(f"busy at done/end  {r.busy_at_done}/{r.busy_end}")
    print("result            " + ("PASS: every flit exactly once, in order per pair, "
                                  "hops = Manhattan distance, busy low"
                                  if not problems else "FAIL"))
    for line in problems:
        print("  " + line)
    return 0 if not problems else 1


if __name__ == "__main__":
    raise SystemExit(main())
