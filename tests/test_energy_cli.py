"""``matterhorn energy``: table, files, plots and clear errors."""

import json
import re

import pytest

import energy_model as em
from matterhorn.cli import main


def run(capsys, *argv):
    status = main(["energy", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def check_error(capsys, tmp_path, message, *argv):
    out_dir = tmp_path / "never"
    status, out, err = run(capsys, *argv, "--out", str(out_dir))
    assert status == 2
    assert err == f"matterhorn energy: error: {message}\n"
    assert not out_dir.exists()  # nothing half-written


def write_synth(tmp_path, key, value, unit, provenance=None):
    """A ``synth_report.json`` holding one unit cost."""
    cost = {"value": value, "unit": unit}
    if provenance is not None:
        cost["provenance"] = provenance
    path = tmp_path / "synth_report.json"
    path.write_text(json.dumps({"schema": em.SYNTH_SCHEMA, "unit_costs_pJ": {key: cost}}))
    return path


def test_default_run_reproduces_the_paper_and_writes_everything(capsys, tmp_path):
    status, out, _ = run(capsys, "--out", str(tmp_path / "a"))
    assert status == 0
    # the paper's W-read (2.114) is W-read + KV-write here
    assert ("Matterhorn M-TTFS (k=1)        16         1.57%  44.91    2.109   0.004955     1.303  "
            "48.33") in out
    # every column priced with the paper's (borrowed) unit costs, and the table says so
    assert "Move*  W-read*  KV-write*  Compute*" in out
    assert "* every column: priced with the paper's unit costs (22 nm, borrowed, not our gates)" \
           in out
    assert "Matterhorn QNN (dense)" in out and "71.54   1.00x" in out
    assert "crossover with dense QNN: Matterhorn M-TTFS (k=0) at 2.7640 pJ/event" in out
    # in the tables' convention, energy relative to dense (the paper's "1.48x advantage")
    assert ("energy relative to the dense QNN: Matterhorn M-TTFS (k=1): 0.100x at 0.25 pJ/event, "
            "0.675x at 3 pJ/event") in out
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == sorted(
        [
            "energy_table.txt",
            "energy_report.json",
            "energy_table.csv",
            "energy_positions.csv",
            "energy_ops.csv",
            "energy_sensitivity.json",
            "energy_sensitivity.csv",
            "energy_breakdown.png",
            "energy_sensitivity.png",
        ]
    )
    report = json.loads((tmp_path / "a" / "energy_report.json").read_text())
    assert report["rows"][-1]["name"] == "Matterhorn M-TTFS (k=1)"
    from toolkit_base.schemas import validate

    sweep = json.loads((tmp_path / "a" / "energy_sensitivity.json").read_text())
    validate(sweep, "energy_sensitivity", "energy_sensitivity.json")
    # deterministic: a second run gives the same bytes, plots included; no absolute paths
    run(capsys, "--out", str(tmp_path / "b"))
    for name in names:
        a = (tmp_path / "a" / name).read_bytes()
        assert a == (tmp_path / "b" / name).read_bytes(), name
        assert str(tmp_path).encode() not in a


def test_stats_file_adds_the_spike_time_plot(capsys, tmp_path):
    positions = {
        p: {"family": em.rates.family_of(p), "histogram": {"0": 8, "1": 1, "2": 1}}
        for p in em.POSITIONS
    }
    stats = tmp_path / "stats.json"
    stats.write_text(json.dumps({"T": 16, "positions": positions}))
    status, out, _ = run(capsys, "--rates-file", str(stats), "--out", str(tmp_path / "o"))
    assert status == 0
    assert (tmp_path / "o" / "spike_times.png").stat().st_size > 10_000
    assert "rates: statistics file stats.json" in out
    assert "Matterhorn M-TTFS (k=2)" in out


def test_rate_event_cost_and_synth(capsys, tmp_path):
    synth = write_synth(tmp_path, "E_MAC4", 0.05, "pJ/op", "yosys 0.23 + OpenSTA, sky130")
    status, out, _ = run(
        capsys,
        "--rate",
        "2.0",
        "--k",
        "1",
        "--event-cost",
        "1.0",
        "--synth",
        str(synth),
        "--no-plots",
        "--out",
        str(tmp_path / "o"),
    )
    assert status == 0
    assert "event cost 1.000 pJ" in out
    assert re.search(r"\nMatterhorn M-TTFS \(k=1\) +16 +2\.00% ", out)
    assert "  E_MAC4: synth_report.json: yosys 0.23 + OpenSTA, sky130\n" in out
    assert "  E_move_event: command line --event-cost\n" in out
    assert not (tmp_path / "o" / "energy_breakdown.png").exists()


def test_llama_preset_uses_the_papers_llama_rates(capsys, tmp_path):
    status, out, _ = run(capsys, "--preset", "llama2-70b", "--no-plots", "--out", str(tmp_path))
    assert status == 0
    assert "llama2-70b" in out and "rates: paper (LLaMA-2 70B)" in out
    assert "Matterhorn M-TTFS (k=1)" in out and "3.48%" in out
    assert "SpikingBERT" not in out


def test_unknown_preset(capsys, tmp_path):
    check_error(
        capsys,
        tmp_path,
        "unknown preset 'bert-huge'; valid presets: bert-base, llama2-7b, llama2-13b, "
        "llama2-70b, minilm-l6",
        "--preset",
        "bert-huge",
    )


def test_negative_rate(capsys, tmp_path):
    check_error(
        capsys,
        tmp_path,
        "spike rate for M-TTFS k=1 must be in 0..100 %, not -0.5 %",
        "--rate",
        "-0.5",
    )


def test_rate_above_100(capsys, tmp_path):
    check_error(
        capsys,
        tmp_path,
        "spike rate for M-TTFS k=2 must be in 0..100 %, not 150 %",
        "--rate",
        "150",
        "--k",
        "2",
    )


def test_unit_cost_file_missing_key(capsys, tmp_path):
    data = {
        "unit_costs_pJ": {k: c.to_json() for k, c in em.paper_unit_costs().items() if k != "E_SUB"}
    }
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(data))
    check_error(
        capsys, tmp_path, "unit-cost file mine.json is missing 'E_SUB'", "--unit-costs", str(path)
    )


def test_synth_report_with_wrong_unit(capsys, tmp_path):
    path = write_synth(tmp_path, "E_move_dense", 0.2, "pJ/event/hop")
    check_error(
        capsys,
        tmp_path,
        "unit cost 'E_move_dense' in synth_report.json has unit "
        "'pJ/event/hop', expected an energy per bit/hop such as 'pJ/bit/hop'",
        "--synth",
        str(path),
    )


def test_T_without_rates(capsys, tmp_path):
    check_error(
        capsys,
        tmp_path,
        "--T 8 needs --rate or --rates-file: the paper's rates are for T=16",
        "--T",
        "8",
    )


@pytest.mark.parametrize(
    "argv, message",
    [
        (("--hidden", "100"), "hidden (100) must be a multiple of heads (12)"),
        (("--event-cost", "-1"), "event cost must be a number of pJ in 0..1e+06, not -1.0"),
        (
            ("--k", "99"),
            (
                "--k 99 applies to the row of --rate; the paper's rates and a --rates-file carry "
                "their own radii"
            ),
        ),
        (("--rate", "1.6", "--k", "99"), "dead-zone radius k must be in 0..15, not 99"),
    ],
)
def test_other_bad_values(capsys, tmp_path, argv, message):
    check_error(capsys, tmp_path, message, *argv)


def test_event_cost_from_the_synthesized_router(capsys, tmp_path):
    synth = write_synth(
        tmp_path, "E_move_event_router", 0.5, "pJ/event/hop", "mttfs_router, Yosys + OpenSTA"
    )
    status, out, _ = run(
        capsys,
        "--synth",
        str(synth),
        "--event-cost",
        "router",
        "--no-plots",
        "--out",
        str(tmp_path / "o"),
    )
    assert status == 0
    assert "event cost 0.5000 pJ" in out
    assert (
        "  E_move_event, E_move_event_router: synth_report.json: mttfs_router, Yosys + OpenSTA\n"
        in out
    )
    check_error(
        capsys,
        tmp_path,
        "event cost 'router' needs E_move_event_router from a synthesis report (--synth)",
        "--event-cost",
        "router",
    )
    check_error(
        capsys,
        tmp_path,
        "--event-cost must be a number of pJ or 'router', not 'cheap'",
        "--event-cost",
        "cheap",
    )


def test_other_T_scales_the_source_qnn_width(capsys, tmp_path):
    # T=32: the source QNN has 5-bit activations, so dense Move is 5/4 of the paper's 61.20 mJ
    status, out, _ = run(
        capsys, "--T", "32", "--rate", "1.0", "--k", "2", "--no-plots", "--out", str(tmp_path)
    )
    assert status == 0
    assert re.search(r"\nMatterhorn QNN \(dense\) +n/a +n/a +76\.50 ", out)
    # Otters keeps 4-bit K/V: the KV-write of the paper's T=16 rows
    assert re.search(r"\nOtters +15 +5\.14% +137\.8 +5\.373 +0\.004955 ", out)
    assert re.search(r"\nMatterhorn M-TTFS \(k=2\) +32 +1\.00% ", out)


def test_borrowed_costs_are_the_papers_and_the_carried_ones(tmp_path):
    """``UnitCost.borrowed``: the paper's table, and what a synthesis report carries from it
    (``synth_scripts.report.unit_costs`` writes the words ``BORROWED_MARK`` looks for), never a
    cost synthesized here. A table priced with them marks those columns and names the costs."""
    from energy_model.unit_costs import BORROWED_MARK
    from synth_scripts.report import NOT_SYNTHESIZED, unit_costs

    section = unit_costs({"E_MAC4": {"per_op": 0.2}}, 1.0, 2.0, scaled=True, native="NanGate")
    assert all(BORROWED_MARK in section[key]["provenance"] for key in NOT_SYNTHESIZED)
    path = tmp_path / "synth_report.json"
    path.write_text(json.dumps({"schema": em.SYNTH_SCHEMA, "unit_costs_pJ": section}))
    costs = em.resolve_unit_costs("paper", synth=str(path))
    assert not costs["E_MAC4"].borrowed and not costs["E_move_event_router"].borrowed
    assert all(costs[key].borrowed for key in NOT_SYNTHESIZED)
    assert all(c.borrowed for c in em.paper_unit_costs().values())
    report = em.compute(em.preset("bert-base"), em.Rates.paper("SST-2"), costs)
    assert set(report.borrowed()["move"]) >= {"E_move_event"}
    last = report.table().splitlines()[-1]
    # only E_MAC4 was synthesized here: the other operators stay the paper's, E_MAC4 is ours
    assert last.startswith("* Move, W-read, KV-write, Compute: priced with the paper's unit "
                           "costs (22 nm, borrowed, not our gates): ")
    assert "E_move_event 3.000 pJ/event/hop" in last
    assert "E_MAC4 " not in last and "E_ACC1 " in last
    # the plots' title names the same columns (every component, KV-write included)
    from energy_model.plots import costs_label

    assert costs_label(report) == ("our synthesized unit costs, Move and W-read and KV-write and "
                                   "Compute at the paper's (borrowed)")
