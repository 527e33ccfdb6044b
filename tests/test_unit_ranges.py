# amaranth: UnusedElaboratable=no
"""The non-linear units' constants against the hardware's registers (docs/rtl_units.md,
"Ranges of the loaded constants").

Over the derivations' whole legal input space (any finite gains, biases and scales, any row and
widths the units accept), :meth:`IntLayerNorm.from_float`, :meth:`ResidualAdd.from_float` and
:meth:`IntSoftmax.from_scale` either refuse in one line, for a reason the test recomputes, or
give constants that fit the units' load-word fields and an accumulator that no input can wrap
at the hardware's 63 bits (``rtl_gen.add_norm.ACC_BITS``). A degenerate layer (all gains zero;
a near-zero residual scale) runs through the generated unit in the Amaranth simulator, bit-exact
at the extreme inputs.
"""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from golden_models.codespace import CodeSpace
from golden_models.int_layernorm import BIAS_FRAC_BITS as NORM_B
from golden_models.int_layernorm import GAIN_BITS, IntLayerNorm
from golden_models.int_softmax import MULT_BITS as SOFTMAX_MULT_BITS
from golden_models.int_softmax import IntSoftmax
from golden_models.residual import BIAS_FRAC_BITS as ADD_B
from golden_models.residual import MULT_BITS, ResidualAdd
from rtl_gen import add_norm
from rtl_gen.add_norm import ACC_BITS
from rtl_gen.layouts import norm_channel_layout, norm_config_layout, pack, softmax_config_layout
from rtl_gen.params import RTLConfig
from rtl_gen.simulation.units import simulate_add_norm

# values of every magnitude a float layer can hold: zero, subnormal-small, tiny, ordinary, huge
magnitude = st.one_of(
    st.just(0.0),
    st.floats(1e-300, 1e-30),
    st.floats(1e-6, 1e3),
    st.floats(1e3, 1e12),
)
signed_value = st.builds(lambda m, neg: -m if neg else m, magnitude, st.booleans())
scale = st.floats(1e-9, 1e4)


def wrap(x: int, bits: int = ACC_BITS) -> int:
    """``x`` in a ``bits``-bit two's complement register."""
    x &= (1 << bits) - 1
    return x - (1 << bits) if x >> (bits - 1) else x


def one_line(exc: Exception) -> str:
    text = str(exc)
    assert text and "\n" not in text
    return text


@st.composite
def norm_rows(draw):
    """A row length and widths the units accept: ``in_bits`` within the variance's radicand."""
    n = draw(st.integers(2, 64) | st.sampled_from([384, 768, 4096]))
    out_bits = draw(st.integers(4, 24))
    top = min(IntLayerNorm.max_in_bits(n), out_bits + 12)
    while top > out_bits and n * 2 ** (top + 25) >= 2**62:
        top -= 1
    return n, draw(st.integers(out_bits, max(out_bits, top))), out_bits


def config_of(n: int, in_bits: int, out_bits: int) -> RTLConfig:
    return RTLConfig(T=16, hidden=n, residual_bits=out_bits, guard_bits=in_bits - out_bits)


def check_layernorm(gamma, beta, s_out, n, in_bits, out_bits):
    gamma = torch.tensor(gamma, dtype=torch.float64)
    beta = torch.tensor(beta, dtype=torch.float64)
    try:
        unit = IntLayerNorm.from_float(gamma, beta, s_out, in_bits, out_bits)
    except ValueError as exc:
        text = one_line(exc)
        gain_too_coarse = torch.round(gamma.abs() / s_out).max() >= 2 ** (GAIN_BITS - 1)
        bias_beyond = torch.round(beta.abs() / s_out * 2**NORM_B).max() >= 2 ** (
            out_bits - 1 + NORM_B)
        assert bool(gain_too_coarse) or bool(bias_beyond), text
        return None
    # the load words hold every constant (pack refuses a value wider than its field)
    cfg = config_of(n, in_bits, out_bits)
    for j in range(n):
        pack(norm_channel_layout(cfg), {"gain": int(unit.gain[j]), "bias": int(unit.bias[j])})
    pack(norm_config_layout(cfg), {"gain_shift": unit.gain_shift})
    # no input wraps the accumulator G*n + (B << (g+f-b)): the extremes of each extreme channel
    lift = unit.gain_shift + 16 - NORM_B
    for j in {int(unit.gain.abs().argmax()), int(unit.bias.abs().argmax())}:
        g, b = int(unit.gain[j]), int(unit.bias[j])
        for nn in (-unit.norm_bound, unit.norm_bound):
            exact = g * nn + b * 2**lift
            assert abs(exact) < 2**62
            assert wrap(g * nn + wrap(b << lift)) == exact
    return unit


