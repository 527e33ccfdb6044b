"""A neuron tile of a golden layer at RTL and in gates: run (checked against the golden model,
its stimulus recorded), the netlist replayed on it (:func:`tile_energy`), and what a window
reads from its SRAMs and takes in as flits, from its counters and beats.

A design runs by one of the two registered tiles (:func:`tile_block`): the dense tile for ``dense``,
the spiking tile for TTFS and M-TTFS. :func:`run_tile` drives the tile with the one tile driver
(:class:`rtl_gen.simulation.driver.TileDriver`), checks each window's output and counters against
the golden model, records the stimulus (:func:`synth_scripts.gatelevel.trace.record`) and collects
the input flits; :func:`tile_energy` maps the tile (SRAM macros cut) and prices the windows after
the load (:func:`synth_scripts.gatelevel.measure.replay_energy`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from synth_scripts.gatelevel.measure import MESH

if TYPE_CHECKING:
    import torch

__all__ = ["TileRun", "golden_counters", "lone_tile_config", "run_tile", "tile_block",
           "tile_energy", "tile_flits", "tile_sram_bits"]


def lone_tile_config(layer, *, macro: bool, mesh: tuple[int, int] = MESH):
    """The configuration of a tile that runs ``layer`` alone on ``mesh``: the one derivation
    of a configuration from a golden layer (:func:`rtl_gen.mapper.config_for_chain`), its
    configuration register reset to the masks the tile's image loads (``k`` the output
    mask's), at most 8 lanes."""
    from rtl_gen.mapper import config_for_chain

    return config_for_chain([layer], tile_neurons=layer.n_out, mesh_rows=mesh[0],
                            mesh_cols=mesh[1], lanes=min(layer.n_out, 8), sram_macro=macro,
                            k=layer.out_mask.k)


@dataclass
class TileRun:
    """A design's RTL run: the recorded stimulus and what the windows did."""

    trace: object  # synth_scripts.gatelevel.Trace
    load_cycles: int
    windows: int
    counters: list[dict]  # per window, as the tile counted (equal to the golden counters)
    flits: list[list[tuple[int, int]]]  # per window: the (addr, payload) of the input flits
    sram_bits: int  # SRAM array bits read over all windows
    #: the trace's cycle where each window after the load starts (the first the load's end)
    marks: list[int] = field(default_factory=list)


def tile_flits(cfg, dense: bool, beats: list[dict]) -> list[tuple[int, int]]:
    """The input flits of one window from its input beats (the marker left out): one per event,
    or ``P`` codes packed per flit for the dense design."""
    if not dense:
        return [(b["addr"], b["tau"]) for b in beats]
    from rtl_gen.dense import dense_pack

    P, tw = dense_pack(cfg), cfg.time_width
    codes = [b["code"] for b in beats]
    return [(i, sum(c << (p * tw) for p, c in enumerate(codes[i:i + P])))
            for i in range(0, len(codes), P)]


def tile_block(design: str):
    """The registered tile (:func:`rtl_gen.registry.tiles`) that runs ``design``: the dense
    tile for ``dense``, the spiking tile for TTFS and M-TTFS."""
    from rtl_gen import registry

    want = "dense" if design == "dense" else "spiking"
    return next(b for b in registry.tiles() if b.design == want)


def _golden(block, cfg, layer, row):
    """The golden model's window on codes ``row``: its output (the raw sums with
    ``cfg.raw_sums``; the dense design's codes; the spiking design's events ``(index, t)``) and
    its counters."""
    from golden_models import encode_events
    from golden_models.dense import run_dense_sums

    dense = block.node.i == "codes"
    if cfg.raw_sums:
        return (run_dense_sums(layer, row) if dense
                else layer.run_sums(*encode_events(row, layer.in_mask)))
    if dense:
        return block.node.run(layer, row)
    return block.node.run(layer, encode_events(row, layer.in_mask))


