"""Hardware of the router soak: traffic sources, random-ready sinks and checkers around a mesh.

:class:`SoakHarness` wraps a :class:`rtl_gen.router.Mesh` (or a mesh built by another factory,
for mutants) so a long run needs nothing from the test bench but a start pulse and a read-out at
the end; traffic and checking run inside the simulation at the simulator's full speed.

- **Sources** (one per node). A 32-bit xorshift generator (Marsaglia's ``13, 17, 5``), seeded
  from ``seed`` and the node, is stepped once per *decision*: when the source holds no flit, or
  its flit is taken this clock, and it has not yet sent ``flits``. The new state ``r`` decides:
  ``r[0:8] < p_valid`` makes a flit (else the clock is a gap); its destination is ``hot`` if
  ``r[8:16] < p_hot``, else ``(r[16:32] * P) >> 16`` (uniform over the ``P`` nodes, itself
  included). The flit carries the source node in ``t`` and the pair's sequence number
  ``seq[src][dst] mod 2**seq_width`` in ``addr``, ``hops = 0``. A flit is held (valid, payload
  stable) until taken. The decisions depend only on the generator, never on backpressure, so
  the flits each source sends, in order, are a function of ``(seed, node, p_valid, p_hot,
  hot, flits)``: :func:`regression.soak.expected_traffic` computes them.
- **Sinks** (one per node) take a flit when their own generator says ``r[0:8] < p_ready``
  (stepped every clock from the start). Each flit taken is checked: destination equals the
  node (``err_dst``), ``hops`` equals the Manhattan distance from the source (``err_hops``),
  ``addr`` equals the next expected sequence number of its ``(src, dst)`` pair
  (``err_order``; the expectation then advances by one, so after a loss or a duplicate every
  later flit of that pair counts). A valid beat that was not taken must come back unchanged on
  the next clock (``err_stream``, the stream rule at every ejection port).
- **End.** ``done`` rises when every source has sent its flits and the sinks have taken as
  many flits as the sources sent (``stalled`` instead when nothing moved for 256 clocks after
  the sources finished: a flit was lost or is stuck; ``timed_out`` after ``limit`` clocks).
  ``busy_at_done`` is the mesh's ``busy`` at that clock. The sinks keep taking and checking
  afterwards, so a late (duplicated) flit still counts.
- **Read-out.** ``rd_sel`` picks pair ``src * P + dst``: ``rd_pair_sent`` is the source's
  sequence counter of that pair, ``rd_pair_recv`` the sink's (flits sent and taken, both mod
  ``2**seq_width``); ``rd_node_sent`` / ``rd_node_recv`` are the 32-bit totals of node
  ``rd_sel mod P``. Exactly once = every pair in order and ``sent == recv`` for every pair.
- **Fault stage** (to show the checkers work, on the ejection port of node ``hot``):
  ``fault`` 0 passes flits through; the ``fault_at``-th flit (from 0) at that port is dropped
  (1), delivered twice (2), held back behind the next flit of the same source (3, a reorder
  within a pair), or delivered with ``dst_x`` bit 0 flipped (4).
"""

from __future__ import annotations

from amaranth.hdl import Array, Const, Module, Mux, Signal, Value
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from rtl_gen.layouts import check_mesh, flit_layout
from rtl_gen.params import check_int, index_width
from rtl_gen.router import Mesh

__all__ = ["FAULTS", "SoakHarness", "node_keys", "run_end", "seeded_state", "stream_rule_error",
           "xorshift32", "xorshift_rtl"]

#: Values of the ``fault`` input.
FAULTS = {"none": 0, "drop": 1, "duplicate": 2, "reorder": 3, "misroute": 4}
#: Width of the totals (flits, clocks, errors).
COUNT = 32
#: Clocks without a flit moving after the sources finished that end a run as ``stalled``.
STALL = 256
_MASK = 0xFFFFFFFF


def xorshift32(s: int) -> int:
    """One step of Marsaglia's 32-bit xorshift (13, 17, 5), as the hardware computes it."""
    s ^= (s << 13) & _MASK
    s ^= s >> 17
    s ^= (s << 5) & _MASK
    return s


def xorshift_rtl(s):
    """:func:`xorshift32` of a 32-bit value, as logic."""
    a = s ^ (s << 13)[:32]
    b = a ^ (a >> 17)
    return b ^ (b << 5)[:32]


def node_keys(nodes: int) -> tuple[list[int], list[int]]:
    """Per-node seed keys ``(source, sink)``: the generator starts at ``seed ^ key`` (1 if 0)."""
    keys = [(0x9E3779B9 * (i + 1)) & _MASK for i in range(2 * nodes)]
    return keys[:nodes], keys[nodes:]


