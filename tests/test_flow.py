"""The end-to-end flow: bad input, the report folder, provenance."""

from __future__ import annotations

import json

import pytest

from matterhorn.cli import main
from matterhorn.flow import STAGES, FlowConfig, run_flow


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
         ("stage must be one of ('generate', 'regress', 'stats', 'synth', 'energy', 'compare', "
          "'block', 'network'), not 'lint'")),
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
    cfg = FlowConfig(T=16, k=1, out_dir=tmp_path / "flow",
                     skip=("regress", "synth", "compare", "block", "network"))
    lines = []
    result = run_flow(cfg, progress=lines.append)
    assert result.ok, result.stages
    root = cfg.out_dir
    doc = json.loads((root / "flow.json").read_text())
    assert doc["parameters"]["T"] == 16 and doc["parameters"]["k"] == 1
    assert sorted(doc["stages"]) == sorted(["generate", "regress", "stats", "synth", "energy",
                                            "compare", "block", "network"])
    assert doc["stages"]["regress"]["status"] == "skipped"
    assert (root / "rtl" / "mttfs_tile.v").is_file()
    assert (root / "stats" / "golden_stats.json").is_file()
    runs = doc["stages"]["energy"]["runs"]
    assert set(runs) == {"paper", "measured"}
    # paper rates and costs reproduce the paper's total for M-TTFS k=1 (48.27 mJ)
    rows = {r["name"]: r for r in runs["paper"]["table"]["rows"]}
    assert rows["Matterhorn M-TTFS (k=1)"]["total_J"] * 1e3 == pytest.approx(48.27, rel=2e-3)
    summary = (root / "summary.md").read_text()
    # the answer first: here there is none, and the summary says why
    assert summary.startswith("# Matterhorn flow: T=16, k=1\n\n**No verdict**: the compare "
                              "stage was skipped;")
    assert "Where each figure came from" in summary
    assert "golden_stats.json" in summary
    # provenance of what ran, and only of that
    assert "- Measured in this run (seed 1): RTL, golden statistics.\n" in summary
    assert ("- Not measured in this run (skipped, failed or not run): regress, synth, "
            "compare, block, network;") in summary
    assert "Synthesized unit costs" not in summary and "Comparison in gates" not in summary
    # every energy table marks the columns priced with the paper's (borrowed) costs
    assert "* every column: priced with the paper's unit costs (22 nm, borrowed" in summary
    assert str(tmp_path) not in summary and str(tmp_path) not in (root / "flow.json").read_text()
    assert any("energy: done" in line for line in lines)
    # the images the summary links exist
    for line in summary.splitlines():
        if line.startswith("!["):
            assert (root / line.split("(")[1].rstrip(")")).is_file()


def test_the_network_stage(tmp_path):
    """The small random network through the flow: its stage's figures, its section of the
    summary and its report folder (the other stages have their own tests)."""
    cfg = FlowConfig(T=16, k=1, out_dir=tmp_path / "flow",
                     skip=tuple(s for s in STAGES if s != "network"))
    result = run_flow(cfg, progress=lambda _: None)
    assert result.ok, result.stages
    network = result.stages["network"]
    assert network["blocks"] == 2 and network["tokens"] > 0 and network["checked"] > 0
    assert network["verdict"][-1].startswith("random network, 2 blocks, 1 sentence")
    assert "0 mismatches" in network["verdict"][-1]
    summary = (cfg.out_dir / "summary.md").read_text()
    assert "## A whole network, block after block (`network/`)" in summary
    assert (cfg.out_dir / "network" / "network.png").is_file()
    doc = json.loads((cfg.out_dir / "network" / "network.json").read_text())
    assert [d["design"] for d in doc["designs"]] == ["dense", "mttfs-k1"]


