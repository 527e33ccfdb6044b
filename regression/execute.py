"""Execution: generate, build (cached) and run jobs, one or many; the regression entry points.

``run_regression(...)`` is what ``matterhorn regress`` and ``matterhorn flow`` call;
``run_tile(layer, windows, sim)`` runs the tile bench on a golden layer of the caller's.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from golden_models.codespace import check_k
from regression import sim
from regression.benches import BENCH_KINDS, BENCHES
from regression.benches.tile import tile_config
from regression.cache import build_module, generate_rtl, params_key
from regression.jobs import Job, JobResult, job
from regression.planner import check_regress_T, regression_jobs
from regression.stimulus import P_IDLE, P_STALL
from regression.summary import SUMMARY_FILE, summarize, write_summary
from toolkit_base import cluster
from toolkit_base.checks import check_out_writable, check_seed, unique
from toolkit_base.files import write_atomic
from toolkit_base.toolchain import ToolError

__all__ = [
    "DEFAULT_ROOT",
    "OWN_DIRS",
    "check_windows",
    "execute_config",
    "run_job",
    "run_jobs",
    "run_regression",
    "run_tile",
    "tile_params",
]

#: Default root of generated Verilog and builds (relative to the working directory).
DEFAULT_ROOT = Path("build") / "cocotb"
#: The folders a run keeps in its root: generated Verilog, simulator builds, run folders.
OWN_DIRS = ("rtl", "sim", "runs")


def _check_seed(seed: object) -> int:
    return check_seed(seed)


def run_job(j: Job, root: Path | str = DEFAULT_ROOT, *, waves: bool = False) -> JobResult:
    """Generate, build (cached) and run one job; return its result.

    Never raises on a mismatch or a failing build: the result says it failed and why.
    """
    if j.bench not in BENCH_KINDS:
        raise ValueError(f"no bench for {j.bench!r}; available: {sorted(BENCH_KINDS)}")
    kind = BENCH_KINDS[j.bench]
    return execute_config(j, kind.params(j), lambda manifest: kind.config(j, manifest), root,
                    waves=waves)


def execute_config(
    j: Job,
    params: Mapping,
    make_config: Callable[[Mapping], dict],
    root: Path | str,
    *,
    waves: bool,
    run_name: str = "",
    generated: tuple[Path, Mapping] | None = None,
) -> JobResult:
    """Generate ``params``, build the bench's module (cached), run it on
    ``make_config(manifest)`` under ``root/runs/<run_name or job name>``.

    The one path from parameters to a checked simulation: :func:`run_job` (a planned job),
    :func:`run_tile` (a golden layer on the tile bench) and :func:`regression.layer.run_layer`
    (a layer over the mesh) all go through it. ``generated`` is the ``(rtl_dir, manifest)``
    of :func:`regression.cache.generate_rtl` when the caller has already generated ``params``.
    """
    root = Path(root).resolve()
    kind = BENCH_KINDS[j.bench]
    stage, build_s = "generate", 0.0
    try:
        rtl_dir, manifest = (generated if generated is not None
                             else generate_rtl(params, root, modules=(kind.top,)))
        config = make_config(manifest)
        stage, t0 = "build", time.perf_counter()
        if kind.build is not None:  # a harness around the module (the fast benches)
            b = kind.build(j.sim, rtl_dir, manifest, kind.top, config, root, waves)
        else:
            b = build_module(j.sim, rtl_dir, manifest, kind.top, root, waves)
        stage, t1 = "run", time.perf_counter()
        build_s = t1 - t0
        run_dir = root / "runs" / (run_name or j.name.replace("@", "-"))
        # files the bench's simulation reads from its run directory (the fast memories)
        for name, text in config.pop("run_files", {}).items():
            run_dir.mkdir(parents=True, exist_ok=True)
            write_atomic(run_dir / name, text)
        res = sim.run(b, kind.testbench, config, run_dir, seed=j.seed, waves=waves)
    except (RuntimeError, SystemExit, OSError, AssertionError, ValueError) as exc:
        # a tool or a file that failed, not a mismatch: the job says where, the cause in one
        # line with the paths under the root relative to it (a summary carries none absolute)
        kind = "" if isinstance(exc, ToolError) else f"{type(exc).__name__}: "
        text = " ".join(f"{kind}{exc}".split())
        text = text.replace(f"{root}{os.sep}", "").replace(str(root), ".")
        return JobResult(j, False, {}, f"{stage} failed: {text}", build_s, 0.0,
                         failed_in=stage)
    t2 = time.perf_counter()
    report = dict(res.report)
    if not res.verdict_reached:
        why = "; ".join(res.reasons) or f"no test ran: {res.tail(15)}"
        why = why.replace(f"{root}{os.sep}", "").replace(str(root), ".")
        return JobResult(j, False, {}, f"the bench stopped before its verdict: {why}",
                         t1 - t0, t2 - t1, failed_in="bench")
    error = ""
    if not res.passed:
        examples = report.get("mismatch_examples") or []
        error = "; ".join(examples[:3]) or f"failed tests {res.failed}: {res.tail(15)}"
    return JobResult(j, res.passed, report, error, t1 - t0, t2 - t1)


def check_windows(layer, windows) -> list:
    """``windows`` as a list if it holds at least one vector of ``layer.n_in`` codes, else raise
    ValueError naming the first window of another shape."""
    windows = list(windows)
    if not windows:
        raise ValueError("windows must hold at least one input code vector, not none")
    for i, q in enumerate(windows):
        if tuple(getattr(q, "shape", ())) != (layer.n_in,):
            raise ValueError(
                f"window {i} must be a tensor of {layer.n_in} codes (the layer's n_in), "
                f"not shape {tuple(getattr(q, 'shape', ()))}"
            )
    return windows


def tile_params(layer) -> dict:
    """:class:`rtl_gen.params.RTLConfig` arguments of a tile that holds ``layer`` whole."""
    return {
        "T": layer.out_mask.T,
        "k": layer.out_mask.k,
        "family": layer.in_mask.space.family,
        "weight_bits": layer.weight_bits,
        "n_in": layer.n_in,
        "tile_neurons": layer.n_out,
    }


def run_tile(
    layer,
    windows,
    sim_name: str,
    *,
    out_dir: Path | str = DEFAULT_ROOT,
    seed: int = 0,
    p_idle: float = P_IDLE,
    p_stall: float = P_STALL,
    name: str = "tile-layer",
    waves: bool = False,
) -> JobResult:
    """Run the generated tile on one golden layer and a list of input windows.

    The tile is generated at the layer's size (:func:`tile_params`), built (cached) on
    ``sim_name``, loaded with the layer through its load port and run by
    :mod:`cocotb_tests.tb_tile`, which compares every output event and every counter with
    :meth:`golden_models.integer_layer.IntegerLayer.run_events` of each window.

    Parameters
    ----------
    layer : golden_models.IntegerLayer
        The golden layer (weights, thresholds, masks).
    windows : sequence of torch.Tensor
        Input code vectors, one window each, ``layer.n_in`` codes of the layer's code space.
    sim_name : {"icarus", "verilator"}
    out_dir : path
        Root of the generated Verilog, builds and ``runs/<name>-<sim_name>``.
    seed : int
        Seed of the random idle and stall cycles.
    p_idle, p_stall : float
        Probability of an idle input cycle and of a low ``ready`` on the output.
    name : str
        Name of the run directory.
    waves : bool
        Dump waveforms.

    Returns
    -------
    JobResult
        ``passed``, ``error``, and the bench report: ``events_in``, ``events_out``,
        ``events_suppressed``, ``mismatches``, ``mismatch_examples``, ``counter_totals_rtl``
        and ``counter_totals_golden`` (see docs/regress.md).
    """
    from golden_models.integer_layer import IntegerLayer
    from regression.reference import TileGeometry, tile_block

    if not isinstance(layer, IntegerLayer):
        raise TypeError(f"layer must be a golden_models.IntegerLayer, not {type(layer).__name__}")
    windows = check_windows(layer, windows)
    _check_seed(seed)
    params = tile_params(layer)
    check_regress_T(params["T"])
    j = job("tile", sim_name, params, seed)

    def make_config(manifest: Mapping) -> dict:
        block = tile_block(TileGeometry.from_manifest(manifest), layer, windows, "layer")
        return tile_config(manifest, [block], seed=seed, p_idle=p_idle, p_stall=p_stall)

    return execute_config(j, params, make_config, out_dir, waves=waves,
                          run_name=f"{name}-{sim_name}")


def run_jobs(
    jobs: Sequence[Job],
    root: Path | str,
    *,
    workers: int = 1,
    waves: bool = False,
    progress: Callable[[JobResult], object] | None = None,
    scheduler: str | None = None,
) -> list[JobResult]:
    """Run ``jobs``; results in job order (:mod:`toolkit_base.cluster`).

    ``workers`` 1 runs them one after the other in this process, more on a local Dask cluster
    of that many worker processes; ``scheduler`` (``tcp://HOST:PORT``) sends them to the
    workers of an existing Dask cluster, which need ``root`` at the same path (docs/cluster.md).
    Verilog is generated first, one task per parameter set (in parallel on a cluster), so the
    jobs that share a set find it; results (pass, report, error, times) come back here.
    """
    cluster.check_workers(workers)
    cluster.check_scheduler(scheduler)
    for name in sorted({j.sim for j in jobs}):
        sim.ensure_simulator(name)
    with cluster.executor(scheduler, workers, jobs=len(jobs)) as ex:
        return _run_on(ex, jobs, root, waves=waves, progress=progress)


def _run_on(
    ex: cluster.Executor,
    jobs: Sequence[Job],
    root: Path | str,
    *,
    waves: bool,
    progress: Callable[[JobResult], object] | None,
) -> list[JobResult]:
    """:func:`run_jobs` on an open executor: the Verilog of each parameter set, then the jobs."""
    root = Path(root).resolve()
    sets = {}  # the module each job's bench needs, once per parameter set
    for j in jobs:
        kind = BENCH_KINDS[j.bench]
        p = kind.params(j)
        sets.setdefault(f"{params_key(p)}-{kind.top}", (p, kind.top))
    ex.map(functools.partial(_generate, root=root), list(sets.values()),
           names=[f"generate-{key}" for key in sets])
    return ex.map(functools.partial(run_job, root=root, waves=waves), jobs,
                  names=[j.name for j in jobs], progress=progress, what="regress")


def _generate(params_top: tuple[Mapping, str], root: Path) -> None:
    params, top = params_top
    generate_rtl(params, root, modules=(top,))


def run_regression(
    T: int | Sequence[int] = 16,
    k: int | Sequence[int] = 1,
    sims: Sequence[str] | str = ("icarus",),
    *,
    workers: int = 1,
    seed: int = 0,
    waves: bool = False,
    out_dir: Path | str = Path("build") / "regress",
    benches: Sequence[str] = BENCHES,
    quick: bool = False,
    progress: Callable[[JobResult], object] | None = None,
    scheduler: str | None = None,
) -> dict:
    """Run the regression for ``T`` and ``k`` on ``sims``; write and return the summary.

    Parameters
    ----------
    T, k : int or sequence of int
        Window length(s) and dead-zone radius (radii); repeats are removed (order kept).
    sims : str or sequence of {"icarus", "verilator"}
        Repeats removed. Every tool a simulator needs is checked before anything runs.
    workers : int
        Jobs run at a time: 1 in this process, more on a local Dask cluster of that many
        worker processes (:func:`run_jobs`).
    seed : int
        Seed of every stimulus (same seed, same vectors).
    waves : bool
        Dump waveforms (``runs/<job>/``); off by default (slow, large).
    out_dir : path
        Directory of the generated Verilog, builds, runs and ``regress_summary.json``.
    benches : sequence of str
        Subset of :data:`regression.benches.BENCHES`.
    quick : bool
        A short regression (one parameter set per ``T``, fewer vectors) for ``matterhorn
        flow``; its coverage is reported but not expected to reach 100%.
    progress : callable, optional
        Called with each :class:`JobResult` as it finishes.
    scheduler : str, optional
        ``tcp://HOST:PORT`` of an existing Dask cluster that runs the jobs (docs/cluster.md);
        checked before anything runs or is removed.

    Returns
    -------
    dict
        The summary (docs/regress.md). The summary file of an earlier run is removed when the
        run starts and the new one written (atomically) when every job has finished, so an
        interrupted run leaves no summary. A job that checked no event (the mask drops every
        code, e.g. ``T=4, k=3``) is counted in ``vacuous``, not as a pass.
    """
    Ts = unique((T,) if isinstance(T, int) else T)
    ks = unique((k,) if isinstance(k, int) else k)
    if not Ts or not ks:
        raise ValueError("T and k need at least one value each")
    for t in Ts:
        check_regress_T(t)
    for kk in ks:
        check_k(kk, min(Ts))
    sims = unique((sims,) if isinstance(sims, str) else sims)
    benches = unique(benches)
    _check_seed(seed)
    cluster.check_workers(workers)
    cluster.check_scheduler(scheduler)
    # the folders of its generated Verilog, builds and runs must be folders it can write
    check_out_writable(out_dir, subdirs=OWN_DIRS)
    jobs = regression_jobs(Ts, ks, sims, seed=seed, benches=benches, quick=quick)
    for name in sims:  # every tool, before anything runs or is removed
        sim.ensure_simulator(name)
    start = time.perf_counter()
    # Opening the executor checks that the scheduler answers (once a run), before anything
    # runs or is removed.
    with cluster.executor(scheduler, workers, jobs=len(jobs)) as ex:
        # The summary of an earlier run goes first: an interrupted or failed run leaves none.
        (Path(out_dir) / SUMMARY_FILE).unlink(missing_ok=True)
        results = _run_on(ex, jobs, out_dir, waves=waves, progress=progress)
    parameters = {
        "T": list(Ts),
        "k": list(ks),
        "sims": list(sims),
        "seed": seed,
        "workers": workers,
        "scheduler": scheduler,
        "waves": waves,
        "benches": list(benches),
        "quick": quick,
    }
    summary = summarize(results, time.perf_counter() - start, parameters)
    write_summary(summary, out_dir)
    return summary
