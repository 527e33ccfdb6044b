"""The pieces of an encoder block priced in our gates, piece by piece and component by component.

:func:`matterhorn.block_gates.measure_block_gates` prices one design of a block of an
integer-mode QNN on captured sentences; it reads the block's golden layers, attention constants
and units from the QNN (``networks``, ``regression``, which this package does not import,
docs/architecture.md) and hands them to the functions here, which price each piece of
:data:`PIECES` on what it consumes in the run, each checked bit-exact before it is priced:

==============  ===========================================================================
piece           how it is priced
==============  ===========================================================================
query, key,     :func:`price_linear`: the piece's tile (:class:`rtl_gen.tile.NeuronTile`,
value,          :class:`rtl_gen.dense.DenseTile` for the dense design; raw-sum mode,
attn_out,       ``RTLConfig.raw_sums``, for ``attn_out`` and ``ffn_contract``) on the codes the
ffn_expand,     piece consumes: :func:`synth_scripts.gate_compare.run_tile` (RTL, checked
ffn_contract    against the golden layer) and :func:`~synth_scripts.gate_compare.tile_energy`
                (SRAM macros cut, the netlist replayed on the recorded stimulus, the load phase
                subtracted)
attention       :func:`price_attention`: the attention path
                (:class:`rtl_gen.attention.AttentionSystem`) simulated once on the sequences
                (:func:`rtl_gen.attention.simulate_attention`, its output checked against the
                captured ``attn_out_in`` codes) while the ports of each head's three nodes are
                recorded; each node (the query x key tile, the softmax node, the probability x
                value tile) is mapped alone, its key, value or row memory cut out
                (``gatelevel.map_netlist(cut_memories=True)``), and replayed on its own ports'
                trace (the configuration load subtracted; the key and value writes of every
                sentence are counted)
norm_attn,      :func:`price_norm`: the residual-add + LayerNorm unit
norm_ffn        (:class:`rtl_gen.add_norm.AddNorm`) on this run's rows, its SRAMs cut:
                :func:`synth_scripts.unit_gates.run_add_norm` and
                :func:`~synth_scripts.unit_gates.measure`
==============  ===========================================================================

Why the attention path is priced node by node and not as one netlist: the whole
``AttentionSystem`` of the small random block (2 heads x 3 nodes, 6 routers, its key, value
and row memories as flip-flops) maps to about 60,000 NanGate cells (8,100 flip-flops), in 4.5
minutes of Yosys on two shared cores (``seq`` 12, ``d_k`` 16), and a replay of that size runs
at a few cycles a second in Icarus; its nodes alone, memories cut, are 2,800 (query x key),
3,100 (probability x value) and 6,500 (softmax) cells (``seq`` 8, ``d_k`` 4), one netlist each
replayed once per head. What the node-by-node figure leaves out is the glue between them (the
load and query forks, the output merge, the flit injectors and ejectors) and the routers' own
toggles, which are priced by hop (below).

Components, in pJ (:data:`COMPONENTS`):

- ``sram_read``, ``sram_write``: bits read from and written to the arrays (a tile's weight,
  threshold and init rows; the key and value memories; the softmax row buffer; the
  LayerNorm's channel and row SRAMs) times the per-bit energy of the liberty's PDK table
  (:func:`synth_scripts.scaling.sram_bit_pJ`). **Not our gates**: the arrays are cut out of
  every netlist. A tile's one-time load (weights, thresholds, init) is not counted; the key and
  value writes of every sentence are.
- ``compute``: the logic of the tiles and of the attention path's query x key and probability
  x value tiles, less the clock of their idle cycles.
- ``nonlinear``: the softmax nodes (the unit :class:`rtl_gen.softmax.Softmax` and its
  probability encoder) and the add+LayerNorm units, less their idle clock.
- ``movement``: a piece's input flits (:func:`piece_flits`) x their hops x the per-hop energy of
  the generated router (:func:`synth_scripts.gate_compare.router_energy`) on those flits. The
  hops default to one per flit (``hops_per_flit`` sets a piece's from a placement:
  :func:`matterhorn.block.hops_per_flit`);
  inside the attention path the hops its mesh counted (``cnt_hops``) on its own router. The
  input flits: a tile's input events (the dense design: ``P`` codes a flit); the attention
  path's query, key and value streams as their tiles send them; an add+LayerNorm unit's sums
  and stream values, each in 16-bit pieces (the router's widest payload; no mesh carries the
  raw sums yet). And the link wires those hops drive (:meth:`Pricing.wires`): a flit's
  transitions on the router replay's output link x ``1/2 C V^2`` of a wire one node pitch
  long (the square root of the node's and its router's cell area), ``C`` per length from the
  liberty's wire-load model (:func:`synth_scripts.gate_energy.wire_capacitance`); ``parts``
  keeps the routers' and the wires' shares apart.
- ``idle``: the clock of the cycles a block does not work, free-running (the tiles', nodes'
  and units' replays), and the routers' idle clock (one router per tile or unit, three per
  head) on the clocks they move nothing.

``total`` is the sum of the six (free-running clock); ``gated_total`` = SRAM + movement + every
block's clock-gated energy (no idle clock, the clock-gating cell's own energy on every cycle;
the routers gated too), as :func:`synth_scripts.gate_compare.measure_design` reports them.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch

__all__ = [
    "COMPONENTS",
    "NODE_COMPONENT",
    "PIECES",
    "RAW_SUMS",
    "TOTALS",
    "AttentionSequence",
    "BlockGates",
    "PieceGates",
    "Pricing",
    "attention_movement_parts",
    "movement_parts",
    "piece_flits",
    "price_attention",
    "price_linear",
    "price_norm",
    "validate_attention",
    "window_features",
]

#: The pieces of a block in data-flow order (:data:`regression.block.PIECES`).
PIECES = ("query", "key", "value", "attention", "attn_out", "norm_attn", "ffn_expand",
          "ffn_contract", "norm_ffn")
#: The energy components of a piece, in pJ.
COMPONENTS = ("sram_read", "sram_write", "compute", "nonlinear", "movement", "idle")
#: The keys of a piece's (and the block's) energy: the components, the free-running total and
#: the clock-gated total.
TOTALS = (*COMPONENTS, "total", "gated_total")
#: The linear pieces whose tile sends raw sums (to a residual add).
RAW_SUMS = ("attn_out", "ffn_contract")
#: The attention path's nodes per head (:data:`rtl_gen.attention.PARTS`) and their component.
NODE_COMPONENT = {"qk": "compute", "sm": "nonlinear", "pv": "compute"}
#: Flits a router energy is measured on (:func:`synth_scripts.gate_compare.router_energy`).
ROUTER_FLITS = 256
#: The widest payload of a router flit (``rtl_gen.layouts.flit_layout``): a wider value (a sum,
#: a stream value) travels as several flits.
FLIT_BITS = 16


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
    #: Tiles the piece ran on (a linear piece: the run's tiles of at most ``tile_neurons``):
    #: what :func:`regression.block._deliveries` divides a layer's input counters by.
    tiles: int = 1
    #: With ``Pricing.windows``: each window of each tile or node priced on its own, ``{"unit":
    #: kind, "instance": i, "x": its counters, "logic", "idle", "gated": pJ, "cycles"}``
    #: (what :mod:`synth_scripts.block_calibration` fits)
    samples: list[dict] = field(default_factory=list)
    #: What its movement and routers' idle clock cost a unit (pJ): ``per_hop`` (the router),
    #: ``wire_per_hop``, ``idle_per_clock`` (a router's idle clock); the attention path's own
    #: mesh ``inner_per_hop``, ``inner_wire_per_hop``
    unit_costs: dict[str, float] = field(default_factory=dict)

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
    component's cost comes from (:meth:`Pricing.sources`); ``deliveries`` and ``values`` are
    the events (codes for the dense design) delivered and the values held at each
    spike-encoded position, as :func:`regression.block.run_block` counts them (the model's
    rates, :func:`matterhorn.block_gates.model_ratios`); ``dims`` the block's sizes.
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
    deliveries: dict[str, int]
    values: dict[str, int]
    T: int
    dims: dict[str, int]
    seconds: float
    #: How the figures were made when not by replaying every window: ``{"calibrated": True,
    #: "sample_sentences", "sample_tokens", "fits", ...}`` (:mod:`synth_scripts.block_calibration`)
    method: dict = field(default_factory=dict)

    def piece(self, name: str) -> PieceGates:
        return next(p for p in self.pieces if p.piece == name)

    def per_token(self) -> dict[str, dict[str, float]]:
        """``{piece: {component: pJ per token}}`` with ``total`` and ``gated_total``."""
        return {p.piece: {k: p.energy_pJ[k] / self.tokens for k in TOTALS} for p in self.pieces}

    def totals(self) -> dict[str, float]:
        """The block's :data:`TOTALS` in pJ per token."""
        per = self.per_token()
        return {k: math.fsum(e[k] for e in per.values()) for k in TOTALS}

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
            "scaling_divide_by": self.divide_by,
            "pieces": self.per_token(),
            "totals": self.totals(),
            "sources": dict(self.sources),
            "deliveries": dict(self.deliveries),
            "values": dict(self.values),
            "detail": {p.piece: {"flits": p.flits, "hops": p.hops,
                                 "cycles_per_token": p.cycles / self.tokens, "cells": p.cells,
                                 "sram_bits": p.sram_bits,
                                 "parts_pJ": {k: v / self.tokens for k, v in p.parts.items()},
                                 "seconds": round(p.seconds, 1)}
                       for p in self.pieces},
            "seconds": round(self.seconds, 1),
            "method": self.method or {"calibrated": False},
        }


