"""The integer non-linear units of the golden model (docs/integer_contract.md, "Non-linear
units"): each against its float counterpart within its stated bound over its whole input range,
against an unbounded-integer (Python ``int``) transcription of its definition (so an int64
overflow or a wrong shift is caught), and exactly where a table defines it.
"""

import math
from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from golden_models.codespace import CodeSpace
from golden_models.fixed_point import bit_length, fixed_multiplier, isqrt, rshift_round
from golden_models.gelu import (
    GELU_MIN,
    GELU_X_MIN,
    gelu,
    gelu_monotone,
    gelu_table,
    same_codes_as_gelu,
)
from golden_models.int_layernorm import (
    BIAS_FRAC_BITS,
    GAIN_BITS,
    NORM_FRAC_BITS,
    RECIP_BITS,
    ROOT_BITS,
    IntLayerNorm,
    layernorm_reference,
    stream_scale,
)
from golden_models.int_softmax import (
    EXP_BITS,
    PROB_BITS,
    IntSoftmax,
    exp2_table,
    softmax_reference,
)
from golden_models.integer_layer import fire, threshold_table
from golden_models.quantizer import quantize
from golden_models.residual import BIAS_FRAC_BITS as ADD_BIAS_BITS
from golden_models.residual import ResidualAdd, residual_reference

# -- fixed point ---------------------------------------------------------------------------------

INT62 = st.integers(0, 2**62 - 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(INT62, min_size=1, max_size=64))
def test_isqrt_is_the_floor_root(values):
    u = torch.tensor(values, dtype=torch.int64)
    r = isqrt(u)
    assert r.tolist() == [math.isqrt(v) for v in values]


def test_isqrt_edges():
    edges = [0, 1, 2, 3, 4, 2**62 - 1, 2**60, 2**60 - 1]
    edges += [n * n + d for n in (1, 2**15, 2**30, 2**31 - 1) for d in (-1, 0, 1) if n * n + d >= 0]
    assert isqrt(torch.tensor(edges)).tolist() == [math.isqrt(v) for v in edges]
    with pytest.raises(ValueError, match="isqrt needs integers in 0..2\\*\\*62-1"):
        isqrt(torch.tensor([2**62]))
    with pytest.raises(TypeError, match="u must hold integers"):
        isqrt(torch.tensor([4.0]))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 2**63 - 1), min_size=1, max_size=64))
def test_bit_length(values):
    assert bit_length(torch.tensor(values)).tolist() == [v.bit_length() for v in values]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(-(2**61), 2**61), min_size=1, max_size=32), st.integers(0, 62))
def test_rshift_round_rounds_half_up(values, n):
    """Negative values too: the shift is arithmetic (a floor), whatever the width."""
    x = torch.tensor(values)
    want = [math.floor(Fraction(v, 2**n) + Fraction(1, 2)) for v in values]
    assert rshift_round(x, n).tolist() == want
    # a per-element shift gives the same
    assert rshift_round(x, torch.full_like(x, n)).tolist() == want


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**61), 2**61), st.integers(0, 62)), min_size=1,
                max_size=32))
def test_rshift_round_per_element_shifts(pairs):
    x = torch.tensor([v for v, _ in pairs])
    n = torch.tensor([k for _, k in pairs])
    want = [math.floor(Fraction(v, 2**k) + Fraction(1, 2)) for v, k in pairs]
    assert rshift_round(x, n).tolist() == want


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(1e-6, 100.0), min_size=1, max_size=16),
    st.integers(8, 24),
)
def test_fixed_multiplier_error(ratios, bits):
    r = torch.tensor(ratios, dtype=torch.float64)
    m, s = fixed_multiplier(r, bits, max_shift=60)
    assert int(m.max()) < 2**bits
    # the largest ratio keeps bits - 1 significant bits: relative error below 2**-(bits-1)
    top = int(r.argmax())
    assert abs(float(m[top]) / 2**s - ratios[top]) <= ratios[top] * 2.0 ** -(bits - 1)
    assert ((m.to(torch.float64) / 2**s - r).abs() <= 2.0 ** -(s + 1) * (1 + 1e-9)).all()


def test_fixed_multiplier_refuses():
    with pytest.raises(ValueError, match="ratio must be positive and finite"):
        fixed_multiplier(torch.tensor([1.0, 0.0]), 16)
    with pytest.raises(ValueError, match="does not fit a 8-bit multiplier"):
        fixed_multiplier(1000.0, 8)


