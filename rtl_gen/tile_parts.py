"""The sub-components the two tiles are built from, and the datapath that wires them.

:class:`rtl_gen.tile.NeuronTile` and :class:`rtl_gen.dense.DenseTile` differ only in how they
read an input beat and what they send (docs/rtl_tile.md, docs/rtl_dense.md); the rest is here:

- :class:`Membranes`: the ``N`` membrane registers. They take their init values, then add
  ``W[row][j] * operand`` one clock after an input beat (the clock its weight row is read);
- :class:`InitLoader`: a window's init phase, init row ``g`` read at its ``g``-th clock and
  loaded into membranes ``g*L .. g*L+L-1`` at clock ``g + 1``;
- :class:`ThresholdWalk`: the walk over the steps ``(t, g)``, ``t`` outer and ``g`` inner, in
  two stages: A reads the threshold row of a step, B holds the step whose row the SRAM shows;
- :class:`Comparator`: stage B's compare of group ``g``'s membranes with that row, and the
  fired flags (a neuron is compared until it crosses);
- :class:`EventEmitter` (the spiking tile's stage C): the crossing lanes of one step, sent as
  events lowest address first;
- :class:`SumEmitter`: the raw-sum mode's output stage (both tiles, ``RTLConfig.raw_sums``):
  every membrane sent in neuron order, then the window's marker.

:func:`tile_core` adds the three SRAMs and the first four parts to a tile, wired to each
other; :func:`write_rows` is the load path into the SRAMs. Each part has its own tests
(``tests/test_rtl_tile_parts.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out

from rtl_gen.layouts import (
    TARGETS,
    init_row_layout,
    out_event_layout,
    sum_out_layout,
    theta_row_layout,
    weight_row_layout,
)
from rtl_gen.params import ConfigComponent, RTLConfig, bits_for, check_config, index_width
from rtl_gen.sram import SRAM

__all__ = [
    "Comparator",
    "EventEmitter",
    "InitLoader",
    "Membranes",
    "SumEmitter",
    "ThresholdWalk",
    "TileCore",
    "counters",
    "init_signature",
    "popcount",
    "raw_sum_stage",
    "send_sums",
    "step_signature",
    "tile_core",
    "tile_srams",
    "write_rows",
]


def popcount(value) -> object:
    """The number of set bits of ``value`` (an adder chain)."""
    total = Const(0, 1)
    for b in range(len(value)):
        total = total + value[b]
    return total


def init_signature(config: RTLConfig) -> wiring.Signature:
    """Init values, from the :class:`InitLoader` to the :class:`Membranes`.

    Members
    -------
    load : Out(N)
        Bit ``j``: membrane ``j`` takes ``value[j]`` at this clock edge.
    value : Out(signed(acc_width)).array(N)
    """
    check_config(config)
    N = config.tile_neurons
    return wiring.Signature({
        "load": Out(N),
        "value": Out(signed(config.acc_width)).array(N),
    })


def step_signature(config: RTLConfig) -> wiring.Signature:
    """A step of the threshold walk, from the :class:`ThresholdWalk` to its consumers.

    Members
    -------
    valid : Out(1)
        Stage B holds a step: the threshold SRAM shows its row.
    t : Out(range(T))
    g : Out(range(max(G, 2)))
        The step: time ``t``, comparator group ``g``.
    last : Out(1)
        ``t = T-1``: no row was read, every neuron not yet fired fires.
    """
    check_config(config)
    return wiring.Signature({
        "valid": Out(1),
        "t": Out(range(config.T)),
        "g": Out(range(max(config.groups, 2))),
        "last": Out(1),
    })


class Membranes(ConfigComponent):
    """The ``N`` membranes: init values, then one accumulate per input beat.

    Parameters
    ----------
    config : RTLConfig
        Uses ``tile_neurons``, ``weight_bits`` and the derived widths.

    Members
    -------
    init : In(init_signature(config))
        Membrane ``j`` takes ``init.value[j]`` when ``init.load[j]`` is high (before any
        accumulate of the same clock).
    valid : In(1)
        An input beat this clock: its ``operand`` is kept for one clock, while its weight row is
        read from the weight SRAM.
    operand : In(signed(config.d_width))
        The beat's operand: ``d = i_max_in - tau`` (spiking tile) or the code ``q`` (dense tile).
    row : In(config.weight_row_width)
        The weight row of the previous clock's beat (the weight SRAM's ``rdata``).
    v : Out(signed(config.acc_width)).array(N)
        The membranes; one clock after a beat, ``v[j] += W[row][j] * operand`` (an add or a
        subtract for 1-bit weights, a multiply otherwise). ``acc_width`` holds every partial
        sum (docs/rtl_tile.md), so no membrane wraps.
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        return {
            "init": In(init_signature(config)),
            "valid": In(1),
            "operand": In(signed(config.d_width)),
            "row": In(config.weight_row_width),
            "v": Out(signed(config.acc_width)).array(config.tile_neurons),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        # the operand waits one clock for its weight row (a synchronous SRAM read)
        p_valid = Signal()
        p_operand = Signal(signed(cfg.d_width))
        m.d.sync += [p_valid.eq(self.valid), p_operand.eq(self.operand)]
        weights = weight_row_layout(cfg)(self.row)
        for j in range(cfg.tile_neurons):
            v = Signal(signed(cfg.acc_width), name=f"v{j}")
            w = weights[j]
            term = Mux(w, p_operand, -p_operand) if cfg.weight_bits == 1 else w * p_operand
            with m.If(self.init.load[j]):
                m.d.sync += v.eq(self.init.value[j])
            with m.Elif(p_valid):
                m.d.sync += v.eq(v + term)
            m.d.comb += self.v[j].eq(v)
        return m


class InitLoader(ConfigComponent):
    """A window's init phase: the ``G`` init rows read and handed to the membranes.

    While ``en`` is high the loader reads init row ``g`` at its ``g``-th clock (counted from 0)
    and hands group ``g``'s values to the membranes at clock ``g + 1``; ``done`` is high at clock
    ``G``, after which the loader is back at its start (``G + 1`` clocks in all).

    Parameters
    ----------
    config : RTLConfig
        Uses ``tile_neurons``, ``lanes`` and the derived widths.

    Members
    -------
    en : In(1)
        The tile is in its init phase.
    addr : Out(index_width(G))
    ren : Out(1)
        The init SRAM's read port (``addr`` is 0 outside the init phase).
    row : In(config.init_row_width)
        The init row read the clock before (the init SRAM's ``rdata``).
    init : Out(init_signature(config))
    done : Out(1)
        The last group is loaded at this clock edge.
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        return {
            "en": In(1),
            "addr": Out(index_width(config.groups)),
            "ren": Out(1),
            "row": In(config.init_row_width),
            "init": Out(init_signature(config)),
            "done": Out(1),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        G = cfg.groups
        idx = Signal(range(G + 1), name="init_idx")
        row = init_row_layout(cfg)(self.row)
        m.d.comb += [self.addr.eq(idx), self.ren.eq(self.en & (idx < G))]
        with m.If(self.en):
            m.d.sync += idx.eq(idx + 1)
            with m.If(idx == G):
                m.d.sync += idx.eq(0)
                m.d.comb += self.done.eq(1)
        for j in range(cfg.tile_neurons):
            g, lane = divmod(j, cfg.lanes)
            m.d.comb += [
                self.init.value[j].eq(row[lane]),
                self.init.load[j].eq(self.en & (idx == g + 1)),
            ]
        return m


class ThresholdWalk(ConfigComponent):
    """The walk over the steps ``(t, g)`` of the fire (or quantize) phase, in two stages.

    Stage A holds the next step to read; when the walk advances it reads that step's threshold
    row (row ``t*G + g``; none at ``t = T-1``, whose step compares nothing) and hands the step to
    stage B, so that B's step and its row arrive together. ``g`` steps inner and ``t`` outer;
    after ``(T-1, G-1)`` stage A is empty.

    Parameters
    ----------
    config : RTLConfig
        Uses ``T``, ``tile_neurons``, ``lanes``.

    Members
    -------
    start : In(1)
        Start a walk: step ``(0, 0)`` in stage A, stage B empty.
    advance : In(1)
        Both stages move on at this clock edge (stage B's step is handed on).
    addr : Out(index_width(theta_depth))
    ren : Out(1)
        The threshold SRAM's read port (0 unless the walk advances with a step in stage A).
    issuing : Out(1)
        Stage A holds a step: rows are left to read.
    step : Out(step_signature(config))
        Stage B.
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        return {
            "start": In(1),
            "advance": In(1),
            "addr": Out(index_width(config.theta_depth)),
            "ren": Out(1),
            "issuing": Out(1),
            "step": Out(step_signature(config)),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        T, G = cfg.T, cfg.groups
        a_valid = Signal()
        a_t = Signal(range(T))
        a_g = Signal(range(max(G, 2)))
        a_addr = Signal(range(max(cfg.theta_depth, 2)))
        b = self.step
        m.d.comb += [self.issuing.eq(a_valid), b.last.eq(b.t == T - 1)]
        with m.If(self.start):
            m.d.sync += [a_valid.eq(1), a_t.eq(0), a_g.eq(0), a_addr.eq(0), b.valid.eq(0)]
        with m.Elif(self.advance):
            m.d.sync += [b.valid.eq(a_valid), b.t.eq(a_t), b.g.eq(a_g)]
            with m.If(a_valid):
                m.d.comb += [self.addr.eq(a_addr), self.ren.eq(a_t != T - 1)]
                m.d.sync += a_addr.eq(a_addr + 1)
                with m.If(a_g == G - 1):
                    m.d.sync += [a_g.eq(0), a_t.eq(a_t + 1)]
                    with m.If(a_t == T - 1):
                        m.d.sync += a_valid.eq(0)
                with m.Else():
                    m.d.sync += a_g.eq(a_g + 1)
        return m


class Comparator(ConfigComponent):
    """Stage B's compare: the ``L`` membranes of group ``g`` against their threshold row.

    A lane is active while its neuron has not fired. An active lane crosses when ``V >= theta``,
    and at the last step (``t = T-1``) unconditionally, which gives ``T-1`` to a neuron that never
    crossed. The lanes past neuron ``N-1`` of a partial last group start fired, so they are never
    active.

    Parameters
    ----------
    config : RTLConfig
        Uses ``tile_neurons``, ``lanes`` and the derived widths.

    Members
    -------
    step : In(step_signature(config))
        The step (``g`` and ``last`` are used).
    v : In(signed(config.acc_width)).array(N)
        The membranes.
    theta : In(config.theta_row_width)
        The step's threshold row (the threshold SRAM's ``rdata``).
    clear : In(1)
        A window starts: no neuron has fired.
    commit : In(1)
        The step is handed on: its crossing lanes are marked fired at this clock edge.
    active, cross : Out(L)
    n_active, n_cross : Out(bits_for(L))
        Their set bits (the compares of the step, the neurons that fire).
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        L = config.lanes
        return {
            "step": In(step_signature(config)),
            "v": In(signed(config.acc_width)).array(config.tile_neurons),
            "theta": In(config.theta_row_width),
            "clear": In(1),
            "commit": In(1),
            "active": Out(L),
            "cross": Out(L),
            "n_active": Out(bits_for(L)),
            "n_cross": Out(bits_for(L)),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        N, L, G = cfg.tile_neurons, cfg.lanes, cfg.groups
        v_pad = [*self.v, *[Const(0, signed(cfg.acc_width))] * (G * L - N)]
        fired = Signal(G * L, name="fired")
        if G == 1:
            # nothing to select: g is then always 0, which a synthesis that keeps this module
            # apart from the walk (the whole-system area report) cannot know
            lane_v, group = v_pad, fired
        else:
            lane_v = [Array([v_pad[h * L + lane] for h in range(G)])[self.step.g]
                      for lane in range(L)]
            group = fired.word_select(self.step.g, L)
        theta = theta_row_layout(cfg)(self.theta)
        crossed = Cat(*[lane_v[lane] >= theta[lane] for lane in range(L)])
        m.d.comb += [
            self.active.eq(~group),
            self.cross.eq(Mux(self.step.last, self.active, crossed & self.active)),
            self.n_active.eq(popcount(self.active)),
            self.n_cross.eq(popcount(self.cross)),
        ]
        with m.If(self.clear):
            m.d.sync += fired.eq(sum(1 << j for j in range(N, G * L)))
        with m.Elif(self.commit):
            m.d.sync += group.eq(group | self.cross)
        return m


class EventEmitter(ConfigComponent):
    """Stage C of the spiking tile: one step's lanes to emit, sent lowest lane first.

    Parameters
    ----------
    config : RTLConfig
        Uses ``T``, ``tile_neurons``, ``lanes``.

    Members
    -------
    push : In(1)
        Take ``lanes`` of step ``(t, g)`` at this clock edge (only while ``free``); they replace
        what is pending.
    lanes : In(L)
    t : In(range(T))
    g : In(range(max(G, 2)))
    o : Out(stream.Signature(out_event_layout(config)))
        One event ``(g*L + lane, t)`` per pending lane, ascending; ``last`` stays 0.
    free : Out(1)
        Nothing is pending after this clock edge unless pushed: nothing is pending, or the last
        pending lane leaves now.
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        return {
            "push": In(1),
            "lanes": In(config.lanes),
            "t": In(range(config.T)),
            "g": In(range(max(config.groups, 2))),
            "o": Out(stream.Signature(out_event_layout(config))),
            "free": Out(1),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        L = cfg.lanes
        pend = Signal(L)
        t = Signal(range(cfg.T))
        g = Signal(range(max(cfg.groups, 2)))
        lane = Signal(range(max(L, 2)))  # the lowest pending lane
        for n in reversed(range(L)):
            with m.If(pend[n]):
                m.d.comb += lane.eq(n)
        rest = pend & (pend - 1)
        fire = self.o.valid & self.o.ready
        m.d.comb += [
            self.o.valid.eq(pend != 0),
            self.o.payload.addr.eq(g * L + lane),
            self.o.payload.t.eq(t),
            self.free.eq((pend == 0) | (fire & (rest == 0))),
        ]
        with m.If(fire):
            m.d.sync += pend.eq(rest)
        with m.If(self.push):
            m.d.sync += [pend.eq(self.lanes), t.eq(self.t), g.eq(self.g)]
        return m


class SumEmitter(ConfigComponent):
    """The raw-sum output stage: the ``N`` membranes, one beat each in neuron order, then the
    window's marker (``golden_models.IntegerLayer.run_sums``, ``golden_models.dense
    .run_dense_sums``).

    The membranes hold still while the stage sends (no input is taken), so each beat's payload
    is the membrane itself, selected by the beat's address.

    Parameters
    ----------
    config : RTLConfig
        Uses ``tile_neurons`` and the accumulator width.

    Members
    -------
    start : In(1)
        Start sending (the window's last input beat was taken).
    v : In(signed(config.acc_width)).array(N)
    o : Out(stream.Signature(sum_out_layout(config)))
        ``{addr: j, sum: v[j]}`` for ``j = 0..N-1``, then ``{last: 1}``.
    sent : Out(1)
        A sum (not the marker) is taken at this clock edge.
    done : Out(1)
        The marker is taken at this clock edge.
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        return {
            "start": In(1),
            "v": In(signed(config.acc_width)).array(config.tile_neurons),
            "o": Out(stream.Signature(sum_out_layout(config))),
            "sent": Out(1),
            "done": Out(1),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        N = cfg.tile_neurons
        active = Signal(name="active")
        idx = Signal(range(N + 1), name="idx")
        take = self.o.valid & self.o.ready
        marker = idx == N
        m.d.comb += [
            self.o.valid.eq(active),
            # the marker is {last: 1} and nothing else (not the address past the last neuron)
            self.o.payload.addr.eq(Mux(marker, 0, idx)),
            self.o.payload.sum.eq(Mux(marker, 0, Array(self.v)[idx])),
            self.o.payload.last.eq(marker),
            self.sent.eq(take & (idx != N)),
            self.done.eq(take & (idx == N)),
        ]
        with m.If(self.start):
            m.d.sync += [active.eq(1), idx.eq(0)]
        with m.Elif(take):
            m.d.sync += idx.eq(idx + 1)
            with m.If(idx == N):
                m.d.sync += active.eq(0)
        return m


# -- the datapath both tiles share ---------------------------------------------------------------


@dataclass(frozen=True)
class TileCore:
    """The SRAMs and shared parts of one tile (:func:`tile_core`)."""

    weights: SRAM
    thresholds: SRAM
    init: SRAM
    membranes: Membranes
    loader: InitLoader
    walk: ThresholdWalk
    compare: Comparator

    @property
    def srams(self) -> tuple[SRAM, SRAM, SRAM]:
        return self.weights, self.thresholds, self.init


def tile_srams(m: Module, cfg: RTLConfig) -> tuple[SRAM, SRAM, SRAM]:
    """The weight, threshold and init SRAMs of a tile, as submodules of ``m``."""
    macro = cfg.sram_macro
    m.submodules.weights = wsram = SRAM(depth=cfg.n_in, width=cfg.weight_row_width,
                                        macro=macro)
    m.submodules.thresholds = tsram = SRAM(depth=cfg.theta_depth,
                                           width=cfg.theta_row_width, macro=macro)
    m.submodules.init = isram = SRAM(depth=cfg.groups, width=cfg.init_row_width, macro=macro)
    return wsram, tsram, isram


def tile_core(m: Module, cfg: RTLConfig) -> TileCore:
    """The SRAMs, :class:`Membranes`, :class:`InitLoader`, :class:`ThresholdWalk` and
    :class:`Comparator` of a tile, as submodules of ``m``, wired to each other.

    The tile drives what depends on its phase: ``loader.en``, ``membranes.valid`` and
    ``operand`` with the weight SRAM's read, ``walk.start`` and ``walk.advance``,
    ``compare.clear``, and the SRAM writes (:func:`write_rows`, which takes precedence over the
    parts' reads when called after this). A step's crossing lanes are marked fired when the walk
    hands it on.
    """
    wsram, tsram, isram = tile_srams(m, cfg)
    m.submodules.membranes = membranes = Membranes(cfg)
    m.submodules.init_loader = loader = InitLoader(cfg)
    m.submodules.walk = walk = ThresholdWalk(cfg)
    m.submodules.compare = compare = Comparator(cfg)
    wiring.connect(m, loader.init, membranes.init)
    wiring.connect(m, walk.step, compare.step)
    m.d.comb += [
        membranes.row.eq(wsram.bus.rdata),
        isram.bus.addr.eq(loader.addr),
        isram.bus.ren.eq(loader.ren),
        loader.row.eq(isram.bus.rdata),
        tsram.bus.addr.eq(walk.addr),
        tsram.bus.ren.eq(walk.ren),
        compare.theta.eq(tsram.bus.rdata),
        compare.commit.eq(walk.step.valid & walk.advance),
        *(c.eq(v) for c, v in zip(compare.v, membranes.v, strict=True)),
    ]
    return TileCore(wsram, tsram, isram, membranes, loader, walk, compare)


def counters(m: Module, component, names) -> tuple[object, list]:
    """The activity counters ``cnt_<name>`` of ``component``, for each of ``names``.

    Returns ``count(name, amount)``, which adds ``amount`` to counter ``name`` at the clock
    edge, and the statements that clear every counter (a window starts).
    """
    ports = {name: getattr(component, f"cnt_{name}") for name in names}

    def count(name, amount):
        m.d.sync += ports[name].eq(ports[name] + amount)

    return count, [port.eq(0) for port in ports.values()]


def write_rows(m: Module, load, core: TileCore) -> None:
    """While ``load`` offers a beat: write its row into the SRAM its target names."""
    ld = load.payload
    for bus, target in zip((s.bus for s in core.srams), ("weights", "thresholds", "init"),
                           strict=True):
        m.d.comb += [
            bus.addr.eq(ld.addr),
            bus.wdata.eq(ld.data),
            bus.wen.eq(ld.target == TARGETS[target]),
        ]


def raw_sum_stage(m: Module, cfg: RTLConfig, core: TileCore) -> SumEmitter:
    """The :class:`SumEmitter` of a tile in raw-sum mode, as submodule ``sums`` of ``m``, fed
    by the core's membranes."""
    m.submodules.sums = sums = SumEmitter(cfg)
    m.d.comb += [sums.v[j].eq(core.membranes.v[j]) for j in range(cfg.tile_neurons)]
    return sums


def send_sums(m: Module, tile, sums: SumEmitter, count_sent) -> None:
    """The raw-sum phase of a tile's FSM (inside its ``SUMS`` state): ``sums`` drives the
    tile's ``o``; ``count_sent()`` counts a sum sent; the marker taken ends the window."""
    wiring.connect(m, sums.o, wiring.flipped(tile.o))
    with m.If(sums.sent):
        count_sent()
    with m.If(sums.done):
        m.next = "IDLE"
