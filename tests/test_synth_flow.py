"""The whole ``matterhorn synth`` flow on each liberty (the default NanGate 45 nm, and the sky130
HD test liberty where it is found): report, determinism."""

from __future__ import annotations

import json

import pytest

from energy_model.unit_costs import paper_table
from matterhorn.cli import main
from synth_scripts import report, run

PAPER = paper_table()["unit_costs_pJ"]
PAPER_KEYS = set(PAPER)
#: What differs between the libraries: nominal supply, the scaling factor's range, the largest
#: leakage share at 10 ns, the tolerance of the cross-check where it should agree, and the
#: largest cross-check ratio around an accumulator.
EXPECT = {
    "sky130hd_tt.lib.gz": {"vdd": 1.8, "factor": (50, 150), "leak": 1e-3, "agree": 0.02,
                           "acc": 0.95},
    "stdcells.lib": {"vdd": 1.1, "factor": (5, 10), "leak": 0.2, "agree": 0.04, "acc": 0.99},
}


@pytest.fixture(scope="module")
def full(tmp_path_factory, any_lib):
    """One full run through the command: operators and blocks, liberty flow."""
    out = tmp_path_factory.mktemp("synth") / "out"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        status = main(
            ["synth", "--T", "16", "--k", "1", "--liberty", str(any_lib), "--out", str(out)]
        )
    return {"status": status, "out": out, "stdout": buf.getvalue(), "lib": any_lib,
            "expect": EXPECT[any_lib.name]}


def test_command_writes_report_and_prints_comparison(full):
    assert full["status"] == 0
    out = full["out"]
    assert "mh_core_" not in " ".join(p.name for p in (out / "netlists").iterdir())
    assert sorted(p.name for p in out.iterdir()) == [
        "netlists",
        "synth_report.json",
        "synth_report.md",
    ]
    text = full["stdout"]
    assert "## Comparison with the paper (22 nm, 0.8 V)" in text
    assert "Stillmaker & Baas" in text
    assert "Event hop (router, one flit per clock)" in text
    assert (out / "synth_report.md").read_text() in text


def test_unit_costs_have_the_paper_shape_and_keys(full):
    doc = report.load(full["out"] / "synth_report.json")
    costs = doc["unit_costs_pJ"]
    assert set(costs) == PAPER_KEYS | {report.ROUTER_KEY}
    for key, entry in costs.items():
        assert set(entry) == {"value", "unit", "note", "provenance"}, key
        assert entry["value"] > 0, key
        assert entry["unit"] == (PAPER[key]["unit"] if key in PAPER_KEYS else "pJ/event/hop")
    for key in report.NOT_SYNTHESIZED:
        assert costs[key]["value"] == PAPER[key]["value"]
        assert costs[key]["provenance"].startswith("carried from the paper")
    raw = doc["unit_costs_pJ_native"]
    factor = doc["scaling"]["divide_by"]
    lo, hi = full["expect"]["factor"]
    assert lo < factor < hi
    for key in report.OPERATOR_KEYS:
        assert costs[key]["value"] == pytest.approx(raw[key]["value"] / factor, rel=1e-5)


def test_the_energy_model_reads_the_report(full):
    from energy_model.unit_costs import load_unit_costs

    costs = load_unit_costs(full["out"] / "synth_report.json", complete=True)
    assert set(costs.sources()) == PAPER_KEYS | {report.ROUTER_KEY}


