"""One design of ``matterhorn compare`` measured in gates (docs/compare.md, "Method").

A design is a golden layer run by one of the two registered tiles
(:func:`synth_scripts.gatelevel.tile.tile_block`) on a
workload's input windows (:data:`golden_models.workloads.DESIGNS`): ``dense`` by
:class:`rtl_gen.dense.DenseTile`, the others by :class:`rtl_gen.tile.NeuronTile`.
:func:`measure_design` measures one:

The steps are the gate-level engine's (:mod:`synth_scripts.gatelevel`):

1. ``gatelevel.tile.run_tile``: the tile in the Amaranth simulator, driven by the one tile
   driver (:class:`rtl_gen.simulation.driver.TileDriver`), its output and counters checked
   against the golden model window by window; the stimulus is recorded
   (``gatelevel.trace.record``) and the driver's trace hook collects the input flits.
2. ``gatelevel.tile.tile_energy``: the tile's liberty-mapped netlist (SRAM macros cut out)
   replayed on that trace; the toggles priced by the liberty (``gatelevel.energy``), the load
   phase subtracted, free-running and clock-gated.
3. ``gatelevel.measure.router_energy``: the generated router's netlist moving the design's own
   input flits one hop each, and idling.
4. SRAM: on NanGate 45 (the process of the shipped macros,
   :data:`synth_scripts.block_gates.MACRO_PDKS`) the tile's memories at their FreePDK45
   macros' measured read, deselected-cycle and leakage energies, counted by access as the
   block's pricing counts them (:func:`synth_scripts.block_gates.tile_plan`,
   :func:`~synth_scripts.block_gates.tile_accesses`,
   :func:`~synth_scripts.block_gates.price_memories`); on any other liberty the bits read
   times a cited per-bit read energy (the PDK table's ``sram_bit``, scaled to the library by
   :func:`synth_scripts.scaling.sram_bit_pJ`): not our gates, and no deselected clock or
   leakage of the memories.
5. Leakage: the tile's cells' (the liberty's ``cell_leakage_power`` over the replay's clocks,
   taken out of compute) and, with the macros, the memories' over the same clocks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from synth_scripts.gatelevel.measure import MESH

if TYPE_CHECKING:
    import torch

    from synth_scripts.block_gates import SramCosts

__all__ = ["DesignGates", "measure_design"]


@dataclass(frozen=True)
class DesignGates:
    """One design measured in gates, per window (means over the workload's windows).

    ``energy_pJ``: ``sram`` (the memories' reads), ``sram_deselected`` (the macros' clock on the
    cycles they are not read; 0 by the bit), ``compute`` (less the cells' leakage),
    ``movement``, ``idle``, ``leakage`` (cells and macros), ``total`` (free-running) and
    ``total_gated`` (idle blocks and deselected macros clock-gated); ``counters``: the golden
    counters; ``flits``: input flits; ``router``: the router's ``per_hop_pJ``,
    ``idle_per_clock_pJ`` and ``cells``.
    """

    counters: dict[str, float]
    flits: float
    cycles: float
    busy_cycles: float
    energy_pJ: dict[str, float]
    tile_cells: int
    router: dict


def measure_design(layer, design: str, codes: torch.Tensor, *, lib_path: Path, work: Path,
                   sim: str, clock_ns: float, hops: float, sram: SramCosts, cache: dict,
                   mesh: tuple[int, int] = MESH) -> DesignGates:
    """Run ``design`` (its golden ``layer``) on ``codes`` at RTL and in gates.

    ``hops`` is the mean hop count of a flit, ``sram`` how the library's measurement prices
    the memories (:meth:`synth_scripts.block_gates.SramCosts.of_library`); ``cache`` keeps
    mapped netlists (and the tile's memory shapes) across the designs of a library.
    """
    from rtl_gen.dense import dense_pack
    from synth_scripts.block_gates import tile_accesses, tile_plan
    from synth_scripts.gatelevel.measure import router_energy
    from synth_scripts.gatelevel.tile import lone_tile_config, run_tile, tile_energy

    run = run_tile(layer, design, codes, mesh=mesh)
    tile = tile_energy(layer, design, run, lib_path, work, sim, clock_ns,
                       cache.setdefault("tiles", {}), mesh=mesh)
    cfg = lone_tile_config(layer, macro=False, mesh=mesh)
    width = dense_pack(cfg) * cfg.time_width if design == "dense" else cfg.time_width
    all_flits = [f for w in run.flits for f in w]
    router = router_energy(all_flits[:256], width, cfg.in_addr_width, lib_path, work, sim,
                           clock_ns, cache.setdefault("routers", {}), mesh=mesh)
    n = run.windows
    flits = len(all_flits) / n
    move_clocks = flits * hops
    router_idle = max(tile["cycles"] - move_clocks, 0.0) * router["idle_per_clock_pJ"]
    uses = []
    if sram.table is not None:
        plan = tile_plan(cfg, design == "dense", cache.setdefault("memories", {}))
        counted = {k: sum(c[k] for c in run.counters) for k in run.counters[0]}
        uses.append((plan["shapes"], tile_accesses(plan, n, counted), tile["cycles"] * n))
    mem = {k: v / n for k, v in sram.price(uses, read_bits=run.sram_bits, write_bits=0).items()}
    gates = {
        "sram": mem["read"],
        "sram_deselected": mem["deselected"],
        "compute": tile["free_pJ"] - tile["idle_clock_pJ"] - tile["leakage_pJ"],
        "movement": flits * hops * router["per_hop_pJ"],
        "idle": tile["idle_clock_pJ"] + router_idle,
        "leakage": tile["leakage_pJ"] + mem["leakage"],
    }
    gates["total"] = sum(gates.values())
    # gated: no idle clock and no deselected macro clock, but the clock-gating cell's own energy
    gates["total_gated"] = (gates["sram"] + gates["movement"] + tile["gated_pJ"]
                            + mem["leakage"])
    return DesignGates(
        counters={k: sum(c[k] for c in run.counters) / n for k in run.counters[0]},
        flits=flits, cycles=tile["cycles"], busy_cycles=tile["busy_cycles"], energy_pJ=gates,
        tile_cells=tile["cells"], router=router)
