"""A whole encoder block on one mesh: its nodes, their placement, destination tables and routes.

The block is :func:`networks.integer.block_forward` in hardware (docs/rtl_block.md). Its stages
and edges walk the block's description (``golden_models.block_pieces.PIECES``): each kind of
piece has its stages (:data:`STAGES`) and its edges (:data:`EDGES`) here. Its nodes, in
data-flow order (:data:`KINDS`; ``N = tile_neurons``, ``H = hidden``, ``F = ffn``):

- ``q_proj``, ``k_proj``, ``v_proj``: ``ceil(H / N)`` neuron tiles each, reading the
  stream-fed codes ``q_proj_in`` / ``k_proj_in`` / ``v_proj_in``, sending query, key and
  value codes;
- per head ``h`` the attention path's three nodes (docs/rtl_attention.md): ``qk`` (query x
  key tile, ``seq_max`` key slots), ``softmax`` (raw scores in, ``attn_prob`` events out) and
  ``pv`` (probability x value tile, ``head_dim`` neurons). Keys and values are written into
  the head's tiles at run time, from the K and V tiles' codes of that head's dimensions;
- ``attn_out``: ``ceil(H / N)`` tiles, ``attn_out_in`` in, raw sums out;
- ``norm_attn``: the residual add + LayerNorm; it walks the ``ffn_expand_in`` codes;
- ``ffn_expand``: ``ceil(F / N)`` tiles, GELU folded in their tables, ``ffn_contract_in`` out;
- ``ffn_contract``: ``ceil(H / N)`` tiles, raw sums out;
- ``norm_ffn``: the second add + LayerNorm; it walks the next block's ``q/k/v_proj_in`` codes
  and sends the next block's stream.

**The residual stream.** The block's input stream waits in the ``norm_attn`` node: the node
that produced it (the previous block's ``norm_ffn``, or the host for block 0) sends it there
(``residual_in``) when it sends the ``q/k/v_proj_in`` codes, so it waits at the first add
while the projections and attention run, off the critical path; the stream after the first
LayerNorm waits in ``norm_ffn`` the same way (``residual_mid``). Every block runs on this
placement (the next block's weights loaded in place, or a copy of the placement): the
``norm_ffn`` node is the block's entry and exit, its ``q/k/v_proj_in`` and ``residual_in``
flits close the loop into the next block's tiles.

**Edges and destination tables** (:class:`BlockEdge`, :class:`Route`). Producer neuron ``i``
of a stage feeding a consumer stage is the consumer's input ``offset + i``, as the mapper's
:class:`rtl_gen.mapper.Edge`, here over a producer range ``lo .. hi - 1`` (a head's dimensions
of the Q, K and V tiles). Per producer node, a route sends its node-local neurons ``lo .. hi -
1`` to every node of the consumer stage (a linear tile reads all its inputs), neuron ``j`` at
address ``offset + j`` (the mapper's ``dest_offset``: the edge's offset plus the node's first
neuron); a route whose range starts inside its node (a head boundary) may have a negative
offset, its addresses never are. :meth:`BlockPlacement.check` proves that every input of
every consumer node is fed exactly once.

**Placement** (:func:`place_block`, docs/rtl_block.md "Placement"): the nodes in data-flow
order (each head's ``qk, softmax, pv`` together) along a serpentine of the mesh (row 0 east,
row 1 west, ...), so consecutive nodes are neighbours: each stage sits next to the stage it
feeds and a head's three nodes are one hop apart, as on the attention path's ``heads x 3``
mesh. Then each add + LayerNorm node moves into the run of the tiles it broadcasts its codes
to (``norm_ffn`` among the Q, K and V tiles, ``norm_attn`` among the FFN-expand tiles), where
its hops to them sum least: a code goes to every tile of the consuming stage, so these two
broadcasts are most of the block's flits. The mesh is the smallest near-square one (``rows
<= cols <= rows + 1``) that holds every node. The mapper's row-major order and the plain
serpentine stay available (:data:`ORDERS`) for comparison: on MiniLM the default moves over a
third fewer flit-hops than either.

**Routes** follow XY routing (:func:`rtl_gen.router.xy_path`): a flit crosses the routers of
its source's row to the destination's column, then that column; its hops are the Manhattan
distance. :meth:`BlockPlacement.traffic` turns per-neuron flit counts into per-edge flits and
flit-hops, per-router flits (every router of the path, source and destination included) and
per-link traversals: the block energy's movement.

This module needs no simulator and no golden model.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from itertools import accumulate
from pathlib import Path

from golden_models.block_pieces import (
    ADD_NORM,
    ATTENTION,
    LINEAR,
    NEXT_BLOCK,
    PIECES,
    check_handlers,
    consumers,
    ffn_wide,
    of_kind,
    producer,
)
from golden_models.block_pieces import KINDS as PIECE_KINDS
from golden_models.block_pieces import signal as signal_of
from rtl_gen.attn_params import MAX_HEAD_DIM, MAX_SEQ
from rtl_gen.mapper import partition
from rtl_gen.params import MAX_MESH, MAX_TILE_NEURONS, check_int
from rtl_gen.router import xy_path
from toolkit_base.files import write_atomic
from toolkit_base.jsonfile import read_json
from toolkit_base.schemas import validate

__all__ = [
    "EDGES",
    "HEAD_NODES",
    "KINDS",
    "NORMS",
    "ORDERS",
    "PER_HEAD",
    "SCHEMA",
    "SIGNALS",
    "STAGES",
    "BlockEdge",
    "BlockNode",
    "BlockPlacement",
    "BlockShape",
    "BlockStage",
    "BlockTraffic",
    "Route",
    "block_edges",
    "block_stages",
    "dense_events",
    "place_block",
    "read_document",
    "smallest_mesh",
    "write_document",
]

#: The ``schema`` field of :meth:`BlockPlacement.document` (toolkit_base/schemas).
SCHEMA = "matterhorn.block_placement/1"

#: The attention path's nodes of one head (the attention kind's ``per_head`` nodes,
#: ``golden_models.block_pieces.KINDS``), what each is, and the signals each takes with their
#: addresses (``S = seq_max``, ``d = head_dim``).
HEAD_NODES = {
    "qk": "query x key tile of a head: query events in, key codes written at run time, raw "
          "scores out (rtl_gen.kv_tiles.ScoreTile)",
    "softmax": "softmax node of a head: raw scores in, attn_prob events out "
               "(rtl_gen.attn_softmax.SoftmaxNode)",
    "pv": "probability x value tile of a head: attn_prob events in, value codes written at "
          "run time, attn_out_in codes out (rtl_gen.kv_tiles.ContextTile)",
}
_HEAD_INPUTS = {"qk": {"query": "d", "key": "d"}, "softmax": {"scores": "S"},
                "pv": {"attn_prob": "S", "value": "d"}}
#: Which of a head's nodes takes each input of the attention piece.
_HEAD_TAKES = {"query": "qk", "key": "qk", "value": "pv"}


def _node_kinds() -> dict[str, str]:
    """Node kinds in data-flow order, and what each is: a piece's node, or the attention
    path's per head (``golden_models.block_pieces.PIECES``)."""
    out = {}
    for p in PIECES:
        if p.kind == ATTENTION:
            out.update((n, HEAD_NODES[n]) for n in p.nodes)
        else:
            out[p.node] = p.what
    return out


