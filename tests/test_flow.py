"""The end-to-end flow: bad input, the report folder, provenance."""

from __future__ import annotations

import json

import pytest

from matterhorn.cli import main
from matterhorn.flow import FlowConfig, run_flow


@pytest.mark.parametrize(
    ("kwargs", "exc", "message"),
    [
        (
            {"T": 12},
            ValueError,
            "T must be a power of two 2**n with n in 1..8 (2, 4, 8, ..., 256), not 12",
        ),
        ({"T": 128}, ValueError, "T must be at most 64 for the generated RTL, not 128"),
        ({"T": 16, "k": 16}, ValueError, "k must be in 0..15 for T=16, not 16"),
        ({"sims": ("modelsim",)}, ValueError,
         "simulator must be one of ('icarus', 'verilator'), not 'modelsim'"),
        ({"skip": ("lint",)}, ValueError,
         ("stage must be one of ('generate', 'regress', 'stats', 'synth', 'energy', 'compare'), "
          "not 'lint'")),
        ({"clock_ns": 0}, ValueError, "clock_ns must be in 0.1..1000 ns, not 0"),
        ({"liberty": "no/such.lib"}, FileNotFoundError,
         "liberty file 'no/such.lib' does not exist"),
    ],
)
def test_bad_config(kwargs, exc, message, tmp_path):
    with pytest.raises(exc) as info:
        FlowConfig(out_dir=tmp_path / "out", **kwargs)
    assert str(info.value) == message
    assert not (tmp_path / "out").exists()


def test_cli_bad_input_writes_nothing(tmp_path, capsys):
    out = tmp_path / "flow"
    assert main(["flow", "--T", "12", "--out", str(out)]) == 2
    assert "T must be a power of two" in capsys.readouterr().err
    assert not out.exists()


def test_flow_report(tmp_path):
    """generate + stats + energy (regress and synth have their own suites) into one folder."""
    cfg = FlowConfig(T=16, k=1, out_dir=tmp_path / "flow", skip=("regress", "synth", "compare"))
    lines = []
    result = run_flow(cfg, progress=lines.append)
    assert result.ok, result.stages
    root = cfg.out_dir
    doc = json.loads((root / "flow.json").read_text())
    assert doc["parameters"]["T"] == 16 and doc["parameters"]["k"] == 1
    assert sorted(doc["stages"]) == sorted(["generate", "regress", "stats", "synth", "energy",
                                            "compare"])
    assert doc["stages"]["regress"]["status"] == "skipped"
    assert (root / "rtl" / "mttfs_tile.v").is_file()
    assert (root / "stats" / "golden_stats.json").is_file()
    runs = doc["stages"]["energy"]["runs"]
    assert set(runs) == {"paper", "measured"}
    # paper rates and costs reproduce the paper's total for M-TTFS k=1 (48.27 mJ)
    rows = {r["name"]: r for r in runs["paper"]["table"]["rows"]}
    assert rows["Matterhorn M-TTFS (k=1)"]["total_J"] * 1e3 == pytest.approx(48.27, rel=2e-3)
    summary = (root / "summary.md").read_text()
    assert "# Matterhorn flow: T=16, k=1" in summary
    assert "Where each figure came from" in summary
    assert "golden_stats.json" in summary
    assert str(tmp_path) not in summary and str(tmp_path) not in (root / "flow.json").read_text()
    assert any("energy: done" in line for line in lines)
    # the images the summary links exist
    for line in summary.splitlines():
        if line.startswith("!["):
            assert (root / line.split("(")[1].rstrip(")")).is_file()


def test_failed_stage_is_reported(tmp_path):
    cfg = FlowConfig(T=16, k=1, out_dir=tmp_path / "flow", skip=("regress", "synth", "compare"))
    cfg.rates_file = cfg.out_dir / "missing.json"  # bypasses the constructor check on purpose
    result = run_flow(cfg, progress=lambda _: None)
    assert not result.ok
    assert result.stages["energy"]["status"] == "failed"
    assert "missing.json" in result.stages["energy"]["error"]
    # paths inside the report folder are written relative to it
    assert str(tmp_path) not in (cfg.out_dir / "flow.json").read_text()
    assert "failed" in (cfg.out_dir / "summary.md").read_text()


def test_full_flow_on_defaults(tmp_path, nangate_lib):
    """Every stage, as ``./run flow`` runs it: Icarus, synthesis on the default NanGate 45 nm
    library, synthesized unit costs in the energy section, and the comparison in gates."""
    cfg = FlowConfig(out_dir=tmp_path / "flow")
    result = run_flow(cfg, progress=lambda _: None)
    assert result.ok, {k: v.get("error") for k, v in result.stages.items()}
    regress = result.stages["regress"]
    assert regress["failed"] == 0 and regress["mismatches"] == 0 and regress["events"] > 0
    assert regress["counters_equal"] is True
    assert result.stages["synth"]["liberty"]["library"] == "NangateOpenCellLibrary"
    runs = result.stages["energy"]["runs"]
    assert set(runs) == {"paper", "paper_rates_our_costs", "measured"}
    # the synthesized costs (by file) beside those the open flow cannot make (the paper's)
    assert "synth_report.json" in runs["measured"]["unit_costs"]
    summary = (cfg.out_dir / "summary.md").read_text()
    assert "Liberty: `NangateOpenCellLibrary`" in summary
    assert "| mismatches | 0 |" in summary
    verdicts = result.stages["compare"]["verdicts"]
    assert list(verdicts)[0] == "NanGate 45 nm, random"
    assert "in our gates, M-TTFS k=1 costs" in summary
    assert (cfg.out_dir / "compare" / "compare.json").is_file()
