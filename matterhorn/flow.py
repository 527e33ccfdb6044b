"""The end-to-end flow: generate, regress, measure, synthesize, estimate energy, compare, report.

``run_flow`` runs the stages in order (each a step of the console's progress,
:mod:`toolkit_base.console`) and writes one report folder::

    OUT/
      summary.md           the verdict first, then the tables and plots of the run
      flow.json            every figure of the run, with where it came from
      logs/<stage>.log     the traceback of a stage that failed (the report links it)
      rtl/                 matterhorn generate: Verilog + manifest.json
      regress/             matterhorn regress: summary.json (+ build dirs)
      stats/               measured spike statistics of the golden QNN block
      synth/               matterhorn synth: synth_report.json / .md
      energy/              matterhorn energy: paper rates x {paper, synthesized} unit costs,
      energy_measured/     and measured rates x the best unit costs available
      compare/             matterhorn compare: dense INT4 vs TTFS vs M-TTFS in our gates, on
                           a random layer and a real model's (MiniLM's when installed)

Every stage's figures are measured in this run, except the inputs the summary labels as the
paper's (its printed rates and its 22 nm unit costs, used as the reference rows).
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from golden_models.codespace import check_k, check_T
from toolkit_base.checks import check_file, check_out_dir, check_rtl_T, check_seed, unique

#: Stage names in run order.
STAGES = ("generate", "regress", "stats", "synth", "energy", "compare", "block", "network")
#: What each stage does, in a few words (``flow --help``, docs/flow.md, docs/quickstart.md;
#: tests/test_cli_console.py compares the three with :data:`STAGES`).
STAGE_SUMMARY = {
    "generate": "Verilog of every block and manifest.json",
    "regress": "the cocotb regression against the golden model",
    "stats": "spike statistics of the golden QNN block",
    "synth": "Yosys (+ OpenSTA) unit costs and block areas",
    "energy": "the paper's energy model with paper and synthesized costs",
    "compare": "dense INT4 vs TTFS vs M-TTFS in our gates, random and real layer",
    "block": "a whole encoder block (the small random one) through its hardware pieces",
    "network": "a whole network (the small random one, two blocks) block after block",
}
#: The folder of the failed stages' tracebacks, inside the report folder.
LOGS = "logs"
#: Input windows per workload of the flow's compare stage (``matterhorn compare`` takes 16).
COMPARE_WINDOWS = 8
#: Sentences of the flow's block stage (``matterhorn block`` takes 8): the shortest of the
#: evaluation split.
BLOCK_SENTENCES = 1
#: Evaluation sentences the flow's network stage measures the quality on (``matterhorn
#: network`` takes the whole split).
NETWORK_EVALUATION = 64
SIMULATORS = ("icarus", "verilator")


@dataclass
class FlowConfig:
    """Parameters of one flow run (validated on construction).

    Parameters
    ----------
    T, k : int
        Time steps (power of two, 2..64 for the RTL) and dead-zone radius ``0..T-1``.
    out_dir : path
        The report folder. Only the flow's own files are replaced (docs/reliability.md): each
        stage replaces the files it writes in its subfolder and leaves every other file there.
    sims : tuple of str
        Simulators of the regression stage (repeats removed).
    seed : int
        Seed of every random stimulus.
    liberty : path, optional
        Liberty for area and power (else ``PDK_ROOT``, else the generic flow only).
    clock_ns : float
        Clock period of the power analysis.
    rates_file : path, optional
        A statistics file (``matterhorn stats`` or golden statistics) whose measured rates
        replace the golden block's in the measured-energy stage.
    model : str or path, optional
        The real workload of the compare stage: ``"minilm"`` (the default; left out, with a
        note saying how to get it, when the models extra is not installed), a BERT-family
        model folder, or None (the random workload only).
    skip : tuple of str
        Stages not to run (for quick looks; the summary says which were skipped).
    """

    T: int = 16
    k: int = 1
    out_dir: Path = Path("build/flow")
    sims: tuple[str, ...] = ("icarus",)
    seed: int = 1
    liberty: Path | None = None
    clock_ns: float = 10.0
    rates_file: Path | None = None
    skip: tuple[str, ...] = ()
    model: str | Path | None = "minilm"

    def __post_init__(self) -> None:
        check_rtl_T(check_T(self.T))
        check_k(self.k, self.T)
        self.out_dir = Path(check_out_dir(self.out_dir))
        self.sims = unique(self.sims)
        self.skip = unique(self.skip)
        check_seed(self.seed)
        for sim in self.sims:
            if sim not in SIMULATORS:
                raise ValueError(f"simulator must be one of {SIMULATORS}, not {sim!r}")
        if not self.sims:
            raise ValueError("at least one simulator is needed")
        for stage in self.skip:
            if stage not in STAGES:
                raise ValueError(f"stage must be one of {STAGES}, not {stage!r}")
        if self.liberty is not None:
            self.liberty = check_file(self.liberty, "liberty file")
        if self.rates_file is not None:
            self.rates_file = check_file(self.rates_file, "rates file")
        from synth_scripts.run import check_clock

        self.clock_ns = check_clock(self.clock_ns)


@dataclass
class FlowResult:
    config: FlowConfig
    stages: dict[str, dict] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return all(s.get("status") in ("ok", "skipped") for s in self.stages.values())


def _relative_paths(text: str, root: Path) -> str:
    """``text`` with the report folder's absolute path written relative to it."""
    for prefix in {str(root.resolve()), str(root.absolute())}:
        text = text.replace(prefix + os.sep, "").replace(prefix, ".")
    return text


