"""Dead-zone fine-tuning of the MiniLM QNN (networks.finetune), short mode.

The twin must reproduce the converted QNN, the masked STE must block exactly the projected and
saturated values, the fine-tuned QNN must keep the integer contract (k=0 bit-exact, a slice that
equals the QNN, a checkpoint that loads back bit for bit) and the run must be deterministic.
"""

import json
import os

import pytest
import torch

from networks import checkpoint
from networks import finetune as ft
from networks.bert import POSITIONS, load_minilm
from networks.finetune_report import (
    _document,
    evaluate,
    float_embeddings,
    retrieval_agreement,
)
from networks.ptq import PTQConfig, set_masks_
from networks.rtl_slice import capture_slice

STEPS = 2


@pytest.fixture(scope="module")
def setup(minilm, pydoc_corpus, minilm_finetuned, one_thread):
    model, tok = minilm
    qnn, tuned, log = minilm_finetuned
    return model, tok, pydoc_corpus, qnn, tuned, log


def _qnn_embed(qnn, tok, sentences, k):
    set_masks_(qnn, k)
    try:
        with torch.no_grad():
            return torch.cat([qnn.embed(*tok([s])) for s in sentences])
    finally:
        set_masks_(qnn, 0)


@pytest.mark.parametrize("k", [0, 1])
def test_twin_reproduces_the_qnn(setup, k):
    model, tok, corpus, qnn, _, _ = setup
    sentences = corpus.evaluation[:3]
    student = ft.twin(qnn)
    with torch.no_grad():
        for s in sentences:
            ids, mask = tok([s])
            e_twin = ft.pooled(ft.block_outputs(student, ids, mask, k)[-1], mask)
            e_qnn = _qnn_embed(qnn, tok, [s], k)
            cos = float((e_twin.double() * e_qnn).sum())
            assert cos > 0.9999


def test_round_trip_is_exact(setup):
    _, _, _, qnn, _, _ = setup
    back = ft.to_qnn(ft.twin(qnn), qnn)
    for a, b in zip(qnn.linears(), back.linears(), strict=True):
        assert torch.equal(a.w_int, b.w_int)
        assert torch.equal(a.bias, b.bias.to(a.bias.dtype)) or torch.allclose(
            a.bias, b.bias, rtol=0, atol=1e-6
        )


def test_ste_gradients():
    model, _ = load_minilm()
    point = model.layers[0].points["q_proj_in"]
    from golden_models.mask import Mask

    saved = (point.alpha, point.mask)
    point.alpha, point.mask = 0.5, Mask(point.space, point.space.c, 0)  # mu = 0
    try:
        x = torch.tensor([-9.0, -0.4, 0.0, 0.3, 0.6, 1.2, 9.0], requires_grad=True)
        # k = 0: clipped STE, the gradient passes at q = mu = 0 and stops only when saturated
        ft._fake_act(x, point, 0).sum().backward()
        assert x.grad.tolist() == [0, 1, 1, 1, 1, 1, 0]
        x.grad = None
        # k = 1: masked STE, codes -1, 0, 1 are projected to mu and get no gradient
        y = ft._fake_act(x, point, 1)
        y.sum().backward()
        assert y.tolist() == [-4.0, 0.0, 0.0, 0.0, 0.0, 1.0, 3.5]
        assert x.grad.tolist() == [0, 0, 0, 0, 0, 1, 0]
    finally:
        point.alpha, point.mask = saved


def test_learned_scale_gradients():
    """LSQ: same forward and input gradient as the fixed scale; the scale's gradient is
    ``q - x/alpha`` where the gradient passes and ``qbar`` (mu, q_min, q_max) where it stops."""
    model, _ = load_minilm()
    point = model.layers[0].points["q_proj_in"]
    from golden_models.mask import Mask

    point.alpha, point.mask = 0.5, Mask(point.space, point.space.c, 0)  # mu = 0
    point.log_alpha = torch.nn.Parameter(torch.tensor(0.5).log())
    x0 = torch.tensor([-9.0, -0.375, 0.0, 0.375, 0.625, 1.125, 9.0])  # exact in binary
    # codes -8 (saturated), -1, 0, 1, 1, 2, 7 (saturated); x/alpha is exact
    for k, want in (
        (0, -8 + (-1 + 0.75) + 0 + (1 - 0.75) + (1 - 1.25) + (2 - 2.25) + 7),
        (1, -8 + 0 + 0 + 0 + 0 + (2 - 2.25) + 7),
    ):
        x = x0.clone().requires_grad_(True)
        point.log_alpha.grad = None
        y = ft._learned_act(x, point, k)
        y.sum().backward()
        xf = x0.clone().requires_grad_(True)
        del point.log_alpha  # the fixed-scale path
        yf = ft._fake_act(xf, point, k)
        yf.sum().backward()
        point.log_alpha = torch.nn.Parameter(torch.tensor(0.5).log())
        assert torch.allclose(y, yf, rtol=0, atol=1e-6)
        assert x.grad.tolist() == xf.grad.tolist()
        y = ft._learned_act(x0, point, k)
        y.sum().backward()
        assert float(point.log_alpha.grad) == pytest.approx(0.5 * want, abs=1e-6)  # d/d log


