"""Proof harnesses of the encoder (``rtl_gen.encoder.Encoder``).

- stream rule: ``o`` holds ``valid`` and its payload until ``ready``;
- events: for any watched address ``A`` (a free constant), the event of ``A`` leaves iff
  ``|tau_A - I_max| > k`` with ``tau_A = c - q_A``, at most once per window, with that time;
  no event leaves before the vector is complete; events leave in strictly increasing
  ``(tau, addr)`` order (time order, ascending address within a step); the marker closes a
  window only after every kept address left.

The reference (``tau`` of each code, the mask) is tabulated from the golden model
(``golden_models.mask.transmitted``, ``golden_models.codespace``), not from the RTL's own
expressions.
"""

from __future__ import annotations

from amaranth.hdl import Array, Assert, Assume, Const, Signal

from formal.harness import Harness, drive_input, drive_ready, stream_rule
from golden_models.mask import transmitted
from rtl_gen.params import RTLConfig

__all__ = ["EncoderEvents", "EncoderStream"]


def _encoder_class(module):
    if module is None:
        from rtl_gen import encoder as module
    return module.Encoder


class EncoderStream(Harness):
    """The stream rule on the encoder's output, any input and any backpressure."""

    #: the link SRAM and the head/tail register files are checked as registers (formal.sby)
    map_memories = True

    def __init__(self, config: RTLConfig, module=None):
        super().__init__()
        self.config = config
        self.dut = _encoder_class(module)(config)

    def check(self, m):
        m.submodules.dut = dut = self.dut
        drive_input(self, m, dut.i, "i")
        drive_ready(self, m, dut.o, "o")
        stream_rule(m, dut.o, Assert, "o")


class EncoderEvents(EncoderStream):
    """Which events leave, once each, in time order (see the module docstring)."""

    def check(self, m):
        super().check(m)
        cfg, dut = self.config, self.dut
        n, T, tw = cfg.n_in, cfg.T, cfg.time_width
        space = cfg.space
        # reference tables indexed by the raw code bits: tau = c - q, and the mask
        tau_of = []
        for raw in range(T):
            q = raw - T if (space.family == "sym" and raw >= T // 2) else raw
            tau_of.append(cfg.c - q)
        assert sorted(tau_of) == list(range(T))
        kept_of = [transmitted(tau, cfg.i_max_in, cfg.k) for tau in range(T)]

        watch = self.free(range(n), "watch")
        watch_reg = Signal(range(n), name="watch_reg")
        started = Signal(name="started")
        m.d.sync += [started.eq(1), watch_reg.eq(watch)]
        m.d.comb += Assume(watch < n)
        with m.If(started):
            m.d.comb += Assume(watch == watch_reg)

        count = Signal(range(n + 1), name="in_count")
        complete = Signal(name="complete")
        w_tau = Signal(tw, name="w_tau")
        w_keep = Signal(name="w_keep")
        w_sent = Signal(name="w_sent")
        have_prev = Signal(name="have_prev")
        prev_tau = Signal(tw, name="prev_tau")
        prev_addr = Signal(range(max(n, 2)), name="prev_addr")

        raw = dut.i.payload.as_value()[:tw]
        with m.If(dut.i.valid & dut.i.ready):
            m.d.comb += Assert(~complete, "encoder: takes no code while a vector is pending")
            with m.If(count == watch):
                tau = Array(Const(t, tw) for t in tau_of)[raw]
                m.d.sync += [w_tau.eq(tau), w_keep.eq(Array(Const(k, 1) for k in kept_of)[tau])]
            with m.If(count == n - 1):
                m.d.sync += [count.eq(0), complete.eq(1)]
            with m.Else():
                m.d.sync += count.eq(count + 1)

        o = dut.o.payload
        with m.If(dut.o.valid & dut.o.ready):
            m.d.comb += Assert(complete, "encoder: output only after the whole vector")
            with m.If(o.last):
                m.d.comb += Assert(~w_keep | w_sent, "encoder: a kept address never left")
                m.d.sync += [complete.eq(0), w_sent.eq(0), have_prev.eq(0)]
            with m.Else():
                m.d.comb += Assert(o.addr < n, "encoder: address in range")
                with m.If(have_prev):
                    m.d.comb += Assert(
                        (o.tau > prev_tau) | ((o.tau == prev_tau) & (o.addr > prev_addr)),
                        "encoder: events in (time, address) order")
                m.d.sync += [have_prev.eq(1), prev_tau.eq(o.tau), prev_addr.eq(o.addr)]
                with m.If(o.addr == watch):
                    m.d.comb += [
                        Assert(w_keep, "encoder: a masked address left"),
                        Assert(o.tau == w_tau, "encoder: event time is c - q"),
                        Assert(~w_sent, "encoder: an address left twice"),
                    ]
                    m.d.sync += w_sent.eq(1)