# -- LayerNorm ---------------------------------------------------------------------------------


def _ln_spec(row: list[int], unit: IntLayerNorm) -> list[int]:
    """docs/integer_contract.md's LayerNorm, transcribed with unbounded Python integers."""
    n = len(row)
    s1, s2 = sum(row), sum(h * h for h in row)
    u = n * s2 - s1 * s1
    k = (62 - u.bit_length()) // 2 if u > 0 else 0
    root = math.isqrt(u << (2 * k)) if u > 0 else 2 ** (ROOT_BITS - 1)
    recip = 2 ** (RECIP_BITS + ROOT_BITS) // root
    g, f, b = unit.gain_shift, NORM_FRAC_BITS, BIAS_FRAC_BITS
    lo, hi = -(2 ** (unit.out_bits - 1)), 2 ** (unit.out_bits - 1) - 1
    out = []
    for h, gain, bias in zip(row, unit.gain.tolist(), unit.bias.tolist(), strict=True):
        sh = ROOT_BITS + RECIP_BITS - f - k
        norm = ((n * h - s1) * recip + 2 ** (sh - 1)) >> sh
        y = (gain * norm + (bias << (g + f - b)) + 2 ** (g + f - 1)) >> (g + f)
        out.append(min(max(y, lo), hi))
    return out


@st.composite
def layernorm_cases(draw):
    n = draw(st.sampled_from([1, 2, 3, 7, 32, 64, 384, 768]))
    in_bits = draw(st.integers(2, IntLayerNorm.max_in_bits(n)))
    out_bits = draw(st.integers(4, 24))
    seed = draw(st.integers(0, 2**32 - 1))
    spread = draw(st.sampled_from(["full", "tiny", "outlier", "constant"]))
    gen = torch.Generator().manual_seed(seed)
    lo, hi = -(2 ** (in_bits - 1)), 2 ** (in_bits - 1) - 1
    rows = 3
    if spread == "full":
        h = torch.randint(lo, hi + 1, (rows, n), generator=gen)
    else:
        centre = torch.randint(lo, hi + 1, (rows, 1), generator=gen)
        h = (centre + torch.randint(-1, 2, (rows, n), generator=gen)).clamp(lo, hi)
        if spread == "outlier":
            h[:, 0] = hi
        if spread == "constant":
            h = centre.expand(rows, n).clone()
    gamma = torch.randn(n, generator=gen, dtype=torch.float64) * draw(st.sampled_from([0.01, 1, 3]))
    beta = torch.randn(n, generator=gen, dtype=torch.float64) * draw(st.sampled_from([0, 0.1, 2]))
    return h, gamma, beta, in_bits, out_bits


@settings(max_examples=150, deadline=None)
@given(layernorm_cases())
def test_layernorm_within_bound_of_float(case):
    h, gamma, beta, in_bits, out_bits = case
    s = stream_scale(gamma, beta, out_bits)
    try:
        unit = IntLayerNorm.from_float(gamma, beta, s, in_bits, out_bits)
    except ValueError as e:
        # refused only when a gain cannot be held even at shift 0 (e.g. one channel: the
        # stream's scale is |beta|'s alone, far finer than gamma)
        assert "does not fit" in str(e)
        assert float((gamma / s).abs().max()) >= 2 ** (GAIN_BITS - 1) - 0.5
        return
    r = unit(h)
    assert r.dtype == torch.int64
    lo, hi = -(2 ** (out_bits - 1)), 2 ** (out_bits - 1) - 1
    ref = layernorm_reference(h, gamma, beta, s).clamp(lo, hi)
    assert float((r - ref).abs().max()) <= unit.error_bound()
    assert [_ln_spec(row, unit) for row in h.tolist()] == r.tolist()


@settings(max_examples=150, deadline=None)
@given(layernorm_cases())
def test_twin_layernorm_is_the_unit(case):
    """The fine-tuning twin's LayerNorm (folded, float root corrected) gives the unit's
    integers at every width, spread and row length."""
    from networks.finetune import _layernorm

    h, gamma, beta, in_bits, out_bits = case
    s = stream_scale(gamma, beta, out_bits)
    try:
        unit = IntLayerNorm.from_float(gamma, beta, s, in_bits, out_bits)
    except ValueError:
        return
    lo, hi = -(2 ** (in_bits - 1)), 2 ** (in_bits - 1) - 1
    extremes = torch.stack([torch.full_like(h[0], lo), torch.full_like(h[0], hi), h[0].clone()])
    extremes[2, ::2] = lo
    extremes[2, 1::2] = hi
    for rows in (h, extremes):
        assert torch.equal(_layernorm(unit, rows), unit(rows))