# -- flits ------------------------------------------------------------------------------------


def piece_flits(cfg, dense: bool, codes: torch.Tensor, mask) -> list[list[tuple[int, int]]]:
    """The flits that carry ``codes [tokens, n]`` to a piece, per token: one per event through
    ``mask`` ``(addr, tau)``, or for the dense design the codes packed ``P`` per flit
    (:func:`synth_scripts.gate_compare` convention, ``cfg`` the consuming tile's)."""
    from golden_models import encode_events
    from synth_scripts.gate_compare import _flits

    tmask = (1 << cfg.time_width) - 1
    out = []
    for row in codes:
        if dense:
            beats = [{"code": int(q) & tmask} for q in row.tolist()]
        else:
            index, t = encode_events(row, mask)
            beats = [{"addr": int(a), "tau": int(b)}
                     for a, b in zip(index.tolist(), t.tolist(), strict=True)]
        out.append(_flits(cfg, dense, beats))
    return out


# -- the energy of one piece -------------------------------------------------------------------



def _piece(name: str, *, sram_read: float = 0.0, sram_write: float = 0.0,
           compute: float = 0.0, nonlinear: float = 0.0, movement: float = 0.0,
           idle: float = 0.0, gated_logic: float, **detail) -> PieceGates:
    """A :class:`PieceGates` from its components (pJ); ``gated_logic`` is its blocks'
    clock-gated energy (what replaces compute, nonlinear and idle when gated)."""
    e = {"sram_read": sram_read, "sram_write": sram_write, "compute": compute,
         "nonlinear": nonlinear, "movement": movement, "idle": idle}
    e["total"] = math.fsum(e.values())
    e["gated_total"] = sram_read + sram_write + movement + gated_logic
    p = PieceGates(name, e, **detail)
    p.check()
    return p


