"""BERT's relatives from a folder (networks.hf_folder.RELATIVES): RoBERTa, ELECTRA and
DistilBERT encoders with BERT's arithmetic are read in BERT's terms and equal ``transformers``;
what would change the arithmetic is refused in one line; a tokenizer that is not the model's
and token ids outside the vocabulary are refused (exit 2); the commands run on them.

The folders are written by the test with ``transformers`` (random weights, hidden 64, 4 heads,
FFN 160, two blocks, 64 positions) and the letter-by-letter WordPiece vocabulary of
``tests/test_user_model.py``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from matterhorn.cli import main

pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

SHAPE = {"hidden": 64, "heads": 4, "ffn": 160, "layers": 2}


def write_relative(path: Path, family: str, **overrides) -> Path:
    """A random ``family`` encoder folder (``roberta``, ``distilbert``, ``electra``) as
    ``save_pretrained`` writes it, plus ``vocab.txt``."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers as tf

    from tests.test_user_model import wordpiece_vocab

    vocab = wordpiece_vocab()
    torch.manual_seed(0)
    h, n, f, L = SHAPE["hidden"], SHAPE["heads"], SHAPE["ffn"], SHAPE["layers"]
    if family == "roberta":
        cfg = tf.RobertaConfig(vocab_size=len(vocab), hidden_size=h, num_attention_heads=n,
                               intermediate_size=f, num_hidden_layers=L, type_vocab_size=1,
                               max_position_embeddings=66, pad_token_id=1, **overrides)
        model = tf.RobertaModel(cfg, add_pooling_layer=False)
    elif family == "distilbert":
        cfg = tf.DistilBertConfig(vocab_size=len(vocab), dim=h, n_heads=n, hidden_dim=f,
                                  n_layers=L, max_position_embeddings=64, **overrides)
        model = tf.DistilBertModel(cfg)
    else:
        cfg = tf.ElectraConfig(vocab_size=len(vocab), hidden_size=h, num_attention_heads=n,
                               intermediate_size=f, num_hidden_layers=L, embedding_size=h,
                               max_position_embeddings=64, **overrides)
        model = tf.ElectraModel(cfg)
    model.eval().save_pretrained(path)
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    return path


FAMILIES = ("roberta", "distilbert", "electra")


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("relatives")
    return {f: write_relative(root / f"tiny-{f}", f) for f in FAMILIES}


def _reference(family: str, path: Path):
    import transformers as tf

    cls = {"roberta": tf.RobertaModel, "distilbert": tf.DistilBertModel,
           "electra": tf.ElectraModel}[family]
    kw = {"add_pooling_layer": False} if family == "roberta" else {}
    return cls.from_pretrained(str(path), **kw).eval()


@pytest.mark.parametrize("family", FAMILIES)
def test_a_relative_equals_transformers(family, folders):
    from networks.hf_folder import load_model, resolve_model

    src = resolve_model(str(folders[family]))
    assert src.family == family and src.name == f"tiny-{family}"
    assert src.dims == {"hidden": 64, "ffn": 160, "heads": 4, "layers": 2, "head_dim": 16,
                        "max_positions": 64, "seq": 64}
    model, tok = load_model(src)
    ids, mask = tok(["The grammar of the language is given here.", "A short one."])
    with torch.no_grad():
        ours = model(ids, mask)
        theirs = _reference(family, folders[family])(input_ids=ids,
                                                     attention_mask=mask).last_hidden_state
    assert float((ours - theirs)[mask.bool()].abs().max()) < 1e-4


def test_roberta_positions_start_after_the_padding_row(folders):
    """RoBERTa's position ids start at pad_token_id + 1: the same folder read as BERT
    (offset 0) no longer equals transformers."""
    from networks.hf_folder import load_model, resolve_model

    src = resolve_model(str(folders["roberta"]))
    assert src.config.position_offset == 2
    model, tok = load_model(src)
    ids, mask = tok(["A short one."])
    ref = _reference("roberta", folders["roberta"])(input_ids=ids).last_hidden_state
    import dataclasses

    model.cfg = dataclasses.replace(model.cfg, position_offset=0)  # the planted fault
    with torch.no_grad():
        assert float((model(ids, mask) - ref).abs().max()) > 1e-2


