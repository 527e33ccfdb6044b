"""One macro's energy per access and leakage, measured with ngspice (Debian's ``ngspice``).

The testbench (:func:`deck`) drives the OpenRAM macro's one read-write port at a fixed clock
(rising edge at mid-cycle; the address, data and controls change at the falling edge before it)
through eight cycles, always at the last address (all address bits 1, so it is the array's last
row whatever the column mux), and integrates the supply current over each cycle, from one rising
edge to the next:

| cycle | port | what it measures |
| --- | --- | --- |
| 0 | write D | warm-up: the first access from the operating point |
| 1 | read | warm-up: the outputs hold D |
| 2 | write D again | ``write_same``: a write that changes no bit |
| 3 | write ~D | ``write_flip``: every bit of the word changes |
| 4 | read | ``read_toggle``: the outputs go from D to ~D |
| 5 | read | ``read_hold``: the same word again, the outputs hold |
| 6, 7 | deselected (``csb`` high) | ``deselected``: the clock runs, no access |

then stops the clock, the macro deselected, and takes the mean supply power over the last
nanosecond of a 2.5 ns tail: ``leakage``, measured after real accesses (a netlist that starts
from every node at 0 V and is never accessed does not settle and reads milliwatts).
``D`` alternates 0 and 1 bit by bit, so each read senses as many zeros as ones. The reads'
outputs are checked at the end of cycles 1 and 4 (every bit), so a clock too fast for the macro
fails loudly instead of being priced.

Energies are the supply's: ``E = V_dd x (charge drawn from the supply in the cycle)``. A cycle's
window holds its falling edge and the input changes of the next cycle, which load the macro's
input flip-flops.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from synth_scripts.sram.macros import Macro, Shape, generate, models, trim
from toolkit_base.toolchain import ToolError, require, tool_failed

__all__ = [
    "Bench",
    "Measurement",
    "cell_leakage",
    "characterize",
    "deck",
    "ngspice_version",
    "run_deck",
]

#: The cycles of the testbench: (csb, web, data: "D", "~D" or None to keep), as in the module
#: docstring.
CYCLES = (
    (0, 0, "D"), (0, 1, None), (0, 0, "D"), (0, 0, "~D"),
    (0, 1, None), (0, 1, None), (1, 1, None), (1, 1, None),
)
#: What each cycle's energy is (None: warm-up).
CYCLE_NAMES = (None, None, "write_same", "write_flip", "read_toggle", "read_hold",
               "deselected_a", "deselected_b")
#: Length of the tail (clock stopped, deselected) and of its leakage window at its end, ns.
TAIL_NS, LEAK_WINDOW_NS = 2.5, 1.0
#: Simulator tolerances: looser than ngspice's defaults (reltol 1e-3), which changes the cycle
#: energies by under 0.2 % on the 16 x 32 macro and saves about a sixth of the time.
OPTIONS = ".options reltol=5e-3 abstol=1e-9 vntol=1e-4 chgtol=1e-15"


@dataclass(frozen=True)
class Bench:
    """The corner and the testbench's settings."""

    vdd: float = 1.0  # V: FreePDK45's nominal supply
    temp: float = 25.0  # C
    corner: str = "TT"
    period_ns: float = 4.0  # clock period
    slew_ns: float = 0.05  # input and clock transitions
    load_ff: float = 1.0  # on each data output: about a NanGate 45 flip-flop's D pin

    @property
    def corner_name(self) -> str:
        return f"{self.corner}_{self.vdd:g}V_{self.temp:g}C"


def _pwl(name: str, values: list[int], bench: Bench) -> str:
    """A voltage source holding ``values[k]`` (0 or 1) from cycle ``k``'s start (the falling
    clock edge ``k * period``) on, switching in ``slew_ns``."""
    p, s, v = bench.period_ns, bench.slew_ns, bench.vdd
    pts = [f"0 {values[0] * v:g}"]
    for k in range(1, len(values)):
        if values[k] != values[k - 1]:
            pts += [f"{k * p:g}n {values[k - 1] * v:g}", f"{k * p + s:g}n {values[k] * v:g}"]
    return f"V{name} {name} 0 PWL({' '.join(pts)})"


