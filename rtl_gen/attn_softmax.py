"""The softmax node of an attention head: raw scores in, ``attn_prob`` events out.

Two parts behind stream interfaces (docs/rtl_attention.md, "The softmax node"):

- :class:`SoftmaxUnit`: one row of raw scores (slot, score) and the sequence's valid keys in,
  ``u`` (the probability times ``2**Pu``) of every slot out, in slot order; bit-exact to
  :class:`golden_models.int_softmax.IntSoftmax` (docs/integer_contract.md, "Softmax"): a pass
  that keeps the row and its maximum as the scores arrive, a pass over the row for the
  exponentials and their sum, a restoring division for the reciprocal (one quotient bit per
  clock), a pass that sends ``u``. It is a stand-in, built here so the attention path runs
  whole; the project's softmax unit replaces it behind the same two streams;
- :class:`ProbEncoder`: the ``attn_prob`` encoder: the walk over ``u`` with the shared table
  gives each slot its time, then the slots leave as events in time order, ascending slot
  within a step, those in the dead zone counted and dropped.

:class:`SoftmaxNode` is the two with the node's registers and counters: the block
``attn_softmax`` the attention path places at the middle node of every head's mesh row.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from golden_models.counters import SOFTMAX_COUNTER_NAMES
from golden_models.int_softmax import EXP_BITS, MULT_BITS, PROB_BITS, exp2_table
from rtl_gen.attn_params import AttentionConfig, attn_load_layout, score_layout, u_layout
from rtl_gen.kv_tiles import NodeRegisters
from rtl_gen.layouts import event_layout
from rtl_gen.mask import transmitted
from rtl_gen.params import RTLConfig, bits_for, check_config, counter_ports
from rtl_gen.tile_parts import EventEmitter, counters, popcount

__all__ = ["ProbEncoder", "SoftmaxNode", "SoftmaxUnit", "softmax_counters",
           "softmax_counters_of", "softmax_from_config"]


def _check(cfg: object) -> AttentionConfig:
    if not isinstance(cfg, AttentionConfig):
        raise TypeError(f"config must be an AttentionConfig, not {cfg!r}")
    return cfg


def softmax_counters(cfg: AttentionConfig) -> dict[str, int]:
    """Counter name -> width of the softmax node (:data:`SOFTMAX_COUNTER_NAMES` order)."""
    s = cfg.seq_max
    widths = {"scores_in": bits_for(s), "exp_ops": bits_for(s), "divisions": 1,
              "compare_ops": bits_for(s * (cfg.T - 1)), "events_out": bits_for(s),
              "events_suppressed": bits_for(s)}
    return {n: widths[n] for n in SOFTMAX_COUNTER_NAMES}


def rshift_round(x, n, width: int):
    """``floor((x + 2**(n-1)) / 2**n)`` (``x`` for ``n = 0``) of an unsigned value and a
    shift amount signal: the contract's round-half-up shift (golden_models.fixed_point)."""
    if isinstance(n, int):
        return (x + (1 << (n - 1) if n else 0)) >> n
    half = (Const(1, width + 1) << n) >> 1  # 2**(n-1), 0 for n = 0
    return (x + half) >> n


