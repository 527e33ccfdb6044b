"""Proof harnesses of the neuron tile (``rtl_gen.tile.NeuronTile``).

- stream rule: ``o`` holds ``valid`` and its payload until ``ready``, with any ``load`` and
  ``i`` traffic and any backpressure;
- outputs: per window at most one event per neuron, never at a time inside the dead zone of
  the current configuration (``|t - i_max_out| <= k``, tracked from the config beats the tile
  takes), addresses below ``N``, and strictly increasing ``(t, addr)``: times non-decreasing,
  addresses ascending within a step;
- membrane: with init rows within the packer's bound (``|B| <= init_bound``, assumed on every
  init beat) and each input address at most once per window (the encoder's promise, assumed),
  every membrane stays within ``acc_bound`` and never wraps (between two clocks a membrane
  changes by at most ``w_max * (T-1)``, unless the init row is being loaded).

The membranes are read at the ports of the tile's ``membranes`` sub-component
(``rtl_gen.tile_parts.Membranes``, found in the elaborated tile), so the shipped tile needs no
probe ports. A harness is built from ``rtl_gen.tile``, a mutant of it, or a mutant of
``rtl_gen.tile_parts`` (:func:`formal.harness.block_module`).
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Fragment, Mux, Signal, signed

from formal.harness import Harness, block_module, drive_input, drive_ready, stream_rule
from rtl_gen.layouts import TARGETS, init_row_layout, load_layout, tile_config_layout
from rtl_gen.params import RTLConfig

__all__ = ["TileMembrane", "TileOutputs", "TileStream"]


class TileStream(Harness):
    """The stream rule on the tile's output."""

    def __init__(self, config: RTLConfig, module=None):
        super().__init__()
        self.config = config
        self.module = block_module(module, "rtl_gen.tile", "NeuronTile")
        self.dut = self.module.NeuronTile(config)

    def check(self, m):
        m.submodules.dut = dut = self.dut
        drive_input(self, m, dut.load, "load")
        drive_input(self, m, dut.i, "i")
        drive_ready(self, m, dut.o, "o")
        stream_rule(m, dut.o, Assert, "o")


class TileOutputs(TileStream):
    """At most one event per neuron and window, none in the dead zone, in order."""

    def check(self, m):
        super().check(m)
        cfg, dut = self.config, self.dut
        N, tw = cfg.tile_neurons, cfg.time_width
        # the configuration the tile runs with: reset values, then every config beat taken
        i_max_out = Signal(tw, init=cfg.i_max_out, name="h_i_max_out")
        k = Signal(tw, init=cfg.k, name="h_k")
        ld = load_layout(cfg)(dut.load.payload.as_value())
        with m.If(dut.load.valid & dut.load.ready & (ld.target == TARGETS["config"])):
            word = tile_config_layout(cfg)(ld.data[:cfg.config_width])
            m.d.sync += [i_max_out.eq(word.i_max_out), k.eq(word.k)]

        sent = Signal(N, name="sent")
        have_prev = Signal(name="have_prev")
        prev_t = Signal(tw, name="prev_t")
        prev_addr = Signal(cfg.out_addr_width, name="prev_addr")
        o = dut.o.payload
        with m.If(dut.o.valid & dut.o.ready):
            with m.If(o.last):
                m.d.sync += [sent.eq(0), have_prev.eq(0)]
            with m.Else():
                m.d.comb += Assert(o.addr < N, "tile: address in range")
                m.d.comb += Assert(~sent.bit_select(o.addr, 1), "tile: a neuron fired twice")
                dist = Mux(o.t >= i_max_out, o.t - i_max_out, i_max_out - o.t)
                m.d.comb += Assert(dist > k, "tile: an event inside the dead zone left")
                with m.If(have_prev):
                    m.d.comb += Assert(
                        (o.t > prev_t) | ((o.t == prev_t) & (o.addr > prev_addr)),
                        "tile: events in (time, address) order")
                m.d.sync += [sent.bit_select(o.addr, 1).eq(1), have_prev.eq(1),
                             prev_t.eq(o.t), prev_addr.eq(o.addr)]


class TileMembrane(TileStream):
    """The membranes stay within the accumulator bound and never wrap."""

    def check(self, m):
        cfg = self.config
        # elaborate the tile now, to read the ports of its membranes
        fragment = Fragment.get(self.dut, None)
        found = [sub.origins[0] for sub, name, _ in fragment.subfragments if name == "membranes"]
        if len(found) != 1 or not hasattr(found[0], "v"):
            raise RuntimeError("tile harness: the tile has no `membranes` submodule with a `v` "
                               "port (rtl_gen.tile_parts.Membranes)")
        v = list(found[0].v)
        dut = self.dut
        m.submodules.dut = fragment
        drive_input(self, m, dut.load, "load")
        drive_input(self, m, dut.i, "i")
        drive_ready(self, m, dut.o, "o")

        # packer bounds on what is loaded: init lanes within init_bound
        ld = load_layout(cfg)(dut.load.payload.as_value())
        row = init_row_layout(cfg)(ld.data[:cfg.init_row_width])
        with m.If(dut.load.valid & (ld.target == TARGETS["init"])):
            for lane in range(cfg.lanes):
                b = row[lane]
                m.d.comb += Assume((b <= cfg.init_bound) & (b >= -cfg.init_bound))
        # each input address at most once per window (the encoder's stream)
        seen = Signal(cfg.n_in, name="seen")
        ev = dut.i.payload
        with m.If(dut.i.valid & dut.i.ready):
            with m.If(ev.last):
                m.d.sync += seen.eq(0)
            with m.Else():
                m.d.comb += Assume(ev.addr < cfg.n_in)
                m.d.comb += Assume(~seen.bit_select(ev.addr, 1))
                m.d.sync += seen.bit_select(ev.addr, 1).eq(1)

        bound, step = cfg.acc_bound, cfg.w_max * (cfg.T - 1)
        wide = signed(cfg.acc_width + 4)
        # clocks since busy rose: the init rows land in the first G+1 of them
        since = Signal(range(cfg.groups + 3), name="since_start")
        with m.If(~dut.busy):
            m.d.sync += since.eq(0)
        with m.Elif(since != cfg.groups + 2):
            m.d.sync += since.eq(since + 1)
        initialising = dut.busy & (since <= cfg.groups + 1)
        past = Signal(name="m_past")
        m.d.sync += past.eq(1)
        for j, vj in enumerate(v):
            m.d.comb += Assert((vj <= bound) & (vj >= -bound), f"tile: v{j} within acc_bound")
            prev = Signal(wide, name=f"v{j}_prev")
            m.d.sync += prev.eq(vj)
            delta = Signal(wide, name=f"v{j}_delta")
            m.d.comb += delta.eq(vj - prev)
            with m.If(past & ~initialising):
                m.d.comb += Assert((delta <= step) & (delta >= -step),
                                   f"tile: v{j} changed by more than w_max*(T-1)")