@dataclass
class Pricing:
    """What the pieces of one measurement share: the liberty (its library, PDK table and the
    per-bit SRAM energy of that table, :func:`synth_scripts.scaling.sram_bit_pJ`; the factor
    that scales it to 22 nm / 0.8 V, :func:`synth_scripts.scaling.scaling_rule`), the working
    folder, the replays' simulator and clock, the mapped netlists kept across calls
    (``cache``), the folder they are mapped in (``netlist_dir``: a subfolder per netlist named
    by its Verilog's digest, with its replay builds; shared by every design of a run) and each
    piece's hops per input flit (``hops_per_flit``; default one)."""

    lib_path: Path
    work: Path
    sim: str
    clock_ns: float
    library: str
    liberty: str
    sram_bit_pJ: float
    sram_bit_source: str
    divide_by: float
    cache: dict
    hops_per_flit: Mapping[str, float]
    netlist_dir: Path
    lib: object  # the parsed liberty (synth_scripts.liberty.Library): its wires
    #: each window of each tile and node priced on its own too (``PieceGates.samples``)
    windows: bool = False

    @classmethod
    def prepare(cls, lib_path, work, *, sim: str = "verilator", clock_ns: float = 10.0,
                cache: dict | None = None,
                hops_per_flit: Mapping[str, float] | None = None,
                netlist_dir=None, windows: bool = False) -> Pricing:
        """Read the liberty at ``lib_path`` (its working copy in ``work/lib``). ``cache``
        (kept by the caller across designs) holds a section per liberty; ``netlist_dir``
        (default ``work/netlists``) is where the netlists are mapped and built; ``windows``:
        :attr:`windows`."""
        from synth_scripts import liberty, scaling

        work = Path(work)
        lib = liberty.prepare(Path(lib_path), work / "lib")
        cache = {} if cache is None else cache
        rule = scaling.scaling_rule(lib.nom_voltage, scaling.technology_of(lib.name))
        return cls(Path(lib_path), work, sim, clock_ns, lib.name, lib.source_name,
                   scaling.sram_bit_pJ(lib), lib.pdk.sram_bit["source"], rule["divide_by"],
                   cache.setdefault(lib.sha256, {}), dict(hops_per_flit or {}),
                   Path(netlist_dir) if netlist_dir is not None else work / "netlists",
                   lib.library, windows)

    def router(self, flits, payload_width: int, addr_width: int, *, mesh=None,
               kind: str = "routers") -> dict:
        """:func:`synth_scripts.gate_compare.router_energy` on the first
        :data:`ROUTER_FLITS` of ``flits``; ``kind`` keeps apart the routers of other meshes."""
        from synth_scripts.gate_compare import MESH, router_energy

        return router_energy(flits[:ROUTER_FLITS], payload_width, addr_width, self.lib_path,
                             self.work / kind, self.sim, self.clock_ns,
                             self.cache.setdefault(kind, {}), mesh=mesh or MESH,
                             netlist_dir=self.netlist_dir)

    def wires(self, router: dict, hops: float, node_area_um2: float) -> float:
        """pJ of the link wires that ``hops`` flit hops drive: each hop a link as long as a
        node's pitch (the square root of ``node_area_um2`` and the router's area), each flit
        making the transitions it made on the router replay's output link
        (``link_toggles_per_flit``), each transition :func:`synth_scripts.gate_energy.link_pJ`."""
        from synth_scripts.gate_energy import link_pJ

        pitch = math.sqrt(node_area_um2 + router["area_um2"])
        return hops * router["link_toggles_per_flit"] * link_pJ(self.lib, pitch)

    def hops(self, piece: str, flits: int) -> float:
        """The hops ``flits`` input flits of ``piece`` make: one each unless
        ``hops_per_flit`` gives the piece's."""
        return flits * float(self.hops_per_flit.get(piece, 1.0))

    def sources(self) -> dict[str, str]:
        """Where each component's cost comes from."""
        from synth_scripts.gate_energy import wire_capacitance

        at = (f"{self.library} ({self.liberty}), {self.clock_ns:g} ns clock, {self.sim} "
              "replay")
        bit = f"{self.sram_bit_pJ:.4g} pJ/bit"
        wire = wire_capacitance(self.lib)[1]
        return {
            "compute": "gate-level replay of each piece's own netlist on its recorded RTL "
                       "stimulus (synth_scripts.gatelevel, priced by synth_scripts.gate_energy):"
                       " the tiles (rtl_gen.tile.NeuronTile or rtl_gen.dense.DenseTile, SRAM "
                       "macros cut), the attention path's query x key and probability x value "
                       f"tiles (rtl_gen.kv_tiles, key and value memories cut); {at}",
            "nonlinear": "gate-level replay of each head's softmax node (rtl_gen.attn_softmax."
                         "SoftmaxNode: rtl_gen.softmax.Softmax and its probability encoder, "
                         "row buffer cut) on the attention path's recorded stimulus, and of "
                         "the add+LayerNorm unit (rtl_gen.add_norm.AddNorm, SRAMs cut) on this "
                         f"run's rows (synth_scripts.unit_gates); {at}",
            "sram_read": f"NOT our gates: bits read x {bit}, {self.sram_bit_source}, scaled to "
                         f"{self.library} (synth_scripts.scaling.sram_bit_pJ, Stillmaker & "
                         "Baas)",
            "sram_write": "NOT our gates: bits written (key and value codes, softmax row, "
                          f"LayerNorm row) x the same {bit} (a read's figure)",
            "movement": "gate-level replay of the generated router (rtl_gen.router.Router) "
                        "moving each piece's own input flits, one per clock "
                        "(synth_scripts.gate_compare.router_energy): its per-hop energy x the "
                        "piece's flit hops (one hop per flit unless a placement gives them), "
                        "and inside the attention path the hops its mesh counted, on its own "
                        f"router; {at}; and the link wires: per hop, the transitions a flit "
                        "made on the replayed router's output link x 1/2 C V^2 of a wire as "
                        "long as the node's pitch (the square root of the node's and its "
                        "router's cell area; the SRAM macros' area left out, so the pitch is "
                        f"a lower bound), C at {wire}",
            "idle": "the clock of the cycles each tile, node and unit does not work "
                    "(free-running clock), and the routers' idle clock on the clocks they move "
                    "nothing",
            "gated_total": "SRAM + movement + every block's clock-gated energy (its idle clock "
                           "stopped, the clock-gating cell's own energy added)",
            "not_priced": "the attention path's glue (load and query forks, output merge, flit "
                          "injectors and ejectors); the tiles' one-time load (weights, "
                          "thresholds, init) and the units' and nodes' one-time constants",
        }


