"""A synthesis sweep: :func:`synth_scripts.run.synthesize` over several ``T`` and ``k``.

Each point ``(T, k)`` is one job of a :func:`toolkit_base.cluster.executor`: in this process, on
a local Dask cluster of worker processes, or on the workers of an existing cluster
(docs/cluster.md). A worker runs the flow in a temporary folder of its own and sends the report
and the netlists back; the caller installs them in ``out_dir/T<T>-k<k>/`` as the point finishes
(the same files and ownership rules as ``matterhorn synth``), then writes ``synth_sweep.json``
and ``synth_sweep.md`` (one row per point, in sweep order) once every point is in. The summary
of an earlier sweep is removed when the sweep starts, so an interrupted or failed sweep leaves
none.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from synth_scripts import run
from toolkit_base import cluster
from toolkit_base.checks import unique
from toolkit_base.files import staging_dir, write_atomic
from toolkit_base.schemas import validate
from toolkit_base.tables import markdown_table

__all__ = ["SCHEMA", "SWEEP_JSON", "SWEEP_MD", "Point", "PointResult", "run_point",
           "synthesize_sweep"]

SCHEMA = "matterhorn.synth_sweep/1"
SWEEP_JSON = "synth_sweep.json"
SWEEP_MD = "synth_sweep.md"


@dataclass(frozen=True)
class Point:
    """One point of a sweep and the flow's options (checked by the caller)."""

    T: int
    k: int
    liberty: str | None = None  # a path the worker can read (same path on every machine)
    clock_ns: float = run.DEFAULT_CLOCK_NS
    blocks: bool = True
    jobs: int = 2

    @property
    def name(self) -> str:
        """The point's folder in the sweep's output: ``T16-k1``."""
        return f"T{self.T}-k{self.k}"


@dataclass
class PointResult:
    """A point's report, the tops whose netlists it wrote, and its output files (relative path
    -> bytes: ``synth_report.json``, ``synth_report.md``, ``netlists/<top>.v``)."""

    point: Point
    doc: dict
    tops: list[str]
    files: dict[str, bytes] = field(default_factory=dict)


def run_point(point: Point) -> PointResult:
    """Synthesize one point in a temporary folder of this machine; return its files."""
    lib = None if point.liberty is None else Path(point.liberty)
    if lib is not None and not lib.is_file():
        raise FileNotFoundError(
            f"liberty file {point.liberty!r} is not on this worker; sweep workers need it at "
            "the same path (docs/cluster.md)"
        )
    with tempfile.TemporaryDirectory(prefix="matterhorn-synth-") as tmp:
        doc, tops = run.synthesize_into(Path(tmp), point.T, point.k, lib,
                                        clock_ns=point.clock_ns, blocks=point.blocks,
                                        jobs=point.jobs)
        stage = Path(tmp) / "out"
        files = {
            p.relative_to(stage).as_posix(): p.read_bytes()
            for p in sorted(stage.rglob("*"))
            if p.is_file()
        }
    return PointResult(point, doc, tops, files)


def install_point(result: PointResult, dest: Path) -> None:
    """Write a point's files to ``dest`` (staged, then :func:`synth_scripts.run.install`)."""
    with staging_dir(dest.parent, prefix=".synth-") as tmp:
        for rel, data in result.files.items():
            path = tmp / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        run.install(tmp, dest, result.tops)


def _row(r: PointResult) -> dict:
    def figures(entry: dict) -> dict:
        m, en = entry.get("mapped"), entry.get("energy_pJ")
        return {
            "cells": entry["generic"]["cells"],
            "transistors": entry["generic"]["transistors"],
            "area_um2": m["area_um2"] if m else None,
            "energy_pJ": en["per_op"] if en else None,
        }

    return {
        "T": r.point.T,
        "k": r.point.k,
        "dir": r.point.name,
        "operators": {op["key"]: figures(op) for op in r.doc["operators"]},
        "blocks": {b["top"]: figures(b) for b in r.doc["blocks"]},
    }


