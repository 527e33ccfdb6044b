"""SRAM macros: the trimmed testbench against the whole netlist, and against OpenRAM's own
stimulus and power measurements (docs/sram_macros.md, "Validation").

    python benchmarks/bench_sram.py [--shape 16x32] [--period 4] [--work DIR] [--skip-full]
                                    [--skip-openram]

Prints, for the shape, the table's figures (the trimmed netlist, the shipped table), the same
testbench on the whole netlist, and OpenRAM's delay characterizer run once at the same clock,
load and slew on the whole netlist (``run_delay_simulation``: its 15-cycle stimulus and its
``.meas`` of the mean supply power over each read, write and deselected cycle, as its .lib
would report them after its period search), with the ratios and the seconds of each run. One
ngspice at a time; run it under ``nice``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from synth_scripts.sram import macros, spice, table
from synth_scripts.sram.macros import Shape

#: OpenRAM's characterizer, in a child process (its options are module globals). Prints one JSON
#: line: its per-port results (mW, ns) and the seconds.
OPENRAM_CHAR = textwrap.dedent('''
    import json, sys, time
    cfg, sp_out, period, load, slew = sys.argv[1], sys.argv[2], *map(float, sys.argv[3:6])
    import openram
    from openram import OPTS
    openram.init_openram(config_file=cfg, is_unit_test=False)
    openram.setup_bitcell()
    from openram import sram
    from openram.characterizer import delay
    s = sram()
    s.sp_write(sp_out)
    corner = (OPTS.process_corners[0], OPTS.supply_voltages[0], OPTS.temperatures[0])
    d = delay(s.s, sp_out, corner)
    d.analysis_init("1" * s.s.addr_size, s.s.word_size - 1)
    d.set_load_slew(load, slew)
    d.period = period
    d.targ_read_ports, d.targ_write_ports = d.read_ports, d.write_ports
    t = time.monotonic()
    ok, res = d.run_delay_simulation()
    openram.end_openram()  # removes its temporary folder
    print("RESULT " + json.dumps({"ok": ok, "results": res, "seconds": time.monotonic() - t},
                                 default=float))
''')



def openram_own(shape: Shape, bench: spice.Bench, work: Path) -> dict:
    """OpenRAM's own stimulus and power measurement, once, at ``bench``'s clock: pJ per cycle
    (its mean power x the period) of each kind, and the seconds."""
    work.mkdir(parents=True, exist_ok=True)
    cfg = work / "openram_char_config.py"
    cfg.write_text(macros.openram_config(
        shape, work, vdd=bench.vdd, temp=bench.temp, analytical_delay=False,
        extra=('spice_name = "ngspice"', "trim_netlist = False", "num_sim_threads = 1")))
    # OpenRAM wraps every simulator call in `source $CONDA_HOME/bin/activate`, even without
    # conda: a do-nothing one
    conda = work / "conda"
    (conda / "bin").mkdir(parents=True, exist_ok=True)
    (conda / "bin" / "activate").write_text("conda() { :; }\n")
    root = macros.openram_dir()
    env = dict(os.environ, CONDA_HOME=str(conda), OPENRAM_HOME=str(root / "compiler"),
               OPENRAM_TECH=str(root / "technology"), OPENRAM_TMP=str(work / "openram_temp"))
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", OPENRAM_CHAR, str(cfg), str(work / "sram.sp"),
                           str(bench.period_ns), str(bench.load_ff), str(bench.slew_ns)],
                          cwd=work, env=env, capture_output=True, text=True, check=False)
    (work / "openram_char.log").write_text(proc.stdout + proc.stderr)
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"OpenRAM's characterizer failed, see {work / 'openram_char.log'}")
    doc = json.loads(lines[-1][len("RESULT "):])
    port = doc["results"]["0"] if "0" in doc["results"] else doc["results"][0]
    pj = {k: float(v if not isinstance(v, list) else sum(v) / len(v)) * 1e-3 * bench.period_ns
          * 1e-9 * 1e12 for k, v in port.items() if k.endswith("_power")}
    return {"ok": doc["ok"], "pJ": pj, "seconds": time.monotonic() - start}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="16x32")
    ap.add_argument("--period", type=float, default=4.0)
    ap.add_argument("--work", type=Path, default=Path("build/bench_sram"))
    ap.add_argument("--skip-full", action="store_true")
    ap.add_argument("--skip-openram", action="store_true")
    args = ap.parse_args()
    shape = Shape.parse(args.shape)
    bench = spice.Bench(period_ns=args.period)
    shipped = table.load().entry(shape, bench.corner_name)
    print(f"{shape.name} at {bench.corner_name}, {bench.period_ns:g} ns clock")
    print(f"table (trimmed): read {shipped['read_pJ']:.4f}  write {shipped['write_pJ']:.4f}  "
          f"deselected {shipped['deselected_pJ']:.4f} pJ  leakage {shipped['leakage_uW']:.3f} uW"
          f"  cycles {shipped['cycles_pJ']}")
    if not args.skip_full:
        m = spice.characterize(shape, args.work / "full", bench, trimmed=False)
        print(f"whole netlist:   read {m.read_pJ:.4f}  write {m.write_pJ:.4f}  deselected "
              f"{m.deselected_pJ:.4f} pJ  leakage {m.leakage_uW:.3f} uW  "
              f"({m.seconds['ngspice']:.0f} s of ngspice)  cycles "
              f"{ {k: round(v, 4) for k, v in m.cycles_pJ.items()} }")
        for k, v in (("read_pJ", m.read_pJ), ("write_pJ", m.write_pJ),
                     ("deselected_pJ", m.deselected_pJ), ("leakage_uW", m.leakage_uW)):
            print(f"  trimmed / whole {k}: {shipped[k] / v:.4f}")
    if not args.skip_openram:
        own = openram_own(shape, bench, args.work / "openram_own")
        print(f"OpenRAM's own measurement (whole netlist, ok={own['ok']}, "
              f"{own['seconds']:.0f} s): " + ", ".join(f"{k} {v:.4f} pJ"
                                                       for k, v in sorted(own["pJ"].items())))


if __name__ == "__main__":
    main()