def _unit_costs(pr: Pricing, router: dict, area: float, prefix: str = "") -> dict:
    """``PieceGates.unit_costs`` of a router moving flits between nodes of ``area`` um^2."""
    out = {"per_hop": router["per_hop_pJ"], "wire_per_hop": pr.wires(router, 1.0, area)}
    if not prefix:
        out["idle_per_clock"] = router["idle_per_clock_pJ"]
    return {f"{prefix}{k}": v for k, v in out.items()}


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


def _moved(parts: Mapping[str, float]) -> float:
    """The movement of ``parts``: everything but the routers' idle clock."""
    return math.fsum(v for k, v in parts.items() if k != "routers_idle_clock")


def _sample(unit: str, instance: int, counters: Mapping[str, int], window: dict) -> dict:
    """One window of one tile or node priced on its own (``PieceGates.samples``)."""
    return {"unit": unit, "instance": instance, "x": {k: int(v) for k, v in counters.items()},
            "logic": window["free_pJ"] - window["idle_clock_pJ"],
            "idle": window["idle_clock_pJ"], "gated": window["gated_pJ"],
            "cycles": window["cycles"]}


# -- the linear pieces -------------------------------------------------------------------------


def price_linear(pr: Pricing, name: str, tiles, design: str, codes: torch.Tensor) -> PieceGates:
    """A linear piece: ``design``'s tiles (``tiles``: ``(layer, config)`` per tile, the layer's
    neurons as the run partitions them, :func:`regression.block.tile_slices`; raw sums or
    codes) on ``codes [tokens, n_in]``, each token a window, at RTL (each tile checked against
    its golden layer) and in gates (tiles of one configuration share a netlist); its input
    flits, sent once by their producers to every tile, through a router per tile."""
    from rtl_gen.dense import dense_pack
    from synth_scripts.gate_compare import run_tile, tile_energy

    compute = idle = gated = area = 0.0
    sram_bits, cycles, counters, cells, samples = 0, 0, Counter(), 0, []
    config0 = tiles[0][1]  # every tile's input: the layer's n_in, its code width
    for i, (layer, config) in enumerate(tiles):
        run = run_tile(layer, design, codes, config=config)
        tile = tile_energy(layer, design, run, pr.lib_path, pr.work / name / f"tile{i}", pr.sim,
                           pr.clock_ns, pr.cache.setdefault("tiles", {}), config=config,
                           one_replay=True, netlist_dir=pr.netlist_dir, windows=pr.windows)
        samples += [_sample("tile", i, c, w)
                    for c, w in zip(run.counters, tile.get("windows", ()), strict=False)]
        n = run.windows
        compute += (tile["free_pJ"] - tile["idle_clock_pJ"]) * n
        idle += tile["idle_clock_pJ"] * n
        gated += tile["gated_pJ"] * n
        sram_bits += run.sram_bits
        for c in run.counters:  # update, not +: a counter that stayed 0 is kept
            counters.update(c)
        cycles = max(cycles, tile["cycles"] * n)  # the tiles run side by side
        cells = max(cells, tile["cells"])
        area = max(area, tile["area_um2"])
        if i == 0:  # what every tile takes in
            flits = [f for w in run.flits for f in w]
    dense = design == "dense"
    width = dense_pack(config0) * config0.time_width if dense else config0.time_width
    router = pr.router(flits, width, config0.in_addr_width)
    hops = pr.hops(name, len(flits))
    u = _unit_costs(pr, router, area)
    parts = movement_parts(u, hops, len(tiles), cycles)
    return _piece(
        name, sram_read=sram_bits * pr.sram_bit_pJ, compute=compute, movement=_moved(parts),
        idle=idle + parts["routers_idle_clock"], gated_logic=gated,
        flits=len(flits), hops=hops, cycles=cycles,
        cells={"tile": cells, "router": router["cells"]}, counters=dict(counters),
        sram_bits={"read": sram_bits, "write": 0}, tiles=len(tiles), parts=parts,
        samples=samples, unit_costs=u)


# -- the attention path --------------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionSequence:
    """One sentence through the attention path: the query, key and value codes ``[S, heads *
    d_k]`` (before their masks), the valid keys ``[S]``, and the ``attn_out_in`` codes it must
    produce (before their mask)."""

    query: torch.Tensor
    keys: torch.Tensor
    values: torch.Tensor
    valid: torch.Tensor
    attn_out_in: torch.Tensor


def _memories(fragment, path: tuple = ()) -> dict[str, object]:
    """Module path (``weights``, ``softmax.row``) of every memory under ``fragment`` -> the
    data of its one read port."""
    from amaranth.lib.memory import Memory

    out = {}
    for sub, name, _ in fragment.subfragments:
        mem = next((o for o in sub.origins or () if isinstance(o, Memory)), None)
        if mem is None:
            out.update(_memories(sub, (*path, name)))
        elif len(mem.read_ports) != 1:
            raise ValueError(f"memory {'.'.join((*path, name))} has {len(mem.read_ports)} "
                             "read ports; one is cut")
        else:
            out[".".join(path)] = mem.read_ports[0].data
    return out