def test_report_fields(full):
    doc = json.loads((full["out"] / "synth_report.json").read_text())
    assert doc["schema"] == report.SCHEMA
    assert doc["parameters"] == {"T": 16, "k": 1, "clock_ns": 10.0, "clock_MHz": 100.0}
    assert doc["tools"]["yosys"].startswith("Yosys 0.23")
    assert doc["tools"]["sta"] == "OpenSTA 2.0.17"
    expect = full["expect"]
    assert doc["liberty"]["file"] == full["lib"].name
    assert doc["liberty"]["nom_voltage_V"] == expect["vdd"]
    for e in doc["operators"]:
        en = e["energy_pJ"]
        assert en["per_op"] == pytest.approx(e["power"]["total_W"] * 10e-9 * 1e12, rel=1e-4)
        assert 0 < en["leakage_share"] < expect["leak"]
        assert e["power"]["worst_slack_ns"] > 0
        assert (full["out"] / e["mapped"]["netlist"]).is_file()
    # cross-check with measured activity on every register: the same where the logic sees only
    # the ports' statistics, lower where vectorless propagation runs around an accumulator
    cross = {e["key"]: e["energy_pJ"]["cross_check_measured_registers"] for e in doc["operators"]}
    for key in ("E_CMP", "E_SUB", "E_clamp4", "E_enc"):
        assert cross[key]["ratio_to_per_op"] == pytest.approx(1.0, abs=expect["agree"]), key
    for key in ("E_ACC1", "E_ACC2", "E_ACC4", "E_MAC4", "E_MAC4x4"):
        assert 0.5 < cross[key]["ratio_to_per_op"] < expect["acc"], key
    # the widths the report states
    widths = {e["key"]: e["params"] for e in doc["operators"]}
    assert widths["E_ACC4"] == {"B": 4, "W": 18}
    assert widths["E_MAC4x4"] == {"A": 4, "B": 4, "W": 16}
    names = {b["name"]: b for b in doc["blocks"]}
    assert sorted(names) == ["dense_tile", "encoder", "router", "sram_interface", "tile"]
    for tile in ("tile", "dense_tile"):
        assert names[tile]["energy_pJ"]["per_neuron"] == pytest.approx(
            names[tile]["energy_pJ"]["per_op"] / 8, rel=1e-4
        )
    hop = doc["comparison"]["event_hop"]
    assert hop["native_pJ"] == names["router"]["energy_pJ"]["per_op"]
    assert names["router"]["runs"]["idle"]["energy_pJ"]["per_op"] < hop["native_pJ"]
    # the ranking lists every operator once
    rank = doc["comparison"]["ranking"]["ours_cheapest_first"]
    assert sorted(rank) == sorted(report.OPERATOR_KEYS)


def test_no_absolute_paths_or_dates(full):
    for path in full["out"].rglob("*"):
        if path.is_file():
            text = path.read_text()
            assert str(full["out"]) not in text and "/tmp" not in text, path
            assert "/work" not in text and "/home" not in text, path


def test_deterministic_and_generic_flow(full, tmp_path):
    again = run.synthesize(16, 1, tmp_path / "ops", liberty_file=full["lib"], blocks=False)
    first = json.loads((full["out"] / "synth_report.json").read_text())
    assert again["operators"] == first["operators"]
    for key in report.OPERATOR_KEYS:
        assert again["unit_costs_pJ"][key] == first["unit_costs_pJ"][key]
    for net in (tmp_path / "ops" / "netlists").glob("*.v"):
        assert net.read_bytes() == (full["out"] / "netlists" / net.name).read_bytes()
    (tmp_path / "gen" / "netlists").mkdir(parents=True)  # stale output of an earlier run
    generic = run.synthesize(16, 1, tmp_path / "gen", blocks=False, environ={},
                             default_liberty=False)
    assert generic["liberty"] is None and "unit_costs_pJ" not in generic
    for a, b in zip(generic["operators"], first["operators"], strict=True):
        assert a["generic"] == b["generic"]
        assert a["mapped"] is None and a["energy_pJ"] is None
    assert not (tmp_path / "gen" / "netlists").exists()


def test_default_liberty_is_nangate(nangate_lib, tmp_path):
    """Without --liberty and PDK_ROOT the command synthesizes with NanGate 45 nm."""
    doc = run.synthesize(16, 1, tmp_path / "d", blocks=False, environ={})
    assert doc["liberty"]["file"] == nangate_lib.name == "stdcells.lib"
    assert doc["liberty"]["library"] == "NangateOpenCellLibrary"
    assert doc["scaling"]["technology"] == "nangate45"
    assert doc["scaling"]["source"] == {"node": "HP45", "vdd_V": 1.1, "energy_factor": 1.04391}
    assert doc["scaling"]["divide_by"] == 6.814
    assert "NanGate 45 nm scaled to 22 nm" in doc["unit_costs_pJ"]["E_MAC4"]["provenance"]
