"""The M-TTFS encoder: a vector of dense codes in, the masked event stream out.

Hardware form of :func:`golden_models.encode_events` (docs/rtl_encoder.md). Codes arrive one per
clock in address order; each becomes the event time ``tau = c - q`` and is kept iff
``|tau - I_max| > k`` (the dead zone is dropped at the door). A kept address is appended to the
linked list of its time step: the list heads and tails are two ``T``-word register files, the
links live in a single-port SRAM of ``n_in`` words of ``log2 n_in`` bits
(:class:`rtl_gen.sram.SRAM`, the project's SRAM interface, so ``sram_macro`` swaps in the
macro). Addresses arrive in ascending order, so every list ascends. Once the vector is complete
the encoder walks ``t = 0..T-1`` and follows list ``t`` from its head, one event per clock, so
the stream comes out in time order, lowest address first within a step, without sorting.

The logic does not grow with ``n_in`` (only the SRAM depth and the address width do): the
Verilog is a few kB at any documented size, and a window costs the same clocks as the earlier
per-address design (``n_in`` to collect, ``T + events - steps with events + 1`` to emit).
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from rtl_gen.layouts import code_layout, in_event_layout
from rtl_gen.mask import transmitted
from rtl_gen.params import ConfigComponent, RTLConfig, counter_ports
from rtl_gen.sram import SRAM

__all__ = [
    "Encoder",
    "emit_clocks",
]


def emit_clocks(T: int, times: list[int]) -> int:
    """Clocks from the last code's handshake to the marker's, at full output rate.

    ``times`` are the event times of the window: a step costs ``max(1, events in it)`` clocks,
    the marker one more: ``T + events - steps with events + 1``.
    """
    return T + len(times) - len(set(times)) + 1


class Encoder(ConfigComponent):
    """Dense codes -> masked event stream, for vectors of ``n_in`` codes.

    Parameters
    ----------
    config : RTLConfig
        Uses ``T``, ``family`` (``c``), ``i_max_in`` and ``k`` (the mask, fixed at elaboration),
        ``n_in`` (vector length, the depth of the link SRAM) and ``sram_macro``.

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
        n, T, tw, aw = cfg.n_in, cfg.T, cfg.time_width, cfg.in_addr_width
        # links: next[a] = the address after a in a's time step (written while collecting)
        m.submodules.links = links = SRAM(depth=n, width=aw, macro=cfg.sram_macro,
                                          counter_width=1)
        bus = wiring.flipped(links.bus)
        # heads and tails of the T lists: register files with combinational reads
        m.submodules.heads = heads = Memory(shape=aw, depth=T, init=[])
        m.submodules.tails = tails = Memory(shape=aw, depth=T, init=[])
        head_rd, head_wr = heads.read_port(domain="comb"), heads.write_port()
        tail_rd, tail_wr = tails.read_port(domain="comb"), tails.write_port()
        used = Signal(T)  # step t holds at least one event
        addr = Signal(aw)
        t = Signal(tw)
        first = Signal()  # the walk is at the head of step t (else at the link just read)
        cnt_out, cnt_sup = self.cnt_events_out, self.cnt_events_suppressed

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
                    m.d.comb += [
                        tail_rd.addr.eq(tau),
                        tail_wr.addr.eq(tau),
                        tail_wr.data.eq(addr),
                        head_wr.addr.eq(tau),
                        head_wr.data.eq(addr),
                    ]
                    with m.If(kept):
                        with m.If(used.bit_select(tau, 1)):
                            # append: link the step's tail to this address
                            m.d.comb += [bus.addr.eq(tail_rd.data), bus.wdata.eq(addr),
                                         bus.wen.eq(1)]
                        with m.Else():
                            m.d.comb += head_wr.en.eq(1)
                            m.d.sync += used.bit_select(tau, 1).eq(1)
                        m.d.comb += tail_wr.en.eq(1)
                    m.d.sync += addr.eq(addr + 1)
                    with m.If(addr == 0):
                        m.d.sync += [cnt_out.eq(kept), cnt_sup.eq(~kept)]
                    with m.Else():
                        m.d.sync += [cnt_out.eq(cnt_out + kept), cnt_sup.eq(cnt_sup + ~kept)]
                    with m.If(addr == n - 1):
                        m.d.sync += [addr.eq(0), t.eq(0), first.eq(1)]
                        m.next = "EMIT"

            with m.State("EMIT"):
                ptr = Signal(aw)
                m.d.comb += [
                    head_rd.addr.eq(t),
                    tail_rd.addr.eq(t),
                    ptr.eq(Mux(first, head_rd.data, bus.rdata)),
                ]
                m.d.comb += [
                    self.busy.eq(1),
                    self.o.valid.eq(used.bit_select(t, 1)),
                    self.o.payload.addr.eq(ptr),
                    self.o.payload.tau.eq(t),
                ]
                # a step ends with its tail (or at once when it has no event)
                step_done = Signal()
                m.d.comb += step_done.eq(~self.o.valid | (self.o.ready & (ptr == tail_rd.data)))
                with m.If(self.o.valid & self.o.ready):
                    # fetch the link of the address just sent; rdata holds until the next read
                    m.d.comb += [bus.addr.eq(ptr), bus.ren.eq(1)]
                    m.d.sync += first.eq(0)
                with m.If(step_done):
                    m.d.sync += [t.eq(t + 1), first.eq(1)]
                    with m.If(t == T - 1):
                        m.next = "END"

            with m.State("END"):
                m.d.comb += [
                    self.busy.eq(1),
                    self.o.valid.eq(1),
                    self.o.payload.last.eq(1),
                ]
                with m.If(self.o.ready):
                    m.d.sync += used.eq(0)
                    m.next = "COLLECT"
        return m