def _writers(fragment, path: tuple = ()) -> dict[str, object]:
    """Module path -> ``writing`` of every :class:`rtl_gen.kv_tiles.RuntimeWeights` under
    ``fragment``: a key beat is written one row a clock after it is taken, while its node is
    otherwise idle, so the node's clock runs then too."""
    from rtl_gen.kv_tiles import RuntimeWeights

    out = {}
    for sub, name, _ in fragment.subfragments:
        comp = next((o for o in sub.origins or () if isinstance(o, RuntimeWeights)), None)
        if comp is not None:
            out[".".join((*path, name))] = comp.writing
        else:
            out.update(_writers(sub, (*path, name)))
    return out


def _node_probes(fragment) -> dict:
    """Per ``(head, part)`` of an elaborated :class:`AttentionSystem`: the node component, its
    memories' read data (:func:`_memories`) and its writers' ``writing`` (:func:`_writers`);
    per ``(head, "inject_x<x>")``: the injector."""
    nodes = {}
    for sub, name, _ in fragment.subfragments:
        if not name.startswith("head"):
            continue
        h = int(name[4:])
        for node, part, _ in sub.subfragments:
            if part in NODE_COMPONENT:
                nodes[h, part] = (node.origins[0], _memories(node), _writers(node))
            elif part.startswith("inject_x"):
                nodes[h, part] = (node.origins[0], {}, {})
    return nodes


class _AttentionRecorder:
    """``runner`` of :func:`rtl_gen.attention.simulate_attention`: records the system's ports
    and, beside them, every port of each head's nodes and injectors and the read data of their
    memories (:func:`synth_scripts.gatelevel.record`)."""

    def __init__(self):
        self.trace, self.nodes = None, {}

    def __call__(self, dut, bench) -> None:
        from rtl_gen.simulation import elaborated
        from synth_scripts import gatelevel

        top, _ = elaborated(dut)
        self.dut = dut
        self.nodes = _node_probes(top)
        probes = {}
        for (h, part), (comp, mems, writers) in self.nodes.items():
            for port, (_, sig) in gatelevel.port_signals(comp).items():
                probes[f"h{h}.{part}.{port}"] = sig
            for mpath, sig in mems.items():
                probes[f"h{h}.{part}.{mpath}.rdata"] = sig
            for wpath, sig in writers.items():
                probes[f"h{h}.{part}.{wpath}.writing"] = sig
        self.trace = gatelevel.record(dut, bench, extra_inputs=probes, top=top)

    def node_trace(self, h: int, part: str, cut: dict[str, int]):
        """The trace of node ``(h, part)``: its ports, each cut memory port of its netlist
        (``cut``, e.g. ``weights._0_``) from the read data of the memory of that path, and
        beside them (no port of the netlist) its writers' ``<path>.writing``."""
        from synth_scripts import gatelevel

        comp, mems, writers = self.nodes[h, part]
        prefix = f"h{h}.{part}."
        ports, values = {}, {}
        for port, (direction, sig) in gatelevel.port_signals(comp).items():
            ports[port] = {"dir": direction, "width": len(sig)}
            values[port] = self.trace.values[prefix + port]
        for port, width in cut.items():
            owner = [m for m in mems if port.rpartition(".")[0] == m]
            if len(owner) != 1:
                raise ValueError(f"node {part}: cut port {port!r} matches no memory of "
                                 f"{sorted(mems)}")
            ports[port] = {"dir": "in", "width": width}
            values[port] = self.trace.values[f"{prefix}{owner[0]}.rdata"]
        for wpath in writers:
            ports[f"{wpath}.writing"] = {"dir": "in", "width": 1}
            values[f"{wpath}.writing"] = self.trace.values[f"{prefix}{wpath}.writing"]
        return gatelevel.Trace(ports, values)

    def window_marks(self, start: int, windows: int) -> list[int]:
        """The trace's cycle where each of the ``windows`` windows after clock ``start`` begins:
        ``start``, then the clock after each output marker taken on the system's ``o`` (a
        sentence's start and its key and value writes fall in its first window)."""
        v = self.trace.values
        last = self.dut.o.payload.shape()["last"].offset
        ends = [c for c, (valid, ready, word) in enumerate(zip(
            v["o__valid"], v["o__ready"], v["o__payload"], strict=True))
            if c >= start and valid and ready and (word >> last) & 1]
        if len(ends) != windows:
            raise RuntimeError(f"the attention path took {len(ends)} output markers after its "
                               f"configuration, not one per window ({windows})")
        return [start, *(c + 1 for c in ends[:-1])]

    def flits(self, h: int, part: str) -> list[tuple[int, int]]:
        """The flits an injector sent: ``(addr, t)`` of each handshake on its ``o``."""
        from amaranth.hdl import Shape

        v = self.trace.values
        p = f"h{h}.{part}.o__"
        layout = self.nodes[h, part][0].o.payload.shape()

        def field(word: int, name: str) -> int:
            f = layout[name]
            return (word >> f.offset) & ((1 << Shape.cast(f.shape).width) - 1)

        return [(field(w, "addr"), field(w, "t"))
                for valid, ready, w in zip(v[p + "valid"], v[p + "ready"], v[p + "payload"],
                                           strict=True) if valid and ready]


def _node_component(acfg, part: str, dense: bool):
    from rtl_gen.attn_softmax import SoftmaxNode
    from rtl_gen.kv_tiles import ContextTile, DenseContextTile, ScoreTile

    if part == "qk":
        return ScoreTile(acfg, dense=dense)
    if part == "sm":
        return SoftmaxNode(acfg, dense=dense)
    return DenseContextTile(acfg) if dense else ContextTile(acfg)


