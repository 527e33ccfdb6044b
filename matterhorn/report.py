"""The flow's report folder: ``summary.md`` (the verdict first, then tables and plots) and
``flow.json`` (every figure).

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


def _one_line(text: str, limit: int = 160) -> str:
    """``text`` on one line of at most ``limit`` characters, safe in a Markdown table cell."""
    line = " ".join(str(text).split()).replace("|", "\\|")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _section_stages(result) -> list[str]:
    rows = []
    for name, s in result.stages.items():
        note = _one_line(s["error"]) if s.get("error") else ""
        if s.get("log"):
            note += f" ([traceback]({s['log']}))"
        rows.append([name, s.get("status"), _fmt(s.get("wall_s")), note])
    return ["## Stages", "", *_md_table(["stage", "status", "wall time (s)", "note"], rows), ""]


def verdict_lines(result) -> list[str]:
    """The answer to the toolkit's question, first in ``summary.md`` and on the console:
    M-TTFS (and TTFS, k = 0, 2) against dense INT4 in our gates per workload and library, the
    model's ratio with its error; or why there is none."""
    cfg = result.config
    s = result.stages.get("compare", {})
    if s.get("status") != "ok" or "verdict" not in s:
        why = {"skipped": "the compare stage was skipped", "not run": "the compare stage did "
               "not run (an earlier stage failed)", "failed": "the compare stage failed"}
        reason = s.get("skipped") or why.get(s.get("status"), "the compare stage did not run")
        return [(f"**No verdict**: {reason}; M-TTFS against dense INT4 in gates is measured by "
                "`matterhorn compare` (the flow's compare stage).")]
    lines = [(f"**Verdict: M-TTFS k={cfg.k} against dense INT4, energy per window in our "
             "gates.**"), ""]
    from matterhorn.compare_report import verdict_table

    lines += verdict_table(s["verdict"], cfg.k, "`compare/compare.md`")
    for m in s.get("missing", []):
        lines += ["", f"Not run: {m}."]
    return lines


def _section_generate(s: dict) -> list[str]:
    if s.get("status") != "ok":
        return []
    out = ["## RTL (`rtl/`)", ""]
    out.append("Modules: " + ", ".join(f"`{m}`" for m in s.get("modules", [])) + ".")
    widths = s.get("widths") or {}
    if widths:
        out += ["", *_md_table(["derived width", "value"], [[k, v] for k, v in widths.items()])]
    return [*out, ""]


def _counters(s: dict) -> str:
    """Whether the jobs' counters equal the golden model's, and over how many jobs (the
    non-linear units and the AXI wrappers' jobs have none of their own)."""
    checked = s.get("counters_checked")
    if checked is None:  # a summary written before the field
        return str(s.get("counters_equal"))
    word = "yes" if s.get("counters_equal") else "NO"
    return f"{word}, on the {checked} of {s.get('configurations')} jobs whose module has counters"


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
        ["counters equal to the golden model", _counters(s)],
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
            "in this run: not BERT. For a real model use `matterhorn stats --model minilm` (or "
            "`--model FOLDER`, a BERT-family model of yours) and pass its statistics with "
            "`--rates-file`."
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
        else "No liberty: generic gate counts only (the NanGate 45 nm default is not installed; "
        "pass `--liberty` or set `PDK_ROOT` for area and energy)."
    )
    out.append("The full table with the comparison to the paper is in `synth/synth_report.md`.")
    costs = s.get("unit_costs_pJ") or {}
    native = s.get("unit_costs_pJ_native") or {}
    borrowed = set(s.get("borrowed") or ())
    if costs:
        node = lib.get("library", "the library") if isinstance(lib, dict) else "the library"
        rows = [[k, native.get(k, "") if k not in borrowed else "", v,
                 "the paper's (22 nm), borrowed: not made by this flow" if k in borrowed
                 else "synthesized here"] for k, v in costs.items()]
        out += ["", *_md_table(["unit cost", f"at {node}'s node (pJ)",
                                "scaled to 22 nm / 0.8 V, as the energy model uses it (pJ)",
                                "where from"], rows)]
    return [*out, ""]


def _movement_quote(compare: dict) -> str:
    """What the gate-level comparison measured of the model's movement, if it ran."""
    errs = compare.get("movement_error") if compare.get("status") == "ok" else None
    if not errs:
        return ""
    parts = [f"{lo:+.0%} to {hi:+.0%} in {tech}" for tech, (lo, hi) in errs.items()]
    return (" The gate-level comparison of this run (`compare/`) measured the model's movement "
            "against our gates' (router netlist, same flits): " + "; ".join(parts)
            + " (model / gates - 1, spiking designs).")


