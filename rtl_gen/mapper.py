"""Map a chain of golden integer layers onto the tile mesh, and predict what the system does.

:func:`map_chain` partitions every layer's output neurons into tiles of ``N = tile_neurons``
neurons, places the tiles on the ``mesh_rows x mesh_cols`` nodes (row-major, layer by layer:
node ``y * cols + x``), and produces

- per tile, the padded :class:`golden_models.IntegerLayer` it runs (``N`` neurons; padding
  neurons are silent by construction, see :func:`_pad_layer`) and its SRAM image (the tile's
  load beats, :func:`rtl_gen.tile.load_beats`);
- per tile, its destination range: the consecutive nodes (row-major) of the next layer that
  receive its output events, and the address offset added to the tile-local neuron index (the
  tile's first neuron in the layer), so the receiving tile reads weight row ``offset + j``;
- the system load beats (:meth:`SystemMap.load_beats`) in the payload of
  :func:`rtl_gen.layouts.system_load_layout`.

:func:`system_reference` is the golden model of the whole system: it runs the chain layer by
layer through :meth:`IntegerLayer.run_events`, and also every tile's padded layer on the events
its node receives, which predicts each tile's output events and counters, every flit
(source node, destination node, address, time, hop count) and the system output events.

This module needs no simulator: only ``golden_models`` and the configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from golden_models import IntegerLayer, Mask, encode_events
from golden_models.integer_layer import Counters
from rtl_gen.layouts import SYSTEM_TARGETS, node_layout, pack, route_layout
from rtl_gen.params import RTLConfig, check_config
from rtl_gen.tile import load_beats as tile_load_beats

__all__ = [
    "FlitRecord",
    "SystemMap",
    "SystemReference",
    "TilePlacement",
    "config_for_chain",
    "map_chain",
    "system_reference",
]

@dataclass(frozen=True)
class TilePlacement:
    """One logical tile (a slice of one layer's neurons) on one mesh node.

    Members
    -------
    layer : int
        Index of the layer in the chain.
    part : int
        Index of the slice within the layer.
    node : int
        Mesh node ``y * cols + x``.
    x, y : int
        Node coordinates.
    neuron_offset : int
        First neuron of the layer held by the tile (tile neuron ``j`` is layer neuron
        ``neuron_offset + j``).
    n_live : int
        Neurons of the layer held (``<= N``); the rest of the tile is padding.
    tile_layer : IntegerLayer
        The padded ``[n_in, N]`` layer the tile runs.
    dests : tuple of (int, int, int)
        ``(node, x, y)`` of each destination tile: consecutive nodes, in the order the
        injector sends (its destination range starts at the first).
    dest_offset : int
        Address offset of every destination (``neuron_offset``).
    final : bool
        The tile belongs to the last layer: its events leave on the system output.
    """

    layer: int
    part: int
    node: int
    x: int
    y: int
    neuron_offset: int
    n_live: int
    tile_layer: IntegerLayer = field(repr=False)
    dests: tuple[tuple[int, int, int], ...]
    dest_offset: int
    final: bool


@dataclass(frozen=True)
class FlitRecord:
    """One predicted flit: source and destination nodes, address, time step, hop count."""

    src: int
    dst: int
    addr: int
    t: int
    hops: int


@dataclass(frozen=True)
class SystemMap:
    """A chain placed on the mesh (from :func:`map_chain`)."""

    config: RTLConfig
    layers: tuple[IntegerLayer, ...] = field(repr=False)
    tiles: tuple[TilePlacement, ...]

    @property
    def n_layers(self) -> int:
        return len(self.layers)

    @property
    def nodes(self) -> int:
        return self.config.mesh_rows * self.config.mesh_cols

    def tiles_of(self, layer: int) -> tuple[TilePlacement, ...]:
        return tuple(t for t in self.tiles if t.layer == layer)

    def tile_at(self, node: int) -> TilePlacement | None:
        for t in self.tiles:
            if t.node == node:
                return t
        return None

    def pad_input(self, q: torch.Tensor) -> torch.Tensor:
        """Input codes ``[n_in of layer 0]`` padded to the encoder's ``config.n_in`` codes.

        Padding codes are the silent code ``mu`` of the input mask: they produce no event.
        """
        mask = self.layers[0].in_mask
        q = torch.as_tensor(q, dtype=torch.int64).reshape(-1)
        if q.numel() != self.layers[0].n_in:
            raise ValueError(
                f"q must hold {self.layers[0].n_in} codes (layer 0 inputs), not {q.numel()}")
        pad = torch.full((self.config.n_in - q.numel(),), mask.mu, dtype=torch.int64)
        return torch.cat([q, pad])

    def load_beats(self) -> list[tuple[int, int, int, int]]:
        """System load beats ``(node, target, addr, data)``: every tile image, destination
        range and node configuration, then the layer count. Nodes without a tile are
        disabled."""
        cfg = self.config
        route, node_cfg = route_layout(cfg), node_layout(cfg)
        beats = []
        for t in self.tiles:
            for target, addr, data in tile_load_beats(cfg, t.tile_layer):
                beats.append((t.node, target, addr, data))
            if t.dests:
                first, x, y = t.dests[0]
                # the hardware walks the range row-major from its first node
                assert [n for n, _x, _y in t.dests] == list(range(first, first + len(t.dests)))
                word = pack(route, {"dst_x": x, "dst_y": y, "offset": t.dest_offset})
                beats.append((t.node, SYSTEM_TARGETS["route"], 0, word))
        for node in range(self.nodes):
            t = self.tile_at(node)
            if t is None:
                word = 0
            else:
                word = pack(node_cfg, {"enable": 1, "layer": t.layer,
                                       "n_dst": 0 if t.final else len(t.dests),
                                       "out_offset": t.neuron_offset if t.final else 0})
            beats.append((node, SYSTEM_TARGETS["node"], 0, word))
        beats.append((0, SYSTEM_TARGETS["system"], 0, self.n_layers))
        return beats


def config_for_chain(layers, *, tile_neurons: int, mesh_rows: int, mesh_cols: int,
                     lanes: int | None = None, n_in: int | None = None,
                     sram_macro: bool = False) -> RTLConfig:
    """The :class:`RTLConfig` whose encoder and tiles fit the chain ``layers``.

    ``T``, ``family``, ``i_max_in`` and ``k`` come from layer 0's input mask (the encoder's
    mask is fixed at elaboration); ``i_max_out`` from layer 0's output mask (every tile's
    masks are loaded anyway); ``weight_bits`` from the layers; ``n_in`` defaults to the widest
    layer input.
    """
    layers = _check_layers(layers)
    m0 = layers[0].in_mask
    widest = max(layer.n_in for layer in layers)
    return RTLConfig(
        T=m0.T, k=m0.k, family=m0.space.family, i_max_in=m0.i_max,
        i_max_out=layers[0].out_mask.i_max, weight_bits=layers[0].weight_bits,
        n_in=widest if n_in is None else n_in, tile_neurons=tile_neurons, lanes=lanes,
        mesh_rows=mesh_rows, mesh_cols=mesh_cols, sram_macro=sram_macro,
    )


def _check_layers(layers) -> tuple[IntegerLayer, ...]:
    if not isinstance(layers, (list, tuple)) or not layers:
        raise ValueError(f"layers must be a non-empty list of IntegerLayer, not {layers!r}")
    for i, layer in enumerate(layers):
        if not isinstance(layer, IntegerLayer):
            raise TypeError(f"layers[{i}] must be a golden_models.IntegerLayer, not {layer!r}")
    for i in range(1, len(layers)):
        prev, cur = layers[i - 1], layers[i]
        if cur.n_in != prev.n_out:
            raise ValueError(
                f"layers[{i}] has {cur.n_in} inputs, layers[{i - 1}] has {prev.n_out} outputs")
        if cur.in_mask != prev.out_mask:
            raise ValueError(
                f"layers[{i}].in_mask {cur.in_mask} differs from layers[{i - 1}].out_mask "
                f"{prev.out_mask}")
    return tuple(layers)


def _pad_layer(layer: IntegerLayer, lo: int, hi: int, N: int, bound: int) -> IntegerLayer:
    """Neurons ``lo..hi-1`` of ``layer`` as an ``N``-neuron tile layer.

    A padding neuron has weight ``+1`` (1-bit) or ``0``, init 0 and the threshold table
    ``bound + 1`` before ``I_max_out`` and ``-bound`` from it on: whatever its membrane (always
    within ``+-bound``), it fires exactly at ``t = I_max_out``, inside the dead zone, so it
    never emits an event. It is still compared and counted like any neuron.
    """
    pad = N - (hi - lo)
    w = layer.weights[:, lo:hi].to(torch.int64)
    init = layer.init[lo:hi].to(torch.int64)
    theta = layer.theta[lo:hi].to(torch.int64)
    if pad:
        T, i_max = layer.out_mask.T, layer.out_mask.i_max
        fill = 1 if layer.weight_bits == 1 else 0
        w = torch.cat([w, torch.full((layer.n_in, pad), fill, dtype=torch.int64)], 1)
        init = torch.cat([init, torch.zeros(pad, dtype=torch.int64)])
        row = torch.tensor([bound + 1 if t < i_max else -bound for t in range(T - 1)],
                           dtype=torch.int64)
        theta = torch.cat([theta, row.expand(pad, T - 1)], 0)
    return IntegerLayer(w, layer.weight_bits, init, theta, layer.in_mask, layer.out_mask)


def map_chain(config: RTLConfig, layers) -> SystemMap:
    """Partition, place and configure ``layers`` on the mesh of ``config``.

    Parameters
    ----------
    config : RTLConfig
        Mesh size, tile size ``N`` and rows ``n_in``; the encoder mask (``T``, ``family``,
        ``i_max_in``, ``k``) must be layer 0's input mask (:func:`config_for_chain` makes one).
    layers : sequence of golden_models.IntegerLayer
        The chain; ``layers[i+1]`` consumes the output position of ``layers[i]``.

    Raises
    ------
    TypeError, ValueError
        The chain is inconsistent, does not fit the tiles, or needs more tiles than nodes.
    """
    check_config(config)
    layers = _check_layers(layers)
    N, cols = config.tile_neurons, config.mesh_cols
    enc_mask = Mask(config.space, config.i_max_in, config.k)
    if layers[0].in_mask != enc_mask:
        raise ValueError(
            f"layers[0].in_mask {layers[0].in_mask} differs from the encoder mask {enc_mask} "
            f"of the config (T, family, i_max_in, k)")
    for i, layer in enumerate(layers):
        if layer.weight_bits != config.weight_bits:
            raise ValueError(f"layers[{i}] has {layer.weight_bits}-bit weights, the config "
                             f"{config.weight_bits}-bit")
        if layer.out_mask.T != config.T:
            raise ValueError(f"layers[{i}] has T={layer.out_mask.T}, the config T={config.T}")
        if layer.n_in > config.n_in:
            raise ValueError(f"layers[{i}] has {layer.n_in} inputs, a tile has {config.n_in} "
                             f"rows (n_in)")
    counts = [-(-layer.n_out // N) for layer in layers]
    nodes = config.mesh_rows * config.mesh_cols
    if sum(counts) > nodes:
        raise ValueError(
            f"the chain needs {sum(counts)} tiles of {N} neurons ({counts} per layer), the "
            f"{config.mesh_rows}x{config.mesh_cols} mesh has {nodes} nodes")
    bound = config.acc_bound
    slots = []  # (layer, part, node, lo, hi)
    node = 0
    for li, layer in enumerate(layers):
        for part in range(counts[li]):
            lo, hi = part * N, min((part + 1) * N, layer.n_out)
            slots.append((li, part, node, lo, hi))
            node += 1
    tiles = []
    for li, part, node, lo, hi in slots:
        final = li == len(layers) - 1
        dests = tuple((n, n % cols, n // cols) for (l2, _p, n, _lo, _hi) in slots
                      if l2 == li + 1)
        tiles.append(TilePlacement(
            layer=li, part=part, node=node, x=node % cols, y=node // cols, neuron_offset=lo,
            n_live=hi - lo, tile_layer=_pad_layer(layers[li], lo, hi, N, bound),
            dests=dests, dest_offset=lo, final=final,
        ))
    return SystemMap(config, layers, tuple(tiles))


@dataclass(frozen=True)
class SystemReference:
    """What the system must produce for one input vector (from :func:`system_reference`).

    Members
    -------
    layer_events : list of (index, time)
        Output events of every layer of the chain (golden, per layer), layer order.
    out_index, out_time : torch.Tensor
        The system output events: the last layer's events (global neuron index, time step),
        time order, ascending index within a step.
    tile_events : dict
        node -> list of (tile-local address, t) the tile emits, in emission order.
    tile_counters : dict
        node -> :class:`golden_models.Counters` of the tile's window.
    flits : list of FlitRecord
        Every flit, grouped by source node in emission order, destinations in table order.
    encoder_events : int
        Events the encoder emits (layer 0 input events).
    """

    layer_events: list[tuple[torch.Tensor, torch.Tensor]]
    out_index: torch.Tensor
    out_time: torch.Tensor
    tile_events: dict[int, list[tuple[int, int]]]
    tile_counters: dict[int, Counters]
    flits: list[FlitRecord]
    encoder_events: int

    @property
    def total_hops(self) -> int:
        return sum(f.hops for f in self.flits)


def system_reference(system_map: SystemMap, q: torch.Tensor) -> SystemReference:
    """Golden run of the mapped chain on the layer-0 input codes ``q`` (``[layers[0].n_in]``).

    The chain runs through :meth:`IntegerLayer.run_events` per layer; every tile's padded layer
    runs on the events its node receives; the two must agree on every live neuron (checked).
    """
    layers = system_map.layers
    q = torch.as_tensor(q, dtype=torch.int64).reshape(-1)
    if q.numel() != layers[0].n_in:
        raise ValueError(f"q must hold {layers[0].n_in} codes (layer 0 inputs), not {q.numel()}")
    index, time = encode_events(q, layers[0].in_mask)
    layer_events = []
    inputs = (index, time)
    tile_events, tile_counters, flits = {}, {}, []
    for li, layer in enumerate(layers):
        golden = layer.run_events(*inputs)
        layer_events.append((golden.out_index, golden.out_time))
        for t in system_map.tiles_of(li):
            res = t.tile_layer.run_events(*inputs)
            if not torch.equal(res.tau[: t.n_live], golden.tau[t.neuron_offset:
                                                               t.neuron_offset + t.n_live]):
                raise AssertionError(f"tile at node {t.node} disagrees with layer {li}")
            events = list(zip(res.out_index.tolist(), res.out_time.tolist(), strict=True))
            if any(a >= t.n_live for a, _ in events):
                raise AssertionError(f"a padding neuron of node {t.node} emitted an event")
            tile_events[t.node] = events
            tile_counters[t.node] = res.counters
            for a, tt in events:
                for node, x, y in t.dests:
                    flits.append(FlitRecord(t.node, node, t.dest_offset + a, tt,
                                            abs(x - t.x) + abs(y - t.y)))
        inputs = (golden.out_index, golden.out_time)
    return SystemReference(
        layer_events=layer_events, out_index=inputs[0], out_time=inputs[1],
        tile_events=tile_events, tile_counters=tile_counters, flits=flits,
        encoder_events=int(index.numel()),
    )