#: Node kinds in data-flow order, and what each is in hardware.
KINDS = _node_kinds()
#: The kinds with one node per head.
PER_HEAD = PIECE_KINDS[ATTENTION].per_head
#: The residual add + LayerNorm kinds (one node each).
NORMS = tuple(p.node for p in of_kind(ADD_NORM))

#: What travels between nodes, in data-flow order: the eight spike-encoded positions
#: (golden_models.positions) and the rest, with what one flit carries.
SIGNALS = {
    "q_proj_in": "a Q-projection input code (position q_proj_in)",
    "k_proj_in": "a K-projection input code (position k_proj_in)",
    "v_proj_in": "a V-projection input code (position v_proj_in)",
    "residual_in": "a value of the block's input stream, to wait at the first add",
    "query": "a query code (position query)",
    "key": "a key code written into a head's query x key tile (run time)",
    "value": "a value code written into a head's probability x value tile (run time)",
    "scores": "a raw attention score (key slot of a head)",
    "attn_prob": "an attention-probability code (position attn_prob)",
    "attn_out_in": "an attention-output input code (position attn_out_in)",
    "attn_sum": "a raw sum of the attention-output projection",
    "ffn_expand_in": "an FFN-expand input code (position ffn_expand_in)",
    "residual_mid": "a value of the stream after the first LayerNorm, to wait at the second add",
    "ffn_contract_in": "an FFN-contract input code (position ffn_contract_in)",
    "ffn_sum": "a raw sum of the FFN-contract projection",
}
#: Signals that are run-time weight writes, not events of a window.
WRITES = ("key", "value")
#: Nodes of the largest mesh (16x16), and the widest stage that could fit on it.
MAX_NODES = MAX_MESH * MAX_MESH
MAX_WIDTH = MAX_NODES * MAX_TILE_NEURONS
#: Placement orders of :func:`place_block`.
ORDERS = ("centred", "serpentine", "row_major")


