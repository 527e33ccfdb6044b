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

The pieces are :data:`golden_models.block_pieces.PIECES`, walked in order; each kind of
piece has its runner here (:data:`RUNNERS`). The spiking designs send events through each
position's mask (the tiles' and the attention path's own); the dense design sends every code.
Each piece's every output is compared; a piece's counters and clocks are summed over the
sentences. The pieces run one after the other here, each on its own generated component; the
placement of all of them on one mesh is
:mod:`rtl_gen.block_map`'s (docs/rtl_block.md).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field

import torch

from golden_models import decode_events, encode_events
from golden_models.block_pieces import (
    ADD_NORM,
    ATTENTION,
    LINEAR,
    PIECES,
    TILE_NEURONS,
    check_handlers,
    count_deliveries,
    counted_positions,
    signal,
)
from regression.block_parts import (
    PieceRun,
    attention_config,
    made_by,
    run_norm,
    seq_max_of,
    tile_config,
    tile_slices,
)

__all__ = ["RUNNERS", "BlockRun", "flit_counts", "run_block", "run_block_pieces", "run_case"]


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
    from rtl_gen.simulation.driver import TileDriver, Window
    from rtl_gen.tile import load_beats

    cfg = tile_config(layer, raw_sums=raw_sums)
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


def _attention(run: PieceRun, acfg, path, query, keys, values, valid, want, *,
               dense: bool) -> torch.Tensor:
    """One sequence through the attention path; returns its ``attn_out_in`` codes (projected
    through the mask on the spiking path)."""
    from rtl_gen.simulation.attention import simulate_attention

    [windows] = simulate_attention(acfg, path, [(query, keys, values, valid)], dense=dense)
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


@dataclass
class _Bench:
    """What the Amaranth runners of one case share: the QNN's configurations, the case, the
    tile size."""

    qnn: object
    case: object  # networks.block.BlockCase
    tile_neurons: int

    @property
    def dense(self) -> bool:
        return self.case.design.dense


def _run_linear(run: PieceRun, b: _Bench, piece, seq, inputs) -> list:
    [want] = (seq.value(v) for v in piece.outputs)
    return [_linear(run, b.case.layers[piece.name], inputs[0], want, dense=b.dense,
                    raw_sums=piece.raw_sums, tile_neurons=b.tile_neurons)]


def _run_attention(run: PieceRun, b: _Bench, piece, seq, inputs) -> list:
    # keys and values are written as codes, every code whatever the design
    query, keys, values = inputs
    return [_attention(run, attention_config(b.qnn, b.case.block), b.case.path, query, keys,
                       values, seq.valid, seq.value(piece.outputs[0]), dense=b.dense)]


def _run_norm(run: PieceRun, b: _Bench, piece, seq, inputs) -> list:
    from regression.units import minilm_config

    add, norm, thetas = b.case.units[piece.name]
    # the codes it walks: none after the last block
    want = ([seq.value(c, next_block=piece.next_block) for c in piece.outputs[:-1]]
            if thetas else [])
    r, codes = run_norm(run, minilm_config(b.qnn), add, norm, thetas, *inputs,
                        seq.value(piece.outputs[-1]), want)
    return [*codes, r]


#: The Amaranth runner of each kind of piece: ``(run, bench, piece, sequence, inputs)`` ->
#: the piece's outputs (by position) as the hardware made them.
RUNNERS = {LINEAR: _run_linear, ATTENTION: _run_attention, ADD_NORM: _run_norm}


def run_block_pieces(qnn, case, *, tile_neurons: int = TILE_NEURONS,
                     outputs: dict | None = None) -> list[PieceRun]:
    """Run the captured sentences of ``case`` (:class:`networks.block.BlockCase`: one design
    of block ``case.block`` of ``qnn``) through the block's hardware pieces, each linear layer
    in tiles of at most ``tile_neurons`` neurons, each piece fed with what the pieces before
    it made (the block's inputs: the captured ones); one :class:`PieceRun` per piece of
    :data:`golden_models.block_pieces.PIECES`. ``outputs``: filled with what the block's last
    piece made (the next block's inputs, by the piece's output names), every sentence's
    tokens one after the other."""
    check_handlers(RUNNERS, "regression.block.RUNNERS", PIECES)
    bench = _Bench(qnn, case, tile_neurons)
    runs = {p.name: PieceRun(p.name) for p in PIECES}
    last: dict[str, list] = {}
    for seq in case.sequences:
        made: dict = {}
        for p in PIECES:
            inputs = [made[v] if v in made else seq.value(v) for v in p.inputs]
            out = RUNNERS[p.kind](runs[p.name], bench, p, seq, inputs)
            if not p.next_block:
                made.update(zip(p.outputs, out, strict=True))
            else:
                for name, v in made_by(p, out).items():
                    last.setdefault(name, []).append(v)
    if outputs is not None:
        outputs.update({name: torch.cat(v) for name, v in last.items()})
    return [runs[p.name] for p in PIECES]


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