def test_learned_scales_keep_the_integer_contract(setup, tmp_path):
    model, tok, corpus, qnn, _, _ = setup
    cfg = ft.FinetuneConfig(k=1, steps=STEPS, batch=4, lr=1e-2, scale_lr=1e-2, warmup=0)
    tuned, _ = ft.train(model, qnn, tok, corpus.calibration[:16], cfg)
    moved = [a.alpha != b.alpha for a, b in zip(qnn.points(), tuned.points(), strict=True)]
    assert all(moved)  # every scale was learned and written back
    for a, b in zip(qnn.spike_points(), tuned.spike_points(), strict=True):
        assert a.mask.mu == b.mask.mu  # I_max stays in code units
    assert ft.to_qnn(ft.twin(qnn), qnn).points()[0].alpha == qnn.points()[0].alpha
    ev = corpus.evaluation[:4]
    q0 = evaluate(tuned, tok, ev, 0, float_embeddings(model, tok, ev))
    assert q0["bit_exact_qnn"] is True
    capture_slice(tuned, tok, ev, block=0, n_out=16, k=1, max_vectors=4)  # checks the QNN
    folder = checkpoint.save(
        tuned, _document("minilm", corpus, 8, 4, PTQConfig(), [_run(q0, q0)]), tmp_path / "k1"
    )
    loaded, _ = checkpoint.load(folder, model, k=1)
    assert [p.alpha for p in loaded.points()] == [p.alpha for p in tuned.points()]


def test_training_changes_the_network_and_is_deterministic(setup):
    model, tok, corpus, qnn, tuned, log = setup
    assert len(log.losses) == STEPS
    changed = sum(
        int((a.w_int != b.w_int).sum()) for a, b in zip(qnn.linears(), tuned.linears(), strict=True)
    )
    assert changed > 0
    for lin in tuned.linears():
        assert int(lin.w_int.min()) >= -8 and int(lin.w_int.max()) <= 7
    cfg = ft.FinetuneConfig(k=1, steps=STEPS, batch=4, lr=1e-2, warmup=0, threads=1)
    again, log2 = ft.train(model, qnn, tok, corpus.calibration[:16], cfg)
    assert log2.losses == log.losses
    for a, b in zip(tuned.linears(), again.linears(), strict=True):
        assert torch.equal(a.w_int, b.w_int) and torch.equal(a.bias, b.bias)
    assert cfg.scale_lr > 0  # the default learns the scales: they are reproduced too
    assert [p.alpha for p in tuned.points()] == [p.alpha for p in again.points()]


def test_finetuned_qnn_keeps_the_integer_contract(setup, tmp_path):
    model, tok, corpus, qnn, tuned, _ = setup
    ev = corpus.evaluation[:4]
    emb_f = float_embeddings(model, tok, ev)
    q0 = evaluate(tuned, tok, ev, 0, emb_f)
    assert q0["bit_exact_qnn"] is True  # Proposition 2 on the fine-tuned QNN
    q1 = evaluate(tuned, tok, ev, 1, emb_f)
    assert q1["bit_exact_qnn"] is None
    assert q1["rates"]["network"] < q0["rates"]["network"]
    # the Q-projection slice of the fine-tuned QNN equals the QNN (capture_slice checks it)
    sl = capture_slice(tuned, tok, ev, block=0, n_out=16, k=1, max_vectors=4)
    assert sl.q_in.shape == (4, 384)
    # a checkpoint loads back bit for bit
    doc = _document("minilm", corpus, 8, len(ev), PTQConfig(), [_run(q0, q1)])
    old_umask = os.umask(0o022)
    try:
        folder = checkpoint.save(tuned, doc, tmp_path / "k1")
    finally:
        os.umask(old_umask)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["k1"]  # no staging left behind
    # the modes the umask gives (before: safetensors wrote the tensors 0600)
    assert {p.name: p.stat().st_mode & 0o777 for p in folder.iterdir()} == {
        "checkpoint.safetensors": 0o644, "finetune.json": 0o644}
    loaded, _ = checkpoint.load(folder, model, k=1)
    assert torch.equal(_qnn_embed(loaded, tok, ev, 1), _qnn_embed(tuned, tok, ev, 1))
    with pytest.raises(ValueError, match="fine-tuned at k=1, not k=2"):
        checkpoint.load(folder, model, k=2)
    with pytest.raises(ValueError, match="of model 'minilm', not 'bert'"):
        checkpoint.load(folder, model, model="bert")
    (folder / "checkpoint.safetensors").unlink()
    with pytest.raises(ValueError, match="is not a complete checkpoint"):
        checkpoint.load(folder, model)


