"""Bit layouts of the M-TTFS hardware: every payload and memory word, in one module.

Each layout is an ``amaranth.lib.data`` layout built from an :class:`rtl_gen.params.RTLConfig`
(or, for the flit, the mesh and field widths). The components declare their ports with these
layouts and read memory rows through views of them; the Python side packs and unpacks words
with the same layouts (:func:`pack`, :func:`unpack`, which wrap ``layout.const(...).as_bits()``
and ``layout.from_bits(...)``), so a field's position is written once and hardware and
software cannot drift apart. Fields are LSB first, in the order listed; docs/rtl_interfaces.md
("Layouts") is the reference.

Groups:

- events: :func:`event_layout` (``addr``, time, ``last``) and the tile's / encoder's instances
  :func:`in_event_layout`, :func:`out_event_layout`; :func:`code_layout` (encoder input);
- tile load: :func:`load_layout` (the ``load`` stream), :data:`TARGETS` (its ``target``
  values), the rows it carries :func:`weight_row_layout`, :func:`theta_row_layout`,
  :func:`init_row_layout` and the config word :func:`tile_config_layout`;
- mesh: :func:`flit_layout` (the router payload), with :func:`coord_width`, :func:`hop_width`
  and :func:`check_mesh`;
- system: :func:`system_widths`, :func:`route_layout` (a node's destination range),
  :func:`node_layout` (a node's configuration), :func:`system_load_layout`,
  :data:`SYSTEM_TARGETS`, :func:`system_out_layout`;
- raw sums: :func:`sum_out_layout` (a tile's output in raw-sum mode);
- non-linear units (docs/rtl_units.md): the softmax unit's :func:`score_layout`,
  :func:`prob_layout`, :func:`softmax_load_layout` (:data:`SOFTMAX_TARGETS`,
  :func:`softmax_config_layout`), and the residual-add + LayerNorm unit's
  :func:`residual_layout`, :func:`residual_sum_layout`, :func:`norm_out_layout`,
  :func:`norm_load_layout` (:data:`NORM_TARGETS`, :func:`norm_channel_layout`,
  :func:`norm_config_layout`). Their constants' widths come from the golden units
  (``golden_models.int_softmax``, ``int_layernorm``, ``residual``), imported when a layout
  is built.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from amaranth.hdl import Shape, signed, unsigned
from amaranth.lib import data

from rtl_gen.params import MAX_MESH, RTLConfig, bits_for, check_int, index_width

__all__ = [
    "NORM_CODES",
    "NORM_TARGETS",
    "PACK_BITS",
    "SOFTMAX_TARGETS",
    "norm_channel_layout",
    "norm_config_layout",
    "norm_load_layout",
    "norm_out_layout",
    "norm_theta_width",
    "prob_layout",
    "prob_theta_width",
    "residual_layout",
    "residual_sum_layout",
    "score_layout",
    "softmax_config_layout",
    "softmax_load_layout",
    "sum_out_layout",
    "dense_codes_layout",
    "dense_in_layout",
    "dense_out_layout",
    "dense_pack",
    "SYSTEM_TARGETS",
    "TARGETS",
    "check_mesh",
    "code_layout",
    "coord_width",
    "event_layout",
    "flit_layout",
    "hop_width",
    "in_event_layout",
    "init_row_layout",
    "load_layout",
    "node_layout",
    "out_event_layout",
    "pack",
    "route_layout",
    "system_load_layout",
    "system_out_layout",
    "system_widths",
    "theta_row_layout",
    "tile_config_layout",
    "unpack",
    "weight_row_layout",
]

#: Values of the tile's ``load.target`` field: which SRAM (or the config registers) a beat writes.
TARGETS = {"weights": 0, "thresholds": 1, "init": 2, "config": 3}

#: Values of the system's ``load.target`` field: the tile's four, then the system's own.
SYSTEM_TARGETS = {
    **TARGETS,
    "route": 4,  # addr ignored; data = route_layout (the node's destination range)
    "node": 5,  # data = node_layout
    "system": 6,  # data = n_layers
}


# -- Python-level packing ----------------------------------------------------------------------


def _check_fits(shape, value, name: str) -> None:
    label = name or "values"
    if isinstance(shape, data.Layout):
        if isinstance(shape, data.ArrayLayout):
            if isinstance(value, Mapping) or not isinstance(value, Sequence):
                raise TypeError(f"{label} must be a sequence, not {value!r}")
            if len(value) > shape.length:
                raise ValueError(f"{label} has {len(value)} elements, the layout {shape.length}")
            for i, v in enumerate(value):
                _check_fits(shape.elem_shape, v, f"{label}[{i}]")
            return
        if not isinstance(value, Mapping):
            raise TypeError(f"{label} must be a mapping of field values, not {value!r}")
        unknown = sorted(set(value) - {n for n, _ in shape})
        if unknown:
            raise ValueError(f"{label} has no fields {unknown}; fields: {[n for n, _ in shape]}")
        for field_name, v in value.items():
            _check_fits(shape[field_name].shape, v, f"{name}.{field_name}" if name else field_name)
        return
    s = Shape.cast(shape)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an integer, not {value!r}")
    lo, hi = (-(1 << (s.width - 1)), (1 << (s.width - 1)) - 1) if s.signed else (0,
                                                                                (1 << s.width) - 1)
    if not lo <= value <= hi:
        raise ValueError(f"{name} = {value} does not fit {s!r} ({lo}..{hi})")


def pack(layout: data.Layout, values, *, name: str = "") -> int:
    """The word of ``layout`` holding ``values``: ``layout.const(values).as_bits()``, range-checked.

    ``values`` is a mapping of field values for a struct layout (missing fields are 0), a list
    for an array layout (missing trailing elements are 0), nested as the layout is. Unlike
    ``layout.const``, which truncates, a value that does not fit its field raises.

    Raises
    ------
    TypeError
        A value is not an integer (or a mapping / sequence where the layout nests).
    ValueError
        A field is unknown or a value does not fit its field; the message names the field
        (prefixed by ``name``) and shows the value and the range.
    """
    _check_fits(layout, values, name)
    return layout.const(values).as_bits()


def unpack(layout: data.Layout, word: int) -> dict[str, object] | list:
    """Field values of the word ``word`` of ``layout`` (``layout.from_bits(word)``), as plain ints.

    A struct layout gives a ``dict`` (field name -> value), an array layout a ``list``; nested
    layouts nest; signed fields come back negative where their sign bit is set.
    """
    return _plain(layout, layout.from_bits(int(word)))


def _plain(layout, const):
    if isinstance(layout, data.ArrayLayout):
        return [_plain(layout.elem_shape, const[i]) for i in range(layout.length)]
    if isinstance(layout, data.Layout):
        return {name: _plain(field.shape, const[name]) for name, field in layout}
    return int(const)


# -- events and codes --------------------------------------------------------------------------


def event_layout(addr_width: int, time_width: int, *, time: str = "t") -> data.StructLayout:
    """An event stream payload: ``addr, <time>, last`` (``last`` beats carry no event).

    ``time`` names the time field: ``"tau"`` on a consumer's input, ``"t"`` on a producer's
    output.
    """
    return data.StructLayout({"addr": addr_width, time: time_width, "last": 1})


def in_event_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of a tile's input (and the encoder's output): ``addr, tau, last``."""
    return event_layout(config.in_addr_width, config.time_width, time="tau")


