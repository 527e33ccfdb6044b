"""Weight width (``ModelDims.weight_bits``) and the input checks of issue 11 (exact messages)."""

import gzip
import json
import re

import pytest

import energy_model as em
from matterhorn.cli import main

PAPER = em.paper_unit_costs()
SMALL = em.ModelDims("small", 64, 256, 4, 2, batch=2, seq=16)


def check_error(exc_type, message, fn, *args, **kwargs):
    with pytest.raises(exc_type, match="^" + re.escape(message) + "$"):
        fn(*args, **kwargs)


def check_cli_error(capsys, tmp_path, message, *argv):
    out_dir = tmp_path / "never"
    status = main(["energy", *argv, "--out", str(out_dir), "--no-plots"])
    out, err = capsys.readouterr()
    assert status == 2
    assert err == f"matterhorn energy: error: {message}\n"
    assert not out_dir.exists()


def synth_doc(**fields):
    doc = {
        "schema": em.SYNTH_SCHEMA,
        "unit_costs_pJ": {"E_MAC4": {"value": 0.05, "unit": "pJ/op"}},
    }
    doc.update(fields)
    return doc


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


# --- weight_bits: presets, checks, what it drives -----------------------------------------------


@pytest.mark.parametrize(
    "name, bits",
    [("bert-base", 1), ("llama2-7b", 4), ("llama2-13b", 4), ("llama2-70b", 4), ("minilm-l6", 4)],
)
def test_presets_carry_the_papers_weight_width(name, bits):
    assert em.preset(name).weight_bits == bits
    assert em.preset(name).to_json()["weight_bits"] == bits


@pytest.mark.parametrize(
    "value, exc, message",
    [
        (0, ValueError, "weight_bits must be in 1..8, not 0"),
        (9, ValueError, "weight_bits must be in 1..8, not 9"),
        (True, TypeError, "weight_bits must be an integer, not True"),
        (4.0, TypeError, "weight_bits must be an integer, not 4.0"),
    ],
)
def test_weight_bits_is_checked(value, exc, message):
    check_error(exc, message, em.ModelDims, "x", 64, 256, 4, 2, weight_bits=value)


def test_weight_bits_scales_the_dense_weight_read_and_picks_the_mac():
    w1 = em.compute(SMALL, em.Rates.paper())
    w4 = em.compute(em.ModelDims("small", 64, 256, 4, 2, batch=2, seq=16, weight_bits=4))
    lin = w1.counts["LIN"]
    dense1, dense4 = w1.row("Matterhorn QNN (dense)"), w4.row("Matterhorn QNN (dense)")
    E = PAPER.joules
    assert dense4.energy.move.value == dense1.energy.move.value
    assert dense4.energy.wread.value - dense1.energy.wread.value == pytest.approx(
        3 * lin * E("E_weight"), rel=1e-12
    )
    assert dense4.energy.compute.value - dense1.energy.compute.value == pytest.approx(
        lin * (E("E_MAC4x4") - E("E_MAC4")), rel=1e-12
    )
    assert dense1.op_totals()["E_MAC4"] == lin and "E_MAC4" not in dense4.op_totals()


def test_bert_base_is_unchanged_by_an_explicit_one_bit_width():
    explicit = em.ModelDims("bert-base", 768, 3072, 12, 12, weight_bits=1)
    a, b = em.compute("bert-base"), em.compute(explicit)
    assert [r.energy.total.value for r in a.rows] == [r.energy.total.value for r in b.rows]


def test_event_accumulate_changes_only_the_linear_event_operator():
    dims = em.ModelDims("small", 64, 256, 4, 2, batch=2, seq=16, weight_bits=4)
    rates = em.Rates.uniform(2.0, k=1, baselines=True)
    wide = em.compute(dims, rates, options=em.Options(event_accumulate="weight-width"))
    one = em.compute(dims, rates, options=em.Options(event_accumulate="one-bit"))
    E = PAPER.joules
    lin = wide.counts["LIN"]
    row = "Matterhorn M-TTFS (k=1)"
    s = 16 * 0.02
    assert wide.row(row).energy.wread.value == one.row(row).energy.wread.value
    assert wide.row(row).energy.compute.value - one.row(row).energy.compute.value == pytest.approx(
        s * lin * (E("E_MAC4x4") - E("E_MAC4")), rel=1e-12
    )
    # rate-coded events add a 4-bit weight: E_ACC4 instead of E_ACC1 (SpikingBERT: s = 4)
    assert wide.row("SpikingBERT").op_totals()["E_ACC4"] == pytest.approx(
        4 * lin + 4 * wide.counts["ATT"]
    )
    assert one.row("SpikingBERT").op_totals()["E_ACC1"] == pytest.approx(4 * lin)
    # at one bit the option makes no difference
    a = em.compute(SMALL, rates, options=em.Options(event_accumulate="one-bit"))
    b = em.compute(SMALL, rates)
    assert [r.energy.total.value for r in a.rows] == [r.energy.total.value for r in b.rows]
    check_error(
        ValueError,
        "event_accumulate must be 'weight-width' or 'one-bit', not 'two-bit'",
        em.Options,
        event_accumulate="two-bit",
    )


