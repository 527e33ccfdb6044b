"""Map a graph of golden integer layers onto the mesh, and predict what the system does.

The input is a :class:`Graph`: stages (a :class:`golden_models.IntegerLayer` and the registered
node block that runs it, :func:`rtl_gen.registry.node_blocks`) and edges from a producer (a
stage, or the system input) to a consumer stage, each producer neuron ``j`` becoming the
consumer's input ``offset + j``. A chain of layers (:func:`chain_graph`, :func:`map_chain`) is
the case of one edge per stage. :func:`map_graph` partitions every stage's output neurons into
nodes of ``N = tile_neurons`` neurons, places them on the ``mesh_rows x mesh_cols`` nodes
(row-major, stage by stage in level order: node ``y * cols + x``), and produces

- per node, the padded layer its block runs (``N`` neurons; padding neurons are silent by
  construction, see :func:`_pad_layer`; for a block with a codes port, masks in the config's
  code space, :func:`_in_config_space`, and for a codes input ``config.n_in`` rows,
  :func:`_extend_rows`) and its image (the block's ``load`` beats, ``Node.image``);
- per node, its destination range: the consecutive nodes (row-major) of the consuming stage,
  and the address offset added to the node-local neuron index (the edge's offset plus the
  node's first neuron in its stage), so the consumer reads weight row ``offset + j``;
- the system load beats (:meth:`SystemMap.load_beats`) in the payload of
  :func:`rtl_gen.layouts.system_load_layout`.

The sequencer runs the graph level by level: a stage fed by the system input is level 0, any
other one level above its highest producer; the stages that feed no stage must be the last
level's, and their events, concatenated in stage order, are the system output.

:func:`system_reference` is the golden model of the whole system: it runs every stage through
:meth:`IntegerLayer.run_events` on the events its producers send, and every node's block
through its golden run (``Node.run``, behind the adapters of a codes port) on the same events,
which predicts each node's output events and counters, every flit (source node, destination
node, address, time, hop count) and the system output events.

This module needs no simulator: only ``golden_models``, the registry and the configuration.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from golden_models import IntegerLayer, Mask, encode_events
from golden_models.integer_layer import Counters
from rtl_gen import registry
from rtl_gen.layouts import SYSTEM_TARGETS, node_layout, pack, route_layout
from rtl_gen.params import RTLConfig, check_config

__all__ = [
    "Edge",
    "FlitRecord",
    "Graph",
    "Stage",
    "SystemMap",
    "SystemReference",
    "TilePlacement",
    "chain_graph",
    "config_for_chain",
    "map_chain",
    "map_graph",
    "partition",
    "run_dense_node",
    "run_tile_node",
    "system_reference",
]


# -- the graph ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stage:
    """One layer of a :class:`Graph` and the registered node block that runs it."""

    layer: IntegerLayer
    block: str = "tile"


@dataclass(frozen=True)
class Edge:
    """Producer ``src`` (a stage index, ``None`` for the system input) feeds stage ``dst``:
    producer neuron ``j`` is the consumer's input ``offset + j`` (one destination range)."""

    src: int | None
    dst: int
    offset: int = 0


@dataclass(frozen=True)
class Graph:
    """Stages and the edges between them (checked by :func:`map_graph`)."""

    stages: tuple[Stage, ...]
    edges: tuple[Edge, ...]

    def into(self, s: int) -> tuple[Edge, ...]:
        """The edges that feed stage ``s``."""
        return tuple(e for e in self.edges if e.dst == s)

    def out_of(self, s: int) -> Edge | None:
        """The edge stage ``s`` feeds (``None`` for a final stage)."""
        return next((e for e in self.edges if e.src == s), None)


def chain_graph(layers, blocks=None) -> Graph:
    """The chain ``layers[0] -> layers[1] -> ...`` as a :class:`Graph` (stage ``i`` runs
    ``layers[i]`` on ``blocks[i]``, default neuron tiles; ``layers[0]`` reads the input)."""
    layers = _check_layers(layers)
    blocks = ("tile",) * len(layers) if blocks is None else tuple(blocks)
    if len(blocks) != len(layers):
        raise ValueError(f"blocks must name one block per layer ({len(layers)}), not "
                         f"{len(blocks)}")
    return Graph(tuple(Stage(layer, b) for layer, b in zip(layers, blocks, strict=True)),
                 tuple(Edge(None if i == 0 else i - 1, i) for i in range(len(layers))))


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


