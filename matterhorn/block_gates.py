"""One design of a whole encoder block priced in our gates (the pieces' pricing:
:mod:`synth_scripts.block_gates`), and the paper's model beside it.

:func:`measure_block_gates` reads what each piece of block ``block`` of an integer-mode QNN
needs from the QNN with the design's masks (:func:`regression.block.design_masks`): the six
linear layers (:func:`networks.block.block_layers`) in the tile configuration
:mod:`regression.block` runs them with, the attention constants
(:func:`networks.attention.attention_path`), the add+LayerNorm units and their walk tables
(``IntegerBlock``), the units' configuration (:func:`regression.units.minilm_config`); checks
that the sentences were captured with those masks (each layer reproduces the values it
feeds); and prices every piece on what it consumes. :func:`capture` captures sentences with a
design's masks. :func:`model_ratios` sets the paper's model at the measured rates
(:func:`matterhorn.block.model_energy`) beside the gates.

This module sits in ``matterhorn`` because it joins ``networks`` and ``regression`` to
``synth_scripts``, which may import neither (docs/architecture.md).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping, Sequence

import torch

from regression.block import TILE_NEURONS
from synth_scripts.block_gates import (
    NODE_COMPONENT,
    PIECES,
    RAW_SUMS,
    TOTALS,
    AttentionSequence,
    BlockGates,
    Pricing,
    piece_flits,
    price_attention,
    price_linear,
    price_norm,
)
from synth_scripts.block_gates import validate_attention as _validate_attention

__all__ = ["MODEL_COMPONENTS", "MODEL_PIECES", "activity", "capture", "measure_block_gates",
           "model_ratios", "validate_attention"]

#: The model's components (``energy_model``: Move, W-read, KV-write, Compute) and ours.
MODEL_COMPONENTS = {"move": "movement", "wread": "sram_read", "kvwrite": "sram_write",
                    "compute": "compute", "total": "total"}
#: The pieces the model's rows price (its positions' consumers: the tiles and the attention
#: path); the add+LayerNorm units are in no row of it.
MODEL_PIECES = ("query", "key", "value", "attention", "attn_out", "ffn_expand", "ffn_contract")


def capture(qnn, tokenizer, sentences: Sequence[str], design: str, *, block: int = 0):
    """``sentences`` captured at block ``block`` with ``design``'s masks
    (:func:`regression.block.design_masks`, :func:`networks.block.capture_block`): what
    :func:`measure_block_gates` prices."""
    from networks.block import capture_block
    from regression.block import design_masks

    with design_masks(qnn, design):
        return capture_block(qnn, tokenizer, sentences, block=block)


def _cat(sequences, name: str, tensors: bool = False) -> torch.Tensor:
    return torch.cat([(s.tensors if tensors else s.codes)[name] for s in sequences])


def _check_capture(sequences, layers: dict, dense: bool) -> None:
    """The sequences were captured with the masks ``layers`` carry: each code-producing layer
    reproduces the codes of the position it feeds, each raw-sum layer its sums (golden)."""
    from golden_models import encode_events
    from golden_models.dense import run_dense_sums

    for name, p_in, want in (("query", "q_proj_in", "query"), ("key", "k_proj_in", "key"),
                             ("ffn_expand", "ffn_expand_in", "ffn_contract_in"),
                             ("attn_out", "attn_out_in", "attn_sum"),
                             ("ffn_contract", "ffn_contract_in", "ffn_sum")):
        layer = layers[name]
        for s in sequences:
            for i in range(s.length):
                q = s.codes[p_in][i]
                if name in RAW_SUMS:
                    got = (run_dense_sums(layer, q)[0] if dense
                           else layer.run_sums(*encode_events(q, layer.in_mask))[0])
                    ok = torch.equal(got, s.tensors[want][i])
                else:
                    r = layer.run_codes(q)
                    ok = torch.equal(layer.out_mask.space.c - r.tau, s.codes[want][i])
                if not ok:
                    raise ValueError(f"the {name} layer does not reproduce the captured {want} "
                                     "values: capture the sentences with the design's masks "
                                     "(matterhorn.block_gates.capture)")


def _norm_case(ucfg, add, norm, thetas, r, v, want_r, want_codes):
    """The rows ``(r, v)`` of an add+LayerNorm piece and what the golden units make of them
    (:class:`regression.units.NormCase`), checked against the captured stream ``want_r`` and
    codes ``want_codes`` (one ``[S, hidden]`` per table)."""
    from regression.units import NormCase

    rows = [(r[i].tolist(), v[i].tolist()) for i in range(r.shape[0])]
    expected = NormCase(add, norm, [[int(x) for x in t] for t in thetas], rows,
                        ucfg.T).expected()
    for i, (stream, codes) in enumerate(expected):
        if stream != want_r[i].tolist() or any(codes[p] != c[i].tolist()
                                               for p, c in enumerate(want_codes)):
            raise ValueError(f"row {i}: the golden add+LayerNorm does not reproduce the "
                             "captured stream and codes")
    return expected


def _attention_sequences(sequences) -> list[AttentionSequence]:
    return [AttentionSequence(s.codes["query"], s.codes["key"], s.codes["value"], s.valid,
                              s.codes["attn_out_in"]) for s in sequences]


def validate_attention(qnn, sequences, design: str, *, lib_path, work, sim: str = "verilator",
                       block: int = 0, clock_ns: float = 10.0, cache: dict | None = None) -> dict:
    """The attention path of ``design`` on ``sequences`` (as :func:`measure_block_gates` takes
    them) priced node by node, as the block's pricing does, against a replay of its whole
    netlist: :func:`synth_scripts.block_gates.validate_attention`."""
    from networks.attention import attention_path
    from regression.block import attention_config, check_design, design_masks

    check_design(design)
    with design_masks(qnn, design):
        path = attention_path(qnn.layers[block])
    pr = Pricing.prepare(lib_path, work, sim=sim, clock_ns=clock_ns, cache=cache)
    return _validate_attention(pr, attention_config(qnn, block), path,
                               _attention_sequences(sequences), design)


def _tiles(layers: dict, name: str, tile_neurons: int) -> list:
    """Linear piece ``name``'s tiles as the run partitions it: ``(layer, config)`` per tile of
    at most ``tile_neurons`` neurons (raw sums for :data:`RAW_SUMS`)."""
    from regression.block import _tile_config, tile_slices

    return [(sub, _tile_config(sub, raw_sums=name in RAW_SUMS))
            for _, _, sub in tile_slices(layers[name], tile_neurons)]


def _jobs(qnn, sequences, design: str, block: int, pr: Pricing, tile_neurons: int) -> dict:
    """Each piece's pricing call (function and arguments), from the QNN with the design's
    masks; each linear layer in the run's tiles of at most ``tile_neurons``."""
    from networks.attention import attention_path
    from networks.block import LINEARS, block_layers
    from regression.block import attention_config, design_masks
    from regression.units import minilm_config

    dense = design == "dense"
    layer = qnn.layers[block]
    with design_masks(qnn, design):
        layers = block_layers(layer)
        path = attention_path(layer)
    _check_capture(sequences, layers, dense)
    tiles = {name: _tiles(layers, name, tile_neurons) for name in LINEARS}
    jobs = {name: (price_linear, pr, name, tiles[name], design, _cat(sequences, p_in))
            for name, (p_in, _) in LINEARS.items()}
    attention = _attention_sequences(sequences)
    streams = (tiles["query"][0][1], [(_cat(sequences, n), layers[n].out_mask)
                                  for n in ("query", "key", "value")])
    jobs["attention"] = (price_attention, pr, attention_config(qnn, block), path, attention,
                         design, streams)
    blk, ucfg = layer.int_block, minilm_config(qnn)
    nxt = qnn.layers[block + 1] if block + 1 < len(qnn.layers) else None
    feeds = ("q_proj_in", "k_proj_in", "v_proj_in") if nxt else ()
    norms = {
        "norm_attn": (blk.add_attn, blk.norm_attn, [blk.encoders["ffn_expand_in"]], "r_in",
                      "attn_sum", "r1", [_cat(sequences, "ffn_expand_in")]),
        "norm_ffn": (blk.add_ffn, blk.norm_ffn, [nxt.int_block.encoders[p] for p in feeds],
                     "r1", "ffn_sum", "r_out",
                     [torch.cat([s.next_codes[p] for s in sequences]) for p in feeds]),
    }
    for name, (add, norm, thetas, r, v, want, codes) in norms.items():
        r, v = _cat(sequences, r, True), _cat(sequences, v, True)
        expected = _norm_case(ucfg, add, norm, thetas, r, v, _cat(sequences, want, True), codes)
        jobs[name] = (price_norm, pr, name, ucfg, add, norm, thetas, r, v, expected)
    return jobs


