"""Calibration (Eqs. mttfs_histogram, mttfs_imax), Proposition 1, spike statistics, schema."""

import json
import re

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from golden_models import (
    CodeSpace,
    HistogramAccumulator,
    Mask,
    PositionStats,
    event_histogram,
    events_per_activation,
    read_stats,
    select_i_max,
    spike_rate,
    transmitted_count,
    transmitted_events,
    ttfs_mask,
    write_stats,
)
from golden_models.statistics import events_per_activation_of_codes, stats_document


def exact(msg: str) -> str:
    return f"^{re.escape(msg)}$"


def ref_histogram(q: torch.Tensor, space: CodeSpace) -> list[int]:
    """Reference: count each event time tau = c - q one by one."""
    counts = [0] * space.T
    for v in q.reshape(-1).tolist():
        counts[space.c - v] += 1
    return counts


@st.composite
def codes(draw, max_T=32):
    T = draw(st.sampled_from([t for t in (2, 4, 8, 16, 32, 256) if t <= max_T]))
    space = CodeSpace(T, draw(st.sampled_from(["sym", "asym"])))
    n = draw(st.integers(1, 300))
    g = torch.Generator().manual_seed(draw(st.integers(0, 2**31)))
    # peaked at a random code so every argmax position occurs
    centre = draw(st.integers(space.q_min, space.q_max))
    q = (torch.randn(n, generator=g) * draw(st.floats(0.3, T / 2)) + centre).round()
    q = q.clamp(space.q_min, space.q_max).to(torch.int64)
    return q, space


@settings(max_examples=100, deadline=None)
@given(codes(max_T=256), st.sampled_from([torch.int8, torch.int16, torch.int64]),
       st.integers(1, 64))
def test_histogram_matches_reference_any_dtype_and_chunk(case, dtype, chunk):
    q, space = case
    if dtype == torch.int8 and (space.q_max > 127 or space.q_min < -128):
        dtype = torch.int16
    h = event_histogram(q.to(dtype), space, chunk=chunk)
    assert h.dtype == torch.int64
    assert h.tolist() == ref_histogram(q, space)


def test_histogram_accumulates_batches():
    space = CodeSpace(16, "asym")
    g = torch.Generator().manual_seed(0)
    batches = [torch.randint(0, 16, (n,), generator=g) for n in (5, 100, 1)]
    acc = HistogramAccumulator(space, chunk=7)
    for b in batches:
        acc.update(b)
    assert acc.counts.tolist() == ref_histogram(torch.cat(batches), space)
    assert acc.total == 106


def test_histogram_rejects_out_of_range_int8():
    space = CodeSpace(16, "sym")
    with pytest.raises(ValueError, match=exact("q holds 8, outside the levels -8..7 of T=16 sym")):
        event_histogram(torch.tensor([0, 8], dtype=torch.int8), space)
    with pytest.raises(ValueError, match=exact(
            "q holds 127, outside the levels -8..7 of T=16 sym"
    )):
        event_histogram(torch.tensor([127], dtype=torch.int8), space)  # wraps in int8
    with pytest.raises(TypeError, match=exact(
            "q must hold integer codes, not dtype torch.float32"
    )):
        event_histogram(torch.zeros(3), space)
    with pytest.raises(ValueError, match=exact("chunk must be at least 1, not 0")):
        event_histogram(torch.zeros(3, dtype=torch.int8), space, chunk=0)


@settings(max_examples=200, deadline=None)
@given(codes())
def test_proposition_1(case):
    """Among single-time silences, I_max minimises transmitted events; s_tx = 1 - p_{I_max}."""
    q, space = case
    counts = event_histogram(q, space)
    i_max = select_i_max(counts, space)
    assert int(counts[i_max]) == int(counts.max())
    best = transmitted_count(q, Mask(space, i_max, 0))
    for r in range(space.T):
        assert transmitted_count(q, Mask(space, r, 0)) >= best
    assert events_per_activation(counts, Mask(space, i_max, 0)) == pytest.approx(
        1 - int(counts[i_max]) / q.numel(), abs=1e-15)


@settings(max_examples=200, deadline=None)
@given(codes(), st.data())
def test_s_tx_formula_and_monotone_in_k(case, data):
    """s_tx = 1 - sum_{t in Omega_k} p_t; growing k never increases transmitted events."""
    q, space = case
    i_max = data.draw(st.integers(0, space.T - 1))
    counts = event_histogram(q, space)
    p = counts.double() / q.numel()
    previous = None
    for k in range(space.T):
        mask = Mask(space, i_max, k)
        direct = transmitted_count(q, mask)
        assert transmitted_events(counts, mask) == direct
        s_tx = events_per_activation(counts, mask)
        assert s_tx == pytest.approx(1 - float(p[list(mask.silent_times)].sum()), abs=1e-12)
        assert s_tx == pytest.approx(events_per_activation_of_codes(q, mask), abs=1e-15)
        assert spike_rate(s_tx, space.T) * space.T == pytest.approx(s_tx)
        if previous is not None:
            assert direct <= previous
        previous = direct


