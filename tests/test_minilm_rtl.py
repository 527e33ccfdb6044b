"""A real MiniLM layer in RTL: the Q-projection slice on the generated tile, both simulators.

The slice (:mod:`networks.rtl_slice`), of the post-training QNN and of the QNN
after dead-zone fine-tuning (:mod:`networks.finetune`), is 384 inputs x 16
neurons of block 0's Q projection with the QNN's real 4-bit weights, threshold tables of its
real scales and bias, the calibrated masks at radius k = 1, and input vectors that are real
corpus tokens. The tile is generated at that size, loaded through its load port and run by the
cocotb tile bench through :func:`regression.run_tile`, which compares every output event and
every counter with :meth:`golden_models.integer_layer.IntegerLayer.run_events`.
"""

import pytest
import torch

import regression
from golden_models import encode_events
from networks.rtl_slice import capture_slice
from regression import sim

K = 1
VECTORS = 8


@pytest.fixture(scope="module")
def slices(minilm, pydoc_corpus, minilm_finetuned, one_thread):
    """The slice of the post-training QNN and of the same QNN after a short fine-tuning at k
    (the shared fine-tuning of tests/conftest.py; the integer form is what matters here)."""
    _, tok = minilm
    qnn, tuned, _ = minilm_finetuned
    return {
        name: capture_slice(
            net, tok, pydoc_corpus.evaluation[:4], block=0, n_out=16, k=K, max_vectors=VECTORS
        )
        for name, net in (("ptq", qnn), ("finetuned", tuned))
    }


def test_finetuned_slice_differs(slices):
    a, b = slices["ptq"].layer, slices["finetuned"].layer
    assert not (torch.equal(a.weights, b.weights) and torch.equal(a.theta, b.theta))


@pytest.mark.parametrize("model", ["ptq", "finetuned"])
@pytest.mark.parametrize("sim_name", sim.SIMULATORS)
def test_minilm_slice_on_tile(slices, model, sim_name):
    minilm_slice = slices[model]
    layer = minilm_slice.layer
    # the golden layer is the QNN's own computation for these tokens
    for q_in, q_out in zip(minilm_slice.q_in, minilm_slice.q_out, strict=True):
        assert torch.equal(layer.out_mask.space.c - layer.run_codes(q_in).tau, q_out)
    res = regression.run_tile(
        layer,
        minilm_slice.q_in,
        sim_name,
        out_dir=regression.DEFAULT_ROOT,
        seed=0,
        name=f"minilm-q-{model}",
    )
    assert res.passed, res.error
    golden = res.counters_golden
    assert res.counters_rtl == golden
    assert golden["events_in"] == res.report["events_in"]
    assert golden["events_in"] == sum(
        len(encode_events(q, layer.in_mask)[0]) for q in minilm_slice.q_in
    )
    assert golden["events_out"] + golden["events_suppressed"] == VECTORS * layer.n_out
