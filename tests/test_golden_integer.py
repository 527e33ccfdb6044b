"""Proposition 2: the integer M-TTFS layer equals the dead-zone QNN, bit for bit.

For random layers, every T in {4, 8, 16, 32}, k in 0..4 (k < T), both families in and out,
random I_max, 1-bit and b-bit weights and both rounding modes:

- the membrane after event-driven accumulation with folded init, ``B + sum W d``, equals the
  dead-zone QNN's integer pre-activation ``sum W qbar`` exactly;
- the threshold (DFT compare) form reproduces the float QNN's output codes exactly.

The float QNN is written out again here from the paper's equations (``ref_qnn_codes``), so a
fault in :class:`golden_models.QNNLinear` is caught as well as one in the integer layer.
"""

import math
import re
import zlib

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from golden_models import (
    CodeSpace,
    IntegerLayer,
    Mask,
    QNNLinear,
    fire,
    folded_init,
    random_codes,
    threshold_table,
)
from golden_models.integer_layer import accumulator_bound, signed_width

TS = (4, 8, 16, 32)
KS = (0, 1, 2, 3, 4)


def exact(msg: str) -> str:
    return f"^{re.escape(msg)}$"


def ref_qnn_codes(layer: QNNLinear, q_in: torch.Tensor) -> torch.Tensor:
    """Eqs. qnn_deadzone, qnn_pre_activation, qnn_code with float64 scales, element by element."""
    m, sp_out = layer.in_mask, layer.out_space
    qbar = torch.where((q_in - m.mu).abs() <= m.k, torch.full_like(q_in, m.mu), q_in)
    v = qbar.to(torch.int64) @ layer.weight.to(torch.int64)
    a = layer.bias + (layer.scale * layer.in_alpha) * v.to(torch.float64)
    x = a / layer.out_alpha
    lvl = torch.floor(x + 0.5) if layer.rounding == "round" else torch.floor(x)
    return lvl.clamp(sp_out.q_min, sp_out.q_max).to(torch.int64)


def make_layer(seed, T, k, fam_in, fam_out, i_max, weight_bits, rounding, n_in=24, n_out=12,
               boundary=False):
    g = torch.Generator().manual_seed(seed)
    space_in, space_out = CodeSpace(T, fam_in), CodeSpace(T, fam_out)
    if weight_bits == 1:
        w = torch.where(torch.rand((n_in, n_out), generator=g) < 0.5, -1, 1)
    else:
        lo, hi = -(2 ** (weight_bits - 1)), 2 ** (weight_bits - 1) - 1
        w = torch.randint(lo, hi + 1, (n_in, n_out), generator=g)
    if boundary:
        # a/alpha_out lands on (or one ulp from) integers: the threshold edge cases
        scale = torch.ones(n_out, dtype=torch.float64)
        bias = torch.zeros(n_out, dtype=torch.float64)
        in_alpha = out_alpha = 0.1
    else:
        scale = 0.2 + torch.rand(n_out, generator=g, dtype=torch.float64)
        bias = torch.randn(n_out, generator=g, dtype=torch.float64) * 2
        in_alpha = 0.05 + float(torch.rand(1, generator=g))
        spread = math.sqrt(n_in) * float(scale.mean()) * in_alpha * T / 4
        out_alpha = spread / T * (0.5 + float(torch.rand(1, generator=g)) * 2)
    return QNNLinear(w, scale, bias, weight_bits=weight_bits,
                     in_mask=Mask(space_in, i_max, k), in_alpha=in_alpha,
                     out_space=space_out, out_alpha=out_alpha, rounding=rounding)


def check_layer(layer: QNNLinear, q_in: torch.Tensor, out_mask: Mask | None = None) -> None:
    integer = layer.to_integer(out_mask)
    # threshold tables are per-neuron non-increasing integer tables
    assert integer.theta.dtype == torch.int64
    assert bool((integer.theta[:, 1:] <= integer.theta[:, :-1]).all())
    assert torch.equal(integer.init, folded_init(integer.weights, layer.in_mask.mu))
    v_qnn = layer.integer_sum(q_in)
    codes_qnn = ref_qnn_codes(layer, q_in)
    assert torch.equal(layer(q_in), codes_qnn)
    bound = accumulator_bound(layer.n_in, layer.weight_bits, layer.in_space)
    for b in range(q_in.shape[0]):
        res = integer.run_codes(q_in[b])
        assert torch.equal(res.v, v_qnn[b]), "accumulation != dead-zone QNN pre-activation"
        assert torch.equal(integer.output_codes(res), codes_qnn[b]), "codes != float QNN"
        assert int(res.v.abs().max()) <= bound
        # every partial sum fits the derived accumulator width (any event order)
        assert signed_width(bound) >= int(res.v.abs().max()).bit_length() + 1


