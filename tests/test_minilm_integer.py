"""The integer mode of the MiniLM QNN (networks.integer): integer-only blocks, Proposition 2,
the fine-tuning twin equal to the integer blocks, the round trip and the checkpoints, the
slice, and the mode's checks.
"""

import copy
import json
import math

import pytest
import torch

from golden_models.fixed_point import signed_limits
from networks import checkpoint
from networks import finetune as ft
from networks.finetune_report import _document, evaluate, float_embeddings, length_groups
from networks.integer import (
    IntegerSpec,
    block_forward,
    float_mode_,
    integer_mode_,
    integer_spec,
    score_bits,
)
from networks.ptq import PTQConfig, convert, set_masks_
from networks.rtl_slice import capture_slice


@pytest.fixture(scope="module")
def setup(minilm, pydoc_corpus, minilm_qnn, one_thread):
    model, tok = minilm
    qint = integer_mode_(copy.deepcopy(minilm_qnn))
    return model, tok, pydoc_corpus, minilm_qnn, qint


def _embed(qnn, tok, sentences):
    with torch.no_grad():
        return torch.cat([qnn.embed(*tok([s])) for s in sentences])


def _streams(qnn, tok, sentence):
    """The integer streams entering and leaving every block, and the valid keys."""
    ids, mask = tok([sentence])
    pos = torch.arange(ids.shape[1])
    with torch.no_grad():
        x = qnn.embed_norm(
            qnn.word_embeddings(ids)
            + qnn.position_embeddings(pos)[None]
            + qnn.token_type_embeddings(torch.zeros_like(ids))
        )
        r = torch.round(x / qnn.layers[0].int_block.s_in).to(torch.int64)
        valid = mask.to(torch.bool)
        streams = [r]
        for layer in qnn.layers:
            streams.append(block_forward(layer, streams[-1], valid))
    return streams, ids, mask


def test_every_tensor_between_encoders_is_an_integer(setup):
    _, tok, corpus, _, qint = setup
    seen = {}

    def record(point, q, n_events):
        seen[(point.block, point.name)] = q

    for p in qint.points():
        p.recorder = record
    try:
        streams, _, _ = _streams(qint, tok, corpus.evaluation[0])
    finally:
        for p in qint.points():
            p.recorder = None
    assert len(seen) == 6 * 10  # every position and the key and value, every block
    for (_, name), q in seen.items():
        space = qint.layers[0].points[name].space
        assert q.dtype == torch.int64 and int(q.min()) >= space.q_min and int(q.max()) <= space.c
    lo, hi = signed_limits(qint.integer.residual_bits)
    for r in streams:
        assert r.dtype == torch.int64 and int(r.min()) >= lo and int(r.max()) <= hi
    # the stream scales bound every LayerNorm output: no block saturates its stream
    assert all(int(r.abs().max()) < hi for r in streams[1:])


def test_k0_is_bit_exact_in_integer_mode(setup):
    """Proposition 2 holds for the integer blocks: evaluate() asserts it."""
    model, tok, corpus, _, qint = setup
    ev = corpus.evaluation[:3]
    res = evaluate(qint, tok, ev, 0, float_embeddings(model, tok, ev))
    assert res["bit_exact_qnn"] is True
    assert res["cos_float"]["mean"] > 0.3


def test_evaluation_in_length_batches_is_a_sentence_at_a_time(setup, monkeypatch):
    """evaluate() runs sentences of one length as one batch: the same embeddings, codes and
    statistics as one sentence a run (here forced by groups of one)."""
    model, tok, corpus, _, qint = setup
    lengths = [int(tok([s])[1].sum()) for s in corpus.evaluation[:40]]
    twice = [n for n in dict.fromkeys(lengths) if lengths.count(n) >= 2][:2]
    ev = [s for s, n in zip(corpus.evaluation[:40], lengths, strict=True) if n in twice]
    assert len(ev) >= 4
    emb = float_embeddings(model, tok, ev)
    from networks import finetune_report

    for k in (0, 1):
        batched = evaluate(qint, tok, ev, k, emb)
        monkeypatch.setattr(
            finetune_report, "length_groups", lambda n, most=1: [[i] for i in range(len(n))]
        )
        alone = evaluate(qint, tok, ev, k, emb)
        monkeypatch.undo()
        assert batched == alone


def test_length_groups():
    assert length_groups([3, 1, 3, 2, 3], most=2) == [[1], [3], [0, 2], [4]]
    assert length_groups([]) == []


def test_mode_switch_is_clean(setup):
    _, tok, corpus, qnn, qint = setup
    ev = corpus.evaluation[:2]
    back = float_mode_(copy.deepcopy(qint))
    assert back.integer is None and all(layer.int_block is None for layer in back.layers)
    assert torch.equal(_embed(back, tok, ev), _embed(qnn, tok, ev))
    assert not torch.equal(_embed(qint, tok, ev), _embed(qnn, tok, ev))


