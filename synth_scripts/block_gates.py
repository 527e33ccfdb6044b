"""An encoder block priced in our gates: the figures of a piece and of a design, and the one
assembly of a piece's figures from its units' energies, shared by the pricing (every window
replayed at gate level, :mod:`synth_scripts.block_pricing`, :mod:`synth_scripts.block_attention`)
and the calibration (the windows priced by their fits, :mod:`synth_scripts.block_calibration`).

The pieces are ``golden_models.block_pieces.PIECES``. A linear piece's figures come from its
tiles' logic, idle clock, clock-gated energy and clocks (:func:`linear_piece`), the attention
path's from its nodes' (:func:`attention_piece`); the SRAM bits, flits and hops are counted; a
piece's movement is its flits' hops times its router's and link wires' unit costs
(:func:`movement_parts`, :func:`attention_movement_parts`).

Components, in pJ (:data:`COMPONENTS`):

- ``sram_read``, ``sram_write``: the arrays' accesses (a tile's weight, threshold and init
  rows; the key and value memories; the softmax row buffer; the LayerNorm's channel and row
  SRAMs). For NanGate 45 (the liberty's PDK table ``nangate45``), each memory's reads, whole
  writes and granule writes at its macros' measured energies (:func:`price_memories`, which
  calls :func:`synth_scripts.sram.pricing.memory_energy` per memory with the counts of
  :func:`tile_accesses`, :func:`attention_accesses`, :func:`norm_accesses`: our FreePDK45
  macros, docs/sram_macros.md). For any other liberty (no macro table in its process),
  the bits read and written times the per-bit energy of the liberty's PDK table
  (:func:`synth_scripts.scaling.sram_bit_pJ`): **not our gates**. The arrays are cut out of
  every netlist. A tile's one-time load (weights, thresholds, init) is not counted; the key and
  value writes of every sentence are.
- ``sram_deselected``: the macros' clock on the cycles they are not accessed (every macro of a
  memory but the ones an access selects, and every macro on a cycle with no access), at their
  measured deselected-cycle energy, free-running; 0 clock-gated and with the per-bit figure.
- ``compute``: the logic of the tiles and of the attention path's query x key and probability
  x value tiles, less the clock of their idle cycles and their cells' leakage.
- ``nonlinear``: the softmax nodes (the unit :class:`rtl_gen.softmax.Softmax` and its
  probability encoder) and the add+LayerNorm units, less their idle clock and their cells'
  leakage.
- ``movement``: a piece's input flits (``synth_scripts.block_pricing.piece_flits``) x their
  hops x the per-hop energy of the generated router
  (``synth_scripts.gatelevel.measure.router_energy``) on those flits. The hops default to one
  per flit (``hops_per_flit`` sets a piece's from a placement:
  :func:`matterhorn.block.hops_per_flit`); inside the attention path the hops its mesh
  counted (``cnt_hops``) on its own router. The input flits: a tile's input events (the dense
  design: ``P`` codes a flit); the attention path's query, key and value streams as their
  tiles send them; an add+LayerNorm unit's sums and stream values, each in 16-bit pieces (the
  router's widest payload; no mesh carries the raw sums yet). And the link wires those hops
  drive (``synth_scripts.block_pricing.Pricing.wires``): a flit's transitions on the router
  replay's output link x ``1/2 C V^2`` of a wire one node pitch long (the square root of the
  node's and its router's cell area), ``C`` per length from the liberty's wire-load model
  (:func:`synth_scripts.gatelevel.energy.wire_capacitance`); ``parts`` keeps the routers' and
  the wires' shares apart.
- ``idle``: the clock of the cycles a block does not work, free-running (the tiles', nodes'
  and units' replays), and the routers' idle clock (one router per tile or unit, three per
  head) on the clocks they move nothing.
- ``leakage``: the cells' leakage of every replayed tile, node and unit (the liberty's
  ``cell_leakage_power``, which :func:`synth_scripts.gatelevel.energy.energy` charges over a
  replay's clocks; taken out of ``compute`` and ``nonlinear``, not counted twice) and, with
  the macros, every macro's measured leakage over the piece's clocks at the clock period.
  The routers' leakage stays inside their per-hop and idle-clock figures (``movement``,
  ``idle``).

``total`` is the sum of the eight (free-running clock); ``gated_total`` = SRAM reads and
writes + movement + every block's clock-gated energy less its cells' leakage + leakage (no
idle clock, no deselected macro clock, the clock-gating cell's own energy and leakage on every
cycle; the routers gated too), as :func:`synth_scripts.gate_compare.measure_design` reports
them.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from golden_models.block_pieces import ATTENTION, KINDS

__all__ = [
    "COMPONENTS",
    "NODE_COMPONENT",
    "TOTALS",
    "BlockGates",
    "PieceGates",
    "MACRO_PDKS",
    "SramCosts",
    "attention_accesses",
    "attention_movement_parts",
    "attention_piece",
    "linear_piece",
    "moved",
    "memory_shapes",
    "movement_parts",
    "norm_accesses",
    "piece_gates",
    "price_memories",
    "tile_accesses",
    "tile_plan",
    "window_sample",
]

#: The energy components of a piece, in pJ.
COMPONENTS = ("sram_read", "sram_write", "sram_deselected", "compute", "nonlinear", "movement",
              "idle", "leakage")
#: The keys of a piece's (and the block's) energy: the components, the free-running total and
#: the clock-gated total.
TOTALS = (*COMPONENTS, "total", "gated_total")
#: The attention path's node kinds (its kind's units, :data:`golden_models.block_pieces.KINDS`:
#: query x key, softmax, probability x value) and the component their logic goes to.
NODE_COMPONENT = dict(zip(KINDS[ATTENTION].units, ("compute", "nonlinear", "compute"),
                          strict=True))


@dataclass
class PieceGates:
    """One piece over the run: its energy per component (pJ, all tokens), the flits it takes in
    and their hops, its clocks after the load, the cells of what was replayed, its counters
    (summed over the tokens), the SRAM bits it read and wrote, and (``parts``, pJ) where the
    attention path's logic, idle clock and movement go, node kind by node kind."""

    piece: str
    energy_pJ: dict[str, float]
    flits: int
    hops: float
    cycles: float
    cells: dict[str, int]
    counters: dict[str, int] = field(default_factory=dict)
    sram_bits: dict[str, int] = field(default_factory=dict)
    parts: dict[str, float] = field(default_factory=dict)
    seconds: float = 0.0
    #: Tiles the piece ran on (a linear piece: the run's tiles of at most ``tile_neurons``).
    tiles: int = 1
    #: With ``Pricing.windows``: each window of each tile or node priced on its own, ``{"unit":
    #: kind, "instance": i, "x": its counters, "logic", "idle", "gated": pJ, "cycles"}``
    #: (what :mod:`synth_scripts.block_calibration` fits)
    samples: list[dict] = field(default_factory=list)
    #: What its movement and routers' idle clock cost a unit (pJ): ``per_hop`` (the router),
    #: ``wire_per_hop``, ``idle_per_clock`` (a router's idle clock); the attention path's own
    #: mesh ``inner_per_hop``, ``inner_wire_per_hop``
    unit_costs: dict[str, float] = field(default_factory=dict)
    #: Its memories' shapes (``MemoryShape.to_json()`` by module path, or by node kind in the
    #: attention path) and what their accesses are counted from: a linear piece's
    #: ``{"tiles": [per tile {"shapes", "groups", "walk"}]}``; the attention path's
    #: ``{"shapes", "heads"}``; an add+LayerNorm unit's ``{"shapes", "hidden"}``
    memories: dict = field(default_factory=dict)
    #: The macros' leakage (pJ) inside ``energy_pJ["leakage"]`` (the rest is the cells'); 0 by
    #: the bit
    memory_leakage: float = 0.0

    def per_bit(self, bit_pJ: float) -> dict[str, float]:
        """:data:`TOTALS` (pJ) with the memories priced as they were before the macros: the
        bits read and written (``sram_bits``) at ``bit_pJ`` a bit, no deselected clock and no
        macro leakage; everything else as priced."""
        was = self.energy_pJ
        e = dict(was)
        e["sram_read"] = self.sram_bits.get("read", 0) * bit_pJ
        e["sram_write"] = self.sram_bits.get("write", 0) * bit_pJ
        e["sram_deselected"] = 0.0
        e["leakage"] -= self.memory_leakage
        e["total"] = math.fsum(e[c] for c in COMPONENTS)
        # clock-gated: the accesses and leakage change; the deselected clock was never in it
        e["gated_total"] = math.fsum((was["gated_total"], e["sram_read"] - was["sram_read"],
                                      e["sram_write"] - was["sram_write"],
                                      -self.memory_leakage))
        return e

    def check(self) -> None:
        """The components add up to the free-running total; the gated total adds SRAM,
        movement and the gated logic (raises ``AssertionError`` otherwise)."""
        e = self.energy_pJ
        parts = math.fsum(e[c] for c in COMPONENTS)
        if not math.isclose(parts, e["total"], rel_tol=1e-9, abs_tol=1e-9):
            raise AssertionError(f"{self.piece}: components sum to {parts} pJ, total "
                                 f"{e['total']} pJ")