def _edit(path: Path, **changes) -> None:
    cfg = json.loads((path / "config.json").read_text())
    cfg.update(changes)
    (path / "config.json").write_text(json.dumps(cfg))


REFUSED = [
    ("electra", {"embedding_size": 32}, ("has embedding_size 32, not hidden_size 64: ELECTRA's "
     "projection of the embeddings is not in the toolkit's encoder")),
    ("distilbert", {"sinusoidal_pos_embds": True}, "has sinusoidal position embeddings"),
    ("distilbert", {"activation": "relu"}, "has hidden_act 'relu', not 'gelu'"),
    ("roberta", {"pad_token_id": 70}, ("max_position_embeddings 66 leaves no position after "
     "pad_token_id 70")),
]


@pytest.mark.parametrize(("family", "change", "message"), REFUSED,
                         ids=[m[:40] for _, _, m in REFUSED])
def test_what_changes_the_arithmetic_is_refused_in_one_line(family, change, message, folders,
                                                            tmp_path, capsys):
    import shutil

    bad = tmp_path / "bad-model"
    shutil.copytree(folders[family], bad)
    _edit(bad, **change)
    code = main(["stats", "--model", str(bad), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert "model folder 'bad-model'" in err and message in err, err
    assert not (tmp_path / "o").exists()


def test_a_tokenizer_of_another_model_is_refused(folders, tmp_path, capsys):
    """A five-token vocabulary would turn every word into [UNK]: refused, exit 2."""
    import shutil

    bad = tmp_path / "five-tokens"
    shutil.copytree(folders["roberta"], bad)
    (bad / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n")
    code = main(["stats", "--model", str(bad), "--sentences", "2", "--calibration", "2",
                 "--no-plots", "--no-energy", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.splitlines()[-1]  # after the loading step's progress line
    assert code == 2 and err.startswith("matterhorn stats: error: "), err
    assert ("five-tokens/vocab.txt has 5 tokens, config.json's vocab_size is 121: not this "
            "model's tokenizer") in err


def test_token_ids_outside_the_vocabulary_are_refused(folders):
    from networks.hf_folder import load_model, resolve_model

    model, _ = load_model(resolve_model(str(folders["distilbert"])))
    with pytest.raises(ValueError, match=r"token id 121 is outside the model's vocabulary "
                       r"\(vocab_size 121\)"):
        model(torch.tensor([[2, 121, 3]]))


@pytest.mark.parametrize("family", ["roberta", "distilbert"])
def test_stats_on_a_relative(family, folders, tmp_path, capsys):
    out = tmp_path / "stats"
    code = main(["stats", "--model", str(folders[family]), "--sentences", "2",
                 "--calibration", "4", "--k-max", "1", "--no-plots", "--no-energy",
                 "--threads", "1", "--out", str(out)])
    console = capsys.readouterr().out
    assert code == 0, console
    doc = json.loads((out / "stats.json").read_text())
    assert doc["model"] == f"tiny-{family}" and len(doc["blocks"]) == 2
    from toolkit_base.schemas import validate

    validate(doc, "minilm_stats", "stats.json")
    validate(json.loads((out / "rates.json").read_text()), "minilm_rates", "rates.json")
    assert doc["quality"]["k=0"]["bit_exact_qnn"] is True


@pytest.mark.slow
@pytest.mark.parametrize("family", ["roberta", "distilbert"])
def test_block_on_a_relative(family, folders, tmp_path, capsys):
    """``matterhorn block`` (every piece of block 0 in the Amaranth simulator against the
    integer QNN) on a RoBERTa- and a DistilBERT-shaped folder, one sentence, M-TTFS k = 1."""
    out = tmp_path / "block"
    code = main(["block", "--model", str(folders[family]), "--sentences", "1", "--design",
                 "mttfs", "--k", "1", "--out", str(out)])
    console = capsys.readouterr().out
    assert code == 0, console
    doc = json.loads((out / "block.json").read_text())
    assert doc["model"] == f"tiny-{family}"
