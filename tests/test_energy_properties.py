"""Property tests of the energy model: linearity in the event price, monotonicity in the rate."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import energy_model as em
from golden_models.codespace import CodeSpace

PAPER = em.paper_unit_costs()
DIMS = em.ModelDims("small", 64, 256, 4, 2, batch=2, seq=16)
price = st.floats(0.0, 10.0, allow_nan=False)
percent = st.floats(0.0, 100.0, allow_nan=False)
# a TTFS row at T=16 sends at most one spike per value: rate <= 1/16 = 6.25 %. A rate is a
# count of events over a count of values, so a non-zero one is at least one event in 10**12
# values (far more than any run measures): below that, a rate times an operation count
# underflows to a subnormal or zero joules (r = 5e-324 % gave a Move of exactly 0 J, equal to
# the zero rate's), which says nothing of the model.
ttfs_percent = st.one_of(st.just(0.0), st.floats(1e-10, 6.25, allow_nan=False))


def report_at(x_pJ, rates=None, dims=DIMS):
    return em.compute(
        dims, rates or em.Rates.paper(), PAPER.with_value("E_move_event", x_pJ * 1e-12, "test")
    )


@settings(max_examples=25, deadline=None)
@given(x1=price, x2=price, t=st.floats(0.0, 1.0))
def test_every_row_is_affine_in_the_event_price(x1, x2, t):
    a, b, m = report_at(x1), report_at(x2), report_at(t * x1 + (1 - t) * x2)
    for ra, rb, rm in zip(a.rows, b.rows, m.rows, strict=True):
        expect = t * ra.energy.total.value + (1 - t) * rb.energy.total.value
        assert math.isclose(rm.energy.total.value, expect, rel_tol=1e-9, abs_tol=1e-30)
        # only Move depends on the event price
        assert ra.energy.compute == rb.energy.compute
        assert ra.energy.wread == rb.energy.wread


@settings(max_examples=25, deadline=None)
@given(r1=ttfs_percent, r2=ttfs_percent, k=st.integers(0, 3))
def test_ttfs_rows_are_monotone_in_the_rate(r1, r2, k):
    lo, hi = sorted((r1, r2))
    a = report_at(3.0, em.Rates.uniform(lo, k=k)).row(f"Matterhorn M-TTFS (k={k})").energy
    b = report_at(3.0, em.Rates.uniform(hi, k=k)).row(f"Matterhorn M-TTFS (k={k})").energy
    for comp in ("move", "wread", "compute", "total"):
        assert getattr(a, comp).value <= getattr(b, comp).value * (1 + 1e-12)
    if hi > lo:
        assert a.move.value < b.move.value


@settings(max_examples=25, deadline=None)
@given(r1=percent, r2=percent, T=st.sampled_from([2, 4, 16, 64]))
def test_rate_coded_rows_are_monotone_in_the_rate(r1, r2, T):
    lo, hi = sorted((r1, r2))
    costs = PAPER.with_value("E_ACC6", 0.06e-12, "test").with_value("E_ACC1", 0.04292e-12, "t")

    def total(r):
        base = (em.Baseline("rate", "rate", T, em.Rate.percent(r, "t")),)
        return em.compute(DIMS, em.Rates(baselines=base), costs).row("rate").energy.total.value

    assert total(lo) <= total(hi) * (1 + 1e-12)


@settings(max_examples=25, deadline=None)
@given(
    counts=st.lists(st.integers(0, 50), min_size=16, max_size=16).filter(lambda c: sum(c) > 0),
    family=st.sampled_from(["sym", "asym"]),
)
def test_histogram_rates_shrink_with_the_dead_zone(counts, family):
    space = CodeSpace(16, family)
    hist = em.Histogram(space, dict(enumerate(counts, start=space.q_min)))
    rates = [em.mttfs_rate(hist, k) for k in range(4)]
    assert all(a >= b for a, b in zip(rates, rates[1:], strict=False))
    for convention in em.BIT_CONVENTIONS:
        bits = [em.bit_events_per_value(hist, k, convention=convention) for k in range(4)]
        assert all(a >= b for a, b in zip(bits, bits[1:], strict=False))
    # both readings agree on non-negative codes
    if space.q_min >= 0 or all(c == 0 for c in counts[:8]):
        assert em.bit_events_per_value(hist, 0, convention="signed") == em.bit_events_per_value(
            hist, 0, convention="magnitude"
        )


@settings(max_examples=15, deadline=None)
@given(r=ttfs_percent)
def test_positions_sum_to_the_block(r):
    report = report_at(3.0, em.Rates.uniform(r))
    for row in report.rows:
        for comp in ("move", "wread", "compute"):
            parts = math.fsum(getattr(b, comp).value for b in row.positions.values())
            assert parts == pytest.approx(getattr(row.energy, comp).value, rel=1e-12)