# -- the block's shape ---------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockShape:
    """The dimensions of one encoder block and the tile size.

    Parameters
    ----------
    hidden : int
        Width ``H`` of the residual stream, ``heads * head_dim`` (1..65536).
    heads : int
        Attention heads (1..256).
    head_dim : int
        Dimensions per head ``d_k`` (1..256).
    ffn : int
        FFN width ``F`` (1..65536).
    seq_max : int
        Key slots of a head's tiles, the longest sequence (1..256).
    tile_neurons : int
        Neurons ``N`` of a neuron tile (1..256).

    Raises
    ------
    TypeError, ValueError
        A dimension is not an integer (``TypeError``, as every integer check of the toolkit,
        :func:`toolkit_base.checks.check_int`) or not in range (``ValueError``): one line
        naming it and the valid range; ``hidden != heads * head_dim``.

    Whether the block fits a mesh is :func:`place_block`'s check.
    """

    hidden: int
    heads: int
    head_dim: int
    ffn: int
    seq_max: int
    tile_neurons: int

    def __post_init__(self) -> None:
        check_int("hidden", self.hidden, 1, MAX_WIDTH)
        check_int("heads", self.heads, 1, MAX_NODES)
        check_int("head_dim", self.head_dim, 1, MAX_HEAD_DIM)
        check_int("ffn", self.ffn, 1, MAX_WIDTH)
        check_int("seq_max", self.seq_max, 1, MAX_SEQ)
        check_int("tile_neurons", self.tile_neurons, 1, MAX_TILE_NEURONS)
        if self.hidden != self.heads * self.head_dim:
            raise ValueError(f"hidden must be heads x head_dim = {self.heads} x {self.head_dim}"
                             f" = {self.heads * self.head_dim}, not {self.hidden}")

    @classmethod
    def of(cls, config: object, *, seq_max: int, tile_neurons: int) -> BlockShape:
        """The shape of a BERT-family configuration (``hidden_size``,
        ``num_attention_heads``, ``intermediate_size``: a ``networks.bert.BertConfig``)."""
        hidden, heads = config.hidden_size, config.num_attention_heads
        check_int("num_attention_heads", heads, 1, MAX_NODES)
        check_int("hidden_size", hidden, 1, MAX_WIDTH)
        if hidden % heads:
            raise ValueError(f"hidden_size {hidden} must be a multiple of num_attention_heads "
                             f"{heads}")
        return cls(hidden, heads, hidden // heads, config.intermediate_size, seq_max,
                   tile_neurons)

    @classmethod
    def minilm(cls, tile_neurons: int = 48, seq_max: int = 128) -> BlockShape:
        """MiniLM-L6-H384 (all-MiniLM-L6-v2): 384 wide, 12 heads of 32, FFN 1536."""
        return cls(384, 12, 32, 1536, seq_max, tile_neurons)

    @classmethod
    def bert_base(cls, tile_neurons: int = 48, seq_max: int = 128) -> BlockShape:
        """BERT-base: 768 wide, 12 heads of 64, FFN 3072."""
        return cls(768, 12, 64, 3072, seq_max, tile_neurons)

    def as_dict(self) -> dict[str, int]:
        return {f: getattr(self, f) for f in self.__dataclass_fields__}

    def width(self, value: str) -> int:
        """Neurons of a value of the block (``golden_models.block_pieces``): the FFN's width
        for the values a piece of the FFN's width makes, the hidden width otherwise."""
        return self.ffn if ffn_wide(value) else self.hidden

    def inputs(self, kind: str) -> dict[str, int]:
        """The inputs of a node of ``kind``: signal -> addresses (every node of a stage reads
        all of them)."""
        if kind in HEAD_NODES:
            size = {"S": self.seq_max, "d": self.head_dim}
            return {sig: size[n] for sig, n in _HEAD_INPUTS[kind].items()}
        p = next(p for p in PIECES if p.node == kind)
        return {signal_of(v): self.width(v) for v in p.inputs}


# -- stages and edges ----------------------------------------------------------------------------


@dataclass(frozen=True)
class BlockStage:
    """One stage: a node kind (of one head for the attention path's kinds), its output
    neurons ``width`` and their ranges ``parts`` on its nodes (:func:`rtl_gen.mapper.partition`
    for the neuron tiles, one node otherwise)."""

    kind: str
    head: int | None
    width: int
    parts: tuple[tuple[int, int], ...]

    @property
    def name(self) -> str:
        return self.kind if self.head is None else f"{self.kind}_h{self.head}"


def _tiles(shape: BlockShape, piece) -> tuple[BlockStage, ...]:
    width = shape.width(piece.outputs[0])
    return (BlockStage(piece.node, None, width, partition(width, shape.tile_neurons)),)


def _heads(shape: BlockShape, piece) -> tuple[BlockStage, ...]:
    width = {"qk": shape.seq_max, "softmax": shape.seq_max, "pv": shape.head_dim}
    return tuple(BlockStage(kind, h, width[kind], ((0, width[kind]),))
                 for h in range(shape.heads) for kind in piece.nodes)


def _one(shape: BlockShape, piece) -> tuple[BlockStage, ...]:
    return (BlockStage(piece.node, None, shape.hidden, ((0, shape.hidden),)),)


#: The stages of each kind of piece: neuron tiles of its output's width, the attention path's
#: three nodes a head, one add + LayerNorm node.
STAGES = {LINEAR: _tiles, ATTENTION: _heads, ADD_NORM: _one}


def block_stages(shape: BlockShape) -> tuple[BlockStage, ...]:
    """The block's stages in data-flow order (``golden_models.block_pieces.PIECES``, each by
    its kind's :data:`STAGES`): Q, K, V, per head ``qk``, ``softmax``, ``pv``, then
    ``attn_out``, ``norm_attn``, ``ffn_expand``, ``ffn_contract``, ``norm_ffn``."""
    check_handlers(STAGES, "rtl_gen.block_map.STAGES", PIECES)
    return tuple(s for p in PIECES for s in STAGES[p.kind](shape, p))


