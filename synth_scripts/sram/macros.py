"""An SRAM macro's netlist from OpenRAM, and its trimmed form for simulation.

OpenRAM (the PyPI package ``openram``, BSD-3-Clause) compiles a single-port (``1rw``) SRAM in the
FreePDK45 technology it ships, the process NanGate 45's cells are drawn for. Only the netlist is
made (``netlist_only``: no layout, no DRC/LVS), with OpenRAM's analytical timing model (its .lib
is not an energy source: docs/sram_macros.md).

**Trimming.** An access drives one word line; the cells of every other row load the bit lines
only through their access transistors (gate at 0 V, the word line held low), and otherwise only
leak. :func:`trim` keeps the accessed row's cells whole and replaces, per bit line, the other
rows' access transistors by one transistor of the same size with a multiplier, its inner node at
the rail the stored bit would put it at (half the rows a 0, half a 1). The bit lines keep their
capacitance (junctions, overlap) and their leakage through the access transistors; the cells'
own leakage (their inverters) is added back from a one-cell simulation
(:func:`synth_scripts.sram.spice.cell_leakage`). The dummy and replica cells, the decoders, the
drivers, the sense amplifiers and the control stay as OpenRAM made them. A 256-row array keeps
1/256 of its cells: the simulation then costs about the same for every depth.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from toolkit_base.toolchain import ToolError, ToolNotFoundError, tool_failed

__all__ = [
    "MACRO_SHAPES",
    "OPENRAM",
    "TECH",
    "Macro",
    "analytical",
    "Shape",
    "generate",
    "models",
    "openram_config",
    "openram_dir",
    "openram_version",
    "trim",
]

#: The PyPI package and version the shipped table was made with.
OPENRAM = "openram==1.2.48"
#: OpenRAM's technology of the macros: FreePDK45, the process of NanGate 45's cells.
TECH = "freepdk45"
#: Transistor models of the nominal (TT) corner, inside the OpenRAM package.
MODEL_FILES = ("NMOS_VTG.inc", "PMOS_VTG.inc")


@dataclass(frozen=True, order=True)
class Shape:
    """A macro's words x bits (one read-write port)."""

    words: int
    bits: int

    def __post_init__(self) -> None:
        for name in ("words", "bits"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"macro {name} must be a positive integer, not {v!r}")
        if self.words < 16 or self.words & (self.words - 1):
            raise ValueError(f"macro words must be a power of two >= 16 (OpenRAM's smallest "
                             f"array), not {self.words}")

    @property
    def name(self) -> str:
        return f"{self.words}x{self.bits}"

    @property
    def addr_bits(self) -> int:
        return (self.words - 1).bit_length()

    @classmethod
    def parse(cls, text: str) -> Shape:
        """``"64x32"`` -> ``Shape(64, 32)``; anything else a one-line ``ValueError``."""
        m = re.fullmatch(r"\s*(\d+)\s*x\s*(\d+)\s*", str(text))
        if m is None:
            raise ValueError(f"a macro shape is WORDSxBITS (e.g. 64x32), not {text!r}")
        return cls(int(m.group(1)), int(m.group(2)))


#: The macro sizes every memory is banked into (synth_scripts.sram.shapes.bank): 32-bit words,
#: 16, 64 and 256 deep. OpenRAM compiles them without a column mux or with a small one, and the
#: shipped table holds each.
MACRO_SHAPES = (Shape(16, 32), Shape(64, 32), Shape(256, 32))


def openram_dir() -> Path:
    """The installed OpenRAM package's folder, or :class:`ToolNotFoundError` (one line)."""
    import importlib.util

    spec = importlib.util.find_spec("openram")
    if spec is None or spec.origin is None:
        raise ToolNotFoundError(f"OpenRAM is not installed (the PyPI package openram); install "
                                f"it with: pip install {OPENRAM} (./run installs it)")
    return Path(spec.origin).parent


def openram_version() -> str:
    """The installed OpenRAM's version (its ``VERSION`` file)."""
    return (openram_dir() / "VERSION").read_text().strip()