# ---------------------------------------------------------------------------------------------
# stages


def stage_generate(cfg: FlowConfig, out: Path) -> dict:
    from rtl_gen.generate import generate
    from rtl_gen.params import RTLConfig

    rtl = RTLConfig(T=cfg.T, k=cfg.k)
    manifest = generate(rtl, out)
    return {
        "files": sorted(p.name for p in out.iterdir() if p.suffix in (".v", ".json")),
        "modules": sorted(manifest.get("modules", {})),
        "parameters": manifest.get("parameters", {}),
        "widths": manifest.get("derived", {}),
    }


def stage_regress(cfg: FlowConfig, out: Path, say: Callable[[str], None]) -> dict:
    """A short regression (one parameter set, every bench) on the chosen simulators."""
    from regression import run_regression
    from regression.summary import failure_counts, job_line

    def job_done(r) -> str:
        line = job_line(r, f"build {r.build_seconds:.1f}s, run {r.run_seconds:.1f}s")
        say(f"regress: {line}")
        return line  # the step's line on the console (a failed job's always shown)

    summary = run_regression(
        T=cfg.T, k=cfg.k, sims=cfg.sims, seed=cfg.seed, out_dir=out, quick=True,
        progress=job_done,
    )
    # the stage's own status says ok/failed: the summary's (passed) would overwrite it
    figures = {key: value for key, value in summary.items() if key not in ("jobs", "status")}
    if summary["status"] == "vacuous":
        raise RuntimeError(
            f"regression checked nothing: {summary['vacuous']} of {summary['configurations']} "
            f"jobs compared no event (the mask drops every code at T={cfg.T}, k={cfg.k})"
        )
    if summary["status"] != "passed":
        raise RuntimeError(f"regression failed: {failure_counts(summary)} (see "
                           f"{out.name}/regress_summary.json)")
    return figures


def stage_stats(cfg: FlowConfig, out: Path) -> dict:
    """Spike statistics of the golden QNN encoder block (eight positions) on a peaked input."""
    from golden_models.encoder import QNNEncoderBlock
    from golden_models.statistics import write_stats

    block = QNNEncoderBlock(T=cfg.T, k=cfg.k, seed=cfg.seed)
    x = block.random_input(batch=4, seq=16, seed=cfg.seed)
    block.calibrate(x)
    positions = block.stats(x)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "golden_stats.json"
    write_stats(path, positions)
    return {
        "file": path.name,
        "positions": {
            p.name: {
                "family": p.space.family,
                "i_max": p.i_max,
                "p_q0": round(p.p_q0, 6),
                "ttfs_rate_percent": round(100 * p.ttfs().rate, 4),
                f"mttfs_k{cfg.k}_rate_percent": round(100 * p.mttfs(cfg.k).rate, 4),
            }
            for p in positions
        },
    }


