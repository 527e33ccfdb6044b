"""The pieces of an encoder block priced in our gates, each on what it consumes in the run.

:func:`matterhorn.block_gates.measure_block_gates` reads what each piece needs from the QNN
(``networks``, ``regression``, which this package does not import, docs/architecture.md) and
hands it to the pricer of the piece's kind, each piece checked bit-exact before it is priced:

==========  ===============================================================================
kind        how a piece of it is priced
==========  ===============================================================================
linear      :func:`price_linear`: the piece's tiles (:class:`rtl_gen.tile.NeuronTile`,
            :class:`rtl_gen.dense.DenseTile` for the dense design; raw-sum mode,
            ``RTLConfig.raw_sums``, for a piece that sends raw sums) on the codes the piece
            consumes: :func:`synth_scripts.gatelevel.tile.run_tile` (RTL, checked against the
            golden layer) and :func:`~synth_scripts.gatelevel.tile.tile_energy` (SRAM macros
            cut, the netlist replayed on the recorded stimulus, the load phase subtracted)
attention   :func:`synth_scripts.block_attention.price_attention`: the attention path node by
            node (its module text)
add_norm    :func:`price_norm`: the residual-add + LayerNorm unit
            (:class:`rtl_gen.add_norm.AddNorm`) on this run's rows, its SRAMs cut:
            :func:`synth_scripts.unit_gates.run_add_norm` and
            :func:`~synth_scripts.unit_gates.measure`
==========  ===============================================================================

A piece's figures are assembled from its units' energies by :mod:`synth_scripts.block_gates`
(the one assembly the calibration shares). :class:`Pricing` is what the pieces of one
measurement share: the liberty, the PDK table's SRAM bit, the replays' simulator and clock, the
netlists mapped once, each piece's hops per flit, and where each component's cost comes from.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch

from synth_scripts.block_gates import (
    PieceGates,
    SramCosts,
    linear_piece,
    memory_shapes,
    moved,
    movement_parts,
    norm_accesses,
    piece_gates,
    tile_accesses,
    tile_plan,
    window_sample,
)

__all__ = ["FLIT_BITS", "ROUTER_FLITS", "Pricing", "assemble_linear", "flit_pieces",
           "piece_flits", "price_linear", "price_norm", "price_tile", "replayed_tiles", "spread",
           "tile_plans", "unit_costs"]

#: Flits a router energy is measured on (:func:`synth_scripts.gatelevel.measure.router_energy`).
ROUTER_FLITS = 256
#: The widest payload of a router flit (``rtl_gen.layouts.flit_layout``): a wider value (a sum,
#: a stream value) travels as several flits.
FLIT_BITS = 16


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
    lib: object  # the parsed liberty (synth_scripts.gatelevel.liberty.Library): its wires
    #: each window of each tile and node priced on its own too (``PieceGates.samples``)
    windows: bool = False
    #: With :attr:`windows`: at most this many tiles of each linear piece replayed, spread over
    #: the piece (:func:`spread`), and at most this many heads of the attention path; 0: all.
    #: The calibration prices every tile and head from their fits
    #: (:mod:`synth_scripts.block_calibration`); a piece's own figures are then those of what
    #: was replayed.
    replay_tiles: int = 0
    replay_heads: int = 0
    #: With :attr:`windows`: at most this many windows of each replayed tile and rows of each
    #: add+LayerNorm unit, spread over the sample's tokens (0: all). A linear piece's window
    #: is one token, whatever its sentence, so its fit needs tokens, not sentences.
    replay_windows: int = 0
    #: The shipped macro table (:func:`synth_scripts.sram.table.load`) when the liberty is of
    #: :data:`synth_scripts.block_gates.MACRO_PDKS`, else None: the memories then go by the bit
    sram_table: object | None = None

    @property
    def sram(self) -> SramCosts:
        """How this measurement prices its memories."""
        return SramCosts(self.sram_table, self.sram_bit_pJ, self.clock_ns)

    @classmethod
    def prepare(cls, lib_path, work, *, sim: str = "verilator", clock_ns: float = 10.0,
                cache: dict | None = None,
                hops_per_flit: Mapping[str, float] | None = None,
                netlist_dir=None, windows: bool = False, replay_tiles: int = 0,
                replay_heads: int = 0, replay_windows: int = 0) -> Pricing:
        """Read the liberty at ``lib_path`` (its working copy in ``work/lib``). ``cache``
        (kept by the caller across designs) holds a section per liberty; ``netlist_dir``
        (default ``work/netlists``) is where the netlists are mapped and built; ``windows``,
        ``replay_tiles``, ``replay_heads``, ``replay_windows``: :attr:`windows`,
        :attr:`replay_tiles`, :attr:`replay_heads`, :attr:`replay_windows` (which need
        ``windows``)."""
        from synth_scripts import scaling
        from synth_scripts.gatelevel import liberty

        for name, n in (("replay_tiles", replay_tiles), ("replay_heads", replay_heads),
                        ("replay_windows", replay_windows)):
            if not isinstance(n, int) or n < 0:
                raise ValueError(f"{name} must be a whole number >= 0 (0: all), not {n!r}")
            if n and not windows:
                raise ValueError(f"{name} {n} prices a sample: it needs windows=True (the "
                                 "calibration prices the rest)")

        work = Path(work)
        lib = liberty.prepare(Path(lib_path), work / "lib")
        cache = {} if cache is None else cache
        rule = scaling.scaling_rule(lib.nom_voltage, scaling.technology_of(lib.name))
        sram = SramCosts.of_library(lib, clock_ns)
        return cls(Path(lib_path), work, sim, clock_ns, lib.name, lib.source_name,
                   sram.bit_pJ, lib.pdk.sram_bit["source"], rule["divide_by"],
                   cache.setdefault(lib.sha256, {}), dict(hops_per_flit or {}),
                   Path(netlist_dir) if netlist_dir is not None else work / "netlists",
                   lib.library, windows, replay_tiles, replay_heads, replay_windows,
                   sram.table)

    def __getstate__(self) -> dict:
        """What a task of the pricing takes to a worker process: everything but the mapped
        netlists kept in this process (``cache``); the worker reads them from
        ``netlist_dir``, where they were mapped (or maps them there, once, under a lock)."""
        return {**self.__dict__, "cache": {}}

    def router(self, flits, payload_width: int, addr_width: int, *, mesh=None,
               kind: str = "routers") -> dict:
        """:func:`synth_scripts.gatelevel.measure.router_energy` on the first
        :data:`ROUTER_FLITS` of ``flits``; ``kind`` keeps apart the routers of other meshes."""
        from synth_scripts.gatelevel.measure import MESH, router_energy

        return router_energy(flits[:ROUTER_FLITS], payload_width, addr_width, self.lib_path,
                             self.work / kind, self.sim, self.clock_ns,
                             self.cache.setdefault(kind, {}), mesh=mesh or MESH,
                             netlist_dir=self.netlist_dir)

    def wires(self, router: dict, hops: float, node_area_um2: float) -> float:
        """pJ of the link wires that ``hops`` flit hops drive: each hop a link as long as a
        node's pitch (the square root of ``node_area_um2`` and the router's area), each flit
        making the transitions it made on the router replay's output link
        (``link_toggles_per_flit``), each transition
        :func:`synth_scripts.gatelevel.energy.link_pJ`."""
        from synth_scripts.gatelevel.energy import link_pJ

        pitch = math.sqrt(node_area_um2 + router["area_um2"])
        return hops * router["link_toggles_per_flit"] * link_pJ(self.lib, pitch)

    def _sram_sources(self) -> dict[str, str]:
        """The sources of the memories' components and of leakage."""
        cells = ("our gates: the cells' leakage of every replayed tile, node and unit (the "
                 "liberty's cell_leakage_power over the replay's clocks, as synth_scripts."
                 "gatelevel.energy charges it; taken out of compute and nonlinear); the "
                 "routers' leakage stays in their per-hop and idle-clock figures")
        if self.sram_table is None:
            bit = f"{self.sram_bit_pJ:.4g} pJ/bit"
            return {
                "sram_read": f"NOT our gates: per-bit: bits read x {bit}, "
                             f"{self.sram_bit_source}, scaled to {self.library} "
                             "(synth_scripts.scaling.sram_bit_pJ, Stillmaker & Baas); no macro "
                             f"table in {self.library}'s process (the shipped one is "
                             "FreePDK45's, docs/sram_macros.md)",
                "sram_write": "NOT our gates: per-bit: bits written (key and value codes, "
                              f"softmax row, LayerNorm row) x the same {bit} (a read's figure)",
                "sram_deselected": "not priced: the per-bit figure has no deselected cycle",
                "leakage": f"{cells}; the memories' leakage not priced (per-bit figure, no "
                           "macro)",
            }
        macros = self.sram.macros_named()
        how = ("each memory banked into macros (synth_scripts.sram.shapes.bank) and priced by "
               "its recorded accesses (synth_scripts.block_gates.price_memories, "
               "synth_scripts.sram.pricing.memory_energy)")
        return {
            "sram_read": f"{macros}: each read at its macros' measured read energy; {how}; "
                         "the macros at 1.0 V, not scaled to the liberty's supply",
            "sram_write": f"{macros}: each whole write (softmax row, LayerNorm row) at its "
                          "macros' measured write energy, a key or value code's write as a "
                          f"whole write of the one macro that holds it; {how}",
            "sram_deselected": f"{macros}: the clock of every macro on the cycles it is not "
                               "accessed (free-running), at its measured deselected-cycle "
                               "energy; 0 clock-gated",
            "leakage": f"{cells}; and {macros}: every macro's measured leakage over its "
                       f"piece's clocks at {self.clock_ns:g} ns",
        }

    def hops(self, piece: str, flits: int) -> float:
        """The hops ``flits`` input flits of ``piece`` make: one each unless
        ``hops_per_flit`` gives the piece's."""
        return flits * float(self.hops_per_flit.get(piece, 1.0))

    def sources(self) -> dict[str, str]:
        """Where each component's cost comes from."""
        from synth_scripts.gatelevel.energy import wire_capacitance

        at = (f"{self.library} ({self.liberty}), {self.clock_ns:g} ns clock, {self.sim} "
              "replay")
        wire = wire_capacitance(self.lib)[1]
        return {
            "compute": "our gates: gate-level replay of each piece's own netlist on its "
                       "recorded RTL stimulus (synth_scripts.gatelevel, priced by "
                       "synth_scripts.gatelevel.energy): the tiles (rtl_gen.tile.NeuronTile or "
                       "rtl_gen.dense.DenseTile, SRAM macros cut), the attention path's query x "
                       "key and probability x value tiles (rtl_gen.kv_tiles, key and value "
                       f"memories cut), less their idle clock and their cells' leakage; {at}",
            "nonlinear": "our gates: gate-level replay of each head's softmax node "
                         "(rtl_gen.attn_softmax.SoftmaxNode: rtl_gen.softmax.Softmax and its "
                         "probability encoder, row buffer cut) on the attention path's recorded "
                         "stimulus, and of the add+LayerNorm unit (rtl_gen.add_norm.AddNorm, "
                         "SRAMs cut) on this run's rows (synth_scripts.unit_gates), less their "
                         f"idle clock and their cells' leakage; {at}",
            **self._sram_sources(),
            "movement": "our gates: gate-level replay of the generated router "
                        "(rtl_gen.router.Router) moving each piece's own input flits, one per "
                        "clock (synth_scripts.gatelevel.measure.router_energy): its per-hop "
                        "energy x the piece's flit hops (one hop per flit unless a placement "
                        "gives them), and inside the attention path the hops its mesh counted, "
                        f"on its own router; {at}; and the link wires: per hop, the transitions "
                        "a flit made on the replayed router's output link x 1/2 C V^2 of a wire "
                        "as long as the node's pitch (the square root of the node's and its "
                        "router's cell area; the SRAM macros' area left out, so the pitch is "
                        f"a lower bound), C at {wire}",
            "idle": "our gates: the clock of the cycles each tile, node and unit does not work "
                    "(free-running clock), and the routers' idle clock on the clocks they move "
                    "nothing",
            "gated_total": "SRAM reads and writes + movement + every block's clock-gated "
                           "energy (its idle clock stopped, the clock-gating cell's own energy "
                           "added) + leakage; the deselected macros' clock stopped",
            "not_priced": "the attention path's glue (load and query forks, output merge, flit "
                          "injectors and ejectors); the tiles' one-time load (weights, "
                          "thresholds, init) and the units' and nodes' one-time constants",
        }


