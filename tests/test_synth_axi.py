"""The AXI wrappers' own cost on NanGate 45 nm (synth_scripts.axi_cost): area and energy per
clock, streaming and idle, reported under ``wrappers``, never among the blocks."""

from __future__ import annotations

import pytest

from synth_scripts import axi_cost, report
from toolkit_base.schemas import validate


@pytest.fixture(scope="module")
def priced(tmp_path_factory, nangate_lib):
    return axi_cost.price(16, 1, nangate_lib, tmp_path_factory.mktemp("axi"))


def test_wrappers_are_priced_apart(priced):
    names = {w["name"]: w for w in priced}
    assert sorted(names) == ["axi_system", "axi_tile"]
    for w in priced:
        assert w["mapped"]["area_um2"] > 0 and w["mapped"]["flip_flops"] > 0
        e = w["energy_pJ"]
        assert 0 < e["idle_per_clock"] < e["per_op"]  # streaming costs more than idling
        assert w["runs"]["loaded"]["power"]["worst_slack_ns"] > 0
    # the system's wrapper keeps a snapshot of every node's counters: more registers
    assert names["axi_system"]["config"]["registers"] > names["axi_tile"]["config"]["registers"]
    assert names["axi_system"]["mapped"]["flip_flops"] > names["axi_tile"]["mapped"]["flip_flops"]


def test_report_carries_them_outside_the_blocks(priced):
    doc = {"schema": report.SCHEMA, "parameters": {"T": 16, "k": 1, "clock_ns": 10.0},
           "tools": {}, "liberty": None, "operators": [], "blocks": [], "wrappers": priced}
    validate(doc, "synth_report", "synth_report.json")
    md = report.markdown({**doc, "parameters": {**doc["parameters"], "clock_MHz": 100.0}})
    assert "## AXI wrappers (not in the unit costs or the comparisons)" in md
    assert "| axi_system |" in md and "| axi_tile |" in md
