"""A tile-sized slice of a real MiniLM layer as a golden IntegerLayer, bit-exact to the QNN."""

import json

import pytest
import torch

from golden_models.integer_layer import IntegerLayer
from networks.rtl_slice import capture_slice, export_slice, slice_document

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def setup(minilm, pydoc_corpus, minilm_qnn):
    _, tok = minilm
    return tok, pydoc_corpus, minilm_qnn


@pytest.mark.parametrize("k", [0, 1])
def test_slice_equals_qnn(setup, k):
    tok, corpus, qnn = setup
    sl = capture_slice(
        qnn, tok, corpus.evaluation[:3], block=2, n_out=16, out_offset=32, k=k, max_vectors=12
    )
    assert isinstance(sl.layer, IntegerLayer)
    assert (sl.layer.n_in, sl.layer.n_out) == (384, 16)
    assert sl.q_in.shape == (12, 384) and sl.q_out.shape == (12, 16)
    for i in range(12):
        res = sl.layer.run_codes(sl.q_in[i])
        assert torch.equal(sl.layer.out_mask.space.c - res.tau, sl.q_out[i])
    assert sl.layer.in_mask.k == k and sl.layer.out_mask.k == k
    # real weights: the slice's integers are the QNN's
    assert torch.equal(sl.layer.weights, qnn.layers[2].query.w_int[32:48].T)


def test_slice_detects_a_wrong_threshold(setup):
    tok, corpus, qnn = setup
    sl = capture_slice(qnn, tok, corpus.evaluation[:2], n_out=8, max_vectors=16)
    theta = sl.layer.theta.clone()
    theta[:, 7] += 1000  # firing at t=7 (q=0) becomes impossible
    theta = theta.flip(1).cummax(1).values.flip(1)  # keep it non-increasing
    bad = IntegerLayer(
        sl.layer.weights, 4, sl.layer.init, theta, sl.layer.in_mask, sl.layer.out_mask
    )
    diffs = sum(
        not torch.equal(bad.run_codes(sl.q_in[i]).tau, sl.layer.run_codes(sl.q_in[i]).tau)
        for i in range(16)
    )
    assert diffs > 0


def test_export_is_deterministic(setup, tmp_path):
    tok, corpus, qnn = setup
    sl = capture_slice(qnn, tok, corpus.evaluation[:1], n_out=4, max_vectors=3)
    a = export_slice(sl, tmp_path / "a.json").read_bytes()
    b = export_slice(sl, tmp_path / "b.json").read_bytes()
    assert a == b
    doc = json.loads(a)
    assert doc["schema"] == "matterhorn.layer_slice/1"
    assert len(doc["weights"]) == 384 and len(doc["weights"][0]) == 4
    assert len(doc["vectors"]) == 3 and doc["vectors"][0]["q_out"] == sl.q_out[0].tolist()
    assert doc == json.loads(json.dumps(slice_document(sl)))


def test_slice_checks(setup):
    tok, corpus, qnn = setup
    with pytest.raises(ValueError, match="block must be in 0..5, not 6"):
        capture_slice(qnn, tok, corpus.evaluation[:1], block=6)
    with pytest.raises(ValueError, match="out_offset must be in 0..368, not 380"):
        capture_slice(qnn, tok, corpus.evaluation[:1], out_offset=380)
    with pytest.raises(ValueError, match="at least one sentence"):
        capture_slice(qnn, tok, [])