@dataclass
class BlockGates:
    """One design of a block measured in gates
    (:func:`matterhorn.block_gates.measure_block_gates`).

    ``pieces`` in :data:`PIECES` order; energies over every token of the run (``tokens``);
    :meth:`per_token` and :meth:`to_json` divide by them. ``sources`` says where each
    component's cost comes from (:meth:`synth_scripts.block_pricing.Pricing.sources`); ``dims``
    the block's sizes. The events each position delivered, and the paper's model at those
    rates, are the run's (``regression.block.BlockRun``), counted there once.
    """

    design: str
    tokens: int
    sentences: int
    pieces: list[PieceGates]
    library: str
    liberty: str
    clock_ns: float
    simulator: str
    sram_bit_pJ: float
    divide_by: float
    sources: dict[str, str]
    dims: dict[str, int]
    seconds: float
    #: How the figures were made when not by replaying every window: ``{"calibrated": True,
    #: "sample_sentences", "sample_tokens", "fits", ...}`` (:mod:`synth_scripts.block_calibration`)
    method: dict = field(default_factory=dict)
    #: The memories priced at the shipped macro table's measured energies (NanGate 45), not
    #: by the bit (:class:`SramCosts`)
    sram_macros: bool = False

    def piece(self, name: str) -> PieceGates:
        return next(p for p in self.pieces if p.piece == name)

    def per_token(self) -> dict[str, dict[str, float]]:
        """``{piece: {component: pJ per token}}`` with ``total`` and ``gated_total``."""
        return {p.piece: {k: p.energy_pJ[k] / self.tokens for k in TOTALS} for p in self.pieces}

    def totals(self) -> dict[str, float]:
        """The block's :data:`TOTALS` in pJ per token."""
        per = self.per_token()
        return {k: math.fsum(e[k] for e in per.values()) for k in TOTALS}

    def per_bit_totals(self) -> dict[str, float]:
        """The block's :data:`TOTALS` in pJ per token with its memories priced by the bit
        (:meth:`PieceGates.per_bit` at ``sram_bit_pJ``): the accounting before the macros, to
        set beside them. Equal to :meth:`totals` when the memories already go by the bit."""
        per = [p.per_bit(self.sram_bit_pJ) for p in self.pieces]
        return {k: math.fsum(e[k] for e in per) / self.tokens for k in TOTALS}

    def dump(self) -> dict:
        """Everything of the measurement as plain JSON data: :meth:`load` rebuilds it, equal
        (:meth:`to_json` is the report's, per token)."""
        return dataclasses.asdict(self)

    @classmethod
    def load(cls, data: dict) -> BlockGates:
        """The measurement :meth:`dump` gave ``data`` of."""
        return cls(**{**data, "pieces": [PieceGates(**p) for p in data["pieces"]]})

    def to_json(self) -> dict:
        return {
            "design": self.design,
            "unit": "pJ per token",
            "tokens": self.tokens,
            "sentences": self.sentences,
            "library": self.library,
            "liberty": self.liberty,
            "clock_ns": self.clock_ns,
            "simulator": self.simulator,
            "sram_pJ_per_bit": self.sram_bit_pJ,
            "sram_macros": self.sram_macros,
            "scaling_divide_by": self.divide_by,
            "pieces": self.per_token(),
            "totals": self.totals(),
            "sources": dict(self.sources),
            "detail": {p.piece: {"flits": p.flits, "hops": p.hops,
                                 "cycles_per_token": p.cycles / self.tokens, "cells": p.cells,
                                 "sram_bits": p.sram_bits,
                                 "memory_leakage_pJ": p.memory_leakage / self.tokens,
                                 "parts_pJ": {k: v / self.tokens for k, v in p.parts.items()},
                                 "seconds": round(p.seconds, 1)}
                       for p in self.pieces},
            "seconds": round(self.seconds, 1),
            "method": self.method or {"calibrated": False},
        }