def out_event_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of a tile's output events: ``addr, t, last`` (``addr`` within the tile)."""
    return event_layout(config.out_addr_width, config.time_width, time="t")


def code_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of the encoder's input: one code ``q`` (signed for "sym", unsigned for "asym")."""
    shape = signed if config.family == "sym" else unsigned
    return data.StructLayout({"q": shape(config.time_width)})


# -- tile load stream and SRAM rows ------------------------------------------------------------


#: Code bits a dense flit carries: the width of the router's ``t`` field at its maximum (16), so
#: the dense design moves its codes over the same router as events, packed.
PACK_BITS = 16


def dense_pack(config: RTLConfig) -> int:
    """Codes per dense beat and flit ``P = min(N, PACK_BITS // time_width)``."""
    return max(1, min(config.tile_neurons, PACK_BITS // config.time_width))


def dense_in_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of the dense tile's input: ``code, last`` (``last`` beats carry no code)."""
    return data.StructLayout({"code": config.time_width, "last": 1})


def dense_codes_layout(config: RTLConfig) -> data.ArrayLayout:
    """``P`` packed output codes, code ``p`` (neuron ``addr + p``) at bits ``p*tw``: two's
    complement for ``sym``, unsigned for ``asym``."""
    code = signed(config.time_width) if config.family == "sym" else unsigned(config.time_width)
    return data.ArrayLayout(code, dense_pack(config))


def dense_out_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of a dense output beat: ``addr`` (first neuron), ``codes``, ``last``."""
    return data.StructLayout({
        "addr": config.out_addr_width,
        "codes": dense_pack(config) * config.time_width,
        "last": 1,
    })


def load_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of the tile's ``load`` stream: ``target, addr, data`` (values in :data:`TARGETS`).

    ``data`` holds one row of the target (placed in its LSBs): :func:`weight_row_layout`,
    :func:`theta_row_layout`, :func:`init_row_layout` or :func:`tile_config_layout`.
    """
    return data.StructLayout({
        "target": 2,
        "addr": config.load_addr_width,
        "data": config.load_data_width,
    })


def weight_row_layout(config: RTLConfig) -> data.ArrayLayout:
    """A weight row: neuron ``j``'s weight as element ``j``.

    1-bit weights are ``unsigned(1)`` (1 = +1, 0 = -1); wider ones two's complement.
    """
    wb = config.weight_bits
    return data.ArrayLayout(unsigned(1) if wb == 1 else signed(wb), config.tile_neurons)


def theta_row_layout(config: RTLConfig) -> data.ArrayLayout:
    """A threshold row: lane ``l`` holds ``theta[g*L + l][t]`` (two's complement)."""
    return data.ArrayLayout(signed(config.theta_width), config.lanes)


def init_row_layout(config: RTLConfig) -> data.ArrayLayout:
    """An init row: lane ``l`` holds the folded init ``B[g*L + l]`` (two's complement)."""
    return data.ArrayLayout(signed(config.acc_width), config.lanes)


def tile_config_layout(config: RTLConfig) -> data.StructLayout:
    """The tile's config word: ``i_max_in, i_max_out, k`` (``time_width`` bits each)."""
    tw = config.time_width
    return data.StructLayout({"i_max_in": tw, "i_max_out": tw, "k": tw})


# -- mesh --------------------------------------------------------------------------------------


def _check_mesh_int(name: str, value: object, lo: int, hi: int) -> int:
    # the mesh's messages read "rows must be 1..16, not 0"
    return check_int(name, value, lo, hi, must_be="must be")


def check_mesh(rows: object, cols: object) -> tuple[int, int]:
    """Return ``(rows, cols)`` if both are integers in 1..MAX_MESH (16), else raise."""
    return (_check_mesh_int("rows", rows, 1, MAX_MESH),
            _check_mesh_int("cols", cols, 1, MAX_MESH))


def coord_width(n: int) -> int:
    """Bits of a coordinate ``0 .. n-1`` (:func:`rtl_gen.params.index_width`)."""
    return index_width(n)


def hop_width(rows: int, cols: int) -> int:
    """Bits of the hop counter: the longest XY path has ``rows + cols - 2`` hops."""
    return max((rows + cols - 2).bit_length(), 1)


def flit_layout(rows: int, cols: int, addr_width: int, time_width: int) -> data.StructLayout:
    """The flit payload: ``dst_x, dst_y, addr, t, hops`` (LSB first, in this order).

    The routers read only ``dst_x``, ``dst_y`` and ``hops``; ``addr`` and ``t`` are carried
    unchanged, so a client with another event (e.g. a wider address) reuses the mesh by
    choosing ``addr_width`` and ``time_width``.

    Parameters
    ----------
    rows, cols : int
        Mesh size (1..16 each, MAX_MESH).
    addr_width : int
        Bits of the source neuron address (1..32).
    time_width : int
        Bits of the time step (1..16).
    """
    rows, cols = check_mesh(rows, cols)
    _check_mesh_int("addr_width", addr_width, 1, 32)
    _check_mesh_int("time_width", time_width, 1, 16)
    return data.StructLayout({
        "dst_x": coord_width(cols),
        "dst_y": coord_width(rows),
        "addr": addr_width,
        "t": time_width,
        "hops": hop_width(rows, cols),
    })


# -- system ------------------------------------------------------------------------------------


def system_widths(config: RTLConfig) -> dict[str, int]:
    """Field widths of the system's destination ranges, node configuration and output.

    ``P = mesh_rows * mesh_cols`` nodes; a chain has at most ``P`` layers and a tile at most
    ``P`` destinations.
    """
    nodes = config.mesh_rows * config.mesh_cols
    return {
        "node": index_width(nodes),
        "dst_x": index_width(config.mesh_cols),
        "dst_y": index_width(config.mesh_rows),
        "offset": config.in_addr_width,
        "layer": index_width(nodes),
        "n_dst": bits_for(nodes),
        "out_addr": index_width(nodes * config.tile_neurons),
    }


def route_layout(config: RTLConfig) -> data.StructLayout:
    """A node's destination range: ``dst_x, dst_y`` (its first destination; the others follow
    row-major, ``n_dst`` in all, see :func:`node_layout`) and ``offset`` (a flit goes to
    ``addr + offset``)."""
    sw = system_widths(config)
    return data.StructLayout({"dst_x": sw["dst_x"], "dst_y": sw["dst_y"],
                              "offset": sw["offset"]})


def node_layout(config: RTLConfig) -> data.StructLayout:
    """A node's configuration: ``enable, layer, n_dst, out_offset``."""
    sw = system_widths(config)
    return data.StructLayout({"enable": 1, "layer": sw["layer"], "n_dst": sw["n_dst"],
                              "out_offset": sw["out_addr"]})


def system_load_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of the system's ``load`` stream: ``node, target, addr, data`` (LSB first).

    Targets (:data:`SYSTEM_TARGETS`) 0..3 go to the tile at ``node`` (its own load beats); 4
    writes the destination range of ``node`` (:func:`route_layout`); 5 writes the node
    configuration (:func:`node_layout`); 6 writes the layer count (``n_layers``).
    """
    sw = system_widths(config)
    return data.StructLayout({
        "node": sw["node"],
        "target": 3,
        "addr": max(config.load_addr_width, sw["node"]),
        "data": max(config.load_data_width, route_layout(config).size,
                    node_layout(config).size, sw["n_dst"]),
    })


def system_out_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of the system output: ``addr`` (global neuron of the last layer), ``t``, ``last``."""
    return event_layout(system_widths(config)["out_addr"], config.time_width, time="t")


# -- raw sums ------------------------------------------------------------------------------------


def sum_out_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of a tile's output in raw-sum mode: ``addr`` (neuron), ``sum`` (its membrane,
    ``acc_width`` signed), ``last`` (the window's marker beat carries no sum)."""
    return data.StructLayout({"addr": config.out_addr_width, "sum": signed(config.acc_width),
                              "last": 1})


# -- the softmax unit ----------------------------------------------------------------------------

#: Values of the softmax unit's ``load.target``.
SOFTMAX_TARGETS = {"config": 0, "thresholds": 1}


def _code_shape(config: RTLConfig, label: str):
    """The code of position ``label`` (golden_models.positions): signed for "sym"."""
    from golden_models.positions import POSITION_FAMILY

    family = POSITION_FAMILY[label]
    return signed(config.time_width) if family == "sym" else unsigned(config.time_width)


def score_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of the softmax unit's input: ``score`` (a raw attention score), ``valid`` (the
    key takes part: the padding mask), ``last`` (the row's marker beat carries no score)."""
    return data.StructLayout({"score": signed(config.score_bits), "valid": 1, "last": 1})


def prob_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of the softmax unit's output: ``code`` (an attention-probability code, one per
    key in the row's order), ``last`` (the row's marker beat carries no code)."""
    return data.StructLayout({"code": _code_shape(config, "Attn. probability"), "last": 1})


def softmax_config_layout(config: RTLConfig) -> data.StructLayout:
    """The softmax unit's config word: ``mult`` (``M``) and ``shift`` (``S``) of
    ``t = rshift_round(z * M, S)`` (``golden_models.int_softmax.IntSoftmax``)."""
    from golden_models.int_softmax import MULT_BITS

    return data.StructLayout({"mult": MULT_BITS,
                              "shift": bits_for(62 - config.score_bits - MULT_BITS)})


def prob_theta_width(config: RTLConfig) -> int:
    """Bits of a threshold over the probabilities ``u`` (unsigned, clamped to
    ``0 .. 2**Pu + 1``)."""
    from golden_models.int_softmax import PROB_BITS

    return bits_for(2**PROB_BITS + 1)


def softmax_load_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of the softmax unit's ``load`` stream: ``target`` (:data:`SOFTMAX_TARGETS`),
    ``addr`` (the threshold's step ``t``), ``data`` (:func:`softmax_config_layout` or a
    threshold)."""
    return data.StructLayout({
        "target": 1,
        "addr": index_width(config.T - 1),
        "data": max(softmax_config_layout(config).size, prob_theta_width(config)),
    })


# -- the residual-add + LayerNorm unit -----------------------------------------------------------

#: Code positions the LayerNorm unit walks its output to (the next block's three projection
#: inputs after the FFN LayerNorm; the FFN-expand input after the attention one uses the first).
NORM_CODES = 3
#: Values of the LayerNorm unit's ``load.target``.
NORM_TARGETS = {"channels": 0, "thresholds": 1, "config": 2}


def residual_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of the LayerNorm unit's residual input: ``r`` (``residual_bits`` signed)."""
    return data.StructLayout({"r": signed(config.residual_bits)})


def residual_sum_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of the LayerNorm unit's sum input: ``v``, a tile's raw sum
    (``residual_sum_width`` signed)."""
    return data.StructLayout({"v": signed(config.residual_sum_width)})


def norm_out_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of the LayerNorm unit's output: ``r`` (the new residual stream) and ``q`` (its
    codes at the :data:`NORM_CODES` positions the unit walks to)."""
    return data.StructLayout({
        "r": signed(config.residual_bits),
        "q": data.ArrayLayout(_code_shape(config, "Q-proj. input"), NORM_CODES),
    })


def norm_channel_layout(config: RTLConfig) -> data.StructLayout:
    """One channel's constants: ``add_mult``, ``add_bias`` (the residual add's ``M[j]``,
    ``B[j]``), ``gain``, ``bias`` (the LayerNorm's ``G[j]``, ``B[j]``).

    ``add_bias`` is ``sum_bits + 9`` bits (a bias of ``2**(sum_bits-1)`` stream units, with 8
    fraction bits); the LayerNorm's bias is at most the stream's range, ``residual_bits + 8``.
    """
    from golden_models.int_layernorm import BIAS_FRAC_BITS, GAIN_BITS
    from golden_models.residual import BIAS_FRAC_BITS as ADD_FRAC_BITS
    from golden_models.residual import MULT_BITS

    return data.StructLayout({
        "add_mult": MULT_BITS,
        "add_bias": signed(config.sum_bits + ADD_FRAC_BITS + 1),
        "gain": signed(GAIN_BITS),
        "bias": signed(config.residual_bits + BIAS_FRAC_BITS),
    })


def norm_config_layout(config: RTLConfig) -> data.StructLayout:
    """The LayerNorm unit's config word: ``add_shift`` (the add's ``S``, 8..60) and
    ``gain_shift`` (the LayerNorm's ``g``, 0..40)."""
    return data.StructLayout({"add_shift": 6, "gain_shift": 6})


def norm_theta_width(config: RTLConfig) -> int:
    """Bits of a threshold over the stream: signed, clamped to ``lo .. hi + 1`` of the
    stream."""
    return config.residual_bits + 1


def norm_load_layout(config: RTLConfig) -> data.StructLayout:
    """Payload of the LayerNorm unit's ``load`` stream: ``target`` (:data:`NORM_TARGETS`),
    ``addr`` (the channel, or ``p * (T-1) + t`` of position ``p``'s threshold ``t``), ``data``
    (:func:`norm_channel_layout`, a threshold or :func:`norm_config_layout`)."""
    return data.StructLayout({
        "target": 2,
        "addr": index_width(max(config.hidden, NORM_CODES * (config.T - 1))),
        "data": max(norm_channel_layout(config).size, norm_theta_width(config),
                    norm_config_layout(config).size),
    })
