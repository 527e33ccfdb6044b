"""The softmax unit: one row of raw attention scores in, attention-probability codes out.

The hardware form of ``golden_models.int_softmax.IntSoftmax`` followed by the threshold walk
over its probabilities (docs/integer_contract.md, "Softmax"; docs/rtl_units.md). A row of ``L``
scores (``L <= seq_len``) with their valid bits (the padding mask) is buffered, then:

1. **in** (``L + 1`` beats): each score is written to the row buffer and the maximum ``m`` of
   the valid ones is kept;
2. **sum** (``L + 1`` clocks): every score is read again; ``z = m - A`` gives the exponential
   ``e = EXP2[f] >> i`` of ``t = rshift_round(z * M, S)`` (zero for an invalid key), summed;
3. **reciprocal** (``Pd - E + 1`` clocks): ``rcp = floor(2**Pd / sum)``, by restoring division;
4. **out** (``L`` beats, one a clock without backpressure): every score is read a third time,
   its ``e`` computed again, ``u = rshift_round(e * rcp, Pd - Pu)`` and its code
   ``c - walk(u)`` sent; then the row's marker beat.

The exponential is computed twice rather than stored: the row buffer is single-ported, and
an exponential costs a multiply and two shifts, less than a second buffer. ``M``, ``S`` and the
walk's ``T - 1`` thresholds are loaded at run time (:func:`load_beats`), since each block's
softmax has its own scale.
"""

from __future__ import annotations

from amaranth.hdl import Array, Const, Module, Mux, Signal, signed
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from rtl_gen.layouts import (
    SOFTMAX_TARGETS,
    pack,
    prob_layout,
    prob_theta_width,
    score_layout,
    softmax_config_layout,
    softmax_load_layout,
)
from rtl_gen.params import ConfigComponent, RTLConfig, check_config
from rtl_gen.sram import SRAM
from rtl_gen.unit_parts import CodeWalk, Reciprocal, rshift_round

__all__ = [
    "Exponential",
    "Softmax",
    "load_beats",
    "row_clocks",
    "softmax_widths",
]


def softmax_widths(config: RTLConfig) -> dict[str, int]:
    """The unit's fixed widths (``golden_models.int_softmax``): ``E``, ``Pu``, ``Pd`` of a row
    of ``seq_len``, the sum's width and ``Ft``."""
    from golden_models.int_softmax import EXP_BITS, PROB_BITS, recip_bits

    check_config(config)
    return {"exp": EXP_BITS, "prob": PROB_BITS, "recip": recip_bits(config.seq_len),
            "sum": (config.seq_len * 2**EXP_BITS).bit_length(), "frac": config.exp_frac_bits}


def row_clocks(config: RTLConfig, length: int) -> int:
    """Clocks of a row of ``length`` scores at full rate (no idle input, no backpressure),
    from its first input beat to its output marker: in ``L + 1`` (the marker taken, the next
    clock the sum starts), sum ``L + 2``, the reciprocal ``Pd - E + 1`` and its result taken,
    out ``L + 2`` and the marker; an empty row skips a clock of the sum and of the out pass."""
    w = softmax_widths(config)
    return 3 * length + (w["recip"] - w["exp"] + 1) + (7 if length else 5)