def golden_counters(layer, design: str, config, row) -> dict[str, int]:
    """The counters of ``design``'s tile (configuration ``config``, as :func:`run_tile`'s) on
    one window of codes ``row``, from the golden model: what the tile counts (:func:`run_tile`
    checks they are equal)."""
    return _golden(tile_block(design), config, layer, row)[1].as_dict()


def _check_window(block, cfg, layer, design: str, n: int, row, run) -> dict:
    """The golden model's window ``n`` (codes ``row``) against the tile's ``run``: its output
    (codes, events, or with ``cfg.raw_sums`` the integer sums) and counters; returns the
    golden counters."""
    from golden_models import CodeSpace
    from rtl_gen.dense import unpack_codes

    dense = block.node.i == "codes"
    out, ref_counters = _golden(block, cfg, layer, row)
    if cfg.raw_sums:
        if [(b["addr"], b["sum"]) for b in run.output[:-1]] != list(enumerate(out.tolist())):
            raise AssertionError(f"{design}: window {n}: RTL sums differ from the golden "
                                 "layer's raw sums")
    elif dense:
        pairs = []
        for b in run.output[:-1]:
            pairs += unpack_codes(cfg, b["addr"], b["codes"], layer.n_out)
        # a beat carries c - tau in the tile's (input) family: its code in the output's
        shift = layer.out_mask.space.c - CodeSpace(cfg.T, cfg.family).c
        if [q + shift for _, q in sorted(pairs)] != out.tolist():
            raise AssertionError(f"{design}: window {n}: RTL codes differ from the golden "
                                 "dense model")
    else:
        index, t = out
        events = [(b["addr"], b["t"]) for b in run.output[:-1]]
        if events != list(zip(index.tolist(), t.tolist(), strict=True)):
            raise AssertionError(f"{design}: window {n}: RTL events differ from the golden "
                                 "layer")
    want = ref_counters.as_dict()
    if run.counters != want:
        raise AssertionError(f"{design}: window {n}: tile counters {run.counters} differ "
                             f"from the golden {want}")
    return want


def run_tile(layer, design: str, codes: torch.Tensor, *, mesh: tuple[int, int] = MESH,
             config=None) -> TileRun:
    """Simulate ``design``'s tile at RTL on ``codes``, check it against the golden model.

    ``config`` (an :class:`rtl_gen.params.RTLConfig`) is the tile's, when not
    :func:`lone_tile_config`'s (e.g. a tile in raw-sum mode, ``raw_sums``: its windows send the
    integer sums, checked against ``IntegerLayer.run_sums`` or
    ``golden_models.dense.run_dense_sums``); its ``sram_macro`` is ignored (the RTL runs the
    behavioural SRAMs).

    Raises
    ------
    AssertionError
        A window's output or counters differ from the golden model's.
    """
    from dataclasses import replace

    from golden_models import encode_events
    from rtl_gen.simulation import elaborated
    from rtl_gen.simulation.driver import TileDriver, Window
    from synth_scripts.gatelevel.trace import record

    cfg = (lone_tile_config(layer, macro=False, mesh=mesh) if config is None
           else replace(config, sram_macro=False))
    block = tile_block(design)
    dense = block.node.i == "codes"  # the port kinds of the registered block decide the beats
    mask = (1 << cfg.time_width) - 1
    windows = []
    for n, row in enumerate(codes):
        if dense:
            beats = [*({"code": int(q) & mask, "last": 0} for q in row.tolist()),
                     {"code": 0, "last": 1}]
        else:
            index, t = encode_events(row, layer.in_mask)
            beats = [*({"addr": a, "tau": b, "last": 0}
                       for a, b in zip(index.tolist(), t.tolist(), strict=True)),
                     {"addr": 0, "tau": 0, "last": 1}]
        load = block.node.image(cfg, layer) if n == 0 else None
        windows.append(Window(load, beats))
    inputs: list[list[dict]] = [[] for _ in windows]
    load_cycles = 0

    def on_beat(beat):
        nonlocal load_cycles
        if beat.port == "load":
            load_cycles = beat.cycle
        elif beat.port == "i" and not beat.payload["last"]:
            inputs[beat.window].append(beat.payload)

    dut = block.build(cfg)
    names = block.counters(cfg)
    driver = TileDriver(dut, windows, names, on_beat=on_beat)
    # simulated as one elaboration whose SRAMs are probed: their read data drive the netlist's
    # cut macro outputs
    top, module = elaborated(dut)
    extra = {f"{name}.bus__rdata": module.submodules[name].bus.rdata
             for name in ("weights", "thresholds", "init")}
    trace = record(dut, driver.testbench, extra_inputs=extra, top=top)
    counters = [_check_window(block, cfg, layer, design, n, row, run)
                for n, (row, run) in enumerate(zip(codes, driver.results, strict=True))]
    bits = sum(tile_sram_bits(cfg, c) for c in counters)
    # a window's cycles run to its output marker: the next one's start there
    marks = [load_cycles, *(r.cycles["last_out"] for r in driver.results[:-1])]
    return TileRun(trace, load_cycles, len(windows), counters,
                   [tile_flits(cfg, dense, beats) for beats in inputs], bits, marks)


