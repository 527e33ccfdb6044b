"""``matterhorn finetune`` end to end in short mode, ``stats --checkpoint``, and bad input."""

import json

import pytest
import torch

from matterhorn.cli import main
from toolkit_base.schemas import validate

SHORT = [
    "--steps",
    "2",
    "--k-steps",
    "3",
    "--lr",
    "0.002",
    "--scale-lr",
    "0.01",
    "--batch",
    "4",
    "--sentences",
    "4",
    "--calibration",
    "4",
    "--training",
    "8",
    "--threads",
    "1",
    "--no-plots",
]


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("ft") / "ft"
    # k = 1 alone (default --start k0): k = 0 is trained (and saved) first, then k = 1 from it
    argv = ["finetune", "--model", "minilm", "--k", "1", *SHORT, "--out", str(out)]
    assert main(argv) == 0
    return out


def test_finetune_writes_report_and_checkpoints(run_dir, capsys):
    assert sorted(p.name for p in run_dir.iterdir()) == ["finetune.json", "k0", "k1", "summary.md"]
    assert "| 1 | " in (run_dir / "summary.md").read_text()
    doc = validate(json.loads((run_dir / "finetune.json").read_text()), "finetune", "x")
    assert [r["k"] for r in doc["runs"]] == [0, 1]
    k0, k1 = doc["runs"]
    assert k0["before"]["bit_exact_qnn"] is True and k0["after"]["bit_exact_qnn"] is True
    assert k1["after"]["bit_exact_qnn"] is None
    assert k0["config"]["steps"] == 2 and k1["config"]["steps"] == 3
    assert k0["config"]["lr"] == k1["config"]["lr"] == 0.002
    assert k0["config"]["scale_lr"] == k1["config"]["scale_lr"] == 0.01
    assert k1["training"]["sentences"] == 8
    assert (k0["config"]["init"], k1["config"]["init"]) == ("conversion", "k0")
    assert "fine-tuned k=0 QNN" in doc["recipe"]["start"]
    assert k1["after"]["rates"]["network"] < k0["after"]["rates"]["network"]
    assert doc["corpus"]["evaluation_sentences"] == 4
    # each checkpoint carries its own one-run document
    one = json.loads((run_dir / "k1" / "finetune.json").read_text())
    assert one["runs"] == [k1]


def test_start_k0_reuses_a_matching_k0(run_dir, minilm):
    from dataclasses import replace

    from networks import checkpoint
    from networks.finetune import FinetuneConfig
    from networks.finetune_report import _reuse_k0

    model, _ = minilm
    doc = checkpoint.read_document(run_dir / "k0")
    head = {n: v for n, v in doc.items() if n != "runs"}
    cfg = FinetuneConfig(k=2, steps=2, batch=4, lr=0.002, scale_lr=0.01, threads=1)
    saved, _ = checkpoint.load(run_dir / "k0", model, k=0)
    reused = _reuse_k0(run_dir, model, head, cfg)
    pairs = zip(reused.linears(), saved.linears(), strict=True)
    assert all(torch.equal(a.w_int, b.w_int) for a, b in pairs)
    # other training settings or another corpus: k = 0 is trained again
    assert _reuse_k0(run_dir, model, head, replace(cfg, steps=3)) is None
    assert _reuse_k0(run_dir, model, head, replace(cfg, scale_lr=0.0)) is None
    other = {**head, "corpus": {**head["corpus"], "evaluation_sentences": 5}}
    assert _reuse_k0(run_dir, model, other, cfg) is None
    assert _reuse_k0(run_dir / "k1", model, head, cfg) is None


def test_stats_on_a_checkpoint(run_dir, tmp_path, capsys):
    out = tmp_path / "stats"
    argv = [
        "stats",
        "--model",
        "minilm",
        "--checkpoint",
        str(run_dir / "k1"),
        "--sentences",
        "2",
        "--k-max",
        "1",
        "--threads",
        "1",
        "--no-plots",
        "--no-energy",
        "--out",
        str(out),
    ]
    assert main(argv) == 0
    doc = json.loads((out / "stats.json").read_text())
    assert doc["finetuned"]["k"] == 1 and doc["corpus"]["calibration_sentences"] == 4
    assert doc["quality"]["k=0"]["bit_exact_qnn"] is True
    sl = json.loads((out / "slice_block0_qproj.json").read_text())
    assert sl["in_mask"]["k"] == 1
    assert "Fine-tuned at k=1" in (out / "summary.md").read_text()