@settings(max_examples=300, deadline=None)
@given(rows=norm_rows(), data=st.data(), s_out=scale)
def test_layernorm_constants_never_wrap(rows, data, s_out):
    n = rows[0]
    gamma = data.draw(st.lists(signed_value, min_size=n, max_size=n) | st.just([0.0] * n))
    beta = data.draw(st.lists(signed_value, min_size=n, max_size=n))
    check_layernorm(gamma, beta, s_out, *rows)


def test_a_layernorm_with_every_gain_zero_is_derived():
    # before: g took the cap (40), lifting a 24-bit bias to 72 bits: refused by the golden
    # unit with a message naming no layer (a hardware built from the documented ranges wraps)
    unit = check_layernorm([0.0] * 8, [100.0] * 8, 0.01, 8, 21, 16)
    assert unit.gain_shift < 40 and int(unit.bias[0]) == 2_560_000


def check_add(scale_, bias, s, acc_bound, stream_bits, sum_bits):
    scale_ = torch.tensor(scale_, dtype=torch.float64)
    bias = torch.tensor(bias, dtype=torch.float64)
    try:
        unit = ResidualAdd.from_float(scale_, bias, s, stream_bits, sum_bits, acc_bound)
    except ValueError as exc:
        text = one_line(exc)
        ratio_too_large = bool((scale_ <= 0).any()) or float(
            torch.round(scale_ / s * 2**ADD_B).max()) >= 2**MULT_BITS
        bias_beyond = torch.round(bias.abs() / s * 2**ADD_B).max() >= 2 ** (sum_bits + ADD_B)
        assert ratio_too_large or bool(bias_beyond), text
        return None
    cfg = RTLConfig(T=16, hidden=len(bias), residual_bits=stream_bits,
                    guard_bits=sum_bits - stream_bits)
    for j in range(len(bias)):
        pack(norm_channel_layout(cfg), {"add_mult": int(unit.mult[j]),
                                        "add_bias": int(unit.bias[j])})
    pack(norm_config_layout(cfg), {"add_shift": unit.shift})
    lift = unit.shift - ADD_B
    for j in {int(unit.mult.argmax()), int(unit.bias.abs().argmax())}:
        m, b = int(unit.mult[j]), int(unit.bias[j])
        for v in (-acc_bound, acc_bound):
            exact = v * m + b * 2**lift
            assert abs(exact) < 2**62
            assert wrap(v * m + wrap(b << lift)) == exact
    return unit


@settings(max_examples=300, deadline=None)
@given(n=st.integers(2, 32), stream_bits=st.integers(4, 24), guard=st.integers(0, 12),
       acc_bound=st.integers(1, 2**29 - 1) | st.sampled_from([1, 2, 2**29 - 1]), s=scale,
       data=st.data())
def test_residual_add_constants_never_wrap(n, stream_bits, guard, acc_bound, s, data):
    positive = st.one_of(st.floats(1e-300, 1e-30), st.floats(1e-9, 1e3), st.floats(1e3, 1e12))
    scale_ = data.draw(st.lists(positive, min_size=n, max_size=n))
    bias = data.draw(st.lists(signed_value, min_size=n, max_size=n))
    check_add(scale_, bias, s, acc_bound, stream_bits, stream_bits + guard)


def test_sums_beyond_the_shifts_are_refused():
    # before: sums up to 2**30 left no shift of at least b and were refused as "ratio ... does
    # not fit a 24-bit multiplier", whatever the ratio
    with pytest.raises(ValueError, match=r"^acc_bound must be in 1\.\.536870911, not 1073741824$"):
        ResidualAdd.from_float(torch.ones(2), torch.zeros(2), 1.0, 16, 21, 2**30)


def test_a_residual_add_of_near_zero_scale_is_derived():
    # a near-zero scale asks for the largest shift; a large bias must hold it back
    unit = check_add([1e-12] * 4, [2.5e6] * 4, 0.01, 1, 16, 28)
    assert unit.shift < 61 - MULT_BITS - 1  # held back from the largest shift by the bias