def tile_sram_bits(cfg, counters: dict[str, int]) -> int:
    """The SRAM array bits a tile of configuration ``cfg`` reads in a window with
    ``counters``: its weight rows, the init rows and, unless it sends raw sums, a threshold row
    per step of the walk and lane group."""
    G = cfg.groups
    walk = 0 if cfg.raw_sums else (cfg.T - 1) * G * cfg.theta_row_width
    return counters["weight_row_reads"] * cfg.weight_row_width + walk + G * cfg.init_row_width


def tile_energy(layer, design: str, run: TileRun, lib_path: Path, work: Path, sim: str,
                clock_ns: float, netlists: dict, *, mesh: tuple[int, int] = MESH,
                config=None, one_replay: bool = False, netlist_dir: Path | None = None,
                windows: bool = False) -> dict:
    """Gate-level energy of the windows (the load phase subtracted), free-running and gated.

    ``netlists`` caches the mapped tile netlists by kind (``dense``, ``mttfs``) across designs;
    with ``config`` (the tile's :class:`rtl_gen.params.RTLConfig`, as :func:`run_tile`'s) by
    kind and the digest of the tile's Verilog, so tiles that generate the same Verilog share
    one netlist. ``one_replay``: :func:`replay_energy`'s. ``netlist_dir``: where the netlist is
    mapped (a folder named by kind and digest in it; default ``work``). ``windows`` (with
    ``one_replay``): each window priced on its own too (:func:`replay_energy`'s ``marks``).
    """
    import hashlib
    from dataclasses import replace

    from amaranth.back import verilog

    from rtl_gen.sram import MACRO_NAME
    from synth_scripts.gatelevel.measure import replay_energy
    from synth_scripts.gatelevel.netlist import kept_verilog, map_netlist

    kind = "dense" if design == "dense" else "mttfs"
    key, text = kind, None
    if config is not None:
        macro = replace(config, sram_macro=True)
        b = tile_block(design)
        text = kept_verilog(netlist_dir, (f"{kind}_tile", b.module, repr(macro)),
                            lambda: verilog.convert(b.build(macro), name=f"{kind}_tile",
                                                    emit_src=False))
        key = (kind, hashlib.sha256(text.encode()).hexdigest()[:16])
    if key not in netlists:
        if text is None:
            comp = tile_block(design).build(lone_tile_config(layer, macro=True, mesh=mesh))
            text = verilog.convert(comp, name=f"{kind}_tile", emit_src=False)
        where = (netlist_dir or work) / (kind if config is None else f"{kind}_{key[1]}")
        netlists[key] = map_netlist(text, f"{kind}_tile", lib_path, where,
                                    cut_macros={MACRO_NAME: "RDATA"})
    return replay_energy(netlists[key], run.trace, run.load_cycles, run.windows,
                         work / design, sim, clock_ns, one_replay=one_replay,
                         marks=run.marks if windows else None)