@dataclass(frozen=True)
class BlockEdge:
    """Producer stage ``src`` sends ``signal`` to consumer stage ``dst``: its neurons ``lo ..
    hi - 1``, neuron ``i`` becoming the consumer's input ``offset + i`` (the mapper's
    :class:`rtl_gen.mapper.Edge` over a producer range)."""

    signal: str
    src: str
    dst: str
    lo: int
    hi: int
    offset: int = 0

    @property
    def name(self) -> str:
        return f"{self.signal}:{self.src}->{self.dst}"

    @property
    def write(self) -> bool:
        """A run-time weight write (key, value), not an event of a window."""
        return self.signal in WRITES


def _edges_out(shape: BlockShape, piece, outputs) -> list[BlockEdge]:
    """A node's ``outputs`` to the nodes that take them (an attention path's inputs are its
    own edges)."""
    return [BlockEdge(signal_of(o), piece.node, c.node, 0, shape.width(o))
            for o in outputs for c in consumers(NEXT_BLOCK.get(o, o) if piece.next_block else o)
            if c.kind != ATTENTION]


def _attention_edges(shape: BlockShape, piece) -> list[BlockEdge]:
    """Per head: the head's dimensions of the query, key and value tiles in, the scores and
    probabilities between its nodes, its context out at the head's dimensions."""
    S, dk = shape.seq_max, shape.head_dim
    edges = []
    for h in range(shape.heads):
        lo, hi = h * dk, (h + 1) * dk
        edges += [BlockEdge(v, producer(v).node, f"{_HEAD_TAKES[v]}_h{h}", lo, hi, -lo)
                  for v in piece.inputs]
        edges += [BlockEdge("scores", f"qk_h{h}", f"softmax_h{h}", 0, S),
                  BlockEdge("attn_prob", f"softmax_h{h}", f"pv_h{h}", 0, S)]
        edges += [BlockEdge(o, f"pv_h{h}", c.node, 0, dk, lo)
                  for o in piece.outputs for c in consumers(o)]
    return edges


#: The edges out of a node of each kind of piece (the attention path's: into it too).
EDGES = {LINEAR: lambda shape, p: _edges_out(shape, p, p.outputs),
         ATTENTION: _attention_edges,
         ADD_NORM: lambda shape, p: [] if p.next_block else _edges_out(shape, p, p.outputs)}


def block_edges(shape: BlockShape) -> tuple[BlockEdge, ...]:
    """Every stage-to-stage edge of the block, in data-flow order (module text): first the
    block's inputs from its last node (the previous block's, which every block is), then each
    piece's edges out (:data:`EDGES`)."""
    check_handlers(EDGES, "rtl_gen.block_map.EDGES", PIECES)
    last = PIECES[-1]
    edges = _edges_out(shape, last, last.outputs)
    for p in PIECES:
        edges += EDGES[p.kind](shape, p)
    return tuple(edges)


