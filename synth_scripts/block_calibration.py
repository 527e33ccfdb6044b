"""A block priced in our gates on every sentence of a run, from gate-level replays of a sample.

Replaying every window of every piece at gate level (:mod:`synth_scripts.block_gates`) costs
about an hour of replays per design for MiniLM's block on nine tokens; the run's eight
sentences (231 tokens, keys and values up to 76) would take most of a day. What this module
does instead, for one design:

1. **A sample priced window by window.** The design is priced on a sample of the run's
   sentences as :func:`matterhorn.block_gates.measure_block_gates` prices any run, with each
   window of each tile and each attention node priced on its own as well
   (``Pricing(windows=True)``: the replay cut into windows at their output markers,
   :func:`synth_scripts.gatelevel.measure.replay_energy`'s ``marks``; ``PieceGates.samples``).
2. **A fit per unit.** For each piece and each unit kind in it (a linear piece's tiles; the
   attention path's query x key, softmax and probability x value nodes, every head together),
   each window's logic energy, idle clock, clock-gated energy, clocks and busy clocks are
   fitted as a non-negative linear function of the window's counters (an intercept and every
   counter the unit keeps, each scaled to its largest value; ``scipy.optimize.nnls``):
   :func:`fit`. An attention node's idle clock is not taken from its own fit: it is the path's
   clocks of the window less the node's busy clocks, at the node's clock energy a
   clock (``Fit.idle_per_clock``, exact: a netlist's clock costs the same every clock). Its
   direct fit would need a negative coefficient for whatever keeps the node busy, which a
   non-negative fit cannot give. The path's clocks in every window of the run, and each
   node's busy clocks in it, are not fitted but measured: the path run at RTL in the fast
   harness on every sentence, its nodes' clock enables recorded (``PieceActivity.clocks``,
   ``.busy``, :func:`matterhorn.block_gates.path_activity`; seconds, where the gate-level
   replay takes minutes). They depend on every head's events in and out and on each node's
   stalls, which no node's counters tell: fitted, a longer sentence than the sample's ran
   64 % over (MiniLM, k = 1), and the idle clock and leakage with them. A node's logic is
   fitted to its own counters and its busy clocks (the clock of each is in it; the other
   nodes' counters of its head, which its window holds too, left out: :func:`_own`), its
   cells' leakage left out (:func:`_without_leakage`) and charged over the measured clocks.
   The softmax node's counters grow linearly in the row's keys where its logic does not (a
   longer row adds keys of small exponentials, which flip few bits): its windows carry the
   golden row's data features too, the bits its exponential and code buses flip and the rises
   of its running maximum (:func:`synth_scripts.block_attention.softmax_features`).
3. **Every window of the run priced by its counters.** The counters of every window of every
   tile and node over all the sentences are the golden QNN's (the run checked the RTL's are
   equal: :class:`PieceActivity`, :func:`matterhorn.block_gates.activity`); each window is
   priced by its unit's fit: :func:`calibrate`. The piece's figures are then assembled as the
   pricing assembles them (:func:`synth_scripts.block_gates.linear_piece`,
   :func:`~synth_scripts.block_gates.attention_piece`): only the windows' figures differ,
   fitted instead of replayed. Each kind of piece has its calibrator (:data:`CALIBRATORS`).

What is counted or measured, not fitted: the attention path's clocks (above); the SRAM
accesses (from the same counters, by the same formulas as the pricing:
:func:`synth_scripts.block_gates.tile_accesses`,
:func:`~synth_scripts.block_gates.attention_accesses`; with the macros, their deselected
cycles and leakage over the tiles' fitted clocks and the path's measured ones); the cells'
leakage (the sample's leakage a clock of each tile and node, exact, times those clocks); the
movement (the run's flits x their hops x the sample's per-hop energy of the router and of the
link wire, the same product as the pricing's); the routers' idle clock (their idle clocks x
the sample's per-clock energy); and the add+LayerNorm units (every row
is the hidden width, so a row costs what the sample's rows cost on average: its figures x
the run's rows over the sample's).

:func:`compare` sets a calibrated design beside one priced in full on the same sentences:
the method's validation (docs/block_gates.md) prices a sentence outside the sample both ways.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from golden_models.block_pieces import (
    ADD_NORM,
    ATTENTION,
    LINEAR,
    PIECE_NAMES,
    PIECES,
    check_handlers,
)
from synth_scripts.block_gates import (
    NODE_COMPONENT,
    TOTALS,
    BlockGates,
    PieceGates,
    SramCosts,
    attention_accesses,
    attention_piece,
    linear_piece,
    tile_accesses,
)

__all__ = ["CALIBRATORS", "NO_INTERCEPT", "TARGETS", "Fit", "PieceActivity", "calibrate",
           "compare", "fit"]

#: What is fitted per window: its logic energy, its idle clock, its clock-gated energy (pJ), its
#: clocks and its busy clocks (those its clock runs on when gated).
TARGETS = ("logic", "idle", "gated", "cycles", "busy")


#: Unit kinds fitted without an intercept: the attention path's nodes. Every cost of theirs
#: grows with the keys of the sentence (a window's scores), and all the windows of one
#: sentence have the same keys: a sample of one sentence cannot tell a fixed cost per window
#: from a cost per key, and a fixed cost would not grow with a longer sentence's keys.
NO_INTERCEPT = tuple(NODE_COMPONENT)


@dataclass
class Fit:
    """One unit kind's windows fitted (:func:`fit`): per target of :data:`TARGETS`, the
    coefficients of the intercept (0 without one) and of each counter of ``names`` (on
    counters divided by ``scale``), non-negative; ``samples`` windows; ``rel_error``: per
    target, the sum of the absolute residuals over the sum of the target on those windows."""

    names: list[str]
    scale: list[float]
    coef: dict[str, list[float]]
    samples: int
    rel_error: dict[str, float] = field(default_factory=dict)
    intercept: bool = True
    #: The clock energy of one idle clock (pJ): the sample's idle clock over its idle clocks
    #: (``cycles - busy``). A netlist's clock costs the same on every clock, so this is
    #: exact, not fitted.
    idle_per_clock: float = 0.0

    def predict(self, x: Mapping[str, int]) -> dict[str, float]:
        """Each target of a window with counters ``x`` (a counter it lacks is 0)."""
        row = [1.0, *(x.get(n, 0) / s for n, s in zip(self.names, self.scale, strict=True))]
        return {t: math.fsum(a * b for a, b in zip(c, row, strict=True))
                for t, c in self.coef.items()}


def fit(samples: Sequence[dict], no_intercept=NO_INTERCEPT) -> dict[str, Fit]:
    """Per unit kind of ``samples`` (``PieceGates.samples``), each target of :data:`TARGETS`
    as a non-negative combination of an intercept (not for the kinds of ``no_intercept``) and
    the window's counters."""
    import numpy as np
    from scipy.optimize import nnls

    by_unit: dict[str, list[dict]] = defaultdict(list)
    for s in samples:
        by_unit[s["unit"]].append(s)
    out = {}
    for unit, rows in by_unit.items():
        names = sorted({n for r in rows for n in r["x"]})
        scale = [float(max(max(abs(r["x"].get(n, 0)) for r in rows), 1)) for n in names]
        one = 0.0 if unit in no_intercept else 1.0
        a = np.array([[one, *(r["x"].get(n, 0) / s for n, s in zip(names, scale, strict=True))]
                      for r in rows])
        coef, err = {}, {}
        for t in TARGETS:
            y = np.array([float(r[t]) for r in rows])
            c, _ = nnls(a, y, maxiter=50 * a.shape[1])
            coef[t] = c.tolist()
            total = float(np.abs(y).sum())
            err[t] = float(np.abs(a @ c - y).sum()) / total if total else 0.0
        idle_clocks = math.fsum(float(r["cycles"]) - float(r["busy"]) for r in rows)
        per_clock = (math.fsum(float(r["idle"]) for r in rows) / idle_clocks
                     if idle_clocks > 0 else 0.0)
        out[unit] = Fit(names, scale, coef, len(rows), err, intercept=bool(one),
                        idle_per_clock=per_clock)
    return out


