"""Encoder in the Amaranth simulator against golden_models.encode_events.

Exact equality of every event (address, time, order) and counter; planted mutants of the mask and
of the link SRAM must be caught; the Verilog must not grow with ``n_in`` beyond the link SRAM's
rows.
"""

from __future__ import annotations

import gc
import random

import pytest
import torch
from amaranth.hdl import Module
from amaranth.lib.memory import Memory
from hypothesis import given, settings
from hypothesis import strategies as st

import rtl_gen.encoder as encoder_module
from golden_models import CodeSpace, Mask, encode_events
from rtl_gen.encoder import Encoder, emit_clocks
from rtl_gen.layouts import code_layout
from rtl_gen.params import MAX_N_IN, RTLConfig
from rtl_gen.simulation.tiles import simulate_encoder
from rtl_gen.sram import SRAM
from rtl_gen.verilog_text import to_verilog

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


def skewed_codes(space, n):
    """Codes of length ``n`` drawn from a few levels, so some steps hold long event lists."""
    levels = st.lists(st.integers(space.q_min, space.q_max), min_size=1, max_size=3, unique=True)
    return levels.flatmap(lambda lv: st.lists(st.sampled_from(lv), min_size=n, max_size=n))


@settings(max_examples=12, deadline=None)
@given(T=st.sampled_from([2, 4, 16, 64]), n=st.sampled_from([1, 2, 5, 31, 64, 130]),
       family=st.sampled_from(["sym", "asym"]), data=st.data())
def test_encoder_sizes(T, n, family, data):
    """Exact equality at several (T, k, n_in); at full rate the clocks are :func:`emit_clocks`."""
    cfg = RTLConfig(T=T, k=data.draw(st.integers(0, T - 1)), family=family, n_in=n,
                    i_max_in=data.draw(st.integers(0, T - 1)))
    space = cfg.space
    uniform = st.lists(st.integers(space.q_min, space.q_max), min_size=n, max_size=n)
    vectors = data.draw(st.lists(st.one_of(uniform, skewed_codes(space, n)),
                                 min_size=1, max_size=3))
    o_ready = data.draw(st.sampled_from([0.5, 1.0]))
    results = check_encoder(cfg, vectors, o_ready=o_ready, seed=n)
    if o_ready == 1.0:
        for events, _, clocks in results:
            assert clocks == emit_clocks(cfg.T, [t for _, t in events])


def test_encoder_long_vector():
    """A 1024-code vector with most codes on two levels: lists of hundreds of events."""
    cfg = RTLConfig(T=64, k=2, family="asym", n_in=1024, i_max_in=40)
    rng = random.Random(1024)
    q = [rng.choice([0, 5, rng.randrange(64)]) for _ in range(cfg.n_in)]
    check_encoder(cfg, [q, q[::-1]], o_ready=0.7, seed=3)


def test_encoder_step_cost():
    """A step costs max(1, events in it) clocks: T + events + the marker, at full rate."""
    cfg = RTLConfig(T=16, k=0, family="asym", n_in=8, i_max_in=15)
    q = [3, 3, 9, 0, 15, 15, 1, 3]
    (events, _, clocks), = check_encoder(cfg, [q])
    steps_with_events = len({t for _, t in events})
    assert clocks == cfg.T + len(events) - steps_with_events + 1
    assert clocks == emit_clocks(cfg.T, [t for _, t in events])
    assert emit_clocks(4, []) == 5 and emit_clocks(4, [1, 1, 3]) == 6


# -- mutants: a wrong encoder must fail the exact comparison ------------------------------------

#: Every code once, twice: each step holds two events, and every distance from I_max occurs.
MUTANT_CFG = RTLConfig(T=16, k=1, family="sym", n_in=32, i_max_in=6)
MUTANT_CODES = [MUTANT_CFG.space.q_min + a % 16 for a in range(32)]


def mutant_differs() -> bool:
    (events, counters, _), = simulate_encoder(MUTANT_CFG, [MUTANT_CODES])
    return (events, counters) != ref_encode(MUTANT_CFG, MUTANT_CODES)


def test_mutants_baseline():
    assert not mutant_differs()


@pytest.mark.parametrize("mutant", [
    lambda t, i, k: abs(t - i) > k + 1,  # dead zone one step too wide
    lambda t, i, k: abs(t - i) >= k,  # one step too narrow
    lambda t, i, k: abs(t - (i + 1)) > k,  # centre off by one
])
def test_mask_mutant_is_caught(monkeypatch, mutant):
    monkeypatch.setattr(encoder_module, "transmitted", mutant)
    assert mutant_differs()


class _LostLinks(SRAM):
    """A link SRAM that drops every write: lists longer than one event break (the walk follows
    the zero link forever, so the encoder never finishes)."""

    def elaborate(self, platform):
        m = Module()
        m.submodules.mem = mem = Memory(shape=self.width, depth=self.depth, init=[])
        rd = mem.read_port()
        m.d.comb += [rd.addr.eq(self.bus.addr), rd.en.eq(self.bus.ren),
                     self.bus.rdata.eq(rd.data)]
        return m


def test_link_mutant_is_caught(monkeypatch):
    monkeypatch.setattr(encoder_module, "SRAM", _LostLinks)
    with pytest.raises(RuntimeError, match=r"^still busy after \d+ clocks$"):
        mutant_differs()


# -- size: the logic does not grow with n_in ---------------------------------------------------

def encoder_verilog(**kw) -> str:
    return to_verilog(Encoder(RTLConfig(**kw)), "mttfs_encoder")


@pytest.mark.parametrize("macro", [False, True])
def test_encoder_verilog_size_does_not_grow_with_n_in(macro):
    """At the largest ``n_in`` and ``T`` the encoder's Verilog has as many lines as at
    ``n_in = 16`` (the link SRAM's zero contents are one loop) and is far below 1 MB."""
    big = encoder_verilog(T=64, n_in=MAX_N_IN, sram_macro=macro)
    small = encoder_verilog(T=64, n_in=16, sram_macro=macro)
    assert len(big) < 40_000
    assert big.count("\n") == small.count("\n")


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