def unit_costs(pr: Pricing, router: dict, area: float, prefix: str = "") -> dict:
    """``PieceGates.unit_costs`` of a router moving flits between nodes of ``area`` um^2."""
    out = {"per_hop": router["per_hop_pJ"], "wire_per_hop": pr.wires(router, 1.0, area)}
    if not prefix:
        out["idle_per_clock"] = router["idle_per_clock_pJ"]
    return {f"{prefix}{k}": v for k, v in out.items()}


def spread(n: int, most: int, keep=()) -> list[int]:
    """At most ``most`` of ``n`` indices (0: all), spread evenly from the first to the last,
    and every index of ``keep`` (e.g. the first tile of each configuration)."""
    if most <= 0 or most >= n:
        return list(range(n))
    picked = {0} if most == 1 else {round(i * (n - 1) / (most - 1)) for i in range(most)}
    return sorted(picked | set(keep))


def piece_flits(cfg, dense: bool, codes: torch.Tensor, mask) -> list[list[tuple[int, int]]]:
    """The flits that carry ``codes [tokens, n]`` to a piece, per token: one per event through
    ``mask`` ``(addr, tau)``, or for the dense design the codes packed ``P`` per flit
    (:func:`synth_scripts.gatelevel.tile.tile_flits`, ``cfg`` the consuming tile's)."""
    from golden_models import encode_events
    from synth_scripts.gatelevel.tile import tile_flits

    tmask = (1 << cfg.time_width) - 1
    out = []
    for row in codes:
        if dense:
            beats = [{"code": int(q) & tmask} for q in row.tolist()]
        else:
            index, t = encode_events(row, mask)
            beats = [{"addr": int(a), "tau": int(b)}
                     for a, b in zip(index.tolist(), t.tolist(), strict=True)]
        out.append(tile_flits(cfg, dense, beats))
    return out