def _check_stages(graph: object) -> Graph:
    if not isinstance(graph, Graph):
        raise TypeError(f"graph must be an rtl_gen.mapper.Graph, not {graph!r}")
    if not graph.stages:
        raise ValueError("graph must have at least one stage")
    nodes = tuple(b.name for b in registry.node_blocks())
    for i, st in enumerate(graph.stages):
        if not isinstance(st, Stage) or not isinstance(st.layer, IntegerLayer):
            raise TypeError(f"stages[{i}] must be a Stage of a golden_models.IntegerLayer, "
                            f"not {st!r}")
        if st.block not in nodes:
            raise ValueError(f"stages[{i}].block must be a node block {nodes}, not {st.block!r}")
    S = len(graph.stages)
    for e in graph.edges:
        if (not isinstance(e, Edge) or e.dst not in range(S) or e.src == e.dst
                or (e.src is not None and e.src not in range(S))
                or isinstance(e.offset, bool) or not isinstance(e.offset, int) or e.offset < 0):
            raise ValueError(f"edge {e!r} must join a producer (a stage index or None, the "
                             f"input) to another stage of 0..{S - 1}, at an offset >= 0")
    return graph


def _check_edges(graph: Graph) -> None:
    """Every stage fed once per input range, by the input alone or by stages alone; each
    stage feeds at most one; masks and ranges agree."""
    stages = graph.stages
    inputs = [s for s in range(len(stages)) if any(e.src is None for e in graph.into(s))]
    for s, st in enumerate(stages):
        into = graph.into(s)
        if not into:
            raise ValueError(f"stages[{s}] is fed by no edge")
        if s in inputs and (len(into) > 1 or into[0].offset):
            raise ValueError(f"stages[{s}] reads the system input, at offset 0 and from "
                             f"nothing else (the encoder's events reach level 0 only)")
        if len([e for e in graph.edges if e.src == s]) > 1:
            raise ValueError(f"stages[{s}] feeds more than one stage (a node holds one "
                             f"destination range)")
        taken = []
        for e in into:
            if e.src is None:
                continue
            src = stages[e.src].layer
            if src.out_mask != st.layer.in_mask:
                raise ValueError(f"stages[{s}].layer.in_mask {st.layer.in_mask} differs from "
                                 f"stages[{e.src}].layer.out_mask {src.out_mask}")
            lo, hi = e.offset, e.offset + src.n_out
            if hi > st.layer.n_in or any(lo < b and a < hi for a, b in taken):
                raise ValueError(f"stages[{e.src}] feeds inputs {lo}..{hi - 1} of stages[{s}], "
                                 f"which has {st.layer.n_in} inputs, some fed twice or too few")
            taken.append((lo, hi))
    first = stages[inputs[0]].layer if inputs else None
    for s in inputs:
        lay = stages[s].layer
        if (lay.n_in, lay.in_mask) != (first.n_in, first.in_mask):
            raise ValueError(f"stages[{s}] reads the input with {lay.n_in} inputs and "
                             f"{lay.in_mask}, stages[{inputs[0]}] with {first.n_in} and "
                             f"{first.in_mask}")


def _levels(graph: Graph) -> list[int]:
    """Level of every stage (input stages 0, else one above the highest producer); checks
    that the graph has no cycle and that its final stages are the last level's."""
    _check_edges(graph)
    S = len(graph.stages)
    level: list[int | None] = [None] * S
    for _ in range(S):
        for s in range(S):
            srcs = [e.src for e in graph.into(s)]
            if None in srcs:
                level[s] = 0
            elif all(level[p] is not None for p in srcs):
                level[s] = 1 + max(level[p] for p in srcs)
    if None in level:
        raise ValueError(f"stages {[s for s in range(S) if level[s] is None]} are not reached "
                         f"from the system input (the graph has a cycle)")
    last = max(level)
    for s, st in enumerate(graph.stages):
        final = graph.out_of(s) is None
        if final != (level[s] == last):
            raise ValueError(f"stages[{s}] is at level {level[s]} of {last}: only the last "
                             f"level's stages, all of them, feed the system output")
        if final and registry.block(st.block).node.o != "events":
            raise ValueError(f"stages[{s}] runs on {st.block!r}, whose codes output cannot "
                             f"feed the system output (the merge takes events in time order)")
    return level


