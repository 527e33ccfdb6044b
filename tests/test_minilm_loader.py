"""The MiniLM loader: our BERT modules on the shipped weights equal Hugging Face's BertModel."""

import os

import pytest
import torch

from networks.bert import BertConfig, Tokenizer, load_minilm, model_dir

os.environ.setdefault("HF_HUB_OFFLINE", "1")


pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def batch(minilm, pydoc_corpus):
    _, tok = minilm
    sentences = list(pydoc_corpus.evaluation[:6]) + ["Short one."]
    return tok(sentences)


def test_matches_transformers_bert(minilm, batch):
    from transformers import BertModel

    model, _ = minilm
    ids, mask = batch
    assert int(mask.sum(1).min()) < ids.shape[1]  # padding is exercised
    ref = BertModel.from_pretrained(str(model_dir()), add_pooling_layer=False).eval()
    with torch.no_grad():
        ours = model(ids, mask)
        theirs = ref(input_ids=ids, attention_mask=mask).last_hidden_state
    valid = mask.bool()
    assert float((ours - theirs)[valid].abs().max()) < 1e-4


def test_sentence_embeddings_mean_pooled_and_normalised(minilm, batch):
    model, _ = minilm
    ids, mask = batch
    with torch.no_grad():
        emb = model.embed(ids, mask)
        alone = model.embed(ids[-1:, : int(mask[-1].sum())])
        hidden = model(ids, mask)
    assert emb.shape == (ids.shape[0], 384)
    assert torch.allclose(emb.norm(dim=1), torch.ones(ids.shape[0]), atol=1e-6)
    # padding does not change a sentence's embedding
    assert torch.allclose(emb[-1], alone[0], atol=1e-5)
    m = mask[..., None].float()
    mean = (hidden * m).sum(1) / m.sum(1)
    assert torch.allclose(emb, torch.nn.functional.normalize(mean, dim=1), atol=1e-6)


def test_config_read_from_package():
    cfg = BertConfig.from_json(model_dir() / "config.json")
    assert (cfg.hidden_size, cfg.intermediate_size, cfg.num_attention_heads) == (384, 1536, 12)
    assert (cfg.num_hidden_layers, cfg.head_dim) == (6, 32)


def test_tokenizer_rejects_single_string(minilm):
    _, tok = minilm
    with pytest.raises(TypeError, match="sequence of strings"):
        tok("one sentence")


def test_tokenizer_no_fixed_padding(minilm):
    _, tok = minilm
    ids, mask = tok(["A cat."])
    assert ids.shape == (1, 5) and int(mask.sum()) == 5  # [CLS] a cat . [SEP]


def test_missing_folder(tmp_path):
    with pytest.raises(FileNotFoundError):
        load_minilm(tmp_path)


def test_tokenizer_type():
    assert isinstance(load_minilm()[1], Tokenizer)