CASES = [(T, k, fi, fo, r) for T in TS for k in KS if k < T
         for fi in ("sym", "asym") for fo in ("sym", "asym") for r in ("floor", "round")]


@pytest.mark.parametrize(("T", "k", "fam_in", "fam_out", "rounding"), CASES)
def test_proposition_2_sweep(T, k, fam_in, fam_out, rounding):
    seed = zlib.crc32(repr((T, k, fam_in, fam_out, rounding)).encode())
    g = torch.Generator().manual_seed(seed)
    i_max = int(torch.randint(0, T, (1,), generator=g))
    wb = (1, 2, 4)[seed % 3]
    layer = make_layer(seed, T, k, fam_in, fam_out, i_max, wb, rounding)
    q = random_codes((12, layer.n_in), layer.in_space, distribution="uniform", generator=g)
    check_layer(layer, q)


@settings(max_examples=60, deadline=None)
@given(
    T=st.sampled_from(TS),
    fam_in=st.sampled_from(["sym", "asym"]),
    fam_out=st.sampled_from(["sym", "asym"]),
    rounding=st.sampled_from(["floor", "round"]),
    weight_bits=st.sampled_from([1, 2, 3, 4, 8]),
    boundary=st.booleans(),
    seed=st.integers(0, 2**31 - 1),
    data=st.data(),
)
def test_proposition_2_random(T, fam_in, fam_out, rounding, weight_bits, boundary, seed, data):
    k = data.draw(st.integers(0, min(4, T - 1)))
    i_max = data.draw(st.integers(0, T - 1))
    n_in, n_out = data.draw(st.integers(1, 40)), data.draw(st.integers(1, 16))
    layer = make_layer(seed, T, k, fam_in, fam_out, i_max, weight_bits, rounding, n_in, n_out,
                       boundary)
    g = torch.Generator().manual_seed(seed + 1)
    dist = data.draw(st.sampled_from(["uniform", "peaked"]))
    q = random_codes((6, n_in), layer.in_space, distribution=dist, generator=g)
    out_mask = Mask(layer.out_space, data.draw(st.integers(0, T - 1)),
                    data.draw(st.integers(0, min(4, T - 1))))
    check_layer(layer, q, out_mask)


def test_threshold_edges_exact():
    """Every integer V near every threshold gives the float code (rounding both ways)."""
    for rounding in ("floor", "round"):
        space = CodeSpace(16, "sym")
        scale = torch.tensor([0.1, 0.3, 1 / 3, 0.7], dtype=torch.float64)
        bias = torch.tensor([0.0, -0.05, 1 / 7, 2.5], dtype=torch.float64)
        theta = threshold_table(scale, bias, 0.1, space, rounding)
        v = torch.arange(-200, 201)
        tau = fire(v[:, None].expand(-1, 4), theta, 16)
        a = bias + scale * v[:, None].to(torch.float64)
        x = a / 0.1
        lvl = torch.floor(x + 0.5) if rounding == "round" else torch.floor(x)
        assert torch.equal(space.c - tau, lvl.clamp(-8, 7).to(torch.int64))


def test_k0_is_lossless_end_to_end():
    """k = 0: the integer chain reproduces the source QNN (no dead zone anywhere) exactly."""
    from golden_models import random_qnn

    for family in ("sym", "asym"):
        chain = random_qnn((20, 16, 12, 8), T=16, k=0, families=("sym", family, "sym", family),
                           seed=4)
        q = chain.random_input(8, seed=9)
        layers = chain.integer_layers()
        for b in range(8):
            codes = q[b]
            src = q[b]
            for layer, qnn in zip(layers, chain.layers, strict=True):
                res = layer.run_codes(codes)
                codes = layer.output_codes(res)
                # the source QNN has no projection at all
                a = qnn.bias + qnn.effective_scale * (src @ qnn.weight.long()).double()
                src = torch.floor(a / qnn.out_alpha).clamp(qnn.out_space.q_min,
                                                            qnn.out_space.q_max).long()
                assert torch.equal(codes, src)


