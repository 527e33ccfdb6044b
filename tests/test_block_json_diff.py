"""scripts/block_json_diff.py: two block.json documents compared figure by figure, exactly."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("block_json_diff",
                                               ROOT / "scripts" / "block_json_diff.py")
diff = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(diff)

DOC = {"designs": [{"design": "dense", "mismatches": 0, "cycles": 120,
                    "energy_pJ": {"gates": {"total": 1.5, "compute": 0.25}}}],
       "gates": {"seconds": {"dense": 3.0}, "method": {"dense": {"sample_seconds": 4.0}}}}


def _doc(**changes):
    doc = json.loads(json.dumps(DOC))
    for path, value in changes.items():
        *keys, last = path.split("/")
        where = doc
        for k in keys:
            where = where[int(k)] if k.isdigit() else where[k]
        where[last] = value
    return doc


def test_equal_documents_have_no_difference():
    lines, leaves = diff.differences(DOC, _doc())
    assert lines == [] and leaves == 5


def test_a_changed_figure_is_named_by_its_path():
    lines, _ = diff.differences(DOC, _doc(**{"designs/0/energy_pJ/gates/total": 1.5000000001}))
    assert lines == ["designs[0].energy_pJ.gates.total: 1.5 against 1.5000000001"]
    lines, _ = diff.differences(DOC, _doc(**{"designs/0/cycles": 120.0}))
    assert lines == ["designs[0].cycles: 120 against 120.0"]


def test_wall_clock_seconds_are_left_out():
    other = _doc(**{"gates/seconds": {"dense": 9.0}, "gates/method/dense/sample_seconds": 1.0})
    assert diff.differences(DOC, other)[0] == []


def test_a_text_is_shown_apart():
    other = _doc(**{"designs/0/design": "mttfs-k1"})
    want = "text: designs[0].design: 'dense' against 'mttfs-k1'"
    assert diff.differences(DOC, other)[0] == [want]


def test_main_exits_1_on_a_figure_not_on_a_text(tmp_path, capsys):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(DOC))
    b.write_text(json.dumps(_doc(**{"designs/0/mismatches": 1})))
    assert diff.main([str(a), str(a)]) == 0
    assert diff.main([str(a), str(b)]) == 1
    assert "designs[0].mismatches: 0 against 1" in capsys.readouterr().out
    assert diff.main([str(a), str(tmp_path / "none.json")]) == 2
    b.write_text(json.dumps(_doc(**{"designs/0/design": "other"})))
    assert diff.main([str(a), str(b)]) == 0
    assert "0 figures and 1 texts differ" in capsys.readouterr().out