# -- placement -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TilePlacement:
    """One slice of one stage's neurons on one mesh node.

    Members
    -------
    layer : int
        Index of the stage in the graph (of the layer in a chain).
    part : int
        Index of the slice within the stage.
    node : int
        Mesh node ``y * cols + x``.
    x, y : int
        Node coordinates.
    neuron_offset : int
        First neuron of the layer held by the node (node neuron ``j`` is layer neuron
        ``neuron_offset + j``).
    n_live : int
        Neurons of the layer held (``<= N``); the rest of the node is padding.
    tile_layer : IntegerLayer
        The padded layer the node's block is loaded with (``N`` neurons).
    dests : tuple of (int, int, int)
        ``(node, x, y)`` of each destination node: consecutive nodes, in the order the
        injector sends (its destination range starts at the first).
    dest_offset : int
        Address offset of every destination (the edge's offset plus ``neuron_offset``).
    final : bool
        The stage feeds the system output.
    block : str
        The registered node block at the node.
    level : int
        The stage's level (the sequencer's layer); the stage index in a chain.
    out_offset : int
        Global output address of neuron 0 (final stages: concatenated in stage order).
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
    block: str = "tile"
    level: int = 0
    out_offset: int = 0


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
    """A graph placed on the mesh (from :func:`map_graph` or :func:`map_chain`)."""

    config: RTLConfig
    graph: Graph = field(repr=False)
    tiles: tuple[TilePlacement, ...]

    @property
    def layers(self) -> tuple[IntegerLayer, ...]:
        """Every stage's layer, in stage order (the chain, for :func:`map_chain`)."""
        return tuple(st.layer for st in self.graph.stages)

    @property
    def n_layers(self) -> int:
        """Levels the sequencer walks."""
        return 1 + max(t.level for t in self.tiles)

    @property
    def nodes(self) -> int:
        return self.config.mesh_rows * self.config.mesh_cols

    @property
    def node_blocks(self) -> tuple[str, ...]:
        """The registered block at each node (a neuron tile where nothing is placed), for
        :class:`rtl_gen.system.System`."""
        placed = {t.node: t.block for t in self.tiles}
        return tuple(placed.get(n, "tile") for n in range(self.nodes))

    @property
    def input_layer(self) -> IntegerLayer:
        """The layer of the first stage reading the system input (all such agree on ``n_in``
        and the input mask)."""
        return next(self.graph.stages[e.dst].layer for e in self.graph.edges if e.src is None)

    def tiles_of(self, layer: int) -> tuple[TilePlacement, ...]:
        return tuple(t for t in self.tiles if t.layer == layer)

    def tile_at(self, node: int) -> TilePlacement | None:
        for t in self.tiles:
            if t.node == node:
                return t
        return None

    def pad_input(self, q: torch.Tensor) -> torch.Tensor:
        """Input codes ``[n_in of the input stages]`` padded to the encoder's ``config.n_in``.

        Padding codes are the silent code ``mu`` of the input mask: they produce no event.
        """
        first = self.input_layer
        q = torch.as_tensor(q, dtype=torch.int64).reshape(-1)
        if q.numel() != first.n_in:
            raise ValueError(
                f"q must hold {first.n_in} codes (layer 0 inputs), not {q.numel()}")
        pad = torch.full((self.config.n_in - q.numel(),), first.in_mask.mu, dtype=torch.int64)
        return torch.cat([q, pad])

    def load_beats(self) -> list[tuple[int, int, int, int]]:
        """System load beats ``(node, target, addr, data)``: every node's image, destination
        range and configuration, then the level count. Nodes without a stage are
        disabled."""
        cfg = self.config
        route, node_cfg = route_layout(cfg), node_layout(cfg)
        beats = []
        for t in self.tiles:
            image = registry.block(t.block).node.image
            for target, addr, data in image(cfg, t.tile_layer):
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
                word = pack(node_cfg, {"enable": 1, "layer": t.level,
                                       "n_dst": 0 if t.final else len(t.dests),
                                       "out_offset": t.out_offset if t.final else 0})
            beats.append((node, SYSTEM_TARGETS["node"], 0, word))
        beats.append((0, SYSTEM_TARGETS["system"], 0, self.n_layers))
        return beats


