"""QNN chains, the encoder block with the paper's eight positions, export, and the demo."""

import json
import re

import pytest
import torch

from golden_models import (
    POSITION_FAMILY,
    POSITIONS,
    CodeSpace,
    Mask,
    PositionStats,
    QNNEncoderBlock,
    quantize_weights,
    random_qnn,
    read_layers,
    write_layers,
)
from golden_models.demo import run_demo
from golden_models.encoder import CHAIN
from matterhorn.cli import main

#: The paper's Table "Mode location" (position, family), as in paper_tables.json.
PAPER_FAMILIES = {
    "Q-proj. input": "sym", "K-proj. input": "sym", "V-proj. input": "sym",
    "Query activation": "sym", "Attn. probability": "asym", "Attn.-out. input": "sym",
    "FFN-expand input": "sym", "FFN-contract input": "asym",
}


def exact(msg: str) -> str:
    return f"^{re.escape(msg)}$"


def check_chain_exact(layers, pairs):
    for layer, (q_in, q_out) in zip(layers, pairs, strict=True):
        q_in, q_out = q_in.reshape(-1, layer.n_in), q_out.reshape(-1, layer.n_out)
        for r in range(q_in.shape[0]):
            assert torch.equal(layer.output_codes(layer.run_codes(q_in[r])), q_out[r])


@pytest.mark.parametrize("distribution", ["peaked", "uniform"])
@pytest.mark.parametrize("weight_bits", [1, 4])
def test_random_qnn_chain_exact(distribution, weight_bits):
    chain = random_qnn((24, 20, 16, 12), T=16, k=1, families=("sym", "asym", "sym", "asym"),
                       weight_bits=weight_bits, distribution=distribution, seed=7)
    assert len(chain.layers) == 3
    q = chain.random_input(10, seed=1)
    codes = chain(q)
    layers = chain.integer_layers()
    # each integer layer's output mask is the next layer's input mask
    for a, b in zip(layers, layers[1:], strict=False):
        assert a.out_mask == b.in_mask
    # the integer chain feeds its own output events onward and matches the QNN at every layer
    for r in range(10):
        x = q[r]
        for i, layer in enumerate(layers):
            x = layer.output_codes(layer.run_codes(x))
            assert torch.equal(x, codes[i + 1][r])


def test_random_qnn_distributions():
    peaked = random_qnn((64, 64, 64), T=16, seed=0, distribution="peaked")
    uniform = random_qnn((64, 64, 64), T=16, seed=0, distribution="uniform")
    qp = peaked(peaked.random_input(64, seed=1))
    qu = uniform(uniform.random_input(64, seed=1))
    for pos in qp:
        s = PositionStats.from_codes("p", pos, CodeSpace(16))
        assert s.i_max in (7, 8)  # peaked at code 0 or its near tie -1
        assert s.p_mode > 0.15
    # uniform input: every level occurs, no level dominates
    s = PositionStats.from_codes("u", qu[0], CodeSpace(16))
    assert min(s.counts) > 0 and s.p_mode < 0.1
    # seeded: same seed, same chain
    again = random_qnn((64, 64, 64), T=16, seed=0, distribution="peaked")
    assert all(torch.equal(a.weight, b.weight) and a.out_alpha == b.out_alpha
               for a, b in zip(peaked.layers, again.layers, strict=True))


def test_random_qnn_bad_input():
    with pytest.raises(ValueError, match=exact("families must name 3 positions, not 2")):
        random_qnn((4, 4, 4), families=("sym", "sym"))
    with pytest.raises(ValueError, match=exact(
            "widths must list at least two layer widths, not (4,)")):
        random_qnn((4,))
    with pytest.raises(ValueError, match=exact("k must be in 0..7 for T=8, not 8")):
        random_qnn((4, 4), T=8, k=8)
    with pytest.raises(ValueError, match=exact(
            "distribution must be one of ('peaked', 'uniform'), not 'normal'")):
        random_qnn((4, 4), distribution="normal")


def test_quantize_weights():
    w = torch.tensor([[0.5, -0.2], [-1.0, 0.0], [0.25, 0.4]], dtype=torch.float64)
    wi, s = quantize_weights(w, 1)
    assert wi.tolist() == [[1, -1], [-1, 1], [1, 1]]
    assert torch.allclose(s, torch.tensor([1.75 / 3, 0.6 / 3], dtype=torch.float64))
    wi, s = quantize_weights(w, 4)
    assert wi.tolist() == [[4, -4], [-7, 0], [2, 7]]
    assert torch.allclose(s, torch.tensor([1 / 7, 0.4 / 7], dtype=torch.float64))


@pytest.fixture(scope="module")
def block():
    return QNNEncoderBlock(k=1, seed=0)


def test_encoder_positions_and_families(block):
    assert POSITION_FAMILY == PAPER_FAMILIES
    x = block.random_input(2, 8, seed=3)
    out = block(x)
    assert tuple(out.codes) == POSITIONS
    for p, q in out.codes.items():
        space = block.space(p)
        assert space.family == PAPER_FAMILIES[p]
        assert q.dtype == torch.int64
        assert int(q.min()) >= space.q_min and int(q.max()) <= space.q_max
    assert out.codes["Attn. probability"].shape == (2, 2, 8, 8)
    assert out.codes["FFN-contract input"].shape == (2, 8, 64)
    assert out.out.shape == (2, 8, 32) and out.out.dtype == torch.float64
    # deterministic: same seed and input, same codes and output bits
    again = QNNEncoderBlock(k=1, seed=0)(x)
    assert torch.equal(again.out, out.out)
    assert all(torch.equal(again.codes[p], out.codes[p]) for p in POSITIONS)


