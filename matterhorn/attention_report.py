"""The report of ``matterhorn attention``: ``attention.json`` (schema ``matterhorn.attention/1``,
docs/rtl_attention.md) and ``attention.md``, the verdict first.

Written when every simulator has run; the files of an earlier run are removed when a run starts
(:func:`retract`), so an interrupted or failed run leaves no report that reads as a pass.
"""

from __future__ import annotations

import json
from pathlib import Path

from toolkit_base.files import write_atomic
from toolkit_base.schemas import validate
from toolkit_base.tables import markdown_table

__all__ = ["FILES", "SCHEMA", "document", "markdown", "result_line", "retract", "write"]

SCHEMA = "matterhorn.attention/1"
#: The report's files in ``--out``.
FILES = ("attention.json", "attention.md")


def result_line(sim: str, res, figures: dict) -> str:
    """One simulator's result in one line: its verdict, tokens, cycles and mismatches."""
    if res.failed_in:
        return f"{sim}: FAIL in {res.failed_in}, before the bench's verdict: {res.error}"
    status = "PASS" if res.passed else f"FAIL: {res.error}"
    return (f"{sim}: {status}; {figures['tokens']} tokens, {figures['cycles']} cycles, "
            f"{figures['cycles_per_token']} cycles/token, {figures['tokens_per_second']} "
            f"tokens/s, {res.mismatches} mismatches, build {res.build_seconds:.1f} s, run "
            f"{res.run_seconds:.1f} s")


def document(design: dict, k: int, lengths: list[int], runs: dict) -> dict:
    """The report of the runs ``{simulator: AttentionRun}`` of a design (``heads``,
    ``head_dim``, ``seq_max``, ``T``) at radius ``k`` over sentences of ``lengths`` tokens."""
    sims = {}
    for name, r in runs.items():
        res = r.result
        sims[name] = {
            "passed": bool(res.passed), "failed_in": res.failed_in, "error": res.error,
            "mismatches": res.mismatches, "events": res.events,
            "build_seconds": round(res.build_seconds, 1), "run_seconds": round(res.run_seconds, 1),
            "figures": r.figures if not res.failed_in else None,
        }
    doc = {"schema": SCHEMA, "model": "all-MiniLM-L6-v2", "block": 0, "k": k, "design": design,
           "sentences": len(lengths), "tokens": lengths,
           "passed": bool(runs) and all(s["passed"] for s in sims.values()),
           "simulators": sims}
    return validate(doc, "attention", "attention.json")


def markdown(doc: dict) -> str:
    """``attention.md``: the verdict, then per simulator the events per token of each position
    and head (design and golden model) and the key and value writes of each sentence."""
    d = doc["design"]
    title = (f"# MiniLM block 0's attention on the mesh: {d['heads']} heads x {d['head_dim']}, "
             f"k={doc['k']}")
    verdict = (f"**{'PASS' if doc['passed'] else 'FAIL'}**: {doc['sentences']} sentences of "
               f"{min(doc['tokens'])} to {max(doc['tokens'])} tokens, every event and counter "
               "against the golden model, on " + ", ".join(doc["simulators"]) + ".")
    lines = [title, "", verdict, ""]
    for name, s in doc["simulators"].items():
        lines += [f"## {name}", ""]
        f = s["figures"]
        if f is None:
            lines += [f"FAIL in {s['failed_in']}, before the bench's verdict: {s['error']}", ""]
            continue
        lines += [(f"{s['mismatches']} mismatches in {s['events']} events; {f['tokens']} "
                   f"tokens, {f['cycles']} cycles ({f['cycles_per_token']} a token), "
                   f"{f['tokens_per_second']} tokens/s simulated; build {s['build_seconds']} s, "
                   f"run {s['run_seconds']} s."), ""]
        lines += _events_table(f) + [""]
    return "\n".join(lines)


def _events_table(f: dict) -> list[str]:
    heads = len(f["events_per_token"]["query"])
    rows = []
    for pos in ("query", "attn_prob", "attn_out_in"):
        rows.append([f"{pos} (design)", *map(str, f["events_per_token"][pos])])
        rows.append([f"{pos} (golden)", *map(str, f["golden_events_per_token"][pos])])
    out = markdown_table(["events per token", *(f"h{h}" for h in range(heads))], rows)
    out += ["", *markdown_table(
        ["sentence", "tokens", "key writes", "value writes"],
        [[str(i), str(s["tokens"]), str(s["key_writes"]), str(s["value_writes"])]
         for i, s in enumerate(f["sequences"])])]
    return out


def retract(out: Path | str) -> None:
    """Remove an earlier run's report (the command's own files) when a run starts."""
    for name in FILES:
        (Path(out) / name).unlink(missing_ok=True)


def write(doc: dict, out: Path | str) -> Path:
    """Write ``attention.json`` and ``attention.md`` (the Markdown last); return its path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_atomic(out / FILES[0], json.dumps(doc, indent=1, sort_keys=True) + "\n")
    write_atomic(out / FILES[1], markdown(doc))
    return out / FILES[1]