def config_for_chain(layers, *, tile_neurons: int, mesh_rows: int, mesh_cols: int,
                     lanes: int | None = None, n_in: int | None = None,
                     sram_macro: bool = False, k: int | None = None) -> RTLConfig:
    """The :class:`RTLConfig` whose encoder and tiles fit the chain ``layers``: the toolkit's
    one derivation of a configuration from golden layers (a lone tile's is its chain of one).

    ``T``, ``family``, ``i_max_in`` and ``k`` come from layer 0's input mask (the encoder's
    mask is fixed at elaboration); ``i_max_out`` from layer 0's output mask (every tile's
    masks are loaded anyway); ``weight_bits`` from the layers; ``n_in`` defaults to the widest
    layer input. ``k`` given: the radius the tiles' configuration registers reset to instead
    (a lone tile's image loads its output mask's, ``synth_scripts.gatelevel.tile``).
    """
    layers = _check_layers(layers)
    m0 = layers[0].in_mask
    widest = max(layer.n_in for layer in layers)
    return RTLConfig(
        T=m0.T, k=m0.k if k is None else k, family=m0.space.family, i_max_in=m0.i_max,
        i_max_out=layers[0].out_mask.i_max, weight_bits=layers[0].weight_bits,
        n_in=widest if n_in is None else n_in, tile_neurons=tile_neurons, lanes=lanes,
        mesh_rows=mesh_rows, mesh_cols=mesh_cols, sram_macro=sram_macro,
    )


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


def _in_config_space(layer: IntegerLayer, config: RTLConfig) -> IntegerLayer:
    """``layer`` with both masks in the config's code space (same centres and radius).

    Codes on a node port are the config's: the codes adapters and the dense tile read and
    write ``config.c - t``. The folded init keeps ``B``, so the layer computes on events
    exactly as before (``d = I_max - tau`` does not depend on the family); only the silent
    code ``mu``, hence the dense init ``D = B - mu * sum W``, follows the code space.
    """
    space = config.space
    return IntegerLayer(layer.weights, layer.weight_bits, layer.init, layer.theta,
                        Mask(space, layer.in_mask.i_max, layer.in_mask.k),
                        Mask(space, layer.out_mask.i_max, layer.out_mask.k))


def _extend_rows(layer: IntegerLayer, n_in: int) -> IntegerLayer:
    """``layer`` with rows up to ``n_in``, for a codes-input block (its adapter sends all
    ``n_in`` codes, the silent code ``mu`` where no event came).

    An extra row has weight ``+1`` (1-bit) or ``0``, and the folded init takes it in
    (``B + mu * W``): its silent code then adds ``mu * W - mu * W = 0`` to every membrane
    (the dense init ``D = B - mu * sum W`` is unchanged), so the layer computes as before.
    """
    extra = n_in - layer.n_in
    if extra <= 0:
        return layer
    fill = 1 if layer.weight_bits == 1 else 0
    rows = torch.full((extra, layer.n_out), fill, dtype=torch.int64)
    init = layer.init.to(torch.int64) + layer.in_mask.mu * rows.sum(0)
    return IntegerLayer(torch.cat([layer.weights.to(torch.int64), rows]), layer.weight_bits,
                        init, layer.theta, layer.in_mask, layer.out_mask)


def map_chain(config: RTLConfig, layers, blocks=None) -> SystemMap:
    """Partition, place and configure the chain ``layers`` on the mesh of ``config``.

    Parameters
    ----------
    config : RTLConfig
        Mesh size, tile size ``N`` and rows ``n_in``; the encoder mask (``T``, ``family``,
        ``i_max_in``, ``k``) must be layer 0's input mask (:func:`config_for_chain` makes one).
    layers : sequence of golden_models.IntegerLayer
        The chain; ``layers[i+1]`` consumes the output position of ``layers[i]``.
    blocks : sequence of str, optional
        The registered node block of each layer (default: neuron tiles).

    Raises
    ------
    TypeError, ValueError
        The chain is inconsistent, does not fit the tiles, or needs more tiles than nodes.
    """
    check_config(config)
    return _map(config, _check_stages(chain_graph(layers, blocks)), "layers[{}]", "chain",
                "layer")


def map_graph(config: RTLConfig, graph: Graph) -> SystemMap:
    """Partition, place and configure the stages of ``graph`` on the mesh of ``config``.

    Raises
    ------
    TypeError, ValueError
        The graph is inconsistent (see the module text), a stage does not fit its block, or
        the graph needs more nodes than the mesh has.
    """
    check_config(config)
    return _map(config, _check_stages(graph), "stages[{}].layer", "graph", "stage")


