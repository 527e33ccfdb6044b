"""Encoder in the Amaranth simulator against golden_models.encode_events."""

from __future__ import annotations

import gc
import random

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from golden_models import CodeSpace, Mask, encode_events
from rtl_gen.encoder import Encoder, simulate_encoder
from rtl_gen.layouts import code_layout
from rtl_gen.params import RTLConfig

GRID = sorted({(T, k) for T in (2, 4, 16, 64) for k in (0, 1, T - 1)})


def ref_encode(cfg: RTLConfig, q: list[int]):
    mask = Mask(CodeSpace(cfg.T, cfg.family), cfg.i_max_in, cfg.k)
    index, time = encode_events(torch.tensor(q, dtype=torch.int64), mask)
    events = list(zip(index.tolist(), time.tolist(), strict=True))
    return events, {"events_out": len(events), "events_suppressed": len(q) - len(events)}


def check_encoder(cfg: RTLConfig, vectors, **kw):
    results = simulate_encoder(cfg, vectors, **kw)
    for q, (events, counters, _) in zip(vectors, results, strict=True):
        assert (events, counters) == ref_encode(cfg, q)
    return results


@pytest.mark.parametrize("family", ["sym", "asym"])
@pytest.mark.parametrize(("T", "k"), GRID)
def test_encoder_matches_golden(T, k, family):
    rng = random.Random(T * 100 + k)
    space = CodeSpace(T, family)
    cfg = RTLConfig(T=T, k=k, family=family, n_in=9, i_max_in=rng.randrange(T))
    vectors = [[rng.randint(space.q_min, space.q_max) for _ in range(cfg.n_in)] for _ in range(3)]
    # extremes: every code the same (one step holds every event, or all silent)
    vectors += [[space.q_min] * cfg.n_in, [space.c - cfg.i_max_in] * cfg.n_in]
    check_encoder(cfg, vectors, o_ready=0.6, seed=T + k)


@settings(max_examples=10, deadline=None)
@given(T=st.sampled_from([2, 8, 32]), family=st.sampled_from(["sym", "asym"]), data=st.data())
def test_encoder_random_configs(T, family, data):
    n = data.draw(st.integers(1, 12))
    cfg = RTLConfig(T=T, k=data.draw(st.integers(0, T - 1)), family=family, n_in=n,
                    i_max_in=data.draw(st.integers(0, T - 1)))
    space = cfg.space
    codes = st.lists(st.integers(space.q_min, space.q_max), min_size=n, max_size=n)
    vectors = data.draw(st.lists(codes, min_size=1, max_size=3))
    check_encoder(cfg, vectors, o_ready=data.draw(st.sampled_from([0.4, 1.0])), seed=2)


def test_encoder_step_cost():
    """A step costs max(1, events in it) clocks: T + events + the marker, at full rate."""
    cfg = RTLConfig(T=16, k=0, family="asym", n_in=8, i_max_in=15)
    q = [3, 3, 9, 0, 15, 15, 1, 3]
    (events, _, clocks), = check_encoder(cfg, [q])
    steps_with_events = len({t for _, t in events})
    assert clocks == cfg.T + len(events) - steps_with_events + 1


def test_code_layout_signedness():
    assert code_layout(RTLConfig(T=8, family="sym")).size == 3
    assert code_layout(RTLConfig(T=8, family="sym"))["q"].shape.signed
    assert not code_layout(RTLConfig(T=8, family="asym"))["q"].shape.signed


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_encoder_rejects_non_config():
    with pytest.raises(TypeError, match=r"^config must be an RTLConfig, not 'T=16'$"):
        Encoder("T=16")
    gc.collect()


def test_simulate_encoder_rejects_bad_vector():
    with pytest.raises(ValueError, match=r"^each vector must hold n_in=4 codes, not 3$"):
        simulate_encoder(RTLConfig(n_in=4), [[0, 0, 0]])