def measure_block_gates(qnn, sequences, design: str, *, lib_path, work, sim: str = "verilator",
                        block: int = 0, clock_ns: float = 10.0,
                        hops_per_flit: Mapping[str, float] | None = None,
                        cache: dict | None = None, tile_neurons: int = TILE_NEURONS,
                        netlist_dir=None, told=None, windows: bool = False) -> BlockGates:
    """Price ``design`` (:data:`regression.block.DESIGNS`) of block ``block`` of ``qnn`` (integer
    mode, masks calibrated) in gates on ``sequences`` (:class:`networks.block.BlockSequence`,
    captured with the design's masks: :func:`capture`), piece by piece
    (:mod:`synth_scripts.block_gates`).

    Parameters
    ----------
    lib_path : path
        The liberty (e.g. NanGate 45 nm, ``synth_scripts.liberty.default_liberty()``).
    work : path
        Working folder (netlists, replays).
    sim : {"verilator", "icarus"}
        The replays' simulator.
    clock_ns : float
        The clock the energies are priced at (leakage, idle clock).
    hops_per_flit : mapping, optional
        Piece -> hops per input flit on a placement (:func:`matterhorn.block.hops_per_flit`);
        default one.
    cache : dict, optional
        Keeps mapped netlists (tiles, nodes, units, routers) per liberty across calls: pass
        the same dict for every design of a run.
    tile_neurons : int
        Each linear layer in tiles of at most this many neurons, as the run partitions it.
    netlist_dir : path, optional
        Where the netlists are mapped and their replays built, a folder per netlist named by
        its Verilog's digest (default ``work/netlists``): pass the same folder for every design
        of a run, so that designs with the same pieces (the spiking designs' tiles, every
        design's routers and add+LayerNorm units) map and build them once, also from worker
        processes, and a later run into it maps and builds nothing again.
    told : callable, optional
        Called with a line as each piece is priced (e.g. ``Steps.say``).
    windows : bool
        Price each window of each tile and attention node on its own too
        (``PieceGates.samples``: what :func:`synth_scripts.block_calibration.calibrate` fits).

    Raises
    ------
    ValueError
        An unknown design, no sequence, or sequences captured with other masks.
    AssertionError
        A piece's RTL differs from its golden model or from the captured values.
    """
    from regression.block import _CONSUMER, _deliveries, check_design

    check_design(design)
    sequences = list(sequences)
    if not sequences:
        raise ValueError("sequences must hold at least one captured sentence")
    t0 = time.perf_counter()
    pr = Pricing.prepare(lib_path, work, sim=sim, clock_ns=clock_ns, cache=cache,
                         hops_per_flit=hops_per_flit, netlist_dir=netlist_dir, windows=windows)
    jobs = _jobs(qnn, sequences, design, block, pr, tile_neurons)
    pieces = {}
    for name in PIECES:
        t = time.perf_counter()
        fn, *args = jobs[name]
        pieces[name] = fn(*args)
        pieces[name].seconds = time.perf_counter() - t
        if told is not None:
            told(f"{design}: {name} priced in {pieces[name].seconds:.0f} s")
    layer = qnn.layers[block]
    values = Counter()
    for s in sequences:
        values.update({p: int(s.codes[p].numel()) for p in _CONSUMER})
    cfg = qnn.cfg
    return BlockGates(
        design=design, tokens=sum(s.length for s in sequences), sentences=len(sequences),
        pieces=[pieces[p] for p in PIECES], library=pr.library, liberty=pr.liberty,
        clock_ns=clock_ns, simulator=sim, sram_bit_pJ=pr.sram_bit_pJ, divide_by=pr.divide_by,
        sources=pr.sources(), deliveries=_deliveries(pieces, design == "dense"),
        values=dict(values), T=layer.points["attn_prob"].space.T,
        dims={"hidden": cfg.hidden_size, "ffn": cfg.intermediate_size,
              "heads": cfg.num_attention_heads, "weight_bits": layer.query.weight_bits},
        seconds=time.perf_counter() - t0)