def stage_synth(cfg: FlowConfig, out: Path) -> dict:
    from energy_model.unit_costs import borrowed
    from synth_scripts.run import synthesize

    report = synthesize(cfg.T, cfg.k, out, liberty_file=cfg.liberty, clock_ns=cfg.clock_ns)
    return {
        "report": "synth_report.json",
        "liberty": report.get("liberty"),
        "tools": report.get("tools"),
        "unit_costs_pJ": {
            key: entry.get("value") for key, entry in report.get("unit_costs_pJ", {}).items()
        },
        # at the library's own node, and which costs are the paper's (not synthesized here)
        "unit_costs_pJ_native": {
            key: entry.get("value")
            for key, entry in report.get("unit_costs_pJ_native", {}).items()
        },
        "borrowed": sorted(key for key, entry in report.get("unit_costs_pJ", {}).items()
                           if borrowed(entry.get("provenance", ""))),
    }


def stage_compare(cfg: FlowConfig, out: Path, say: Callable[[str], None]) -> dict:
    from matterhorn.compare import compare
    from matterhorn.compare_report import verdict

    if cfg.k > 2:
        return {"skipped": f"k={cfg.k}: the comparison covers k = 0, 1, 2"}
    from matterhorn.compare_report import verdict_rows

    libs = [cfg.liberty] if cfg.liberty is not None else None
    doc = compare(cfg.T, cfg.k, out, liberties=libs, model=cfg.model, windows=COMPARE_WINDOWS,
                  seed=cfg.seed, clock_ns=cfg.clock_ns, progress=say)
    return {
        "report": "compare/compare.md",
        "verdicts": {f"{e['technology']}, {w['name']}": verdict(w, cfg.k)
                     for e in doc["pdks"] for w in e["workloads"]},
        "verdict": verdict_rows(doc),
        "movement_error": movement_errors(doc),
        "missing": doc["missing"],
    }


def stage_block(cfg: FlowConfig, out: Path) -> dict:
    """The small random block through its hardware pieces as dense INT4 and M-TTFS at ``k``
    (``matterhorn block``, docs/rtl_block.md); fails on any mismatch."""
    from matterhorn import block, block_report

    if cfg.k > 2:
        return {"skipped": f"k={cfg.k}: the block covers k = 0, 1, 2"}
    st = block.setup("random", BLOCK_SENTENCES)
    doc = block.run(st, block.check_designs(("dense", "mttfs"), (cfg.k,)))
    block.write(doc, out)
    bad = {d["design"]: d["mismatches"] for d in doc["designs"] if d["mismatches"]}
    if bad:
        raise RuntimeError(f"the block's pieces differ from the integer QNN: {bad} mismatches "
                           "(block/block.md)")
    spiking = next(d for d in doc["designs"] if d["design"] == f"mttfs-k{cfg.k}")
    rates = spiking["rates_percent"].values()
    return {"report": "block/block.md", "verdict": block_report.verdict(doc),
            "tokens": doc["tokens"], "checked": sum(d["checked"] for d in doc["designs"]),
            "model_ratio": block_report.ratio(doc, f"mttfs-k{cfg.k}"),
            # the share of values that send an event (rate per step times T), over positions
            "events_per_value": round(sum(rates) / len(rates) * cfg.T / 100, 4)}


def stage_network(cfg: FlowConfig, out: Path) -> dict:
    """The small random network (two blocks) on its shortest evaluation sentence, block after
    block through the hardware pieces in the Amaranth simulator, as dense INT4 and M-TTFS at
    ``k`` (``matterhorn network --model random --rtl amaranth``, docs/network.md); fails on
    any mismatch."""
    from matterhorn import block, network, network_report

    if cfg.k > 2:
        return {"skipped": f"k={cfg.k}: the network covers k = 0, 1, 2"}
    designs = block.check_designs(("dense", "mttfs"), (cfg.k,))
    st = network.setup("random", BLOCK_SENTENCES, designs, evaluation=NETWORK_EVALUATION,
                       seed=cfg.seed)
    doc = network.run(st, designs, rtl="amaranth")
    network.write(doc, out)
    bad = {d["design"]: d["mismatches"] for d in doc["designs"] if d["mismatches"]}
    if bad:
        raise RuntimeError(f"the network's blocks differ from the integer QNN: {bad} mismatches "
                           "(network/network.md)")
    return {"report": "network/network.md", "verdict": network_report.verdict(doc),
            "tokens": doc["tokens"], "blocks": doc["dims"]["blocks"],
            "checked": sum(d["checked"] for d in doc["designs"]),
            "model_ratio": network_report.ratio(doc, f"mttfs-k{cfg.k}", "model")}


