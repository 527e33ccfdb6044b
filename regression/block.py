"""A whole encoder block through the generated hardware, piece by piece, bit-exact.

:func:`run_block_pieces` takes sentences captured at one block of an integer-mode QNN
(:func:`networks.block.capture_block`) and runs them through the block's hardware in the
Amaranth simulator, one piece after the other, each fed with what the piece before it
produced (never with the golden values):

================  ===================================================  ======================
piece             hardware                                             checked against
================  ===================================================  ======================
query, key,       a neuron tile per projection (dense: a dense tile)   the projection's codes
value
attention         the attention path (``rtl_gen.attention``): keys     ``attn_out_in`` codes
                  and values written at run time, the softmax unit
attn_out          a tile in raw-sum mode                               the residual add's sums
norm_attn         the residual-add + LayerNorm unit                    stream ``r1``, the
                                                                       ``ffn_expand_in`` codes
ffn_expand        a tile, GELU folded into its table                   ``ffn_contract_in``
ffn_contract      a tile in raw-sum mode                               the residual add's sums
norm_ffn          the residual-add + LayerNorm unit                    the output stream, the
                                                                       next block's codes
================  ===================================================  ======================

The spiking designs send events through each position's mask (the tiles' and the attention
path's own); the dense design sends every code. Each piece's every output is compared; a piece's
counters and clocks are summed over the sentences. The pieces run one after the other here,
each on its own generated component; the placement of all of them on one mesh is
:mod:`rtl_gen.block_map`'s (docs/rtl_block.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import Counter
from dataclasses import dataclass, field

import torch

from golden_models import decode_events, encode_events
from regression.layer import DEFAULT_TILE_NEURONS

__all__ = ["DESIGNS", "PIECES", "BlockRun", "PieceRun", "attention_config", "check_design",
           "design_masks", "flit_counts", "run_block", "run_block_pieces",
           "seq_max_of"]

#: Output neurons of one tile (the mesh's node size, as a whole layer's: docs/rtl_block.md).
TILE_NEURONS = DEFAULT_TILE_NEURONS
#: The pieces of a block, in data-flow order.
PIECES = ("query", "key", "value", "attention", "attn_out", "norm_attn", "ffn_expand",
          "ffn_contract", "norm_ffn")


def seq_max_of(cfg) -> int:
    """The generated sequence length of a model's block (its key slots per head): the
    energy workload's sequence, the paper's 128 capped by the model's positions
    (:func:`networks.hf_folder.dims_of`)."""
    from networks.hf_folder import dims_of

    return dims_of(cfg)["seq"]


@dataclass
class PieceRun:
    """One piece over every sentence: values compared, mismatches, summed counters, clocks."""

    piece: str
    checked: int = 0
    mismatches: int = 0
    counters: Counter = field(default_factory=Counter)
    cycles: int = 0
    first_mismatch: str | None = None
    #: Tiles a linear piece is split into (each receives every input of the layer).
    tiles: int = 1

    def compare(self, what: str, got, want, *, events: bool = False) -> None:
        """Count ``got`` against ``want``: values position by position, or (``events``) the
        events missing or extra, plus one when the same events come in another order."""
        got, want = list(got), list(want)
        self.checked += max(len(got), len(want))
        if events:
            extra, missing = Counter(got) - Counter(want), Counter(want) - Counter(got)
            bad = sum(extra.values()) + sum(missing.values())
            bad = bad or int(got != want)
        else:
            bad = (sum(1 for a, b in zip(got, want, strict=False) if a != b)
                   + abs(len(got) - len(want)))
        if bad and self.first_mismatch is None:
            self.first_mismatch = f"{what}: got {got[:8]}..., want {want[:8]}..."
        self.mismatches += bad


def _tile_config(layer, *, raw_sums: bool):
    from rtl_gen.mapper import config_for_chain

    cfg = config_for_chain([layer], tile_neurons=layer.n_out, mesh_rows=1, mesh_cols=1)
    return dataclasses.replace(cfg, raw_sums=raw_sums)


def tile_slices(layer, tile_neurons: int) -> list[tuple[int, int, object]]:
    """``layer``'s output neurons in tiles of at most ``tile_neurons``: ``(lo, hi, layer of
    neurons lo..hi-1)`` (the mapper's partition, without the padding a mesh node needs)."""
    from golden_models import IntegerLayer

    out = []
    for lo in range(0, layer.n_out, tile_neurons):
        hi = min(lo + tile_neurons, layer.n_out)
        out.append((lo, hi, IntegerLayer(layer.weights[:, lo:hi].contiguous(), layer.weight_bits,
                                         layer.init[lo:hi].clone(), layer.theta[lo:hi].clone(),
                                         layer.in_mask, layer.out_mask)))
    return out


def _linear(run: PieceRun, layer, inputs: torch.Tensor, want: torch.Tensor, *, dense: bool,
            raw_sums: bool, tile_neurons: int) -> torch.Tensor:
    """Tokens ``inputs [S, n_in]`` (codes the layer consumes) through the layer's tiles of at
    most ``tile_neurons`` neurons; returns their outputs ``[S, n_out]``: codes (their
    projection through the output mask for the spiking tile, the codes themselves for the
    dense one) or raw sums. ``want``: the golden codes before the mask, or the golden sums."""
    slices = tile_slices(layer, tile_neurons)
    run.tiles = len(slices)
    parts = [_tile(run, part, inputs, want[:, lo:hi], dense=dense, raw_sums=raw_sums)
             for lo, hi, part in slices]
    return torch.cat(parts, dim=1)


def _tile(run: PieceRun, layer, inputs: torch.Tensor, want: torch.Tensor, *, dense: bool,
          raw_sums: bool) -> torch.Tensor:
    """One tile's share of :func:`_linear`."""
    from rtl_gen import registry
    from rtl_gen.dense import dense_counters, dense_load_beats
    from rtl_gen.driver import TileDriver, Window
    from rtl_gen.tile import load_beats

    cfg = _tile_config(layer, raw_sums=raw_sums)
    block = registry.block("dense_tile" if dense else "tile")
    tmask = (1 << cfg.time_width) - 1
    windows = []
    for n, q in enumerate(inputs):
        if dense:
            beats = [{"code": int(c) & tmask, "last": 0} for c in q.tolist()]
            beats.append({"code": 0, "last": 1})
        else:
            index, time = encode_events(q, layer.in_mask)
            beats = [{"addr": int(a), "tau": int(t), "last": 0}
                     for a, t in zip(index.tolist(), time.tolist(), strict=True)]
            beats.append({"addr": 0, "tau": 0, "last": 1})
        # the image is loaded once, before the first window
        image = None if n else (dense_load_beats if dense else load_beats)(cfg, layer)
        windows.append(Window(image, beats))
    names = dense_counters(cfg) if dense else cfg.tile_counters
    runs = TileDriver(block.build(cfg), windows, names).run()
    out = []
    for i, r in enumerate(runs):
        beats = r.output[:-1]
        run.counters.update(r.counters)
        run.cycles += r.cycles["last_out"] - r.cycles["first_in"] + 1
        if raw_sums:
            got = [0] * layer.n_out
            for b in beats:
                got[b["addr"]] = b["sum"]
            run.compare(f"{run.piece} token {i} sums", got, want[i].tolist())
        elif dense:
            got = _dense_codes(cfg, beats, layer)
            run.compare(f"{run.piece} token {i} codes", got, want[i].tolist())
        else:
            ev = [(b["addr"], b["t"]) for b in beats]
            gi, gt = encode_events(want[i], layer.out_mask)
            run.compare(f"{run.piece} token {i} events", ev,
                        list(zip(gi.tolist(), gt.tolist(), strict=True)), events=True)
            got = decode_events(torch.tensor([a for a, _ in ev], dtype=torch.int64),
                                torch.tensor([t for _, t in ev], dtype=torch.int64),
                                (layer.n_out,), layer.out_mask).tolist()
        out.append(got)
    return torch.tensor(out, dtype=torch.int64)


def _dense_codes(cfg, beats, layer) -> list[int]:
    """The codes of a dense tile's output beats in the layer's output code space: the beat
    carries ``c - tau`` in the tile's (input) family, so ``tau`` and then the code follow."""
    from golden_models import CodeSpace
    from rtl_gen.dense import unpack_codes

    c_tile, c_out = CodeSpace(cfg.T, cfg.family).c, layer.out_mask.space.c
    codes = [0] * layer.n_out
    for b in beats:
        for j, q in unpack_codes(cfg, b["addr"], b["codes"], layer.n_out):
            codes[j] = c_out - (c_tile - q)
    return codes


def attention_config(qnn, block: int = 0):
    """The attention path's :class:`rtl_gen.attn_params.AttentionConfig` of block ``block``:
    :func:`seq_max_of` key slots a head, the model's positions a softmax row."""
    from rtl_gen.attn_params import AttentionConfig

    layer = qnn.layers[block]
    return AttentionConfig(heads=layer.cfg.num_attention_heads, head_dim=layer.cfg.head_dim,
                           seq_max=seq_max_of(layer.cfg), T=layer.points["attn_prob"].space.T,
                           frac_bits=qnn.integer.exp_frac_bits,
                           row_max=layer.cfg.max_position_embeddings)


def _attention(run: PieceRun, qnn, block: int, query, keys, values, valid, want, *,
               dense: bool) -> torch.Tensor:
    """One sequence through the attention path; returns its ``attn_out_in`` codes (projected
    through the mask on the spiking path)."""
    from networks.attention import attention_path
    from rtl_gen.attention import simulate_attention

    path = attention_path(qnn.layers[block])
    cfg = attention_config(qnn, block)
    [windows] = simulate_attention(cfg, path, [(query, keys, values, valid)], dense=dense)
    out = []
    width = query.shape[1]
    for i, w in enumerate(windows):
        # the write counters count a sequence (they clear when it starts), the others a window
        run.counters.update({n: v for n, v in w.counters.items() if "_writes" not in n})
        run.cycles += w.cycles
        if dense:
            got = [0] * width
            for a, c in w.events:
                got[a] = c
            run.compare(f"attention token {i} codes", got, want[i].tolist())
        else:
            gi, gt = encode_events(want[i], path.ctx_mask)
            run.compare(f"attention token {i} events", w.events,
                        list(zip(gi.tolist(), gt.tolist(), strict=True)), events=True)
            got = decode_events(torch.tensor([a for a, _ in w.events], dtype=torch.int64),
                                torch.tensor([t for _, t in w.events], dtype=torch.int64),
                                (width,), path.ctx_mask).tolist()
        out.append(got)
    run.counters.update({n: v for n, v in windows[-1].counters.items() if "_writes" in n})
    return torch.tensor(out, dtype=torch.int64)


def _norm(run: PieceRun, cfg, add, norm, thetas, r, sums, want_r, want_codes):
    """Rows ``(r, sums)`` through the residual-add + LayerNorm unit; checks the new stream and
    the codes it walks (``want_codes``: one ``[S, hidden]`` per table) and returns the stream
    ``[S, hidden]`` and those codes."""
    from rtl_gen.add_norm import load_beats, simulate_add_norm

    rows = [(r[i].tolist(), sums[i].tolist()) for i in range(r.shape[0])]
    out = simulate_add_norm(cfg, rows, load_beats(cfg, add, norm, thetas))
    for i, row in enumerate(out):
        run.cycles += row.clocks
        run.compare(f"{run.piece} token {i} stream", row.r, want_r[i].tolist())
        for p, codes in enumerate(want_codes):
            run.compare(f"{run.piece} token {i} codes {p}", row.codes[p], codes[i].tolist())
    run.counters.update({"rows": len(out), "channels": len(out) * r.shape[1]})
    codes = [torch.tensor([row.codes[p] for row in out], dtype=torch.int64)
             for p in range(len(want_codes))]
    return torch.tensor([row.r for row in out], dtype=torch.int64), codes


def run_block_pieces(qnn, sequences, *, block: int = 0, dense: bool = False,
                     tile_neurons: int = TILE_NEURONS) -> list[PieceRun]:
    """Run captured sequences (:class:`networks.block.BlockSequence`, captured with the masks
    the design uses: radius ``k``, TTFS, or ``k = 0`` for the dense design) through the
    block's hardware pieces, each linear layer in tiles of at most ``tile_neurons`` neurons;
    one :class:`PieceRun` per piece of :data:`PIECES`."""
    from networks.block import block_layers
    from regression.units import minilm_config

    layer = qnn.layers[block]
    blk, layers = layer.int_block, block_layers(layer)
    nxt = qnn.layers[block + 1].int_block if block + 1 < len(qnn.layers) else None
    unit_cfg = minilm_config(qnn)
    runs = {p: PieceRun(p) for p in PIECES}
    for seq in sequences:
        c, t = seq.codes, seq.tensors
        proj = {name: _linear(runs[name], layers[name], c[p_in], c[name], dense=dense,
                              raw_sums=False, tile_neurons=tile_neurons)
                for name, p_in in (("query", "q_proj_in"), ("key", "k_proj_in"),
                                   ("value", "v_proj_in"))}
        # keys and values are written as codes, every code whatever the design
        ctx = _attention(runs["attention"], qnn, block, proj["query"], proj["key"],
                         proj["value"], seq.valid, c["attn_out_in"], dense=dense)
        s1 = _linear(runs["attn_out"], layers["attn_out"], ctx, t["attn_sum"], dense=dense,
                     raw_sums=True, tile_neurons=tile_neurons)
        r1, [cf] = _norm(runs["norm_attn"], unit_cfg, blk.add_attn, blk.norm_attn,
                         [blk.encoders["ffn_expand_in"]], t["r_in"], s1, t["r1"],
                         [c["ffn_expand_in"]])
        mid = _linear(runs["ffn_expand"], layers["ffn_expand"], cf, c["ffn_contract_in"],
                      dense=dense, raw_sums=False, tile_neurons=tile_neurons)
        s2 = _linear(runs["ffn_contract"], layers["ffn_contract"], mid, t["ffn_sum"],
                     dense=dense, raw_sums=True, tile_neurons=tile_neurons)
        feeds = ("q_proj_in", "k_proj_in", "v_proj_in")
        _norm(runs["norm_ffn"], unit_cfg, blk.add_ffn, blk.norm_ffn,
              [nxt.encoders[p] for p in feeds] if nxt else [], r1, s2, t["r_out"],
              [seq.next_codes[p] for p in feeds] if nxt else [])
    return [runs[p] for p in PIECES]


# -- a design over sentences ---------------------------------------------------------------------

#: The designs a block runs as: the dense INT4 design, standard TTFS, M-TTFS at k = 0, 1, 2.
DESIGNS = ("dense", "ttfs", "mttfs-k0", "mttfs-k1", "mttfs-k2")
#: Where each position's deliveries are counted: the piece that consumes it and its counter
#: (per head for the attention path's, summed).
_CONSUMER = {
    "q_proj_in": ("query", "in"), "k_proj_in": ("key", "in"), "v_proj_in": ("value", "in"),
    "query": ("attention", "qk"), "attn_prob": ("attention", "pv"),
    "attn_out_in": ("attn_out", "in"), "ffn_expand_in": ("ffn_expand", "in"),
    "ffn_contract_in": ("ffn_contract", "in"),
}


def check_design(design: object) -> str:
    if design not in DESIGNS:
        raise ValueError(f"design must be one of {', '.join(DESIGNS)}, not {design!r}")
    return design


@contextlib.contextmanager
def design_masks(qnn, design: str):
    """Set every spike-encoded position's mask for ``design`` (the calibrated silent centre at
    radius ``k`` for M-TTFS and for the dense design's ``k = 0`` values; the lowest level for
    TTFS), and put the calibrated masks back after."""
    from golden_models import Mask
    from golden_models.mask import ttfs_mask

    check_design(design)
    points = qnn.spike_points()
    saved = [p.mask for p in points]
    if any(m is None for m in saved):
        raise ValueError("masks are not calibrated; convert the model with networks.ptq")
    try:
        for p, m in zip(points, saved, strict=True):
            if design == "ttfs":
                p.mask = ttfs_mask(p.space)
            else:
                k = 0 if design == "dense" else int(design.rsplit("k", 1)[1])
                p.mask = Mask(p.space, m.i_max, k)
        yield qnn
    finally:
        for p, m in zip(points, saved, strict=True):
            p.mask = m


@dataclass
class BlockRun:
    """One design over sentences: its pieces, the deliveries counted per position (events;
    codes for the dense design), the values each position holds, the tokens, and the flits
    each producer neuron sent per signal (:func:`flit_counts`, for the mesh's traffic)."""

    design: str
    pieces: list[PieceRun]
    deliveries: dict[str, int]
    values: dict[str, int]
    tokens: int
    T: int
    flits: dict[str, list[int]] = field(default_factory=dict)

    @property
    def mismatches(self) -> int:
        return sum(p.mismatches for p in self.pieces)

    @property
    def cycles(self) -> int:
        return sum(p.cycles for p in self.pieces)

    def rates(self) -> dict[str, float]:
        """Deliveries per value per time step at each position (the paper's spike rate)."""
        return {p: self.deliveries[p] / (self.values[p] * self.T) for p in self.deliveries}

    def dump(self) -> dict:
        """Everything of the run as plain JSON data: :meth:`load` rebuilds it, equal."""
        # not dataclasses.asdict: it rebuilds a Counter from its (name, count) pairs
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["pieces"] = [{**{f.name: getattr(p, f.name) for f in dataclasses.fields(p)},
                          "counters": dict(p.counters)} for p in self.pieces]
        return out

    @classmethod
    def load(cls, data: dict) -> BlockRun:
        """The run :meth:`dump` gave ``data`` of."""
        pieces = [PieceRun(**{**p, "counters": Counter(p["counters"])}) for p in data["pieces"]]
        return cls(**{**data, "pieces": pieces})


def _deliveries(pieces: dict[str, PieceRun], dense: bool) -> dict[str, int]:
    name = "codes_in" if dense else "events_in"
    out = {}
    for position, (piece, where) in _CONSUMER.items():
        counters = pieces[piece].counters
        if where == "in":  # every tile of the layer takes every input: count one
            out[position] = counters[name] // pieces[piece].tiles
        else:
            prefix = f"cnt_{where}_{name}_h"
            out[position] = sum(v for n, v in counters.items() if n.startswith(prefix))
    return out


def flit_counts(qnn, sequences, *, block: int = 0, dense: bool, seq_max: int
                ) -> dict[str, list[int]]:
    """Flits each producer neuron sends per signal of :data:`rtl_gen.block_map.SIGNALS` over
    ``sequences`` (captured with the design's masks, which must still be set): a position's
    events outside its mask (every code for the dense design), one flit per key and value
    code written, per raw score, raw sum and stream value. ``attn_prob`` and ``scores`` are
    counted per ``head * seq_max + key slot``."""
    layer = qnn.layers[block]
    hidden, heads = layer.cfg.hidden_size, layer.cfg.num_attention_heads
    out: dict[str, torch.Tensor] = {}

    def add(signal: str, counts: torch.Tensor) -> None:
        out[signal] = out.get(signal, 0) + counts.to(torch.int64)

    for seq in sequences:
        S = seq.length
        for p in ("q_proj_in", "k_proj_in", "v_proj_in", "query", "attn_out_in",
                  "ffn_expand_in", "ffn_contract_in", "attn_prob"):
            q, mask = seq.codes[p], layer.points[p].mask
            sent = (torch.ones_like(q, dtype=torch.bool) if dense
                    else mask.transmitted(mask.space.c - q))
            if p == "attn_prob":  # [heads, S, S] -> per (head, key slot)
                per = torch.zeros(heads, seq_max, dtype=torch.int64)
                per[:, :S] = sent.sum(1)
                add(p, per.reshape(-1))
            else:
                add(p, sent.sum(0))
        per_value = torch.full((hidden,), S, dtype=torch.int64)
        for signal in ("key", "value", "attn_sum", "ffn_sum", "residual_in", "residual_mid"):
            add(signal, per_value)
        scores = torch.zeros(heads, seq_max, dtype=torch.int64)
        scores[:, :S] = S  # every query token sends a score per key slot of the sequence
        add("scores", scores.reshape(-1))
    return {k: v.tolist() for k, v in out.items()}


def run_block(qnn, tokenizer, sentences, design: str, *, block: int = 0,
              tile_neurons: int = TILE_NEURONS, sim: str = "amaranth", root=None,
              told=None) -> BlockRun:
    """``sentences`` through block ``block``'s hardware pieces as ``design``
    (:data:`DESIGNS`), each sentence alone, in tiles of at most ``tile_neurons`` neurons, on
    ``sim``: the Amaranth simulator (:func:`run_block_pieces`), or ``"verilator"`` /
    ``"icarus"``, the generated Verilog in the fast harness
    (:func:`regression.block_fast.run_block_fast`, its Verilog, builds and runs under
    ``root``; ``told`` hears of each piece as it ends)."""
    from networks.block import capture_block
    from regression.block_fast import DEFAULT_ROOT, RTL_SIMS, run_block_fast

    if sim not in RTL_SIMS:
        raise ValueError(f"sim must be one of {', '.join(RTL_SIMS)}, not {sim!r}")
    with design_masks(qnn, design):
        seqs = capture_block(qnn, tokenizer, sentences, block=block)
        if sim == "amaranth":
            pieces = run_block_pieces(qnn, seqs, block=block, dense=design == "dense",
                                      tile_neurons=tile_neurons)
        else:
            pieces = run_block_fast(qnn, seqs, block=block, dense=design == "dense",
                                    tile_neurons=tile_neurons, sim=sim,
                                    root=DEFAULT_ROOT if root is None else root, name=design,
                                    told=told)
        flits = flit_counts(qnn, seqs, block=block, dense=design == "dense",
                            seq_max=seq_max_of(qnn.layers[block].cfg))
    values = Counter()
    for s in seqs:
        values.update({p: int(s.codes[p].numel()) for p in _CONSUMER})
    layer = qnn.layers[block]
    return BlockRun(design, pieces, _deliveries({p.piece: p for p in pieces}, design == "dense"),
                    dict(values), sum(s.length for s in seqs),
                    layer.points["attn_prob"].space.T, flits)