def test_other_weight_widths_need_their_mac_in_the_table():
    dims = em.ModelDims("small", 64, 256, 4, 2, batch=2, seq=16, weight_bits=2)
    check_error(
        ValueError,
        "weight_bits=2 needs the unit cost 'E_MAC2x4' (a 2-bit x 4-bit MAC), which the unit "
        "costs 'paper' lack: the paper gives only E_MAC4 (1-bit weights) and E_MAC4x4 (4-bit "
        "weights); add it with --unit-costs or --synth",
        em.compute,
        dims,
    )
    costs = PAPER.with_value("E_MAC2x4", 0.075e-12, "test")
    report = em.compute(dims, em.Rates.paper(implied_bit_events=False), costs)
    dense = report.row("Matterhorn QNN (dense)")
    assert dense.op_totals()["E_MAC2x4"] == report.counts["LIN"]
    assert em.mac_key(1) == "E_MAC4" and em.mac_key(4) == "E_MAC4x4" and em.mac_key(8) == "E_MAC8x4"


def test_cli_weight_bits_and_event_accumulate(capsys, tmp_path):
    argv = ["energy", "--preset", "llama2-7b", "--no-plots"]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 0
    out4 = capsys.readouterr().out
    assert ("Matterhorn QNN (dense)   n/a        n/a   1675    656.2    0.02643     141.4   2473  "
            "1.00x") in out4
    assert main([*argv, "--weight-bits", "1", "--out", str(tmp_path / "b")]) == 0
    out1 = capsys.readouterr().out
    assert ("Matterhorn QNN (dense)   n/a        n/a   1675    166.6    0.02643     110.8   1952  "
            "1.00x") in out1
    assert main([*argv, "--event-accumulate", "one-bit", "--out", str(tmp_path / "c")]) == 0
    out = capsys.readouterr().out
    assert "Matterhorn M-TTFS (k=1)   16      3.57%   2856    377.5    0.02643     79.00" in out


def test_cli_minilm_preset_needs_rates(capsys, tmp_path):
    check_cli_error(
        capsys,
        tmp_path,
        "--preset minilm-l6 needs --rate or --rates-file (the stats.json of matterhorn stats): "
        "the paper has no MiniLM rates",
        "--preset",
        "minilm-l6",
    )


# --- TTFS: at most one spike per value ----------------------------------------------------------


def test_ttfs_rate_above_one_spike_per_value_is_rejected(capsys, tmp_path):
    check_error(
        ValueError,
        "TTFS: T=32 at 3.85 % per step gives s = T*rate = 1.232 events per value, but TTFS "
        "sends at most one spike per value (s <= 1)",
        em.Rates,
        T=32,
        ttfs=em.Rate.percent(3.85, "test", "TTFS"),
    )
    check_cli_error(
        capsys,
        tmp_path,
        "M-TTFS k=1: T=32 at 3.85 % per step gives s = T*rate = 1.232 events per value, but "
        "TTFS sends at most one spike per value (s <= 1)",
        "--T",
        "32",
        "--rate",
        "3.85",
    )
    per_position = {p: 1.0 for p in em.POSITIONS} | {"FFN-contract input": 7.0}
    check_error(
        ValueError,
        "M-TTFS k=0 at FFN-contract input: T=16 at 7 % per step gives s = T*rate = 1.12 events "
        "per value, but TTFS sends at most one spike per value (s <= 1)",
        em.Rates.uniform,
        per_position,
        k=0,
    )
    check_error(
        ValueError,
        "row 'y': T=8 at 20 % per step gives s = T*rate = 1.6 events per value, but TTFS sends "
        "at most one spike per value (s <= 1)",
        em.RowSpec,
        "y",
        "ttfs",
        8,
        em.Rate(0.2, "test"),
    )