def test_integer_layer_bad_input():
    layer = make_layer(0, 16, 1, "sym", "sym", 7, 1, "floor")
    integer = layer.to_integer()
    with pytest.raises(ValueError, match=exact("q_in must have shape (24,), not (23,)")):
        integer.run_codes(torch.zeros(23, dtype=torch.int64))
    with pytest.raises(ValueError, match=exact(
            "q_in must have last dimension N_in=24, not shape (2, 23)")):
        layer(torch.zeros(2, 23, dtype=torch.int64))
    with pytest.raises(TypeError, match=exact(
            "q_in must hold integer codes, not dtype torch.float32")):
        layer(torch.zeros(2, 24))
    with pytest.raises(ValueError, match=exact("scale must have shape (12,), not (11,)")):
        QNNLinear(layer.weight, torch.ones(11), layer.bias, weight_bits=1,
                  in_mask=layer.in_mask, in_alpha=1.0, out_space=layer.out_space, out_alpha=1.0)
    with pytest.raises(ValueError, match=exact("1-bit weights must be -1 or +1")):
        QNNLinear(torch.zeros(3, 2, dtype=torch.int64), torch.ones(2), torch.zeros(2),
                  weight_bits=1, in_mask=layer.in_mask, in_alpha=1.0,
                  out_space=layer.out_space, out_alpha=1.0)
    with pytest.raises(ValueError, match=exact("theta must be non-increasing in t for every "
                                               "neuron")):
        IntegerLayer(integer.weights, 1, integer.init, integer.theta.flip(1),
                     integer.in_mask, integer.out_mask)
    with pytest.raises(ValueError, match=exact("theta must have shape (12, 15), not (12, 14)")):
        IntegerLayer(integer.weights, 1, integer.init, integer.theta[:, 1:],
                     integer.in_mask, integer.out_mask)
    with pytest.raises(ValueError, match=exact(
            "scale and bias must have one shape, not torch.Size([2]) and torch.Size([3])")):
        threshold_table(torch.ones(2), torch.ones(3), 1.0, CodeSpace(4))
    with pytest.raises(ValueError, match=exact(
            "out_mask must be a Mask over T=16 sym, not Mask(space=CodeSpace(T=8, family='sym'), "
            "i_max=3, k=0)")):
        layer.to_integer(Mask(CodeSpace(8), 3, 0))


# threshold tables against brute force, extreme (degenerate) calibrations included ---------------


def brute_threshold(scale, bias, alpha_out, space, rounding, v_min, v_max):
    """The least V in [v_min, v_max + 1] whose float code reaches c - t, by enumeration."""
    import torch

    from golden_models.quantizer import level_of

    out = []
    for j in range(len(scale)):
        row = []
        for t in range(space.T - 1):
            target = space.c - t
            v = next(
                (v for v in range(v_min, v_max + 1)
                 if float(level_of(torch.tensor((bias[j] + scale[j] * v) / alpha_out,
                                                dtype=torch.float64), rounding)) >= target),
                v_max + 1,
            )
            row.append(v)
        out.append(row)
    return out


@pytest.mark.parametrize("alpha_out", [3.476e-17, 1e-9, 0.11, 7.5, 1e12])
@pytest.mark.parametrize("rounding", ["floor", "round"])
def test_threshold_table_matches_brute_force(alpha_out, rounding):
    import torch

    from golden_models import CodeSpace, threshold_table

    space = CodeSpace(8, "sym")
    scale = torch.tensor([2.9e-17, 0.1487, 0.55, 3.0], dtype=torch.float64)
    bias = torch.tensor([0.17, -0.0484, 0.033, -2.0], dtype=torch.float64)
    got = threshold_table(scale, bias, alpha_out, space, rounding, v_range=(-20, 20))
    assert got.tolist() == brute_threshold(
        scale.tolist(), bias.tolist(), alpha_out, space, rounding, -20, 20
    )


def test_one_neuron_layer_chain_is_exact():
    """A one-neuron-wide layer calibrates to a tiny alpha; its chain still converts exactly."""
    from golden_models.qnn import random_qnn

    for widths, kw in (
        ((6, 3, 1, 5), {"T": 4, "k": 2, "weight_bits": 2, "seed": 1, "distribution": "uniform"}),
        ((8, 6, 1, 2), {"T": 2, "k": 1, "seed": 25}),
    ):
        chain = random_qnn(widths, **kw)
        layers = chain.integer_layers()
        q = chain.random_input(16, seed=3)
        codes = chain(q)
        for r in range(q.shape[0]):
            x = q[r]
            for i, layer in enumerate(layers):
                x = layer.output_codes(layer.run_codes(x))
                assert torch.equal(x, codes[i + 1][r])