def _check_fits(config: RTLConfig, graph: Graph, label: str) -> None:
    enc_mask = Mask(config.space, config.i_max_in, config.k)
    for s, st in enumerate(graph.stages):
        layer, name = st.layer, label.format(s)
        if any(e.src is None for e in graph.into(s)) and layer.in_mask != enc_mask:
            raise ValueError(
                f"{name}.in_mask {layer.in_mask} differs from the encoder mask {enc_mask} "
                f"of the config (T, family, i_max_in, k)")
        if layer.weight_bits != config.weight_bits:
            raise ValueError(f"{name} has {layer.weight_bits}-bit weights, the config "
                             f"{config.weight_bits}-bit")
        if layer.out_mask.T != config.T:
            raise ValueError(f"{name} has T={layer.out_mask.T}, the config T={config.T}")
        if layer.n_in > config.n_in:
            raise ValueError(f"{name} has {layer.n_in} inputs, a tile has {config.n_in} "
                             f"rows (n_in)")


def partition(n_out: int, N: int) -> tuple[tuple[int, int], ...]:
    """The neuron ranges ``(lo, hi)`` of a stage of ``n_out`` neurons on nodes of ``N``:
    ``ceil(n_out / N)`` nodes, node ``p`` holding neurons ``p*N .. min((p+1)*N, n_out) - 1``
    (the last one padded when ``N`` does not divide ``n_out``)."""
    return tuple((lo, min(lo + N, n_out)) for lo in range(0, n_out, N))


def _map(config: RTLConfig, graph: Graph, label: str, what: str, per: str) -> SystemMap:
    levels = _levels(graph)
    _check_fits(config, graph, label)
    stages, N, cols = graph.stages, config.tile_neurons, config.mesh_cols
    parts = [partition(st.layer.n_out, N) for st in stages]
    counts = [len(p) for p in parts]
    nodes = config.mesh_rows * cols
    if sum(counts) > nodes:
        raise ValueError(
            f"the {what} needs {sum(counts)} tiles of {N} neurons ({counts} per {per}), the "
            f"{config.mesh_rows}x{cols} mesh has {nodes} nodes")
    order = sorted(range(len(stages)), key=lambda s: (levels[s], s))
    first, node = {}, 0
    for s in order:
        first[s], node = node, node + counts[s]
    out_offset, total = {}, 0
    for s in range(len(stages)):
        if graph.out_of(s) is None:
            out_offset[s], total = total, total + stages[s].layer.n_out
    tiles = []
    for s in order:
        st, edge = stages[s], graph.out_of(s)
        block = registry.block(st.block)
        dests = () if edge is None else tuple(
            (n, n % cols, n // cols) for n in range(first[edge.dst], first[edge.dst]
                                                     + counts[edge.dst]))
        for part, (lo, hi) in enumerate(parts[s]):
            node = first[s] + part
            tile_layer = _pad_layer(st.layer, lo, hi, N, config.acc_bound)
            if "codes" in (block.node.i, block.node.o):
                tile_layer = _in_config_space(tile_layer, config)
            if block.node.i == "codes":
                tile_layer = _extend_rows(tile_layer, config.n_in)
            tiles.append(TilePlacement(
                layer=s, part=part, node=node, x=node % cols, y=node // cols,
                neuron_offset=lo, n_live=hi - lo, tile_layer=tile_layer, dests=dests,
                dest_offset=(0 if edge is None else edge.offset) + lo, final=edge is None,
                block=st.block, level=levels[s], out_offset=out_offset.get(s, 0) + lo,
            ))
    return SystemMap(config, graph, tuple(tiles))


# -- golden runs of the node blocks ---------------------------------------------------------------


def run_tile_node(layer: IntegerLayer, inputs):
    """The neuron tile's window (``Node.run``): events in, masked events out."""
    res = layer.run_events(*inputs)
    return (res.out_index, res.out_time), res.counters


def run_dense_node(layer: IntegerLayer, codes: torch.Tensor):
    """The dense tile's window (``Node.run``): the code vector in, every output code out."""
    from golden_models.dense import run_dense

    res = run_dense(layer, codes)
    return res.codes, res.counters