@pytest.mark.slow
def test_integer_mode_agrees_with_float_mode_at_8_bits(minilm, pydoc_corpus, one_thread):
    """At W8A8 the quantization is fine enough that the integer non-linearities must give the
    float mode's embeddings: a wrong stream scale, table or wiring would not."""
    model, tok = minilm
    q8 = convert(model, tok, pydoc_corpus.calibration[:2], PTQConfig(weight_bits=8, act_bits=8))
    ev = pydoc_corpus.evaluation[:4]
    e_float = _embed(q8, tok, ev)
    e_int = _embed(integer_mode_(q8), tok, ev)
    assert float((e_float * e_int).sum(1).min()) > 0.97


@pytest.mark.parametrize("k", [0, 1])
def test_twin_reproduces_the_integer_blocks(setup, k):
    """Fed the integer QNN's stream, every block of the twin (integer functions forward)
    returns the QNN's next stream exactly."""
    _, tok, corpus, _, qint = setup
    student = ft.twin(qint)
    set_masks_(qint, k)
    try:
        for sentence in corpus.evaluation[:2]:
            streams, ids, mask = _streams(qint, tok, sentence)
            keep = mask[:, None, None, :].to(torch.bool)
            bias = torch.zeros(keep.shape).masked_fill(~keep, torch.finfo(torch.float32).min)
            for i, layer in enumerate(student.layers):
                blk = qint.layers[i].int_block
                x = (streams[i].to(torch.float64) * blk.s_in).to(torch.float32)
                with torch.no_grad():
                    y, r, s_out = ft._block_integer(
                        layer, x, streams[i], blk.s_in, bias, mask.to(torch.bool), k,
                        qint.integer,
                    )
                assert s_out == blk.s_out
                assert torch.equal(r, streams[i + 1])  # every integer, to the last bit
                diff = (y.to(torch.float64) / s_out - streams[i + 1]).abs()
                assert float(diff.max()) < 0.01
    finally:
        set_masks_(qint, 0)


def test_twin_embeddings(setup):
    _, tok, corpus, _, qint = setup
    student = ft.twin(qint)
    set_masks_(qint, 1)
    try:
        for sentence in corpus.evaluation[:3]:
            ids, mask = tok([sentence])
            with torch.no_grad():
                e = ft.pooled(ft.block_outputs(student, ids, mask, 1)[-1], mask)
            assert float((e.double() * qint.embed(ids, mask)).sum()) > 0.999
    finally:
        set_masks_(qint, 0)


def test_twin_gradients_pass_straight_through(setup):
    model, tok, corpus, _, qint = setup
    student = ft.twin(qint)
    ids, mask = tok(corpus.calibration[:2])
    loss = ft.distill_loss(student, model, ids, mask, 1)
    loss.backward()
    for layer in student.layers:
        for ln in (layer.attn_norm, layer.ffn_norm):
            assert ln.weight.grad is not None and float(ln.weight.grad.abs().sum()) > 0
        assert float(layer.query.weight.grad.abs().sum()) > 0  # through the integer softmax


def test_round_trip_and_checkpoint(setup, tmp_path):
    model, tok, corpus, _, qint = setup
    back = ft.to_qnn(ft.twin(qint), qint)
    assert back.integer == qint.integer
    for a, b in zip(qint.layers, back.layers, strict=True):
        for name, t in a.int_block.tables.items():
            assert torch.equal(t, b.int_block.tables[name]), name
    run = {
        "k": 0,
        "config": {
            "steps": 1, "batch": 1, "lr": 1e-3, "warmup": 0, "weight_decay": 0.0, "seed": 0,
            "threads": 1,
        },
        "training": {
            "corpora": [], "sentences": 1, "loss_first": 1.0, "loss_last": 1.0,
            "train_seconds": 0.0, "wall_seconds": 0.0,
        },
        "before": {
            "cos_float": {"mean": 0.5, "min": 0.5}, "retrieval_agreement": 0.5,
            "bit_exact_qnn": True,
            "rates": {"network": 0.0, "positions": {p: 0.0 for p in _positions()}},
        },
    }
    run["after"] = run["before"]
    doc = _document("minilm", corpus, 6, 2, PTQConfig(), [run], qint.integer)
    assert doc["integer"] == {"residual_bits": 16, "guard_bits": 5, "exp_frac_bits": 6}
    checkpoint.save(back, doc, tmp_path / "k0")
    loaded, _ = checkpoint.load(tmp_path / "k0", model, integer=True)
    assert loaded.integer == qint.integer
    ev = corpus.evaluation[:2]
    assert torch.equal(_embed(loaded, tok, ev), _embed(back, tok, ev))
    with pytest.raises(ValueError, match="was fine-tuned in integer mode; load it in integer"):
        checkpoint.load(tmp_path / "k0", model, integer=False)
    # the same checkpoint with its mode removed is a float one: refused in integer mode
    folder = tmp_path / "float"
    folder.mkdir()
    for name in ("checkpoint.safetensors", "finetune.json"):
        (folder / name).write_bytes((tmp_path / "k0" / name).read_bytes())
    fdoc = json.loads((folder / "finetune.json").read_text())
    del fdoc["integer"]
    (folder / "finetune.json").write_text(json.dumps(fdoc))
    with pytest.raises(ValueError, match="fine-tuned with float non-linearities; it cannot be"):
        checkpoint.load(folder, model, integer=True)
    assert checkpoint.load(folder, model)[0].integer is None