# -- the linear pieces -----------------------------------------------------------------------------


def replayed_tiles(pr: Pricing, tiles) -> list[int]:
    """The indices of ``tiles`` (``(layer, config)`` each) a linear piece runs and replays:
    every one, or with ``pr.replay_tiles`` that many spread over the layer and the first of
    each configuration."""
    firsts: dict[str, int] = {}
    for i, (_, config) in enumerate(tiles):
        firsts.setdefault(repr(config), i)
    return spread(len(tiles), pr.replay_tiles, firsts.values())


def price_tile(pr: Pricing, name: str, i: int, layer, config, design: str,
               codes: torch.Tensor) -> dict:
    """Tile ``i`` of linear piece ``name`` (its golden ``layer`` and ``config``) on ``codes``:
    at RTL (checked against its golden layer, :func:`synth_scripts.gatelevel.tile.run_tile`)
    and in gates (:func:`~synth_scripts.gatelevel.tile.tile_energy`): its energies over the
    windows, clocks, cells, area, SRAM bits, counters, windows priced on their own (with
    ``pr.windows``) and, for the first tile, the input flits every tile takes in. One task of
    a piece's pricing (:func:`assemble_linear` puts them together)."""
    import time

    from synth_scripts.gatelevel.tile import run_tile, tile_energy

    t0 = time.perf_counter()
    if pr.replay_windows:
        codes = codes[spread(codes.shape[0], pr.replay_windows)]
    run = run_tile(layer, design, codes, config=config)
    tile = tile_energy(layer, design, run, pr.lib_path, pr.work / name / f"tile{i}", pr.sim,
                       pr.clock_ns, pr.cache.setdefault("tiles", {}), config=config,
                       one_replay=True, netlist_dir=pr.netlist_dir, windows=pr.windows)
    n = run.windows
    return {"index": i, "windows": n, "tile": {k: v for k, v in tile.items() if k != "windows"},
            "samples": [window_sample("tile", i, c, w)
                        for c, w in zip(run.counters, tile.get("windows", ()), strict=False)],
            "sram_bits": run.sram_bits, "counters": run.counters,
            "flits": [f for w in run.flits for f in w] if i == 0 else None,
            "seconds": time.perf_counter() - t0}