# -- the one assembly of a piece -------------------------------------------------------------------


def piece_gates(name: str, *, sram_read: float = 0.0, sram_write: float = 0.0,
                sram_deselected: float = 0.0, compute: float = 0.0, nonlinear: float = 0.0,
                movement: float = 0.0, idle: float = 0.0, leakage: float = 0.0,
                gated_logic: float, **detail) -> PieceGates:
    """A :class:`PieceGates` from its components (pJ); ``gated_logic`` is its blocks'
    clock-gated energy less their cells' leakage (what replaces compute, nonlinear and idle
    when gated; the deselected macros' clock stops too, leakage stays)."""
    e = {"sram_read": sram_read, "sram_write": sram_write, "sram_deselected": sram_deselected,
         "compute": compute, "nonlinear": nonlinear, "movement": movement, "idle": idle,
         "leakage": leakage}
    e["total"] = math.fsum(e.values())
    e["gated_total"] = math.fsum((sram_read, sram_write, movement, gated_logic, leakage))
    p = PieceGates(name, e, **detail)
    p.check()
    return p


# -- the memories, priced by access -------------------------------------------------------------


#: The PDK tables (:mod:`synth_scripts.gatelevel.pdk`) whose liberty is drawn for the process
#: of the shipped SRAM macros (FreePDK45, :mod:`synth_scripts.sram`): a pricing on one of them
#: prices its memories at the macros' measured energies, any other by the bit.
MACRO_PDKS = ("nangate45",)


