"""The regression summary: one row per job, totals per simulator, merged coverage; JSON + table."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from regression import coverage as cov
from regression.jobs import JobResult
from toolkit_base.console import Alert
from toolkit_base.files import write_atomic

__all__ = ["SCHEMA", "STATUS_LABEL", "SUMMARY_FILE", "failure_counts", "format_table", "job_line",
           "job_status", "summarize", "write_summary"]

#: Schema identifier of the summary JSON (docs/regress.md).
SCHEMA = "matterhorn.regress_summary/1"
#: File name of the summary in the regression's output folder.
SUMMARY_FILE = "regress_summary.json"


def job_status(r: JobResult) -> str:
    """``"pass"``, ``"fail"``, or ``"vacuous"``: the bench passed but checked no event (its
    mask drops every code, e.g. ``T=4, k=3``), which is not a pass."""
    if not r.passed:
        return "fail"
    return "pass" if r.events > 0 else "vacuous"


#: The table's and the console's word for each job status.
STATUS_LABEL = {"pass": "PASS", "fail": "FAIL", "vacuous": "NONE"}


def job_line(r: JobResult, detail: str = "") -> str:
    """A finished job's line on the console: its status word, its name and ``detail``; a job
    that did not pass is a :class:`toolkit_base.console.Alert` (always shown) and says why."""
    status = job_status(r)
    line = f"{STATUS_LABEL[status]} {r.job.name}" + (f" ({detail})" if detail else "")
    if status == "pass":
        return line
    why = r.error[:160] if r.error else "checked no event: this is not a pass"
    return Alert(f"{line}: {why}")


def _row(r: JobResult) -> dict:
    rep = r.report
    p = dict(r.job.params)
    golden, rtl = r.counters_golden, r.counters_rtl
    sim_s = float(rep.get("sim_seconds", 0.0))
    events = r.events
    return {
        "name": r.job.name,
        "bench": r.job.bench,
        "sim": r.job.sim,
        "T": p.get("T"),
        "family": p.get("family", "sym"),
        "k": p.get("k"),
        "status": job_status(r),
        "passed": job_status(r) == "pass",
        "vectors": int(rep.get("vectors", 0)),
        "events": events,
        "mismatches": r.mismatches,
        "resets": int(rep.get("resets", 0)),
        # None: the bench's module has no counters (the non-linear units), nothing to compare
        "counters_equal": (golden == rtl) if (golden or rtl) else None,
        "counter_totals_golden": golden,
        "counter_totals_rtl": rtl,
        "build_seconds": round(r.build_seconds, 3),
        "run_seconds": round(r.run_seconds, 3),
        "sim_seconds": round(sim_s, 3),
        "events_per_second": round(events / sim_s, 1) if sim_s > 0 else 0.0,
        "error": r.error,
        "failed_in": r.failed_in,
    }


def failure_counts(summary: Mapping) -> str:
    """What failed, in words: the jobs that failed, those of them that stopped before their
    bench's verdict (an error of the job: a tool, a file, a missing module) and the
    mismatches the others found, e.g. ``2 of 12 jobs failed: 2 stopped before the bench's
    verdict (2 in bench), 0 mismatches``."""
    line = f"{summary['failed']} of {summary['configurations']} jobs failed"
    stages = [r["failed_in"] for r in summary["jobs"] if r.get("failed_in")]
    if stages:
        where = ", ".join(f"{stages.count(s)} in {s}" for s in dict.fromkeys(stages))
        line += f": {len(stages)} stopped before the bench's verdict ({where}),"
    return f"{line} {summary['mismatches']} mismatches"


def summarize(results: Sequence[JobResult], wall_seconds: float, parameters: Mapping) -> dict:
    """The summary dict of a regression (schema in docs/regress.md)."""
    rows = [_row(r) for r in results]
    merged = cov.merge(r.report.get("coverage", {}) for r in results)
    per_sim = {}
    for name in sorted({r["sim"] for r in rows}):
        mine = [r for r in rows if r["sim"] == name]
        ev = sum(r["events"] for r in mine)
        secs = sum(r["sim_seconds"] for r in mine)
        per_sim[name] = {
            "jobs": len(mine),
            "events": ev,
            "sim_seconds": round(secs, 3),
            "events_per_second": round(ev / secs, 1) if secs > 0 else 0.0,
            "build_seconds": round(sum(r["build_seconds"] for r in mine), 3),
        }
    total_ev = sum(r["events"] for r in rows)
    total_sim = sum(r["sim_seconds"] for r in rows)
    counts = {s: sum(r["status"] == s for r in rows) for s in ("pass", "fail", "vacuous")}
    mismatches = sum(r["mismatches"] for r in rows)
    counted = [r for r in rows if r["passed"] and r["counters_equal"] is not None]
    if counts["fail"] or mismatches:
        status = "failed"
    elif counts["vacuous"] or not rows:
        status = "vacuous"
    else:
        status = "passed"
    return {
        "schema": SCHEMA,
        "status": status,
        "parameters": dict(parameters),
        "configurations": len(rows),
        "passed": counts["pass"],
        "failed": counts["fail"],
        "vacuous": counts["vacuous"],
        "vectors": sum(r["vectors"] for r in rows),
        "events": total_ev,
        "mismatches": mismatches,
        "job_errors": sum(bool(r["failed_in"]) for r in rows),
        "counters_equal": all(r["counters_equal"] for r in counted),
        "counters_checked": len(counted),
        "coverage": cov.summary(merged),
        "wall_seconds": round(wall_seconds, 3),
        "events_per_second": round(total_ev / total_sim, 1) if total_sim > 0 else 0.0,
        "simulators": per_sim,
        "jobs": rows,
    }


def write_summary(summary: Mapping, out_dir: Path | str) -> Path:
    """Write ``summary`` as ``out_dir/regress_summary.json`` (atomically); return the path."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / SUMMARY_FILE
    write_atomic(path, json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return path


def format_table(summary: Mapping) -> str:
    """A plain-text table of the summary (one line per job, then the totals)."""
    head = (
        f"{'job':<44} {'ok':<4} {'vec':>5} {'events':>7} {'mism':>5} {'ctr':>4} "
        f"{'build s':>8} {'ev/s':>8}"
    )
    lines = [head, "-" * len(head)]
    for r in summary["jobs"]:
        lines.append(
            f"{r['name']:<44} {STATUS_LABEL[r.get('status', 'fail')]:<4} {r['vectors']:>5} "
            f"{r['events']:>7} {r['mismatches']:>5} {_COUNTERS[r['counters_equal']]:>4} "
            f"{r['build_seconds']:>8.1f} {r['events_per_second']:>8.0f}"
        )
        if r["error"]:
            lines.append(f"    {r['error'][:200]}")
    c = summary["coverage"]
    lines.append("-" * len(head))
    lines.append(
        f"{summary.get('status', '?')}: "
        f"{summary['passed']}/{summary['configurations']} passed, {summary['vectors']} vectors, "
        f"{summary['events']} events, {summary['mismatches']} mismatches, {_coverage(c)}, "
        f"wall {summary['wall_seconds']:.1f} s"
    )
    for name, s in summary["simulators"].items():
        lines.append(
            f"  {name}: {s['events']} events in {s['sim_seconds']:.2f} s simulated "
            f"({s['events_per_second']:.0f} events/s), builds {s['build_seconds']:.1f} s"
        )
    stages = [r.get("failed_in") for r in summary["jobs"] if r.get("failed_in")]
    if stages:
        counts = ", ".join(f"{stages.count(s)} in {s}" for s in dict.fromkeys(stages))
        lines.append(f"FAILED BEFORE THE BENCH'S VERDICT: {counts} (a tool or a file, not a "
                     "mismatch; the error lines say why)")
    if summary.get("vacuous"):
        lines.append(
            f"NOTHING CHECKED by {summary['vacuous']} job(s) (marked NONE): the mask drops every "
            "code of this T and k, so they compared no event; this is not a pass"
        )
    return "\n".join(lines)


#: Fields of a summary or report that measure time or name the executor, not the results.
TIMINGS = frozenset({"wall_seconds", "build_seconds", "run_seconds", "sim_seconds",
                     "events_per_second", "parameters"})


def without_timings(doc):
    """``doc`` (nested dicts and lists) without its :data:`TIMINGS` fields: what two runs of
    the same jobs on different executors must agree on."""
    if isinstance(doc, dict):
        return {k: without_timings(v) for k, v in doc.items() if k not in TIMINGS}
    if isinstance(doc, list):
        return [without_timings(v) for v in doc]
    return doc


def _coverage(c: Mapping) -> str:
    if not c["bins"]:  # fast-mode and AXI jobs declare no coverage bins
        return "coverage not sampled (0 bins)"
    return f"coverage {c['percent']}% ({c['covered']}/{c['bins']} bins)"


#: The table's mark of a job's counters: equal, different, or none to compare.
_COUNTERS = {True: "=", False: "!=", None: "-"}
