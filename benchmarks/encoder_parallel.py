"""The encoder as it was before the link-SRAM design, kept only to measure it against.

:class:`ParallelEncoder` holds one time register and one keep flag per address and picks the
lowest matching address of each step with an ``n_in``-wide priority encoder: the same ports and
the same clocks per window as :class:`rtl_gen.encoder.Encoder`, but its Verilog grows with
``n_in`` (hundreds of MB at ``n_in = 3072``). ``benchmarks/bench_rtl.py --sizes`` elaborates
both. Not part of the toolkit.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Module, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from rtl_gen.layouts import code_layout, in_event_layout
from rtl_gen.mask import transmitted
from rtl_gen.params import ConfigComponent, RTLConfig, counter_ports

__all__ = ["ParallelEncoder"]


class ParallelEncoder(ConfigComponent):
    """The per-address encoder (``n_in`` time registers, an ``n_in``-wide priority encoder).

    Parameters
    ----------
    config : RTLConfig
        Uses ``T``, ``family`` (``c``), ``i_max_in`` and ``k`` (the mask, fixed at elaboration)
        and ``n_in`` (vector length).

    Members
    -------
    i : In(stream.Signature(code_layout(config)))
        Codes in address order, ``n_in`` per vector.
    o : Out(stream.Signature(in_event_layout(config)))
        Events ``(addr, tau)`` in time order, then a ``last`` marker beat.
    busy : Out(1)
        A vector is being collected or emitted.
    cnt_events_out, cnt_events_suppressed : Out(bits of n_in)
        Of the last vector.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`RTLConfig`.
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        return {
            "i": In(stream.Signature(code_layout(config))),
            "o": Out(stream.Signature(in_event_layout(config))),
            "busy": Out(1),
            **counter_ports(config.encoder_counters),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        n, T, tw = cfg.n_in, cfg.T, cfg.time_width
        taus = Array(Signal(tw, name=f"tau{a}") for a in range(n))
        keep = Signal(n)
        addr = Signal(range(max(n, 2)))
        t = Signal(tw)
        cnt_out, cnt_sup = self.cnt_events_out, self.cnt_events_suppressed

        # events of step t, lowest address first
        match = Signal(n)
        m.d.comb += match.eq(keep & Cat(*[taus[a] == t for a in range(n)]))
        lowest = Signal(range(max(n, 2)))
        for a in reversed(range(n)):
            with m.If(match[a]):
                m.d.comb += lowest.eq(a)
        only_one = (match & (match - 1)) == 0

        with m.FSM(name="phase"):
            with m.State("COLLECT"):
                m.d.comb += [
                    self.i.ready.eq(1),
                    self.busy.eq(addr != 0),
                ]
                with m.If(self.i.valid):
                    tau = Signal(tw)
                    m.d.comb += tau.eq(cfg.c - self.i.payload.q)
                    kept = transmitted(tau, cfg.i_max_in, cfg.k)
                    m.d.sync += [
                        taus[addr].eq(tau),
                        keep.bit_select(addr, 1).eq(kept),
                        addr.eq(addr + 1),
                    ]
                    with m.If(addr == 0):
                        m.d.sync += [cnt_out.eq(kept), cnt_sup.eq(~kept)]
                    with m.Else():
                        m.d.sync += [cnt_out.eq(cnt_out + kept), cnt_sup.eq(cnt_sup + ~kept)]
                    with m.If(addr == n - 1):
                        m.d.sync += [addr.eq(0), t.eq(0)]
                        m.next = "EMIT"

            with m.State("EMIT"):
                m.d.comb += [
                    self.busy.eq(1),
                    self.o.valid.eq(match != 0),
                    self.o.payload.addr.eq(lowest),
                    self.o.payload.tau.eq(t),
                ]
                # a step ends with its last event (or at once when it has none)
                step_done = Signal()
                m.d.comb += step_done.eq((match == 0) | (self.o.ready & only_one))
                with m.If(self.o.valid & self.o.ready):
                    m.d.sync += keep.bit_select(lowest, 1).eq(0)
                with m.If(step_done):
                    m.d.sync += t.eq(t + 1)
                    with m.If(t == T - 1):
                        m.next = "END"

            with m.State("END"):
                m.d.comb += [
                    self.busy.eq(1),
                    self.o.valid.eq(1),
                    self.o.payload.last.eq(1),
                ]
                with m.If(self.o.ready):
                    m.next = "COLLECT"
        return m
