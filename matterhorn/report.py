"""The flow's report folder: ``summary.md`` (tables and plots) and ``flow.json`` (every figure).

Deterministic apart from the measured wall times; paths are relative to the report folder.
"""

from __future__ import annotations

import json
from pathlib import Path

from matterhorn import __version__
from toolkit_base.files import write_atomic
from toolkit_base.tables import markdown_table

SCHEMA = "matterhorn.flow/1"


def _fmt(x, digits: int = 4) -> str:
    if x is None:
        return "n/a"
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


def _md_table(header: list[str], rows: list[list]) -> list[str]:
    return markdown_table(header, [[_fmt(c) for c in row] for row in rows])


def _section_stages(result) -> list[str]:
    rows = []
    for name, s in result.stages.items():
        note = s.get("error", "")
        rows.append([name, s.get("status"), _fmt(s.get("wall_s")), note])
    return ["## Stages", "", *_md_table(["stage", "status", "wall time (s)", "note"], rows), ""]


def _section_generate(s: dict) -> list[str]:
    if s.get("status") != "ok":
        return []
    out = ["## RTL (`rtl/`)", ""]
    out.append("Modules: " + ", ".join(f"`{m}`" for m in s.get("modules", [])) + ".")
    widths = s.get("widths") or {}
    if widths:
        out += ["", *_md_table(["derived width", "value"], [[k, v] for k, v in widths.items()])]
    return [*out, ""]


def _section_regress(s: dict) -> list[str]:
    if s.get("status") != "ok":
        return []
    out = ["## Regression (`regress/`)", ""]
    cov = s.get("coverage") or {}
    rows = [
        ["jobs (passed / total)", f"{s.get('passed')} / {s.get('configurations')}"],
        ["vectors", s.get("vectors")],
        ["output events compared", s.get("events")],
        ["mismatches", s.get("mismatches")],
        ["counters equal to the golden model", s.get("counters_equal")],
        ["coverage", f"{cov.get('percent', 'n/a')} % of {cov.get('bins', 'n/a')} bins"
         if cov else "n/a"],
        ["wall time (s)", s.get("wall_seconds")],
        ["events simulated per second", s.get("events_per_second")],
    ]
    out += _md_table(["figure", "value"], rows)
    per_sim = s.get("simulators") or {}
    if per_sim:
        out += ["", *_md_table(
            ["simulator", "jobs", "events", "events/s", "build time (s)"],
            [[sim, v.get("jobs"), v.get("events"), v.get("events_per_second"),
              v.get("build_seconds")] for sim, v in per_sim.items()],
        )]
    return [*out, ""]


def _section_stats(s: dict, k: int) -> list[str]:
    if s.get("status") != "ok":
        return []
    out = [
        "## Spike statistics of the golden QNN block (`stats/`)",
        "",
        (
            "A seeded random QNN encoder block (small dimensions, peaked random input), measured "
            "in this run: not BERT. For a real model use `matterhorn stats --model minilm` and "
            "pass its statistics with `--rates-file`."
        ),
        "",
    ]
    rows = [
        [pos, v["family"], v["i_max"], v["p_q0"], v["ttfs_rate_percent"],
         v[f"mttfs_k{k}_rate_percent"]]
        for pos, v in s.get("positions", {}).items()
    ]
    out += _md_table(
        ["position", "family", "I_max", "p(q=0)", "TTFS rate %", f"M-TTFS k={k} rate %"], rows
    )
    return [*out, ""]


def _section_synth(s: dict) -> list[str]:
    if s.get("status") != "ok":
        return []
    lib = s.get("liberty")
    out = ["## Synthesis (`synth/`)", ""]
    out.append(
        f"Liberty: `{lib['library']}` ({lib['file']})." if isinstance(lib, dict)
        else "No liberty: generic gate counts only (pass `--liberty` or set `PDK_ROOT` for area "
        "and energy)."
    )
    out.append("The full table with the comparison to the paper is in `synth/synth_report.md`.")
    costs = s.get("unit_costs_pJ") or {}
    if costs:
        out += ["", *_md_table(["unit cost", "value (pJ)"], [[k, v] for k, v in costs.items()])]
    return [*out, ""]


def _section_energy(s: dict, root: Path) -> list[str]:
    if s.get("status") != "ok":
        return []
    out = ["## Energy per BERT-base encoder block", ""]
    folders = {"paper": "energy_paper", "paper_rates_our_costs": "energy",
               "measured": "energy_measured"}
    for key, run in s.get("runs", {}).items():
        folder = folders[key]
        out += [f"### {run['label']} (`{folder}/`)", ""]
        out.append(f"Rates: {run['rates']}. Unit costs: {', '.join(run['unit_costs'])}.")
        out += ["", "```", run["text"].rstrip(), "```", ""]
        for row, x in run.get("crossovers_pJ", {}).items():
            out.append(f"- crossover with the dense QNN: {row} at {x} pJ/event")
        for png in sorted(p.name for p in (root / folder).glob("*.png")):
            out.append(f"![{png}]({folder}/{png})")
        out.append("")
    return out