# -- the placement -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    """One line of a producer node's destination table: its node-local neurons ``lo .. hi -
    1`` go to every node of ``dests`` (in this order), neuron ``j`` at the consumer's input
    address ``offset + j`` (the mapper's ``dest_offset``)."""

    signal: str
    lo: int
    hi: int
    dests: tuple[int, ...]
    offset: int

    @property
    def write(self) -> bool:
        return self.signal in WRITES


@dataclass(frozen=True)
class BlockNode:
    """One node of the block on the mesh: part ``part`` of stage ``stage`` (kind ``kind``, head
    ``head``), holding the stage's neurons ``lo .. hi - 1``, at mesh node ``node = y * cols +
    x``, with its destination table ``routes``."""

    node: int
    x: int
    y: int
    stage: str
    kind: str
    head: int | None
    part: int
    lo: int
    hi: int
    routes: tuple[Route, ...] = ()


@dataclass(frozen=True)
class EdgeTraffic:
    """Flits of one edge and their hops summed."""

    flits: int
    flit_hops: int


@dataclass(frozen=True)
class BlockTraffic:
    """What :meth:`BlockPlacement.traffic` returns.

    Members
    -------
    edges : dict
        Edge name (:attr:`BlockEdge.name`, ``"query:q_proj->qk_h0"``) -> :class:`EdgeTraffic`,
        every edge of the block, in data-flow order.
    routers : dict
        ``(x, y)`` -> flits through the router, every router of the mesh (row-major): each flit
        counts at every router of its path, its source's and destination's included.
    links : dict
        ``((x, y), (x2, y2))`` -> flits that crossed the link from the first router to the
        second, every used link (sorted).
    signals : tuple of str
        The signals the counts gave (the rest sent nothing).
    """

    edges: dict[str, EdgeTraffic]
    routers: dict[tuple[int, int], int]
    links: dict[tuple[tuple[int, int], tuple[int, int]], int]
    signals: tuple[str, ...]

    @property
    def flits(self) -> int:
        return sum(e.flits for e in self.edges.values())

    @property
    def flit_hops(self) -> int:
        return sum(e.flit_hops for e in self.edges.values())

    def by_signal(self) -> dict[str, EdgeTraffic]:
        """Flits and flit-hops per signal (its edges summed), in :data:`SIGNALS` order."""
        out = {}
        for name, e in self.edges.items():
            s = name.partition(":")[0]
            old = out.get(s, EdgeTraffic(0, 0))
            out[s] = EdgeTraffic(old.flits + e.flits, old.flit_hops + e.flit_hops)
        return {s: out[s] for s in SIGNALS if s in out}

    def as_dict(self) -> dict:
        """JSON-able: edges, routers and links as lists."""
        return {
            "signals": list(self.signals),
            "edges": [{"edge": k, "flits": e.flits, "flit_hops": e.flit_hops}
                      for k, e in self.edges.items()],
            "routers": [{"x": x, "y": y, "flits": n} for (x, y), n in self.routers.items()],
            "links": [{"from": list(a), "to": list(b), "flits": n}
                      for (a, b), n in self.links.items()],
        }


def smallest_mesh(nodes: int) -> tuple[int, int]:
    """The smallest near-square mesh ``(rows, cols)``, ``rows <= cols <= rows + 1``, with at
    least ``nodes`` nodes (it may exceed the 16x16 limit: :func:`place_block` checks)."""
    check_int("nodes", nodes, 1, 1 << 30)
    side = math.isqrt(nodes - 1) + 1  # ceil(sqrt(nodes))
    return (side - 1, side) if (side - 1) * side >= nodes else (side, side)


def _order_xy(i: int, cols: int, order: str) -> tuple[int, int]:
    """Position ``(x, y)`` of the ``i``-th node along ``order``."""
    y, x = divmod(i, cols)
    if order != "row_major" and y % 2:
        x = cols - 1 - x
    return x, y


def _check_mesh(mesh: object, need: int, counts: str) -> tuple[int, int]:
    """``mesh`` (or the smallest that fits, for ``None``) as ``(rows, cols)``, checked."""
    fits = smallest_mesh(need)
    fitting = (f"the smallest that fits is {fits[0]}x{fits[1]}" if max(fits) <= MAX_MESH else
               f"no mesh up to {MAX_MESH}x{MAX_MESH} fits: use larger tiles (tile_neurons)")
    if mesh is None:
        if max(fits) > MAX_MESH:
            raise ValueError(f"the block needs {need} nodes ({counts}); {fitting}")
        return fits
    if (not isinstance(mesh, (tuple, list)) or len(mesh) != 2
            or any(isinstance(v, bool) or not isinstance(v, int) for v in mesh)):
        raise ValueError(f"mesh must be (rows, cols), two integers in 1..{MAX_MESH}, not "
                         f"{mesh!r}")
    rows = check_int("mesh rows", mesh[0], 1, MAX_MESH)
    cols = check_int("mesh cols", mesh[1], 1, MAX_MESH)
    if rows * cols < need:
        raise ValueError(f"the block needs {need} nodes ({counts}), the {rows}x{cols} mesh has "
                         f"{rows * cols}; {fitting}")
    return rows, cols


def _counts_text(stages: Sequence[BlockStage]) -> str:
    """``"24 projection, 36 attention, ..."``: nodes per group of kinds."""
    groups = (("projection", ("q_proj", "k_proj", "v_proj")), ("attention", PER_HEAD),
              ("attention-output", ("attn_out",)), ("FFN-expand", ("ffn_expand",)),
              ("FFN-contract", ("ffn_contract",)), ("add+norm", ("norm_attn", "norm_ffn")))
    return ", ".join(f"{sum(len(s.parts) for s in stages if s.kind in kinds)} {name}"
                     for name, kinds in groups)


def place_block(shape: BlockShape, mesh: tuple[int, int] | None = None, *,
                order: str = "centred") -> BlockPlacement:
    """Place every node of the block ``shape`` on a ``rows x cols`` mesh.

    Parameters
    ----------
    shape : BlockShape
    mesh : (rows, cols), optional
        The mesh; default the smallest near-square one that holds every node
        (:func:`smallest_mesh`).
    order : {"centred", "serpentine", "row_major"}
        ``"centred"`` (default): the nodes in data-flow order along a serpentine (row 0 east,
        row 1 west, ...: consecutive nodes are neighbours), each add + LayerNorm node moved
        amid the tiles it broadcasts to, where its hops to them sum least;
        ``"serpentine"``: the serpentine alone; ``"row_major"``: data-flow order row by row
        (the mapper's), for comparison. Why: module text and docs/rtl_block.md.

    Raises
    ------
    TypeError, ValueError
        ``shape`` is not a :class:`BlockShape`, ``order`` unknown, the mesh malformed or too
        small (one line naming it, the nodes needed and the smallest mesh that fits).
    """
    if not isinstance(shape, BlockShape):
        raise TypeError(f"shape must be an rtl_gen.block_map.BlockShape, not {shape!r}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, not {order!r}")
    stages = block_stages(shape)
    edges = block_edges(shape)
    sequence = [(s, p, lo, hi) for s in stages for p, (lo, hi) in enumerate(s.parts)]
    rows, cols = _check_mesh(mesh, len(sequence), _counts_text(stages))
    if order == "centred":
        sequence = _centred(sequence, edges, cols)
    at = {}
    for i, (s, p, _lo, _hi) in enumerate(sequence):
        x, y = _order_xy(i, cols, order)
        at[s.name, p] = (y * cols + x, x, y)
    nodes = []
    for s in stages:
        for p, (lo, hi) in enumerate(s.parts):
            node, x, y = at[s.name, p]
            routes = _routes(s, lo, hi, edges, stages, at)
            nodes.append(BlockNode(node, x, y, s.name, s.kind, s.head, p, lo, hi, routes))
    placement = BlockPlacement(shape, rows, cols, order, tuple(nodes), edges)
    placement.check()
    return placement


def _centred(sequence: list, edges: Sequence[BlockEdge], cols: int) -> list:
    """``sequence`` with each add + LayerNorm node moved into the run of the tiles it
    broadcasts its codes to (``norm_ffn``: the Q, K and V tiles; ``norm_attn``: the FFN-expand
    tiles), at the place where its hops to them sum least (the first such place).

    ``norm_ffn`` moves first: it lands before ``norm_attn``'s run, which then moves within a
    run whose positions no longer change."""
    for name in reversed(NORMS):
        fans = {e.dst for e in edges if e.src == name and e.dst not in NORMS}
        item = next(it for it in sequence if it[0].name == name)
        rest = [it for it in sequence if it is not item]
        run = [i for i, it in enumerate(rest) if it[0].name in fans]

        def cost(k: int, run=run) -> int:
            x, y = _order_xy(k, cols, "centred")
            # the run's nodes from k on move one place along the order
            return sum(_distance((x, y), _order_xy(i + (i >= k), cols, "centred"))
                       for i in run)

        at = min(range(run[0], run[-1] + 2), key=cost)
        sequence = [*rest[:at], item, *rest[at:]]
    return sequence


def _distance(a: tuple[int, int], b: tuple[int, int]) -> int:
    """Hops between two routers: their Manhattan distance."""
    return abs(a[0] - b[0]) + abs(a[1] - b[1])


def _routes(stage: BlockStage, lo: int, hi: int, edges, stages, at) -> tuple[Route, ...]:
    """The destination table of the node holding ``stage``'s neurons ``lo .. hi - 1``."""
    parts = {s.name: len(s.parts) for s in stages}
    routes = []
    for e in edges:
        if e.src != stage.name or max(lo, e.lo) >= min(hi, e.hi):
            continue
        dests = tuple(at[e.dst, p][0] for p in range(parts[e.dst]))
        routes.append(Route(e.signal, max(lo, e.lo) - lo, min(hi, e.hi) - lo, dests,
                            e.offset + lo))
    return tuple(routes)


@dataclass(frozen=True)
class BlockPlacement:
    """A block placed on a mesh (from :func:`place_block`).

    Members
    -------
    shape : BlockShape
    rows, cols : int
        The mesh.
    order : str
        The placement order (:data:`ORDERS`).
    nodes : tuple of BlockNode
        Every node, in data-flow order (stage by stage, part by part).
    edges : tuple of BlockEdge
        Every stage-to-stage edge (:func:`block_edges`).
    """

    shape: BlockShape
    rows: int
    cols: int
    order: str
    nodes: tuple[BlockNode, ...]
    edges: tuple[BlockEdge, ...] = field(repr=False)

    @cached_property
    def _at(self) -> dict[int, BlockNode]:
        return {n.node: n for n in self.nodes}

    def node(self, node: int) -> BlockNode:
        """The block node at mesh node ``node`` (``KeyError`` if none)."""
        if node not in self._at:
            raise KeyError(f"no block node at mesh node {node}")
        return self._at[node]

    def stage_nodes(self, stage: str) -> tuple[BlockNode, ...]:
        return tuple(n for n in self.nodes if n.stage == stage)

    def kind_counts(self) -> dict[str, int]:
        """Nodes per kind, in :data:`KINDS` order."""
        return {k: sum(n.kind == k for n in self.nodes) for k in KINDS}

    def path(self, src: int, dst: int) -> tuple[tuple[int, int], ...]:
        """The routers ``(x, y)`` a flit from mesh node ``src`` to ``dst`` crosses, both ends
        included, X first then Y (:func:`rtl_gen.router.xy_path`)."""
        a, b = self.node(src), self.node(dst)
        return xy_path((a.x, a.y), (b.x, b.y))

    def hops(self, src: int, dst: int) -> int:
        """Links a flit from ``src`` to ``dst`` crosses: their Manhattan distance."""
        a, b = self.node(src), self.node(dst)
        return _distance((a.x, a.y), (b.x, b.y))

    # -- checks ----------------------------------------------------------------------------------

    def check(self) -> BlockPlacement:
        """Raise ``ValueError`` naming the first fault: a node off the mesh, two nodes on one
        router, a node whose number is not ``y * cols + x``, a stage's nodes not covering its
        neurons, a route out of its node's neurons or to a node that has no such input, or a
        consumer input fed twice or not at all."""
        self._check_positions()
        self._check_stages()
        self._check_feeds()
        return self

    def _check_positions(self) -> None:
        seen = {}
        for n in self.nodes:
            if not (0 <= n.x < self.cols and 0 <= n.y < self.rows):
                raise ValueError(f"node {n.node} ({n.stage} part {n.part}) at ({n.x}, {n.y}) "
                                 f"is off the {self.rows}x{self.cols} mesh")
            if n.node != n.y * self.cols + n.x:
                raise ValueError(f"node {n.node} ({n.stage} part {n.part}) is at ({n.x}, "
                                 f"{n.y}), which is node {n.y * self.cols + n.x}")
            if n.node in seen:
                raise ValueError(f"node {n.node} holds {seen[n.node]} and {n.stage} part "
                                 f"{n.part}")
            seen[n.node] = f"{n.stage} part {n.part}"

    def _check_stages(self) -> None:
        for s in block_stages(self.shape):
            got = tuple((n.lo, n.hi) for n in self.stage_nodes(s.name))
            if got != s.parts:
                raise ValueError(f"stage {s.name} has neuron ranges {got}, its partition is "
                                 f"{s.parts}")

    def _check_feeds(self) -> None:
        """Every input of every consumer node is fed exactly once (intervals, sorted)."""
        fed: dict[tuple[int, str], list[tuple[int, int, int]]] = {}
        for n in self.nodes:
            for r in n.routes:
                if not 0 <= r.lo < r.hi <= n.hi - n.lo:
                    raise ValueError(f"node {n.node} ({n.stage}) routes {r.signal} neurons "
                                     f"{r.lo}..{r.hi - 1}, it holds {n.hi - n.lo}")
                for d in r.dests:
                    fed.setdefault((d, r.signal), []).append(
                        (r.offset + r.lo, r.offset + r.hi, n.node))
        for c in self.nodes:
            for signal, size in self.shape.inputs(c.kind).items():
                _check_cover(fed.pop((c.node, signal), []), size,
                             f"node {c.node} ({c.stage} part {c.part}) input {signal}")
        if fed:
            (d, signal), spans = next(iter(fed.items()))
            raise ValueError(f"node {spans[0][2]} sends {signal} to node {d}, which has no "
                             f"such input")

    # -- traffic ---------------------------------------------------------------------------------

    def signal_width(self, signal: str) -> int:
        """Producer neurons of ``signal``: its producer stages' widths, in stage order (the
        heads' ``scores`` are ``heads * seq_max``, neuron ``h * seq_max + slot``)."""
        return sum(s.width for s in self._producers(signal))

    def _producers(self, signal: str) -> list[BlockStage]:
        srcs = {e.src for e in self.edges if e.signal == signal}
        return [s for s in block_stages(self.shape) if s.name in srcs]

    def _bases(self) -> dict[tuple[str, str], int]:
        """``(signal, stage)`` -> the signal's neuron index of the stage's neuron 0."""
        out = {}
        for signal in SIGNALS:
            base = 0
            for s in self._producers(signal):
                out[signal, s.name] = base
                base += s.width
        return out

    def traffic(self, events: Mapping[str, object]) -> BlockTraffic:
        """Flits, flit-hops, per-router and per-link traffic of per-neuron flit counts.

        Parameters
        ----------
        events : mapping
            Signal (:data:`SIGNALS`: the eight positions and the rest) -> flits each producer
            neuron sends, a sequence of :meth:`signal_width` integers >= 0 (a list or a 1-D
            tensor), over whatever span the caller counts (a token, a sentence). For the
            dense design every code is a flit; for M-TTFS the events outside the dead zone;
            key and value writes one flit per code; raw sums, scores and stream values one
            flit each. Every flit goes to every node of its route (one flit per destination),
            as the mapper's injector sends. A signal left out sends nothing.

        Raises
        ------
        ValueError
            An unknown signal, or counts of the wrong length or not integers >= 0.
        """
        if not isinstance(events, Mapping):
            raise ValueError(f"events must map signals to per-neuron counts, not "
                             f"{_brief(events)}")
        counts = {s: _prefix(self, s, events[s]) for s in SIGNALS if s in events}
        unknown = sorted(set(events) - set(SIGNALS))
        if unknown:
            raise ValueError(f"events has unknown signal {unknown[0]!r}; the signals are "
                             f"{tuple(SIGNALS)}")
        edges = {e.name: [0, 0] for e in self.edges}
        routers = {(x, y): 0 for y in range(self.rows) for x in range(self.cols)}
        links: dict[tuple[tuple[int, int], tuple[int, int]], int] = {}
        for name, flits, path in self._flows(counts):
            edges[name][0] += flits
            edges[name][1] += flits * (len(path) - 1)
            for p in path:
                routers[p] += flits
            for link in zip(path, path[1:], strict=False):
                links[link] = links.get(link, 0) + flits
        return BlockTraffic({k: EdgeTraffic(*v) for k, v in edges.items()}, routers,
                            dict(sorted(links.items())), tuple(counts))

    def _flows(self, counts: Mapping[str, list[int]]):
        """``(edge name, flits, path)`` of every (route, destination) that sends a flit, from
        the prefix sums of the counts."""
        bases = self._bases()
        for n in self.nodes:
            for r in n.routes:
                if r.signal not in counts:
                    continue
                first, pre = bases[r.signal, n.stage] + n.lo, counts[r.signal]
                flits = pre[first + r.hi] - pre[first + r.lo]
                if flits:
                    for d in r.dests:
                        yield (f"{r.signal}:{n.stage}->{self.node(d).stage}", flits,
                               self.path(n.node, d))

    def mean_hops(self) -> dict[str, float]:
        """Mean hops per flit of each signal when every producer neuron sends one flit (each
        to every node of its route), in :data:`SIGNALS` order."""
        t = self.traffic(dense_events(self.shape))
        return {s: _mean(e) for s, e in t.by_signal().items()}

    # -- the document ----------------------------------------------------------------------------

    def document(self) -> dict:
        """The placement as a JSON-able dict (schema ``matterhorn.block_placement/1``):
        shape, mesh, order, nodes (kind, stage, head, part, x, y, neurons and destination
        table with the hops to each destination), edges (with their mean hops per flit when
        every producer neuron sends one) and the mean hops per signal. Deterministic."""
        uniform = self.traffic(dense_events(self.shape))
        per_edge = uniform.edges
        return {
            "schema": SCHEMA,
            "shape": self.shape.as_dict(),
            "mesh": {"rows": self.rows, "cols": self.cols},
            "order": self.order,
            "node_counts": self.kind_counts(),
            "nodes": [{
                "node": n.node, "x": n.x, "y": n.y, "kind": n.kind, "stage": n.stage,
                "head": n.head, "part": n.part, "neurons": [n.lo, n.hi],
                "routes": [{"signal": r.signal, "neurons": [r.lo, r.hi], "offset": r.offset,
                            "write": r.write, "dests": list(r.dests),
                            "hops": [self.hops(n.node, d) for d in r.dests]}
                           for r in n.routes],
            } for n in self.nodes],
            "edges": [{
                "signal": e.signal, "src": e.src, "dst": e.dst, "neurons": [e.lo, e.hi],
                "offset": e.offset, "write": e.write, "flits": per_edge[e.name].flits,
                "flit_hops": per_edge[e.name].flit_hops,
                "mean_hops": _mean(per_edge[e.name]),
            } for e in self.edges],
            "mean_hops": {s: _mean(t) for s, t in uniform.by_signal().items()},
        }


def _mean(t: EdgeTraffic) -> float:
    """Mean hops per flit (0 for no flit)."""
    return t.flit_hops / t.flits if t.flits else 0.0


def _check_cover(spans: list[tuple[int, int, int]], size: int, what: str) -> None:
    """``spans`` ``(lo, hi, producer)`` cover ``0 .. size - 1`` exactly once."""
    at = 0
    for lo, hi, src in sorted(spans):
        if lo < 0 or hi > size:
            raise ValueError(f"{what}: node {src} sends addresses {lo}..{hi - 1}, outside "
                             f"0..{size - 1}")
        if lo < at:
            raise ValueError(f"{what}: addresses {lo}..{min(hi, at) - 1} fed twice (again by "
                             f"node {src})")
        if lo > at:
            raise ValueError(f"{what}: addresses {at}..{lo - 1} of 0..{size - 1} fed by no "
                             f"node")
        at = hi
    if at != size:
        raise ValueError(f"{what}: addresses {at}..{size - 1} of 0..{size - 1} fed by no node")


def _prefix(placement: BlockPlacement, signal: str, counts: object) -> list[int]:
    """Prefix sums of ``signal``'s per-neuron counts (checked)."""
    values = counts.tolist() if hasattr(counts, "tolist") else counts
    width = placement.signal_width(signal)
    if (not isinstance(values, (list, tuple)) or len(values) != width
            or any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in values)):
        raise ValueError(f"events[{signal!r}] must be {width} integers >= 0 (one per producer "
                         f"neuron), not {_brief(counts)}")
    return [0, *accumulate(values)]


