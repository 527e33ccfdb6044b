"""Run every property and its mutants; write ``prove_summary.json`` and ``summary.md``.

The properties run block by block in the order of :data:`rtl_gen.registry.BLOCKS`; the
blocks without a harness (:data:`formal.properties.UNPROVEN`) are named in ``summary.md`` with
the reason. Each property is checked on the shipped generator (it must PASS) and on each of
its mutants (each must FAIL with a counterexample: "caught"). The work folders of SymbiYosys go to
``<out>/jobs/<property>/`` (replaced on each run); the summary is written last and atomically,
and a run that is interrupted or fails writes ``"complete": false`` / ``"passed": false``
first, so a summary never reads as a pass unless every check finished and passed.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

from formal.harness import Property
from formal.properties import UNPROVEN, select
from formal.sby import run_sby, tools
from rtl_gen import registry
from toolkit_base.files import write_atomic
from toolkit_base.tables import markdown_table

__all__ = ["JOBS", "SCHEMA", "SUMMARY", "SUMMARY_MD", "prove", "render_markdown"]

SCHEMA = "matterhorn.prove_summary/1"
SUMMARY = "prove_summary.json"
SUMMARY_MD = "summary.md"
JOBS = "jobs"


def _check(prop: Property, workdir: Path, module=None):
    harness = prop.build(module)
    return run_sby(workdir, harness, mode=prop.mode, depth=prop.depth, syn=prop.syn)


def _property_entry(prop: Property, jobs: Path, log, bar) -> dict:
    folder = jobs / prop.name
    if folder.exists():
        shutil.rmtree(folder)
    log(f"[prove] {prop.name}: {prop.mode} depth {prop.depth} ...")
    bar.start(f"{prop.name}: {prop.mode} depth {prop.depth}")
    res = _check(prop, folder / "design")
    line = f"{prop.name}: {res.status} in {res.seconds:.1f} s"
    log(f"[prove] {line}" + (f" ({res.detail})" if res.detail else ""))
    bar.advance(line)
    mutants = []
    for mutant in prop.mutants:
        mres = _check(prop, folder / mutant.name, mutant.load())
        caught = mres.status == "FAIL"
        line = (f"{prop.name}: mutant {mutant.name}: "
                f"{'caught' if caught else 'NOT caught (' + mres.status + ')'} "
                f"in {mres.seconds:.1f} s")
        log(f"[prove] {line}")
        bar.advance(line)
        mutants.append({
            "name": mutant.name,
            "bug": mutant.what,
            "result": mres.status,
            "caught": caught,
            "seconds": round(mres.seconds, 2),
            "failed_assertion": mres.detail,
            "trace": f"{JOBS}/{prop.name}/{mutant.name}/{mres.trace}" if mres.trace else None,
        })
    return {
        "property": prop.name,
        "block": prop.target,
        "statement": prop.statement,
        "parameters": dict(prop.params),
        "mode": prop.mode,
        "depth": prop.depth,
        "result": res.status,
        "seconds": round(res.seconds, 2),
        "detail": res.detail,
        "mutants": mutants,
    }


def render_markdown(doc: dict) -> str:
    rows = []
    for p in doc["properties"]:
        params = ", ".join(f"{k}={v}" for k, v in p["parameters"].items())
        caught = sum(m["caught"] for m in p["mutants"])
        rows.append([p["property"], p["block"], params,
                     "k-induction" if p["mode"] == "prove" else "BMC", p["depth"], p["result"],
                     f"{p['seconds']:.1f}", f"{caught}/{len(p['mutants'])}"])
    verdict = "PASS" if doc["passed"] else ("INCOMPLETE" if not doc["complete"] else "FAIL")
    lines = [
        "# matterhorn prove",
        "",
        (f"Result: **{verdict}** ({doc['totals']['proven']} of {doc['totals']['properties']} "
        f"properties hold, {doc['totals']['mutants_caught']} of {doc['totals']['mutants']} "
        f"mutants caught, {doc['totals']['seconds']:.1f} s)."),
        "",
        *markdown_table(["property", "block", "parameters", "mode", "depth", "result",
                         "time (s)", "mutants caught"], rows),
        "",
        "Mutants:",
        "",
    ]
    for p in doc["properties"]:
        for m in p["mutants"]:
            lines.append(f"- `{p['property']}` / `{m['name']}` ({m['bug']}): "
                         f"{'caught' if m['caught'] else 'NOT caught'} ({m['result']}"
                         + (f", {m['failed_assertion']}" if m["failed_assertion"] else "")
                         + ")")
    lines += ["", "Registered blocks without a proof harness:", ""]
    lines += [f"- `{registry.block(name).module}`: {why}" for name, why in UNPROVEN.items()]
    return "\n".join(lines) + "\n"


def _write(out: Path, doc: dict) -> None:
    from toolkit_base.schemas import validate

    validate(doc, "prove_summary", SUMMARY)
    write_atomic(out / SUMMARY, json.dumps(doc, indent=2, sort_keys=True) + "\n")
    write_atomic(out / SUMMARY_MD, render_markdown(doc))


def _doc(entries: list[dict], complete: bool, seconds: float) -> dict:
    proven = sum(e["result"] == "PASS" for e in entries)
    mutants = [m for e in entries for m in e["mutants"]]
    caught = sum(m["caught"] for m in mutants)
    return {
        "schema": SCHEMA,
        "complete": complete,
        "passed": complete and proven == len(entries) and caught == len(mutants),
        "engine": "SymbiYosys (YoWASP) smtbmc yices",
        "properties": entries,
        "totals": {"properties": len(entries), "proven": proven, "mutants": len(mutants),
                   "mutants_caught": caught, "seconds": round(seconds, 2)},
    }


def prove(out: str, only: list[str] | None = None, *, log=None) -> dict:
    """Check the properties (all, or those named in ``only``) and write the summary in ``out``.

    Returns the summary document. Every proof and mutant is a step of the console's progress
    (:mod:`toolkit_base.console`); ``log``, when given, gets a line for each as well.
    """
    from toolkit_base import console

    if log is None:
        def log(line):
            pass
    if not isinstance(out, str | Path) or not str(out).strip():
        raise ValueError("--out must be a folder name, not empty")
    props = select(only)
    tools()  # a missing tool is an error before anything is written
    out_dir = Path(out)
    out_dir.mkdir(parents=True, exist_ok=True)
    jobs = out_dir / JOBS
    start = time.monotonic()
    entries: list[dict] = []
    # a stale summary must not read as a pass while this run is under way
    _write(out_dir, _doc(entries, False, 0.0))
    with console.steps("prove", sum(1 + len(p.mutants) for p in props)) as bar:
        for prop in props:
            entries.append(_property_entry(prop, jobs, log, bar))
    doc = _doc(entries, True, time.monotonic() - start)
    _write(out_dir, doc)
    return doc