@dataclass(frozen=True)
class SramCosts:
    """How one measurement prices its memories: at the measured macros of ``table`` (a
    :class:`synth_scripts.sram.table.MacroTable`; NanGate 45, the macros' process) or, with
    ``table`` None, at ``bit_pJ`` a bit read or written (the PDK table's per-bit figure);
    ``clock_ns`` the clock their leakage runs over."""

    table: object | None
    bit_pJ: float
    clock_ns: float

    @classmethod
    def of_library(cls, lib, clock_ns: float) -> SramCosts:
        """The one rule of which memories a liberty's measurement prices how: ``lib`` (a
        :func:`synth_scripts.gatelevel.liberty.prepare` result) of :data:`MACRO_PDKS` at the
        shipped macro table (:func:`synth_scripts.sram.table.load`), any other at its PDK
        table's per-bit figure (:func:`synth_scripts.scaling.sram_bit_pJ`)."""
        from synth_scripts import scaling
        from synth_scripts.sram import table

        return cls(table.load() if lib.pdk.name in MACRO_PDKS else None,
                   scaling.sram_bit_pJ(lib), clock_ns)

    def macros_named(self) -> str:
        """``our FreePDK45 macros (OpenRAM 1.2.48, ngspice-39, TT 1.0 V 25 C; ...)``: what
        :attr:`table` measured, for a report's sources."""
        m = self.table.macros[0]
        prov, bench = m["provenance"], m["bench"]
        return (f"our FreePDK45 macros (OpenRAM {prov['openram']}, {prov['ngspice']}, "
                f"{bench['corner']} {bench['vdd']:g} V {bench['temp']:g} C; {self.table.source}, "
                "synth_scripts.sram, docs/sram_macros.md)")

    def price(self, uses, *, read_bits: int, write_bits: int) -> dict[str, float]:
        """``{"read", "write", "deselected", "leakage"}`` pJ of a piece's memories: with the
        macros, :func:`price_memories` of each ``(shapes, accesses, cycles)`` of ``uses``;
        else ``read_bits`` and ``write_bits`` at the per-bit figure (no deselected clock, no
        leakage)."""
        if self.table is None:
            return {"read": read_bits * self.bit_pJ, "write": write_bits * self.bit_pJ,
                    "deselected": 0.0, "leakage": 0.0}
        out = dict.fromkeys(("read", "write", "deselected", "leakage"), 0.0)
        for shapes, accesses, cycles in uses:
            got = price_memories(shapes, accesses, cycles=cycles, clock_ns=self.clock_ns,
                                 table=self.table)
            for k, v in got.items():
                out[k] += v
        return out


