"""The softmax node of an attention head: raw scores in, ``attn_prob`` events out.

Two parts behind stream interfaces (docs/rtl_attention.md, "The softmax node"):

- the project's softmax unit, :class:`rtl_gen.softmax.Softmax` (docs/rtl_units.md): a row of
  raw scores with their valid bits in, the probability code of every slot out in slot order;
  bit-exact to :class:`golden_models.int_softmax.IntSoftmax` and the ``attn_prob`` walk
  (docs/integer_contract.md, "Softmax"). The node loads it from the attention path's own
  ``load`` beats (``M`` and ``S`` with the configuration word, the walk's thresholds with the
  ``attn_prob`` table) and gives each score its key's valid bit;
- :class:`ProbEncoder`: the ``attn_prob`` encoder: each slot's time ``c - code``; then the
  slots leave as events in time order, ascending slot within a step, those in the dead zone
  counted and dropped.

:class:`SoftmaxNode` is the two with the node's registers and counters: the block
``attn_softmax`` the attention path places at the middle node of every head's mesh row.
"""

from __future__ import annotations

from amaranth.hdl import Cat, Const, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from golden_models.counters import SOFTMAX_COUNTER_NAMES
from rtl_gen.attn_params import (
    ATTN_TARGETS,
    AttentionConfig,
    attn_config_layout,
    attn_load_layout,
    score_layout,
)
from rtl_gen.kv_tiles import NodeRegisters
from rtl_gen.layouts import SOFTMAX_TARGETS, event_layout, prob_layout
from rtl_gen.mask import transmitted
from rtl_gen.params import RTLConfig, bits_for, check_config, counter_ports
from rtl_gen.softmax import Softmax
from rtl_gen.tile_parts import EventEmitter, counters, popcount

__all__ = ["ProbEncoder", "SoftmaxNode", "softmax_counters", "softmax_counters_of",
           "softmax_from_config"]


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


