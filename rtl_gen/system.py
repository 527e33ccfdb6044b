"""The M-TTFS system: encoder, a mesh of neuron tiles, and a layer-window sequencer.

One :class:`rtl_gen.tile.NeuronTile` sits at every node of a ``mesh_rows x mesh_cols``
:class:`rtl_gen.router.Mesh`. The mapper (:mod:`rtl_gen.mapper`) assigns each node a layer and
a slice of that layer's neurons, and programs it through the ``load`` port: the tile's SRAM
images, the node's route table (destination nodes and address offset) and its role.

Layer-sequential accumulate-then-fire:

- the encoder turns the input codes into events and broadcasts each one to every layer-0 tile
  (an eager fork: a beat is done when every layer-0 tile has taken it), marker beat included;
- a tile of layer ``l`` integrates the events that reach it, fires once its window's marker
  arrives, and emits its output events; a non-final tile's injector turns each event into one
  flit per route-table entry (``addr`` + offset, ``t``) into its router's local port;
- the sequencer tracks the producing layer ``p``: when every tile of layer ``p`` has emitted its
  marker and the mesh is empty (``busy`` low: a flit is always in some router FIFO until it is
  ejected), the layer-``p+1`` tiles have received every event, and the sequencer gives each of
  them a marker beat; then ``p`` advances;
- the final layer's tiles feed a merge that emits events on ``o`` in time order, ascending global
  address within a step (each tile's stream is sorted; the merge waits until every final tile
  shows its next event or has finished, then takes the least ``(t, addr)``), then one marker.

Nodes without a tile are disabled and never take part.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from rtl_gen.encoder import Encoder
from rtl_gen.layouts import (
    SYSTEM_TARGETS,
    code_layout,
    route_layout,
    system_load_layout,
    system_out_layout,
    system_widths,
)
from rtl_gen.params import ConfigComponent, RTLConfig, counter_ports
from rtl_gen.router import Mesh
from rtl_gen.simulation import check_probability, read_counters, run_simulator
from rtl_gen.tile import NeuronTile

__all__ = [
    "InferenceResult",
    "System",
    "load_system",
    "run_inference",
    "simulate_system",
    "system_from_config",
]

#: Width of the flit and hop totals.
TOTAL_WIDTH = 32


class System(ConfigComponent):
    """Encoder + ``mesh_rows x mesh_cols`` tiles on an XY mesh + layer-window sequencer.

    Parameters
    ----------
    config : RTLConfig
        Tile, encoder and mesh parameters.

    Members
    -------
    load : In(stream.Signature(system_load_layout(config)))
        Configuration beats (:meth:`rtl_gen.mapper.SystemMap.load_beats`); accepted only while
        the system is idle (``busy`` low).
    i : In(stream.Signature(code_layout(config)))
        Input codes, ``n_in`` per inference, address order (the encoder's input).
    o : Out(stream.Signature(system_out_layout(config)))
        Output events of the last layer, then a ``last`` marker beat that ends the inference.
    busy : Out(1)
        An inference is running (from its first code to its output marker).
    cnt_<name>_n<node> : Out(width)
        Tile counters (``config.tile_counters``) of node ``y * cols + x``, of its last window
        (one plain port per node and counter, so the Verilog and manifest names agree).
    cnt_enc_events_out, cnt_enc_events_suppressed : Out(bits of n_in)
        Encoder counters of the last input vector.
    cnt_flits, cnt_hops : Out(32)
        Flits ejected and the sum of their hop counts, since the inference started.

    Route tables, node configurations and the layer count hold their values through ``rst``;
    the tiles' mask registers reset to the config values, so reload after a reset.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`RTLConfig`.
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        members = {
            "load": In(stream.Signature(system_load_layout(config))),
            "i": In(stream.Signature(code_layout(config))),
            "o": Out(stream.Signature(system_out_layout(config))),
            "busy": Out(1),
        }
        for n in range(config.mesh_rows * config.mesh_cols):
            members.update(counter_ports(config.tile_counters, f"cnt_{{}}_n{n}"))
        members.update(counter_ports(config.encoder_counters, "cnt_enc_{}"))
        members.update(counter_ports({"flits": TOTAL_WIDTH, "hops": TOTAL_WIDTH}))
        return members

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        rows, cols = cfg.mesh_rows, cfg.mesh_cols
        P = rows * cols
        sw = system_widths(cfg)

        m.submodules.encoder = enc = Encoder(cfg)
        m.submodules.mesh = mesh = Mesh(rows, cols, addr_width=cfg.in_addr_width,
                                        time_width=cfg.time_width)
        tiles = []
        for n in range(P):
            tile = NeuronTile(cfg)
            m.submodules[f"tile_x{n % cols}_y{n // cols}"] = tile
            tiles.append(tile)
            for name in cfg.tile_counters:
                m.d.comb += getattr(self, f"cnt_{name}_n{n}").eq(getattr(tile, f"cnt_{name}"))
        for name in cfg.encoder_counters:
            m.d.comb += getattr(self, f"cnt_enc_{name}").eq(getattr(enc, f"cnt_{name}"))

        # -- configuration registers (survive rst, like SRAM contents) ---------------------------
        n_layers = Signal(sw["n_dst"], reset_less=True)
        enable = [Signal(name=f"enable{n}", reset_less=True) for n in range(P)]
        layer = [Signal(sw["layer"], name=f"layer{n}", reset_less=True) for n in range(P)]
        n_dst = [Signal(sw["n_dst"], name=f"n_dst{n}", reset_less=True) for n in range(P)]
        out_offset = [Signal(sw["out_addr"], name=f"out_offset{n}", reset_less=True)
                      for n in range(P)]
        entry = route_layout(cfg)
        route = [[Signal(entry, name=f"route{n}_{e}", reset_less=True) for e in range(P)]
                 for n in range(P)]

        # -- sequencer state ----------------------------------------------------------------------
        running = Signal()
        p = Signal(sw["layer"])  # producing layer
        enc_done = Signal()  # the encoder's marker reached every layer-0 tile
        done = Signal(P)  # the node's tile emitted its marker in this inference
        taken = Signal(P)  # encoder fork: the node took the current encoder beat
        mark = Signal(P)  # a marker beat is pending for the node
        last_layer = Signal(sw["n_dst"])
        m.d.comb += [last_layer.eq(n_layers - 1), self.busy.eq(running)]
        first = [Signal(name=f"first{n}") for n in range(P)]
        is_final = [Signal(name=f"final{n}") for n in range(P)]
        for n in range(P):
            m.d.comb += [
                first[n].eq(enable[n] & (layer[n] == 0)),
                is_final[n].eq(enable[n] & (layer[n] == last_layer)),
            ]

        # -- load port ---------------------------------------------------------------------------
        ld = self.load.payload
        tile_target = ld.target < 4
        tile_ready = Array(t.load.ready for t in tiles)[ld.node] if P > 1 else tiles[0].load.ready
        m.d.comb += self.load.ready.eq(~running & (~tile_target | tile_ready))
        for n, tile in enumerate(tiles):
            m.d.comb += [
                tile.load.valid.eq(self.load.valid & ~running & tile_target & (ld.node == n)),
                tile.load.payload.target.eq(ld.target[:2]),
                tile.load.payload.addr.eq(ld.addr),
                tile.load.payload.data.eq(ld.data),
            ]
        with m.If(self.load.valid & self.load.ready):
            for n in range(P):
                with m.If(ld.node == n):
                    with m.If(ld.target == SYSTEM_TARGETS["route"]):
                        for e in range(P):
                            with m.If(ld.addr == e):
                                m.d.sync += route[n][e].eq(ld.data)
                    with m.If(ld.target == SYSTEM_TARGETS["node"]):
                        fields = Cat(enable[n], layer[n], n_dst[n], out_offset[n])
                        m.d.sync += fields.eq(ld.data)
            with m.If(ld.target == SYSTEM_TARGETS["system"]):
                m.d.sync += n_layers.eq(ld.data)

        # -- input codes -> encoder; an inference starts with its first code ----------------------
        m.d.comb += [
            enc.i.valid.eq(self.i.valid & ~enc_done),
            enc.i.payload.eq(self.i.payload),
            self.i.ready.eq(enc.i.ready & ~enc_done),
        ]
        total_flits = self.cnt_flits
        total_hops = self.cnt_hops
        start = Signal()
        m.d.comb += start.eq(self.i.valid & self.i.ready & ~running)
        with m.If(start):
            m.d.sync += [running.eq(1), p.eq(0), done.eq(0), mark.eq(0), taken.eq(0),
                         total_flits.eq(0), total_hops.eq(0)]

        # -- encoder -> layer-0 tiles (eager fork) ------------------------------------------------
        fork_ok = Const(1, 1)
        for n, tile in enumerate(tiles):
            fork_ok = fork_ok & (~first[n] | taken[n] | tile.i.ready)
        m.d.comb += enc.o.ready.eq(fork_ok)
        with m.If(enc.o.valid & enc.o.ready):
            m.d.sync += taken.eq(0)
            with m.If(enc.o.payload.last):
                m.d.sync += enc_done.eq(1)

        # -- tile inputs --------------------------------------------------------------------------
        ejected = []
        for n, tile in enumerate(tiles):
            x, y = n % cols, n // cols
            port = mesh.o[y][x]
            with m.If(first[n]):
                m.d.comb += [
                    tile.i.valid.eq(enc.o.valid & ~taken[n]),
                    tile.i.payload.eq(enc.o.payload),
                ]
                with m.If(tile.i.valid & tile.i.ready & ~(enc.o.valid & enc.o.ready)):
                    m.d.sync += taken[n].eq(1)
            with m.Elif(mark[n]):
                m.d.comb += [tile.i.valid.eq(1), tile.i.payload.last.eq(1)]
                with m.If(tile.i.ready):
                    m.d.sync += mark[n].eq(0)
            with m.Elif(enable[n]):
                m.d.comb += [
                    tile.i.valid.eq(port.valid),
                    tile.i.payload.addr.eq(port.payload.addr),
                    tile.i.payload.tau.eq(port.payload.t),
                    port.ready.eq(tile.i.ready),
                ]
            take = Signal(name=f"eject{n}")
            m.d.comb += take.eq(port.valid & port.ready)
            ejected.append((take, port.payload.hops))
        flits_now = sum((t for t, _ in ejected), Const(0, 1))
        hops_now = sum((Mux(t, h, 0) for t, h in ejected), Const(0, 1))
        # the first code of an inference clears the totals (no flit moves on that clock)
        with m.If(~start):
            m.d.sync += [total_flits.eq(total_flits + flits_now),
                         total_hops.eq(total_hops + hops_now)]

        # -- tile outputs: injectors (non-final) and the output merge (final) ----------------------
        have = []
        for n, tile in enumerate(tiles):
            x, y = n % cols, n // cols
            port = mesh.i[y][x]
            ev = tile.o.payload
            idx = Signal(range(max(P, 2)), name=f"inject_idx{n}")
            sel = Array(route[n])[idx]
            head = Signal(name=f"head{n}")  # an event (not a marker) waits at the tile output
            m.d.comb += head.eq(tile.o.valid & ~ev.last)
            with m.If(tile.o.valid & ev.last):
                m.d.comb += tile.o.ready.eq(1)
                m.d.sync += done[n].eq(1)
            with m.Elif(head & ~is_final[n]):
                with m.If(n_dst[n] == 0):
                    m.d.comb += tile.o.ready.eq(1)
                with m.Else():
                    m.d.comb += [
                        port.valid.eq(1),
                        port.payload.dst_x.eq(sel.dst_x),
                        port.payload.dst_y.eq(sel.dst_y),
                        port.payload.addr.eq(ev.addr + sel.offset),
                        port.payload.t.eq(ev.t),
                        # explicit, so every payload bit has a driver in the netlist
                        port.payload.hops.eq(0),
                    ]
                    with m.If(port.ready):
                        with m.If(idx == n_dst[n] - 1):
                            m.d.sync += idx.eq(0)
                            m.d.comb += tile.o.ready.eq(1)
                        with m.Else():
                            m.d.sync += idx.eq(idx + 1)
            have.append(head & is_final[n])

        # merge: wait until every final tile shows an event or is done, take the least (t, addr)
        final_stage = running & (p == last_layer)
        all_present = Const(1, 1)
        all_done = Const(1, 1)
        for n in range(P):
            all_present = all_present & (~is_final[n] | done[n] | have[n])
            all_done = all_done & (~is_final[n] | done[n])
        keys = []
        for n, tile in enumerate(tiles):
            gaddr = Signal(sw["out_addr"], name=f"gaddr{n}")
            m.d.comb += gaddr.eq(tile.o.payload.addr + out_offset[n])
            keys.append((Cat(gaddr, tile.o.payload.t), gaddr))
        best_valid = Const(0, 1)
        best_key = Const(0, len(keys[0][0]))
        best_idx = Const(0, range(max(P, 2)))
        for n in range(P):
            key = keys[n][0]
            better = have[n] & (~best_valid | (key < best_key))
            b_valid, b_key, b_idx = (Signal(name=f"best_valid{n}"),
                                     Signal(len(key), name=f"best_key{n}"),
                                     Signal(range(max(P, 2)), name=f"best_idx{n}"))
            m.d.comb += [
                b_valid.eq(best_valid | have[n]),
                b_key.eq(best_key),
                b_idx.eq(best_idx),
            ]
            with m.If(better):
                m.d.comb += [b_key.eq(key), b_idx.eq(n)]
            best_valid, best_key, best_idx = b_valid, b_key, b_idx
        t_w = cfg.time_width
        with m.If(final_stage & all_present & best_valid):
            m.d.comb += [
                self.o.valid.eq(1),
                self.o.payload.addr.eq(best_key[:sw["out_addr"]]),
                self.o.payload.t.eq(best_key[sw["out_addr"]:sw["out_addr"] + t_w]),
            ]
            with m.If(self.o.ready):
                for n, tile in enumerate(tiles):
                    with m.If(best_idx == n):
                        m.d.comb += tile.o.ready.eq(1)
        with m.Elif(final_stage & all_done):
            m.d.comb += [self.o.valid.eq(1), self.o.payload.last.eq(1)]
            with m.If(self.o.ready):
                m.d.sync += [running.eq(0), enc_done.eq(0), done.eq(0), p.eq(0)]

        # -- sequencer: layer p finished and the mesh is empty -> markers to layer p+1 -----------
        layer_done = Const(1, 1)
        for n in range(P):
            layer_done = layer_done & (~enable[n] | (layer[n] != p) | done[n])
        with m.If(running & (p != last_layer) & layer_done & ~mesh.busy & (mark == 0)):
            m.d.sync += [
                mark.eq(Cat(*[enable[n] & (layer[n] == p + 1) for n in range(P)])),
                p.eq(p + 1),
            ]
        return m


def system_from_config(config: RTLConfig) -> System:
    """The ``mttfs_system`` top module of ``config`` (programmed later through ``load``)."""
    # src_loc_at=1: the caller, not this factory, is the creator Amaranth names (e.g. in its
    # warning about a component that was never elaborated)
    return System(config, src_loc_at=1)


# -- simulation driver -------------------------------------------------------------------------


@dataclass(frozen=True)
class InferenceResult:
    """What one simulated inference produced.

    ``events`` are the ``(addr, t)`` system output events in emission order; ``tile_counters``
    the ``cnt_*`` ports per enabled node; ``encoder`` the encoder counters; ``flits`` and
    ``hops`` the ``cnt_flits``/``cnt_hops`` totals; ``cycles`` the clocks from the first code
    offered to the output marker taken.
    """

    events: list[tuple[int, int]]
    tile_counters: dict[int, dict[str, int]]
    encoder: dict[str, int]
    flits: int
    hops: int
    cycles: int


async def load_system(ctx, dut: System, beats) -> None:
    """Testbench coroutine: send ``(node, target, addr, data)`` beats on ``dut.load``."""
    for node, target, addr, word in beats:
        ctx.set(dut.load.valid, 1)
        ctx.set(dut.load.payload, {"node": node, "target": target, "addr": addr, "data": word})
        await ctx.tick().until(dut.load.ready)
    ctx.set(dut.load.valid, 0)


async def run_inference(ctx, dut: System, codes, *, nodes=(), rng=None, o_ready: float = 1.0,
                        max_cycles: int = 200_000, stop_after: int | None = None):
    """Testbench coroutine: feed ``codes`` (``n_in`` of them) on ``dut.i`` while draining ``o``.

    Returns an :class:`InferenceResult` (counters of ``nodes``) once the output marker is taken,
    or ``None`` after ``stop_after`` clocks (to interrupt an inference, e.g. with a reset).
    """
    cfg = dut.config
    rng = rng or random.Random(0)
    codes = list(codes)
    events = []
    cycles = 0
    while True:
        if stop_after is not None and cycles >= stop_after:
            ctx.set(dut.i.valid, 0)
            ctx.set(dut.o.ready, 0)
            return None
        if cycles >= max_cycles:
            raise RuntimeError(f"the inference did not end in {max_cycles} clocks")
        if codes:
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, {"q": codes[0]})
        else:
            ctx.set(dut.i.valid, 0)
        ready = o_ready >= 1.0 or rng.random() < o_ready
        ctx.set(dut.o.ready, ready)
        _, _, i_ready, valid, payload = await ctx.tick().sample(
            dut.i.ready, dut.o.valid, dut.o.payload)
        cycles += 1
        if codes and i_ready:
            codes.pop(0)
        if valid and ready:
            if payload.last:
                break
            events.append((int(payload.addr), int(payload.t)))
    ctx.set(dut.o.ready, 0)
    await ctx.tick()
    return InferenceResult(
        events=events,
        tile_counters={n: read_counters(ctx, dut, cfg.tile_counters, f"cnt_{{}}_n{n}")
                       for n in nodes},
        encoder=read_counters(ctx, dut, cfg.encoder_counters, "cnt_enc_{}"),
        flits=ctx.get(dut.cnt_flits),
        hops=ctx.get(dut.cnt_hops),
        cycles=cycles,
    )


