"""Adapters that shape a generated unit for the fast harness (:mod:`regression.fast_rtl`): the
harness plays one ``load`` and one ``i`` stream and checks one ``o`` stream with a window
marker; a unit with other streams is wrapped here, and the wrapper's Verilog is the module the
harness instantiates (:func:`regression.block_fast.run_block_fast`). The harness's own sources
(whose digest keys every harness build) do not change with them."""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["PairedNorm"]


class PairedNorm(wiring.Component):
    """The add+LayerNorm unit (:class:`rtl_gen.add_norm.AddNorm`) shaped for the harness: its
    two row inputs as one stream of pairs, its output with a row marker.

    The harness plays one input stream (``i``) beside ``load``; the unit takes a channel's
    residual ``r`` and its sum ``v`` on two streams, in the same clock (it is ready on both
    only when both are valid). ``i`` carries the pair ``{r, v}``, offered on both of the
    unit's streams at once and taken when both take it. ``o`` is the unit's output
    ``{r, q}`` and a ``last`` field set on the row's last channel (the harness's window
    marker: a window is a row). Only the first ``codes`` positions of ``q`` are carried, the
    others zero: a position without a walk table loaded walks to the terminal code, which
    nothing reads (a block's units walk fewer tables than positions; a network's last unit
    none).

    Parameters
    ----------
    config : rtl_gen.params.RTLConfig
        The unit's configuration (:func:`regression.units.minilm_config`).
    codes : int
        The code positions ``o`` carries, ``0..NORM_CODES``.

    Members
    -------
    load : In(stream.Signature(norm_load_layout(config)))
    i : In(stream.Signature({r, v}))
    o : Out(stream.Signature({r, q, last}))
    busy : Out(1)
    """

    def __init__(self, config, codes: int):
        from amaranth.lib import data

        from rtl_gen.layouts import (
            norm_load_layout,
            norm_out_layout,
            residual_layout,
            residual_sum_layout,
        )

        self._config, self._codes = config, codes
        pair = data.StructLayout({"r": residual_layout(config)["r"].shape,
                                  "v": residual_sum_layout(config)["v"].shape})
        out = data.StructLayout({**{name: f.shape for name, f in norm_out_layout(config)},
                                 "last": 1})
        super().__init__({"load": In(stream.Signature(norm_load_layout(config))),
                          "i": In(stream.Signature(pair)), "o": Out(stream.Signature(out)),
                          "busy": Out(1)})

    def elaborate(self, platform):
        from rtl_gen.add_norm import AddNorm

        m = Module()
        m.submodules.unit = unit = AddNorm(self._config)
        wiring.connect(m, wiring.flipped(self.load), unit.load)
        m.d.comb += [
            unit.r.valid.eq(self.i.valid), unit.v.valid.eq(self.i.valid),
            unit.r.payload.r.eq(self.i.payload.r), unit.v.payload.v.eq(self.i.payload.v),
            self.i.ready.eq(unit.r.ready & unit.v.ready),
            self.o.valid.eq(unit.o.valid), unit.o.ready.eq(self.o.ready),
            self.o.payload.r.eq(unit.o.payload.r),
            self.busy.eq(unit.busy),
        ]
        m.d.comb += [self.o.payload.q[p].eq(unit.o.payload.q[p]) for p in range(self._codes)]
        channel = Signal(range(self._config.hidden), name="channel")
        last = channel == self._config.hidden - 1
        m.d.comb += self.o.payload.last.eq(last)
        with m.If(self.o.valid & self.o.ready):
            m.d.sync += channel.eq(Mux(last, 0, channel + 1))
        return m