def tile_plans(pr: Pricing, tiles, design: str) -> list[dict]:
    """Per tile of ``tiles`` (``(layer, config)``) what its memories' accesses are counted from
    (``PieceGates.memories``: :func:`synth_scripts.block_gates.tile_accesses`): its memories'
    shapes, read from the elaborated tile (kept in ``pr.cache`` by configuration), its lane
    groups and the steps of its threshold walk (none for raw sums). Empty without the macros
    (the per-bit figure needs no shape)."""
    if pr.sram_table is None:
        return []
    kept = pr.cache.setdefault("memories", {})
    return [tile_plan(config, design == "dense", kept) for _, config in tiles]


def assemble_linear(pr: Pricing, name: str, tiles, design: str, priced: list[dict]) -> PieceGates:
    """Linear piece ``name`` from its replayed tiles (``priced``: :func:`price_tile` of each, in
    the order of :func:`replayed_tiles`): their energies summed, the piece's clocks those of
    its slowest tile (the tiles run side by side), each tile's memories over its own clocks
    (``pr.sram``), its input flits (the first tile's) through a router per tile
    (``pr.router``)."""
    from rtl_gen.dense import dense_pack

    compute = idle = gated = area = leak = run_clocks = 0.0
    sram_bits, cycles, counters, cells, samples = 0, 0, Counter(), 0, []
    config0 = tiles[0][1]  # every tile's input: the layer's n_in, its code width
    flits = None
    plans = tile_plans(pr, tiles, design)
    uses = []
    for got in priced:
        tile, n = got["tile"], got["windows"]
        samples += got["samples"]
        compute += (tile["free_pJ"] - tile["idle_clock_pJ"]) * n
        idle += tile["idle_clock_pJ"] * n
        gated += tile["gated_pJ"] * n
        leak += tile["leakage_pJ"] * n
        run_clocks += tile["cycles"] * n
        sram_bits += got["sram_bits"]
        mine = Counter()
        for c in got["counters"]:  # update, not +: a counter that stayed 0 is kept
            counters.update(c)
            mine.update(c)
        if plans:
            plan = plans[got["index"]]
            uses.append((plan["shapes"], tile_accesses(plan, n, mine), tile["cycles"] * n))
        cycles = max(cycles, tile["cycles"] * n)  # the tiles run side by side
        cells = max(cells, tile["cells"])
        area = max(area, tile["area_um2"])
        if got["index"] == 0:  # what every tile takes in
            flits = got["flits"]
    dense = design == "dense"
    width = dense_pack(config0) * config0.time_width if dense else config0.time_width
    router = pr.router(flits, width, config0.in_addr_width)
    hops = pr.hops(name, len(flits))
    # a tile's cells leak the same every clock: what the calibration charges a fitted clock
    u = {**unit_costs(pr, router, area), "leak_per_clock": leak / run_clocks if run_clocks
         else 0.0}
    return linear_piece(
        name, logic=compute, idle=idle, gated=gated, cell_leakage=leak, cycles=cycles,
        read_bits=sram_bits, sram=pr.sram.price(uses, read_bits=sram_bits, write_bits=0),
        flits=len(flits), hops=hops, tiles=len(tiles), unit_costs=u,
        cells={"tile": cells, "router": router["cells"]}, counters=dict(counters),
        memories={"tiles": plans} if plans else {}, samples=samples)