def seeded_state(seed, key):
    """The generator's start state ``seed ^ key`` (1 if 0), as logic."""
    s = seed ^ Const(key, 32)
    return Mux(s == 0, 1, s)


class _Source(wiring.Component):
    def __init__(self, layout, node, nodes, cols, seq_width):
        self._layout, self._node, self._nodes = layout, node, nodes
        self._cols, self._seq_width = cols, seq_width
        super().__init__({
            "o": Out(stream.Signature(layout)),
            "start": In(1), "key": In(32), "flits": In(COUNT),
            "p_valid": In(9), "p_hot": In(9), "hot": In(index_width(nodes)),
            "sent": Out(COUNT), "finished": Out(1),
            "seq": Out(seq_width).array(nodes),
        })

    def elaborate(self, platform):
        m = Module()
        P, cols = self._nodes, self._cols
        state = Signal(32)
        running = Signal()
        seqs = Array(self.seq)
        r = Signal(32)
        m.d.comb += r.eq(xorshift_rtl(state))
        take = self.o.valid & self.o.ready
        step = running & (self.sent != self.flits) & (~self.o.valid | take)
        dst = Signal(index_width(P))
        m.d.comb += dst.eq(Mux(r[8:16] < self.p_hot, self.hot, (r[16:32] * P)[16:]))
        xs = Array(Const(n % cols, self._layout["dst_x"].shape) for n in range(P))
        ys = Array(Const(n // cols, self._layout["dst_y"].shape) for n in range(P))
        m.d.comb += self.finished.eq(running & (self.sent == self.flits) & ~self.o.valid)
        with m.If(self.start):
            m.d.sync += [state.eq(self.key), running.eq(1)]
        with m.If(take):
            m.d.sync += self.o.valid.eq(0)
        with m.If(step):
            m.d.sync += state.eq(r)
            with m.If(r[0:8] < self.p_valid):
                p = self.o.payload
                m.d.sync += [
                    self.o.valid.eq(1),
                    p.dst_x.eq(xs[dst]), p.dst_y.eq(ys[dst]),
                    p.addr.eq(seqs[dst]), p.t.eq(self._node), p.hops.eq(0),
                    seqs[dst].eq(seqs[dst] + 1),
                    self.sent.eq(self.sent + 1),
                ]
        return m


class _Fault(wiring.Component):
    """Between the ejection port of node ``hot`` and its sink: see :data:`FAULTS`."""

    def __init__(self, layout):
        super().__init__({
            "i": In(stream.Signature(layout)), "o": Out(stream.Signature(layout)),
            "fault": In(3), "at": In(COUNT),
        })

    def elaborate(self, platform):
        m = Module()
        i, o = self.i, self.o
        k = Signal(COUNT)  # flits taken from i so far
        hit = Signal()
        dup_done = Signal()
        held = Signal.like(i.payload)
        holding = Signal()  # 1: a flit is held back, the next of its source not yet passed
        emit = Signal()  # 1: show the held flit
        m.d.comb += [o.valid.eq(i.valid), o.payload.eq(i.payload), i.ready.eq(o.ready),
                     hit.eq(k == self.at)]
        with m.If(i.valid & i.ready):
            m.d.sync += k.eq(k + 1)
        with m.Switch(self.fault):
            with m.Case(FAULTS["drop"]):
                with m.If(hit):
                    m.d.comb += [o.valid.eq(0), i.ready.eq(1)]
            with m.Case(FAULTS["duplicate"]):
                with m.If(hit & ~dup_done):
                    m.d.comb += i.ready.eq(0)
                    with m.If(o.valid & o.ready):
                        m.d.sync += dup_done.eq(1)
            with m.Case(FAULTS["reorder"]):
                with m.If(emit):
                    m.d.comb += [o.valid.eq(1), o.payload.eq(held), i.ready.eq(0)]
                    with m.If(o.ready):
                        m.d.sync += emit.eq(0)
                with m.Elif(hit & ~holding):
                    m.d.comb += [o.valid.eq(0), i.ready.eq(1)]
                    with m.If(i.valid):
                        m.d.sync += [held.eq(i.payload), holding.eq(1)]
                with m.Elif(holding & i.valid & o.ready & (i.payload.t == held.t)):
                    m.d.sync += [holding.eq(0), emit.eq(1)]
            with m.Case(FAULTS["misroute"]):
                with m.If(hit):
                    m.d.comb += o.payload.dst_x.eq(i.payload.dst_x ^ 1)
        return m


class _Sink(wiring.Component):
    def __init__(self, layout, x, y, nodes, cols, seq_width):
        self._layout, self._x, self._y = layout, x, y
        self._nodes, self._cols, self._seq_width = nodes, cols, seq_width
        super().__init__({
            "i": In(stream.Signature(layout)),
            "start": In(1), "key": In(32), "p_ready": In(9),
            "recv": Out(COUNT), "take": Out(1),
            "err_dst": Out(1), "err_hops": Out(1), "err_order": Out(1), "err_stream": Out(1),
            "exp": Out(seq_width).array(nodes),
        })

    def elaborate(self, platform):
        m = Module()
        P, cols = self._nodes, self._cols
        state = Signal(32)
        running = Signal()
        r = Signal(32)
        m.d.comb += r.eq(xorshift_rtl(state))
        with m.If(self.start):
            m.d.sync += [state.eq(self.key), running.eq(1)]
        with m.Elif(running):
            m.d.sync += state.eq(r)
        m.d.comb += self.i.ready.eq(running & (state[0:8] < self.p_ready))
        f = self.i.payload
        exps = Array(self.exp)
        dist = Array(Const(abs(n % cols - self._x) + abs(n // cols - self._y),
                           self._layout["hops"].shape) for n in range(P))
        src = f.t
        m.d.comb += self.take.eq(self.i.valid & self.i.ready)
        with m.If(self.take):
            m.d.comb += [
                self.err_dst.eq((f.dst_x != self._x) | (f.dst_y != self._y)),
                self.err_hops.eq(f.hops != dist[src]),
                self.err_order.eq(f.addr != exps[src]),
            ]
            m.d.sync += [exps[src].eq(exps[src] + 1), self.recv.eq(self.recv + 1)]
        m.d.comb += self.err_stream.eq(stream_rule_error(m, self.i))
        return m


def run_end(m, h, *, start, running, limit, moved, complete, stall: int) -> Signal:
    """End of a self-checking run (the soak's and the fast harness's). While ``running`` (and
    not at ``start``), ``h.cycles`` counts clocks; the signal returned is high in the clock the
    run ends: when ``complete``, after ``stall`` clocks without ``moved`` (``h.stalled`` set)
    or at the ``limit``-th clock (``h.timed_out`` set)."""
    idle = Signal(range(stall + 1))
    end = Signal()
    with m.If(start):
        m.d.sync += idle.eq(0)
    with m.Elif(running):
        m.d.sync += [h.cycles.eq(h.cycles + 1), idle.eq(Mux(moved, 0, idle + 1))]
        with m.If(complete):
            m.d.comb += end.eq(1)
        with m.If(idle == stall):
            m.d.comb += end.eq(1)
            m.d.sync += h.stalled.eq(1)
        with m.If(h.cycles + 1 == limit):
            m.d.comb += end.eq(1)
            m.d.sync += h.timed_out.eq(1)
    return end


def stream_rule_error(m, s):
    """High in a clock where stream ``s`` breaks the stream rule: a beat offered and not taken
    in the clock before is not offered again unchanged."""
    waiting = Signal()
    last = Signal.like(s.payload)
    m.d.sync += [waiting.eq(s.valid & ~s.ready), last.eq(s.payload)]
    changed = Value.cast(s.payload) != Value.cast(last)
    return waiting & (~s.valid | changed)


class SoakHarness(wiring.Component):
    """Sources, sinks and checkers around a ``rows x cols`` mesh (module docstring).

    Parameters
    ----------
    rows, cols : int
        Mesh size, 1..16 each (MAX_MESH).
    seq_width : int
        Bits of the sequence number (the flit's ``addr`` field), 1..32.
    mesh : callable, optional
        ``mesh(rows, cols, addr_width=, time_width=)`` returning a component with
        :class:`rtl_gen.router.Mesh`'s members; default :class:`rtl_gen.router.Mesh`.

    The flit's ``t`` field carries the source node (``index_width(rows * cols)`` bits).
    """

    def __init__(self, rows: int = 4, cols: int = 4, *, seq_width: int = 16, mesh=None):
        rows, cols = check_mesh(rows, cols)
        check_int("seq_width", seq_width, 1, 32, must_be="must be")
        P = rows * cols
        self._rows, self._cols, self._seq_width = rows, cols, seq_width
        self.mesh = (mesh or Mesh)(rows, cols, addr_width=seq_width, time_width=index_width(P))
        self.layout = flit_layout(rows, cols, seq_width, index_width(P))
        nw, sel = index_width(P), index_width(P * P)
        super().__init__({
            "start": In(1), "seed": In(32), "flits": In(COUNT),
            "p_valid": In(9), "p_ready": In(9), "p_hot": In(9), "hot": In(nw),
            "limit": In(COUNT), "fault": In(3), "fault_at": In(COUNT),
            "done": Out(1), "stalled": Out(1), "timed_out": Out(1),
            "busy": Out(1), "busy_at_done": Out(1),
            "cycles": Out(COUNT), "sent": Out(COUNT), "recv": Out(COUNT),
            "err_dst": Out(COUNT), "err_hops": Out(COUNT), "err_order": Out(COUNT),
            "err_stream": Out(COUNT),
            "rd_sel": In(sel), "rd_pair_sent": Out(seq_width), "rd_pair_recv": Out(seq_width),
            "rd_node_sent": Out(COUNT), "rd_node_recv": Out(COUNT),
        })
        self.sources = [_Source(self.layout, n, P, cols, seq_width) for n in range(P)]
        self.sinks = [_Sink(self.layout, n % cols, n // cols, P, cols, seq_width)
                      for n in range(P)]
        self.fault_stage = _Fault(self.layout)

    def elaborate(self, platform):
        m = Module()
        rows, cols = self._rows, self._cols
        P = rows * cols
        m.submodules.mesh = mesh = self.mesh
        m.submodules.fault = fault = self.fault_stage
        src_keys, sink_keys = node_keys(P)
        running = Signal()
        for n in range(P):
            x, y = n % cols, n // cols
            m.submodules[f"source_{n}"] = s = self.sources[n]
            m.submodules[f"sink_{n}"] = k = self.sinks[n]
            m.d.comb += [s.start.eq(self.start), s.key.eq(seeded_state(self.seed, src_keys[n])),
                         s.flits.eq(self.flits), s.p_valid.eq(self.p_valid),
                         s.p_hot.eq(self.p_hot), s.hot.eq(self.hot),
                         k.start.eq(self.start), k.key.eq(seeded_state(self.seed, sink_keys[n])),
                         k.p_ready.eq(self.p_ready)]
            wiring.connect(m, s.o, mesh.i[y][x])
        # ejection: node `hot` through the fault stage, the others straight to their sinks
        m.d.comb += [fault.fault.eq(self.fault), fault.at.eq(self.fault_at)]
        hot = self.hot
        fi, fo = fault.i, fault.o
        for n in range(P):
            x, y = n % cols, n // cols
            ej, k = mesh.o[y][x], self.sinks[n]
            with m.If(hot == n):
                m.d.comb += [fi.valid.eq(ej.valid), fi.payload.eq(ej.payload),
                             ej.ready.eq(fi.ready),
                             k.i.valid.eq(fo.valid), k.i.payload.eq(fo.payload),
                             fo.ready.eq(k.i.ready)]
            with m.Else():
                m.d.comb += [k.i.valid.eq(ej.valid), k.i.payload.eq(ej.payload),
                             ej.ready.eq(k.i.ready)]

        def total(bits):
            return sum((b for b in bits), Const(0, COUNT))[:COUNT]

        sinks, sources = self.sinks, self.sources
        m.d.comb += [self.sent.eq(total(s.sent for s in sources)), self.busy.eq(mesh.busy)]
        m.d.sync += [
            self.recv.eq(self.recv + total(k.take for k in sinks)),
            self.err_dst.eq(self.err_dst + total(k.err_dst for k in sinks)),
            self.err_hops.eq(self.err_hops + total(k.err_hops for k in sinks)),
            self.err_order.eq(self.err_order + total(k.err_order for k in sinks)),
            self.err_stream.eq(self.err_stream + total(k.err_stream for k in sinks)),
        ]
        finished = Signal()
        m.d.comb += finished.eq(running & (sum((s.finished for s in sources), Const(0, 8)) == P))
        moved = Signal()
        m.d.comb += moved.eq(sum((k.take for k in sinks), Const(0, 8)) != 0)
        with m.If(self.start):
            m.d.sync += running.eq(1)
        end = run_end(m, self, start=self.start, running=running, limit=self.limit,
                      moved=moved | ~finished, complete=finished & (self.recv == self.sent),
                      stall=STALL)
        with m.If(end):
            m.d.sync += [running.eq(0), self.done.eq(1), self.busy_at_done.eq(mesh.busy)]
        # read-out
        sel = self.rd_sel
        sent = Array(s.seq[d] for s in sources for d in range(P))
        recv = Array(sinks[d].exp[s] for s in range(P) for d in range(P))
        node = sel[: index_width(P)] if P & (P - 1) == 0 else sel % P
        m.d.comb += [
            self.rd_pair_sent.eq(sent[sel]),
            self.rd_pair_recv.eq(recv[sel]),
            self.rd_node_sent.eq(Array(s.sent for s in sources)[node]),
            self.rd_node_recv.eq(Array(k.recv for k in sinks)[node]),
        ]
        return m