def _node_run(config: RTLConfig, t: TilePlacement, index, time):
    """A node's emitted events (node-local ``(addr, t)``, emission order) and counters, for
    the events ``(index, time)`` it receives: its block's golden run behind the adapters of its
    codes ports (:class:`rtl_gen.system_parts.CodeGather`, ``CodeEvents``)."""
    node, layer = registry.block(t.block).node, t.tile_layer
    inputs = (index, time)
    if node.i == "codes":
        # an address without an event reads as the silent code
        codes = torch.full((config.n_in,), layer.in_mask.mu, dtype=torch.int64)
        codes[index.long()] = layer.in_mask.space.c - time.to(torch.int64)
        inputs = codes
    out, counters = node.run(layer, inputs)
    if node.o == "codes":
        tau = layer.out_mask.space.c - out
        keep = layer.out_mask.transmitted(tau)
        return [(j, int(tau[j])) for j in range(layer.n_out) if keep[j]], counters
    return list(zip(out[0].tolist(), out[1].tolist(), strict=True)), counters


@dataclass(frozen=True)
class SystemReference:
    """What the system must produce for one input vector (from :func:`system_reference`).

    Members
    -------
    layer_events : list of (index, time)
        Output events of every stage (golden, per stage), stage order.
    out_index, out_time : torch.Tensor
        The system output events: the final stages' events (global neuron index, time step),
        time order, ascending index within a step.
    tile_events : dict
        node -> list of (node-local address, t) its block emits, in emission order.
    tile_counters : dict
        node -> the counters of its block's window (:class:`golden_models.Counters` for a
        tile, :class:`golden_models.counters.DenseCounters` for a dense tile).
    flits : list of FlitRecord
        Every flit, grouped by source node in emission order, destinations in table order.
    encoder_events : int
        Events the encoder emits (level 0 input events).
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


def _stage_inputs(graph: Graph, s: int, encoded, outputs) -> tuple[torch.Tensor, torch.Tensor]:
    """The events stage ``s`` receives: the input's, or its producers' shifted by the offsets."""
    parts = [encoded if e.src is None else (outputs[e.src][0] + e.offset, outputs[e.src][1])
             for e in graph.into(s)]
    return torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts])


def system_reference(system_map: SystemMap, q: torch.Tensor) -> SystemReference:
    """Golden run of the mapped graph on the input codes ``q`` (``[n_in of the input stages]``).

    Every stage runs through :meth:`IntegerLayer.run_events`; every node's block runs on the
    events its node receives; the two must agree on every live neuron (checked).
    """
    graph, cfg = system_map.graph, system_map.config
    first = system_map.input_layer
    q = torch.as_tensor(q, dtype=torch.int64).reshape(-1)
    if q.numel() != first.n_in:
        raise ValueError(f"q must hold {first.n_in} codes (layer 0 inputs), not {q.numel()}")
    encoded = encode_events(q, first.in_mask)
    outputs: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    tile_events, tile_counters, flits = {}, {}, []
    for s in dict.fromkeys(t.layer for t in system_map.tiles):  # level order
        index, time = _stage_inputs(graph, s, encoded, outputs)
        golden = graph.stages[s].layer.run_events(index, time)
        outputs[s] = (golden.out_index, golden.out_time)
        want = sorted(zip(golden.out_index.tolist(), golden.out_time.tolist(), strict=True))
        for t in system_map.tiles_of(s):
            events, counters = _node_run(cfg, t, index, time)
            if any(a >= t.n_live for a, _ in events):
                raise AssertionError(f"a padding neuron of node {t.node} emitted an event")
            mine = sorted((a + t.neuron_offset, tt) for a, tt in events)
            if mine != [(a, tt) for a, tt in want
                        if t.neuron_offset <= a < t.neuron_offset + t.n_live]:
                raise AssertionError(f"node {t.node} disagrees with stage {s}")
            tile_events[t.node], tile_counters[t.node] = events, counters
            for a, tt in events:
                for node, x, y in t.dests:
                    flits.append(FlitRecord(t.node, node, t.dest_offset + a, tt,
                                            abs(x - t.x) + abs(y - t.y)))
    out = sorted((tt, a + t.out_offset) for t in system_map.tiles if t.final
                 for a, tt in tile_events[t.node])
    return SystemReference(
        layer_events=[outputs[s] for s in range(len(graph.stages))],
        out_index=torch.tensor([a for _, a in out], dtype=torch.int64),
        out_time=torch.tensor([tt for tt, _ in out], dtype=torch.int64),
        tile_events=tile_events, tile_counters=tile_counters, flits=flits,
        encoder_events=int(encoded[0].numel()),
    )