def _node_netlist(pr: Pricing, acfg, part: str, dense: bool):
    """Node ``part`` mapped alone, its memories cut; kept in ``pr.cache`` by its Verilog."""
    from amaranth.back import verilog

    from synth_scripts import gatelevel

    top = f"attn_{part}"
    text = verilog.convert(_node_component(acfg, part, dense), name=top, emit_src=False)
    key = (top, hashlib.sha256(text.encode()).hexdigest()[:16])
    nets = pr.cache.setdefault("nodes", {})
    if key not in nets:
        nets[key] = gatelevel.map_netlist(text, top, pr.lib_path,
                                          pr.netlist_dir / f"{top}_{key[1]}",
                                          cut_memories=True)
    return nets[key]


def _config_end(trace, beats: int) -> int:
    """The clock after the ``beats``-th ``load`` handshake of the system's trace."""
    seen = 0
    for c, (valid, ready) in enumerate(zip(trace.values["load__valid"],
                                           trace.values["load__ready"], strict=True)):
        seen += bool(valid and ready)
        if seen == beats:
            return c + 1
    raise RuntimeError(f"the attention path took {seen} load beats, not its {beats} "
                       "configuration beats")


def _run_attention(acfg, path, sequences: Sequence[AttentionSequence], dense: bool):
    """The sequences through the attention path at RTL, recorded, and checked against their
    ``attn_out_in`` codes (through the path's mask for the spiking design); returns the
    recorder and the windows per sequence."""
    from golden_models import decode_events, encode_events
    from rtl_gen.attention import simulate_attention

    rec = _AttentionRecorder()
    windows = simulate_attention(acfg, path, [(s.query, s.keys, s.values, s.valid)
                                              for s in sequences], dense=dense, runner=rec)
    width = acfg.heads * acfg.head_dim
    for s, wins in zip(sequences, windows, strict=True):
        for i, w in enumerate(wins):
            want = s.attn_out_in[i]
            if dense:
                got = torch.zeros(width, dtype=torch.int64)
                for a, c in w.events:
                    got[a] = c
            else:
                got = decode_events(torch.tensor([a for a, _ in w.events], dtype=torch.int64),
                                    torch.tensor([t for _, t in w.events], dtype=torch.int64),
                                    (width,), path.ctx_mask)
                want = decode_events(*encode_events(want, path.ctx_mask), (width,),
                                     path.ctx_mask)
            if not torch.equal(got, want):
                raise AssertionError(f"attention: token {i}: the RTL's attn_out_in codes "
                                     "differ from the captured ones")
    return rec, windows


def _attention_counters(counters) -> Counter:
    """The attention path's counters over the run from each window's (per sequence, per
    window its counter ports and their values): the per-window ones summed, the key and value
    writes (counted per sequence) from each sequence's last window."""
    total = Counter()
    for wins in counters:
        for w in wins:
            total.update({n: v for n, v in w.items() if "_writes" not in n})
        total.update({n: v for n, v in wins[-1].items() if "_writes" in n})
    return total


def _attention_sram(acfg, counters: Counter) -> tuple[int, int]:
    """Bits read and written in the key, value and softmax row memories over the run."""
    cb, sb = acfg.code_bits, acfg.score_bits + 1

    def total(name: str) -> int:
        return sum(v for n, v in counters.items() if n.startswith(f"cnt_{name}_h"))

    scores = total("sm_scores_in")
    # a key row holds a query dimension over the slots, a value row a slot's dimensions; the
    # softmax writes a row's scores once and reads them in its two later passes
    read = (total("qk_weight_row_reads") * acfg.seq_max * cb
            + total("pv_weight_row_reads") * acfg.head_dim * cb + 2 * scores * sb)
    write = (total("qk_key_writes") + total("pv_value_writes")) * cb + scores * sb
    return read, write


def window_features(counters, h: int) -> list[dict[str, int]]:
    """Per window of ``counters`` (per sequence, per window the attention path's counter ports
    and their values) the counters of head ``h``'s three nodes, named without the head
    (``cnt_qk_<name>_h<h>`` -> ``qk_<name>``; a node's window lasts as long as its head's
    slowest node works), a write counter (which holds its sequence's writes in each of its
    windows) in the sequence's first window only, and ``sequence_start`` (1 in that window:
    the sequence's start and its key and value writes fall in it)."""
    head, out = f"_h{h}", []
    for wins in counters:
        for i, w in enumerate(wins):
            x = {"sequence_start": int(i == 0)}
            for port, value in w.items():
                name = port.removeprefix("cnt_")
                if name.endswith(head) and name.split("_", 1)[0] in NODE_COMPONENT:
                    name = name[:-len(head)]
                    x[name] = int(value) if i == 0 or "_writes" not in name else 0
            out.append(x)
    return out


def _node_energies(pr: Pricing, acfg, rec, start: int, design: str,
                   windows=None) -> tuple[dict, dict, list]:
    """Each head's nodes replayed from clock ``start`` (after the configuration): their
    energies summed per component (``compute``, ``nonlinear``, ``idle``, ``gated``), their
    cells, and with ``pr.windows`` each window of each node priced on its own (``windows``:
    the run's, per sequence; ``PieceGates.samples``)."""
    from synth_scripts.gate_compare import replay_energy

    energy = Counter()
    cells, samples = {}, []
    marks = counted = None
    if pr.windows:
        marks = rec.window_marks(start, sum(len(w) for w in windows))
        counted = [[w.counters for w in wins] for wins in windows]
    for h in range(acfg.heads):
        for part, component in NODE_COMPONENT.items():
            net = _node_netlist(pr, acfg, part, design == "dense")
            writing = tuple(f"{w}.writing" for w in rec.nodes[h, part][2])
            # a node's registers settle on the edge after its last busy clock: hold 1
            e = replay_energy(net, rec.node_trace(h, part, net.cut), start, 1,
                              pr.work / "attention" / design / f"h{h}_{part}", pr.sim,
                              pr.clock_ns,
                              enable_ports=("busy", "i__valid", "load__valid", *writing),
                              hold=1, one_replay=True, marks=marks)
            if marks is not None:
                samples += [_sample(part, h, x, w) for x, w in
                            zip(window_features(counted, h), e["windows"], strict=True)]
            energy[component] += e["free_pJ"] - e["idle_clock_pJ"]
            energy["idle"] += e["idle_clock_pJ"]
            energy["gated"] += e["gated_pJ"]
            energy[f"{part}_logic"] += e["free_pJ"] - e["idle_clock_pJ"]
            energy[f"{part}_idle_clock"] += e["idle_clock_pJ"]
            cells[part] = e["cells"]
    return energy, cells, samples


