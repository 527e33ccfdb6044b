"""Proof harnesses of the stream rule on the dense INT4 tile (``rtl_gen.dense.DenseTile``) and
on the system's flit injector (``rtl_gen.system_parts.Injector``).

- dense tile: ``o`` (code beats, then the marker) holds ``valid`` and its payload until
  ``ready``, with any ``load`` and ``i`` traffic and any backpressure;
- injector: ``o`` (one flit per destination of the node's range) holds ``valid`` and its
  payload until ``ready``, for any event stream on ``i`` that obeys the stream rule and a
  destination range (``route``, ``n_dst``) that holds still, as the system's configuration
  registers do while it runs.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Signal

from formal.harness import Harness, block_module, drive_input, drive_ready, stream_rule
from formal.tile import TileStream
from rtl_gen.params import RTLConfig

__all__ = ["DenseTileStream", "InjectorStream"]


class DenseTileStream(TileStream):
    """The stream rule on the dense tile's output: the tile's harness around ``DenseTile``
    (the same ``load``, ``i`` and ``o`` streams)."""

    def __init__(self, config: RTLConfig, module=None):
        Harness.__init__(self)
        self.config = config
        self.module = block_module(module, "rtl_gen.dense", "DenseTile")
        self.dut = self.module.DenseTile(config)


class InjectorStream(Harness):
    """The stream rule on the injector's flits, for a destination range that holds still."""

    def __init__(self, config: RTLConfig, module=None):
        super().__init__()
        if module is None:
            from rtl_gen import system_parts as module
        self.config = config
        self.dut = module.Injector(config)

    def check(self, m):
        m.submodules.dut = dut = self.dut
        drive_input(self, m, dut.i, "i")
        drive_ready(self, m, dut.o, "o")
        route = self.free(len(dut.route.as_value()), "route")
        n_dst = self.free(len(dut.n_dst), "n_dst")
        m.d.comb += [dut.route.as_value().eq(route), dut.n_dst.eq(n_dst)]
        # the configuration registers hold still while the system runs
        past = Signal(name="cfg_past")
        prev_route = Signal(len(route), name="cfg_prev_route")
        prev_n = Signal(len(n_dst), name="cfg_prev_n_dst")
        m.d.sync += [past.eq(1), prev_route.eq(route), prev_n.eq(n_dst)]
        with m.If(past):
            m.d.comb += Assume((route == prev_route) & (n_dst == prev_n))
        stream_rule(m, dut.o, Assert, "o")
