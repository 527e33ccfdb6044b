"""The cost of the AXI wrappers: their own logic's area and energy, apart from the accelerator's.

What is synthesized is :class:`rtl_gen.axi.AxiShell` alone (the register file, the load beat,
the stream adapters and the counter snapshot), for the tile of the blocks' configuration
(fan-in 3072, ``N`` = 8) and for the system of ``matterhorn synth --system`` (vector length 64,
``N`` = 8) on a 2x2 mesh; the block behind it is not part of it. The report carries them under
``wrappers`` (docs/synth.md), never under ``blocks``: the unit costs, the comparison with the
paper and every energy figure built on the blocks leave the wrapper out, and it is priced on
its own.

Activity: ``loaded`` is one beat per clock on both streams (the input stream carries golden
codes or events, the block's output golden events; ``valid`` and ``ready`` held at 1) with the
AXI4-Lite slave idle; ``idle`` holds every input at 0. Energy is per clock, i.e. per input beat
of the loaded run.
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["MESH", "markdown", "prepare"]

#: Mesh of the priced system wrapper (its counter snapshot grows with the node count).
MESH = (2, 2)


def _spec(name: str, kind: str, config, what: str):
    from amaranth.back import verilog

    from golden_models import CodeSpace
    from rtl_gen.axi import AxiShell
    from rtl_gen.generate import port_list
    from rtl_gen.layouts import system_widths
    from synth_scripts import activity
    from synth_scripts.blocks import BlockSpec

    shell = AxiShell(config, kind)
    space = CodeSpace(config.T, config.family)
    n = activity.STREAM_LENGTH
    ones = np.ones(n, dtype=np.int64)
    out_aw = config.out_addr_width if kind == "tile" else system_widths(config)["out_addr"]
    addr, t = activity.event_stream(space, config.k, config.n_in, salt=60)
    out_events = (addr % (1 << out_aw)) | (t << out_aw)
    if kind == "tile":
        tdata = addr | (t << config.in_addr_width)
        top = "mttfs_axi_tile_shell"
    else:
        tdata = activity.activation_codes(space, n, activity.P_ZERO, salt=61).numpy() % config.T
        top = "mttfs_axi_system_shell"
    tlast = (np.arange(n) % config.n_in == config.n_in - 1).astype(np.int64)
    loaded = {
        "s_axis__tvalid": ones, "s_axis__tdata": tdata, "s_axis__tlast": tlast,
        "m_axis__tready": ones, "block__i__ready": ones, "block__o__valid": ones,
        # the block's output payload: {addr, t, last}, last 0 (events)
        "block__o__payload": out_events, "block__busy": ones,
        "s_axil__bready": ones, "s_axil__rready": ones,
    }
    return BlockSpec(
        name=name, top=top, what=what, per="clock (one beat in and one out)",
        verilog=verilog.convert(shell, name=top, emit_src=False), macro=False,
        config={"kind": kind, **{k: v for k, v in config.as_dict().items()
                                 if k in ("T", "k", "n_in", "tile_neurons", "mesh_rows",
                                          "mesh_cols", "axil_addr_width", "axis_width")},
                "registers": len(shell.regmap.registers)},
        ports=port_list(shell),
        runs={"loaded": loaded, "idle": {}},
    )


def prepare(T: int, k: int) -> list:
    """The wrappers to synthesize for ``T``, ``k`` (:class:`synth_scripts.blocks.BlockSpec`;
    empty when ``rtl_gen`` cannot build ``T``)."""
    from rtl_gen.params import MAX_T, RTLConfig
    from synth_scripts import operators
    from synth_scripts.blocks import SYNTH_TILE_NEURONS
    from synth_scripts.system_area import SYSTEM_N_IN

    if T > MAX_T:
        return []
    tile = RTLConfig(T=T, k=k, n_in=operators.LINEAR_FAN_IN, tile_neurons=SYNTH_TILE_NEURONS)
    system = RTLConfig(T=T, k=k, n_in=SYSTEM_N_IN, tile_neurons=SYNTH_TILE_NEURONS,
                       mesh_rows=MESH[0], mesh_cols=MESH[1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the shells are elaborated once each, here
        return [
            _spec("axi_tile", "tile", tile,
                  f"AXI wrapper of the tile (N={SYNTH_TILE_NEURONS}, fan-in {tile.n_in}): register "
                  "file, load beat, streams, counter snapshot; the tile excluded"),
            _spec("axi_system", "system", system,
                  f"AXI wrapper of the {MESH[0]}x{MESH[1]} system (N={SYNTH_TILE_NEURONS}, vector "
                  f"length {system.n_in}): register file, load beat, streams, counter "
                  "snapshot of every node; the system excluded"),
        ]


def markdown(doc: dict) -> list[str]:
    """The report's section on the wrappers (lines), empty when it has none."""
    from toolkit_base.tables import markdown_table

    wrappers = doc.get("wrappers") or []
    if not wrappers:
        return []

    def fmt(x, spec="{:.4g}"):
        return "-" if x is None else spec.format(x)

    def row(w):
        m, e = w["mapped"], w.get("energy_pJ")
        return [w["name"], w["what"], w["generic"]["cells"],
                fmt(m and m["flip_flops"], "{}"), fmt(m and m["area_um2"], "{:.1f}"),
                fmt(e and e["per_op"]), fmt(e and e.get("idle_per_clock"))]

    return [
        "",
        "## AXI wrappers (not in the unit costs or the comparisons)",
        "",
        *markdown_table(["wrapper", "what", "cells", "flip-flops", "area um^2",
                         "pJ/clock streaming", "pJ/clock idle"],
                        map(row, wrappers), align="llrrrrr"),
    ]


def price(T: int, k: int, lib_path, workdir, *, clock_ns: float = 10.0) -> list[dict]:
    """The report entries of the wrappers alone (synthesis, mapping on ``lib_path``, power of
    both runs), the same calls ``matterhorn synth`` makes for them beside the blocks; for a
    quick look at the wrappers' cost without the operators and blocks."""
    from pathlib import Path

    from synth_scripts import flow
    from synth_scripts.gatelevel import liberty

    work = Path(workdir)
    work.mkdir(parents=True, exist_ok=True)
    lib = liberty.prepare(Path(lib_path), work)
    entries = []
    for spec in prepare(T, k):
        d = work / spec.top
        d.mkdir()
        synth = flow.synthesize(spec.top, spec.read_commands(d), d, lib)
        inputs = flow.netlist_inputs(synth.netlist.read_text())
        power = {label: flow.power(spec.top, synth.netlist, flow.activity_commands(ports), lib,
                                   clock_ns, work / "sta" / f"{spec.top}{label}")
                 for label, ports in spec.activities(inputs).items()}
        entries.append(spec.report_entry(synth, power, clock_ns))
    return entries
