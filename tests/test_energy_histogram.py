"""Histogram -> spike rates and bit-serial bit-events, on hand-computable histograms."""

import pytest

import energy_model as em
from golden_models.codespace import CodeSpace

SYM4 = CodeSpace(4, "sym")  # codes -2..1
SYM16 = CodeSpace(16, "sym")  # codes -8..7
ASYM16 = CodeSpace(16, "asym")  # codes 0..15


def h(space, counts):
    return em.Histogram(space, counts)


SMALL = h(SYM4, {-2: 1, -1: 2, 0: 4, 1: 3})  # 10 values


def test_rates_of_a_small_histogram():
    # standard TTFS silences the lowest level (-2): 9 of 10 values fire, over T=4 steps
    assert em.events_per_value(SMALL, em.histogram.ttfs_mask(SYM4)) == 0.9
    assert em.ttfs_rate(SMALL) == 0.9 / 4
    assert em.mttfs_rate(SMALL, 0) == 0.6 / 4  # silence on 0
    assert em.mttfs_rate(SMALL, 1) == 0.1 / 4  # dead zone {-1, 0, 1}


@pytest.mark.parametrize(
    "hist, k, convention, expected",
    [
        # 2-bit two's complement: -2 = 10, -1 = 11, 1 = 01 -> (1*1 + 2*2 + 3*1) / 10
        (SMALL, 0, "signed", 0.8),
        # magnitudes 2 = 10, 1, 1 -> (1 + 2 + 3) / 10
        (SMALL, 0, "magnitude", 0.6),
        # k=1 leaves only -2: one bit either way
        (SMALL, 1, "signed", 0.1),
        (SMALL, 1, "magnitude", 0.1),
        # 4-bit: -1 = 1111, 3 = 0011, -8 = 1000, 0 skipped -> 7 / 4
        (h(SYM16, {-1: 1, 3: 1, -8: 1, 0: 1}), 0, "signed", 1.75),
        # |-1| = 1, 3 = 11, |-8| = 1000 -> 4 / 4
        (h(SYM16, {-1: 1, 3: 1, -8: 1, 0: 1}), 0, "magnitude", 1.0),
        # asymmetric codes are non-negative: both readings agree (15 = 1111, 5 = 101)
        (h(ASYM16, {0: 5, 15: 1, 5: 2}), 0, "signed", 8 / 8),
        (h(ASYM16, {0: 5, 15: 1, 5: 2}), 0, "magnitude", 8 / 8),
        # k=2 on asym masks 0..2 (and nothing below 0)
        (h(ASYM16, {0: 1, 1: 1, 2: 1, 3: 1}), 2, "signed", 2 / 4),
    ],
)
def test_bit_events_per_value(hist, k, convention, expected):
    assert em.bit_events_per_value(hist, k, convention=convention) == expected


def test_signed_counts_more_than_magnitude_for_negative_mass():
    hist = h(SYM16, {-1: 10, 0: 20, 1: 10})
    assert em.bit_events_per_value(hist, 0, convention="signed") == (10 * 4 + 10 * 1) / 40
    assert em.bit_events_per_value(hist, 0, convention="magnitude") == 20 / 40


def test_bit_events_follow_mu():
    # centred on mu = 1: d spans -9..6, which needs 5-bit two's complement; the value 1 is
    # silent, 0 is d=-1 (11111), 3 is d=2 (00010)
    hist = h(SYM16, {0: 1, 1: 1, 3: 1})
    assert em.bit_events_per_value(hist, 0, mu=1, convention="signed") == (5 + 1) / 3
    assert em.bit_events_per_value(hist, 0, mu=1, convention="magnitude") == (1 + 1) / 3


def test_histogram_errors():
    with pytest.raises(
        ValueError,
        match=r"^histogram code 2 is outside the levels -2\.\.1 of "
        r"T=4 sym$",
    ):
        h(SYM4, {2: 1})
    with pytest.raises(ValueError, match=r"^histogram is empty \(all counts are 0\)$"):
        h(SYM4, {0: 0})
    with pytest.raises(ValueError, match=r"^histogram count of code 0 must be >= 0, not -1$"):
        h(SYM4, {0: -1})
    with pytest.raises(
        ValueError,
        match=r"^bit convention must be one of \('signed', "
        r"'magnitude'\), not 'gray'$",
    ):
        em.bit_events_per_value(SMALL, 0, convention="gray")


def test_rates_from_histograms_feed_the_model():
    hists = {p: h(CodeSpace(16, em.rates.family_of(p)), {0: 3, 1: 1}) for p in em.POSITIONS}
    rates = em.Rates.from_histograms(hists, ks=(0, 1))
    # value 0 is silent at k=0; value 1 fires once: s = 1/4 per value, rate 1/64 per step
    assert rates.mttfs[0].at("FFN-expand input") == 0.25 / 16
    assert rates.mttfs[1].at("FFN-expand input") == 0.0
    assert rates.bit_serial[0].at("Q-proj. input") == 0.25
    report = em.compute("bert-base", rates)
    row = report.row("Matterhorn M-TTFS (k=0)")
    assert row.events_per_delivery == pytest.approx(0.25)
    assert row.energy.move.value == pytest.approx(
        0.25 * em.block_totals(em.preset("bert-base"))["N8"] * 3e-12, rel=1e-12
    )
