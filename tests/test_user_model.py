"""A user's own BERT-family model from a local folder (``--model FOLDER``, networks.hf_folder).

The folder is written by the test: ``transformers.BertModel(BertConfig(...)).save_pretrained``
with random weights, at dimensions other than MiniLM's (hidden 64, 4 heads of 16, FFN 160, two
blocks, 64 positions), and a WordPiece ``vocab.txt``. MiniLM is also given by its path. The
checks: the loader equals ``transformers`` on the folder; the dimensions flow into the
statistics, the energy model, the slice and the generated tile's configuration, the layer's
mesh check and the checkpoints of ``finetune``; a model outside the family is refused in one
line naming what differs, before any work and with nothing written.
"""

from __future__ import annotations

import json
import os
import string
from pathlib import Path

import pytest
import torch

from matterhorn.cli import main

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

#: The test model: every dimension differs from MiniLM's (384, 12 heads, 1536, 6 blocks, 512).
DIMS = {"hidden": 64, "heads": 4, "ffn": 160, "layers": 2, "positions": 64}


def wordpiece_vocab() -> list[str]:
    """A WordPiece vocabulary that spells every lower-case word letter by letter."""
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = ["the", "a", "of", "is", "to", "and", "in", "it", "that", "for", "be", "as"]
    chars = list(string.ascii_lowercase + string.digits + string.punctuation)
    return special + words + chars + [f"##{c}" for c in string.ascii_lowercase + string.digits]