def test_failed_stage_is_reported(tmp_path):
    cfg = FlowConfig(T=16, k=1, out_dir=tmp_path / "flow",  # the RTL: test_flow_report
                     skip=("generate", "regress", "synth", "compare", "block",
                           "network"))
    cfg.rates_file = cfg.out_dir / "missing.json"  # bypasses the constructor check on purpose
    result = run_flow(cfg, progress=lambda _: None)
    assert not result.ok
    assert result.stages["energy"]["status"] == "failed"
    assert "missing.json" in result.stages["energy"]["error"]
    assert result.stages["energy"]["log"] == "logs/energy.log"
    # paths inside the report folder are written relative to it
    assert str(tmp_path) not in (cfg.out_dir / "flow.json").read_text()
    summary = (cfg.out_dir / "summary.md").read_text()
    assert summary.startswith("# Matterhorn flow: T=16, k=1\n\n**FAILED** at the energy stage: "
                              "FileNotFoundError: ")
    # before: the traceback's lines broke the stage table; now one row, the traceback linked
    row = next(line for line in summary.splitlines() if line.startswith("| energy |"))
    assert row.startswith("| energy | failed |") and row.endswith(
        "([traceback](logs/energy.log)) |")
    table = summary.split("## Stages\n\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert len(table) == 2 + len(result.stages)
    log = (cfg.out_dir / "logs" / "energy.log").read_text()
    assert log.startswith("Traceback (most recent call last)") and "missing.json" in log
    assert str(tmp_path / "flow") not in log
    # before: "measured in this run" listed every stage, the failed one too
    assert "- Measured in this run (seed 1): golden statistics.\n" in summary
    assert "Measured rates" not in summary
    # the next run that passes removes the earlier run's traceback (it reruns only the stage
    # that failed: stats passed above and is skipped)
    cfg.rates_file = None
    cfg.skip = (*cfg.skip, "stats")
    assert run_flow(cfg, progress=lambda _: None).ok
    assert not (cfg.out_dir / "logs").exists()


def test_console_prints_the_verdict_and_the_path(tmp_path, capsys):
    """The flow's standard output is the answer and the report's path (one screen), not the
    summary; ``--verbose`` prints the summary, ``--quiet`` nothing."""
    # the RTL is test_flow_report's: stats and energy
    skip = ["--skip", "generate", "--skip", "regress", "--skip", "synth", "--skip", "compare",
            "--skip", "block", "--skip", "network"]
    out = tmp_path / "flow"
    assert main(["flow", *skip, "--out", str(out)]) == 0
    got = capsys.readouterr()
    lines = got.out.splitlines()
    assert lines[0].startswith("No verdict: the compare stage was skipped;")
    assert lines[-1] == f"report: {out / 'summary.md'}"
    assert len(lines) <= 25
    assert "[flow 1/2" in got.err and "stats: done in" in got.err  # progress on stderr
    # the console levels do not depend on the stages: the energy stage alone from here on
    skip += ["--skip", "stats"]
    assert main(["flow", *skip, "--verbose", "--out", str(out)]) == 0
    assert capsys.readouterr().out.startswith("# Matterhorn flow: T=16, k=1\n")
    assert main(["flow", *skip, "--quiet", "--out", str(out)]) == 0
    assert capsys.readouterr() == ("", "")


def test_verdict_block_of_a_compare_stage(tmp_path):
    """The verdict reads the compare stage's rows: each design against dense, the model and
    its error, a workload that did not run; the energy tables quote the measured movement
    error beside the borrowed event cost."""
    from types import SimpleNamespace

    from matterhorn.report import _section_energy, verdict_lines

    row = {"workload": "random", "shape": "64 x 8, 1-bit weights", "technology": "NanGate 45 nm",
           "k": 1, "gates": {"ttfs": 1.13, "mttfs-k0": 0.805, "mttfs-k1": 0.534,
                             "mttfs-k2": 0.457}, "model": 0.554, "model_energy_error": -0.21,
           "model_ratio_error": 0.0375}
    compare = {"status": "ok", "verdict": [row], "missing": ["minilm: not installed"],
               "movement_error": {"NanGate 45 nm": [0.2, 1.6]}}
    result = SimpleNamespace(config=SimpleNamespace(k=1), stages={"compare": compare})
    lines = verdict_lines(result)
    assert lines[0] == ("**Verdict: M-TTFS k=1 against dense INT4, energy per window in our "
                        "gates.**")
    assert ("| random (64 x 8, 1-bit weights) | NanGate 45 nm | 1.13x | 0.805x | **0.534x** | "
            "0.457x | 0.554x (-21%) |") in lines
    # the ratio's difference is named as such, not as the model's error
    assert any("which differs from ours by +4% (random, NanGate 45 nm)" in x for x in lines)
    assert "Not run: minilm: not installed." in lines
    energy = _section_energy({"status": "ok", "runs": {}}, tmp_path, compare)
    assert ("measured the model's movement against our gates' (router netlist, same flits): "
            "+20% to +160% in NanGate 45 nm") in energy[2]


@pytest.mark.slow
def test_full_flow_on_defaults(tmp_path, nangate_lib):
    """Every stage, as ``./run flow`` runs it: Icarus, synthesis on the default NanGate 45 nm
    library, synthesized unit costs in the energy section, and the comparison in gates on the
    random layer and, with the models extra, MiniLM's (about 12 minutes on 2 busy cores)."""
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
    # the answer first: the verdict table, a row per workload
    assert summary.startswith("# Matterhorn flow: T=16, k=1\n\n**Verdict: M-TTFS k=1 against "
                              "dense INT4, energy per window in our gates.**\n\n| workload |")
    from networks.hf_folder import shipped_available

    names = [r["workload"] for r in result.stages["compare"]["verdict"]]
    assert names == (["random", "minilm"] if shipped_available() else ["random"])
    assert "| minilm (384 x 16, 4-bit weights) | NanGate 45 nm |" in summary or not (
        shipped_available())
    block = result.stages["block"]
    assert block["checked"] > 0 and block["verdict"][0].endswith("(dense, mttfs-k1)")
    assert "0 mismatches" in block["verdict"][0]
    assert (cfg.out_dir / "block" / "block.json").is_file()
    network = result.stages["network"]
    assert network["checked"] > 0 and network["blocks"] == 2
    assert "0 mismatches" in network["verdict"][-1]
    assert "equal the QNN's for 2 of 2" in network["verdict"][-1]
    assert (cfg.out_dir / "network" / "network.json").is_file()


def test_the_synthesis_section_says_where_each_cost_is_from():
    # before: E_MAC4 at 22 nm (0.1288) under "Liberty: NangateOpenCellLibrary", beside the
    # paper's assumed E_move_event, neither marked
    from matterhorn.report import _section_synth

    stage = {"status": "ok", "liberty": {"library": "NangateOpenCellLibrary",
                                         "file": "stdcells.lib"},
             "unit_costs_pJ": {"E_MAC4": 0.1288, "E_move_event": 3.0},
             "unit_costs_pJ_native": {"E_MAC4": 0.8776, "E_move_event": 3.0},
             "borrowed": ["E_move_event"]}
    lines = _section_synth(stage)
    assert ("| E_MAC4 | 0.8776 | 0.1288 | synthesized here |") in lines
    assert ("| E_move_event |  | 3 | the paper's (22 nm), borrowed: not made by this flow |"
            ) in lines
    assert any("NangateOpenCellLibrary's node (pJ)" in x for x in lines)