@settings(max_examples=300, deadline=None)
@given(st.lists(INT62, min_size=1, max_size=64))
def test_twin_isqrt_is_the_floor_root(values):
    from networks.finetune import _isqrt

    squares = [m * m + d for m in (1, 2**15, 2**30, 2**31 - 1) for d in (-1, 0, 1)]
    values = values + [0, 1, 2**62 - 1] + squares
    assert _isqrt(torch.tensor(values)).tolist() == [math.isqrt(v) for v in values]


def test_layernorm_bound_is_tight_enough():
    # the bound is the final rounding plus a few hundredths at MiniLM's widths
    gen = torch.Generator().manual_seed(1)
    gamma, beta = torch.rand(384, generator=gen) + 0.5, torch.randn(384, generator=gen)
    unit = IntLayerNorm.from_float(gamma, beta, stream_scale(gamma, beta, 16), 21, 16)
    assert 0.5 < unit.error_bound() < 0.55


def test_layernorm_stream_never_saturates():
    # stream_scale covers every normalised row: a row with one outlier reaches sqrt(N-1)
    gamma, beta = torch.full((384,), 1.5, dtype=torch.float64), torch.zeros(384)
    s = stream_scale(gamma, beta, 16)
    unit = IntLayerNorm.from_float(gamma, beta, s, 21, 16)
    h = torch.zeros(1, 384, dtype=torch.int64)
    h[0, 0] = 2**20 - 1
    r = unit(h)
    assert int(r[0, 0]) == 2**15 - 1
    assert float(layernorm_reference(h, gamma, beta, s)[0, 0]) <= 2**15


def test_layernorm_refuses_bad_widths_and_rows():
    gamma, beta = torch.ones(384), torch.zeros(384)
    with pytest.raises(ValueError, match="largest valid in_bits is 23"):
        IntLayerNorm.from_float(gamma, beta, 0.01, 24, 16)
    unit = IntLayerNorm.from_float(gamma, beta, 0.01, 21, 16)
    with pytest.raises(ValueError, match="h must fit 21 signed bits"):
        unit(torch.full((1, 384), 2**20))
    with pytest.raises(ValueError, match="h must have rows of 384"):
        unit(torch.zeros(1, 383, dtype=torch.int64))
    with pytest.raises(ValueError, match="does not fit 24 signed bits"):
        IntLayerNorm.from_float(gamma * 1e9, beta, 1e-3, 21, 16)


# -- softmax ------------------------------------------------------------------------------------


def _round_half_up_exp2(f: int, frac_bits: int) -> int:
    """``round(2**E * 2**(-f / 2**Ft))``, decided in exact integers: ``e`` is the rounding of
    ``x`` iff ``(2e - 1)**m <= 2**m * x**m < (2e + 1)**m`` with ``m = 2**Ft``."""
    m = 2**frac_bits
    target = 2 ** (m + EXP_BITS * m - f)  # (2x)**m
    e = math.floor(2.0**EXP_BITS * 2.0 ** (-f / m) + 0.5)
    while (2 * e + 1) ** m <= target:
        e += 1
    while (2 * e - 1) ** m > target:
        e -= 1
    return e


@pytest.mark.parametrize("frac_bits", [1, 3, 6, 8])
def test_exp2_table_is_exact(frac_bits):
    table = exp2_table(frac_bits).tolist()
    assert table == [_round_half_up_exp2(f, frac_bits) for f in range(2**frac_bits)]
    assert table[0] == 2**EXP_BITS
    assert all(a > b for a, b in zip(table[:-1], table[1:], strict=True))


