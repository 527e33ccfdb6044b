"""Post-training conversion of MiniLM: integer weights, scales, masks, and the integer form."""

import copy

import pytest
import torch

from golden_models.codespace import CodeSpace
from golden_models.integer_layer import threshold_table
from golden_models.quantizer import quantize
from networks.bert import POSITION_FAMILY, POSITIONS
from networks.ptq import (
    PTQConfig,
    activation_scale,
    set_masks_,
    smooth_,
    weight_scales,
)

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def setup(minilm, pydoc_corpus, minilm_qnn):
    model, tok = minilm
    return model, tok, pydoc_corpus, minilm_qnn


def test_weights_are_4bit_per_channel(setup):
    _, _, _, qnn = setup
    for lin in qnn.linears():
        assert lin.w_int.dtype == torch.int64 and lin.weight_bits == 4
        assert int(lin.w_int.min()) >= -8 and int(lin.w_int.max()) <= 7
        assert lin.w_scale.shape == (lin.w_int.shape[0],)
        assert bool((lin.w_scale > 0).all())


def test_weight_scale_search_beats_max_abs():
    w = torch.randn(32, 64, generator=torch.Generator().manual_seed(1)).double()
    w[:, 0] *= 8  # an outlier column
    space = CodeSpace(16, "sym")

    def err(s):
        return float(((quantize(w, s[:, None], space, "round") * s[:, None] - w) ** 2).sum())

    best = weight_scales(w, 4)
    assert err(best) < err(w.abs().amax(1) / 7)


def test_activation_scale_search():
    x = torch.randn(10000, generator=torch.Generator().manual_seed(2)).double()
    a = activation_scale(x, CodeSpace(16, "sym"))
    assert x.abs().max() / 40 < a < x.abs().max() / 7  # clips the tail, not the body
    assert activation_scale(torch.zeros(5), CodeSpace(16, "asym")) == 1.0


def test_points_calibrated(setup):
    _, _, _, qnn = setup
    for p in qnn.points():
        assert p.alpha is not None and p.alpha > 0
        assert p.space.T == 16 and p.rounding == "round"
    for p in qnn.spike_points():
        assert p.space.family == POSITION_FAMILY[p.name]
        assert p.mask is not None and p.mask.k == 0
    assert [p.name for p in qnn.spike_points()[:8]] == list(POSITIONS)


def test_linear_is_the_integer_affine_map(setup):
    """QLinear's output code equals the threshold table's code: the IntegerLayer contract."""
    _, tok, corpus, qnn = setup
    layer = qnn.layers[1]
    p_in, lin = layer.points["ffn_expand_in"], layer.ffn_expand
    x = torch.randn(20, 384, generator=torch.Generator().manual_seed(3)).double()
    _, q = p_in(x)
    y = lin(x, q, p_in.alpha)  # [20, 1536]
    alpha_out = 0.07
    space = CodeSpace(16, "sym")
    codes = quantize(y, alpha_out, space, "round")
    theta = threshold_table(lin.w_scale * p_in.alpha, lin.bias.double(), alpha_out, space, "round")
    v = q @ lin.w_int.T
    tau = (v[..., None] >= theta).to(torch.int8)
    tau = torch.where(tau.any(-1), tau.argmax(-1), 15)
    assert torch.equal(space.c - tau, codes)


def test_smoothing_keeps_the_float_function(setup):
    model, tok, corpus, _ = setup
    ref = copy.deepcopy(model).double()
    smoothed = copy.deepcopy(ref)
    smooth_(smoothed, tok, corpus.calibration[:2], 0.5)
    ids, mask = tok(list(corpus.evaluation[:2]))
    with torch.no_grad():
        assert torch.allclose(smoothed(ids, mask), ref(ids, mask), atol=1e-9)
    assert smoothed.layers[0].points["ffn_contract_in"].smooth is not None


def test_masks_keep_i_max_across_radii(setup):
    _, _, _, qnn = setup
    i_max = [p.mask.i_max for p in qnn.spike_points()]
    set_masks_(qnn, 2)
    assert [p.mask.i_max for p in qnn.spike_points()] == i_max
    assert all(p.mask.k == 2 for p in qnn.spike_points())
    set_masks_(qnn, 0)


def test_config_checks():
    with pytest.raises(ValueError, match="weight_bits must be an integer in 2..8, not 1"):
        PTQConfig(weight_bits=1)
    with pytest.raises(ValueError, match="smooth must be a number in 0..1"):
        PTQConfig(smooth=2.0)