def test_ttfs_is_lowest_level_silent():
    space = CodeSpace(8, "sym")  # levels -4..3, lowest -4 at t = 7
    q = torch.tensor([-4, -4, 0, 0, 0, 1])
    counts = event_histogram(q, space)
    assert events_per_activation(counts, ttfs_mask(space)) == 4 / 6
    assert events_per_activation(counts, Mask.at_zero(space)) == 3 / 6


def test_i_max_tie_rule():
    space = CodeSpace(8, "sym")  # c = 3: t = 3 is code 0, t = 4 is code -1
    # exact tie between code 1 (t=2) and code -2 (t=5): closest to zero wins
    assert select_i_max([0, 0, 5, 1, 1, 5, 0, 0], space) == 2
    # exact tie +1 / -1 (t = 2 and t = 4): equal |code| and count -> earlier time
    assert select_i_max([0, 0, 5, 1, 5, 0, 0, 0], space) == 2
    # the paper's near tie: -1 beats 0 by a hair; exact argmax keeps -1
    counts = [0, 0, 10, 100, 101, 10, 0, 0]
    assert select_i_max(counts, space) == 4
    assert select_i_max(counts, space, near_tie=0.02) == 3
    assert select_i_max(counts, space, near_tie=0.005) == 4
    # asym: code 0 is the last time step
    assert select_i_max([1, 0, 0, 0, 0, 0, 0, 9], CodeSpace(8, "asym")) == 7


def test_i_max_bad_input():
    space = CodeSpace(8, "sym")
    with pytest.raises(ValueError, match=exact(
            "counts must have shape (8,) for T=8 sym, not (7,)"
    )):
        select_i_max([1] * 7, space)
    with pytest.raises(ValueError, match=exact(
            "counts are all zero: calibrate on at least one activation")):
        select_i_max([0] * 8, space)
    with pytest.raises(TypeError, match=exact(
            "counts must hold integers, not dtype torch.float32"
    )):
        select_i_max(torch.ones(8), space)
    with pytest.raises(ValueError, match=exact("near_tie must be in [0, 1), not 1.5")):
        select_i_max([1] * 8, space, near_tie=1.5)


def test_position_stats_record(tmp_path):
    space = CodeSpace(16, "asym")
    g = torch.Generator().manual_seed(3)
    q = (torch.randn(1000, generator=g) * 3).clamp(min=0).round().clamp(max=15).to(torch.int8)
    st_ = PositionStats.from_codes("FFN-contract input", q, space)
    d = st_.as_dict()
    assert d["i_max"] == 15 and d["mu"] == 0 and d["activations"] == 1000
    assert d["histogram"] == ref_histogram(q.long(), space)
    assert d["p_q0"] == int((q == 0).sum()) / 1000
    assert [r["k"] for r in d["mttfs"]] == [0, 1, 2, 3, 4]
    for r in d["mttfs"]:
        mask = Mask(space, 15, r["k"])
        assert r["s"] == events_per_activation_of_codes(q.long(), mask)
        assert r["rate"] == r["s"] / 16
        assert r["silent_times"] == list(mask.silent_times)
    assert d["ttfs"]["s"] == pytest.approx(1 - d["p_q0"], abs=1e-15)  # asym: lowest level is 0
    assert PositionStats.from_dict(json.loads(json.dumps(d))) == st_
    path = tmp_path / "stats.json"
    write_stats(path, [st_, st_])
    first = path.read_bytes()
    write_stats(path, [st_, st_])
    assert path.read_bytes() == first  # deterministic
    assert read_stats(path) == [st_, st_]
    doc = json.loads(first)
    assert doc["average"]["mttfs"][1]["s"] == pytest.approx(st_.mttfs(1).s)


def test_position_stats_malformed():
    d = PositionStats.from_codes("x", torch.tensor([0, 1, -1]), CodeSpace(4)).as_dict()
    bad = dict(d)
    del bad["histogram"]
    with pytest.raises(ValueError, match=exact("position record lacks the field 'histogram'")):
        PositionStats.from_dict(bad)
    with pytest.raises(TypeError, match=exact("field 'T' must be int, not '4'")):
        PositionStats.from_dict({**d, "T": "4"})
    with pytest.raises(ValueError, match=exact(
            "field 'histogram' must hold 4 counts >= 0, not [1, 2]")):
        PositionStats.from_dict({**d, "histogram": [1, 2]})
    with pytest.raises(ValueError, match=exact("field 'mttfs[0].s' disagrees with the histogram")):
        PositionStats.from_dict({**d, "mttfs": [{**d["mttfs"][0], "s": 0.5}]})
    with pytest.raises(ValueError, match=exact("positions is empty: nothing to record")):
        stats_document([])