def test_a_run_stopped_after_k0_leaves_a_summary_of_the_new_k0(run_dir, tmp_path,
                                                                  monkeypatch):
    # before: stopped while k = 1 trained, after k0 was replaced, the folder's finetune.json
    # and summary.md still described the old k0
    import shutil

    from networks import finetune_report

    out = tmp_path / "ft"
    shutil.copytree(run_dir, out)
    real, calls = finetune_report.train, []

    def train(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # k = 1, after the new k0 was saved
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(finetune_report, "train", train)
    short = [x if x != "2" else "1" for x in SHORT]  # k = 0 trains 1 step: not the old k0
    assert main(["finetune", "--model", "minilm", "--k", "1", *short, "--out", str(out)]) == 130
    doc = json.loads((out / "finetune.json").read_text())
    k0 = json.loads((out / "k0" / "finetune.json").read_text())["runs"][0]
    assert k0["config"]["steps"] == 1 and doc["runs"][0] == k0


def test_start_conversion(tmp_path):
    """``--start conversion``: a radius k >= 1 trains ``--steps`` from the conversion, no k0."""
    out = tmp_path / "ft"
    short = [a for a in SHORT if a not in ("--k-steps", "3")]
    argv = ["finetune", "--model", "minilm", "--k", "1", "--start", "conversion", *short]
    assert main([*argv, "--out", str(out)]) == 0
    doc = json.loads((out / "finetune.json").read_text())
    assert [(r["k"], r["config"]["init"], r["config"]["steps"]) for r in doc["runs"]] == [
        (1, "conversion", 2)
    ]
    assert not (out / "k0").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--model", "gpt", "--k", "0"],
         "--model 'gpt' is neither the shipped model 'minilm' nor an existing model folder"),
        (["--model", "minilm", "--k", "16"], "k must be in 0..15, not 16"),
        (["--model", "minilm", "--k", "0", "--steps", "0"], "steps must be in 1..1000000, not 0"),
        (
            ["--model", "minilm", "--k", "1", "--k-steps", "0"],
            "k_steps must be in 1..1000000",
        ),
        (["--model", "minilm", "--k", "0", "--lr", "2"], "lr must be a number in (0, 1), not 2.0"),
        (
            ["--model", "minilm", "--k", "1", "--start", "k1"],
            "--start must be one of ('k0', 'conversion'), not 'k1'",
        ),
        (["--model", "minilm", "--k", "0", "--corpus", "nope"], "corpus must be one of"),
    ],
)
def test_finetune_bad_arguments(tmp_path, capsys, argv, message):
    assert main(["finetune", *argv, "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1
    assert not (tmp_path / "x").exists()


def test_corpus_too_small(tmp_path, capsys):
    small = tmp_path / "small.txt"
    small.write_text("One short sentence is here.\n")
    argv = [
        "finetune",
        "--model",
        "minilm",
        "--k",
        "0",
        "--corpus",
        str(small),
        "--extra",
        "--out",
        str(tmp_path / "x"),
    ]
    assert main(argv) == 2
    assert "corpus 'small.txt' yields" in capsys.readouterr().err
    # enough for both splits, too few to train a batch
    lines = [f"Sentence number {i} of a small corpus is here." for i in range(12)]
    small.write_text("\n".join(lines) + "\n")
    assert main([*argv[:-2], "--batch", "16", "--out", str(tmp_path / "x")]) == 2
    assert "training sentences, fewer than batch=16" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_stats_refuses_other_checkpoints(run_dir, tmp_path, capsys):
    base = [
        "stats",
        "--model",
        "minilm",
        "--sentences",
        "2",
        "--no-plots",
        "--no-energy",
        "--out",
        str(tmp_path / "s"),
    ]
    assert main([*base, "--checkpoint", str(run_dir), "--k-max", "1"]) == 2
    assert "is not a complete checkpoint" in capsys.readouterr().err
    assert main([*base, "--checkpoint", str(run_dir / "k1"), "--k-max", "0"]) == 2
    assert "was fine-tuned at k=1, beyond k_max=0" in capsys.readouterr().err
    other = tmp_path / "other"
    other.mkdir()
    for name in ("checkpoint.safetensors", "finetune.json"):
        (other / name).write_bytes((run_dir / "k1" / name).read_bytes())
    doc = json.loads((other / "finetune.json").read_text())
    doc["model_key"] = "bert-base"
    (other / "finetune.json").write_text(json.dumps(doc))
    assert main([*base, "--checkpoint", str(other)]) == 2
    assert "is of model 'bert-base', not 'minilm'" in capsys.readouterr().err
    doc["runs"][0]["k"] = "one"
    (other / "finetune.json").write_text(json.dumps(doc))
    assert main([*base, "--checkpoint", str(other)]) == 2
    assert "finetune.json: field 'runs[0].k': 'one' is not of type 'integer'" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "s").exists()


def test_quality_plot(run_dir, tmp_path):
    from energy_model.plots import plot_finetune

    doc = json.loads((run_dir / "finetune.json").read_text())
    first = plot_finetune(doc, tmp_path / "a.png").read_bytes()
    assert first[:8] == b"\x89PNG\r\n\x1a\n"
    assert plot_finetune(doc, tmp_path / "b.png").read_bytes() == first  # deterministic