def models(corner: str = "TT") -> list[Path]:
    """The transistor model files of FreePDK45 at ``corner`` (only ``TT``: nominal)."""
    if corner != "TT":
        raise ValueError(f"only the nominal corner TT is characterized, not {corner!r}")
    folder = openram_dir() / "technology" / TECH / "models" / "tran_models" / "models_nom"
    return [folder / f for f in MODEL_FILES]


@dataclass(frozen=True)
class Macro:
    """A compiled macro: its netlist, top module, rows and columns of its array, and the
    seconds OpenRAM took."""

    shape: Shape
    netlist: Path
    top: str
    rows: int
    columns: int
    seconds: float
    analytical: dict[str, float]

    @property
    def words_per_row(self) -> int:
        return self.columns // self.shape.bits


def openram_config(shape: Shape, out: str | os.PathLike, *, vdd: float, temp: float,
                   analytical_delay: bool = True, extra: tuple[str, ...] = ()) -> str:
    """OpenRAM's configuration file of ``shape`` in FreePDK45 at one corner (TT, ``vdd``,
    ``temp``): ``netlist_only``, no DRC/LVS, no supply routing, no conda, one thread; its output
    ``out/sram_<words>x<bits>``. ``analytical_delay=False`` and ``extra`` lines (``spice_name =
    "ngspice"``, ...) set up its own characterizer (benchmarks/bench_sram.py)."""
    lines = [f"word_size = {shape.bits}", f"num_words = {shape.words}",
             f'tech_name = "{TECH}"', "nominal_corner_only = True", 'process_corners = ["TT"]',
             f"supply_voltages = [{vdd}]", f"temperatures = [{temp}]", "netlist_only = True",
             "check_lvsdrc = False", "route_supplies = False", "use_conda = False",
             f"analytical_delay = {analytical_delay}", f'output_path = "{out}/"',
             f'output_name = "sram_{shape.words}x{shape.bits}"', "num_threads = 1", *extra]
    return "\n".join(lines) + "\n"