class SoftmaxUnit(wiring.Component):
    """One row of raw scores in, ``u`` of every slot out (module docstring).

    Members
    -------
    i : In(stream.Signature(score_layout(config)))
        The row's scores (any slot order, each slot once), then a marker.
    o : Out(stream.Signature(u_layout(config)))
        ``u`` of slots ``0 .. length-1`` in order, then a marker.
    valid : In(seq_max)
        The sequence's valid keys; an invalid slot gets ``u = 0``.
    length : In(bits_for(seq_max))
    mult : In(16)
    shift : In(shift_bits)
        ``M`` and ``S`` of ``t = rshift_round(z * M, S)``.
    busy : Out(1)
    cnt_scores_in, cnt_exp_ops, cnt_divisions : Out(width)
        Of the row in progress or the last one (cleared by its first beat).
    """

    def __init__(self, config: AttentionConfig):
        self._cfg = cfg = _check(config)
        widths = softmax_counters(cfg)
        super().__init__({
            "i": In(stream.Signature(score_layout(cfg))),
            "o": Out(stream.Signature(u_layout(cfg))),
            "valid": In(cfg.seq_max),
            "length": In(bits_for(cfg.seq_max)),
            "mult": In(MULT_BITS),
            "shift": In(cfg.shift_bits),
            "busy": Out(1),
            **counter_ports({n: widths[n] for n in ("scores_in", "exp_ops", "divisions")}),
        })

    def elaborate(self, platform):
        cfg, m = self._cfg, Module()
        S, sb = cfg.seq_max, cfg.score_bits
        # one word per slot: the score, then its exponential (the score is read once); a
        # memory with an asynchronous read, so the slot's word is read in the clock it is used
        m.submodules.row = row = Memory(shape=max(sb, cfg.exp_width), depth=S, init=[])
        buf = (row.read_port(domain="comb"), row.write_port())
        top, seen = Signal(signed(sb), name="max"), Signal(name="seen_valid")
        total = Signal(cfg.sum_width, name="sum")
        rcp = Signal(cfg.recip_width, name="rcp")
        j = Signal(range(S + 1), name="slot")
        count, clear = counters(m, self, ("scores_in", "exp_ops", "divisions"))
        m.d.comb += self.busy.eq(1)
        with m.FSM(name="phase"):
            with m.State("IDLE"):
                m.d.comb += self.busy.eq(0)
                with m.If(self.i.valid):
                    m.d.sync += [*clear, seen.eq(0), total.eq(0)]
                    m.next = "RECV"
            with m.State("RECV"):
                self._receive(m, buf, top, seen, j, count)
            with m.State("EXP"):
                self._exponentials(m, buf, top, total, j, count)
            with m.State("DIV"):
                self._divide(m, total, rcp, count)
            with m.State("SEND"):
                rd = buf[0]
                m.d.comb += rd.addr.eq(j)
                u = rshift_round(rd.data[:cfg.exp_width] * rcp, cfg.recip_bits - PROB_BITS,
                                 cfg.exp_width + cfg.recip_width)
                m.d.comb += [self.o.valid.eq(1), self.o.payload.addr.eq(j),
                             self.o.payload.u.eq(u)]
                with m.If(self.o.ready):
                    m.d.sync += j.eq(j + 1)
                    with m.If(j + 1 >= self.length):
                        m.next = "MARK"
            with m.State("MARK"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.last.eq(1)]
                with m.If(self.o.ready):
                    m.next = "IDLE"
        return m

    def _receive(self, m, buf, top, seen, j, count) -> None:
        """Scores into their slots; the maximum over the valid ones as they come."""
        p = self.i.payload
        m.d.comb += self.i.ready.eq(1)
        with m.If(self.i.valid):
            with m.If(p.last):
                m.d.sync += j.eq(0)
                m.next = "EXP"
            with m.Else():
                count("scores_in", 1)
                wr = buf[1]
                m.d.comb += [wr.addr.eq(p.addr), wr.data.eq(p.score), wr.en.eq(1)]
                with m.If(self.valid.bit_select(p.addr, 1) & (~seen | (p.score > top))):
                    m.d.sync += [top.eq(p.score), seen.eq(1)]

    def _exponentials(self, m, buf, top, total, j, count) -> None:
        """Slot ``j``: ``e = EXP2[f] >> min(t >> Ft, E+1)`` of ``t = rshift_round(z * M, S)``,
        ``z = max - score``; 0 for an invalid slot; the sum."""
        cfg = self._cfg
        sb, ft = cfg.score_bits, cfg.frac_bits
        rd, wr = buf
        m.d.comb += rd.addr.eq(j)
        score = rd.data[:sb].as_signed()
        z = Signal(sb, name="z")
        m.d.comb += z.eq((top - score).as_unsigned())
        t = Signal(sb + MULT_BITS, name="t")
        m.d.comb += t.eq(rshift_round(z * self.mult, self.shift, sb + MULT_BITS))
        whole = Signal(range(EXP_BITS + 2), name="whole")
        m.d.comb += whole.eq(Mux((t >> ft) > EXP_BITS + 1, EXP_BITS + 1, t >> ft))
        table = Array(Const(int(v), cfg.exp_width) for v in exp2_table(ft).tolist())
        e = Signal(cfg.exp_width, name="e")
        live = self.valid.bit_select(j, 1)
        m.d.comb += e.eq(Mux(live, table[t[:ft]] >> whole, 0))
        m.d.comb += [wr.addr.eq(j), wr.data.eq(e), wr.en.eq(1)]
        m.d.sync += [total.eq(total + e), j.eq(j + 1)]
        with m.If(live):
            count("exp_ops", 1)
        with m.If(j + 1 >= self.length):
            m.d.sync += j.eq(0)
            m.next = "DIV"

    def _divide(self, m, total, rcp, count) -> None:
        """``rcp = 2**Pd // sum``, one quotient bit per clock from the top (0 for a row without
        a valid key, whose exponentials are all 0)."""
        cfg = self._cfg
        Q = cfg.recip_width
        width = max(cfg.recip_bits + 1, cfg.sum_width + Q)
        rem = Signal(width, name="rem")
        b = Signal(range(max(Q, 2)), name="bit")
        started = Signal(name="div_started")
        trial = Signal(width, name="trial")
        m.d.comb += trial.eq(total << b)
        with m.If(~started):
            m.d.sync += [rem.eq(Const(1, width) << cfg.recip_bits), b.eq(Q - 1), rcp.eq(0),
                         started.eq(1)]
            count("divisions", 1)
        with m.Else():
            with m.If((total != 0) & (rem >= trial)):
                m.d.sync += [rem.eq(rem - trial), rcp.bit_select(b, 1).eq(1)]
            m.d.sync += b.eq(b - 1)
            with m.If((b == 0) | (total == 0)):
                m.d.sync += started.eq(0)
                m.next = "SEND"


