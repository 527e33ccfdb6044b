"""Quantizer, dead-zone projection and the masked straight-through estimator (Eq. masked_ste)."""

import math
import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from golden_models import ActivationQuantizer, CodeSpace, Mask, MaskedSTE, quantize

TS = [2, 4, 8, 16, 32]


def exact(msg: str) -> str:
    return f"^{re.escape(msg)}$"


def ref_code(x: float, space: CodeSpace, rounding: str) -> int:
    """Scalar reference: clip(floor(x), q_min, q_max), or floor(x + 1/2) for 'round'."""
    lvl = math.floor(x + 0.5) if rounding == "round" else math.floor(x)
    return min(max(lvl, space.q_min), space.q_max)


@pytest.mark.parametrize("family", ["sym", "asym"])
@pytest.mark.parametrize("rounding", ["floor", "round"])
@pytest.mark.parametrize("T", TS)
def test_quantize_matches_scalar_reference(T, family, rounding):
    space = CodeSpace(T, family)
    x = torch.linspace(space.q_min - 3, space.q_max + 3, 8 * T + 7, dtype=torch.float64)
    q = quantize(x * 0.25, 0.25, space, rounding)
    assert q.tolist() == [ref_code(float(v), space, rounding) for v in x]


def test_quantize_levels_of_families():
    assert (CodeSpace(16, "sym").q_min, CodeSpace(16, "sym").q_max) == (-8, 7)
    assert (CodeSpace(16, "asym").q_min, CodeSpace(16, "asym").q_max) == (0, 15)
    assert (CodeSpace(2, "sym").q_min, CodeSpace(2, "sym").q_max) == (-1, 0)


@settings(max_examples=200, deadline=None)
@given(
    T=st.sampled_from(TS),
    family=st.sampled_from(["sym", "asym"]),
    rounding=st.sampled_from(["floor", "round"]),
    alpha=st.floats(0.05, 4.0),
    data=st.data(),
)
def test_masked_ste_gradient(T, family, rounding, alpha, data):
    space = CodeSpace(T, family)
    i_max = data.draw(st.integers(0, T - 1))
    k = data.draw(st.integers(0, min(4, T - 1)))
    xs = data.draw(st.lists(st.floats(space.q_min - 3, space.q_max + 3), min_size=1,
                            max_size=40))
    # exact level boundaries too: the indicator edges are where off-by-ones hide
    xs += [float(space.q_min), float(space.q_max + 1), space.q_min - 0.5, space.q_max + 0.5]
    a = (torch.tensor(xs, dtype=torch.float64) * alpha).requires_grad_(True)
    upstream = torch.arange(1, a.numel() + 1, dtype=torch.float64)
    mu = space.c - i_max
    out = MaskedSTE.apply(a, alpha, space, mu, k, rounding)
    out.backward(upstream)
    for j, av in enumerate(a.detach().tolist()):
        x = av / alpha
        offset = 0.5 if rounding == "round" else 0.0
        inside = space.q_min <= x + offset < space.q_max + 1
        q = ref_code(x, space, rounding)
        passes = inside and abs(q - mu) > k
        assert float(a.grad[j]) == (float(upstream[j]) if passes else 0.0), (x, q, mu, k)
        qbar = mu if abs(q - mu) <= k else q
        assert float(out.detach()[j]) == qbar * alpha


def test_masked_ste_paper_range_floor():
    """Eq. masked_ste: q_min <= a/alpha < q_max + 1, and nothing inside the dead zone."""
    space = CodeSpace(8, "sym")  # levels -4..3
    a = torch.tensor([-4.01, -4.0, -1.5, -0.5, 0.0, 0.99, 2.0, 3.99, 4.0], requires_grad=True)
    MaskedSTE.apply(a, 1.0, space, 0, 1, "floor").sum().backward()
    assert a.grad.tolist() == [0, 1, 1, 0, 0, 0, 1, 1, 0]


def test_activation_quantizer_module():
    aq = ActivationQuantizer(0.5, T=16, family="sym", k=1)
    assert aq.mask == Mask.at_zero(CodeSpace(16, "sym"), 1)
    a = torch.linspace(-5, 5, 41, dtype=torch.float32, requires_grad=True)
    out = aq(a)
    assert out.dtype == torch.float32
    codes = aq.codes(a.detach())
    assert torch.equal(aq.projected_codes(a.detach()), aq.mask.project(codes))
    assert torch.equal(out.detach(), aq.mask.project(codes).float() * 0.5)
    out.sum().backward()
    expect = ((a.detach() / 0.5 >= -8) & (a.detach() / 0.5 < 8) & ((codes).abs() > 1)).float()
    assert torch.equal(a.grad, expect)
    aq.set_mask(8, 2)
    assert (aq.mask.i_max, aq.mask.k, aq.mask.mu) == (8, 2, -1)
    assert "alpha=0.5, T=16, family='sym', rounding='floor', i_max=8, k=2" in repr(aq)


def test_activation_quantizer_bad_input():
    with pytest.raises(ValueError, match=exact("alpha must be positive and finite, not -1.0")):
        ActivationQuantizer(-1.0, T=16)
    with pytest.raises(ValueError, match=exact("k must be in 0..7 for T=8, not 8")):
        ActivationQuantizer(1.0, T=8, k=8)
    with pytest.raises(ValueError, match=exact("rounding must be one of ('floor', 'round'), "
                                               "not 'nearest'")):
        ActivationQuantizer(1.0, T=8, rounding="nearest")
    with pytest.raises(TypeError, match=exact("a must be a floating-point torch.Tensor")):
        ActivationQuantizer(1.0, T=8)(torch.tensor([1, 2]))
