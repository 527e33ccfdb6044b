"""Running Yosys and OpenSTA on one design at a time, and reading what they wrote.

Scripts come from the ``.ys``/``.tcl`` templates beside this module. Every tool runs in its
own working directory with relative file names, so nothing it writes names a path of this
machine.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from synth_scripts import parse
from synth_scripts.gatelevel.liberty import Liberty
from toolkit_base import toolchain


def template(name: str) -> str:
    """The text of a script template shipped with this package."""
    return resources.files("synth_scripts").joinpath(name).read_text(encoding="utf-8")


#: A tool ran but failed: one line (what, exit status, its last line); ``detail`` has the log's end.
ToolError = toolchain.ToolError


#: The one mapping onto a cell library (:func:`mapping`).
MAP_SCRIPT = "map_liberty.ys"


#: ABC's default script for a liberty (Yosys's ``ABC_COMMAND_LIB``) without its equivalence
#: steps (``&fraig -x``, ``scorr``), as ``abc -script`` takes it (commas for blanks).
ABC_NO_FRAIG = "+strash;dc2;dretime;strash;&get,-n;&dch,-f;&nf,{D};&put"


def mapping(lib: Liberty, workdir: Path, *, no_fraig: bool = False) -> str:
    """The Yosys commands that map a design synthesized to generic cells onto ``lib``, for a
    script run in ``workdir`` (the liberty named by a relative path): ``map_liberty.ys``, the
    one mapping script of synthesis, the whole system and the gate-level netlists.

    ``no_fraig``: ABC's script without ``&fraig -x`` and ``scorr`` (:data:`ABC_NO_FRAIG`), for
    a design with wide multipliers those do not finish on: the add+LayerNorm unit of a block of
    32 channels ran over an hour in them; without them it maps in minutes, and at 8 channels,
    where both finish, to the same cells (28,074 against 28,000)."""
    script = f"-script {ABC_NO_FRAIG} " if no_fraig else ""
    return template(MAP_SCRIPT).format(liberty=relative(lib.path, workdir), abc_script=script)


def relative(path: Path, workdir: Path) -> str:
    """``path`` relative to ``workdir``, with ``/``: how scripts run there name a file."""
    return Path(os.path.relpath(path, workdir)).as_posix()


def run_tool(cmd: list[str], cwd: Path, log: Path, what: str) -> str:
    """Run ``cmd`` in ``cwd`` (no standard input), write its output to ``log`` and return it.

    Raises
    ------
    ToolError
        It exited with a non-zero status: one line naming ``what``, the status (and signal)
        and its last line.
    """
    proc = subprocess.run(
        cmd, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
    )
    text = proc.stdout + proc.stderr
    log.write_text(text, encoding="utf-8")
    if proc.returncode != 0:
        raise toolchain.tool_failed(what, proc.returncode, text)
    return text


@dataclass
class Synthesized:
    """What Yosys gave for one design."""

    top: str
    workdir: Path
    generic: dict  # cells, cells_by_type, transistors
    depth: int
    mapped: dict | None = None  # cells, cells_by_type (library cells)
    area_um2: float | None = None
    netlist: Path | None = None
    flops: int = 0  # flip-flops of the mapped netlist


def synthesize(
    top: str, read_commands: list[str], workdir: Path, lib: Liberty | None
) -> Synthesized:
    """Run Yosys on one design in ``workdir``: generic statistics, then mapping if ``lib``."""
    yosys = toolchain.require("yosys")
    workdir.mkdir(parents=True, exist_ok=True)
    script = "\n".join(read_commands) + "\n" + template("synth_generic.ys").format(top=top)
    if lib is not None:
        script += mapping(lib, workdir)
        script += template("synth_liberty.ys").format(liberty=relative(lib.path, workdir))
    (workdir / "synth.ys").write_text(script, encoding="utf-8")
    run_tool([yosys, "-q", "-s", "synth.ys"], workdir, workdir / "yosys.log", f"yosys on {top}")
    generic = parse.stat_json(
        _read(workdir / "generic_stat.json"), top, "yosys stat -json -tech cmos"
    )
    if "transistors" not in generic:
        raise parse.ReportError("yosys stat -tech cmos: no 'estimated_num_transistors'")
    out = Synthesized(
        top, workdir, generic, parse.ltp_length(_read(workdir / "generic_ltp.txt"), top)
    )
    if lib is not None:
        out.mapped = parse.stat_json(_read(workdir / "liberty_stat.json"), top, "yosys stat -json")
        out.area_um2 = parse.liberty_area(_read(workdir / "liberty_stat.txt"), top)
        out.netlist = workdir / "netlist.v"
        out.flops = sum(
            n for cell, n in out.mapped["cells_by_type"].items() if cell in lib.sequential
        )
    return out


def _read(path: Path) -> str:
    if not path.is_file():
        raise parse.ReportError(f"tool output {path.name!r} was not written")
    return path.read_text(encoding="utf-8")


_PORT = re.compile(r"^\s*input\s+(?:\[(\d+):(\d+)\]\s+)?(\\\S+|\w+)\s*;", re.MULTILINE)


def netlist_inputs(text: str) -> dict[str, int]:
    """Input ports of a Yosys-written netlist and their widths (escaped names unescaped)."""
    out = {}
    for hi, lo, name in _PORT.findall(text):
        width = abs(int(hi) - int(lo)) + 1 if hi else 1
        out[name[1:] if name.startswith("\\") else name] = width
    if not out:
        raise parse.ReportError("netlist declares no input ports")
    return out


def _bits(name: str, width: int) -> list[str]:
    return [name] if width == 1 else [f"{name}[{i}]" for i in range(width)]


def activity_commands(ports: dict[str, list]) -> list[str]:
    """``set_power_activity`` lines for the input ports (per bit, measured statistics).

    ``ports`` maps a port to its per-bit :class:`activity.BitActivity` list (LSB first).
    OpenSTA 2.0.17 propagates activity from these through the logic and across flip-flops
    (D to Q); its ``-pins`` option is broken (it calls an undefined ``get_pins_error``) and
    user activity on a flip-flop output does not change the propagation, so input ports are
    the one place measured activity enters.
    """
    lines = []
    for port, bits in ports.items():
        for name, b in zip(_bits(port, len(bits)), bits, strict=True):
            lines.append(
                f"set_power_activity -input_ports [get_ports {{{name}}}] "
                f"-activity {b.activity:.6f} -duty {b.duty:.6f}"
            )
    return lines


def power(
    top: str,
    netlist: Path,
    activities: list[str],
    lib: Liberty,
    period: float,
    workdir: Path,
    *,
    clocked: bool = True,
) -> dict:
    """Run OpenSTA on one mapped design: power table and worst slack at clock ``period``.

    One process per design: designs linked one after another in a single OpenSTA 2.0.17 session
    do not give the same power as alone (state carries over), so each gets a fresh session.
    ``clocked=False`` is for combinational designs: the clock is virtual (it sets the period
    that activities refer to) and there is no slack to report (``worst_slack`` is None).
    """
    sta = toolchain.require("sta")
    workdir.mkdir(parents=True, exist_ok=True)
    script = f"read_liberty {relative(lib.path, workdir)}\n"
    script += template("power.tcl").format(
        netlist=relative(netlist, workdir),
        top=top,
        period=f"{period:g}",
        clock_ports="[get_ports clk]" if clocked else "",
        # a virtual clock applies input activity only to ports timed against it
        activities="\n".join(
            activities if clocked else ["set_input_delay 0 -clock clk [all_inputs]", *activities]
        ),
    )
    (workdir / "power.tcl").write_text(script + "exit\n", encoding="utf-8")
    text = run_tool(
        [sta, "-no_init", "-no_splash", "-exit", "power.tcl"],
        workdir,
        workdir / "sta.log",
        f"sta on {top}",
    )
    sections = parse.sta_sections(text)
    if top not in sections:
        raise parse.ReportError(f"OpenSTA output has no section for {top!r} (truncated?)")
    sec = sections[top]
    slack = parse.worst_slack(sec, top) if clocked else None
    return {"power_W": parse.power(sec, top), "worst_slack": slack}