def _run(before, after):
    return {
        "k": 1,
        "config": {
            "steps": 1,
            "batch": 4,
            "lr": 0.01,
            "warmup": 0,
            "weight_decay": 0.0,
            "seed": 0,
            "threads": 1,
        },
        "training": {
            "corpora": [{"name": "x", "source": "y", "split": "calibration"}],
            "sentences": 16,
            "loss_first": 1.0,
            "loss_last": 0.5,
            "train_seconds": 1.0,
            "wall_seconds": 2.0,
        },
        "before": before,
        "after": after,
    }


def test_interrupted_save_leaves_no_checkpoint(setup, tmp_path, monkeypatch):
    _, _, corpus, _, tuned, _ = setup
    q = {
        "cos_float": {"mean": 0.5, "min": 0.1},
        "retrieval_agreement": 0.5,
        "bit_exact_qnn": None,
        "rates": {"network": 0.01, "positions": {}},
    }
    bad = _document("minilm", corpus, 8, 4, PTQConfig(), [_run(q, q)])
    with pytest.raises(
        ValueError, match="finetune.json: field 'runs\\[0\\].before.rates.positions"
    ):
        checkpoint.save(tuned, bad, tmp_path / "k1")
    import safetensors.torch

    def boom(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(safetensors.torch, "save", boom)
    positions = {n: 0.01 for n in POSITIONS}
    q["rates"]["positions"] = positions
    doc = _document("minilm", corpus, 8, 4, PTQConfig(), [_run(q, q)])
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save(tuned, doc, tmp_path / "k1")
    assert list(tmp_path.iterdir()) == []


def test_retrieval_agreement():
    e = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]]), dim=1)
    assert retrieval_agreement(e, e) == 1.0
    # swapping the last two rows' geometry changes the nearest neighbours of all three
    f = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.1, 0.9]]), dim=1)
    assert retrieval_agreement(f, e) == pytest.approx(1 / 3)
    with pytest.raises(ValueError, match="at least two"):
        retrieval_agreement(e[:1], e[:1])


def test_length_pooled_batches():
    """Every sentence once an epoch, pooled batches pad less, pool 1 is plain random batches."""
    gen = torch.Generator().manual_seed(1)
    lengths = torch.randint(3, 120, (640,), generator=gen).tolist()
    epoch = 640 // 16

    def padding(order):
        return sum(16 * max(lengths[i] for i in b) - sum(lengths[i] for i in b) for b in order)

    plain = ft.batches(lengths, 16, 3 * epoch, seed=0, pool=1)
    pooled = ft.batches(lengths, 16, 3 * epoch, seed=0, pool=8)
    for order in (plain, pooled):
        assert all(len(b) == 16 for b in order)
        for e in range(3):
            seen = sorted(i for b in order[e * epoch : (e + 1) * epoch] for i in b)
            assert seen == list(range(640))
    assert padding(pooled) < padding(plain) / 3
    assert pooled == ft.batches(lengths, 16, 3 * epoch, seed=0, pool=8)
    assert pooled != ft.batches(lengths, 16, 3 * epoch, seed=1, pool=8)
    # pool 1: consecutive slices of seeded permutations, across epoch boundaries
    perms = torch.Generator().manual_seed(0)
    flat = [i for _ in range(4) for i in torch.randperm(640, generator=perms).tolist()]
    assert plain == [flat[s * 16 : (s + 1) * 16] for s in range(3 * epoch)]
    # batches never straddle a pool when the epoch is not a multiple of the pool
    odd = ft.batches(lengths[:100], 16, 20, seed=0, pool=4)
    assert all(len(b) == 16 for b in odd) and len(odd) == 20


def test_config_errors():
    with pytest.raises(ValueError, match="k must be in 0..15, not 16"):
        ft.FinetuneConfig(k=16)
    with pytest.raises(ValueError, match="lr must be"):
        ft.FinetuneConfig(lr=2.0)
    with pytest.raises(ValueError, match="scale_lr must be a number in"):
        ft.FinetuneConfig(scale_lr=-1e-3)
    with pytest.raises(ValueError, match="pool must be in 1..1000000, not 0"):
        ft.FinetuneConfig(pool=0)
    assert json.dumps(ft.FinetuneConfig().as_dict())
