"""``matterhorn attention``'s report (matterhorn/attention_report.py): the document against its
schema, the verdict first, a failed simulator said as such, and an earlier run's report
removed when a run starts."""

from __future__ import annotations

import json

import pytest

from matterhorn import attention_report as report
from regression.attention_run import AttentionRun
from regression.jobs import Job, JobResult

FIGURES = {"tokens": 26, "cycles": 10336, "cycles_per_token": 397.5, "tokens_per_second": 0.4,
           "events_per_token": {"query": [1.0, 2.0], "attn_prob": [3.0, 4.0],
                                "attn_out_in": [5.0, 6.0]},
           "golden_events_per_token": {"query": [1.0, 2.0], "attn_prob": [3.0, 4.0],
                                       "attn_out_in": [5.0, 6.0]},
           "sequences": [{"tokens": 10, "key_writes": 20, "value_writes": 20},
                         {"tokens": 16, "key_writes": 32, "value_writes": 32}]}
DESIGN = {"heads": 2, "head_dim": 32, "seq_max": 16, "T": 16}


def _run(passed: bool = True, failed_in: str = "") -> AttentionRun:
    job = Job("attention", "icarus", (("T", 16),), None, 0)
    res = JobResult(job, passed, {"events": 900, "mismatches": 0}, "" if passed else
                    "the bench stopped before its verdict: ModuleNotFoundError: x",
                    1.5, 60.0, failed_in=failed_in)
    return AttentionRun(res, FIGURES)


def test_a_passing_run(tmp_path):
    doc = report.document(DESIGN, 1, [10, 16], {"icarus": _run()})
    assert doc["passed"] and doc["simulators"]["icarus"]["events"] == 900
    path = report.write(doc, tmp_path)
    text = path.read_text()
    assert text.splitlines()[2] == ("**PASS**: 2 sentences of 10 to 16 tokens, every event and "
                                    "counter against the golden model, on icarus.")
    assert "| attn_prob (golden) | 3.0 | 4.0 |" in text
    assert json.loads((tmp_path / "attention.json").read_text()) == doc


def test_a_failed_simulator_fails_the_report(tmp_path):
    doc = report.document(DESIGN, 1, [10, 16], {"icarus": _run(), "verilator":
                                                _run(False, "bench")})
    assert not doc["passed"] and doc["simulators"]["verilator"]["figures"] is None
    text = report.markdown(doc)
    assert text.splitlines()[2].startswith("**FAIL**")
    assert "FAIL in bench, before the bench's verdict: the bench stopped" in text


def test_a_run_starts_by_removing_the_earlier_report(tmp_path):
    report.write(report.document(DESIGN, 1, [10], {"icarus": _run()}), tmp_path)
    (tmp_path / "notes.txt").write_text("the user's")
    report.retract(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]


def test_the_schema_refuses_a_malformed_document():
    doc = report.document(DESIGN, 1, [10], {"icarus": _run()})
    doc["simulators"]["icarus"]["mismatches"] = -1
    with pytest.raises(ValueError, match="mismatches"):
        report.validate(doc, "attention", "attention.json")
