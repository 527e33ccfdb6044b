"""The fuzzed document readers at a larger count (docs/reliability.md, "Fuzzed readers").

Runs ``tests/test_reliability_fuzz.py`` with ``MATTERHORN_FUZZ_EXAMPLES`` cases per reader (the
command line a quarter of it) and prints the cases per reader, the failures and the wall and
CPU time. The default suite runs 60 per reader.

Usage: ``python benchmarks/bench_fuzz.py [--examples 600]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=600, help="cases per reader [600]")
    args = parser.parse_args()
    env = {**os.environ, "MATTERHORN_FUZZ_EXAMPLES": str(args.examples)}
    t0 = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/test_reliability_fuzz.py"], cwd=ROOT, env=env, capture_output=True, text=True,
        check=False)
    wall = time.perf_counter() - t0
    cpu = resource.getrusage(resource.RUSAGE_CHILDREN)
    for line in done.stdout.splitlines():
        if line.startswith(("fuzz cases:", "FAILED")) or " passed" in line or " failed" in line:
            print(line)
    print(f"{args.examples} cases per reader: wall {wall:.1f} s, CPU "
          f"{cpu.ru_utime + cpu.ru_stime:.1f} s")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
