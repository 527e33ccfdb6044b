"""Wall time of the whole ``matterhorn synth --T 16 --k 1`` (operators and blocks, liberty flow).

Target: under 2 minutes on 2 cores. The liberty is ``--liberty FILE``, else ``PDK_ROOT``'s
sky130 HD, else the test copy in ``../shared/pdk`` beside the repository.

    python benchmarks/bench_synth.py [--liberty FILE] [--tool-runs 2]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import tempfile
import time
from pathlib import Path

from matterhorn.cli import main

ROOT = Path(__file__).resolve().parents[1]
TEST_LIB = ROOT.parent / "shared" / "pdk" / "sky130hd_tt.lib.gz"
TARGET_S = 120.0


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--liberty", default=None)
    parser.add_argument("--tool-runs", dest="jobs", type=int, default=2)
    args = parser.parse_args()
    lib = args.liberty
    if lib is None and not os.environ.get("PDK_ROOT"):
        lib = str(TEST_LIB)
    with tempfile.TemporaryDirectory() as tmp:
        argv = ["synth", "--T", "16", "--k", "1", "--out", f"{tmp}/out", "--tool-runs",
                str(args.jobs)]
        if lib:
            argv += ["--liberty", lib]
        buf = io.StringIO()
        start = time.perf_counter()
        with contextlib.redirect_stdout(buf):
            status = main(argv)
        wall = time.perf_counter() - start
    if status != 0:
        print(buf.getvalue())
        return status
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    print(f"matterhorn synth --T 16 --k 1 (operators + blocks, liberty flow, --tool-runs "
          f"{args.jobs})")
    print(
        f"wall time: {wall:.1f} s on {cpus} cores (target < {TARGET_S:.0f} s): "
        f"{'OK' if wall < TARGET_S else 'SLOW'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(run())