def flit_counts(qnn, case, *, seq_max: int) -> dict[str, list[int]]:
    """Flits each producer neuron sends per signal of :data:`rtl_gen.block_map.SIGNALS` over
    the sentences of ``case`` (with its design's masks), walking the block's description: a
    spike-encoded position's events outside its mask (every code for the dense design), one
    flit per key and value code written, per raw sum and stream value (every other input of a
    piece), per raw score. ``attn_prob`` and ``scores`` are counted per ``head * seq_max + key
    slot``."""
    layer = qnn.layers[case.block]
    hidden, heads = layer.cfg.hidden_size, layer.cfg.num_attention_heads
    dense = case.design.dense
    positions = counted_positions()
    # every other value a piece takes: one flit per value (the block's values are all hidden
    # wide but the positions, which are counted per neuron)
    per_value = list(dict.fromkeys(signal(v) for p in PIECES for v in p.inputs
                                   if v not in positions))
    out: dict[str, torch.Tensor] = {}

    def add(signal_name: str, counts: torch.Tensor) -> None:
        out[signal_name] = out.get(signal_name, 0) + counts.to(torch.int64)

    for seq in case.sequences:
        S = seq.length
        for p in positions:
            q, mask = seq.codes[p], case.masks[p]
            sent = (torch.ones_like(q, dtype=torch.bool) if dense
                    else mask.transmitted(mask.space.c - q))
            if q.dim() == 3:  # attn_prob [heads, S, S] -> per (head, key slot)
                per = torch.zeros(heads, seq_max, dtype=torch.int64)
                per[:, :S] = sent.sum(1)
                add(p, per.reshape(-1))
            else:
                add(p, sent.sum(0))
        for name in per_value:
            add(name, torch.full((hidden,), S, dtype=torch.int64))
        scores = torch.zeros(heads, seq_max, dtype=torch.int64)
        scores[:, :S] = S  # every query token sends a score per key slot of the sequence
        add("scores", scores.reshape(-1))
    return {k: v.tolist() for k, v in out.items()}


def run_case(qnn, case, *, tile_neurons: int = TILE_NEURONS, sim: str = "amaranth", root=None,
             told=None, outputs: dict | None = None) -> BlockRun:
    """The sentences of ``case`` (:class:`networks.block.BlockCase`, one design of a block of
    ``qnn``) through the block's hardware pieces, each sentence alone, in tiles of at most
    ``tile_neurons`` neurons, on ``sim``: the Amaranth simulator (:func:`run_block_pieces`),
    or ``"verilator"`` / ``"icarus"``, the generated Verilog in the fast harness
    (:func:`regression.block_fast.run_block_fast`, its Verilog, builds and runs under
    ``root``; ``told`` hears of each piece as it ends). ``outputs``: filled with what the
    block's last piece made, the next block's inputs (:func:`run_block_pieces`)."""
    from regression.block_fast import DEFAULT_ROOT, RTL_SIMS, run_block_fast

    if sim not in RTL_SIMS:
        raise ValueError(f"sim must be one of {', '.join(RTL_SIMS)}, not {sim!r}")
    design = case.design
    if sim == "amaranth":
        pieces = run_block_pieces(qnn, case, tile_neurons=tile_neurons, outputs=outputs)
    else:
        pieces = run_block_fast(qnn, case, tile_neurons=tile_neurons, sim=sim,
                                root=DEFAULT_ROOT if root is None else root, name=design.name,
                                told=told, outputs=outputs)
    flits = flit_counts(qnn, case, seq_max=seq_max_of(qnn.layers[case.block].cfg))
    deliveries = count_deliveries({p.piece: p.counters for p in pieces},
                                  {p.piece: p.tiles for p in pieces}, design.dense)
    return BlockRun(design.name, pieces, deliveries, case.values(), case.tokens, case.T, flits)


def run_block(qnn, tokenizer, sentences, design: str, *, block: int = 0,
              tile_neurons: int = TILE_NEURONS, sim: str = "amaranth", root=None,
              told=None) -> BlockRun:
    """``sentences`` through block ``block``'s hardware pieces as ``design``
    (:data:`golden_models.block_pieces.DESIGNS`): :func:`networks.block.block_case`, then
    :func:`run_case`."""
    from networks.block import block_case
    from regression.block_fast import RTL_SIMS

    if sim not in RTL_SIMS:
        raise ValueError(f"sim must be one of {', '.join(RTL_SIMS)}, not {sim!r}")
    case = block_case(qnn, tokenizer, sentences, design, block=block)
    return run_case(qnn, case, tile_neurons=tile_neurons, sim=sim, root=root, told=told)
