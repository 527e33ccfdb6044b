"""The non-linear units' component of the energy model (energy_model/nonlinear.py): their op
counts per block, their own unit costs, and a component that no row's total includes."""

from __future__ import annotations

import math

import pytest

import energy_model as em
from energy_model.nonlinear import KEYS, nonlinear_ops, nonlinear_units
from energy_model.unit_costs import parse_unit_costs

UNITS = {"unit_costs_pJ": {
    "E_softmax_row": {"value": 20.0, "unit": "pJ/row"},
    "E_softmax_key": {"value": 3.0, "unit": "pJ/key"},
    "E_norm_channel": {"value": 5.0, "unit": "pJ/channel"},
}}


def _costs(section=UNITS):
    return em.paper_unit_costs().overlay(parse_unit_costs(section, origin="units.json",
                                                          complete=False))


def test_counts_per_block_at_bert_base():
    dims = em.preset("bert-base")  # B=64, S=128, C=768, 12 heads
    ops = nonlinear_ops(dims, softmax_bits_per_key=42, norm_bits_per_channel=246)
    rows, keys, channels = 64 * 12 * 128, 64 * 12 * 128 * 128, 2 * 64 * 128 * 768
    assert ops["compute"] == {"E_softmax_row": rows, "E_softmax_key": keys,
                              "E_norm_channel": channels}
    assert ops["wread"] == {"E_weight": keys * 42 + channels * 246}
    assert nonlinear_ops(dims)["wread"] == {}


def test_priced_apart_from_every_row():
    plain = em.compute("bert-base")
    with_units = em.compute("bert-base", unit_costs=_costs(), softmax_bits_per_key=42,
                            norm_bits_per_channel=246)
    assert plain.nonlinear is None and "nonlinear_units" not in plain.to_dict()
    # no row's figure moves
    for a, b in zip(plain.rows, with_units.rows, strict=True):
        assert a.energy.total.value == b.energy.total.value
    nl = with_units.nonlinear
    dims = em.preset("bert-base")
    ops = nonlinear_ops(dims, softmax_bits_per_key=42, norm_bits_per_channel=246)
    want = math.fsum(n * v * 1e-12 for n, v in zip(
        ops["compute"].values(), (20.0, 3.0, 5.0), strict=True))
    assert nl.compute.value == pytest.approx(want, rel=1e-12)
    paper_bit = em.paper_unit_costs().joules("E_weight")
    assert nl.wread.value == pytest.approx(ops["wread"]["E_weight"] * paper_bit, rel=1e-12)
    doc = with_units.to_dict()["nonlinear_units"]
    assert "NOT included" in doc["what"] and set(doc["sources"]) == {*KEYS, "E_weight"}
    assert "Non-linear units" in with_units.table()


def test_half_priced_units_are_refused():
    section = {"unit_costs_pJ": dict(list(UNITS["unit_costs_pJ"].items())[:2])}
    with pytest.raises(ValueError, match="the non-linear units need E_softmax_row, "
                       "E_softmax_key, E_norm_channel; the unit costs lack E_norm_channel"):
        nonlinear_units(em.preset("minilm-l6"), _costs(section))


def test_unit_costs_keep_their_denominators():
    bad = {"unit_costs_pJ": {"E_softmax_key": {"value": 1.0, "unit": "pJ/op"}}}
    with pytest.raises(ValueError, match="has unit 'pJ/op', expected an energy per key"):
        parse_unit_costs(bad, origin="units.json", complete=False)
    with pytest.raises(ValueError, match="softmax_bits_per_key must be a number of bits"):
        nonlinear_ops(em.preset("minilm-l6"), softmax_bits_per_key=-1,
                      norm_bits_per_channel=1)
