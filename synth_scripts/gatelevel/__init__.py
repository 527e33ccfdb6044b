"""The gate-level engine: a block's energy in a liberty's gates from a simulated workload.

==================  ===========================================================================
module              what it does
==================  ===========================================================================
``liberty``         the one Liberty reader: finding, reading and preparing a cell library
``pdk``             PDKs as data: one table per cell library (``pdks/*.json``), matched by name
``trace``           a block's ports recorded from an Amaranth testbench, edge by edge
                    (:func:`record`, :class:`Trace`)
``netlist``         the block's Verilog mapped to the liberty with Yosys, SRAM macros cut
                    (:func:`map_netlist`, :class:`Netlist`)
``toggles``         the netlist replayed on the trace in Verilator or Icarus, every output
                    checked, every net's toggles counted (:func:`replay`, :class:`Toggles`)
``energy``          the toggles priced by the liberty's power tables, free-running and
                    clock-gated; link wires (:func:`energy.energy`, :func:`energy.link_pJ`)
``measure``         a netlist replayed and priced over a run's windows (``replay_energy``); the
                    generated router moving flits (``router_energy``)
``tile``            a neuron tile of a golden layer at RTL, checked, recorded, then in gates
                    (``run_tile``, ``tile_energy``, ``golden_counters``, ``tile_sram_bits``)
``attention``       the attention path recorded for a node-by-node replay
                    (``AttentionRecorder``)
==================  ===========================================================================

The names below are the engine's first steps, loaded from their module on first use (PEP 562),
so that ``from synth_scripts import gatelevel`` reads no liberty and runs no tool.
"""

from __future__ import annotations

import importlib

#: Public name -> the module of this package that defines it.
_HOME = {
    "Trace": "trace",
    "port_signals": "trace",
    "record": "trace",
    "Cell": "netlist",
    "Netlist": "netlist",
    "map_netlist": "netlist",
    "parse_netlist": "netlist",
    "save": "netlist",
    "SIMULATORS": "toggles",
    "ReplayMismatch": "toggles",
    "Toggles": "toggles",
    "replay": "toggles",
}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    try:
        module = _HOME[name]
    except KeyError:
        raise AttributeError(f"module 'synth_scripts.gatelevel' has no attribute {name!r}") \
            from None
    value = getattr(importlib.import_module(f"synth_scripts.gatelevel.{module}"), name)
    globals()[name] = value
    return value
