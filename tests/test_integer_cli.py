"""``matterhorn finetune --integer`` and ``stats --integer`` end to end in short mode (slow), and
the integer options' bad input."""

import json

import pytest

from matterhorn.cli import main
from toolkit_base.schemas import validate

SHORT = [
    "--steps", "2", "--k-steps", "2", "--batch", "4", "--sentences", "3", "--calibration", "4",
    "--training", "8", "--threads", "1", "--no-plots",
]


@pytest.fixture(scope="module")
def int_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("fti") / "ft"
    argv = ["finetune", "--model", "minilm", "--k", "1", "--integer", "--residual-bits", "14"]
    assert main([*argv, *SHORT, "--out", str(out)]) == 0
    return out


@pytest.mark.slow
def test_finetune_integer_writes_integer_checkpoints(int_run):
    doc = validate(json.loads((int_run / "finetune.json").read_text()), "finetune", "x")
    assert doc["integer"] == {"residual_bits": 14, "guard_bits": 5, "exp_frac_bits": 6}
    assert "integer mode" in doc["recipe"]["integer"]
    assert [r["k"] for r in doc["runs"]] == [0, 1]
    assert doc["runs"][0]["after"]["bit_exact_qnn"] is True
    for k in ("k0", "k1"):
        assert json.loads((int_run / k / "finetune.json").read_text())["integer"] == doc["integer"]
    assert "integer mode (residual stream 14 bits" in (int_run / "summary.md").read_text()


@pytest.mark.slow
def test_block_runs_an_integer_checkpoint(int_run, tmp_path, capsys):
    """``matterhorn block --checkpoint``: the fine-tuned integer-mode network runs through the
    block's pieces bit-exact, and the report says which network ran (about 8 minutes: MiniLM's
    block at RTL, one sentence, one design)."""
    out = tmp_path / "b"
    argv = ["block", "--model", "minilm", "--checkpoint", str(int_run / "k1"), "--sentences",
            "1", "--design", "mttfs", "--k", "1", "--out", str(out)]
    assert main(argv) == 0, capsys.readouterr().out
    doc = json.loads((out / "block.json").read_text())
    assert doc["model"].endswith("(fine-tuned in integer mode at k=1, k1)"), doc["model"]
    assert [(d["design"], d["mismatches"]) for d in doc["designs"]] == [("mttfs-k1", 0)]
    assert doc["designs"][0]["checked"] > 0


@pytest.mark.slow
def test_stats_on_an_integer_checkpoint(int_run, tmp_path, capsys):
    base = [
        "stats", "--model", "minilm", "--checkpoint", str(int_run / "k1"), "--sentences", "2",
        "--k-max", "1", "--threads", "1", "--no-plots", "--no-energy",
    ]
    assert main([*base, "--out", str(tmp_path / "plain")]) == 2
    err = capsys.readouterr().err
    assert "was fine-tuned in integer mode; load it in integer mode (--integer)" in err
    assert err.count("\n") == 1 and not (tmp_path / "plain").exists()
    assert main([*base, "--integer", "--out", str(tmp_path / "s")]) == 0
    doc = json.loads((tmp_path / "s" / "stats.json").read_text())
    assert doc["integer"]["residual_bits"] == 14
    assert doc["quality"]["k=0"]["bit_exact_qnn"] is True
    # the same checkpoint without its mode is a float checkpoint: refused in integer mode
    other = tmp_path / "float"
    other.mkdir()
    for name in ("checkpoint.safetensors", "finetune.json"):
        (other / name).write_bytes((int_run / "k1" / name).read_bytes())
    fdoc = json.loads((other / "finetune.json").read_text())
    del fdoc["integer"]
    (other / "finetune.json").write_text(json.dumps(fdoc))
    base[4] = str(other)
    assert main([*base, "--integer", "--out", str(tmp_path / "f")]) == 2
    assert "fine-tuned with float non-linearities" in capsys.readouterr().err
    assert not (tmp_path / "f").exists()


@pytest.mark.parametrize(
    ("command", "argv", "message"),
    [
        ("finetune", ["--k", "0", "--residual-bits", "12"], "--residual-bits 12 needs --integer"),
        (
            "finetune",
            ["--k", "0", "--integer", "--residual-bits", "3"],
            "--residual-bits must be in 4..24, not 3",
        ),
        ("stats", ["--residual-bits", "12"], "--residual-bits 12 needs --integer"),
        (
            "finetune",
            ["--k", "0", "--integer", "--residual-bits", "20"],
            (
                "residual_bits=20 with guard_bits=5 gives 25-bit residual sums; a LayerNorm "
                "over 384 channels holds at most 23 (residual_bits <= 18)"
            ),
        ),
        (
            "stats",
            ["--integer", "--residual-bits", "12", "--checkpoint", "x"],
            "--residual-bits applies to a conversion; a --checkpoint has its own",
        ),
    ],
)
def test_integer_options_bad_input(tmp_path, capsys, command, argv, message):
    assert main([command, "--model", "minilm", *argv, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x").exists()