@dataclass
class PieceActivity:
    """What one piece does over every sentence of a run, from the golden QNN
    (:func:`matterhorn.block_gates.activity`): per window of each tile or node its counters
    (``{"unit", "instance", "x"}``, as ``PieceGates.samples`` name them; an add+LayerNorm
    piece has none), its input ``flits``, the SRAM bits it reads and writes, its counters
    summed as the pricing sums them, the hops inside the attention path (``cnt_hops``) and
    the rows (an add+LayerNorm piece)."""

    piece: str
    windows: list[dict]
    flits: int
    sram_bits: dict[str, int]
    counters: dict[str, int]
    inner_hops: int = 0
    rows: int = 0
    #: The attention path, measured at RTL in the fast harness
    #: (:func:`matterhorn.block_gates.path_activity`): its clocks in each window, in the order
    #: of a node's windows, and each window's busy clocks, in the order of ``windows``.
    clocks: list[int] = field(default_factory=list)
    busy: list[int] = field(default_factory=list)


def _scaled(p: PieceGates, by: float) -> PieceGates:
    """An add+LayerNorm piece's figures for ``by`` times its rows."""
    e = {k: v * by for k, v in p.energy_pJ.items()}
    return PieceGates(p.piece, e, flits=round(p.flits * by), hops=p.hops * by,
                      cycles=p.cycles * by, cells=dict(p.cells), memories=dict(p.memories),
                      counters={k: round(v * by) for k, v in p.counters.items()},
                      sram_bits={k: round(v * by) for k, v in p.sram_bits.items()},
                      parts={k: v * by for k, v in p.parts.items()}, tiles=p.tiles,
                      unit_costs=dict(p.unit_costs), memory_leakage=p.memory_leakage * by)


