"""The M-TTFS neuron tile: integrate one event per clock, then fire with a dynamic threshold.

The tile is the hardware form of :meth:`golden_models.IntegerLayer.run_events` for ``N`` output
neurons (DESIGN.md, "Hardware shape"; docs/rtl_tile.md):

- membranes start at the folded init values ``B`` read from the init SRAM;
- integrate: each input event ``(addr, tau)`` reads weight row ``addr`` and adds
  ``W[addr, j] * d`` with ``d = i_max_in - tau`` (= ``c - tau - mu_in``) to every membrane,
  one event per clock (add/subtract for 1-bit weights, multiply-accumulate otherwise);
- fire: for ``t = 0..T-1`` and each group of ``L`` comparator lanes, a not-yet-fired neuron
  fires when ``V >= theta[j][t]`` (threshold row read from SRAM), or unconditionally at
  ``t = T-1``; it is emitted as ``(j, t)`` unless ``t`` is in the output dead zone.

Walking ``t`` in the outer loop and the groups in the inner loop makes the output stream come
out in time order with ascending addresses within a step, the order of
:func:`golden_models.encode_events`, without any sorting buffer.
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from golden_models import IntegerLayer
from rtl_gen.driver import TileDriver, Window
from rtl_gen.layouts import (
    TARGETS,
    in_event_layout,
    init_row_layout,
    load_layout,
    out_event_layout,
    pack,
    theta_row_layout,
    tile_config_layout,
    weight_row_layout,
)
from rtl_gen.mask import transmitted
from rtl_gen.params import ConfigComponent, RTLConfig, check_config, counter_ports
from rtl_gen.simulation import check_probability
from rtl_gen.sram import SRAM

__all__ = [
    "NeuronTile",
    "WindowResult",
    "load_beats",
    "simulate_tile",
]

def popcount(value) -> object:
    """The number of set bits of ``value`` (an adder chain)."""
    total = Const(0, 1)
    for b in range(len(value)):
        total = total + value[b]
    return total


# -- building blocks shared with the dense tile (rtl_gen.dense) ---------------------------------


def tile_srams(m: Module, cfg: RTLConfig) -> tuple[SRAM, SRAM, SRAM]:
    """The weight, threshold and init SRAMs of a tile, as submodules of ``m``."""
    macro = cfg.sram_macro
    m.submodules.weights = wsram = SRAM(depth=cfg.n_in, width=cfg.weight_row_width,
                                        macro=macro)
    m.submodules.thresholds = tsram = SRAM(depth=cfg.theta_depth,
                                           width=cfg.theta_row_width, macro=macro)
    m.submodules.init = isram = SRAM(depth=cfg.groups, width=cfg.init_row_width, macro=macro)
    return wsram, tsram, isram


def membranes(cfg: RTLConfig):
    """Membranes ``v`` (padded to ``G*L`` lanes as ``v_pad``) and fired flags; padding lanes
    start (and stay) fired (``pad_mask``) so they never compare or emit."""
    N, L, G = cfg.tile_neurons, cfg.lanes, cfg.groups
    v = [Signal(signed(cfg.acc_width), name=f"v{j}") for j in range(N)]
    v_pad = v + [Const(0, signed(cfg.acc_width))] * (G * L - N)
    fired = Signal(G * L, name="fired")
    pad_mask = sum(1 << j for j in range(N, G * L))
    return v, v_pad, fired, pad_mask


def write_rows(m: Module, load, srams: tuple[SRAM, SRAM, SRAM]) -> None:
    """While ``load`` offers a beat: write its row into the SRAM its target names."""
    ld = load.payload
    for bus, target in zip((s.bus for s in srams), ("weights", "thresholds", "init"),
                           strict=True):
        m.d.comb += [
            bus.addr.eq(ld.addr),
            bus.wdata.eq(ld.data),
            bus.wen.eq(ld.target == TARGETS[target]),
        ]


def accumulate(m: Module, cfg: RTLConfig, wsram: SRAM, v, p_valid, operand) -> None:
    """When ``p_valid``: ``v[j] += W[row][j] * operand`` with the weight row read the clock
    before (add/subtract for 1-bit weights, a multiply otherwise)."""
    weight_row = weight_row_layout(cfg)(wsram.bus.rdata)
    with m.If(p_valid):
        for j in range(cfg.tile_neurons):
            w = weight_row[j]
            if cfg.weight_bits == 1:
                term = Mux(w, operand, -operand)
            else:
                term = w * operand
            m.d.sync += v[j].eq(v[j] + term)


def load_init(m: Module, cfg: RTLConfig, isram: SRAM, v, next_state: str) -> None:
    """The body of the state that reads init row ``g`` at clock ``g`` and loads group ``g`` into
    the membranes at clock ``g+1``, then goes to ``next_state``."""
    N, L, G = cfg.tile_neurons, cfg.lanes, cfg.groups
    init_idx = Signal(range(G + 1), name="init_idx")
    init_row = init_row_layout(cfg)(isram.bus.rdata)
    m.d.comb += [
        isram.bus.addr.eq(init_idx),
        isram.bus.ren.eq(init_idx < G),
    ]
    m.d.sync += init_idx.eq(init_idx + 1)
    for g in range(G):
        with m.If(init_idx == g + 1):
            for lane in range(L):
                j = g * L + lane
                if j < N:
                    m.d.sync += v[j].eq(init_row[lane])
    with m.If(init_idx == G):
        m.d.sync += init_idx.eq(0)
        m.next = next_state


def issue_threshold_read(m: Module, cfg: RTLConfig, tsram: SRAM, a_valid, a_t, a_g,
                         a_addr) -> None:
    """Stage A of the threshold walk: read the row of ``(a_t, a_g)``, step ``g`` inner and ``t``
    outer, stop after ``t = T-1`` (whose step compares nothing and reads no row)."""
    T, G = cfg.T, cfg.groups
    with m.If(a_valid):
        m.d.comb += [
            tsram.bus.addr.eq(a_addr),
            tsram.bus.ren.eq(a_t != T - 1),
        ]
        m.d.sync += a_addr.eq(a_addr + 1)
        with m.If(a_g == G - 1):
            m.d.sync += [a_g.eq(0), a_t.eq(a_t + 1)]
            with m.If(a_t == T - 1):
                m.d.sync += a_valid.eq(0)
        with m.Else():
            m.d.sync += a_g.eq(a_g + 1)


class NeuronTile(ConfigComponent):
    """``N`` M-TTFS neurons with weight, threshold and init SRAMs.

    Parameters
    ----------
    config : RTLConfig
        Uses ``T``, ``k``, ``i_max_in``, ``i_max_out`` (config register reset values),
        ``weight_bits``, ``n_in``, ``tile_neurons``, ``lanes`` and the derived widths.

    Members
    -------
    load : In(stream.Signature(load_layout(config)))
        SRAM rows and config registers; accepted only while idle.
    i : In(stream.Signature(in_event_layout(config)))
        Input events of a window, ended by a ``last`` marker beat.
    o : Out(stream.Signature(out_event_layout(config)))
        Output events in time order, then a ``last`` marker beat.
    busy : Out(1)
        A window is in progress.
    cnt_<name> : Out(width)
        Activity counters of the last window, ``config.tile_counters``.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`RTLConfig`.
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        return {
            "load": In(stream.Signature(load_layout(config))),
            "i": In(stream.Signature(in_event_layout(config))),
            "o": Out(stream.Signature(out_event_layout(config))),
            "busy": Out(1),
            **counter_ports(config.tile_counters),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        N, L, G, T = cfg.tile_neurons, cfg.lanes, cfg.groups, cfg.T
        tw = cfg.time_width

        wsram, tsram, isram = tile_srams(m, cfg)

        # config registers: reset to the elaboration values, rewritable through `load`
        i_max_in = Signal(tw, init=cfg.i_max_in)
        i_max_out = Signal(tw, init=cfg.i_max_out)
        k = Signal(tw, init=cfg.k)

        v, v_pad, fired, pad_mask = membranes(cfg)

        counters = {name: getattr(self, f"cnt_{name}") for name in cfg.tile_counters}

        def count(name, amount):
            m.d.sync += counters[name].eq(counters[name] + amount)

        # --- integrate datapath: the weight row arrives one clock after the event ---------------
        p_valid = Signal()
        p_d = Signal(signed(cfg.d_width))
        m.d.sync += p_valid.eq(0)
        accumulate(m, cfg, wsram, v, p_valid, p_d)

        # --- fire pipeline: A issues (t, g), B compares, C emits ---------------------------------
        a_valid = Signal()
        a_t = Signal(range(T))
        a_g = Signal(range(max(G, 2)))
        a_addr = Signal(range(max(cfg.theta_depth, 2)))
        b_valid = Signal()
        b_t = Signal(range(T))
        b_g = Signal(range(max(G, 2)))
        pend = Signal(L)
        c_t = Signal(range(T))
        c_g = Signal(range(max(G, 2)))

        lane_v = [Array([v_pad[g * L + lane] for g in range(G)])[b_g] for lane in range(L)]
        theta = theta_row_layout(cfg)(tsram.bus.rdata)
        active = Signal(L)
        cross = Signal(L)
        m.d.comb += active.eq(~fired.word_select(b_g, L))
        last_step = b_t == T - 1
        crossed = Cat(*[lane_v[lane] >= theta[lane] for lane in range(L)])
        m.d.comb += cross.eq(Mux(last_step, active, crossed & active))
        b_tx = Signal()
        m.d.comb += b_tx.eq(transmitted(b_t, i_max_out, k))

        # lowest pending lane (ascending address within a step)
        c_lane = Signal(range(max(L, 2)))
        for lane in reversed(range(L)):
            with m.If(pend[lane]):
                m.d.comb += c_lane.eq(lane)
        o_fire = Signal()
        m.d.comb += o_fire.eq(self.o.valid & self.o.ready)
        pend_rest = pend & (pend - 1)
        c_free = Signal()
        m.d.comb += c_free.eq((pend == 0) | (o_fire & (pend_rest == 0)))
        b_adv = Signal()
        m.d.comb += b_adv.eq(~b_valid | c_free)

        m.d.comb += self.busy.eq(1)

        with m.FSM(name="phase"):
            with m.State("IDLE"):
                m.d.comb += [
                    self.busy.eq(0),
                    self.load.ready.eq(1),
                ]
                ld = self.load.payload
                with m.If(self.load.valid):
                    write_rows(m, self.load, (wsram, tsram, isram))
                    with m.If(ld.target == TARGETS["config"]):
                        word = tile_config_layout(cfg)(ld.data[:cfg.config_width])
                        m.d.sync += [
                            i_max_in.eq(word.i_max_in),
                            i_max_out.eq(word.i_max_out),
                            k.eq(word.k),
                        ]
                with m.Elif(self.i.valid):
                    m.d.sync += [c.eq(0) for c in counters.values()]
                    m.d.sync += fired.eq(pad_mask)
                    m.next = "INIT"

            with m.State("INIT"):
                load_init(m, cfg, isram, v, "INTEGRATE")

            with m.State("INTEGRATE"):
                m.d.comb += self.i.ready.eq(1)
                ev = self.i.payload
                with m.If(self.i.valid):
                    with m.If(ev.last):
                        m.d.sync += [
                            a_valid.eq(1),
                            a_t.eq(0),
                            a_g.eq(0),
                            a_addr.eq(0),
                            b_valid.eq(0),
                            pend.eq(0),
                        ]
                        m.next = "FIRE"
                    with m.Else():
                        m.d.comb += [
                            wsram.bus.addr.eq(ev.addr),
                            wsram.bus.ren.eq(1),
                        ]
                        m.d.sync += [
                            p_valid.eq(1),
                            p_d.eq(i_max_in - ev.tau),
                        ]
                        count("events_in", 1)
                        count("weight_row_reads", 1)
                        count("accumulate_ops", N)

            with m.State("FIRE"):
                # C: emit the lowest pending lane
                m.d.comb += [
                    self.o.valid.eq(pend != 0),
                    self.o.payload.addr.eq(c_g * L + c_lane),
                    self.o.payload.t.eq(c_t),
                ]
                with m.If(o_fire):
                    m.d.sync += pend.eq(pend_rest)
                with m.If(b_adv):
                    # B -> C: compare results of (b_t, b_g) become pending events
                    with m.If(b_valid):
                        m.d.sync += [
                            fired.word_select(b_g, L).eq(fired.word_select(b_g, L) | cross),
                            pend.eq(Mux(b_tx, cross, 0)),
                            c_t.eq(b_t),
                            c_g.eq(b_g),
                        ]
                        with m.If(~last_step):
                            count("compare_ops", popcount(active))
                            count("threshold_reads", popcount(active))
                        with m.If(b_tx):
                            count("events_out", popcount(cross))
                        with m.Else():
                            count("events_suppressed", popcount(cross))
                    # A -> B: issue the threshold read of (a_t, a_g)
                    m.d.sync += [
                        b_valid.eq(a_valid),
                        b_t.eq(a_t),
                        b_g.eq(a_g),
                    ]
                    issue_threshold_read(m, cfg, tsram, a_valid, a_t, a_g, a_addr)
                with m.If(~a_valid & ~b_valid & ((pend == 0) | (o_fire & (pend_rest == 0)))):
                    m.next = "END"

            with m.State("END"):
                m.d.comb += [
                    self.o.valid.eq(1),
                    self.o.payload.last.eq(1),
                ]
                with m.If(self.o.ready):
                    m.next = "IDLE"

        return m


# -- SRAM images -------------------------------------------------------------------------------


def _fits(value: int, width: int, what: str) -> int:
    """``value`` if it fits ``width`` signed bits, else ``ValueError`` naming ``what``."""
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    if not lo <= value <= hi:
        raise ValueError(f"{what} = {value} does not fit {width} signed bits ({lo}..{hi})")
    return value


def load_beats(config: RTLConfig, layer: IntegerLayer) -> list[tuple[int, int, int]]:
    """The ``load`` stream beats ``(target, addr, data)`` that program a tile with ``layer``.

    Parameters
    ----------
    config : RTLConfig
    layer : golden_models.IntegerLayer
        ``n_out == config.tile_neurons``, ``n_in <= config.n_in``, ``weight_bits`` and ``T`` of
        both masks equal to the config's.

    Returns
    -------
    list of (int, int, int)
        Weight rows (one per input address), threshold rows (``t*G + g``), init rows (``g``),
        then one config beat (``i_max_in``, ``i_max_out``, ``k`` from the layer's masks).

    Raises
    ------
    TypeError, ValueError
        When the layer does not fit the tile; the message names the quantity.
    """
    check_config(config)
    if not isinstance(layer, IntegerLayer):
        raise TypeError(f"layer must be a golden_models.IntegerLayer, not {layer!r}")
    N, L, G, T = config.tile_neurons, config.lanes, config.groups, config.T
    if layer.n_out != N:
        raise ValueError(f"layer has {layer.n_out} outputs, the tile has {N} neurons")
    if layer.n_in > config.n_in:
        raise ValueError(f"layer has {layer.n_in} inputs, the tile has {config.n_in} rows")
    if layer.weight_bits != config.weight_bits:
        raise ValueError(
            f"layer has {layer.weight_bits}-bit weights, the tile {config.weight_bits}-bit")
    for name, mask in (("in_mask", layer.in_mask), ("out_mask", layer.out_mask)):
        if mask.T != T:
            raise ValueError(f"layer {name} has T={mask.T}, the tile T={T}")
    wb, tw, aw = config.weight_bits, config.theta_width, config.acc_width
    weight_row, theta_row = weight_row_layout(config), theta_row_layout(config)
    init_row = init_row_layout(config)
    beats = []
    weights = layer.weights.tolist()
    for i, row in enumerate(weights):
        values = [(1 if w > 0 else 0) if wb == 1 else _fits(int(w), wb, f"W[{i}][{j}]")
                  for j, w in enumerate(row)]
        beats.append((TARGETS["weights"], i, pack(weight_row, values)))
    bound = config.acc_bound
    theta = layer.theta.clamp(-bound, bound + 1).tolist()
    for t in range(T - 1):
        for g in range(G):
            # lanes past neuron N-1 stay 0
            values = [_fits(int(theta[j][t]), tw, f"theta[{j}][{t}]")
                      for j in range(g * L, min((g + 1) * L, N))]
            beats.append((TARGETS["thresholds"], t * G + g, pack(theta_row, values)))
    init = layer.init.tolist()
    for j, b in enumerate(init):
        if abs(b) > config.init_bound:
            raise ValueError(
                f"init B[{j}] = {b} exceeds init_bound {config.init_bound} "
                f"(n_in * w_max * max|q|), which keeps the accumulator from overflowing")
    for g in range(G):
        values = [_fits(int(init[j]), aw, f"B[{j}]") for j in range(g * L, min((g + 1) * L, N))]
        beats.append((TARGETS["init"], g, pack(init_row, values)))
    cfg_word = pack(tile_config_layout(config), {"i_max_in": layer.in_mask.i_max,
                                                 "i_max_out": layer.out_mask.i_max,
                                                 "k": layer.out_mask.k})
    beats.append((TARGETS["config"], 0, cfg_word))
    return beats


# -- simulation driver -------------------------------------------------------------------------


@dataclass(frozen=True)
class WindowResult:
    """What one simulated window produced.

    ``events`` are the ``(addr, t)`` output events in emission order; ``counters`` the
    ``cnt_*`` ports after the window; ``cycles`` the clock edge (counted from 1) of: the window's
    first input beat ``first_in``, its marker ``last_in``, the output marker ``last_out``.
    """

    events: list[tuple[int, int]]
    counters: dict[str, int]
    cycles: dict[str, int]


def simulate_tile(
    config: RTLConfig,
    windows: list[tuple[IntegerLayer, list[int], list[int]]],
    *,
    o_ready: float = 1.0,
    i_valid: float = 1.0,
    seed: int = 0,
    vcd: str | None = None,
) -> list[WindowResult]:
    """Run windows of input events through :class:`NeuronTile` in the Amaranth simulator.

    Parameters
    ----------
    config : RTLConfig
    windows : list of (layer, index, time)
        Each window's layer is loaded through the ``load`` port when it differs from the
        previous window's; then the events ``(index[e], time[e])`` and a marker are sent.
    o_ready, i_valid : float
        Probability that ``o.ready`` / ``i.valid`` is high on a clock (random backpressure and
        input bubbles), from a ``random.Random(seed)``.
    vcd : str, optional
        Write a waveform file.
    """
    check_probability("o_ready", o_ready)
    check_probability("i_valid", i_valid)
    runs, loaded = [], None
    for layer, index, time in windows:
        beats = [{"addr": int(a), "tau": int(t), "last": 0}
                 for a, t in zip(index, time, strict=True)]
        runs.append(Window(load_beats(config, layer) if layer is not loaded else None,
                           [*beats, {"addr": 0, "tau": 0, "last": 1}]))
        loaded = layer
    driver = TileDriver(NeuronTile(config), runs, config.tile_counters, o_ready=o_ready,
                        i_valid=i_valid, seed=seed)
    return [WindowResult(events=[(b["addr"], b["t"]) for b in r.output[:-1]],
                         counters=r.counters, cycles=r.cycles)
            for r in driver.run(vcd=vcd)]
