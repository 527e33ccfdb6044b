"""Verilator's ``OBJCACHE``: serve the Verilator runtime objects from a cache.

Verilator's generated Makefile runs every C++ compile as ``$(OBJCACHE) $(CXX) ... -c -o X.o
X.cpp`` (``OBJCACHE``, documented in Verilator's environment variables, is meant for ``ccache``).
:func:`regression.sim.build` points it at this script. The runtime objects
(:data:`RUNTIME`: ``verilated.o`` and friends) depend only on the Verilator installation and the
flags, not on the design, and compiling them is most of a small build: the first build compiles
and stores them under ``../_verilator_runtime/<key>`` (beside the build directories), later ones
copy them. Every other compile (the design's, cocotb's ``verilator.o``) runs unchanged.

Usage (what make runs): ``python objcache.py CXX ARGS...``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

#: Objects that do not depend on the design (cocotb's ``verilator.o`` includes its header).
RUNTIME = ("verilated", "verilated_vpi", "verilated_threads", "verilated_dpi")


def _runtime_output(cmd: list[str]) -> str | None:
    """The output file of ``cmd`` if it compiles one of :data:`RUNTIME`, else None."""
    if "-c" not in cmd or "-o" not in cmd or cmd.index("-o") + 1 >= len(cmd):
        return None
    out = cmd[cmd.index("-o") + 1]
    return out if Path(out).stem in RUNTIME and Path(out).suffix == ".o" else None


def _key(cmd: list[str]) -> str:
    """The command (flags, source path) and the sources' size and time: a new Verilator or new
    flags give a new key."""
    h = hashlib.sha256("\0".join(cmd).encode())
    for arg in cmd:
        if arg.endswith(".cpp") and os.path.isfile(arg):
            st = os.stat(arg)
            h.update(f"\0{st.st_size}:{st.st_mtime_ns}".encode())
    return h.hexdigest()[:16]


def main(argv: list[str]) -> int:
    cmd = argv[1:]
    if not cmd:
        print("usage: objcache.py CXX ARGS...", file=sys.stderr)
        return 2
    out = _runtime_output(cmd)
    if out is None:
        return subprocess.call(cmd)
    cache = Path.cwd().parent / "_verilator_runtime" / _key(cmd)
    name, dep = Path(out).name, Path(out).with_suffix(".d")
    if (cache / name).is_file():
        shutil.copyfile(cache / name, out)
        if (cache / dep.name).is_file():
            shutil.copyfile(cache / dep.name, dep)
        return 0
    rc = subprocess.call(cmd)
    if rc == 0:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from toolkit_base.files import copy_atomic

        cache.mkdir(parents=True, exist_ok=True)
        copy_atomic(out, cache / name)
        if dep.is_file():
            copy_atomic(dep, cache / dep.name)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
