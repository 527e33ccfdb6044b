#!/usr/bin/env python3
"""Two ``block.json`` documents (``matterhorn block``) compared figure by figure, exactly.

A refactor of the block's code must leave every mismatch count, event count, cycle count and
energy figure of a run as it was: run the same ``matterhorn block`` command before and after
into two folders, then::

    python scripts/block_json_diff.py BEFORE/block.json AFTER/block.json

Every leaf of the two documents is compared with ``==`` (no tolerance: the run is
deterministic), key by key and item by item, except the wall-clock seconds a run took
(:data:`TIMINGS`). A leaf is a figure (a number, a flag, a null, or a missing or extra key or
item) or a text (a string: a name, where a cost comes from). It prints one line per
difference, texts marked ``text:``, then a summary line with the figures and texts compared,
and exits 1 when a figure differs (a text that differs is shown, not failed: a module that
moved changes the text that names it), 2 on a file it cannot read.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

#: Keys whose values are wall-clock times, not figures of the run.
TIMINGS = frozenset({"seconds", "sample_seconds"})


def differences(a, b, where: str = "") -> tuple[list[str], int]:
    """``(lines, leaves)``: each difference between ``a`` and ``b`` (``where``: the path of
    the value, e.g. ``designs[0].energy_pJ.gates.total``; a text's line starts ``text:``) and
    the leaves compared."""
    if isinstance(a, dict) and isinstance(b, dict):
        out, n = [], 0
        for k in sorted(set(a) | set(b)):
            at = f"{where}.{k}" if where else k
            if k in TIMINGS:
                continue
            if k not in a or k not in b:
                out.append(f"{at}: only in the {'second' if k not in a else 'first'}")
                continue
            lines, m = differences(a[k], b[k], at)
            out += lines
            n += m
        return out, n
    if isinstance(a, list) and isinstance(b, list):
        out, n = [], 0
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} items against {len(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            lines, m = differences(x, y, f"{where}[{i}]")
            out += lines
            n += m
        return out, n
    # bool is an int: a figure that became a flag (or back) differs too
    if type(a) is not type(b) or a != b:
        text = isinstance(a, str) and isinstance(b, str)
        return [f"{'text: ' if text else ''}{where}: {a!r} against {b!r}"], 1
    return [], 1


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: block_json_diff.py BEFORE/block.json AFTER/block.json", file=sys.stderr)
        return 2
    docs = []
    for name in argv:
        try:
            docs.append(json.loads(Path(name).read_text(encoding="utf-8")))
        except (OSError, ValueError) as e:
            print(f"{name}: {e}", file=sys.stderr)
            return 2
    lines, leaves = differences(*docs)
    for line in lines:
        print(line)
    texts = sum(line.startswith("text: ") for line in lines)
    print(f"{len(lines) - texts} figures and {texts} texts differ in {leaves} leaves compared "
          f"({argv[0]} against {argv[1]}; wall-clock {', '.join(sorted(TIMINGS))} left out)")
    return 1 if len(lines) > texts else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