def _softmax_spec(row: list[int], valid: list[bool], unit: IntSoftmax) -> list[int]:
    """docs/integer_contract.md's softmax, transcribed with unbounded Python integers."""
    if not any(valid):
        return [0] * len(row)
    top = max(a for a, v in zip(row, valid, strict=True) if v)
    table = exp2_table(unit.frac_bits).tolist()
    e = []
    for a, v in zip(row, valid, strict=True):
        t = ((top - a) * unit.mult + (2 ** (unit.shift - 1) if unit.shift else 0)) >> unit.shift
        whole, frac = t >> unit.frac_bits, t & (2**unit.frac_bits - 1)
        e.append(table[frac] >> whole if v and whole <= EXP_BITS else 0)
    pd = unit.recip_bits
    rcp = 2**pd // sum(e)
    sh = pd - PROB_BITS
    return [(x * rcp + 2 ** (sh - 1)) >> sh for x in e]


@st.composite
def softmax_cases(draw):
    length = draw(st.sampled_from([1, 2, 5, 17, 64, 128, 512]))
    score_bits = draw(st.integers(4, 16))
    frac_bits = draw(st.integers(1, 10))
    # real scores from almost flat rows to one-hot ones; the multiplier must fit 16 bits
    scale = 2.0 ** draw(st.floats(-12, 6)) / 2 ** (score_bits - 1) * 64
    scale = min(scale, 2.0 ** (14 - frac_bits))
    seed = draw(st.integers(0, 2**32 - 1))
    gen = torch.Generator().manual_seed(seed)
    lo, hi = -(2 ** (score_bits - 1)), 2 ** (score_bits - 1) - 1
    scores = torch.randint(lo, hi + 1, (4, length), generator=gen)
    valid = torch.rand(4, length, generator=gen) < draw(st.sampled_from([0.2, 0.9, 1.0]))
    valid[:, draw(st.integers(0, length - 1))] = True
    valid[3] = False  # a row without a valid key
    return scores, valid, scale, score_bits, frac_bits


@settings(max_examples=150, deadline=None)
@given(softmax_cases())
def test_softmax_within_bound_of_float(case):
    scores, valid, scale, score_bits, frac_bits = case
    unit = IntSoftmax.from_scale(scale, 512, score_bits, frac_bits)
    u = unit(scores, valid)
    p = softmax_reference(scores, valid, scale)
    err = (u.to(torch.float64) * 2.0**-PROB_BITS - p).abs()
    assert (err <= unit.error_bound(scores.shape[-1], p)).all()
    assert (u[~valid] == 0).all()
    rows = zip(scores.tolist(), valid.tolist(), strict=True)
    assert [_softmax_spec(r, v, unit) for r, v in rows] == u.tolist()


@settings(max_examples=60, deadline=None)
@given(softmax_cases())
def test_softmax_exponentials_decay_from_the_rows_maximum(case):
    # e = 2**E at a row's largest valid score, never more, non-increasing as a score falls
    # below it, zero for an invalid key: what the unit sums, and what its probabilities scale
    scores, valid, scale, score_bits, frac_bits = case
    unit = IntSoftmax.from_scale(scale, 512, score_bits, frac_bits)
    e = unit.exponentials(scores, valid)
    assert (e[~valid] == 0).all()
    for row, ok, ex in zip(scores.tolist(), valid.tolist(), e.tolist(), strict=True):
        kept = sorted((a, x) for a, v, x in zip(row, ok, ex, strict=True) if v)
        if kept:
            assert kept[-1][1] == 2**EXP_BITS
            pairs = zip(kept, kept[1:], strict=False)
            assert all(x0 <= x1 <= 2**EXP_BITS for (_, x0), (_, x1) in pairs)


def test_softmax_is_a_function_of_the_row():
    # no online maximum: the order of the keys and a common offset change nothing
    gen = torch.Generator().manual_seed(3)
    unit = IntSoftmax.from_scale(0.04, 128, 13, 6)
    a = torch.randint(-1792, 1800, (8, 100), generator=gen)
    valid = torch.rand(8, 100, generator=gen) < 0.8
    valid[:, 0] = True
    u = unit(a, valid)
    perm = torch.randperm(100, generator=gen)
    assert torch.equal(unit(a[:, perm], valid[:, perm]), u[:, perm])
    assert torch.equal(unit(a + 200, valid), u)


def test_softmax_typical_error_is_small():
    # MiniLM-like rows (scale 0.05, 13-bit scores, 2**6 table): well inside a 4-bit code step
    gen = torch.Generator().manual_seed(4)
    unit = IntSoftmax.from_scale(0.05, 512, 13, 6)
    a = torch.randint(-400, 400, (64, 40), generator=gen)
    p = softmax_reference(a, torch.ones_like(a, dtype=torch.bool), 0.05)
    assert float((unit(a) * 2.0**-PROB_BITS - p).abs().max()) < 2e-3