def deck(netlist: Path, top: str, shape: Shape, bench: Bench) -> str:
    """The ngspice testbench of macro ``top`` (netlist file ``netlist``) of ``shape``."""
    p, s, n = bench.period_ns, bench.slew_ns, len(CYCLES)
    d = [b % 2 for b in range(shape.bits)]
    words, last = [], d
    for _, _, data in CYCLES:
        last = last if data is None else d if data == "D" else [1 - b for b in d]
        words.append(last)
    lines = [f"* {top}: energy per access (synth_scripts.sram.spice)",
             *(f'.include "{m}"' for m in models(bench.corner)),
             f'.include "{netlist}"', f".temp {bench.temp:g}", OPTIONS,
             f"Vvdd vdd 0 {bench.vdd:g}"]
    lines += [_pwl(f"din{b}", [w[b] for w in words], bench) for b in range(shape.bits)]
    lines += [_pwl(f"a{b}", [1] * n, bench) for b in range(shape.addr_bits)]
    lines += [_pwl("csb", [c[0] for c in CYCLES], bench),
              _pwl("web", [c[1] for c in CYCLES], bench)]
    clk = ["0 0"]
    for k in range(n):
        r = k * p + p / 2
        clk += [f"{r:g}n 0", f"{r + s:g}n {bench.vdd:g}", f"{(k + 1) * p:g}n {bench.vdd:g}",
                f"{(k + 1) * p + s:g}n 0"]
    lines.append(f"Vclk clk 0 PWL({' '.join(clk)})")
    pins = ([f"din{b}" for b in range(shape.bits)] + [f"a{b}" for b in range(shape.addr_bits)]
            + ["csb", "web", "clk"] + [f"dout{b}" for b in range(shape.bits)] + ["vdd", "0"])
    lines.append(f"Xsram {' '.join(pins)} {top}")
    lines += [f"Cload{b} dout{b} 0 {bench.load_ff:g}f" for b in range(shape.bits)]
    for k in range(n):
        r = k * p + p / 2
        lines.append(f".meas tran q{k} INTEG i(vvdd) from={r:g}n to={r + p:g}n")
    end = n * p + TAIL_NS
    lines.append(f".meas tran qleak INTEG i(vvdd) from={end - LEAK_WINDOW_NS:g}n to={end:g}n")
    for k in (1, 4):  # the reads' outputs, just before the next rising edge
        at = (k + 1) * p + p / 2 - s
        lines += [f".meas tran dout{b}_c{k} FIND v(dout{b}) AT={at:g}n"
                  for b in range(shape.bits)]
    lines += [f".tran 10p {end:g}n", ".end", ""]
    return "\n".join(lines)


_MEAS = re.compile(r"^\s*(\w+)\s*=\s*([-+\d.eE]+)", re.M)


def ngspice_version() -> str:
    """``ngspice-39`` etc.: the version line of ``ngspice -v``."""
    out = subprocess.run([require("ngspice"), "-v"], capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, check=False)
    m = re.search(r"ngspice-([\w.+-]+)", out.stdout + out.stderr)
    return f"ngspice-{m.group(1)}" if m else "ngspice (unknown version)"


def run_deck(text: str, work: Path, name: str) -> tuple[dict[str, float], float]:
    """Run the deck ``text`` in batch mode in ``work`` (as ``<name>.sp``); its ``.meas``
    results and the wall seconds. A failed run or a failed measurement is a :class:`ToolError`."""
    exe = require("ngspice")
    work.mkdir(parents=True, exist_ok=True)
    path = work / f"{name}_tb.sp"
    path.write_text(text)
    start = time.monotonic()
    proc = subprocess.run([exe, "-b", path.name], cwd=work, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, check=False)
    seconds = time.monotonic() - start
    log = proc.stdout + proc.stderr
    (work / f"{name}_tb.log").write_text(log)
    if proc.returncode != 0:
        raise tool_failed(f"ngspice on {name}", proc.returncode, log)
    failed = re.findall(r"Error: measure\s+(\w+)", log)
    if failed:
        raise ToolError(f"ngspice on {name}: measurements failed: {', '.join(failed[:5])}", log)
    return {k.lower(): float(v) for k, v in _MEAS.findall(proc.stdout)}, seconds


def cell_leakage(netlist_text: str, work: Path, bench: Bench) -> float:
    """W leaked from the supply by one bit cell (``cell_1rw`` of the netlist) holding a bit,
    its word line low and both bit lines at the supply: what a trimmed cell no longer leaks
    (its inverters; its access transistors stay in the trimmed netlist)."""
    start = netlist_text.index(".SUBCKT cell_1rw ")
    cell = netlist_text[start:netlist_text.index(".ENDS", start)] + ".ENDS cell_1rw\n"
    text = "\n".join([
        "* one bit cell's leakage (synth_scripts.sram.spice.cell_leakage)",
        *(f'.include "{m}"' for m in models(bench.corner)), cell, f".temp {bench.temp:g}",
        f"Vvdd vdd 0 {bench.vdd:g}", f"Vbl bl 0 {bench.vdd:g}", f"Vbr br 0 {bench.vdd:g}",
        "Vwl wl 0 0", "Xc bl br wl vdd 0 cell_1rw",
        f".ic v(xc.q)=0 v(xc.q_bar)={bench.vdd:g}",
        ".tran 10p 2n uic", ".meas tran ileak AVG i(vvdd) from=1n to=2n", ".end", ""])
    meas, _ = run_deck(text, work, "cell_leakage")
    return -meas["ileak"] * bench.vdd


