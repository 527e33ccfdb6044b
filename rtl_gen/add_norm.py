"""The residual-add + LayerNorm unit: the residual stream and a tile's sums in, the next
residual stream and its codes out.

The hardware form of ``golden_models.residual.ResidualAdd`` followed by
``golden_models.int_layernorm.IntLayerNorm`` and the threshold walks of the positions the new
stream feeds (docs/integer_contract.md, "Residual add", "LayerNorm"; docs/rtl_units.md). For a
row of ``N = hidden`` channels:

1. **add** (``N`` beat pairs, one a clock): ``h[j] = saturate(r[j] + add(V[j]), W + G)`` with
   channel ``j``'s multiplier and bias; ``h`` goes to the row buffer, ``S1 = sum h`` and
   ``S2 = sum h*h`` are kept;
2. **spread** (one clock): ``U = N*S2 - S1**2``, ``k = (62 - bit_length(U)) // 2``;
3. **root** (31 clocks): ``R = isqrt(U << 2k)`` (``2**30`` when ``U = 0``);
4. **reciprocal** (26 clocks): ``F = floor(2**55 / R)``;
5. **normalise** (``N`` beats, one a clock without backpressure): ``D = N*h - S1``,
   ``n = rshift_round(D*F, 39 - k)``, ``r' = saturate(rshift_round(G*n + B', g + 16), W)`` and
   the codes ``c - walk(r')`` of :data:`rtl_gen.layouts.NORM_CODES` positions.

The constants (per channel ``M``, ``B`` of the add and ``G``, ``B`` of the LayerNorm, the two
shifts, the walks' tables) are loaded at run time (:func:`load_beats`): one unit serves every
LayerNorm of a model.
"""

from __future__ import annotations

from amaranth.hdl import Array, Module, Mux, Signal, signed
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from golden_models.codespace import CodeSpace
from golden_models.positions import POSITION_FAMILY
from rtl_gen.layouts import (
    NORM_CODES,
    NORM_TARGETS,
    norm_channel_layout,
    norm_config_layout,
    norm_load_layout,
    norm_out_layout,
    norm_theta_width,
    pack,
    residual_layout,
    residual_sum_layout,
)
from rtl_gen.params import ConfigComponent, RTLConfig, check_config
from rtl_gen.sram import SRAM
from rtl_gen.unit_parts import CodeWalk, IntSqrt, Reciprocal, bit_length, rshift_round, saturate

__all__ = [
    "AddNorm",
    "AddStage",
    "NormStage",
    "check_units",
    "load_beats",
    "norm_widths",
    "row_clocks",
]

#: Width of every product-and-bias register (the golden units keep them below ``2**62``).
ACC_BITS = 63


def check_units(config: RTLConfig) -> RTLConfig:
    """``config`` if the golden units accept its widths, else ``ValueError`` naming the value
    and what would be valid: the LayerNorm's variance and ``N*h*F`` within 62 bits, the add's
    ``M * V`` within 62 bits."""
    from golden_models.int_layernorm import RECIP_BITS, IntLayerNorm
    from golden_models.residual import MULT_BITS

    check_config(config)
    n, w = config.hidden, config.sum_bits
    top = IntLayerNorm.max_in_bits(n)
    if w > top:
        raise ValueError(
            f"residual_bits + guard_bits = {w} with hidden={n} cannot hold the variance "
            f"N*S2 - S1**2 in 62 bits; at most {top}")
    if n * 2 ** (w + RECIP_BITS + 1) >= 2**62:
        raise ValueError(f"residual_bits + guard_bits = {w} with hidden={n}: N*h*F exceeds "
                         "62 bits")
    if 2**MULT_BITS * config.residual_bound >= 2**62:
        raise ValueError(f"the residual sums up to {config.residual_bound} (hidden={n}, "
                         f"ffn_dim={config.ffn_dim}) overflow M * V in 62 bits")
    return config