class ProbEncoder(wiring.Component):
    """The ``attn_prob`` encoder: ``u`` of every slot in, masked events out (module docstring).

    Members
    -------
    i : In(stream.Signature(u_layout(config)))
        ``u`` of the row's slots (each once), then a marker.
    o : Out(stream.Signature(event_layout(slot_width, time_width)))
        Events ``(slot, t)`` in time order, ascending slot within a step, outside the dead
        zone ``|t - i_max| > k``, then a marker.
    theta : In(prob_theta_width).array(T - 1)
        The walk's table: a slot fires at the first ``t`` with ``u >= theta[t]``, else ``T-1``.
    i_max, k : In(time_width)
        The ``attn_prob`` mask.
    busy : Out(1)
    cnt_compare_ops, cnt_events_out, cnt_events_suppressed : Out(width)

    With ``dense``, the dense design's encoder: each slot's code ``c - t`` leaves as it is
    walked, in slot order, as ``{addr = slot, t = code}`` (``events_out`` counts the codes sent,
    none is suppressed: no mask).
    """

    def __init__(self, config: AttentionConfig, *, dense: bool = False):
        self._cfg = cfg = _check(config)
        self._dense = bool(dense)
        self._lanes = RTLConfig(T=cfg.T, k=0, n_in=1, tile_neurons=cfg.seq_max, mesh_rows=1,
                                mesh_cols=1)
        widths = softmax_counters(cfg)
        super().__init__({
            "i": In(stream.Signature(u_layout(cfg))),
            "o": Out(stream.Signature(event_layout(cfg.slot_width, cfg.time_width))),
            "theta": In(cfg.prob_theta_width).array(max(cfg.T - 1, 1)),
            "i_max": In(cfg.time_width),
            "k": In(cfg.time_width),
            "busy": Out(1),
            **counter_ports({n: widths[n] for n in ("compare_ops", "events_out",
                                                    "events_suppressed")}),
        })

    def elaborate(self, platform):
        if self._dense:
            return self._elaborate_dense()
        cfg, m = self._cfg, Module()
        S, T = cfg.seq_max, cfg.T
        m.submodules.emit = emit = EventEmitter(self._lanes)
        taus = [Signal(range(T), name=f"tau{j}") for j in range(S)]
        present = Signal(S, name="present")
        t = Signal(range(T), name="t")
        count, clear = counters(m, self, ("compare_ops", "events_out", "events_suppressed"))
        p = self.i.payload
        tau = self._tau(m)
        pend = Signal(S, name="pending")
        m.d.comb += pend.eq(Cat(*(present[j] & (taus[j] == t) for j in range(S))))
        # the slot of the beat, one-hot: each slot's register is written under its own bit (an
        # array written at a variable index is a case statement per register)
        hit = Signal(S, name="slot_hit")
        m.d.comb += hit.eq(Const(1, S) << p.addr)
        n_pend = Signal(range(S + 1), name="n_pending")
        m.d.comb += n_pend.eq(popcount(pend))
        tx = transmitted(t, self.i_max, self.k)
        m.d.comb += [self.o.valid.eq(emit.o.valid), self.o.payload.addr.eq(emit.o.payload.addr),
                     self.o.payload.t.eq(emit.o.payload.t), emit.o.ready.eq(self.o.ready),
                     emit.t.eq(t), emit.g.eq(0), emit.lanes.eq(Mux(tx, pend, 0)),
                     self.busy.eq(1)]
        with m.FSM(name="phase"):
            with m.State("IDLE"):
                m.d.comb += self.busy.eq(0)
                with m.If(self.i.valid):
                    m.d.sync += [*clear, present.eq(0)]
                    m.next = "RECV"
            with m.State("RECV"):
                m.d.comb += self.i.ready.eq(1)
                with m.If(self.i.valid & p.last):
                    m.d.sync += t.eq(0)
                    m.next = "WALK"
                with m.Elif(self.i.valid):
                    m.d.sync += present.eq(present | hit)
                    for j in range(S):
                        with m.If(hit[j]):
                            m.d.sync += taus[j].eq(tau)
                    count("compare_ops", Mux(tau == T - 1, T - 1, tau + 1))
            with m.State("WALK"):
                with m.If(emit.free):
                    m.d.comb += emit.push.eq(1)
                    with m.If(tx):
                        count("events_out", n_pend)
                    with m.Else():
                        count("events_suppressed", n_pend)
                    m.d.sync += t.eq(t + 1)
                    with m.If(t == T - 1):
                        m.next = "DRAIN"
            with m.State("DRAIN"):
                with m.If(emit.free & ~emit.o.valid):
                    m.next = "MARK"
            with m.State("MARK"):
                # a marker carries no event: addr and t 0, as every block's marker
                m.d.comb += [self.o.valid.eq(1), self.o.payload.addr.eq(0),
                             self.o.payload.t.eq(0), self.o.payload.last.eq(1)]
                with m.If(self.o.ready):
                    m.next = "IDLE"
        return m


    def _tau(self, m):
        """The walk's time of the ``u`` on ``i``: the first ``t`` with ``u >= theta[t]``."""
        T = self._cfg.T
        tau = Signal(range(T), name="tau_in")
        m.d.comb += tau.eq(T - 1)
        for step in reversed(range(T - 1)):
            with m.If(self.i.payload.u >= self.theta[step]):
                m.d.comb += tau.eq(step)
        return tau

    def _elaborate_dense(self):
        cfg, m = self._cfg, Module()
        T = cfg.T
        count, clear = counters(m, self, ("compare_ops", "events_out", "events_suppressed"))
        p = self.i.payload
        tau = self._tau(m)
        m.d.comb += self.busy.eq(1)
        with m.FSM(name="phase"):
            with m.State("IDLE"):
                m.d.comb += self.busy.eq(0)
                with m.If(self.i.valid):
                    m.d.sync += clear
                    m.next = "SEND"
            with m.State("SEND"):
                with m.If(self.i.valid & p.last):
                    m.d.comb += [self.o.valid.eq(1), self.o.payload.last.eq(1),
                                 self.i.ready.eq(self.o.ready)]
                    with m.If(self.o.ready):
                        m.next = "IDLE"
                with m.Else():
                    m.d.comb += [self.o.valid.eq(self.i.valid), self.i.ready.eq(self.o.ready),
                                 self.o.payload.addr.eq(p.addr),
                                 self.o.payload.t.eq(cfg.prob_space.c - tau)]
                    with m.If(self.i.valid & self.o.ready):
                        count("compare_ops", Mux(tau == T - 1, T - 1, tau + 1))
                        count("events_out", 1)
        return m