# -- every sentence from a sample ------------------------------------------------------------------


def activity(qnn, sequences, design: str, *, block: int = 0,
             tile_neurons: int = TILE_NEURONS) -> dict:
    """Piece -> :class:`synth_scripts.block_calibration.PieceActivity` of ``design`` on
    ``sequences`` (captured with its masks): every window of every tile and attention node
    with its counters from the golden QNN (:func:`synth_scripts.gate_compare.golden_counters`,
    the attention path's references), in the order the pricing's samples keep; the input
    flits; the SRAM bits; the rows of the add+LayerNorm units."""
    from networks.attention import attention_path
    from networks.block import LINEARS, block_layers
    from regression.block import attention_config, design_masks
    from rtl_gen.attn_images import attention_reference, dense_reference
    from synth_scripts.block_calibration import PieceActivity
    from synth_scripts.block_gates import _attention_counters, _attention_sram, window_features
    from synth_scripts.gate_compare import golden_counters, tile_sram_bits

    dense = design == "dense"
    layer = qnn.layers[block]
    with design_masks(qnn, design):
        layers = block_layers(layer)
        path = attention_path(layer)
    out = {}
    configs = {}
    for name, (p_in, _) in LINEARS.items():
        codes = _cat(sequences, p_in)
        tiles = _tiles(layers, name, tile_neurons)
        configs[name] = tiles[0][1]
        windows, total, bits = [], Counter(), 0
        for i, (sub, cfg) in enumerate(tiles):
            for row in codes:
                x = golden_counters(sub, design, cfg, row)
                windows.append({"unit": "tile", "instance": i, "x": x})
                total.update(x)
                bits += tile_sram_bits(cfg, x)
        flits = sum(len(f) for f in piece_flits(tiles[0][1], dense, codes, layers[name].in_mask))
        out[name] = PieceActivity(name, windows, flits, {"read": bits, "write": 0}, dict(total))
    acfg = attention_config(qnn, block)
    reference = dense_reference if dense else attention_reference
    counters = [[ref["counters"] for ref in reference(acfg, path, s.codes["query"],
                                                      s.codes["key"], s.codes["value"],
                                                      s.valid)]
                for s in sequences]
    windows = [{"unit": part, "instance": h, "x": x} for h in range(acfg.heads)
               for part in NODE_COMPONENT for x in window_features(counters, h)]
    total = _attention_counters(counters)
    read, write = _attention_sram(acfg, total)
    flits = sum(len(f) for n in ("query", "key", "value")
                for f in piece_flits(configs["query"], dense, _cat(sequences, n),
                                     layers[n].out_mask))
    out["attention"] = PieceActivity("attention", windows, flits, {"read": read, "write": write},
                                     dict(total), inner_hops=int(total["cnt_hops"]))
    rows = sum(s.length for s in sequences)
    for name in ("norm_attn", "norm_ffn"):
        out[name] = PieceActivity(name, [], 0, {}, {}, rows=rows)
    return out