def _predicted(fits: dict[str, Fit], windows: Sequence[dict]) -> list[dict[str, float]]:
    out = []
    for w in windows:
        if w["unit"] not in fits:
            raise ValueError(f"no window of unit {w['unit']!r} was priced in the sample")
        out.append({"unit": w["unit"], "instance": w["instance"],
                    **fits[w["unit"]].predict(w["x"])})
    return out


def _linear(p: PieceGates, act: PieceActivity, fits, hops: float, sram: SramCosts,
            heads: int) -> PieceGates:
    pred = _predicted(fits, act.windows)
    per_tile, windows, counters = Counter(), Counter(), defaultdict(Counter)
    for w, a in zip(pred, act.windows, strict=True):
        per_tile[w["instance"]] += w["cycles"]
        windows[w["instance"]] += 1
        counters[w["instance"]].update(a["x"])
    cycles = max(per_tile.values(), default=0.0)  # the tiles run side by side
    plans = p.memories.get("tiles", [])
    uses = [(plans[i]["shapes"], tile_accesses(plans[i], windows[i], counters[i]), per_tile[i])
            for i in sorted(per_tile)] if plans else []
    # the tiles' cells leak the same every clock (the sample's leakage per clock)
    leak = p.unit_costs.get("leak_per_clock", 0.0) * math.fsum(per_tile.values())
    return linear_piece(
        p.piece, logic=math.fsum(w["logic"] for w in pred),
        idle=math.fsum(w["idle"] for w in pred), gated=math.fsum(w["gated"] for w in pred),
        cell_leakage=leak, cycles=cycles, read_bits=act.sram_bits["read"],
        sram=sram.price(uses, read_bits=act.sram_bits["read"], write_bits=0),
        flits=act.flits, hops=hops, tiles=p.tiles, unit_costs=dict(p.unit_costs),
        cells=dict(p.cells), counters=dict(act.counters), memories=dict(p.memories))