def write_bert_folder(path: Path, **overrides) -> Path:
    """A random BERT-family model folder as ``save_pretrained`` writes it, plus vocab.txt."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from transformers import BertConfig, BertModel

    vocab = wordpiece_vocab()
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=DIMS["hidden"],
                     num_attention_heads=DIMS["heads"], intermediate_size=DIMS["ffn"],
                     num_hidden_layers=DIMS["layers"], max_position_embeddings=DIMS["positions"],
                     **overrides)
    BertModel(cfg, add_pooling_layer=False).eval().save_pretrained(path)
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return write_bert_folder(tmp_path_factory.mktemp("user") / "tiny-bert")


def _shipped() -> Path:
    from networks.bert import model_dir

    try:
        return model_dir()
    except FileNotFoundError as exc:
        pytest.skip(str(exc))


def _reference(path: Path, sentences: list[str]):
    from transformers import BertModel

    from networks.hf_folder import load_model, resolve_model

    model, tok = load_model(resolve_model(str(path)))
    ids, mask = tok(sentences)
    ref = BertModel.from_pretrained(str(path), add_pooling_layer=False).eval()
    with torch.no_grad():
        ours = model(ids, mask)
        theirs = ref(input_ids=ids, attention_mask=mask).last_hidden_state
    return ours, theirs, mask


@pytest.mark.parametrize("which", ["folder", "minilm-by-path"])
def test_loader_equals_transformers(which, folder):
    path = folder if which == "folder" else _shipped()
    sentences = ["The grammar of the language is given here.", "A short one."]
    ours, theirs, mask = _reference(path, sentences)
    valid = mask.bool()
    assert ours.shape[-1] == (DIMS["hidden"] if which == "folder" else 384)
    assert float((ours - theirs)[valid].abs().max()) < 1e-4


def test_resolve_reads_the_folders_dimensions(folder):
    from networks.hf_folder import resolve_model

    src = resolve_model(str(folder))
    assert (src.key, src.name) == ("folder:tiny-bert", "tiny-bert")
    assert src.dims == {"hidden": 64, "ffn": 160, "heads": 4, "layers": 2, "head_dim": 16,
                        "max_positions": 64, "seq": 64}
    shipped = resolve_model(str(_shipped()))  # MiniLM by its path is the shipped model
    assert (shipped.key, shipped.name) == ("minilm", "all-MiniLM-L6-v2")
    assert shipped.dims["hidden"] == 384 and shipped.dims["seq"] == 128


def _edit_config(path: Path, **changes) -> None:
    cfg = json.loads((path / "config.json").read_text())
    for key, value in changes.items():
        if value is None:
            cfg.pop(key, None)
        else:
            cfg[key] = value
    (path / "config.json").write_text(json.dumps(cfg))


#: (what to change in the folder, the message): each a model outside the family.
REFUSALS = [
    ({"hidden_act": "relu"}, "has hidden_act 'relu', not 'gelu'"),
    ({"hidden_act": "gelu_new"}, "has hidden_act 'gelu_new', not 'gelu'"),
    ({"model_type": "roberta-prelayernorm"}, ("has pre-LayerNorm blocks (model_type "
                                             "'roberta-prelayernorm')")),
    ({"pre_layer_norm": True}, "has pre-LayerNorm blocks (pre_layer_norm: true)"),
    ({"is_decoder": True}, "is a decoder"),
    ({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]},
     "is a decoder (GPT2LMHeadModel)"),
    ({"model_type": "t5"}, "has model_type 't5', not one of ('bert',)"),
    ({"position_embedding_type": "relative_key"}, "has position_embedding_type 'relative_key'"),
    ({"hidden_size": None}, "config.json gives no hidden_size"),
    ({"num_attention_heads": 5}, "hidden_size 64 is not a multiple of num_attention_heads 5"),
    ({"intermediate_size": 200}, ("tensor 'layers.0.ffn_expand.weight' has shape (160, 64), "
                                 "config.json's dimensions give (200, 64)")),
    ({"file:model.safetensors": None}, ("has no weights: model.safetensors or pytorch_model.bin "
                                       "is missing")),
    ({"file:vocab.txt": None}, ("has no WordPiece vocabulary: tokenizer.json or vocab.txt is "
                               "missing")),
    ({"file:config.json": None}, "has no config.json"),
    ({"architectures": "BertModel"}, ("config.json's architectures must be a list of class "
                                      "names such as [\"BertModel\"], not \"BertModel\"")),
    ({"architectures": 5}, "config.json's architectures must be a list of class names"),
    ({"num_hidden_layers": 10**9}, ("config.json's num_hidden_layers 1000000000 is beyond what "
                                    "the toolkit builds (at most 1024)")),
    ({"file:model.safetensors": b"not a safetensors file"}, ("model.safetensors is not a "
                                                            "safetensors file")),
]


@pytest.mark.parametrize(("change", "message"), REFUSALS, ids=[m for _, m in REFUSALS])
@pytest.mark.parametrize("command", ["stats", "finetune --k 1", "compare", "layer", "flow"])
def test_a_model_outside_the_family_is_one_line(command, change, message, folder, tmp_path,
                                                monkeypatch, capsys):
    import shutil

    bad = tmp_path / "bad-model"
    shutil.copytree(folder, bad)
    files = {k[5:]: v for k, v in change.items() if k.startswith("file:")}
    for name, data in files.items():
        (bad / name).unlink()
        if data is not None:
            (bad / name).write_bytes(data)
    _edit_config(bad, **{k: v for k, v in change.items() if not k.startswith("file:")}) \
        if (bad / "config.json").exists() else None
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main([*command.split(), "--model", str(bad), "--out", "o"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and err.startswith(f"matterhorn {command.split()[0]}: error: ")
    assert "model folder 'bad-model'" in err or "bad-model/" in err, err
    assert message in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


def test_stats_at_the_folders_dimensions(folder, tmp_path, capsys):
    """``stats --model FOLDER``: statistics, energy at its dimensions, the slice and the tile."""
    out = tmp_path / "stats"
    code = main(["stats", "--model", str(folder), "--sentences", "4", "--calibration", "4",
                 "--k-max", "2", "--no-plots", "--threads", "1", "--out", str(out)])
    console = capsys.readouterr().out
    assert code == 0, console
    doc = json.loads((out / "stats.json").read_text())
    assert doc["model"] == "tiny-bert"
    assert doc["dims"] == {"hidden": 64, "ffn": 160, "heads": 4, "layers": 2, "head_dim": 16,
                           "max_positions": 64, "seq": 64}
    assert len(doc["blocks"]) == 2
    tile = doc["rtl_tile"]
    assert (tile["n_in"], tile["tile_neurons"], tile["weight_bits"]) == (64, 16, 4)
    assert "--n-in 64 --tile-neurons 16" in tile["generate"]
    energy = json.loads((out / "energy_paper" / "energy_report.json").read_text())
    model = energy["model"]
    assert (model["hidden"], model["ffn"], model["heads"], model["layers"], model["seq"]) == (
        64, 160, 4, 2, 64)
    sl = json.loads((out / "slice_block0_qproj.json").read_text())
    assert (sl["model"], sl["n_in"], sl["n_out"]) == ("tiny-bert", 64, 16)
    summary = (out / "summary.md").read_text()
    assert summary.startswith("# tiny-bert: spike statistics\n\n**Answer.** Spike rate")
    assert "Model: 2 blocks, hidden 64, FFN 160, 4 heads of 16, 64 positions." in summary
    assert str(tmp_path) not in summary + (out / "stats.json").read_text()
    assert "tiny-bert: 2 blocks, hidden 64" in console
    assert "RTL tile of the block 0 Q projection: 64 inputs x 16 neurons" in console


def test_stats_minilm_by_its_path(tmp_path, capsys):
    out = tmp_path / "m"
    code = main(["stats", "--model", str(_shipped()), "--sentences", "2", "--calibration", "2",
                 "--k-max", "1", "--no-plots", "--no-energy", "--threads", "1", "--out",
                 str(out)])
    assert code == 0, capsys.readouterr().err
    doc = json.loads((out / "stats.json").read_text())
    assert doc["model"] == "all-MiniLM-L6-v2"
    assert (doc["dims"]["hidden"], doc["dims"]["heads"], doc["dims"]["layers"]) == (384, 12, 6)
    assert doc["rtl_tile"]["n_in"] == 384


def test_finetune_checkpoint_belongs_to_its_model(folder, tmp_path, capsys):
    """A checkpoint of the folder's model records it; ``stats`` measures it with that model
    and refuses it with another."""
    out = tmp_path / "ft"
    code = main(["finetune", "--model", str(folder), "--k", "0", "--steps", "2", "--sentences",
                 "3", "--calibration", "3", "--training", "4", "--batch", "2", "--threads", "1",
                 "--no-plots", "--out", str(out)])
    assert code == 0, capsys.readouterr().err
    doc = json.loads((out / "finetune.json").read_text())
    assert (doc["model"], doc["model_key"]) == ("tiny-bert", "folder:tiny-bert")
    assert "mean over 2 blocks" in doc["recipe"]["loss"]
    assert "the 20 activation scales" in doc["recipe"]["trained"]
    capsys.readouterr()
    code = main(["stats", "--model", str(folder), "--checkpoint", str(out / "k0"), "--sentences",
                 "3", "--k-max", "1", "--no-plots", "--no-energy", "--out", str(tmp_path / "s")])
    assert code == 0, capsys.readouterr().err
    assert json.loads((tmp_path / "s" / "stats.json").read_text())["finetuned"]["k"] == 0
    code = main(["stats", "--model", "minilm", "--checkpoint", str(out / "k0"), "--out",
                 str(tmp_path / "s2")])
    err = capsys.readouterr().err
    assert code == 2 and "is of model 'folder:tiny-bert', not 'minilm'" in err, err


def test_compare_and_layer_take_the_folders_width(folder, tmp_path, capsys):
    """The compare workload and the layer are the folder model's block-0 Q projection: its
    width decides the tile's fan-in and the tiles the layer needs on the mesh."""
    from matterhorn.compare import model_workload
    from regression.layer import minilm_q_projection

    wl = model_workload(str(folder), 3)
    assert (wl.name, wl.layer.n_in, wl.layer.n_out, wl.layer.weight_bits) == (
        "tiny-bert", 64, 16, 4)
    assert tuple(wl.codes.shape) == (3, 64) and "tiny-bert block 0 Q projection" in wl.source
    sl = minilm_q_projection(2, k=1, calibration=2, model=str(folder))
    assert (sl.layer.n_in, sl.layer.n_out, sl.meta["model"]) == (64, 64, "tiny-bert")
    # 64 outputs in tiles of 48 need two nodes: the mesh check reads the folder's width
    code = main(["layer", "--model", str(folder), "--mesh", "1x1", "--out", str(tmp_path / "l")])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "the layer's 64 outputs need 2 tiles of 48 neurons, the 1x1 mesh has 1 node" in err