@settings(max_examples=300, deadline=None)
@given(scale_=st.floats(1e-12, 1e6), score_bits=st.integers(2, 24), frac=st.integers(1, 12),
       row=st.integers(1, 4096))
def test_softmax_constants_fit(scale_, score_bits, frac, row):
    try:
        unit = IntSoftmax.from_scale(scale_, row, score_bits, frac)
    except ValueError as exc:
        one_line(exc)
        # refused only when the multiplier cannot hold the ratio at a shift of 0
        assert round(scale_ * math.log2(math.e) * 2**frac) >= 2**SOFTMAX_MULT_BITS
        return
    # the config word of a unit generated for these scores holds M and S, and z * M stays
    # inside its register
    try:
        cfg = RTLConfig(T=4, seq_len=max(row, 2), head_dim=1, score_bits=score_bits,
                        exp_frac_bits=frac)
    except ValueError:  # no unit takes scores this narrow
        cfg = None
    if cfg is not None:
        assert cfg.score_width == score_bits
        pack(softmax_config_layout(cfg), {"mult": unit.mult, "shift": unit.shift})
    assert (2**score_bits - 1) * unit.mult < 2 ** unit.widths()["z_times_mult"]


def test_the_network_names_the_unit_it_refuses():
    """A layer the registers cannot hold is refused naming the block and the unit."""
    from networks.integer import _derived  # noqa: PLC2701 -- the helper under test

    with pytest.raises(ValueError, match=r"^norm_attn: \|beta\| / s_out up to 1e\+06 is beyond "
                                         r"the output stream's range \(below 2\*\*15 = 32768\)$"):
        _derived("norm_attn", lambda: IntLayerNorm.from_float(
            torch.zeros(4), torch.full((4,), 1e4), 0.01, 21, 16))


def test_the_degenerate_layer_runs_bit_exact_in_the_unit():
    """All gains zero and a near-zero residual scale, with the largest biases the fields take:
    the generated add + LayerNorm unit equals the golden units at the extreme rows."""
    from regression.units import NormCase, _walk_table  # noqa: PLC2701

    cfg = RTLConfig(T=16, hidden=6, ffn_dim=16, weight_bits=4)
    n, wb = cfg.hidden, cfg.residual_bits
    s = 0.01
    norm = check_layernorm([0.0] * n, [(2 ** (wb - 1) - 1) * s] * (n // 2)
                           + [-(2 ** (wb - 1) - 1) * s] * (n - n // 2), s, n, cfg.sum_bits, wb)
    bound = cfg.residual_bound
    add = check_add([1e-9] * n, [(2 ** (cfg.sum_bits - 1)) * s] * n, s, bound, wb, cfg.sum_bits)
    lo, hi = -(1 << (wb - 1)), (1 << (wb - 1)) - 1
    space = CodeSpace(cfg.T, "sym")
    thetas = [_walk_table(s, 0.1, space, "round", lo, hi)]
    rows = [([hi] * n, [bound] * n), ([lo] * n, [-bound] * n), ([0] * n, [0] * n)]
    case = NormCase(add, norm, thetas, rows, cfg.T)
    out = simulate_add_norm(cfg, rows, add_norm.load_beats(cfg, add, norm, thetas))
    assert [(r.r, r.codes) for r in out] == case.expected()


def test_generate_takes_the_units_sizes(tmp_path, capsys):
    import json

    from matterhorn.cli import main

    out = tmp_path / "rtl"
    assert main(["generate", "--hidden", "48", "--ffn-dim", "96", "--seq-len", "40",
                 "--head-dim", "4", "--residual-bits", "12", "--guard-bits", "3",
                 "--module", "mttfs_add_norm", "--out", str(out)]) == 0
    params = json.loads((out / "manifest.json").read_text())["parameters"]
    assert {k: params[k] for k in ("hidden", "ffn_dim", "seq_len", "head_dim", "residual_bits",
                                   "guard_bits")} == {"hidden": 48, "ffn_dim": 96, "seq_len": 40,
                                                      "head_dim": 4, "residual_bits": 12,
                                                      "guard_bits": 3}
    capsys.readouterr()
    assert main(["generate", "--residual-bits", "30", "--out", str(tmp_path / "bad")]) == 2
    assert capsys.readouterr().err == (
        "matterhorn generate: error: residual_bits must be in 4..24, not 30\n")