def price_linear(pr: Pricing, name: str, tiles, design: str, codes: torch.Tensor) -> PieceGates:
    """A linear piece: ``design``'s tiles (``tiles``: ``(layer, config)`` per tile, the layer's
    neurons as the run partitions them, :func:`regression.block_parts.tile_slices`; raw sums or
    codes) on ``codes [tokens, n_in]``, each token a window, at RTL (each tile checked against
    its golden layer) and in gates (tiles of one configuration share a netlist); its input
    flits, sent once by their producers to every tile, through a router per tile. With
    ``pr.replay_tiles``, only that many tiles, spread over the layer, and the first of each
    configuration, are run and replayed (the piece's energies are theirs; its ``tiles`` all
    of them). In this process: :func:`price_tile` per tile of :func:`replayed_tiles`, then
    :func:`assemble_linear`."""
    priced = [price_tile(pr, name, i, *tiles[i], design, codes)
              for i in replayed_tiles(pr, tiles)]
    return assemble_linear(pr, name, tiles, design, priced)


# -- the add+LayerNorm units ----------------------------------------------------------------------


def flit_pieces(addr: int, value: int, width: int) -> list[tuple[int, int]]:
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

    picked = spread(r.shape[0], pr.replay_windows)
    rows = [(r[i].tolist(), v[i].tolist()) for i in picked]
    expected = [expected[i] for i in picked] if pr.replay_windows else expected
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
                flits += flit_pieces(j, x, width)
    router = pr.router(flits, FLIT_BITS, index_width(hidden))
    hops = pr.hops(name, len(flits))
    cycles = sum(m["cycles_per_row"])
    u = unit_costs(pr, router, m["area_um2"])
    parts = movement_parts(u, hops, 1, cycles)
    plan = {}
    if pr.sram_table is not None:
        from rtl_gen.add_norm import AddNorm

        kept = pr.cache.setdefault("memories", {})
        if ("add_norm", repr(ucfg)) not in kept:
            kept["add_norm", repr(ucfg)] = memory_shapes(AddNorm(ucfg))
        plan = {"shapes": kept["add_norm", repr(ucfg)], "hidden": hidden}
    uses = [(plan["shapes"], norm_accesses(hidden, n), cycles)] if plan else []
    sram = pr.sram.price(uses, read_bits=read, write_bits=write)
    leak = e["leakage_per_row"] * n
    return piece_gates(
        name, sram_read=sram["read"], sram_write=sram["write"],
        sram_deselected=sram["deselected"],
        nonlinear=(e["free_per_row"] - e["idle_clock_per_row"]) * n - leak,
        movement=moved(parts), parts=parts,
        idle=e["idle_clock_per_row"] * n + parts["routers_idle_clock"],
        leakage=leak + sram["leakage"], memory_leakage=sram["leakage"],
        gated_logic=e["gated_per_row"] * n - leak,
        flits=len(flits), hops=hops, cycles=cycles,
        cells={"unit": m["cells"], "router": router["cells"]},
        counters={"rows": n, "channels": n * hidden}, sram_bits={"read": read, "write": write},
        unit_costs=u, memories=plan)