def memory_shapes(component) -> dict[str, dict]:
    """``component``'s memories (:func:`synth_scripts.sram.shapes.memories`, elaborated):
    ``MemoryShape.to_json()`` by module path."""
    from synth_scripts.sram.shapes import memories

    return {m.path: m.to_json() for m in memories(component)}


def tile_accesses(plan: Mapping, windows: int, counters: Mapping[str, int]) -> dict:
    """A tile's accesses over ``windows`` windows with ``counters`` (summed over them; its
    ``plan``: ``groups`` lane groups, ``walk`` steps of the threshold walk, 0 for raw sums):
    a weight row read per ``weight_row_reads``, a threshold row per step and group, an init
    row per group, each window (docs/sram_macros.md)."""
    g = plan["groups"]
    return {"weights.mem": {"reads": int(counters.get("weight_row_reads", 0))},
            "thresholds.mem": {"reads": plan["walk"] * g * windows},
            "init.mem": {"reads": g * windows}}


def tile_plan(config, dense: bool, kept: dict | None = None) -> dict:
    """What a tile's memories' accesses are counted from (:func:`tile_accesses`): its memories'
    ``shapes`` (:func:`memory_shapes` of the elaborated :class:`rtl_gen.dense.DenseTile` or
    :class:`rtl_gen.tile.NeuronTile` of ``config``), its lane ``groups`` and the ``walk``
    steps of its threshold walk (none for raw sums). ``kept`` (a caller's cache) keeps each
    configuration's plan, elaborated once."""
    from rtl_gen.dense import DenseTile
    from rtl_gen.tile import NeuronTile

    key = (dense, repr(config))
    if kept is not None and key in kept:
        return kept[key]
    tile = DenseTile(config) if dense else NeuronTile(config)
    plan = {"shapes": memory_shapes(tile), "groups": config.groups,
            "walk": 0 if config.raw_sums else config.T - 1}
    if kept is not None:
        kept[key] = plan
    return plan


def attention_accesses(counters: Mapping[str, int], h: int) -> dict:
    """Head ``h``'s memories' accesses from the attention path's ``counters`` over the run, by
    node kind: the key memory read a row per ``qk_weight_row_reads`` and written a code per
    ``qk_key_writes``; the value memory likewise (``pv_``); the softmax row buffer written
    once per score and read in its two later passes."""
    def c(name: str) -> int:
        return int(counters.get(f"cnt_{name}_h{h}", 0))

    scores = c("sm_scores_in")
    return {"qk": {"reads": c("qk_weight_row_reads"), "granule_writes": c("qk_key_writes")},
            "sm": {"reads": 2 * scores, "writes": scores},
            "pv": {"reads": c("pv_weight_row_reads"), "granule_writes": c("pv_value_writes")}}