def _attention(p: PieceGates, act: PieceActivity, fits, hops: float, sram: SramCosts,
               heads: int) -> PieceGates:
    # the nodes' windows are the path's, measured: the clocks of the whole path in each window
    # are set by every head's events in and out and the path's own schedule, and a node's busy
    # clocks by its stalls as much as by its work, which no node's counters tell (fitted, the
    # largest node's clocks taken, a longer sentence than the sample's ran 64 % over)
    n = len(act.windows) // (heads * len(NODE_COMPONENT))
    if len(act.clocks) != n or len(act.busy) != len(act.windows):
        raise ValueError(f"the attention path's clocks were measured on {len(act.clocks)} "
                         f"windows and its nodes' busy clocks on {len(act.busy)}; the run has "
                         f"{n} windows, {len(act.windows)} of its nodes")
    longest = [float(c) for c in act.clocks]
    pred = _predicted(fits, _with_busy(act.windows, act.busy))
    energy = Counter()
    for i, w in enumerate(pred):
        # a node's idle clock: the path's clocks of the window less the node's busy ones, at
        # its clock energy a clock (a fit of the idle clock itself would need a negative
        # coefficient for every counter that keeps the node busy)
        idle = fits[w["unit"]].idle_per_clock * max(longest[i % n] - act.busy[i], 0.0)
        # its cells' leakage over the path's clocks of the window, inside its logic and gated
        # (fitted without it: _without_leakage)
        leak = p.unit_costs.get(f"{w['unit']}_leak_per_clock", 0.0) * longest[i % n]
        comp = NODE_COMPONENT[w["unit"]]
        energy[comp] += w["logic"] + leak
        energy["idle"] += idle
        energy["gated"] += w["gated"] + leak
        energy["leakage"] += leak
        energy[f"{w['unit']}_logic"] += w["logic"] + leak
        energy[f"{w['unit']}_idle_clock"] += idle
        energy[f"{w['unit']}_leakage"] += leak
    inner = act.inner_hops
    cycles = math.fsum(longest)
    plan = p.memories
    uses = [(plan["shapes"], attention_accesses(act.counters, h), cycles)
            for h in range(heads)] if plan else []
    return attention_piece(
        energy, read_bits=act.sram_bits["read"], write_bits=act.sram_bits["write"],
        sram=sram.price(uses, read_bits=act.sram_bits["read"],
                        write_bits=act.sram_bits["write"]),
        flits=act.flits + inner, hops=hops, inner_hops=inner, heads=heads, cycles=cycles,
        unit_costs=dict(p.unit_costs), cells=dict(p.cells), counters=dict(act.counters),
        memories=dict(plan))


def _without_leakage(samples: Sequence[dict], unit_costs: Mapping[str, float]) -> list[dict]:
    """The attention nodes' windows with their cells' leakage (``<unit>_leak_per_clock`` over
    the window's clocks: a netlist leaks the same every clock) taken out of their logic and
    gated energy: what is fitted to the counters is what the node does; :func:`_attention`
    charges the leakage back over the path's measured clocks. Left in, the fit spreads the
    leakage of the sample's windows over the counters, and a sentence whose windows are
    shorter or longer for the same counters is priced wrong (MiniLM k = 1: compute +35 %)."""
    out = []
    for s in samples:
        leak = unit_costs.get(f"{s['unit']}_leak_per_clock", 0.0) * s["cycles"]
        out.append({**s, "logic": s["logic"] - leak, "gated": s["gated"] - leak})
    return out


#: The counter a calibrated attention node's window gets beside its own: its busy clocks
#: (measured, :attr:`PieceActivity.busy`): the clock of each of them is in its logic.
BUSY = "busy_clocks"


def _with_busy(windows: Sequence[dict], busy: Sequence[float]) -> list[dict]:
    """``windows`` (``{"unit", "instance", "x"}``) with each one's busy clocks among its
    counters (:data:`BUSY`)."""
    return [{**w, "x": {**w["x"], BUSY: b}} for w, b in zip(windows, busy, strict=True)]


def _own(samples: Sequence[dict]) -> list[dict]:
    """The attention nodes' windows with their own counters only (``<unit>_<name>``, and
    :data:`BUSY`): a window holds every node of its head's counters, and a fit free to take
    another node's (the softmax node's logic to the probability x value node's reads, say)
    follows what they happen to share in the sample, not what the node does."""
    return [{**s, "x": {k: v for k, v in s["x"].items()
                        if k == BUSY or k.startswith(f"{s['unit']}_")}} for s in samples]


def _fitted(piece, p: PieceGates, act: PieceActivity, hops: float, sram: SramCosts,
            heads: int, design: str) -> tuple[PieceGates, dict]:
    """A piece whose windows are priced by their units' fits: the piece, its fits' record."""
    if not p.samples:
        raise ValueError(f"{design}: piece {piece.name} was priced without its windows "
                         "(Pricing(windows=True))")
    samples = p.samples
    if piece.kind == ATTENTION:  # what a node does, beside the clocks it works
        samples = _without_leakage(_own(_with_busy(samples, [s["busy"] for s in samples])),
                                   p.unit_costs)
    fits = fit(samples)
    replayed: dict[str, set] = defaultdict(set)
    for s in p.samples:
        replayed[s["unit"]].add(s["instance"])
    doc = {u: {"samples": f.samples, "replayed": sorted(replayed[u]), "counters": f.names,
               "rel_error": {t: round(e, 4) for t, e in f.rel_error.items()}}
           for u, f in fits.items()}
    calibrated = (_attention if piece.kind == ATTENTION else _linear)(
        p, act, fits, hops, sram, heads)
    return calibrated, doc


