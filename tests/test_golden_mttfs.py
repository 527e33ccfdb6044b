"""Event-time bijection, masks, spike-train encode/decode (dense and sparse), bad input."""

import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from golden_models import (
    CodeSpace,
    Mask,
    code_of_time,
    decode_dense,
    decode_events,
    encode_dense,
    encode_events,
    event_time,
    folded_init,
    transmitted_count,
    ttfs_mask,
)


def exact(msg: str) -> str:
    return f"^{re.escape(msg)}$"


@st.composite
def masked_codes(draw, max_T=32):
    T = draw(st.sampled_from([t for t in (2, 4, 8, 16, 32, 64) if t <= max_T]))
    space = CodeSpace(T, draw(st.sampled_from(["sym", "asym"])))
    mask = Mask(space, draw(st.integers(0, T - 1)), draw(st.integers(0, min(4, T - 1))))
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=3)))
    seed = draw(st.integers(0, 2**31))
    g = torch.Generator().manual_seed(seed)
    q = torch.randint(space.q_min, space.q_max + 1, shape, generator=g)
    return q, mask


def test_event_time_bijection():
    for family in ("sym", "asym"):
        space = CodeSpace(16, family)
        q = torch.arange(space.q_min, space.q_max + 1)
        tau = event_time(q, space)
        assert sorted(tau.tolist()) == list(range(16))
        assert tau.tolist() == [space.c - v for v in q.tolist()]
        assert torch.equal(code_of_time(tau, space), q)
    # the lowest level gets the terminal time T-1, the largest time 0
    assert event_time(torch.tensor([-8, 7]), CodeSpace(16, "sym")).tolist() == [15, 0]


def test_silent_set_clipped_and_centred():
    space = CodeSpace(16, "sym")
    assert Mask(space, 7, 0).silent_times == (7,)
    assert Mask(space, 7, 2).silent_times == (5, 6, 7, 8, 9)
    assert Mask(space, 0, 2).silent_times == (0, 1, 2)
    assert Mask(space, 15, 1).silent_times == (14, 15)
    assert Mask(space, 8, 1).mu == -1
    assert Mask(space, 8, 1).silent_codes == (-2, -1, 0)
    assert ttfs_mask(space).silent_times == (15,)
    assert Mask.at_zero(CodeSpace(16, "asym")).silent_times == (15,)


@settings(max_examples=150, deadline=None)
@given(masked_codes())
def test_dense_round_trip(case):
    q, mask = case
    spikes = encode_dense(q, mask)
    assert spikes.shape == (*q.shape, mask.T)
    assert int(spikes.sum()) == transmitted_count(q, mask)
    assert int(spikes.sum(-1).max()) <= 1
    assert torch.equal(decode_dense(spikes, mask), mask.project(q))


@settings(max_examples=150, deadline=None)
@given(masked_codes())
def test_sparse_round_trip(case):
    q, mask = case
    index, time = encode_events(q, mask)
    assert index.numel() == transmitted_count(q, mask)
    # time order, ascending index within a step (the order the hardware emits them)
    pairs = list(zip(time.tolist(), index.tolist(), strict=True))
    assert pairs == sorted(pairs)
    assert not set(time.tolist()) & set(mask.silent_times)
    assert torch.equal(decode_events(index, time, tuple(q.shape), mask), mask.project(q))
    # sparse and dense agree event for event
    dense = encode_dense(q, mask).reshape(-1, mask.T)
    nz = torch.nonzero(dense).tolist()
    assert sorted(map(tuple, nz)) == sorted(zip(index.tolist(), time.tolist(), strict=True))


@settings(max_examples=100, deadline=None)
@given(masked_codes())
def test_projection_is_the_mask(case):
    """Eq. q_time_deadzone: tau in Omega_k exactly when |q - mu| <= k."""
    q, mask = case
    tau = event_time(q, mask.space)
    silent = ~mask.transmitted(tau)
    assert torch.equal(silent, (q - mask.mu).abs() <= mask.k)
    assert torch.equal(mask.project(q) == mask.mu, silent | (q == mask.mu))


def test_k0_projection_is_identity():
    for family in ("sym", "asym"):
        space = CodeSpace(32, family)
        q = torch.arange(space.q_min, space.q_max + 1)
        for i_max in range(32):
            assert torch.equal(Mask(space, i_max, 0).project(q), q)