def movement_errors(doc: dict) -> dict[str, list[float]]:
    """Per library, the model's error on movement (model / gates - 1) over the spiking designs
    and workloads the comparison measured: what the energy tables' borrowed event cost is
    quoted beside."""
    out: dict[str, list[float]] = {}
    for e in doc["pdks"]:
        errs = [d["error"]["movement"] for w in e["workloads"] for d in w["designs"]
                if d["design"] != "dense" and d["error"]["movement"] is not None]
        if errs:
            out[e["technology"]] = [min(errs), max(errs)]
    return out


def _energy(out: Path, rates, costs, *, label: str) -> dict:
    import energy_model as em
    from energy_model.output import write_report

    dims = em.preset("bert-base")
    report = em.compute(dims, rates, costs)
    sweep = em.sensitivity(dims, rates, costs)
    write_report(report, out, sweep=sweep, plots=True)
    table = json.loads(report.to_json())
    return {
        "label": label,
        "rates": rates.source,
        "unit_costs": sorted({c.provenance.split(":")[0] for c in costs.values()}),
        "table": table,
        "crossovers_pJ": {r: round(x, 4) for r, x in sweep.crossovers_in_range().items()},
        "text": report.table(),
    }


def stage_energy(cfg: FlowConfig, out: Path, synth_report: Path | None, stats: Path | None):
    import energy_model as em

    results = {}
    paper_costs = em.paper_unit_costs()
    # A generic (liberty-free) synthesis counts gates but prices nothing: keep the paper's costs.
    has_costs = (
        synth_report is not None
        and synth_report.is_file()
        and "unit_costs_pJ" in json.loads(synth_report.read_text())
    )
    ours = em.resolve_unit_costs("paper", synth=str(synth_report)) if has_costs else None
    rates_paper = em.Rates.paper("SST-2") if cfg.T == 16 else None
    if rates_paper is not None:
        results["paper"] = _energy(
            out / "energy_paper", rates_paper, paper_costs, label="paper rates, paper unit costs"
        )
        if ours is not None:
            results["paper_rates_our_costs"] = _energy(
                out / "energy", rates_paper, ours, label="paper rates, synthesized unit costs"
            )
    # A given rates file must exist (load_stats says so); the golden statistics only when the
    # stats stage ran.
    measured = cfg.rates_file if cfg.rates_file is not None else stats
    if measured is not None:
        rates = em.load_stats(measured)
        costs = ours if ours is not None else paper_costs
        results["measured"] = _energy(
            out / "energy_measured",
            rates,
            costs,
            label="measured rates, " + ("synthesized" if ours is not None else "paper")
            + " unit costs",
        )
    return results


# ---------------------------------------------------------------------------------------------


def check_tools(cfg: FlowConfig) -> None:
    """Raise :class:`toolkit_base.toolchain.ToolNotFoundError` for the first tool a stage of
    ``cfg`` needs that is missing, before any stage runs."""
    from toolkit_base import toolchain

    if "regress" not in cfg.skip:
        from regression.sim import ensure_simulator

        for sim in cfg.sims:
            ensure_simulator(sim)
    if "synth" not in cfg.skip or "compare" not in cfg.skip:
        toolchain.require("yosys")
        from synth_scripts.gatelevel.liberty import resolve

        if cfg.liberty is not None or resolve(None) is not None:
            toolchain.require("sta")


def run_flow(cfg: FlowConfig, progress: Callable[[str], None] | None = None) -> FlowResult:
    """Run every stage of ``cfg``; write ``summary.md`` and ``flow.json`` into ``cfg.out_dir``.

    Every stage is a step of the console's progress (:mod:`toolkit_base.console`);
    ``progress``, when given, gets a line per stage start and end (and per regression job)
    as well. A stage that fails is recorded with its error (its traceback in
    ``logs/<stage>.log``) and the flow stops there; the report still says what ran.
    """
    from toolkit_base import console

    with console.steps("flow", len([s for s in STAGES if s not in cfg.skip])) as bar:
        return _run_flow(cfg, progress or (lambda _line: None), bar)