class SoftmaxNode(wiring.Component):
    """The block ``attn_softmax``: :class:`SoftmaxUnit` then :class:`ProbEncoder`, with the
    node's registers (masks, multiplier, sequence, the ``attn_prob`` table) and counters.

    Members
    -------
    load : In(stream.Signature(attn_load_layout(config)))
        Targets ``config``, ``prob_table``, ``sequence`` (others taken and ignored), while idle.
    i : In(stream.Signature(score_layout(config)))
    o : Out(stream.Signature(event_layout(slot_width, time_width)))
    busy : Out(1)
    cnt_<name> : Out(width)
        :func:`softmax_counters` of the last row.

    With ``dense``, the dense design's node: the probability codes of every slot leave, in slot
    order, as ``{addr = slot, t = code}`` (:class:`ProbEncoder`).
    """

    def __init__(self, config: AttentionConfig, *, dense: bool = False):
        self._cfg = cfg = _check(config)
        self._dense = bool(dense)
        super().__init__({
            "load": In(stream.Signature(attn_load_layout(cfg))),
            "i": In(stream.Signature(score_layout(cfg))),
            "o": Out(stream.Signature(event_layout(cfg.slot_width, cfg.time_width))),
            "busy": Out(1),
            **counter_ports(softmax_counters(cfg)),
        })

    @property
    def config(self) -> AttentionConfig:
        return self._cfg

    def elaborate(self, platform):
        cfg, m = self._cfg, Module()
        m.submodules.registers = regs = NodeRegisters(cfg, "prob_table", cfg.prob_theta_width)
        m.submodules.softmax = unit = SoftmaxUnit(cfg)
        m.submodules.encoder = enc = ProbEncoder(cfg, dense=self._dense)
        idle = ~unit.busy & ~enc.busy & ~unit.o.valid
        wiring.connect(m, wiring.flipped(self.i), unit.i)
        wiring.connect(m, unit.o, enc.i)
        wiring.connect(m, enc.o, wiring.flipped(self.o))
        m.d.comb += [
            regs.load.payload.eq(self.load.payload),
            self.load.ready.eq(idle), regs.take.eq(self.load.valid & idle),
            unit.valid.eq(regs.seq.valid), unit.length.eq(regs.seq.length),
            unit.mult.eq(regs.conf.mult), unit.shift.eq(regs.conf.shift),
            *(a.eq(b) for a, b in zip(enc.theta, regs.theta, strict=True)),
            enc.i_max.eq(regs.conf.i_max_p), enc.k.eq(regs.conf.k_p),
            self.busy.eq(~idle),
        ]
        for name in softmax_counters(cfg):
            part = unit if name in ("scores_in", "exp_ops", "divisions") else enc
            m.d.comb += getattr(self, f"cnt_{name}").eq(getattr(part, f"cnt_{name}"))
        return m


def softmax_from_config(config: RTLConfig) -> SoftmaxNode:
    """The ``attn_softmax`` block of an :class:`RTLConfig`
    (:meth:`AttentionConfig.from_rtl`)."""
    return SoftmaxNode(AttentionConfig.from_rtl(check_config(config)))


def softmax_counters_of(config: RTLConfig) -> dict[str, int]:
    """:func:`softmax_counters` of the ``attn_softmax`` block of an :class:`RTLConfig`."""
    return softmax_counters(AttentionConfig.from_rtl(check_config(config)))