@dataclass
class _PathRun:
    """The attention path run once at RTL, recorded, its nodes priced: what
    :func:`price_attention` and :func:`validate_attention` share."""

    rec: _AttentionRecorder
    windows: list
    start: int  # the clock after the configuration
    energy: Counter  # the nodes' components (_node_energies)
    cells: dict
    samples: list  # each window of each node, with Pricing.windows
    counters: Counter
    inner: list  # the flits the injectors sent into the path's mesh
    router: dict  # the path's router (router_energy) on those flits

    @property
    def cycles(self) -> int:
        return self.rec.trace.cycles - self.start


def _path_run(pr: Pricing, acfg, path, sequences, design: str) -> _PathRun:
    from rtl_gen.attn_images import config_beats

    rec, windows = _run_attention(acfg, path, sequences, design == "dense")
    start = _config_end(rec.trace, len(config_beats(acfg, path)))
    energy, cells, samples = _node_energies(pr, acfg, rec, start, design, windows)
    inner = [f for h in range(acfg.heads) for x in (0, 1) for f in rec.flits(h, f"inject_x{x}")]
    router = pr.router(inner, acfg.flit_value_width, acfg.flit_addr_width,
                       mesh=(acfg.heads, 3), kind="attention_routers")
    counters = _attention_counters([[w.counters for w in wins] for wins in windows])
    return _PathRun(rec, windows, start, energy, cells, samples, counters, inner, router)


def price_attention(pr: Pricing, acfg, path, sequences: Sequence[AttentionSequence],
                    design: str, streams) -> PieceGates:
    """The attention piece: the path (:class:`rtl_gen.attn_params.AttentionConfig` ``acfg``,
    golden constants ``path``) at RTL on ``sequences`` (recorded, checked), each head's nodes
    in gates, the key, value and row memories' bits, its input flits and the flits between its
    nodes. ``streams`` gives its input flits: ``(tile_config, [(codes, mask), ...])``, the
    query, key and value codes as the tiles that make them send them (:func:`piece_flits`)."""
    from rtl_gen.dense import dense_pack

    dense = design == "dense"
    run = _path_run(pr, acfg, path, sequences, design)
    energy, cells, counters, arouter = run.energy, run.cells, run.counters, run.router
    read, write = _attention_sram(acfg, counters)
    tcfg, codes = streams
    flits = [f for c, mask in codes for w in piece_flits(tcfg, dense, c, mask) for f in w]
    width = tcfg.time_width * (dense_pack(tcfg) if dense else 1)
    router = pr.router(flits, width, tcfg.in_addr_width)
    hops = pr.hops("attention", len(flits))
    inner_hops = counters["cnt_hops"]
    cycles = run.cycles
    cells.update(router=router["cells"], attention_router=arouter["cells"])
    # a node's pitch: the mean area of a head's three nodes
    area = math.fsum(_node_netlist(pr, acfg, part, dense).area()
                     for part in NODE_COMPONENT) / len(NODE_COMPONENT)
    # the path's own routers are idle on the clocks they move nothing
    u = {**_unit_costs(pr, router, area), "idle_per_clock": arouter["idle_per_clock_pJ"],
         **_unit_costs(pr, arouter, area, "inner_")}
    moves = attention_movement_parts(u, hops, inner_hops, acfg.heads, cycles)
    parts = {k: v for k, v in energy.items() if k.startswith(tuple(NODE_COMPONENT))}
    parts.update(moves)
    return _piece(
        "attention", sram_read=read * pr.sram_bit_pJ, sram_write=write * pr.sram_bit_pJ,
        compute=energy["compute"], nonlinear=energy["nonlinear"], movement=_moved(moves),
        idle=energy["idle"] + moves["routers_idle_clock"],
        gated_logic=energy["gated"], flits=len(flits) + len(run.inner), hops=hops + inner_hops,
        cycles=cycles, cells=cells, counters=dict(counters),
        sram_bits={"read": read, "write": write}, parts=parts, samples=run.samples,
        unit_costs=u)


def _whole_trace(rec, comp, cut: dict[str, int]):
    """The trace of the whole :class:`AttentionSystem` netlist: the system's ports, and each
    cut memory port (``head<h>.<part>.<memory path>.<register>``) from the read data the
    recorder kept of that node's memory."""
    from synth_scripts import gatelevel

    ports = {p: rec.trace.ports[p] for p in gatelevel.port_signals(comp)}
    values = {p: rec.trace.values[p] for p in ports}
    for port, width in cut.items():
        where = port.rpartition(".")[0]
        owner = [f"h{h}.{part}.{m}.rdata" for (h, part), (_, mems, _) in rec.nodes.items()
                 for m in mems if where == f"head{h}.{part}.{m}"]
        if len(owner) != 1:
            raise ValueError(f"the whole path's cut port {port!r} matches {len(owner)} recorded "
                             "memories, not one")
        ports[port] = {"dir": "in", "width": width}
        values[port] = rec.trace.values[owner[0]]
    return gatelevel.Trace(ports, values)