def _run_flow(cfg: FlowConfig, say: Callable[[str], None], bar) -> FlowResult:
    root = cfg.out_dir
    check_tools(cfg)  # every tool a stage needs, before anything is written
    root.mkdir(parents=True, exist_ok=True)
    result = FlowResult(cfg)
    dirs = {
        "generate": root / "rtl",
        "regress": root / "regress",
        "stats": root / "stats",
        "synth": root / "synth",
        "energy": root,
        "compare": root / "compare",
        "block": root / "block",
        "network": root / "network",
    }

    def run(name: str, fn: Callable[[], dict]) -> bool:
        if name in cfg.skip:
            result.stages[name] = {"status": "skipped"}
            say(f"{name}: skipped")
            return True
        say(f"{name}: start")
        bar.start(f"{name}: start")
        t0 = time.monotonic()
        try:
            figures = fn()
        except Exception as exc:  # recorded in the report; the flow stops at this stage
            log = write_stage_log(root, name, exc)
            result.stages[name] = {
                "status": "failed",
                "error": _relative_paths(" ".join(f"{type(exc).__name__}: {exc}".split()),
                                         root),
                "log": log,
                "wall_s": round(time.monotonic() - t0, 2),
            }
            say(f"{name}: FAILED after {time.monotonic() - t0:.1f}s: {exc}")
            bar.advance(f"{name}: FAILED (traceback in {log})")
            return False
        wall = time.monotonic() - t0
        result.stages[name] = {**figures, "status": "ok", "wall_s": round(wall, 2)}
        say(f"{name}: done in {wall:.1f}s")
        bar.advance(f"{name}: done in {wall:.1f} s")
        return True

    # Nothing is cleared: every stage replaces only its own files in its folder. The report
    # of an earlier run is marked incomplete first, so an interrupted run never reads as a pass.
    from matterhorn.report import write_running, write_summary

    write_running(cfg, root)
    clear_stage_logs(root)
    stats_file = dirs["stats"] / "golden_stats.json"
    synth_file = dirs["synth"] / "synth_report.json"
    steps = (
        ("generate", lambda: stage_generate(cfg, dirs["generate"])),
        ("regress", lambda: stage_regress(cfg, dirs["regress"], say)),
        ("stats", lambda: stage_stats(cfg, dirs["stats"])),
        ("synth", lambda: stage_synth(cfg, dirs["synth"])),
        (
            "energy",
            lambda: {
                "runs": stage_energy(
                    cfg,
                    root,
                    synth_file if "synth" not in cfg.skip else None,
                    stats_file if "stats" not in cfg.skip else None,
                )
            },
        ),
        ("compare", lambda: stage_compare(cfg, dirs["compare"], say)),
        ("block", lambda: stage_block(cfg, dirs["block"])),
        ("network", lambda: stage_network(cfg, dirs["network"])),
    )
    for name, fn in steps:
        if not run(name, fn):
            break
    for name in STAGES:  # stages after a failure did not run
        result.stages.setdefault(name, {"status": "not run"})
    write_summary(result, root)
    say(f"report: {root / 'summary.md'}")
    return result


def write_stage_log(root: Path, stage: str, exc: BaseException) -> str:
    """Write the traceback of a failed stage to ``logs/<stage>.log`` (paths in the report
    folder relative to it); returns its path relative to ``root``."""
    from toolkit_base.files import write_atomic

    text = "".join(traceback.format_exception(exc))
    folder = root / LOGS
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / f"{stage}.log", _relative_paths(text, root))
    return f"{LOGS}/{stage}.log"


def clear_stage_logs(root: Path) -> None:
    """Remove the stage logs an earlier run wrote (the flow's own files: ``logs/<stage>.log``
    of its stages; nothing else in ``logs/``), and the folder if that leaves it empty."""
    folder = root / LOGS
    if not folder.is_dir():
        return
    for stage in STAGES:
        (folder / f"{stage}.log").unlink(missing_ok=True)
    if not any(folder.iterdir()):
        folder.rmdir()
