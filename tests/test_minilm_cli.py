"""``matterhorn stats --model minilm``: files, exit codes, messages."""

import json

import pytest

from golden_models.statistics import read_stats
from matterhorn.cli import main


def test_stats_writes_report(tmp_path, capsys):
    out = tmp_path / "minilm"
    argv = [
        "stats",
        "--model",
        "minilm",
        "--corpus",
        "pydoc-topics",
        "--sentences",
        "2",
        "--calibration",
        "4",
        "--k-max",
        "1",
        "--threads",
        "1",
        "--no-plots",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "spike rate per step: TTFS" in text and "k=1" in text
    assert "all-MiniLM-L6-v2: 6 blocks, hidden 384, FFN 1536, 12 heads of 32" in text
    doc = json.loads((out / "stats.json").read_text())
    assert doc["sentences"] == 2 and doc["corpus"]["calibration_sentences"] == 4
    assert set(doc["rates"]) == {"TTFS", "k=0", "k=1"}
    assert doc["quality"]["k=0"]["bit_exact_qnn"] is True
    names = sorted(p.name for p in out.iterdir())
    assert names == [
        ".matterhorn-owned.json",  # what the command wrote: a rerun replaces only those
        "energy_paper",
        "golden_stats.json",
        "rates.json",
        "slice_block0_qproj.json",
        "stats.json",
        "summary.md",
    ]
    # the shared statistics schema: one record per block and position, QNN histograms
    records = read_stats(out / "golden_stats.json")
    assert len(records) == 6 * 8
    attn = doc["blocks"][0]["positions"]["attn_prob"]
    assert records[4].name == "Attn. probability"
    assert list(records[4].counts) == attn["histogram_tau"]
    assert records[4].i_max == attn["i_max"]
    assert records[4].p_q0 == pytest.approx(attn["p_q0"], abs=1e-6)
    sl = json.loads((out / "slice_block0_qproj.json").read_text())
    assert (sl["n_in"], sl["n_out"], sl["in_mask"]["k"]) == (384, 16, 1)
    # energy per block at MiniLM's dimensions, from the measured histograms
    assert "energy per block, unit costs paper: M-TTFS k=1 " in text  # the table: --verbose
    table = (out / "energy_paper" / "energy_table.txt").read_text()
    assert "all-MiniLM-L6-v2, B=64, S=128" in table and "Matterhorn M-TTFS (k=1)" in table
    energy = json.loads((out / "energy_paper" / "energy_report.json").read_text())
    assert energy["model"]["weight_bits"] == doc["quantization"]["weight_bits"] == 4  # W4A4


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "gpt"],
         "--model 'gpt' is neither the shipped model 'minilm' nor an existing model folder"),
        (["--model", "minilm", "--corpus", "nope"], "corpus must be one of"),
        (["--model", "minilm", "--k-max", "16"], "k_max must be in 0..15, not 16"),
        (["--model", "minilm", "--sentences", "0"], "sentences must be at least 1, not 0"),
        (
            ["--model", "minilm", "--synth", "none.json"],
            "synthesis report 'none.json' does not exist",
        ),
    ],
)
def test_stats_bad_arguments(tmp_path, capsys, argv, message):
    assert main(["stats", *argv, "--out", str(tmp_path / "x")]) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