def validate_attention(pr: Pricing, acfg, path, sequences: Sequence[AttentionSequence],
                       design: str) -> dict:
    """The attention path priced as :func:`price_attention` prices it (each head's nodes on
    their own netlists, the routers by hop and idle clock) against one replay of the whole
    :class:`rtl_gen.attention.AttentionSystem` netlist (nodes, routers, forks, injectors, the
    output merge; memories cut as the nodes' are) on the same recorded run: free-running pJ
    over the run after the configuration, each way, their ratio, and the cells.

    The validation of the method (docs/block_gates.md): the whole netlist is what the pieces
    stand for, and the pieces leave out only the glue between the nodes.
    """
    from amaranth.back import verilog

    from rtl_gen.attention import AttentionSystem
    from synth_scripts import gatelevel
    from synth_scripts.gate_compare import replay_energy

    run = _path_run(pr, acfg, path, sequences, design)
    energy, arouter, cycles, start = run.energy, run.router, run.cycles, run.start
    hops = run.counters["cnt_hops"]
    idle_routers = max(3 * acfg.heads * cycles - hops, 0)
    nodes = energy["compute"] + energy["nonlinear"] + energy["idle"]
    routers = hops * arouter["per_hop_pJ"] + idle_routers * arouter["idle_per_clock_pJ"]

    comp = AttentionSystem(acfg, dense=design == "dense")
    text = verilog.convert(comp, name="attn_system", emit_src=False)
    key = hashlib.sha256(text.encode()).hexdigest()[:16]
    nets = pr.cache.setdefault("whole_attention", {})
    if key not in nets:
        nets[key] = gatelevel.map_netlist(text, "attn_system", pr.lib_path,
                                          pr.netlist_dir / f"attn_system_{key}",
                                          cut_memories=True)
    net = nets[key]
    trace = _whole_trace(run.rec, comp, net.cut)
    # free-running only: beside the ports, a column that keeps the clock on at every edge
    trace.values["clock_on"] = [1] * trace.cycles
    whole = replay_energy(net, trace, start, 1, pr.work / "attention_whole" / design, pr.sim,
                          pr.clock_ns, enable_ports=("clock_on",), one_replay=True)
    pieces = nodes + routers
    return {
        "design": design, "cycles": cycles, "whole_pJ": whole["free_pJ"],
        "pieces_pJ": pieces, "nodes_pJ": nodes, "routers_pJ": routers,
        "ratio": pieces / whole["free_pJ"], "whole_cells": whole["cells"],
        "pieces_cells": sum(run.cells.values()) * acfg.heads
        + 3 * acfg.heads * arouter["cells"],
    }


# -- the add+LayerNorm units -----------------------------------------------------------------------


def _pieces(addr: int, value: int, width: int) -> list[tuple[int, int]]:
    """The flits of a ``width``-bit two's-complement ``value`` at ``addr``: its bits in
    :data:`FLIT_BITS`-bit pieces, the lowest first."""
    word = value & ((1 << width) - 1)
    return [(addr, (word >> lo) & ((1 << FLIT_BITS) - 1)) for lo in range(0, width, FLIT_BITS)]


def price_norm(pr: Pricing, name: str, ucfg, add, norm, thetas, r: torch.Tensor,
               v: torch.Tensor, expected) -> PieceGates:
    """A residual-add + LayerNorm piece (the unit of ``ucfg`` with the golden ``add``, ``norm``
    and walk tables ``thetas``) on the rows ``(r, v)`` (``[tokens, hidden]`` each), checked
    against ``expected`` (per row: the new stream and the codes of every walk,
    :func:`synth_scripts.unit_gates.run_add_norm`)."""
    from rtl_gen.add_norm import load_beats
    from rtl_gen.layouts import norm_channel_layout
    from rtl_gen.params import index_width
    from synth_scripts import unit_gates

    rows = [(r[i].tolist(), v[i].tolist()) for i in range(r.shape[0])]
    run = unit_gates.run_add_norm(ucfg, load_beats(ucfg, add, norm, thetas), rows, expected)
    m = unit_gates.measure(run, ucfg, pr.lib_path, pr.work / name, sim=pr.sim,
                           clock_ns=pr.clock_ns, netlists=pr.cache.setdefault("units", {}),
                           one_replay=True, netlist_dir=pr.netlist_dir)
    e, n, hidden = m["energy_pJ"], len(rows), ucfg.hidden
    # per channel: the channel word read in both passes; the sum written, then read back
    read = n * hidden * (2 * norm_channel_layout(ucfg).size + ucfg.sum_bits)
    write = n * hidden * ucfg.sum_bits
    # its input flits: a sum and a stream value per channel, in pieces of the widest payload
    flits = []
    for rr, vv in rows:
        for values, width in ((vv, ucfg.sum_bits), (rr, ucfg.residual_bits)):
            for j, x in enumerate(values):
                flits += _pieces(j, x, width)
    router = pr.router(flits, FLIT_BITS, index_width(hidden))
    hops = pr.hops(name, len(flits))
    cycles = sum(m["cycles_per_row"])
    u = _unit_costs(pr, router, m["area_um2"])
    parts = movement_parts(u, hops, 1, cycles)
    return _piece(
        name, sram_read=read * pr.sram_bit_pJ, sram_write=write * pr.sram_bit_pJ,
        nonlinear=(e["free_per_row"] - e["idle_clock_per_row"]) * n,
        movement=_moved(parts), parts=parts,
        idle=e["idle_clock_per_row"] * n + parts["routers_idle_clock"],
        gated_logic=e["gated_per_row"] * n, flits=len(flits), hops=hops, cycles=cycles,
        cells={"unit": m["cells"], "router": router["cells"]},
        counters={"rows": n, "channels": n * hidden}, sram_bits={"read": read, "write": write},
        unit_costs=u)