def generate(shape: Shape, work: str | os.PathLike, *, vdd: float = 1.0,
             temp: float = 25.0) -> Macro:
    """Compile ``shape`` with OpenRAM into ``work`` (a netlist, ``netlist_only``, no DRC/LVS).

    Runs ``sram_compiler.py`` of the installed package in a child process (OpenRAM keeps its
    options in module globals). Raises :class:`ToolError` when it fails or writes no netlist.
    """
    root = openram_dir()
    work = Path(work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    name = f"sram_{shape.words}x{shape.bits}"
    cfg = work / f"{name}_config.py"
    cfg.write_text(openram_config(shape, work, vdd=vdd, temp=temp))
    # its temporary files in the work folder, not /tmp (it empties its folder, keeps it)
    env = dict(os.environ, OPENRAM_HOME=str(root / "compiler"),
               OPENRAM_TECH=str(root / "technology"), OPENRAM_TMP=str(work / "openram_temp"))
    start = time.monotonic()
    proc = subprocess.run([sys.executable, str(root / "sram_compiler.py"), str(cfg)], cwd=work,
                          env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                          check=False)
    seconds = time.monotonic() - start
    netlist = work / f"{name}.sp"
    if proc.returncode != 0 or not netlist.is_file():
        raise tool_failed(f"OpenRAM on {shape.name}", proc.returncode or 1,
                          proc.stdout + proc.stderr)
    rows, columns = array_size(netlist.read_text(), name)
    libs = sorted(work.glob(f"{name}_TT_*.lib"))
    if not libs:
        raise ToolError(f"OpenRAM on {shape.name} wrote no .lib into {work}")
    return Macro(shape, netlist, name, rows, columns, seconds, analytical(libs[0].read_text()))


#: OpenRAM's default event frequency (technology/freepdk45/tech/tech.py,
#: ``spice["default_event_frequency"]``, MHz): the activity its analytical power assumes.
EVENT_MHZ = 100.0


def analytical(lib_text: str) -> dict[str, float]:
    """OpenRAM's analytical model of a macro, from the .lib it writes (``analytical_delay``):
    the clock pin's internal power (one value for reads, writes and deselected cycles, mW at
    :data:`EVENT_MHZ`), read as an energy per access (``access_pJ`` = mW / MHz x 1e3), and its
    leakage (``cell_leakage_power``, mW, a fixed figure per cell)."""
    pin = lib_text[lib_text.index("pin(clk0)"):]
    power = float(re.search(r'rise_power\(scalar\)\{\s*values\("([^"]+)"\)', pin).group(1))
    leak = float(re.search(r"(?<!_)cell_leakage_power\s*:\s*([\d.eE+-]+)", lib_text).group(1))
    return {"clk_internal_power_mW": power, "event_MHz": EVENT_MHZ,
            "access_pJ": float(f"{power / EVENT_MHZ * 1e3:.5g}"),
            "leakage_uW": float(f"{leak * 1e3:.5g}")}


_CELL = re.compile(r"Xbit_r(\d+)_c(\d+)$")


def _statements(text: str) -> list[str]:
    """The netlist's lines with SPICE continuation lines (``+ ...``) joined."""
    out: list[str] = []
    for line in text.split("\n"):
        if line.startswith("+") and out:
            out[-1] += " " + line[1:].strip()
        else:
            out.append(line.rstrip())
    return out


def array_size(text: str, top: str) -> tuple[int, int]:
    """Rows and columns of the macro's bit-cell array (``<top>_bitcell_array``)."""
    rows, cols, inside = set(), set(), False
    name = f"{top}_bitcell_array"
    for st in _statements(text):
        f = st.split()
        if f[:2] == [".SUBCKT", name]:
            inside = True
        elif inside and f[:1] == [".ENDS"]:
            break
        elif inside and f and (m := _CELL.match(f[0])):
            rows.add(int(m.group(1)))
            cols.add(int(m.group(2)))
    if not rows:
        raise ToolError(f"OpenRAM netlist of {top} has no bit-cell array {name}")
    return len(rows), len(cols)


def access_transistor(text: str) -> tuple[str, str]:
    """The model and size (``W=.. L=..``) of the bit cell's (``cell_1rw``) access transistor:
    the one whose drain is the bit line ``bl``."""
    inside = False
    for st in _statements(text):
        f = st.split()
        if f[:2] == [".SUBCKT", "cell_1rw"]:
            inside = True
        elif inside and f[:1] == [".ENDS"]:
            break
        elif inside and f and f[0].upper().startswith("M") and len(f) >= 6 and f[1] == "bl":
            return f[5], " ".join(f[6:])
    raise ToolError("OpenRAM netlist has no bit cell cell_1rw with an access transistor on bl")


def trim(text: str, top: str, keep_rows: set[int]) -> tuple[str, dict[str, int]]:
    """The netlist ``text`` of macro ``top`` with every bit cell of a row outside ``keep_rows``
    replaced by its access transistors, merged per bit line (module docstring).

    Returns the trimmed netlist and counts: ``cells_kept``, ``cells_trimmed``.
    """
    name = f"{top}_bitcell_array"
    out, inside, loads, kept, removed = [], False, Counter(), 0, 0
    for st in _statements(text):
        f = st.split()
        if f[:2] == [".SUBCKT", name]:
            inside = True
        elif inside and f[:1] == [".ENDS"]:
            for (net, high), n in sorted(loads.items()):
                rail = "vdd" if high else "gnd"
                out.append(f"Xload_{net}_{rail} {net} {rail} gnd {top}_cell_load mult={n}")
            inside = False
        elif inside and f and (m := _CELL.match(f[0])) and f[-1] == "cell_1rw":
            row = int(m.group(1))
            if row in keep_rows:
                kept += 1
            else:
                # ports: bl br wl vdd gnd; a stored 1 puts Q (the bl side) at vdd
                one = bool(row % 2)
                loads[(f[1], one)] += 1
                loads[(f[2], not one)] += 1
                removed += 1
                continue
        out.append(st)
    if kept + removed == 0:
        raise ToolError(f"OpenRAM netlist of {top} has no bit-cell array {name} to trim")
    model, size = access_transistor(text)
    load = [(f"* {removed} bit cells outside rows {sorted(keep_rows)} trimmed to their access "
             "transistors (synth_scripts.sram.macros.trim)"),
            f".SUBCKT {top}_cell_load bl q gnd mult=1",
            f"MA bl gnd q gnd {model} {size} m={{mult}}",
            f".ENDS {top}_cell_load"]
    return "\n".join(load + out) + "\n", {"cells_kept": kept, "cells_trimmed": removed}