def _section_compare(s: dict) -> list[str]:
    if s.get("status") != "ok" or "verdicts" not in s:
        return []
    out = ["## M-TTFS against a dense INT4 design, in our gates (`compare/`)", ""]
    out += [f"- {where}: {text}." for where, text in s["verdicts"].items()]
    out += [f"- not run: {m}" for m in s.get("missing", [])]
    out += ["", "Tables, the per-component model error and the plot: `compare/compare.md`.",
            "![compare](compare/compare.png)", ""]
    return out


def _provenance(result) -> list[str]:
    cfg = result.config
    lines = ["## Where each figure came from", ""]
    lines.append("- RTL, regression, golden statistics, synthesis: measured in this run "
                 f"(seed {cfg.seed}).")
    lines.append("- Paper rates: the paper's Table 'Per-step spike rate' (SST-2) and its baseline "
                 "rates; paper unit costs: its Appendix table (22 nm, Design Compiler).")
    lines.append("- Synthesized unit costs: `synth/synth_report.json`; each entry carries its "
                 "provenance. Costs the open flow cannot produce (SRAM per bit, dense "
                 "movement) stay the paper's and say so.")
    if cfg.rates_file is not None:
        lines.append(f"- Measured rates: `{cfg.rates_file.name}` (given with --rates-file).")
    else:
        lines.append("- Measured rates: `stats/golden_stats.json` (this run's golden QNN block).")
    return [*lines, ""]


def _parameters(cfg) -> dict:
    return {
        "T": cfg.T,
        "k": cfg.k,
        "sims": list(cfg.sims),
        "seed": cfg.seed,
        "clock_ns": cfg.clock_ns,
        "liberty": cfg.liberty.name if cfg.liberty else None,
        "rates_file": cfg.rates_file.name if cfg.rates_file else None,
    }


def write_running(cfg, root: Path) -> None:
    """Mark the report folder as holding a run that has not finished (written first).

    ``flow.json`` gets ``"status": "running"`` and no stages, ``summary.md`` says the run is
    incomplete; both are replaced atomically, so an interrupted or crashed run leaves this,
    never the earlier run's all-ok report beside half-replaced stage folders.
    """
    doc = {"schema": SCHEMA, "version": __version__, "status": "running",
           "parameters": _parameters(cfg), "stages": {}}
    write_atomic(root / "flow.json", json.dumps(doc, indent=1, sort_keys=True) + "\n")
    md = [f"# Matterhorn flow: T={cfg.T}, k={cfg.k}", "",
          ("**INCOMPLETE**: this run started and has not finished (still running, interrupted "
           "or crashed). No figure of an earlier run is reported here; the stage folders may "
           "hold partial results."), ""]
    write_atomic(root / "summary.md", "\n".join(md))


def write_summary(result, root: Path) -> None:
    cfg = result.config
    stages = result.stages
    doc = {
        "schema": SCHEMA,
        "version": __version__,
        "status": "complete"
        if all(s.get("status") in ("ok", "skipped") for s in stages.values())
        else "failed",
        "parameters": _parameters(cfg),
        "stages": {
            name: {k: v for k, v in s.items() if k != "runs"}
            | (
                {"runs": {r: {kk: vv for kk, vv in run.items() if kk != "text"}
                          for r, run in s["runs"].items()}}
                if "runs" in s else {}
            )
            for name, s in stages.items()
        },
    }
    write_atomic(root / "flow.json", json.dumps(doc, indent=1, sort_keys=True) + "\n")
    md = [
        f"# Matterhorn flow: T={cfg.T}, k={cfg.k}",
        "",
        (
            f"matterhorn {__version__}; simulators: {', '.join(cfg.sims)}; seed {cfg.seed}; "
            f"clock {cfg.clock_ns} ns."
        ),
        "",
    ]
    md += _section_stages(result)
    md += _section_generate(stages.get("generate", {}))
    md += _section_regress(stages.get("regress", {}))
    md += _section_stats(stages.get("stats", {}), cfg.k)
    md += _section_synth(stages.get("synth", {}))
    md += _section_energy(stages.get("energy", {}), root)
    md += _section_compare(stages.get("compare", {}))
    md += _provenance(result)
    write_atomic(root / "summary.md", "\n".join(md))