def _rows(piece, p: PieceGates, act: PieceActivity, hops: float, sram: SramCosts,
          heads: int, design: str) -> tuple[PieceGates, dict]:
    """An add+LayerNorm piece: every row is the hidden width, so a row costs what the sample's
    rows cost on average."""
    rows = p.counters["rows"]
    return _scaled(p, act.rows / rows), {"rows": {"samples": rows, "per": "row"}}


#: The calibrator of each kind of piece: ``(piece, sampled, activity, hops, sram (how the
#: memories are priced, :class:`synth_scripts.block_gates.SramCosts`), heads, design)`` -> the
#: piece over the run and what its fits were.
CALIBRATORS = {LINEAR: _fitted, ATTENTION: _fitted, ADD_NORM: _rows}


def calibrate(sample: BlockGates, activity: Mapping[str, PieceActivity], *, tokens: int,
              sentences: int, hops_per_flit: Mapping[str, float] | None = None) -> BlockGates:
    """The design of ``sample`` (priced with ``Pricing(windows=True)`` on a sample of the run's
    sentences) priced on the whole run: every window of ``activity`` (piece -> its
    :class:`PieceActivity` over the run's ``sentences`` and ``tokens``) by its unit's
    :func:`fit`, the SRAM bits, flits and rows counted (module docstring); ``hops_per_flit``:
    each piece's hops per input flit on the placement (default one). The result's ``method``
    names the sample and each fit."""
    check_handlers(CALIBRATORS, "synth_scripts.block_calibration.CALIBRATORS", PIECES)
    from synth_scripts.sram import table

    hpf = dict(hops_per_flit or {})
    heads = sample.dims["heads"]
    sram = SramCosts(table.load() if sample.sram_macros else None, sample.sram_bit_pJ,
                     sample.clock_ns)
    pieces, fits_doc = [], {}
    for piece in PIECES:
        name = piece.name
        act = activity[name]
        hops = act.flits * float(hpf.get(name, 1.0))
        calibrated, fits_doc[name] = CALIBRATORS[piece.kind](
            piece, sample.piece(name), act, hops, sram, heads, sample.design)
        pieces.append(calibrated)
    method = {"calibrated": True, "sample_sentences": sample.sentences,
              "sample_tokens": sample.tokens, "sample_seconds": round(sample.seconds, 1),
              "fits": fits_doc,
              "how": "each window of each tile and attention node of the sample priced at "
                     "gate level; per piece and unit kind its logic, idle clock, gated energy, "
                     "clocks and busy clocks fitted as a non-negative linear function of its "
                     "counters (an attention node's: to its counters and busy clocks; its "
                     "idle clock: the path's window clocks less its busy ones, at its clock "
                     "energy a clock, both measured at RTL in the fast harness on every "
                     "sentence); "
                     "every window of the run priced by its counters (the golden QNN's, equal "
                     "to the RTL's); SRAM accesses, flits and hops counted; the cells' and "
                     "macros' leakage over the fitted clocks; the add+LayerNorm "
                     "units per row (synth_scripts.block_calibration)"}
    return BlockGates(
        design=sample.design, tokens=tokens, sentences=sentences, pieces=pieces,
        library=sample.library, liberty=sample.liberty, clock_ns=sample.clock_ns,
        simulator=sample.simulator, sram_bit_pJ=sample.sram_bit_pJ,
        divide_by=sample.divide_by, sources=dict(sample.sources), dims=dict(sample.dims),
        seconds=sample.seconds, method=method, sram_macros=sample.sram_macros)


def compare(calibrated: BlockGates, measured: BlockGates) -> dict:
    """``calibrated`` against ``measured`` (the same design and sentences priced in full):
    per piece and per component of :data:`TOTALS`, both in pJ per token and the relative
    error (calibrated / measured - 1), and the block's totals."""
    def row(a: dict, b: dict) -> dict:
        return {k: {"calibrated": a[k], "measured": b[k],
                    "error": (a[k] / b[k] - 1) if b[k] else None} for k in TOTALS}

    ca, me = calibrated.per_token(), measured.per_token()
    return {"design": measured.design, "tokens": measured.tokens,
            "pieces": {p: row(ca[p], me[p]) for p in PIECE_NAMES},
            "block": row(calibrated.totals(), measured.totals())}