def simulate_system(system_map, inputs, *, o_ready: float = 1.0, seed: int = 0,
                    max_cycles: int = 200_000, reset_after: int | None = None,
                    vcd: str | None = None) -> list[InferenceResult]:
    """Program a :class:`System` with ``system_map`` and run ``inputs`` in the Amaranth simulator.

    Parameters
    ----------
    system_map : rtl_gen.mapper.SystemMap
    inputs : sequence of code vectors
        Layer-0 input codes of each inference (padded to ``n_in`` with silent codes here).
    o_ready : float
        Probability that ``o.ready`` is high on a clock (random backpressure).
    max_cycles : int
        Clocks allowed per inference before the run is declared hung.
    reset_after : int, optional
        Before the inferences, start one with the first input and assert ``rst`` for one clock
        ``reset_after`` clocks into it, then reload the configuration.
    vcd : str, optional
        Write a waveform file.
    """
    from amaranth.hdl import ClockDomain

    check_probability("o_ready", o_ready)
    cfg = system_map.config
    dut = System(cfg)
    top = Module()
    top.domains.sync = domain = ClockDomain("sync")
    top.submodules.system = dut
    rng = random.Random(seed)
    vectors = [system_map.pad_input(q).tolist() for q in inputs]
    results: list[InferenceResult] = []
    nodes = [t.node for t in system_map.tiles]
    beats = system_map.load_beats()

    async def bench(ctx):
        await load_system(ctx, dut, beats)
        if reset_after is not None and vectors:
            await run_inference(ctx, dut, vectors[0], rng=rng, stop_after=reset_after)
            ctx.set(domain.rst, 1)
            await ctx.tick()
            ctx.set(domain.rst, 0)
            if ctx.get(dut.busy):
                raise RuntimeError("the system is still busy after a reset")
            await load_system(ctx, dut, beats)
        for codes in vectors:
            results.append(await run_inference(ctx, dut, codes, nodes=nodes, rng=rng,
                                               o_ready=o_ready, max_cycles=max_cycles))

    run_simulator(top, bench, vcd=vcd)
    return results
