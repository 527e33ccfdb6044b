"""One design of a whole encoder block priced in our gates: where the networks meet the pricing.

:func:`measure_block_gates` prices the pieces of a :class:`networks.block.BlockCase` (one
design of one block of an integer-mode QNN on captured sentences: its layers, attention
constants, units and masks, read once) piece by piece, walking
``golden_models.block_pieces.PIECES``: each kind of piece has its job here (:data:`JOBS`),
which turns the case into the arguments of the kind's pricer in ``synth_scripts``
(:mod:`synth_scripts.block_pricing`, :mod:`synth_scripts.block_attention`): the linear pieces'
tiles in the configuration :mod:`regression.block` runs them with, the attention path's
configuration, the add+LayerNorm units' configuration
(:func:`regression.units.minilm_config`) and their rows checked against the golden units.
:func:`activity` gives every window's counters from the golden QNN, what the calibration
prices the whole run by (:mod:`synth_scripts.block_calibration`), walking the same pieces
(:data:`ACTIVITY`).

This module sits in ``matterhorn`` because it joins ``networks`` and ``regression`` to
``synth_scripts``, which may import neither (docs/architecture.md).
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Mapping
from functools import partial

from golden_models.block_pieces import (
    ADD_NORM,
    ATTENTION,
    LINEAR,
    PIECES,
    TILE_NEURONS,
    check_handlers,
    of_kind,
)

__all__ = ["ACTIVITY", "JOBS", "RANK", "DesignPricing", "activity", "measure_block_gates",
           "measure_path", "path_activity", "record_fast", "run_task", "validate_attention"]


def _tiles(case, piece, tile_neurons: int) -> list:
    """Linear ``piece``'s tiles as the run partitions it: ``(layer, config)`` per tile of at
    most ``tile_neurons`` neurons (raw sums for a raw-sum piece)."""
    from regression.block_parts import tile_config, tile_slices

    return [(sub, tile_config(sub, raw_sums=piece.raw_sums))
            for _, _, sub in tile_slices(case.layers[piece.name], tile_neurons)]


def _attention_sequences(case) -> list:
    from synth_scripts.block_attention import AttentionSequence

    return [AttentionSequence(s.codes["query"], s.codes["key"], s.codes["value"], s.valid,
                              s.codes["attn_out_in"]) for s in case.sequences]


def _norm_rows(qnn, case, piece):
    """An add+LayerNorm piece's rows and what the golden units make of them
    (:class:`regression.units.NormCase`), checked against the captured stream and codes."""
    from regression.units import NormCase, minilm_config

    ucfg = minilm_config(qnn)
    add, norm, thetas = case.units[piece.name]
    r, v = (case.cat(x) for x in piece.inputs)
    want_r = case.cat(piece.outputs[-1])
    want_codes = ([case.cat(c, next_block=piece.next_block) for c in piece.outputs[:-1]]
                  if thetas else [])
    rows = [(r[i].tolist(), v[i].tolist()) for i in range(r.shape[0])]
    expected = NormCase(add, norm, [[int(x) for x in t] for t in thetas], rows,
                        ucfg.T).expected()
    for i, (stream, codes) in enumerate(expected):
        if stream != want_r[i].tolist() or any(codes[p] != c[i].tolist()
                                               for p, c in enumerate(want_codes)):
            raise ValueError(f"row {i}: the golden add+LayerNorm does not reproduce the "
                             "captured stream and codes")
    return ucfg, add, norm, thetas, r, v, expected


def _linear_job(qnn, case, piece, pr, tile_neurons: int):
    from synth_scripts.block_pricing import assemble_linear, price_tile, replayed_tiles

    [p_in] = piece.inputs
    tiles, codes, design = _tiles(case, piece, tile_neurons), case.cat(p_in), case.design.name
    tasks = [(price_tile, (pr, piece.name, i, *tiles[i], design, codes))
             for i in replayed_tiles(pr, tiles)]
    return tasks, partial(assemble_linear, pr, piece.name, tiles, design)


def record_fast(acfg, path, sequences, dense: bool, heads, *, root, sim: str = "verilator",
                name: str = "record"):
    """The attention path's run recorded in the fast harness on the generated Verilog
    (:func:`regression.block_fast.record_attention`), the columns a gate-level replay of the
    nodes of ``heads`` needs (``AttentionRecorder.verilog_probes``): ``(recorder, windows)``
    for :func:`synth_scripts.block_attention.price_attention`'s ``recorder`` (``root``: the
    folder of the harness's builds, shared by the runs that take the same one, and of its
    runs, ``root/runs/<name>-...``)."""
    from regression.block_fast import record_attention
    from synth_scripts.gatelevel.attention import AttentionRecorder

    rec = AttentionRecorder.of_system(acfg, dense)
    windows, columns = record_attention(
        acfg, path, [(s.query, s.keys, s.values, s.valid, s.attn_out_in) for s in sequences],
        dense=dense, record=rec.kept_probes(root, heads), root=root, sim=sim, name=name)
    rec.take(columns)
    return rec, windows


def path_activity(acfg, path, sequences, dense: bool, *, root, sim: str = "verilator",
                  name: str = "activity") -> dict:
    """What the attention path does in each window of ``sequences`` (every sentence of a run,
    :func:`_attention_sequences`), measured at RTL in the fast harness
    (:func:`regression.block_fast.attention_windows`, recording every head's nodes' clock
    enables, :meth:`synth_scripts.gatelevel.attention.AttentionRecorder.enable_probes`;
    ``root``: the folder of its builds and runs): ``clocks``, the path's clocks a window, and
    ``busy``, each node's busy clocks a window, in the order of the calibration's windows
    (head by head, node by node: :func:`activity`). What the calibration prices the nodes'
    idle clock, leakage and deselected memories over, and fits their logic to beside their
    counters (:mod:`synth_scripts.block_calibration`): the gate-level replay takes minutes a
    sentence, this seconds for the run. ``name`` names its runs in ``root`` (a design's own:
    runs of one name take turns)."""
    from regression.block_fast import attention_windows
    from synth_scripts.block_gates import NODE_COMPONENT
    from synth_scripts.gatelevel.attention import ENABLE_HOLD, AttentionRecorder
    from synth_scripts.gatelevel.measure import held_on

    probes, enables = AttentionRecorder.enable_plan(acfg, dense, root)
    runs = attention_windows(
        acfg, path, [(s.query, s.keys, s.values, s.valid, s.attn_out_in) for s in sequences],
        dense=dense, record=probes, root=root, sim=sim, name=name)
    clocks = [b - a for marks, _ in runs for a, b in zip(marks, marks[1:], strict=False)]
    busy = []
    for h in range(acfg.heads):
        for part in NODE_COMPONENT:
            for marks, columns in runs:
                on = held_on([columns[c] for c in enables[h, part]], ENABLE_HOLD)
                busy += [sum(on[a:b]) for a, b in zip(marks, marks[1:], strict=False)]
    return {"clocks": clocks, "busy": busy}


def measure_path(qnn, case, *, root, sim: str = "verilator") -> dict:
    """:func:`path_activity` of the attention path of ``case`` (its block's, its design's)
    over every sentence of it."""
    from regression.block_parts import attention_config

    return path_activity(attention_config(qnn, case.block), case.path,
                         _attention_sequences(case), case.design.dense, root=root, sim=sim,
                         name=f"{case.design.name}-activity")


def _recorder(pr):
    """The attention path's recorder of a pricing: the fast harness on its replay simulator,
    its builds kept beside the netlists, its runs named by the pricing's folder
    (:func:`record_fast`)."""
    return partial(record_fast, root=pr.netlist_dir / "fast", sim=pr.sim, name=pr.work.name)


def _attention_job(qnn, case, piece, pr, tile_neurons: int):
    from regression.block_parts import attention_config
    from synth_scripts.block_attention import price_attention

    # its input flits: the query, key and value codes as the tiles that make them send them
    producers = {out: p for p in of_kind(LINEAR) for out in p.outputs}
    first = producers[piece.inputs[0]]
    streams = (_tiles(case, first, tile_neurons)[0][1],
               [(case.cat(v), case.layers[producers[v].name].out_mask) for v in piece.inputs])
    return [(price_attention, (pr, attention_config(qnn, case.block), case.path,
                               _attention_sequences(case), case.design.name, streams,
                               _recorder(pr)))], _only


def _norm_job(qnn, case, piece, pr, tile_neurons: int):
    from synth_scripts.block_pricing import price_norm

    return [(price_norm, (pr, piece.name, *_norm_rows(qnn, case, piece)))], _only


def _only(results: list):
    [result] = results
    return result


#: The job of each kind of piece: ``(qnn, case, piece, pricing, tile_neurons)`` -> its tasks
#: (``[(fn, args), ...]``, each independent of the others: a linear piece's replayed tiles, the
#: attention path, an add+LayerNorm unit) and the function that makes the piece's
#: :class:`synth_scripts.block_gates.PieceGates` of their results, in order.
JOBS = {LINEAR: _linear_job, ATTENTION: _attention_job, ADD_NORM: _norm_job}


#: Which of a pricing's tasks a run hands out first (:meth:`DesignPricing.ranks`): the longest
#: (one MiniLM design, everything kept: the attention path 67 s, its activity over the run
#: 24 s, an add+LayerNorm unit 6 to 9 s, a tile 1 to 12 s), so that no long one is left to a
#: worker at the end while the others wait.
RANK = {ATTENTION: 0, "path": 1, ADD_NORM: 2, LINEAR: 3}


def run_task(task):
    """One task of a pricing (:attr:`DesignPricing.tasks`: ``(fn, args)``), where it runs (this
    process or a worker): ``(fn(*args), seconds)``."""
    fn, args = task
    t0 = time.perf_counter()
    return fn(*args), time.perf_counter() - t0


class DesignPricing:
    """One design's pricing in gates as tasks that run anywhere, in any order
    (:attr:`tasks`: each linear piece's replayed tiles, the attention path, each add+LayerNorm
    unit), and the assembly of their results into the design's
    :class:`synth_scripts.block_gates.BlockGates` (:meth:`finish`). :func:`measure_block_gates`
    runs them in this process or on an executor; a run of several designs maps every design's
    tasks at once (:func:`matterhorn.block.run`)."""

    def __init__(self, qnn, case, *, lib_path, work, sim: str = "verilator",
                 clock_ns: float = 10.0, hops_per_flit: Mapping[str, float] | None = None,
                 cache: dict | None = None, tile_neurons: int = TILE_NEURONS,
                 netlist_dir=None, windows: bool = False, replay_tiles: int = 0,
                 replay_heads: int = 0, replay_windows: int = 0, whole=None):
        from synth_scripts.block_pricing import Pricing

        check_handlers(JOBS, "matterhorn.block_gates.JOBS", PIECES)
        if not case.sequences:
            raise ValueError("sequences must hold at least one captured sentence")
        self.t0 = time.perf_counter()
        self.design, self.tokens = case.design.name, case.tokens
        self.sentences = len(case.sequences)
        self.pr = Pricing.prepare(lib_path, work, sim=sim, clock_ns=clock_ns, cache=cache,
                                  hops_per_flit=hops_per_flit, netlist_dir=netlist_dir,
                                  windows=windows, replay_tiles=replay_tiles,
                                  replay_heads=replay_heads, replay_windows=replay_windows)
        layer, cfg = qnn.layers[case.block], qnn.cfg
        self.dims = {"hidden": cfg.hidden_size, "ffn": cfg.intermediate_size,
                     "heads": cfg.num_attention_heads, "weight_bits": layer.query.weight_bits}
        self.jobs = [(p.name, *JOBS[p.kind](qnn, case, p, self.pr, tile_neurons))
                     for p in PIECES]
        self.kinds = [p.kind for p in PIECES]
        #: With ``whole`` (the run's case, ``case`` its sample): the attention path's activity
        #: over the whole run (:func:`path_activity`), a task of its own, for the calibration;
        #: :meth:`finish` keeps it in :attr:`path`.
        self.measure, self.path = [], None
        if whole is not None:
            from regression.block_parts import attention_config

            self.measure = [(partial(path_activity, root=self.pr.netlist_dir / "fast",
                                     sim=sim, name=f"{self.design}-activity"),
                             (attention_config(qnn, whole.block), whole.path,
                              _attention_sequences(whole), whole.design.dense))]

    @property
    def tasks(self) -> list[tuple]:
        """Every task of the design, piece after piece, then the path's activity over the run
        (with ``whole``): ``(fn, args)`` for :func:`run_task`."""
        return [t for _, tasks, _ in self.jobs for t in tasks] + self.measure

    def ranks(self) -> list[int]:
        """Per task of :attr:`tasks` its rank in the order a run hands them out (:data:`RANK`)."""
        return [RANK[kind] for kind, (_, tasks, _) in zip(self.kinds, self.jobs, strict=True)
                for _ in tasks] + [RANK["path"]] * len(self.measure)

    def names(self) -> list[str]:
        """A name per task of :attr:`tasks` (``<design>-<piece>-<i>``, ``<design>-path``)."""
        return [f"{self.design}-{name}-{i}" for name, tasks, _ in self.jobs
                for i in range(len(tasks))] + [f"{self.design}-path"] * len(self.measure)

    def finish(self, results: list, told=None):
        """The design's :class:`synth_scripts.block_gates.BlockGates` from :func:`run_task`'s
        results of :attr:`tasks`, in order; ``told`` is called with a line per piece."""
        from synth_scripts.block_gates import BlockGates

        results = list(results)
        if self.measure:
            self.path = results.pop()[0]
        results = iter(results)
        pieces = []
        for name, tasks, assemble in self.jobs:
            got = [next(results) for _ in tasks]
            t = time.perf_counter()
            priced = assemble([r for r, _ in got])
            priced.seconds = math.fsum(s for _, s in got) + time.perf_counter() - t
            pieces.append(priced)
            if told is not None:
                told(f"{self.design}: {name} priced in {priced.seconds:.0f} s")
        pr = self.pr
        return BlockGates(
            design=self.design, tokens=self.tokens, sentences=self.sentences, pieces=pieces,
            library=pr.library, liberty=pr.liberty, clock_ns=pr.clock_ns, simulator=pr.sim,
            sram_bit_pJ=pr.sram_bit_pJ, divide_by=pr.divide_by, sources=pr.sources(),
            dims=dict(self.dims), seconds=time.perf_counter() - self.t0,
            sram_macros=pr.sram_table is not None)


def validate_attention(qnn, case, *, lib_path, work, sim: str = "verilator",
                       clock_ns: float = 10.0, cache: dict | None = None) -> dict:
    """The attention path of ``case`` priced node by node, as :func:`measure_block_gates`
    prices it, against a replay of its whole netlist:
    :func:`synth_scripts.block_attention.validate_attention`."""
    from regression.block_parts import attention_config
    from synth_scripts.block_attention import validate_attention as validate
    from synth_scripts.block_pricing import Pricing

    pr = Pricing.prepare(lib_path, work, sim=sim, clock_ns=clock_ns, cache=cache)
    return validate(pr, attention_config(qnn, case.block), case.path,
                    _attention_sequences(case), case.design.name, _recorder(pr))


def measure_block_gates(qnn, case, *, lib_path, work, sim: str = "verilator",
                        clock_ns: float = 10.0,
                        hops_per_flit: Mapping[str, float] | None = None,
                        cache: dict | None = None, tile_neurons: int = TILE_NEURONS,
                        netlist_dir=None, told=None, windows: bool = False,
                        replay_tiles: int = 0, replay_heads: int = 0,
                        replay_windows: int = 0, executor=None):
    """Price the design of ``case`` (:class:`networks.block.BlockCase`: one design of block
    ``case.block`` of ``qnn`` on captured sentences) in gates, piece by piece: a
    :class:`synth_scripts.block_gates.BlockGates`.

    Parameters
    ----------
    lib_path : path
        The liberty (e.g. NanGate 45 nm,
        ``synth_scripts.gatelevel.liberty.default_liberty()``).
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
    replay_tiles, replay_heads, replay_windows : int
        With ``windows``: replay at most this many tiles of each linear piece, heads of the
        attention path, and windows of each tile and rows of each add+LayerNorm unit, spread
        over them (0: all;
        :attr:`synth_scripts.block_pricing.Pricing.replay_tiles`). The result is a sample
        for :func:`synth_scripts.block_calibration.calibrate`, which prices every tile and
        head.
    executor : toolkit_base.cluster.Executor, optional
        Runs the pricing's tasks (:class:`DesignPricing`: each replayed tile, the attention
        path, each add+LayerNorm unit) on its workers (``netlist_dir`` on a filesystem they
        reach at the same path); default: in this process, one after the other. The result
        is the same.

    Raises
    ------
    ValueError
        No sequence, or an add+LayerNorm piece's golden units that do not reproduce the case.
    AssertionError
        A piece's RTL differs from its golden model or from the captured values.
    """
    dp = DesignPricing(qnn, case, lib_path=lib_path, work=work, sim=sim, clock_ns=clock_ns,
                       hops_per_flit=hops_per_flit, cache=cache, tile_neurons=tile_neurons,
                       netlist_dir=netlist_dir, windows=windows, replay_tiles=replay_tiles,
                       replay_heads=replay_heads, replay_windows=replay_windows)
    if executor is not None and executor.client is not None:
        return dp.finish(executor.map(run_task, dp.tasks, names=dp.names()), told)
    results = []
    for name, tasks, _ in dp.jobs:  # piece by piece, told as each ends
        got = [run_task(t) for t in tasks]
        results += got
        if told is not None:
            told(f"{dp.design}: {name} priced in {math.fsum(s for _, s in got):.0f} s")
    return dp.finish(results)


# -- every sentence from a sample ------------------------------------------------------------------


def _linear_activity(qnn, case, piece, tile_neurons: int, path):
    from synth_scripts.block_calibration import PieceActivity
    from synth_scripts.block_pricing import piece_flits
    from synth_scripts.gatelevel.tile import golden_counters, tile_sram_bits

    design = case.design.name
    [p_in] = piece.inputs
    codes = case.cat(p_in)
    tiles = _tiles(case, piece, tile_neurons)
    windows, total, bits = [], Counter(), 0
    for i, (sub, cfg) in enumerate(tiles):
        for row in codes:
            x = golden_counters(sub, design, cfg, row)
            windows.append({"unit": "tile", "instance": i, "x": x})
            total.update(x)
            bits += tile_sram_bits(cfg, x)
    flits = sum(len(f) for f in piece_flits(tiles[0][1], case.design.dense, codes,
                                            case.layers[piece.name].in_mask))
    return PieceActivity(piece.name, windows, flits, {"read": bits, "write": 0}, dict(total))


def _attention_activity(qnn, case, piece, tile_neurons: int, path):
    from regression.block_parts import attention_config
    from rtl_gen.attn_images import attention_reference, dense_reference
    from synth_scripts.block_attention import (
        attention_counters,
        attention_sram,
        softmax_features,
        window_features,
    )
    from synth_scripts.block_calibration import PieceActivity
    from synth_scripts.block_gates import NODE_COMPONENT
    from synth_scripts.block_pricing import piece_flits

    acfg = attention_config(qnn, case.block)
    reference = dense_reference if case.design.dense else attention_reference
    counters = [[ref["counters"] for ref in reference(acfg, case.path, s.codes["query"],
                                                      s.codes["key"], s.codes["value"],
                                                      s.valid)]
                for s in case.sequences]
    data = [softmax_features(case.path, s.codes["query"], s.codes["key"], s.codes["value"],
                             s.valid, case.design.dense) for s in case.sequences]
    windows = [{"unit": part, "instance": h, "x": x} for h in range(acfg.heads)
               for part in NODE_COMPONENT for x in window_features(counters, h, data)]
    total = attention_counters(counters)
    read, write = attention_sram(acfg, total)
    producers = {out: p for p in of_kind(LINEAR) for out in p.outputs}
    first = _tiles(case, producers[piece.inputs[0]], tile_neurons)[0][1]
    flits = sum(len(f) for n in piece.inputs
                for f in piece_flits(first, case.design.dense, case.cat(n),
                                     case.layers[producers[n].name].out_mask))
    n = sum(len(c) for c in counters)
    if path is None or len(path["clocks"]) != n or len(path["busy"]) != len(windows):
        raise ValueError(f"the attention path's clocks and busy clocks are needed for each of "
                         f"its {n} windows (path_activity)")
    return PieceActivity(piece.name, windows, flits, {"read": read, "write": write},
                         dict(total), inner_hops=int(total["cnt_hops"]),
                         clocks=list(path["clocks"]), busy=list(path["busy"]))


def _norm_activity(qnn, case, piece, tile_neurons: int, path):
    from synth_scripts.block_calibration import PieceActivity

    return PieceActivity(piece.name, [], 0, {}, {}, rows=case.tokens)


#: What each kind of piece does over a run, from the golden QNN: ``(qnn, case, piece,
#: tile_neurons, path)`` -> its :class:`synth_scripts.block_calibration.PieceActivity`
#: (``path``: the attention path's measured clocks and busy clocks, :func:`path_activity`).
ACTIVITY = {LINEAR: _linear_activity, ATTENTION: _attention_activity, ADD_NORM: _norm_activity}


def activity(qnn, case, *, tile_neurons: int = TILE_NEURONS, path=None) -> dict:
    """Piece -> :class:`synth_scripts.block_calibration.PieceActivity` of the design of
    ``case`` over its sentences: every window of every tile and attention node with its
    counters from the golden QNN (:func:`synth_scripts.gatelevel.tile.golden_counters`, the
    attention path's references), in the order the pricing's samples keep; the input flits;
    the SRAM bits; the rows of the add+LayerNorm units; the attention path's clocks and its
    nodes' busy clocks in each window, measured (``path``: :func:`path_activity`'s;
    required)."""
    check_handlers(ACTIVITY, "matterhorn.block_gates.ACTIVITY", PIECES)
    return {p.name: ACTIVITY[p.kind](qnn, case, p, tile_neurons, path) for p in PIECES}