def summarize(results: Sequence[PointResult], parameters: dict) -> dict:
    """The sweep's summary: one row per point (sweep order) with cells, transistors, area and
    energy per operation of every operator and block."""
    return {"schema": SCHEMA, "parameters": dict(parameters),
            "points": [_row(r) for r in results]}


def markdown(summary: dict) -> str:
    """The summary as a table: one line per point and operator."""
    rows = []
    for p in summary["points"]:
        for key, f in {**p["operators"], **p["blocks"]}.items():
            rows.append([p["T"], p["k"], key, f["cells"], f["transistors"],
                         "-" if f["area_um2"] is None else f"{f['area_um2']:.1f}",
                         "-" if f["energy_pJ"] is None else f"{f['energy_pJ']:.4g}"])
    head = ["T", "k", "design", "cells", "transistors", "area um^2", "E/op pJ"]
    return "\n".join(["# Synthesis sweep", "", *markdown_table(head, rows)]) + "\n"


def synthesize_sweep(
    T: int | Sequence[int],
    k: int | Sequence[int],
    out_dir: str | os.PathLike = "build/synth",
    *,
    liberty_file: str | os.PathLike | None = None,
    clock_ns: float = run.DEFAULT_CLOCK_NS,
    blocks: bool = True,
    jobs: int = 2,
    environ: dict | None = None,
    default_liberty: bool = True,
    scheduler: str | None = None,
    workers: int = 1,
    progress: Callable[[PointResult], object] | None = None,
) -> dict:
    """Synthesize every ``(T, k)`` of ``T`` x ``k``; write and return the sweep's summary.

    Parameters are those of :func:`synth_scripts.run.synthesize` (every point is checked
    before any runs), plus:

    scheduler : str, optional
        ``tcp://HOST:PORT`` of an existing Dask cluster; its workers need the toolkit, Yosys
        (and OpenSTA with a liberty) and the liberty at the same path.
    workers : int
        Without ``scheduler``: 1 runs the points here one after the other, more on a local
        Dask cluster of that many worker processes.
    progress : callable, optional
        Called with each :class:`PointResult` once its files are installed.
    """
    Ts = unique((T,) if isinstance(T, int) else T)
    ks = unique((k,) if isinstance(k, int) else k)
    if not Ts or not ks:
        raise ValueError("T and k need at least one value each")
    lib_path = None
    for t in Ts:
        for kk in ks:
            lib_path = run.check_options(t, kk, out_dir, liberty_file=liberty_file,
                                         clock_ns=clock_ns, blocks=blocks, jobs=jobs,
                                         environ=environ, default_liberty=default_liberty)
    clock_ns = run.check_clock(clock_ns)
    lib = None if lib_path is None else str(Path(lib_path).resolve())
    points = [Point(t, kk, lib, clock_ns, blocks, jobs) for t in Ts for kk in ks]
    out = Path(out_dir)

    def done(r: PointResult) -> None:
        install_point(r, out / r.point.name)
        if progress is not None:
            progress(r)

    # opening the executor checks that the scheduler answers (once), before anything is removed
    with cluster.executor(scheduler, workers, jobs=len(points)) as ex:
        for name in (SWEEP_JSON, SWEEP_MD):  # an interrupted or failed sweep leaves no summary
            (out / name).unlink(missing_ok=True)
        results = ex.map(run_point, points, names=[f"synth-{p.name}" for p in points],
                         progress=done, what="synth sweep")
    summary = summarize(results, {
        "T": list(Ts), "k": list(ks), "clock_ns": clock_ns, "blocks": blocks,
        "liberty": (results[0].doc["liberty"] or {}).get("library"),
        "workers": workers, "scheduler": scheduler,
    })
    validate(summary, "synth_sweep", SWEEP_JSON)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / SWEEP_MD, markdown(summary))
    write_atomic(out / SWEEP_JSON, json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return summary