def test_softmax_refuses_bad_rows():
    unit = IntSoftmax.from_scale(0.05, 128, 13, 6)
    with pytest.raises(ValueError, match="row length 129 exceeds the unit's row_max=128"):
        unit(torch.zeros(1, 129, dtype=torch.int64))
    with pytest.raises(ValueError, match="scores must fit 13 signed bits"):
        unit(torch.full((1, 4), 4096))
    with pytest.raises(TypeError, match="valid must be a bool tensor"):
        unit(torch.zeros(1, 4, dtype=torch.int64), torch.ones(1, 4))
    with pytest.raises(ValueError, match="scale must be positive and finite"):
        IntSoftmax.from_scale(0.0, 128, 13)


# -- residual add -----------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(
    st.integers(4, 24),
    st.integers(0, 8),
    st.integers(1, 2**20),
    st.floats(1e-4, 1e2),
    st.integers(0, 2**32 - 1),
)
def test_residual_add_within_bound_of_float(stream_bits, guard, acc, s, seed):
    gen = torch.Generator().manual_seed(seed)
    n = 16
    lo, hi = -(2 ** (stream_bits - 1)), 2 ** (stream_bits - 1) - 1
    ratio = min(4 * 2**stream_bits / acc, 2**15)  # the multipliers fit 24 bits at S >= 8
    scale = (torch.rand(n, generator=gen, dtype=torch.float64) * ratio + 1e-9) * s
    bias = torch.randn(n, generator=gen, dtype=torch.float64) * s * 2**stream_bits / 8
    unit = ResidualAdd.from_float(scale, bias, s, stream_bits, stream_bits + guard, acc)
    r = torch.randint(lo, hi + 1, (5, n), generator=gen)
    v = torch.randint(-acc, acc + 1, (5, n), generator=gen)
    h = unit(r, v)
    top = 2 ** (stream_bits + guard - 1)
    ref = residual_reference(r, v, scale, bias, s).clamp(-top, top - 1)
    assert ((h - ref).abs() <= unit.error_bound(v)).all()
    sh = unit.shift

    def spec(ri: int, vi: int, m: int, b: int) -> int:
        add = (m * vi + (b << (sh - ADD_BIAS_BITS)) + 2 ** (sh - 1)) >> sh
        return min(max(ri + add, -top), top - 1)

    consts = list(zip(unit.mult.tolist(), unit.bias.tolist(), strict=True))
    want = [
        [spec(ri, vi, m, b) for ri, vi, (m, b) in zip(rr, vv, consts, strict=True)]
        for rr, vv in zip(r.tolist(), v.tolist(), strict=True)
    ]
    assert h.tolist() == want


@settings(max_examples=100, deadline=None)
@given(
    st.integers(4, 24),
    st.integers(0, 8),
    st.integers(1, 2**20),
    st.floats(1e-4, 1e2),
    st.integers(0, 2**32 - 1),
)
def test_twin_residual_add_is_the_unit(stream_bits, guard, acc, s, seed):
    """The fine-tuning twin's residual add (the rounding folded into the bias) gives the unit's
    integers, the extremes of the stream and of the sums included."""
    from networks.finetune import _residual_add

    gen = torch.Generator().manual_seed(seed)
    n = 16
    lo, hi = -(2 ** (stream_bits - 1)), 2 ** (stream_bits - 1) - 1
    ratio = min(4 * 2**stream_bits / acc, 2**15)
    scale = (torch.rand(n, generator=gen, dtype=torch.float64) * ratio + 1e-9) * s
    bias = torch.randn(n, generator=gen, dtype=torch.float64) * s * 2**stream_bits / 8
    unit = ResidualAdd.from_float(scale, bias, s, stream_bits, stream_bits + guard, acc)
    r = torch.randint(lo, hi + 1, (5, n), generator=gen)
    v = torch.randint(-acc, acc + 1, (5, n), generator=gen)
    r[0], r[1], v[0], v[1], v[2] = lo, hi, -acc, acc, 0
    assert torch.equal(_residual_add(unit, r, v), unit(r, v))