def test_centred_values_and_folding():
    """V = B + sum W d equals sum W qbar (offset folding, Eq. folded_bias)."""
    g = torch.Generator().manual_seed(1)
    space = CodeSpace(16, "sym")
    for i_max in range(16):
        mask = Mask(space, i_max, 1)
        w = torch.randint(-2, 2, (12, 5), generator=g)
        q = torch.randint(-8, 8, (12,), generator=g)
        index, time = encode_events(q, mask)
        v = folded_init(w, mask.mu) + (w[index] * mask.centred(time)[:, None]).sum(0)
        assert torch.equal(v, mask.project(q) @ w)


# ---- bad input: exact messages -----------------------------------------------------------

@pytest.mark.parametrize("T", [0, 1, 3, 12, 100, 512, -4])
def test_T_not_power_of_two(T):
    with pytest.raises(ValueError, match=exact(
            f"T must be a power of two 2**n with n in 1..8 (2, 4, 8, ..., 256), not {T}")):
        CodeSpace(T)


def test_T_wrong_type():
    with pytest.raises(TypeError, match=exact("T must be an integer, not 16.0")):
        CodeSpace(16.0)
    with pytest.raises(TypeError, match=exact("T must be an integer, not True")):
        CodeSpace(True)


def test_family_bad():
    with pytest.raises(ValueError, match=exact("family must be one of ('sym', 'asym'), "
                                               "not 'signed'")):
        CodeSpace(16, "signed")


@pytest.mark.parametrize("k", [-1, 16, 99])
def test_k_out_of_range(k):
    with pytest.raises(ValueError, match=exact(f"k must be in 0..15 for T=16, not {k}")):
        Mask(CodeSpace(16), 7, k)


def test_k_wrong_type():
    with pytest.raises(TypeError, match=exact("k must be an integer, not 1.0")):
        Mask(CodeSpace(16), 7, 1.0)


@pytest.mark.parametrize("i_max", [-1, 16])
def test_i_max_out_of_range(i_max):
    with pytest.raises(ValueError, match=exact(f"I_max must be in 0..15 for T=16, not {i_max}")):
        Mask(CodeSpace(16), i_max, 0)


def test_float_codes_rejected():
    mask = Mask.at_zero(CodeSpace(16))
    with pytest.raises(TypeError, match=exact(
            "q must hold integer codes, not dtype torch.float32"
    )):
        encode_events(torch.tensor([0.0, 1.0]), mask)
    with pytest.raises(TypeError, match=exact(
            "q must hold integer codes, not dtype torch.float64"
    )):
        encode_dense(torch.tensor([0.5], dtype=torch.float64), mask)
    with pytest.raises(TypeError, match=exact("q must be a torch.Tensor of integer codes, "
                                              "not list")):
        encode_events([1, 2], mask)


def test_codes_out_of_range():
    mask = Mask.at_zero(CodeSpace(16, "asym"))
    with pytest.raises(ValueError, match=exact(
            "q holds -1, outside the levels 0..15 of T=16 asym"
    )):
        encode_events(torch.tensor([3, -1]), mask)
    with pytest.raises(ValueError, match=exact(
            "q holds 16, outside the levels 0..15 of T=16 asym"
    )):
        encode_dense(torch.tensor([16]), mask)


def test_decode_mismatched_shapes():
    mask = Mask.at_zero(CodeSpace(16))
    with pytest.raises(ValueError, match=exact(
            "index and time must be 1-D and of one shape, not (3,) and (2,)")):
        decode_events(torch.tensor([0, 1, 2]), torch.tensor([0, 1]), (4,), mask)
    with pytest.raises(ValueError, match=exact(
            "spikes must be a tensor with last dimension T=16, not (4, 8)")):
        decode_dense(torch.zeros(4, 8, dtype=torch.uint8), mask)
    with pytest.raises(ValueError, match=exact("event index out of range 0..3")):
        decode_events(torch.tensor([4]), torch.tensor([0]), (4,), mask)
    with pytest.raises(ValueError, match=exact("an event time falls in the silent set (7,)")):
        decode_events(torch.tensor([1]), torch.tensor([7]), (4,), mask)
    with pytest.raises(ValueError, match=exact("time holds 16, outside the times 0..15")):
        decode_events(torch.tensor([1]), torch.tensor([16]), (4,), mask)