@pytest.mark.parametrize(("name", "data", "message"), [
    ("tokenizer_config.json", b"{bad", ("model folder 'bad-model': tokenizer_config.json is not "
                                        "valid JSON: ")),
    ("pytorch_model.bin", bytes(range(256)) * 8, (
        "bad-model/pytorch_model.bin cannot be read as a state dict of tensors (")),
])
def test_a_malformed_file_is_named(name, data, message, folder, tmp_path, capsys):
    # before: a malformed tokenizer_config.json was reported as an unreadable vocab.txt, and a
    # garbage pytorch_model.bin printed torch's advice to load it with weights_only=False
    import shutil

    bad = tmp_path / "bad-model"
    shutil.copytree(folder, bad)
    if name == "pytorch_model.bin":
        (bad / "model.safetensors").unlink()
    (bad / name).write_bytes(data)
    assert main(["stats", "--model", str(bad), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err  # the progress line of the loading step, then the error
    last = err.splitlines()[-1]
    assert last.startswith("matterhorn stats: error: ") and message in last, err
    assert "weights_only=False" not in err


def test_a_folder_without_the_models_extra_names_the_package(folder, tmp_path):
    # before: exit 70, "internal error: ModuleNotFoundError: No module named 'safetensors'"
    import subprocess
    import sys

    code = ("import sys; sys.modules['safetensors'] = None; from matterhorn.cli import main; "
            f"sys.exit(main(['stats', '--model', {str(folder)!r}, '--out', 'o']))")
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                         text=True)
    assert res.returncode == 2, res.stderr
    assert res.stderr == ("matterhorn stats: error: the model 'tiny-bert' needs the package "
                          "safetensors, not installed; install the models extra: pip install -e "
                          "'.[models]' in the toolkit's environment (./run test installs it)\n")
    assert not (tmp_path / "o").exists()