def test_residual_add_refuses():
    unit = ResidualAdd.from_float(torch.ones(4) * 1e-3, torch.zeros(4), 0.01, 16, 21, 1000)
    with pytest.raises(ValueError, match="v must lie in -1000..1000"):
        unit(torch.zeros(1, 4, dtype=torch.int64), torch.full((1, 4), 1001))
    with pytest.raises(ValueError, match="r must fit 16 signed bits"):
        unit(torch.full((1, 4), 2**15), torch.zeros(1, 4, dtype=torch.int64))
    with pytest.raises(ValueError, match="sum_bits must be in 16..40"):
        ResidualAdd.from_float(torch.ones(4), torch.zeros(4), 0.01, 16, 12, 1000)


# -- GELU -------------------------------------------------------------------------------------


def test_gelu_minimum():
    x = torch.linspace(-6, 3, 200001, dtype=torch.float64)
    y = gelu(x)
    assert abs(float(y.min()) - GELU_MIN) < 1e-8
    assert abs(float(x[y.argmin()]) - GELU_X_MIN) < 1e-4
    assert float(gelu(torch.tensor(GELU_X_MIN, dtype=torch.float64))) == pytest.approx(GELU_MIN)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e4, 1e4), min_size=2, max_size=64))
def test_gelu_monotone_is_non_decreasing(xs):
    x = torch.tensor(sorted(xs), dtype=torch.float64)
    y = gelu_monotone(x)
    assert (y[1:] >= y[:-1]).all()
    keep = x >= GELU_X_MIN
    assert torch.equal(y[keep], gelu(x)[keep])
    assert (y >= GELU_MIN).all()


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.floats(-50, 50), min_size=1, max_size=64),
    st.floats(1e-3, 10),
    st.sampled_from([4, 16, 256]),
)
def test_monotone_gelu_costs_nothing_on_an_asymmetric_space(xs, alpha, T):
    x = torch.tensor(xs, dtype=torch.float64)
    asym = CodeSpace(T, "asym")
    assert same_codes_as_gelu(asym) and not same_codes_as_gelu(CodeSpace(T, "sym"))
    assert torch.equal(
        quantize(gelu(x), alpha, asym, "round"), quantize(gelu_monotone(x), alpha, asym, "round")
    )


def test_monotone_gelu_differs_on_a_symmetric_space():
    # the dip reaches code -1 at a fine scale: the clamp keeps the tail there
    x = torch.tensor([-4.0, -0.75], dtype=torch.float64)
    sym = CodeSpace(16, "sym")
    assert quantize(gelu(x), 0.1, sym, "round").tolist() == [0, -2]
    assert quantize(gelu_monotone(x), 0.1, sym, "round").tolist() == [-2, -2]


@settings(max_examples=8, deadline=None)
@given(
    st.integers(0, 2**32 - 1),
    st.sampled_from(["asym", "sym"]),
    st.sampled_from(["round", "floor"]),
)
def test_gelu_table_walk_is_exact_over_the_whole_range(seed, family, rounding):
    gen = torch.Generator().manual_seed(seed)
    n, bound = 6, 3000
    scale = torch.rand(n, generator=gen, dtype=torch.float64) * 4e-3 + 1e-5
    bias = torch.randn(n, generator=gen, dtype=torch.float64)
    space = CodeSpace(16, family)
    alpha = float(torch.rand(1, generator=gen)) * 0.5 + 0.01
    theta = gelu_table(scale, bias, alpha, space, rounding, (-bound, bound))
    v = torch.arange(-bound, bound + 1)[:, None]
    walked = space.c - fire(v, theta, space.T)
    want = quantize(gelu_monotone(bias + scale * v), alpha, space, rounding)
    assert torch.equal(walked, want)
    if family == "asym":  # and the plain GELU's codes too
        assert torch.equal(walked, quantize(gelu(bias + scale * v), alpha, space, rounding))


def test_a_walk_cannot_realise_the_plain_gelu_on_a_symmetric_space():
    # why the monotone variant: the dip's codes are not an up-set of V
    space = CodeSpace(16, "sym")
    v = torch.arange(-4000, 4001)
    codes = quantize(gelu(1e-3 * v.to(torch.float64)), 0.05, space, "round")
    assert bool((codes[1:] < codes[:-1]).any())


def test_threshold_table_activation_needs_a_range():
    with pytest.raises(ValueError, match="needs v_range"):
        threshold_table(
            torch.ones(1), torch.zeros(1), 0.1, CodeSpace(16, "asym"), "round",
            activation=gelu_monotone,
        )