@dataclass
class Measurement:
    """One macro characterized at one corner (energies in pJ, leakage in uW)."""

    shape: Shape
    bench: Bench
    read_pJ: float
    write_pJ: float
    deselected_pJ: float
    leakage_uW: float
    cycles_pJ: dict[str, float]
    trimmed: bool
    rows: int
    columns: int
    cells_simulated: int
    cells_trimmed: int
    cell_leakage_nW: float
    analytical: dict[str, float] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict:
        """The table entry (toolkit_base/schemas/sram_macros.json, ``macros`` items)."""
        b = asdict(self.bench)
        return {
            "shape": self.shape.name, "words": self.shape.words, "bits": self.shape.bits,
            "corner": self.bench.corner_name,
            "read_pJ": _round(self.read_pJ), "write_pJ": _round(self.write_pJ),
            "deselected_pJ": _round(self.deselected_pJ), "leakage_uW": _round(self.leakage_uW),
            "cycles_pJ": {k: _round(v) for k, v in self.cycles_pJ.items()},
            "bench": b,
            "netlist": {"trimmed": self.trimmed, "rows": self.rows, "columns": self.columns,
                        "words_per_row": self.columns // self.shape.bits,
                        "cells_simulated": self.cells_simulated,
                        "cells_trimmed": self.cells_trimmed,
                        "cell_leakage_nW": _round(self.cell_leakage_nW)},
            "openram_analytical": dict(self.analytical),
            "seconds": {k: round(v, 1) for k, v in self.seconds.items()},
        }


def _round(x: float) -> float:
    return float(f"{x:.5g}")


def _check_reads(meas: dict[str, float], shape: Shape, bench: Bench, name: str) -> None:
    d = [b % 2 for b in range(shape.bits)]
    want = {1: d, 4: [1 - b for b in d]}
    bad = [f"dout{b} after cycle {k}" for k, bits in want.items()
           for b, bit in enumerate(bits)
           if (meas[f"dout{b}_c{k}"] > bench.vdd / 2) != bool(bit)]
    if bad:
        raise ToolError(f"{name}: the macro read a wrong value at a {bench.period_ns:g} ns clock "
                        f"({len(bad)} bits, e.g. {bad[0]}): take a longer --period")


def measure(macro: Macro, work: Path, bench: Bench, *, trimmed: bool = True) -> Measurement:
    """Simulate ``macro`` (trimmed to its accessed row, or whole) with :func:`deck`."""
    text = macro.netlist.read_text()
    seconds = {"openram": macro.seconds}
    cells, removed, leak_cell = macro.rows * macro.columns, 0, 0.0
    netlist = macro.netlist
    if trimmed:
        small, counts = trim(text, macro.top, {macro.rows - 1})
        netlist = work / f"{macro.top}_trimmed.sp"
        netlist.write_text(small)
        cells, removed = counts["cells_kept"], counts["cells_trimmed"]
        start = time.monotonic()
        leak_cell = cell_leakage(text, work, bench)
        seconds["cell_leakage"] = time.monotonic() - start
    name = f"{macro.top}_{'trimmed' if trimmed else 'full'}"
    meas, seconds["ngspice"] = run_deck(deck(netlist, macro.top, macro.shape, bench), work, name)
    _check_reads(meas, macro.shape, bench, name)
    cyc = {n: -meas[f"q{k}"] * bench.vdd * 1e12 for k, n in enumerate(CYCLE_NAMES) if n}
    leak_w = -meas["qleak"] / (LEAK_WINDOW_NS * 1e-9) * bench.vdd + removed * leak_cell
    return Measurement(
        macro.shape, bench,
        read_pJ=(cyc["read_toggle"] + cyc["read_hold"]) / 2,
        write_pJ=(cyc["write_same"] + cyc["write_flip"]) / 2,
        deselected_pJ=(cyc["deselected_a"] + cyc["deselected_b"]) / 2,
        leakage_uW=leak_w * 1e6, cycles_pJ=cyc, trimmed=trimmed, rows=macro.rows,
        columns=macro.columns, cells_simulated=cells, cells_trimmed=removed,
        cell_leakage_nW=leak_cell * 1e9, analytical=macro.analytical, seconds=seconds)


def characterize(shape: Shape, work: str | os.PathLike, bench: Bench | None = None, *,
                 trimmed: bool = True) -> Measurement:
    """Compile ``shape`` with OpenRAM into ``work`` and measure it (:func:`measure`)."""
    bench = Bench() if bench is None else bench
    work = Path(work).resolve()
    macro = generate(shape, work / "openram", vdd=bench.vdd, temp=bench.temp)
    return measure(macro, work, bench, trimmed=trimmed)