def norm_accesses(hidden: int, rows: int) -> dict:
    """An add+LayerNorm unit's accesses over ``rows`` rows of ``hidden`` channels: a channel
    word read in both passes, the sum written, then read back."""
    return {"channels.mem": {"reads": 2 * hidden * rows},
            "row.mem": {"reads": hidden * rows, "writes": hidden * rows}}


def price_memories(shapes: Mapping[str, dict], accesses: Mapping[str, Mapping[str, int]], *,
                   cycles: float, clock_ns: float, table) -> dict[str, float]:
    """``{"read", "write", "deselected", "leakage"}`` pJ of the memories of ``shapes`` with
    ``accesses`` (by the same names: ``reads``, ``writes``, ``granule_writes``) over a run of
    ``cycles`` clocks (rounded; at least its accesses), free-running:
    :func:`synth_scripts.sram.pricing.memory_energy` of each, summed. Clock-gated, the same
    without ``deselected``."""
    from synth_scripts.sram.pricing import memory_energy
    from synth_scripts.sram.shapes import MemoryShape

    out = dict.fromkeys(("read", "write", "deselected", "leakage"), 0.0)
    for name, acc in accesses.items():
        reads, writes = acc.get("reads", 0), acc.get("writes", 0)
        granules = acc.get("granule_writes", 0)
        busy = reads + writes + granules
        run = max(round(cycles), busy)
        e = memory_energy(MemoryShape(**shapes[name]), reads=reads, writes=writes,
                          granule_writes=granules, idle_cycles=run - busy, cycles=run,
                          clock_ns=clock_ns, table=table)
        out["read"] += e.read
        out["write"] += e.write
        out["deselected"] += e.deselected
        out["leakage"] += e.leakage
    return out


def movement_parts(u: Mapping[str, float], hops: float, routers: int,
                   cycles: float) -> dict[str, float]:
    """A tile's or unit's piece's movement from its ``unit_costs`` ``u`` (pJ): the hops of its
    input flits through the routers and on the link wires, and the idle clock of its
    ``routers`` on the clocks of the piece's ``cycles`` they move nothing."""
    return {"router_hops": hops * u["per_hop"], "link_wires": hops * u["wire_per_hop"],
            "routers_idle_clock": max(routers * cycles - hops, 0.0) * u["idle_per_clock"]}


def attention_movement_parts(u: Mapping[str, float], hops: float, inner: float, heads: int,
                             cycles: float) -> dict[str, float]:
    """The attention path's movement from its ``unit_costs`` ``u`` (pJ): its input flits'
    ``hops`` and the ``inner`` hops of its own mesh, each through a router and on the link
    wires, and the idle clock of its three routers a head on the clocks they move nothing."""
    return {"input_movement": hops * u["per_hop"], "input_link_wires": hops * u["wire_per_hop"],
            "inner_movement": inner * u["inner_per_hop"],
            "inner_link_wires": inner * u["inner_wire_per_hop"],
            "routers_idle_clock": max(3 * heads * cycles - hops - inner, 0.0)
            * u["idle_per_clock"]}


def moved(parts: Mapping[str, float]) -> float:
    """The movement of ``parts``: everything but the routers' idle clock."""
    return math.fsum(v for k, v in parts.items() if k != "routers_idle_clock")


def window_sample(unit: str, instance: int, counters: Mapping[str, int], window: dict) -> dict:
    """One window of one tile or node priced on its own (``PieceGates.samples``)."""
    return {"unit": unit, "instance": instance, "x": {k: int(v) for k, v in counters.items()},
            "logic": window["free_pJ"] - window["idle_clock_pJ"],
            "idle": window["idle_clock_pJ"], "gated": window["gated_pJ"],
            "cycles": window["cycles"], "busy": window["busy_cycles"]}