class Exponential(ConfigComponent):
    """``e = EXP2[f] >> i`` of ``t = rshift_round((m - A) * M, S)``, zero for an invalid key
    or ``i > E`` (combinational).

    Members
    -------
    score, top : In(signed(score_bits))
        ``A`` and the row's maximum ``m``.
    valid : In(1)
    mult : In(16)
    shift : In(shift width)
        ``M`` and ``S`` (:func:`rtl_gen.layouts.softmax_config_layout`).
    e : Out(E + 1)
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        word = softmax_config_layout(config)
        return {
            "score": In(signed(config.score_width)),
            "top": In(signed(config.score_width)),
            "valid": In(1),
            "mult": In(word["mult"].shape),
            "shift": In(word["shift"].shape),
            "e": Out(softmax_widths(config)["exp"] + 1),
        }

    def elaborate(self, platform):
        from golden_models.int_softmax import exp2_table

        cfg = self._config
        m = Module()
        w = softmax_widths(cfg)
        ft, sb = w["frac"], cfg.score_width
        z = Signal(sb, name="z")  # m - A of a valid key: 0 .. 2**sb - 1
        t = Signal(sb + len(self.mult), name="t")
        m.d.comb += [z.eq(self.top - self.score),
                     t.eq(rshift_round(z * self.mult, self.shift))]
        table = Array(Const(v, w["exp"] + 1) for v in exp2_table(ft).tolist())
        whole = t[ft:]
        small = Signal(name="small")  # i <= E: e = EXP2[f] >> i may be non-zero
        m.d.comb += small.eq(whole <= w["exp"])
        m.d.comb += self.e.eq(Mux(self.valid & small, table[t[:ft]] >> whole[:5], 0))
        return m


class Softmax(ConfigComponent):
    """One row of raw scores in, its attention-probability codes out (module docstring).

    Parameters
    ----------
    config : RTLConfig
        Uses ``T`` (the codes), ``seq_len`` (the row buffer), ``score_bits``,
        ``exp_frac_bits`` and ``sram_macro``.

    Members
    -------
    load : In(stream.Signature(softmax_load_layout(config)))
        The config word (``M``, ``S``) and the walk's thresholds; taken only while idle.
    i : In(stream.Signature(score_layout(config)))
        A row: ``L`` beats ``{score, valid}``, then a ``last`` marker beat.
    o : Out(stream.Signature(prob_layout(config)))
        ``L`` codes in the row's order, then a ``last`` marker beat.
    busy : Out(1)
        A row is in progress.
    overflow : Out(1)
        The row in progress (or the last) had more than ``seq_len`` scores; the unit kept the
        first ``seq_len``.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`RTLConfig`.
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        return {
            "load": In(stream.Signature(softmax_load_layout(config))),
            "i": In(stream.Signature(score_layout(config))),
            "o": Out(stream.Signature(prob_layout(config))),
            "busy": Out(1),
            "overflow": Out(1),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        w = softmax_widths(cfg)
        sb, n = cfg.score_width, cfg.seq_len
        m.submodules.row = row = SRAM(depth=n, width=sb + 1, macro=cfg.sram_macro)
        m.submodules.exp = exp = Exponential(cfg)
        m.submodules.recip = recip = Reciprocal(w["recip"], w["sum"], w["exp"])
        m.submodules.walk = walk = CodeWalk(cfg.T, prob_theta_width(cfg))
        conf = Signal(softmax_config_layout(cfg), name="config")
        theta = Array(Signal(prob_theta_width(cfg), name=f"theta{t}") for t in range(cfg.T - 1))
        length = Signal(range(n + 1), name="length")
        top = Signal(signed(sb), name="top")
        total = Signal(w["sum"], name="total")
        rcp = Signal(len(recip.q), name="rcp")
        entry = row.bus.rdata
        m.d.comb += [exp.score.eq(entry[:sb]), exp.valid.eq(entry[sb]), exp.top.eq(top),
                     exp.mult.eq(conf.mult), exp.shift.eq(conf.shift),
                     recip.d.eq(total), *(walk.theta[t].eq(theta[t]) for t in range(cfg.T - 1))]
        # u = rshift_round(e * rcp, Pd - Pu); its code is c - walk(u) (asymmetric: c = T - 1)
        m.d.comb += walk.v.eq(rshift_round(exp.e * rcp, w["recip"] - w["prob"]))
        self._phases(m, row, exp, recip, walk, conf, theta, length, top, total, rcp)
        return m

    def _phases(self, m, row, exp, recip, walk, conf, theta, length, top, total, rcp):  # noqa: PLR0915 -- one FSM, read top to bottom
        """The row's phases: idle (load), in, sum, reciprocal, out, marker."""
        cfg = self._config
        n = cfg.seq_len
        idx = Signal(range(n + 1), name="idx")
        s1 = Signal(name="s1_valid")  # the buffer shows the entry read at the last advance
        o_valid = Signal(name="o_valid")
        ld, beat = self.load.payload, self.i.payload
        # the output payload is a register itself (its flip-flops drive the port)
        m.d.comb += self.busy.eq(1)
        with m.FSM(name="phase"):
            with m.State("IDLE"):
                m.d.comb += [self.busy.eq(0), self.load.ready.eq(1)]
                m.d.sync += self.o.payload.last.eq(0)
                with m.If(self.load.valid):
                    with m.If(ld.target == SOFTMAX_TARGETS["config"]):
                        m.d.sync += conf.eq(ld.data[:len(conf.as_value())])
                    with m.Else():
                        m.d.sync += theta[ld.addr].eq(ld.data[:len(theta[0])])
                with m.Elif(self.i.valid):
                    m.d.sync += [length.eq(0), top.eq(-(1 << (cfg.score_width - 1))),
                                 self.overflow.eq(0)]
                    m.next = "IN"
            with m.State("IN"):
                m.d.comb += self.i.ready.eq(1)
                with m.If(self.i.valid & beat.last):
                    m.d.sync += [idx.eq(0), s1.eq(0), total.eq(0)]
                    m.next = "SUM"
                with m.Elif(self.i.valid & (length == n)):
                    m.d.sync += self.overflow.eq(1)
                with m.Elif(self.i.valid):
                    m.d.comb += [row.bus.addr.eq(length), row.bus.wen.eq(1),
                                 row.bus.wdata.eq(Mux(beat.valid, 1 << cfg.score_width, 0)
                                                  | beat.score.as_unsigned())]
                    m.d.sync += length.eq(length + 1)
                    with m.If(beat.valid & (beat.score > top)):
                        m.d.sync += top.eq(beat.score)
            with m.State("SUM"):
                m.d.comb += [row.bus.addr.eq(idx), row.bus.ren.eq(idx < length)]
                m.d.sync += s1.eq(idx < length)
                with m.If(idx < length):
                    m.d.sync += idx.eq(idx + 1)
                with m.If(s1):
                    m.d.sync += total.eq(total + exp.e)
                with m.Elif(idx == length):
                    m.d.comb += recip.start.eq(1)
                    m.next = "RECIP"
            with m.State("RECIP"):
                with m.If(recip.done):
                    m.d.sync += [rcp.eq(recip.q), idx.eq(0), s1.eq(0)]
                    m.next = "OUT"
            with m.State("OUT"):
                # the read, the buffer's output and the output register move together
                advance = ~o_valid | self.o.ready
                m.d.comb += self.o.valid.eq(o_valid)
                with m.If(advance):
                    m.d.comb += [row.bus.addr.eq(idx), row.bus.ren.eq(idx < length)]
                    m.d.sync += [s1.eq(idx < length), o_valid.eq(s1),
                                 self.o.payload.code.eq(cfg.T - 1 - walk.tau)]
                    with m.If(idx < length):
                        m.d.sync += idx.eq(idx + 1)
                    with m.Elif(~s1):
                        m.d.sync += self.o.payload.last.eq(1)
                        m.next = "END"
            with m.State("END"):
                m.d.comb += self.o.valid.eq(1)
                with m.If(self.o.ready):
                    m.next = "IDLE"


# -- constants, driver ---------------------------------------------------------------------------


def load_beats(config: RTLConfig, unit, theta) -> list[tuple[int, int, int]]:
    """The ``load`` beats ``(target, addr, data)`` that program a :class:`Softmax` with the
    golden unit ``unit`` (``golden_models.int_softmax.IntSoftmax``) and the walk's table
    ``theta`` (``T - 1`` thresholds over ``u``).

    Raises
    ------
    TypeError, ValueError
        ``unit`` is not an ``IntSoftmax`` of the config's row, score width and ``Ft``, or a
        threshold does not fit; the message names the quantity.
    """
    from golden_models.int_softmax import PROB_BITS, IntSoftmax

    check_config(config)
    if not isinstance(unit, IntSoftmax):
        raise TypeError(f"unit must be a golden_models.int_softmax.IntSoftmax, not {unit!r}")
    for name, want in (("row_max", config.seq_len), ("score_bits", config.score_width),
                       ("frac_bits", config.exp_frac_bits)):
        if getattr(unit, name) != want:
            raise ValueError(f"unit has {name}={getattr(unit, name)}, the softmax unit was "
                             f"generated for {want}")
    theta = [int(x) for x in theta]
    if len(theta) != config.T - 1:
        raise ValueError(f"theta has {len(theta)} thresholds, T - 1 = {config.T - 1} needed")
    beats = [(SOFTMAX_TARGETS["config"], 0,
              pack(softmax_config_layout(config), {"mult": unit.mult, "shift": unit.shift}))]
    top = 2**PROB_BITS + 1
    for t, x in enumerate(theta):
        # clamping to the reachable 0 .. 2**Pu (+1) changes no comparison
        beats.append((SOFTMAX_TARGETS["thresholds"], t, min(max(x, 0), top)))
    return beats






