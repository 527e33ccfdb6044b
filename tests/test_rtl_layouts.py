"""Tests of the bit layouts and their Python packers (rtl_gen/layouts.py)."""

from __future__ import annotations

import pytest
from amaranth.hdl import signed
from amaranth.lib import data
from hypothesis import given
from hypothesis import strategies as st

from rtl_gen.layouts import (
    SYSTEM_TARGETS,
    TARGETS,
    event_layout,
    flit_layout,
    in_event_layout,
    init_row_layout,
    load_layout,
    node_layout,
    out_event_layout,
    pack,
    route_layout,
    system_load_layout,
    system_out_layout,
    theta_row_layout,
    tile_config_layout,
    unpack,
    weight_row_layout,
)
from rtl_gen.params import RTLConfig

EVENT = data.StructLayout({"addr": 4, "tau": signed(3), "last": 1})


def fields(layout):
    return [(name, f.offset, f.width) for name, f in layout]


def check_roundtrip(layout, values, word):
    assert pack(layout, values) == word
    assert unpack(layout, word) == values


def test_pack_struct_lsb_first():
    check_roundtrip(EVENT, {"addr": 5, "tau": -2, "last": 1}, 5 | 0b110 << 4 | 1 << 7)
    check_roundtrip(EVENT, {"addr": 15, "tau": 3, "last": 0}, 15 | 3 << 4)


def test_pack_missing_fields_are_zero():
    assert pack(EVENT, {"last": 1}) == 1 << 7
    assert pack(data.ArrayLayout(4, 3), [1]) == 1


def test_pack_array():
    check_roundtrip(data.ArrayLayout(signed(4), 3), [1, -1, 2], 1 | 0xF << 4 | 2 << 8)


@given(st.integers(0, 15), st.integers(-4, 3), st.integers(0, 1))
def test_pack_unpack_roundtrip(addr, tau, last):
    values = {"addr": addr, "tau": tau, "last": last}
    assert unpack(EVENT, pack(EVENT, values)) == values


@pytest.mark.parametrize(("values", "error", "message"), [
    ({"addr": 16}, ValueError, "addr = 16 does not fit unsigned(4) (0..15)"),
    ({"tau": -5}, ValueError, "tau = -5 does not fit signed(3) (-4..3)"),
    ({"tau": 4}, ValueError, "tau = 4 does not fit signed(3) (-4..3)"),
    ({"addr": 1.0}, TypeError, "addr must be an integer, not 1.0"),
    ({"src": 1}, ValueError, "values has no fields ['src']; fields: ['addr', 'tau', 'last']"),
    ([1, 2], TypeError, "values must be a mapping of field values, not [1, 2]"),
])
def test_pack_rejects(values, error, message):
    with pytest.raises(error) as info:
        pack(EVENT, values)
    assert str(info.value) == message


def test_pack_names_nested_fields():
    with pytest.raises(ValueError) as info:
        pack(data.ArrayLayout(signed(2), 2), [1, 2], name="row")
    assert str(info.value) == "row[1] = 2 does not fit signed(2) (-2..1)"
    with pytest.raises(ValueError) as info:
        pack(data.ArrayLayout(2, 2), [0, 1, 2], name="row")
    assert str(info.value) == "row has 3 elements, the layout 2"


def test_event_layouts():
    cfg = RTLConfig(T=16, n_in=16, tile_neurons=8)
    assert fields(in_event_layout(cfg)) == [("addr", 0, 4), ("tau", 4, 4), ("last", 8, 1)]
    assert fields(out_event_layout(cfg)) == [("addr", 0, 3), ("t", 3, 4), ("last", 7, 1)]
    assert fields(event_layout(10, 6)) == [("addr", 0, 10), ("t", 10, 6), ("last", 16, 1)]


def test_tile_rows():
    cfg = RTLConfig(T=8, n_in=4, tile_neurons=5, lanes=2, weight_bits=3)
    assert weight_row_layout(cfg).size == cfg.weight_row_width == 15
    assert weight_row_layout(cfg).elem_shape == signed(3)
    assert theta_row_layout(cfg).size == cfg.theta_row_width
    assert init_row_layout(cfg).size == cfg.init_row_width
    assert tile_config_layout(cfg).size == cfg.config_width
    assert fields(load_layout(cfg))[0] == ("target", 0, 2)
    assert not weight_row_layout(RTLConfig(weight_bits=1)).elem_shape.signed
    assert set(TARGETS.items()) <= set(SYSTEM_TARGETS.items())


def test_system_words():
    cfg = RTLConfig(T=8, n_in=8, tile_neurons=4, mesh_rows=2, mesh_cols=3)
    # dst_x 2 bits, dst_y 1 bit, offset 3 bits
    assert pack(route_layout(cfg), {"dst_x": 2, "dst_y": 1, "offset": 4}) == 2 | 1 << 2 | 4 << 3
    # enable, layer (3 bits), n_dst (3 bits), out_offset (5 bits)
    word = pack(node_layout(cfg), {"enable": 1, "layer": 2, "n_dst": 3, "out_offset": 17})
    assert word == 1 | 2 << 1 | 3 << 4 | 17 << 7
    assert system_load_layout(cfg).size == 3 + 3 + max(cfg.load_addr_width, 3) + max(
        cfg.load_data_width, route_layout(cfg).size, node_layout(cfg).size)
    assert fields(system_out_layout(cfg)) == [("addr", 0, 5), ("t", 5, 3), ("last", 8, 1)]


def test_flit_layout_rejects():
    with pytest.raises(ValueError) as info:
        flit_layout(0, 2, 4, 4)
    assert str(info.value) == "rows must be 1..16, not 0"
    with pytest.raises(ValueError) as info:
        flit_layout(2, 2, 4, 17)
    assert str(info.value) == "time_width must be 1..16, not 17"