def linear_piece(name: str, *, logic: float, idle: float, gated: float, cell_leakage: float,
                 cycles: float, read_bits: int, sram: Mapping[str, float], flits: int,
                 hops: float, tiles: int, unit_costs: Mapping[str, float], cells: dict,
                 counters: dict, memories: dict | None = None,
                 samples: list | None = None) -> PieceGates:
    """A linear piece from its ``tiles``' summed ``logic``, ``idle`` clock and ``gated``
    energy (pJ, the cells' leakage in ``logic`` and ``gated``: ``cell_leakage``, moved to
    ``leakage``) and its ``cycles`` (the tiles run side by side), its memories' ``sram``
    (:meth:`SramCosts.price`) and the bits its tiles read, its input ``flits`` and their
    ``hops``: movement and the routers' idle clock (a router a tile) from its
    ``unit_costs``."""
    parts = movement_parts(unit_costs, hops, tiles, cycles)
    return piece_gates(
        name, sram_read=sram["read"], sram_write=sram["write"],
        sram_deselected=sram["deselected"], compute=logic - cell_leakage,
        movement=moved(parts), idle=idle + parts["routers_idle_clock"],
        leakage=cell_leakage + sram["leakage"], memory_leakage=sram["leakage"],
        gated_logic=gated - cell_leakage, flits=flits,
        hops=hops, cycles=cycles, cells=cells, counters=counters,
        sram_bits={"read": read_bits, "write": 0}, tiles=tiles, parts=parts,
        samples=[] if samples is None else samples, unit_costs=unit_costs,
        memories={} if memories is None else memories)


def attention_piece(energy: Mapping[str, float], *, read_bits: int, write_bits: int,
                    sram: Mapping[str, float], flits: int, hops: float, inner_hops: float,
                    heads: int, cycles: float, unit_costs: Mapping[str, float], cells: dict,
                    counters: dict, memories: dict | None = None,
                    samples: list | None = None) -> PieceGates:
    """The attention piece from its nodes' ``energy`` (``compute``, ``nonlinear``, ``idle``,
    ``gated``, ``leakage`` (the cells', inside the other three) and per node kind
    ``<unit>_logic``, ``<unit>_idle_clock``, ``<unit>_leakage``; pJ), its ``cycles``, its
    memories' ``sram`` (:meth:`SramCosts.price`) and the bits its key, value and row memories
    read and wrote, its ``flits`` (input and inner, as the caller counts them), its input
    flits' ``hops`` and its own mesh's ``inner_hops``: movement and the routers' idle clock
    (three a head) from its ``unit_costs``."""
    moves = attention_movement_parts(unit_costs, hops, inner_hops, heads, cycles)
    parts = {k: v for k, v in energy.items() if k.startswith(tuple(NODE_COMPONENT))}
    parts.update(moves)
    leak = {c: math.fsum(energy.get(f"{u}_leakage", 0.0) for u, cu in NODE_COMPONENT.items()
                         if cu == c) for c in set(NODE_COMPONENT.values())}
    return piece_gates(
        "attention", sram_read=sram["read"], sram_write=sram["write"],
        sram_deselected=sram["deselected"], compute=energy["compute"] - leak["compute"],
        nonlinear=energy["nonlinear"] - leak["nonlinear"], movement=moved(moves),
        idle=energy["idle"] + moves["routers_idle_clock"],
        leakage=energy["leakage"] + sram["leakage"], memory_leakage=sram["leakage"],
        gated_logic=energy["gated"] - energy["leakage"],
        flits=flits, hops=hops + inner_hops, cycles=cycles, cells=cells, counters=counters,
        sram_bits={"read": read_bits, "write": write_bits}, parts=parts,
        samples=[] if samples is None else samples, unit_costs=unit_costs,
        memories={} if memories is None else memories)