def test_one_spike_per_value_is_allowed_and_rate_coded_rows_may_exceed_it():
    em.Rates.uniform(6.25, T=16)  # s = 1 exactly
    # a rate-coded neuron spikes up to T times: SpikingBERT's 25 % at T=16 is s = 4
    rates = em.Rates.paper()
    assert em.compute("bert-base", rates).row("SpikingBERT").events_per_delivery == 4.0


# --- Rel. with a dense row that costs nothing ---------------------------------------------------


def test_zero_dense_energy_is_a_clear_error():
    costs = PAPER
    for key in ("E_MAC4", "E_MAC4x4", "E_clamp4", "E_move_dense", "E_weight"):
        costs = costs.with_value(key, 0.0, "test")
    check_error(
        ValueError,
        "Rel. is undefined: the dense QNN row 'Matterhorn QNN (dense)' costs 0 J per block (its "
        "unit costs E_MAC4, E_MAC4x4, E_clamp4, E_move_dense, E_weight are all 0)",
        em.compute,
        SMALL,
        em.Rates.paper(),
        costs,
    )


# --- synthesis reports --------------------------------------------------------------------------


def test_synth_schema_matches_the_writer():
    from synth_scripts.report import SCHEMA

    assert em.SYNTH_SCHEMA == SCHEMA


@pytest.mark.parametrize(
    "fields, message",
    [
        (
            {"schema": "matterhorn.synth_report/0"},
            (
                "synthesis report synth_report.json has schema 'matterhorn.synth_report/0', "
                "expected 'matterhorn.synth_report/2'"
            ),
        ),
        (
            {"unit_costs_pJ": {}},
            (
                "synthesis report synth_report.json has an empty 'unit_costs_pJ' section, "
                "expected at least one unit cost"
            ),
        ),
    ],
)
def test_synth_report_checks(capsys, tmp_path, fields, message):
    path = write(tmp_path, "synth_report.json", synth_doc(**fields))
    check_error(ValueError, message, em.resolve_unit_costs, "paper", synth=path)
    check_cli_error(capsys, tmp_path, message, "--synth", str(path))


def test_synth_report_without_schema(tmp_path):
    doc = synth_doc()
    del doc["schema"]
    path = write(tmp_path, "synth_report.json", doc)
    check_error(
        ValueError,
        "synthesis report synth_report.json has no 'schema' field, expected "
        "'matterhorn.synth_report/2'",
        em.load_synth_report,
        path,
    )
    assert em.load_synth_report(write(tmp_path, "ok.json", synth_doc())).joules("E_MAC4") == (
        0.05e-12
    )


# --- files that are not JSON text ---------------------------------------------------------------


def test_gzip_binary_and_directory_inputs_name_the_file(capsys, tmp_path):
    gz = tmp_path / "synth_report.json.gz"
    gz.write_bytes(gzip.compress(json.dumps(synth_doc()).encode()))
    check_cli_error(
        capsys,
        tmp_path,
        "synthesis report synth_report.json.gz is gzip-compressed; expected a JSON text file "
        "(decompress it first)",
        "--synth",
        str(gz),
    )
    stats = tmp_path / "stats.json"
    stats.write_bytes(gzip.compress(b'{"T": 16}'))
    check_cli_error(
        capsys,
        tmp_path,
        "statistics file stats.json is gzip-compressed; expected a JSON text file "
        "(decompress it first)",
        "--rates-file",
        str(stats),
    )
    png = tmp_path / "plot.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n\x00")
    check_cli_error(
        capsys,
        tmp_path,
        "statistics file plot.png is not UTF-8 text (byte 0x89 at offset 0); expected a JSON "
        "text file",
        "--rates-file",
        str(png),
    )
    folder = tmp_path / "folder"
    folder.mkdir()
    check_cli_error(
        capsys,
        tmp_path,
        f"synthesis report {str(folder)!r} is a directory, not a JSON file",
        "--synth",
        str(folder),
    )
    check_cli_error(
        capsys,
        tmp_path,
        f"statistics file {str(folder)!r} is a directory, not a JSON file",
        "--rates-file",
        str(folder),
    )
    check_cli_error(
        capsys,
        tmp_path,
        f"unit-cost file {str(folder)!r} is a directory, not a JSON file",
        "--unit-costs",
        str(folder),
    )