def norm_widths(config: RTLConfig) -> dict[str, int]:
    """The unit's registers (bits): the golden ``IntLayerNorm.widths()`` of the config's row
    and input width (``n`` and ``acc`` at their bounds), and the fixed shifts."""
    import torch

    from golden_models.int_layernorm import (
        NORM_FRAC_BITS,
        RECIP_BITS,
        ROOT_BITS,
        IntLayerNorm,
    )

    n = config.hidden
    unit = IntLayerNorm(n, config.sum_bits, config.residual_bits,
                        torch.zeros(n, dtype=torch.int64), torch.zeros(n, dtype=torch.int64), 0)
    return {**unit.widths(), "frac": NORM_FRAC_BITS, "recip_shift": RECIP_BITS,
            "root_bits": ROOT_BITS}


def row_clocks(config: RTLConfig) -> int:
    """Clocks of a row at full rate (inputs every clock, no backpressure), from the first
    input pair to the last output beat: add ``N``, spread and scale 2, root 1 + 31 + 1,
    reciprocal 26 + 1, normalise ``N + 1``."""
    return 2 * config.hidden + 64


class AddStage(ConfigComponent):
    """``h = saturate(r + rshift_round(M*V + (B << (S - 8)), S), W + G)`` (combinational).

    Members
    -------
    r : In(signed(residual_bits))
    v : In(signed(residual_sum_width))
    mult, bias : In(the channel word's ``add_mult``, ``add_bias``)
    shift : In(6)
    h : Out(signed(sum_bits))
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        ch = norm_channel_layout(config)
        return {"r": In(signed(config.residual_bits)),
                "v": In(signed(config.residual_sum_width)),
                "mult": In(ch["add_mult"].shape), "bias": In(ch["add_bias"].shape),
                "shift": In(norm_config_layout(config)["add_shift"].shape),
                "h": Out(signed(config.sum_bits))}

    def elaborate(self, platform):
        from golden_models.residual import BIAS_FRAC_BITS

        m = Module()
        acc = Signal(signed(ACC_BITS), name="acc")
        lifted = (self.bias << (self.shift - BIAS_FRAC_BITS)[:len(self.shift)])[:ACC_BITS]
        m.d.comb += acc.eq(self.v * self.mult + lifted.as_signed())
        m.d.comb += self.h.eq(saturate(self.r + rshift_round(acc, self.shift),
                                       self._config.sum_bits))
        return m


class NormStage(ConfigComponent):
    """One normalised channel (combinational): ``D = N*h - S1``,
    ``n = rshift_round(D*F, 31 + P - f - k)``,
    ``r' = saturate(rshift_round(G*n + (B << (g + f - 8)), g + f), W)``.

    Members
    -------
    h : In(signed(sum_bits))
    s1 : In(signed(width of S1))
    recip : In(width of F)
    k : In(5)
    gain, bias : In(the channel word's ``gain``, ``bias``)
    gain_shift : In(6)
    r : Out(signed(residual_bits))
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        w = norm_widths(config)
        ch = norm_channel_layout(config)
        return {"h": In(signed(config.sum_bits)), "s1": In(signed(w["s1"])),
                "recip": In(w["recip"]), "k": In(5),
                "gain": In(ch["gain"].shape), "bias": In(ch["bias"].shape),
                "gain_shift": In(norm_config_layout(config)["gain_shift"].shape),
                "r": Out(signed(config.residual_bits))}

    def elaborate(self, platform):
        from golden_models.int_layernorm import BIAS_FRAC_BITS

        cfg = self._config
        w = norm_widths(cfg)
        m = Module()
        d = Signal(signed(w["centred"]), name="centred")
        norm = Signal(signed(w["norm"]), name="normalised")
        acc = Signal(signed(ACC_BITS), name="acc")
        frac = w["frac"]
        m.d.comb += [
            d.eq(cfg.hidden * self.h - self.s1),
            norm.eq(rshift_round(d * self.recip,
                                 (w["root_bits"] + w["recip_shift"] - frac - self.k)[:6])),
        ]
        lift = (self.gain_shift + (frac - BIAS_FRAC_BITS))[:7]
        m.d.comb += acc.eq(self.gain * norm + (self.bias << lift)[:ACC_BITS].as_signed())
        m.d.comb += self.r.eq(saturate(rshift_round(acc, (self.gain_shift + frac)[:7]),
                                       cfg.residual_bits))
        return m


class AddNorm(ConfigComponent):
    """The residual-add + LayerNorm unit (module docstring).

    Parameters
    ----------
    config : RTLConfig
        Uses ``hidden`` (the row), ``residual_bits``, ``guard_bits``, ``T`` (the codes),
        ``weight_bits``, ``ffn_dim`` (the sums' width) and ``sram_macro``.

    Members
    -------
    load : In(stream.Signature(norm_load_layout(config)))
        Channel words, thresholds and the config word; taken only while idle.
    r : In(stream.Signature(residual_layout(config)))
    v : In(stream.Signature(residual_sum_layout(config)))
        A row: ``N`` beats on each, in channel order; a pair is taken when both are valid.
    o : Out(stream.Signature(norm_out_layout(config)))
        ``N`` beats ``{r, q}``: the new stream and its codes, in channel order.
    busy : Out(1)
        A row is in progress.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`RTLConfig`.
    ValueError
        Its widths cannot hold the unit's range (:func:`check_units`).
    """

    def __init__(self, config: RTLConfig, *, src_loc_at: int = 0):
        check_units(config)
        super().__init__(config, src_loc_at=src_loc_at + 1)

    def _members(self, config: RTLConfig) -> dict[str, object]:
        return {
            "load": In(stream.Signature(norm_load_layout(config))),
            "r": In(stream.Signature(residual_layout(config))),
            "v": In(stream.Signature(residual_sum_layout(config))),
            "o": Out(stream.Signature(norm_out_layout(config))),
            "busy": Out(1),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        w = norm_widths(cfg)
        ch_layout = norm_channel_layout(cfg)
        m.submodules.channels = chan = SRAM(depth=cfg.hidden, width=ch_layout.size,
                                            macro=cfg.sram_macro)
        m.submodules.row = row = SRAM(depth=cfg.hidden, width=cfg.sum_bits,
                                      macro=cfg.sram_macro)
        m.submodules.add_stage = add = AddStage(cfg)
        m.submodules.norm_stage = norm = NormStage(cfg)
        m.submodules.root = root = IntSqrt(w["radicand"])
        m.submodules.recip = recip = Reciprocal(w["root_bits"] + w["recip_shift"],
                                                w["root_bits"], w["root_bits"] - 1)
        conf = Signal(norm_config_layout(cfg), name="config")
        word = ch_layout(chan.bus.rdata)
        s1 = Signal(signed(w["s1"]), name="s1")
        k = Signal(5, name="k")
        recip_q = Signal(w["recip"], name="recip_q")
        m.d.comb += [
            add.r.eq(self.r.payload.r), add.v.eq(self.v.payload.v), add.mult.eq(word.add_mult),
            add.bias.eq(word.add_bias), add.shift.eq(conf.add_shift),
            norm.h.eq(row.bus.rdata.as_signed()), norm.s1.eq(s1), norm.k.eq(k),
            norm.recip.eq(recip_q), norm.gain.eq(word.gain), norm.bias.eq(word.bias),
            norm.gain_shift.eq(conf.gain_shift), recip.d.eq(root.root),
        ]
        walks = []
        for p in range(NORM_CODES):
            m.submodules[f"walk{p}"] = walk = CodeWalk(cfg.T, signed(norm_theta_width(cfg)))
            m.d.comb += walk.v.eq(norm.r)
            walks.append(walk)
        self._phases(m, chan, row, add, root, recip, conf, s1, k, recip_q, walks)
        return m

    def _phases(self, m, chan, row, add, root, recip, conf, s1, k, recip_q, walks):
        """The row's phases: idle (load), add, spread, scale, root, reciprocal, normalise."""
        cfg = self._config
        n, T = cfg.hidden, cfg.T
        w = norm_widths(cfg)
        s2 = Signal(w["s2"], name="s2")
        spread = Signal(w["variance"], name="spread")
        idx = Signal(range(n + 1), name="idx")
        thetas = Array(Signal(signed(norm_theta_width(cfg)), name=f"theta{i}")
                       for i in range(NORM_CODES * (T - 1)))
        for p, walk in enumerate(walks):
            m.d.comb += [walk.theta[t].eq(thetas[p * (T - 1) + t]) for t in range(T - 1)]
        read = Signal(name="read")  # the SRAMs show the channel read at the last advance
        o_valid = Signal(name="o_valid")
        c = CodeSpace(T, POSITION_FAMILY["Q-proj. input"]).c  # the codes are c - tau
        both = self.r.valid & self.v.valid
        # the output payload is a register itself (its flip-flops drive the port)
        out = self.o.payload
        m.d.comb += [self.busy.eq(1), self.o.valid.eq(o_valid)]
        bl = bit_length(m, spread)
        with m.FSM(name="phase"):
            with m.State("IDLE"):
                m.d.comb += [self.busy.eq(0), self.load.ready.eq(1)]
                with m.If(self.load.valid):
                    self._load(m, chan, conf, thetas)
                with m.Elif(both):
                    m.d.comb += [chan.bus.addr.eq(0), chan.bus.ren.eq(1)]
                    m.d.sync += [idx.eq(0), s1.eq(0), s2.eq(0)]
                    m.next = "ADD"
            with m.State("ADD"):
                # the channel word of idx is on the SRAM's output; the next one is read
                m.d.comb += [self.r.ready.eq(both), self.v.ready.eq(both)]
                with m.If(both):
                    m.d.comb += [row.bus.addr.eq(idx), row.bus.wen.eq(1),
                                 row.bus.wdata.eq(add.h.as_unsigned()),
                                 chan.bus.addr.eq(idx + 1), chan.bus.ren.eq(idx + 1 < n)]
                    m.d.sync += [idx.eq(idx + 1), s1.eq(s1 + add.h), s2.eq(s2 + add.h * add.h)]
                    with m.If(idx == n - 1):
                        m.next = "SPREAD"
            with m.State("SPREAD"):
                m.d.sync += spread.eq(n * s2 - s1 * s1)
                m.next = "SCALE"
            with m.State("SCALE"):
                # U * 4**k has 61 or 62 bits; a constant row (U = 0) takes the root 2**30
                m.d.sync += k.eq(Mux(spread == 0, 0, (w["radicand"] - bl) >> 1))
                m.next = "ROOT"
            with m.State("ROOT"):
                m.d.comb += [root.u.eq(Mux(spread == 0, 1 << (w["radicand"] - 2),
                                           spread << (k << 1))),
                             root.start.eq(1)]
                m.next = "ROOT_WAIT"
            with m.State("ROOT_WAIT"):
                with m.If(root.done):
                    m.d.comb += recip.start.eq(1)
                    m.next = "RECIP"
            with m.State("RECIP"):
                with m.If(recip.done):
                    m.d.sync += [recip_q.eq(recip.q), idx.eq(0), read.eq(0)]
                    m.next = "NORM"
            with m.State("NORM"):
                # the read, the SRAMs' outputs and the output register move together, one
                # channel a clock unless the output is held
                advance = ~o_valid | self.o.ready
                with m.If(advance):
                    m.d.comb += [chan.bus.addr.eq(idx), chan.bus.ren.eq(idx < n),
                                 row.bus.addr.eq(idx), row.bus.ren.eq(idx < n)]
                    m.d.sync += [read.eq(idx < n), o_valid.eq(read), out.r.eq(walks[0].v),
                                 *(out.q[p].eq(c - walk.tau) for p, walk in enumerate(walks))]
                    with m.If(idx < n):
                        m.d.sync += idx.eq(idx + 1)
                    with m.Elif(~read):
                        m.next = "IDLE"

    def _load(self, m, chan, conf, thetas) -> None:
        """A load beat: a channel word into the channel SRAM, a threshold or the config."""
        ld = self.load.payload
        with m.If(ld.target == NORM_TARGETS["channels"]):
            m.d.comb += [chan.bus.addr.eq(ld.addr), chan.bus.wen.eq(1),
                         chan.bus.wdata.eq(ld.data)]
        with m.Elif(ld.target == NORM_TARGETS["thresholds"]):
            m.d.sync += thetas[ld.addr].eq(ld.data[:len(thetas[0])].as_signed())
        with m.Elif(ld.target == NORM_TARGETS["config"]):
            m.d.sync += conf.eq(ld.data[:len(conf.as_value())])



# -- constants, driver ---------------------------------------------------------------------------


def load_beats(config: RTLConfig, add, norm, thetas) -> list[tuple[int, int, int]]:
    """The ``load`` beats ``(target, addr, data)`` that program an :class:`AddNorm` with the
    golden residual add ``add`` (``golden_models.residual.ResidualAdd``), LayerNorm ``norm``
    (``golden_models.int_layernorm.IntLayerNorm``) and up to :data:`NORM_CODES` walk tables
    ``thetas`` (``T - 1`` thresholds each over the new stream; the others walk to the
    terminal code).

    Raises
    ------
    TypeError, ValueError
        A golden unit of another row, width or stream than the config's, or a constant that
        does not fit its field; the message names it.
    """
    from golden_models.int_layernorm import IntLayerNorm
    from golden_models.residual import ResidualAdd

    check_units(config)
    if not isinstance(add, ResidualAdd):
        raise TypeError(f"add must be a golden_models.residual.ResidualAdd, not {add!r}")
    if not isinstance(norm, IntLayerNorm):
        raise TypeError(f"norm must be a golden_models.int_layernorm.IntLayerNorm, not {norm!r}")
    n, T = config.hidden, config.T
    for what, have, want in (("add's channels", add.mult.numel(), n), ("norm's row", norm.n, n),
                             ("add's stream_bits", add.stream_bits, config.residual_bits),
                             ("add's sum_bits", add.sum_bits, config.sum_bits),
                             ("norm's in_bits", norm.in_bits, config.sum_bits),
                             ("norm's out_bits", norm.out_bits, config.residual_bits)):
        if have != want:
            raise ValueError(f"the {what} is {have}, the unit was generated for {want}")
    if add.acc_bound > config.residual_bound:
        raise ValueError(f"the add's sums reach {add.acc_bound}, the unit takes "
                         f"{config.residual_bound}")
    thetas = [[int(x) for x in table] for table in thetas]
    if len(thetas) > NORM_CODES or any(len(t) != T - 1 for t in thetas):
        raise ValueError(f"thetas must be at most {NORM_CODES} tables of T - 1 = {T - 1} "
                         f"thresholds, not {[len(t) for t in thetas]}")
    ch = norm_channel_layout(config)
    beats = []
    for j in range(n):
        beats.append((NORM_TARGETS["channels"], j, pack(ch, {
            "add_mult": int(add.mult[j]), "add_bias": int(add.bias[j]),
            "gain": int(norm.gain[j]), "bias": int(norm.bias[j])}, name=f"channel {j}")))
    lo, hi = -(1 << (config.residual_bits - 1)), (1 << (config.residual_bits - 1))
    for p in range(NORM_CODES):
        table = thetas[p] if p < len(thetas) else [hi] * (T - 1)
        for t, x in enumerate(table):
            # clamping to the stream's lo .. hi + 1 changes no comparison
            beats.append((NORM_TARGETS["thresholds"], p * (T - 1) + t, min(max(x, lo), hi)
                          & ((1 << norm_theta_width(config)) - 1)))
    beats.append((NORM_TARGETS["config"], 0, pack(norm_config_layout(config), {
        "add_shift": add.shift, "gain_shift": norm.gain_shift})))
    return beats