def _section_energy(s: dict, root: Path, compare: dict | None = None) -> list[str]:
    if s.get("status") != "ok":
        return []
    out = ["## Energy per BERT-base encoder block", "",
           ("Energy relative to the dense QNN in the `Rel.` column, as in the paper (below 1 "
            "the row is cheaper). A column marked `*` is priced with a unit cost borrowed from "
            "the paper (22 nm, not our gates); the note under each table names it."
            + _movement_quote(compare or {})), ""]
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


def _section_block(s: dict) -> list[str]:
    if s.get("status") != "ok" or "verdict" not in s:
        return []
    out = ["## A whole encoder block through its hardware pieces (`block/`)", ""]
    out += [f"- {line}" for line in s["verdict"]]
    if s.get("events_per_value") is not None and s.get("model_ratio") is not None:
        out += ["", (f"Why the model's ratio reads {s['model_ratio']:.3g}x here: the block is a "
                     "small random, untrained one, whose codes spread over the whole code range "
                     "instead of gathering at the silent centre as a trained network's do, so "
                     f"M-TTFS still sends an event for {s['events_per_value']:.0%} of its "
                     "values, and the paper's model prices an event at 3 pJ a hop against 1 pJ "
                     "for a dense 4-bit code (0.25 pJ a bit). It says nothing of a trained "
                     "network: `matterhorn block --model minilm` measures a real one.")]
    out += ["", "Energy, movement, deliveries per position and the pieces: `block/block.md`.",
            "![block](block/block.png)", ""]
    return out


def _section_network(s: dict) -> list[str]:
    if s.get("status") != "ok" or "verdict" not in s:
        return []
    out = ["## A whole network, block after block (`network/`)", ""]
    out += [f"- {line}" for line in s["verdict"]]
    out += ["", "Quality, energy per sentence and the blocks: `network/network.md`.",
            "![network](network/network.png)", ""]
    return out


def _provenance(result) -> list[str]:
    """Where each figure came from: only the stages that ran in this run."""
    cfg = result.config
    ran = {name for name, s in result.stages.items() if s.get("status") == "ok"}
    lines = ["## Where each figure came from", ""]
    measured = [what for stage, what in (("generate", "RTL"), ("regress", "regression"),
                                         ("stats", "golden statistics"), ("synth", "synthesis"),
                                         ("compare", "the comparison in gates"),
                                         ("block", "the block's pieces"),
                                         ("network", "the network's blocks"))
                if stage in ran]
    if measured:
        lines.append(f"- Measured in this run (seed {cfg.seed}): {', '.join(measured)}.")
    not_ran = [name for name in result.stages if name not in ran]
    if not_ran:
        lines.append(f"- Not measured in this run (skipped, failed or not run): "
                     f"{', '.join(not_ran)}; their folders may hold an earlier run's files, "
                     "which this report does not describe.")
    energy = result.stages.get("energy", {})
    if "energy" in ran:
        runs = energy.get("runs", {})
        if "paper" in runs or "paper_rates_our_costs" in runs:
            lines.append("- Paper rates: the paper's Table 'Per-step spike rate' (SST-2) and its "
                         "baseline rates.")
        lines.append("- Paper unit costs: its Appendix table (22 nm, Design Compiler); every "
                     "table marks the columns priced with them (`*`).")
        if "paper_rates_our_costs" in runs or "synth_report.json" in str(runs):
            lines.append("- Synthesized unit costs: `synth/synth_report.json`; each entry "
                         "carries its provenance. Costs the open flow cannot produce (SRAM per "
                         "bit, dense and event movement) stay the paper's and say so.")
        if "measured" in runs:
            lines.append(f"- Measured rates: `{cfg.rates_file.name}` (given with --rates-file)."
                         if cfg.rates_file is not None else
                         "- Measured rates: `stats/golden_stats.json` (this run's golden QNN "
                         "block).")
    if "compare" in ran:
        lines.append("- Comparison in gates: `compare/compare.json`; unit costs of its model "
                     "synthesized on the same library, SRAM arrays priced per bit from a cited "
                     "figure (docs/compare.md).")
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
        "model": None if getattr(cfg, "model", None) is None else Path(str(cfg.model)).name,
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
    failed = [name for name, s in stages.items() if s.get("status") == "failed"]
    md = [f"# Matterhorn flow: T={cfg.T}, k={cfg.k}", ""]
    if failed:
        md += [(f"**FAILED** at the {failed[0]} stage: "
               f"{_one_line(stages[failed[0]].get('error', ''))} (traceback: "
               f"`{stages[failed[0]].get('log', '')}`). Stages after it did not run."), ""]
    md += verdict_lines(result) + [""]
    md += [
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
    md += _section_energy(stages.get("energy", {}), root, stages.get("compare"))
    md += _section_compare(stages.get("compare", {}))
    md += _section_block(stages.get("block", {}))
    md += _section_network(stages.get("network", {}))
    md += _provenance(result)
    write_atomic(root / "summary.md", "\n".join(md))