def _brief(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def dense_events(shape: BlockShape, tokens: int = 1,
                 seq_len: int | None = None) -> dict[str, list[int]]:
    """Per-neuron counts of every signal (:data:`SIGNALS`) when every value is sent once per
    token, for ``tokens`` tokens of a sequence of ``seq_len`` keys (default ``seq_max``):
    the dense design's flits. A head's scores and probabilities are the first ``seq_len`` key
    slots (the query x key tile sends the sequence's scores only)."""
    check_int("tokens", tokens, 0, 1 << 40)
    seq_len = shape.seq_max if seq_len is None else check_int("seq_len", seq_len, 1,
                                                              shape.seq_max)
    S = shape.seq_max
    row = [tokens] * seq_len + [0] * (S - seq_len)
    out = {s: [tokens] * shape.width(s) for s in SIGNALS}
    out |= {"scores": row * shape.heads, "attn_prob": row * shape.heads}
    return {s: out[s] for s in SIGNALS}


def write_document(placement: BlockPlacement, path: str | Path) -> Path:
    """Write ``placement.document()`` to ``path`` as JSON (atomically, the document's own key
    order, indent 1): the same placement gives the same bytes."""
    path = Path(path)
    write_atomic(path, json.dumps(placement.document(), indent=1) + "\n")
    return path


def read_document(path: str | Path) -> dict:
    """A block placement document, checked against ``toolkit_base/schemas/block_placement.json``
    (a malformed one is one ``ValueError`` line naming the file and the field)."""
    path = Path(path)
    return validate(read_json(path, "block placement"), "block_placement", path.name)