def _positions():
    from networks.bert import POSITIONS

    return POSITIONS


def test_slice_of_the_integer_qnn(setup):
    """capture_slice checks the Q projection's integer layer against the integer QNN's codes."""
    _, tok, corpus, _, qint = setup
    sl = capture_slice(qint, tok, corpus.evaluation[:2], block=0, n_out=16, k=1, max_vectors=4)
    assert sl.q_in.shape[0] == 4


def test_widths_come_from_the_model(setup):
    _, _, _, _, qint = setup
    blk = qint.layers[0].int_block
    assert blk.softmax.row_max == qint.cfg.max_position_embeddings == 512
    assert blk.softmax.score_bits == 13  # 32 products of 4-bit codes: |A| <= 2048
    assert blk.norm_attn.n == 384 and blk.norm_attn.in_bits == 21
    assert blk.add_ffn.acc_bound == 1536 * 8 * (15 + 15)
    space = qint.layers[0].points["query"].space
    assert score_bits(space, space, 64) == 14  # BERT-base heads


def test_integer_mode_refuses():
    from networks.bert import BertConfig, BertEncoder

    raw = BertEncoder(BertConfig(num_hidden_layers=1))
    with pytest.raises(ValueError, match="the QNN is not calibrated"):
        integer_mode_(raw)
    with pytest.raises(TypeError, match="spec must be an IntegerSpec"):
        integer_mode_(raw, {"residual_bits": 16})
    with pytest.raises(ValueError, match="residual_bits must be in 4..24, not 3"):
        IntegerSpec(residual_bits=3)
    with pytest.raises(ValueError, match="integer must be an object with keys"):
        IntegerSpec.from_dict({"residual_bits": 16})
    assert integer_spec(False) is None and integer_spec(True) == IntegerSpec()
    assert integer_spec(True, 12) == IntegerSpec(residual_bits=12)
    with pytest.raises(ValueError, match="--residual-bits 12 needs --integer"):
        integer_spec(False, 12)
    with pytest.raises(ValueError, match="--residual-bits must be in 4..24, not 30"):
        integer_spec(True, 30)


def test_stream_scale_is_the_layernorm_bound(setup):
    _, _, _, _, qint = setup
    ln = qint.layers[0].attn_norm
    bound = float((ln.weight.abs() * math.sqrt(383) + ln.bias.abs()).max())
    assert qint.layers[0].int_block.s_mid == pytest.approx(bound / (2**15 - 1), rel=1e-12)


@pytest.mark.parametrize("channels", [None, 7])
def test_walk_is_fire(channels):
    """walk() (a binary search over a non-increasing table) gives fire()'s codes everywhere:
    below, on, between and above the thresholds, ties included; any other table takes fire."""
    from golden_models.codespace import CodeSpace
    from golden_models.integer_layer import fire
    from networks.integer import walk

    gen = torch.Generator().manual_seed(0)
    space = CodeSpace(16, "asym")
    shape = (space.T - 1,) if channels is None else (channels, space.T - 1)
    theta = torch.randint(-40, 40, shape, generator=gen).sort(-1, descending=True).values
    theta[..., 3] = theta[..., 4]  # a tie
    n = channels or 4
    v = torch.randint(-50, 50, (3, 5, n), generator=gen)
    on = theta.T.reshape(1, -1, channels) if channels else theta.reshape(1, -1, 1)
    v = torch.cat([v, on.expand(3, -1, n)], 1)  # every threshold itself
    assert torch.equal(walk(v, theta, space), space.c - fire(v, theta, space.T))
    rough = theta.clone()
    rough[..., 0] = rough[..., -1] - 1  # not non-increasing
    assert torch.equal(walk(v, rough, space), space.c - fire(v, rough, space.T))
