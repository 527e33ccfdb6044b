"""An encoder block's pieces, described once, and the designs a block runs as.

The one home of the block's shape (docs/rtl_block.md, docs/design.md "Adding a piece kind"):
which pieces a block has, in data-flow order (:data:`PIECES`), what kind each is
(:data:`KINDS`: ``linear``, ``attention``, ``add_norm``), what it takes and makes by position
(positions' codes, the integer tensors between them, or raw sums), the mesh signals that carry
its inputs (:func:`signal`), the spike-encoded positions whose deliveries it counts and the
unit kinds it runs on. Every place that walks a block (the run in ``regression``, the
placement ``rtl_gen.block_map``, the pricing and calibration in ``synth_scripts``, the
report and the command in ``matterhorn``) walks this description and keeps, per piece kind,
one handler in a table keyed by :data:`KINDS`; :func:`check_handlers` names a kind a table
lacks. ``tests/test_block_pieces.py`` adds a kind to a copy and lists the tables that fail.

==============  ===========  =========================  ==============================  ========
piece           kind         takes                      makes                           node
==============  ===========  =========================  ==============================  ========
query           linear       ``q_proj_in`` codes        ``query`` codes                 q_proj
key             linear       ``k_proj_in`` codes        ``key`` codes (written)         k_proj
value           linear       ``v_proj_in`` codes        ``value`` codes (written)       v_proj
attention       attention    query, key, value codes    ``attn_out_in`` codes           per head
attn_out        linear       ``attn_out_in`` codes      raw sums ``attn_sum``           attn_out
norm_attn       add_norm     stream ``r_in``, sums      ``ffn_expand_in`` codes, ``r1``  norm_attn
ffn_expand      linear       ``ffn_expand_in`` codes    ``ffn_contract_in`` codes       ...
ffn_contract    linear       ``ffn_contract_in`` codes  raw sums ``ffn_sum``            ...
norm_ffn        add_norm     stream ``r1``, sums        the next block's codes, ``r_out``  ...
==============  ===========  =========================  ==============================  ========

:class:`Design` is one design a block (or a compared tile) runs as: its encoding and radius,
the masks it hands out (:meth:`Design.mask`) and its name (``"mttfs-k1"``), parsed in one
place (:meth:`Design.parse`).

Torch-free, like the rest of the specification's names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "ADD_NORM",
    "ATTENTION",
    "BLOCK_INPUTS",
    "DESIGNS",
    "ENCODINGS",
    "KINDS",
    "LINEAR",
    "NEXT_BLOCK",
    "PIECES",
    "PIECE_NAMES",
    "TILE_NEURONS",
    "Design",
    "Kind",
    "Piece",
    "check_handlers",
    "check_wiring",
    "consumers",
    "count_deliveries",
    "counted_positions",
    "ffn_wide",
    "of_kind",
    "piece",
    "producer",
    "signal",
]

#: Output neurons of one tile of a real model's layer on the mesh, a block's or one layer's
#: (``matterhorn block``, ``matterhorn layer``): MiniLM's 384 = 8 x 48 (docs/rtl_system.md,
#: "The whole Q-projection layer", for the partitions measured; docs/rtl_block.md).
TILE_NEURONS = 48

LINEAR, ATTENTION, ADD_NORM = "linear", "attention", "add_norm"


@dataclass(frozen=True)
class Kind:
    """A kind of piece: its name, the unit kinds a piece of it runs on (as the pricing's
    per-window samples name them), its node kinds on the block's mesh when it has several a
    head (``per_head``; otherwise one node kind, the piece's :attr:`Piece.node`), and what it
    is in hardware."""

    name: str
    units: tuple[str, ...]
    what: str
    per_head: tuple[str, ...] = ()


#: The kinds of piece, and what each is.
KINDS = {
    LINEAR: Kind(LINEAR, ("tile",),
                 "a linear layer in neuron tiles of at most TILE_NEURONS neurons (the dense "
                 "design: dense tiles), codes in, codes or raw sums out"),
    ATTENTION: Kind(ATTENTION, ("qk", "sm", "pv"),
                    "the attention path: per head a query x key tile (qk), a softmax node (sm) "
                    "and a probability x value tile (pv), keys and values written at run time",
                    per_head=("qk", "softmax", "pv")),
    ADD_NORM: Kind(ADD_NORM, ("add_norm",),
                   "the residual add + LayerNorm unit: the stream and a layer's raw sums in, "
                   "the new stream and the codes it walks out"),
}

#: What a block takes from the block before it (or the host): the three stream-fed positions'
#: codes and the residual stream.
BLOCK_INPUTS = ("q_proj_in", "k_proj_in", "v_proj_in", "r_in")
#: What a block's last piece makes for the next block, as the next block's input it is.
NEXT_BLOCK = {"q_proj_in": "q_proj_in", "k_proj_in": "k_proj_in", "v_proj_in": "v_proj_in",
              "r_out": "r_in"}
#: The mesh signal of a residual stream (every other value travels under its own name).
_STREAM_SIGNALS = {"r_in": "residual_in", "r1": "residual_mid", "r_out": "residual_in"}


def signal(value: str) -> str:
    """The mesh signal (``rtl_gen.block_map.SIGNALS``) that carries ``value``: a stream is
    ``residual_in`` or ``residual_mid``, a position's codes or a raw sum its own name."""
    return _STREAM_SIGNALS.get(value, value)


@dataclass(frozen=True)
class Piece:
    """One piece of the block.

    ``inputs`` and ``outputs`` by position: a linear piece takes one position's codes and
    makes codes (of the position it feeds) or, with ``raw_sums``, the integer sums a residual
    add takes (``networks.integer.TAPPED``); the attention piece takes the query, key and
    value codes and makes the ``attn_out_in`` codes; an add+LayerNorm piece takes the stream
    and a layer's sums and makes the codes it walks, then the new stream (``next_block``: the
    codes are the next block's stream-fed positions'). ``counts``: the spike-encoded
    positions whose deliveries the piece counts and where (``"in"``: its tiles' input
    counter; ``"qk"``/``"pv"``: a node of each head of the attention path). ``node``: its node
    kind on the block's mesh (a kind with per-head nodes has none). ``units``: the golden
    block's units it runs (an add+LayerNorm piece's residual add and LayerNorm, attributes of
    ``networks.integer.IntegerBlock``)."""

    name: str
    kind: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    node: str | None = None
    raw_sums: bool = False
    counts: tuple[tuple[str, str], ...] = ()
    units: tuple[str, ...] = ()
    next_block: bool = False
    #: Its outputs are the FFN's width (every other value of a block is the hidden width).
    ffn_wide: bool = False
    what: str = ""

    @property
    def signals(self) -> tuple[str, ...]:
        """The mesh signals that carry its inputs, by position."""
        return tuple(signal(v) for v in self.inputs)

    @property
    def nodes(self) -> tuple[str, ...]:
        """Its node kinds on the block's mesh (per head for the attention path)."""
        return KINDS[self.kind].per_head or (self.node,)


def _linear(name: str, p_in: str, out: str, node: str, what: str, *,
            raw_sums: bool = False, ffn_wide: bool = False) -> Piece:
    return Piece(name, LINEAR, (p_in,), (out,), node=node, raw_sums=raw_sums,
                 counts=((p_in, "in"),), ffn_wide=ffn_wide, what=what)


#: The pieces of a block, in data-flow order.
PIECES = (
    _linear("query", "q_proj_in", "query", "q_proj",
            "Q-projection neuron tile: q_proj_in events in, query codes out"),
    _linear("key", "k_proj_in", "key", "k_proj",
            "K-projection neuron tile: k_proj_in events in, key codes out"),
    _linear("value", "v_proj_in", "value", "v_proj",
            "V-projection neuron tile: v_proj_in events in, value codes out"),
    Piece("attention", ATTENTION, ("query", "key", "value"), ("attn_out_in",),
          counts=(("query", "qk"), ("attn_prob", "pv")),
          what="the attention path (rtl_gen.attention): keys and values written at run time"),
    _linear("attn_out", "attn_out_in", "attn_sum", "attn_out",
            "attention-output neuron tile: attn_out_in events in, raw sums out", raw_sums=True),
    Piece("norm_attn", ADD_NORM, ("r_in", "attn_sum"), ("ffn_expand_in", "r1"),
          node="norm_attn", units=("add_attn", "norm_attn"),
          what="residual add + LayerNorm: the block's stream and the attention sums in, "
               "ffn_expand_in codes and the next stream out (rtl_gen.add_norm.AddNorm)"),
    _linear("ffn_expand", "ffn_expand_in", "ffn_contract_in", "ffn_expand",
            "FFN-expand neuron tile (GELU folded in its table): ffn_expand_in events in, "
            "ffn_contract_in codes out", ffn_wide=True),
    _linear("ffn_contract", "ffn_contract_in", "ffn_sum", "ffn_contract",
            "FFN-contract neuron tile: ffn_contract_in events in, raw sums out", raw_sums=True),
    Piece("norm_ffn", ADD_NORM, ("r1", "ffn_sum"), ("q_proj_in", "k_proj_in", "v_proj_in",
                                                   "r_out"),
          node="norm_ffn", units=("add_ffn", "norm_ffn"), next_block=True,
          what="residual add + LayerNorm: the stream and the FFN sums in, the next block's "
               "q/k/v_proj_in codes and stream out (rtl_gen.add_norm.AddNorm)"),
)
#: The pieces' names, in data-flow order.
PIECE_NAMES = tuple(p.name for p in PIECES)


def piece(name: str, pieces: Iterable[Piece] = PIECES) -> Piece:
    """The piece called ``name`` (``KeyError`` naming the pieces if none)."""
    for p in pieces:
        if p.name == name:
            return p
    raise KeyError(f"no piece {name!r}; the pieces are {', '.join(p.name for p in pieces)}")


def of_kind(kind: str, pieces: Iterable[Piece] = PIECES) -> tuple[Piece, ...]:
    """The pieces of ``kind``, in data-flow order."""
    return tuple(p for p in pieces if p.kind == kind)


def producer(value: str, pieces: Iterable[Piece] = PIECES) -> Piece | None:
    """The piece that makes ``value`` (None for one of :data:`BLOCK_INPUTS`: the block before
    makes it, its last piece for this block)."""
    return next((p for p in pieces if value in p.outputs and not p.next_block), None)


def consumers(value: str, pieces: Iterable[Piece] = PIECES) -> tuple[Piece, ...]:
    """The pieces that take ``value``, in data-flow order."""
    return tuple(p for p in pieces if value in p.inputs)


def ffn_wide(value: str, pieces: Iterable[Piece] = PIECES) -> bool:
    """``value`` is the FFN's width (made by a piece whose outputs are), not the hidden
    width."""
    made_by = producer(value, pieces)
    return made_by is not None and made_by.ffn_wide


def counted_positions(pieces: Iterable[Piece] = PIECES) -> dict[str, tuple[str, str]]:
    """Spike-encoded position -> ``(piece, where)``: the piece that counts its deliveries and
    where (:attr:`Piece.counts`), in data-flow order."""
    return {pos: (p.name, where) for p in pieces for pos, where in p.counts}


def count_deliveries(counters: Mapping[str, Mapping[str, int]], tiles: Mapping[str, int],
                     dense: bool, pieces: Iterable[Piece] = PIECES) -> dict[str, int]:
    """Events (codes for the dense design) delivered at each counted position, from each
    piece's counters summed over a run (``counters``: piece -> counter name -> count;
    ``tiles``: piece -> the tiles a linear piece ran on). A linear piece's tiles each take
    every input of the layer, so its input counter is divided by them; the attention path's
    count a head each (``cnt_<node>_<events_in|codes_in>_h<h>``), summed."""
    name = "codes_in" if dense else "events_in"
    out = {}
    for position, (p, where) in counted_positions(pieces).items():
        c = counters[p]
        if where == "in":  # every tile of the layer takes every input: count one
            out[position] = c[name] // tiles[p]
        else:
            prefix = f"cnt_{where}_{name}_h"
            out[position] = sum(v for n, v in c.items() if n.startswith(prefix))
    return out


def check_wiring(pieces: Iterable[Piece] = PIECES) -> tuple[Piece, ...]:
    """``pieces`` checked as a block: known kinds, unique names, a linear piece one input and
    one output, an add+LayerNorm piece its two units, and every input made by an earlier piece
    (or one of :data:`BLOCK_INPUTS`); the block's last piece makes the next block's inputs
    (:data:`NEXT_BLOCK`). Raises ``ValueError`` naming the first fault."""
    pieces = tuple(pieces)
    made = set(BLOCK_INPUTS)
    names = set()
    for p in pieces:
        if p.kind not in KINDS:
            raise ValueError(f"piece {p.name}: kind {p.kind!r} is not one of "
                             f"{', '.join(KINDS)}")
        if p.name in names:
            raise ValueError(f"piece {p.name} is described twice")
        names.add(p.name)
        if p.kind == LINEAR and (len(p.inputs), len(p.outputs)) != (1, 1):
            raise ValueError(f"piece {p.name}: a linear piece takes one input and makes one "
                             "output")
        if p.kind == ADD_NORM and len(p.units) != 2:
            raise ValueError(f"piece {p.name}: an add+LayerNorm piece names its residual add "
                             "and its LayerNorm")
        for v in p.inputs:
            if v not in made:
                raise ValueError(f"piece {p.name} takes {v}, which no piece before it makes")
        made.update(p.outputs)
    nxt = [p for p in pieces if p.next_block]
    if len(nxt) != 1 or nxt[0] is not pieces[-1] or set(nxt[0].outputs) != set(NEXT_BLOCK):
        raise ValueError("the block's last piece, and it alone, makes the next block's inputs "
                         f"({', '.join(NEXT_BLOCK)})")
    return pieces


def check_handlers(table: Mapping[str, object], where: str, pieces: Iterable[Piece]) -> None:
    """Raise ``NotImplementedError`` naming ``where`` when ``table`` (piece kind -> handler)
    has no entry for a kind of ``pieces`` (the pieces the caller walks: each walker checks
    its table before it starts)."""
    missing = sorted({p.kind for p in pieces} - set(table))
    if missing:
        raise NotImplementedError(f"{where} has no handler for piece kind "
                                  f"{', '.join(map(repr, missing))}")


# -- the designs -------------------------------------------------------------------------------

#: The designs a block runs as (and the comparison in gates compares): the dense INT4 design,
#: standard TTFS, M-TTFS at k = 0, 1, 2.
DESIGNS = ("dense", "ttfs", "mttfs-k0", "mttfs-k1", "mttfs-k2")
#: The encodings of a design.
ENCODINGS = ("dense", "ttfs", "mttfs")


@dataclass(frozen=True)
class Design:
    """One design: its ``encoding`` (``dense``, ``ttfs`` or ``mttfs``) and, for M-TTFS, its
    dead-zone radius ``k``."""

    encoding: str
    k: int | None = None

    def __post_init__(self) -> None:
        if self.encoding not in ENCODINGS:
            raise ValueError(f"design encoding must be one of {', '.join(ENCODINGS)}, not "
                             f"{self.encoding!r}")
        if (self.k is None) != (self.encoding != "mttfs") or (
                self.k is not None and (isinstance(self.k, bool) or not isinstance(self.k, int)
                                        or self.k < 0)):
            raise ValueError(f"the {self.encoding} design takes "
                             + ("a radius k >= 0" if self.encoding == "mttfs" else "no radius")
                             + f", not k={self.k!r}")

    @classmethod
    def parse(cls, name: object, designs: Iterable[str] = DESIGNS) -> Design:
        """The design called ``name`` (``"dense"``, ``"ttfs"``, ``"mttfs-k<k>"``), one of
        ``designs``."""
        designs = tuple(designs)
        if name not in designs:
            raise ValueError(f"design must be one of {', '.join(designs)}, not {name!r}")
        if name.startswith("mttfs-k"):
            return cls("mttfs", int(name.removeprefix("mttfs-k")))
        return cls(name)

    @property
    def name(self) -> str:
        """``dense``, ``ttfs`` or ``mttfs-k<k>``."""
        return self.encoding if self.k is None else f"mttfs-k{self.k}"

    @property
    def dense(self) -> bool:
        return self.encoding == "dense"

    def mask(self, calibrated):
        """This design's mask (:class:`golden_models.mask.Mask`) at a position whose calibrated
        mask is ``calibrated``: TTFS's silent lowest level (``ttfs_mask``); M-TTFS's radius
        ``k`` around the calibrated silent centre; the dense design's radius 0 around it
        (lossless: the dense design sends every code whatever its mask). A new mask: nothing
        is changed."""
        from golden_models.mask import Mask, ttfs_mask

        if self.encoding == "ttfs":
            return ttfs_mask(calibrated.space)
        return Mask(calibrated.space, calibrated.i_max, self.k or 0)