# -- against the paper's model ---------------------------------------------------------------------


def model_ratios(gates: Sequence[BlockGates], dims=None) -> dict[str, dict]:
    """The paper's model (:func:`matterhorn.block.model_energy`: its formulas and unit costs,
    22 nm / 0.8 V) at the rates these measurements saw, beside our gates scaled to the same
    node (divided by ``BlockGates.divide_by``, Stillmaker & Baas), per token.

    ``dims`` (:class:`energy_model.dims.ModelDims`) defaults to the measured block's sizes
    with ``B`` = the sentences and ``S`` = their mean length. Returns per design and per
    component of :data:`MODEL_COMPONENTS` (ours named): ``model_pJ``, ``gates_pJ`` and
    ``ratio`` (model / gates), the gates summed over :data:`MODEL_PIECES` (the pieces the
    model prices). The model has no idle and no non-linear term in its rows, and no softmax
    row buffer in its W-read; its total is set beside our free-running ``total`` (idle
    included) and our ``gated_total``.
    """
    from energy_model.dims import ModelDims
    from matterhorn.block import model_energy
    from regression.block import BlockRun

    g0 = gates[0]
    if dims is None:
        d = g0.dims
        dims = ModelDims("measured block", hidden=d["hidden"], ffn=d["ffn"], heads=d["heads"],
                         layers=1, batch=g0.sentences,
                         seq=max(round(g0.tokens / g0.sentences), 1),
                         weight_bits=d["weight_bits"])
    runs = [BlockRun(g.design, [], g.deliveries, g.values, g.tokens, g.T) for g in gates]
    model = model_energy(runs, dims)
    tokens = dims.batch * dims.seq
    out = {}
    for g in gates:
        per = g.per_token()
        ours = {k: sum(per[p][k] for p in MODEL_PIECES if p in per) for k in TOTALS}
        row = {}
        for mk, ok in (*MODEL_COMPONENTS.items(), ("total", "gated_total")):
            model_pJ = model[g.design][f"{mk}_J"] * 1e12 / tokens
            gates_pJ = ours[ok] / g.divide_by
            row[ok] = {"model_pJ": model_pJ, "gates_pJ": gates_pJ,
                       "ratio": model_pJ / gates_pJ if gates_pJ else None}
        out[g.design] = row
    return out