def test_encoder_integer_layers_exact(block):
    x = block.random_input(2, 8, seed=4)
    out = block(x)
    every = {**out.codes, **out.internal}
    from golden_models.encoder import LINEARS

    layers = block.integer_layers()
    assert set(layers) == set(LINEARS)
    for name, layer in layers.items():
        src, dst = LINEARS[name]
        assert layer.in_mask == block.mask(src)
        check_chain_exact([layer], [(every[src], every[dst])])


def test_encoder_chain_export(block, tmp_path):
    chain = block.integer_chain()
    assert [n for n, _ in chain] == list(CHAIN) and len(chain) >= 3
    x = block.random_input(1, 8, seed=5)
    trace = block.chain_trace(x)
    check_chain_exact([layer for _, layer in chain], [(qi, qo) for _, qi, qo in trace])
    # FFN expand feeds FFN contract directly: same position, same mask
    assert chain[1][1].out_mask == chain[2][1].in_mask
    for suffix in ("json", "npz"):
        path = tmp_path / f"chain.{suffix}"
        write_layers(path, chain)
        first = path.read_bytes()
        write_layers(path, QNNEncoderBlock(k=1, seed=0).integer_chain())
        assert path.read_bytes() == first  # deterministic bytes
        back = read_layers(path)
        for (n, a), (m, b) in zip(chain, back, strict=True):
            assert n == m
            assert torch.equal(a.weights, b.weights) and torch.equal(a.init, b.init)
            assert torch.equal(a.theta, b.theta)
            assert a.in_mask == b.in_mask and a.out_mask == b.out_mask
            assert a.weight_bits == b.weight_bits


def test_encoder_stats_serialisable(block):
    stats = block.stats(block.random_input(2, 8, seed=6))
    assert [s.name for s in stats] == list(POSITIONS)
    for s in stats:
        d = json.loads(json.dumps(s.as_dict()))
        assert PositionStats.from_dict(d) == s
        assert d["i_max"] == block.mask(s.name).i_max
        assert d["mttfs"][0]["s"] >= d["mttfs"][1]["s"] >= d["mttfs"][4]["s"]


def test_export_bad_input(tmp_path, block):
    chain = block.integer_chain()
    with pytest.raises(ValueError, match=exact(
            "format must be one of ('json', 'npz') (or a .json/.npz path), not 'txt'")):
        write_layers(tmp_path / "x.txt", chain)
    assert not list(tmp_path.iterdir())  # nothing half-written
    with pytest.raises(ValueError, match=exact("layers is empty: nothing to export")):
        write_layers(tmp_path / "x.json", [])
    assert not list(tmp_path.iterdir())
    path = tmp_path / "x.json"
    write_layers(path, chain)
    doc = json.loads(path.read_text())
    del doc["layers"][1]["theta"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=exact("field layers[1].theta is missing")):
        read_layers(path)
    doc["schema"] = "other"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=exact(
            "x.json: field 'schema': 'matterhorn.golden_layers/1' was expected")):
        read_layers(path)


def test_demo_exact_and_counts():
    result = run_demo(T=8, k=2, seed=1, n_in=16, n_out=8, batch=16)
    assert result.exact
    labels = [r.label for r in result.rows]
    assert labels == ["TTFS", "M-TTFS k=0", "M-TTFS k=1", "M-TTFS k=2"]
    events = [r.events for r in result.rows[1:]]
    assert events == sorted(events, reverse=True)
    # with codes peaked at 0, core M-TTFS beats TTFS (Proposition 1)
    assert result.rows[1].events < result.rows[0].events
    assert "exact: yes" in result.report()


def test_demo_cli(capsys):
    assert main(["demo", "--T", "8", "--k", "1", "--batch", "8", "--seed", "2"]) == 0
    out = capsys.readouterr().out
    assert "TTFS" in out and "M-TTFS k=0" in out and "M-TTFS k=1" in out
    assert "codes 8/8" in out
    assert main(["demo", "--T", "12"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == ("matterhorn demo: error: T must be a power of two 2**n with n in "
                           "1..8 (2, 4, 8, ..., 256), not 12")
    assert main(["demo", "--T", "16", "--k", "-1"]) == 2
    assert capsys.readouterr().err.strip() == (
        "matterhorn demo: error: k must be in 0..15 for T=16, not -1")
    assert main(["demo", "--seed", "-3"]) == 2
    assert capsys.readouterr().err.strip() == (
        "matterhorn demo: error: seed must be in 0..2147483647, not -3")


def test_encoder_round_bbit_calibrated():
    from golden_models import event_histogram, select_i_max
    from golden_models.encoder import LINEARS

    blk = QNNEncoderBlock(16, 2, 32, T=8, k=2, weight_bits=2, rounding="round", seed=3)
    x = blk.random_input(2, 6, seed=1)
    result = blk.calibrate(x)
    out = blk(x)
    for p in POSITIONS:
        space = blk.space(p)
        assert result[p] == select_i_max(event_histogram(out.codes[p], space), space)
        assert blk.mask(p) == Mask(space, result[p], 2)
    every = {**out.codes, **out.internal}
    for name, layer in blk.integer_layers().items():
        src, dst = LINEARS[name]
        check_chain_exact([layer], [(every[src], every[dst])])