class ProbEncoder(wiring.Component):
    """The ``attn_prob`` encoder: the probability code of every slot in, masked events out
    (module docstring).

    Members
    -------
    i : In(stream.Signature(prob_layout(config.softmax_unit())))
        The codes of the row's slots ``0, 1, ...`` in order (the softmax unit's output), then a
        marker.
    o : Out(stream.Signature(event_layout(slot_width, time_width)))
        Events ``(slot, t)`` in time order, ascending slot within a step, outside the dead
        zone ``|t - i_max| > k``, then a marker.
    i_max, k : In(time_width)
        The ``attn_prob`` mask.
    busy : Out(1)
    cnt_compare_ops, cnt_events_out, cnt_events_suppressed : Out(width)
        ``compare_ops``: the walk's comparisons (the unit's, counted here from each code: a
        slot of time ``tau`` took ``tau + 1``, ``T - 1`` at the last step).

    With ``dense``, the dense design's encoder: each slot's code leaves as it comes, in slot
    order, as ``{addr = slot, t = code}`` (``events_out`` counts the codes sent, none is
    suppressed: no mask).
    """

    def __init__(self, config: AttentionConfig, *, dense: bool = False):
        self._cfg = cfg = _check(config)
        self._dense = bool(dense)
        self._lanes = RTLConfig(T=cfg.T, k=0, n_in=1, tile_neurons=cfg.seq_max, mesh_rows=1,
                                mesh_cols=1)
        widths = softmax_counters(cfg)
        super().__init__({
            "i": In(stream.Signature(prob_layout(cfg.softmax_unit()))),
            "o": Out(stream.Signature(event_layout(cfg.slot_width, cfg.time_width))),
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
        slot = Signal(range(max(S, 2)), name="slot")
        pend = Signal(S, name="pending")
        m.d.comb += pend.eq(Cat(*(present[j] & (taus[j] == t) for j in range(S))))
        # the slot of the beat, one-hot: each slot's register is written under its own bit (an
        # array written at a variable index is a case statement per register)
        hit = Signal(S, name="slot_hit")
        m.d.comb += hit.eq(Const(1, S) << slot)
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
                    m.d.sync += [*clear, present.eq(0), slot.eq(0)]
                    m.next = "RECV"
            with m.State("RECV"):
                m.d.comb += self.i.ready.eq(1)
                with m.If(self.i.valid & p.last):
                    m.d.sync += t.eq(0)
                    m.next = "WALK"
                with m.Elif(self.i.valid):
                    m.d.sync += [present.eq(present | hit), slot.eq(slot + 1)]
                    for j in range(S):
                        with m.If(hit[j]):
                            m.d.sync += taus[j].eq(tau)
                    count("compare_ops", _compares(tau, T))
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
        """The walk's time of the code on ``i``: ``tau = c - code``."""
        cfg = self._cfg
        tau = Signal(range(cfg.T), name="tau_in")
        m.d.comb += tau.eq(cfg.prob_space.c - self.i.payload.code)
        return tau

    def _elaborate_dense(self):
        cfg, m = self._cfg, Module()
        T = cfg.T
        count, clear = counters(m, self, ("compare_ops", "events_out", "events_suppressed"))
        p = self.i.payload
        tau = self._tau(m)
        slot = Signal(range(max(cfg.seq_max, 2)), name="slot")
        m.d.comb += self.busy.eq(1)
        with m.FSM(name="phase"):
            with m.State("IDLE"):
                m.d.comb += self.busy.eq(0)
                with m.If(self.i.valid):
                    m.d.sync += [*clear, slot.eq(0)]
                    m.next = "SEND"
            with m.State("SEND"):
                with m.If(self.i.valid & p.last):
                    m.d.comb += [self.o.valid.eq(1), self.o.payload.last.eq(1),
                                 self.i.ready.eq(self.o.ready)]
                    with m.If(self.o.ready):
                        m.next = "IDLE"
                with m.Else():
                    m.d.comb += [self.o.valid.eq(self.i.valid), self.i.ready.eq(self.o.ready),
                                 self.o.payload.addr.eq(slot), self.o.payload.t.eq(p.code)]
                    with m.If(self.i.valid & self.o.ready):
                        m.d.sync += slot.eq(slot + 1)
                        count("compare_ops", _compares(tau, T))
                        count("events_out", 1)
        return m


def _compares(tau, T: int):
    """The walk's comparisons of one slot of time ``tau``: one per step up to its crossing,
    ``T - 1`` when it crosses none (golden_models.attention)."""
    return Mux(tau == T - 1, T - 1, tau + 1)


class SoftmaxNode(wiring.Component):
    """The block ``attn_softmax``: the softmax unit (:class:`rtl_gen.softmax.Softmax`) then
    :class:`ProbEncoder`, with the node's registers (masks, the sequence) and counters.

    Members
    -------
    load : In(stream.Signature(attn_load_layout(config)))
        Targets ``config`` (its ``mult`` and ``shift`` go on to the unit), ``prob_table`` (the
        unit's walk), ``sequence`` (others taken and ignored), while idle.
    i : In(stream.Signature(score_layout(config)))
        A row's scores in slot order ``0 .. length-1`` (the query x key tile's order), then a
        marker.
    o : Out(stream.Signature(event_layout(slot_width, time_width)))
    busy : Out(1)
    cnt_<name> : Out(width)
        :func:`softmax_counters` of the last row: ``scores_in``, ``exp_ops`` (the valid keys)
        and ``divisions`` counted here as the row goes in, the rest by :class:`ProbEncoder`.

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
        m.submodules.registers = regs = NodeRegisters(cfg)
        m.submodules.softmax = unit = Softmax(cfg.softmax_unit())
        m.submodules.encoder = enc = ProbEncoder(cfg, dense=self._dense)
        idle = Signal(name="idle")
        m.d.comb += idle.eq(~unit.busy & ~enc.busy)
        self._load(m, regs, unit, idle)
        p, u = self.i.payload, unit.i.payload
        m.d.comb += [unit.i.valid.eq(self.i.valid), self.i.ready.eq(unit.i.ready),
                     u.score.eq(p.score), u.valid.eq(regs.seq.valid.bit_select(p.addr, 1)),
                     u.last.eq(p.last)]
        wiring.connect(m, unit.o, enc.i)
        wiring.connect(m, enc.o, wiring.flipped(self.o))
        m.d.comb += [enc.i_max.eq(regs.conf.i_max_p), enc.k.eq(regs.conf.k_p),
                     self.busy.eq(~idle)]
        # the unit keeps no counters: the row's are counted as it goes in
        fresh = Signal(init=1, name="row_fresh")  # the next beat taken starts a row
        with m.If(self.i.valid & self.i.ready):
            m.d.sync += [fresh.eq(p.last), self.cnt_divisions.eq(1)]
            with m.If(p.last & fresh):  # an empty row
                m.d.sync += [self.cnt_scores_in.eq(0), self.cnt_exp_ops.eq(0)]
            with m.Elif(~p.last):
                m.d.sync += [self.cnt_scores_in.eq(Mux(fresh, 1, self.cnt_scores_in + 1)),
                             self.cnt_exp_ops.eq(Mux(fresh, 0, self.cnt_exp_ops) + u.valid)]
        for name in ("compare_ops", "events_out", "events_suppressed"):
            m.d.comb += getattr(self, f"cnt_{name}").eq(getattr(enc, f"cnt_{name}"))
        return m

    def _load(self, m, regs, unit, idle) -> None:
        """The node's ``load`` beats: every one to the node's registers; the configuration
        word's ``M`` and ``S`` and the ``attn_prob`` table on to the unit (its own load
        stream, taken while it is idle)."""
        cfg = self._cfg
        ld, ul = self.load.payload, unit.load.payload
        is_conf = ld.target == ATTN_TARGETS["config"]
        to_unit = is_conf | (ld.target == ATTN_TARGETS["prob_table"])
        word = data.View(attn_config_layout(cfg), ld.data[:attn_config_layout(cfg).size])
        m.d.comb += [
            regs.load.payload.eq(ld),
            unit.load.valid.eq(self.load.valid & idle & to_unit),
            ul.target.eq(Mux(is_conf, SOFTMAX_TARGETS["config"], SOFTMAX_TARGETS["thresholds"])),
            ul.addr.eq(ld.addr),
            ul.data.eq(Mux(is_conf, Cat(word.mult, word.shift), ld.data)),
            self.load.ready.eq(idle & (~to_unit | unit.load.ready)),
            regs.take.eq(self.load.valid & self.load.ready),
        ]


def softmax_from_config(config: RTLConfig) -> SoftmaxNode:
    """The ``attn_softmax`` block of an :class:`RTLConfig`
    (:meth:`AttentionConfig.from_rtl`)."""
    return SoftmaxNode(AttentionConfig.from_rtl(check_config(config)))


def softmax_counters_of(config: RTLConfig) -> dict[str, int]:
    """:func:`softmax_counters` of the ``attn_softmax`` block of an :class:`RTLConfig`."""
    return softmax_counters(AttentionConfig.from_rtl(check_config(config)))
