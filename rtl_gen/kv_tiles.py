"""Tiles with run-time weights: the query x key and the probability x value products of a head.

A neuron tile's weights are loaded before a run; here they are written during a sequence, from
the stream of key (or value) codes another tile produces (docs/rtl_attention.md):

- :class:`RuntimeWeights`: the weight memory, written from a code stream, in the row layout the
  product needs (``"columns"``: a key vector fills one lane, a neuron per key slot, across the
  rows of the head dimensions; ``"rows"``: a value vector fills the row of its key slot), with
  a written bit per (slot, group of codes) that clears when a sequence starts. A row read
  returns 0 in every lane not written in the current sequence, so no read can return a code of
  the previous sequence; the folded init ``mu * sum`` of every neuron is accumulated as the
  codes are written; ``complete`` says every slot of the sequence is written;
- :class:`ScoreTile`: query events x keys, raw scores out (no walk): the softmax unit's input;
- :class:`ContextTile`: probability events x values, the ``attn_out_in`` walk over one shared
  table, masked events out.

Both are built from the parts of :mod:`rtl_gen.tile_parts` on the tile geometry of
:meth:`rtl_gen.attn_params.AttentionConfig.score_tile` / ``context_tile``, and read their
configuration (masks, the sequence, the table) from the attention path's ``load`` stream
(:class:`NodeRegisters`).
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal, signed
from amaranth.lib import data, stream, wiring
from amaranth.lib.memory import Memory
from amaranth.lib.wiring import In, Out

from golden_models.counters import (
    CONTEXT_COUNTER_NAMES,
    DENSE_CONTEXT_COUNTER_NAMES,
    DENSE_SCORE_COUNTER_NAMES,
    SCORE_COUNTER_NAMES,
)
from rtl_gen.attn_params import (
    ATTN_TARGETS,
    AttentionConfig,
    attn_config_layout,
    attn_load_layout,
    kv_write_layout,
    score_layout,
    sequence_layout,
)
from rtl_gen.layouts import event_layout, out_event_layout
from rtl_gen.mask import transmitted
from rtl_gen.params import bits_for, counter_ports, index_width
from rtl_gen.tile_parts import Comparator, EventEmitter, Membranes, ThresholdWalk, counters

__all__ = [
    "ORIENTATIONS",
    "ContextTile",
    "DenseContextTile",
    "NodeRegisters",
    "RuntimeWeights",
    "ScoreTile",
    "context_counters",
    "dense_query_layout",
    "score_counters",
]

#: How a code stream fills the weight memory: ``"columns"`` (key x query: a key vector is one
#: lane across the rows), ``"rows"`` (probability x value: a value vector is one row).
ORIENTATIONS = ("columns", "rows")


def _check_attention(cfg: object) -> AttentionConfig:
    if not isinstance(cfg, AttentionConfig):
        raise TypeError(f"config must be an AttentionConfig, not {cfg!r}")
    return cfg


def score_counters(cfg: AttentionConfig, dense: bool = False) -> dict[str, int]:
    """Counter name -> width of the query x key tile (:data:`SCORE_COUNTER_NAMES` order; the
    dense design's :data:`DENSE_SCORE_COUNTER_NAMES`)."""
    e, s = cfg.head_dim, cfg.seq_max
    widths = {"events_in": bits_for(e), "codes_in": bits_for(e),
              "weight_row_reads": bits_for(e), "accumulate_ops": bits_for(e * s),
              "mac_ops": bits_for(e * s), "scores_out": bits_for(s),
              "key_writes": bits_for(s * cfg.head_dim)}
    names = DENSE_SCORE_COUNTER_NAMES if dense else SCORE_COUNTER_NAMES
    return {n: widths[n] for n in names}


def context_counters(cfg: AttentionConfig, dense: bool = False) -> dict[str, int]:
    """Counter name -> width of the probability x value tile (:data:`CONTEXT_COUNTER_NAMES`;
    the dense design's :data:`DENSE_CONTEXT_COUNTER_NAMES`)."""
    s, d = cfg.seq_max, cfg.head_dim
    compares = bits_for(d * (cfg.T - 1))
    widths = {"events_in": bits_for(s), "codes_in": bits_for(s),
              "weight_row_reads": bits_for(s), "accumulate_ops": bits_for(s * d),
              "mac_ops": bits_for(s * d), "compare_ops": compares,
              "threshold_reads": compares, "events_out": bits_for(d), "codes_out": bits_for(d),
              "events_suppressed": bits_for(d), "value_writes": bits_for(s * d)}
    names = DENSE_CONTEXT_COUNTER_NAMES if dense else CONTEXT_COUNTER_NAMES
    return {n: widths[n] for n in names}


class NodeRegisters(wiring.Component):
    """The configuration a node of the attention path keeps, written from its ``load`` stream.

    Parameters
    ----------
    config : AttentionConfig
    table : {"prob_table", "ctx_table"} or None
        The walk table the node keeps, if any (``T - 1`` thresholds of ``width`` bits).
    width : int
        Bits of a threshold (signed for ``ctx_table``, unsigned for ``prob_table``).

    Members
    -------
    load : In(stream.Signature(attn_load_layout(config)))
        Only the beat's fields; :attr:`take` says when the node takes it.
    take : In(1)
        The node takes the beat on ``load`` this clock.
    conf : Out(attn_config_layout(config))
    seq : Out(sequence_layout(config))
    start : Out(1)
        A sequence starts at this clock edge (its beat is taken).
    theta : Out(width).array(T - 1)
        The table (0 before it is written).
    """

    def __init__(self, config: AttentionConfig, table: str | None = None, width: int = 1):
        self._cfg = _check_attention(config)
        if table not in (None, "prob_table", "ctx_table"):
            raise ValueError(f"table must be 'prob_table', 'ctx_table' or None, not {table!r}")
        self._table = table
        shape = signed(width) if table == "ctx_table" else width
        super().__init__({
            "load": In(stream.Signature(attn_load_layout(config))),
            "take": In(1),
            "conf": Out(attn_config_layout(config)),
            "seq": Out(sequence_layout(config)),
            "start": Out(1),
            "theta": Out(shape).array(max(config.T - 1, 1)),
        })

    def elaborate(self, platform):
        m = Module()
        ld = self.load.payload
        go = self.take
        with m.If(go & (ld.target == ATTN_TARGETS["config"])):
            m.d.sync += self.conf.eq(ld.data[:len(self.conf.as_value())])
        with m.If(go & (ld.target == ATTN_TARGETS["sequence"])):
            m.d.sync += self.seq.eq(ld.data[:len(self.seq.as_value())])
            m.d.comb += self.start.eq(1)
        if self._table is not None:
            for t, reg in enumerate(self.theta):
                with m.If(go & (ld.target == ATTN_TARGETS[self._table]) & (ld.addr == t)):
                    m.d.sync += reg.eq(ld.data[:len(reg)])
        return m


class RuntimeWeights(wiring.Component):
    """The weight memory of a run-time-weight tile (module docstring).

    Parameters
    ----------
    config : AttentionConfig
    orientation : {"columns", "rows"}
        ``"columns"``: ``head_dim`` rows of ``seq_max`` lanes (query x key); ``"rows"``:
        ``seq_max`` rows of ``head_dim`` lanes (probability x value).
    acc_width : int
        Width of the folded init values (the tile's accumulator).

    Members
    -------
    w : In(stream.Signature(kv_write_layout(config)))
        Codes to write: slot ``s``, group ``g`` (codes ``g*kv_pack ..``). Taken while
        ``accept`` (and, for ``"columns"``, no earlier beat is still being written: one row per
        clock); a beat of a slot ``>= length`` or of a (slot, group) already written in this
        sequence is taken and ignored.
    accept : In(1)
        Writes may go on (the tile is between windows).
    start : In(1)
        A sequence starts: every written bit, init value and the write count clear.
    length : In(bits_for(seq_max))
        The sequence's key slots.
    mu : In(signed(time_width + 1))
        The consuming input's silent integer: each code written adds ``mu * code`` to the init
        value of its neuron.
    addr, ren : In
        Read port: ``rdata`` shows row ``addr`` after the clock edge where ``ren`` is high.
    rdata : Out(rows' width)
        The row, every lane not written in the current sequence read as 0.
    init : Out(signed(acc_width)).array(neurons)
        ``mu * sum`` of the codes written to each neuron in this sequence.
    complete : Out(1)
        Every slot below ``length`` is written (all its groups).
    writes : Out(bits_for(seq_max * head_dim))
        Codes written since the sequence started.
    writing : Out(1)
        A ``"columns"`` beat is being written.
    """

    def __init__(self, config: AttentionConfig, orientation: str, acc_width: int):
        self._cfg = cfg = _check_attention(config)
        if orientation not in ORIENTATIONS:
            raise ValueError(f"orientation must be one of {ORIENTATIONS}, not {orientation!r}")
        self._orient = orientation
        self._acc = acc_width
        columns = orientation == "columns"
        self.rows = cfg.head_dim if columns else cfg.seq_max
        self.lanes = cfg.seq_max if columns else cfg.head_dim
        super().__init__({
            "w": In(stream.Signature(kv_write_layout(cfg))),
            "accept": In(1),
            "start": In(1),
            "length": In(bits_for(cfg.seq_max)),
            "mu": In(signed(cfg.time_width + 1)),
            "addr": In(index_width(self.rows)),
            "ren": In(1),
            "rdata": Out(self.lanes * cfg.code_bits),
            "init": Out(signed(acc_width)).array(self.lanes),
            "complete": Out(1),
            "writes": Out(bits_for(cfg.seq_max * cfg.head_dim)),
            "writing": Out(1),
        })

    def elaborate(self, platform):
        cfg, m = self._cfg, Module()
        bits, G = cfg.code_bits, cfg.kv_groups
        m.submodules.mem = mem = Memory(shape=self.lanes * bits, depth=self.rows, init=[])
        rd, wr = mem.read_port(), mem.write_port(granularity=bits)
        # written bit of (slot s, group g) at s * G + g: one flat register, so a slot's bits
        # are one part-select (a per-slot array would be a case statement per use)
        written = Signal(cfg.seq_max * G, name="written")
        init = [Signal(signed(self._acc), name=f"init{j}") for j in range(self.lanes)]
        m.d.comb += [rd.addr.eq(self.addr), rd.en.eq(self.ren),
                     *(o.eq(v) for o, v in zip(self.init, init, strict=True))]
        full = [written[s * G:(s + 1) * G].all() for s in range(cfg.seq_max)]
        m.d.comb += self.complete.eq(
            Cat(*(f | (s >= self.length) for s, f in enumerate(full))).all()
            & (self.length != 0))
        self._read_mask(m, rd, written)
        if self._orient == "columns":
            self._write_columns(m, wr, written, init)
        else:
            self._write_rows(m, wr, written, init)
        # a sequence's start (never in the same clock as a write beat: both come on ``load``)
        # clears what the writes set; last, so it takes precedence
        with m.If(self.start):
            m.d.sync += [written.eq(0), *(v.eq(0) for v in init), self.writes.eq(0)]
        return m

    def _read_mask(self, m, rd, written) -> None:
        """``rdata``: the row read, lanes not written in this sequence as 0."""
        cfg, bits, P = self._cfg, self._cfg.code_bits, self._cfg.kv_pack
        row = Signal(index_width(self.rows), name="row_read")  # the row rd.data shows
        with m.If(self.ren):
            m.d.sync += row.eq(self.addr)
        G = cfg.kv_groups
        keep = []
        if self._orient == "columns":  # lane = slot, the group of the row read
            group = Signal(range(max(G, 2)), name="group_read")
            m.d.comb += group.eq(row // P)
            for lane in range(self.lanes):
                bits_of = written[lane * G:(lane + 1) * G]
                keep.append(bits_of.bit_select(group, 1) if G > 1 else bits_of[0])
        else:  # row = slot, each lane's group
            slot_bits = Signal(G, name="slot_written")
            m.d.comb += slot_bits.eq(written.word_select(row, G))
            keep = [slot_bits[lane // P] for lane in range(self.lanes)]
        m.d.comb += self.rdata.eq(Cat(*(Mux(k, rd.data[lane * bits:(lane + 1) * bits], 0)
                                        for lane, k in enumerate(keep))))

    def _fresh(self, written):
        """The beat on ``w`` is to be written: its slot is in the sequence and its (slot, group)
        not yet written."""
        p = self.w.payload
        return (p.slot < self.length) & ~written.bit_select(p.slot * self._cfg.kv_groups
                                                            + p.group, 1)

    def _write_rows(self, m, wr, written, init) -> None:
        """A value beat: the lanes of its group in the row of its slot, in one clock."""
        cfg, P = self._cfg, self._cfg.kv_pack
        p = self.w.payload
        m.d.comb += self.w.ready.eq(self.accept)
        fresh = Signal(name="fresh")
        m.d.comb += fresh.eq(self.w.valid & self.accept & self._fresh(written))
        lanes = Signal(self.lanes, name="lane_en")
        m.d.comb += [
            wr.addr.eq(p.slot),
            wr.data.eq(Cat(*([p.codes.as_value()] * cfg.kv_groups))),
            lanes.eq(Mux(fresh, ((1 << P) - 1) << (p.group * P), 0)),
            wr.en.eq(lanes),
        ]
        with m.If(fresh):
            m.d.sync += [written.bit_select(p.slot * cfg.kv_groups + p.group, 1).eq(1),
                         self.writes.eq(self.writes + P)]
        prods = [Signal(signed(2 * cfg.code_bits + 2), name=f"mu_code{q}") for q in range(P)]
        m.d.comb += [prod.eq(self.mu * p.codes[q]) for q, prod in enumerate(prods)]
        for lane, v in enumerate(init):
            with m.If(lanes[lane]):
                m.d.sync += v.eq(v + prods[lane % P])

    def _write_columns(self, m, wr, written, init) -> None:
        """A key beat: its ``kv_pack`` codes into rows ``g*P ..`` of its slot's lane, one row
        per clock (the beat is held meanwhile)."""
        cfg, bits, P = self._cfg, self._cfg.code_bits, self._cfg.kv_pack
        hold = Signal(kv_write_layout(cfg), name="held")
        k = Signal(range(max(P + 1, 2)), name="code_idx")  # codes of the held beat still due
        busy = Signal(name="busy")
        m.d.comb += [busy.eq(k != 0), self.writing.eq(busy),
                     self.w.ready.eq(self.accept & ~busy)]
        p = self.w.payload
        with m.If(self.w.valid & self.accept & ~busy & self._fresh(written)):
            m.d.sync += [hold.eq(p), k.eq(P),
                         written.bit_select(p.slot * cfg.kv_groups + p.group, 1).eq(1)]
        idx = Signal(range(max(P, 2)), name="code_at")
        m.d.comb += idx.eq(P - k)
        code = Signal(signed(bits), name="code")
        m.d.comb += code.eq(Array(hold.codes)[idx] if P > 1 else hold.codes[0])
        with m.If(busy):
            m.d.comb += [wr.addr.eq(hold.group * P + idx),
                         wr.data.eq(Cat(*([code] * self.lanes))),
                         wr.en.eq(Const(1, self.lanes) << hold.slot)]
            m.d.sync += [k.eq(k - 1), self.writes.eq(self.writes + 1)]
            prod = Signal(signed(2 * bits + 2), name="mu_code")
            m.d.comb += prod.eq(self.mu * code)
            for lane, v in enumerate(init):
                with m.If(hold.slot == lane):
                    m.d.sync += v.eq(v + prod)


def dense_query_layout(cfg: AttentionConfig) -> data.StructLayout:
    """The dense design's query input: one code (two's complement), ``last`` (a marker)."""
    return data.StructLayout({"code": signed(cfg.time_width), "last": 1})


def _mu(m, space, i_max):
    """``mu = c - I_max`` of a mask register, signed."""
    cfg_mu = Signal(signed(len(i_max) + 2), name="mu")
    m.d.comb += cfg_mu.eq(space.c - i_max)
    return cfg_mu


class ScoreTile(wiring.Component):
    """The query x key tile of one head: query events in, raw scores out.

    Rows are the ``head_dim`` query dimensions, neurons the ``seq_max`` key slots, weights the
    key codes written at run time (:class:`RuntimeWeights`, ``"columns"``). A window: the
    membranes take the folded init ``mu_q * sum_d k[j][d]`` (one clock); each query event
    ``(d, tau)`` reads row ``d`` and adds ``k[j][d] * (i_max_q - tau)`` to every membrane (one
    event per clock); at the marker the ``length`` raw scores leave in slot order, then a
    marker.

    Members
    -------
    load : In(stream.Signature(attn_load_layout(config)))
        Configuration (targets ``config`` and ``sequence``) while idle, key writes (``key``)
        while idle; other targets are taken and ignored.
    i : In(stream.Signature(event_layout(dim_width, time_width, time="tau")))
        The head's query events ``(d, tau)``, then a marker. A window waits (``i.ready`` low)
        until every key of the sequence is written.
    o : Out(stream.Signature(score_layout(config)))
    busy : Out(1)
    complete : Out(1)
        Every key of the sequence is written.
    cnt_<name> : Out(width)
        :func:`score_counters`; ``key_writes`` counts since the sequence started.

    With ``dense``, the dense design's tile: ``i`` takes the head's ``d_k`` query codes
    ``{code, last}`` in dimension order (the address is a counter), each multiplies its key row
    (``mac_ops``), and the membranes start at 0 (no folded offset).
    """

    def __init__(self, config: AttentionConfig, *, dense: bool = False):
        self._cfg = cfg = _check_attention(config)
        self._tile = cfg.score_tile()
        self._dense = bool(dense)
        layout = (dense_query_layout(cfg) if dense
                  else event_layout(cfg.dim_width, cfg.time_width, time="tau"))
        super().__init__({
            "load": In(stream.Signature(attn_load_layout(cfg))),
            "i": In(stream.Signature(layout)),
            "o": Out(stream.Signature(score_layout(cfg))),
            "busy": Out(1),
            "complete": Out(1),
            **counter_ports(score_counters(cfg, dense)),
        })

    @property
    def config(self) -> AttentionConfig:
        return self._cfg

    def elaborate(self, platform):
        cfg, tile, m = self._cfg, self._tile, Module()
        m.submodules.registers = regs = NodeRegisters(cfg)
        m.submodules.weights = kv = RuntimeWeights(cfg, "columns", tile.acc_width)
        m.submodules.membranes = mem = Membranes(tile)
        dense = self._dense
        count, clear = counters(m, self, [n for n in score_counters(cfg, dense)
                                          if n != "key_writes"])
        ld = self.load.payload
        idle = Signal()
        m.d.comb += [
            regs.load.payload.eq(ld), kv.w.payload.eq(ld.data),
            kv.w.valid.eq(self.load.valid & (ld.target == ATTN_TARGETS["key"])),
            kv.accept.eq(idle), kv.start.eq(regs.start), kv.length.eq(regs.seq.length),
            # the dense design reads every code: no offset to fold
            kv.mu.eq(0 if dense else _mu(m, cfg.query_space, regs.conf.i_max_q)),
            mem.row.eq(kv.rdata), self.complete.eq(kv.complete),
            self.cnt_key_writes.eq(kv.writes),
        ]
        with m.If(ld.target == ATTN_TARGETS["key"]):
            m.d.comb += self.load.ready.eq(kv.w.ready)
        with m.Else():
            m.d.comb += self.load.ready.eq(idle & ~kv.writing)
        m.d.comb += regs.take.eq(self.load.valid & self.load.ready)
        slot = Signal(range(max(cfg.seq_max, 2)), name="slot")
        dim = Signal(range(max(cfg.head_dim + 1, 2)), name="dim")  # dense: the code's address
        v = Array(mem.v)
        m.d.comb += self.busy.eq(~idle)
        with m.FSM(name="phase"):
            with m.State("IDLE"):
                m.d.comb += idle.eq(1)
                with m.If(self.i.valid & kv.complete & ~kv.writing & ~self.load.valid):
                    m.d.sync += [*clear, dim.eq(0)]
                    m.d.comb += [mem.init.load.eq(-1),
                                 *(a.eq(b) for a, b in zip(mem.init.value, kv.init,
                                                           strict=True))]
                    m.next = "INTEGRATE"
            with m.State("INTEGRATE"):
                m.d.comb += self.i.ready.eq(1)
                ev = self.i.payload
                with m.If(self.i.valid):
                    with m.If(ev.last):
                        m.d.sync += slot.eq(0)
                        m.next = "SEND"
                    with m.Else():
                        self._integrate(m, kv, mem, regs, ev, dim, count)
            with m.State("SEND"):
                last = slot + 1 >= regs.seq.length
                m.d.comb += [self.o.valid.eq(1), self.o.payload.addr.eq(slot),
                             self.o.payload.score.eq(v[slot])]
                with m.If(self.o.ready):
                    count("scores_out", 1)
                    m.d.sync += slot.eq(slot + 1)
                    with m.If(last):
                        m.next = "MARK"
            with m.State("MARK"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.last.eq(1)]
                with m.If(self.o.ready):
                    m.next = "IDLE"
        return m


    def _integrate(self, m, kv, mem, regs, ev, dim, count) -> None:
        """One input beat: its key row read, the membranes updated one clock later."""
        if self._dense:  # a code: the address is the count of codes so far
            m.d.comb += [kv.addr.eq(dim), kv.ren.eq(1), mem.valid.eq(1),
                         mem.operand.eq(ev.code)]
            m.d.sync += dim.eq(dim + 1)
            count("codes_in", 1)
            count("weight_row_reads", 1)
            count("mac_ops", regs.seq.length)
        else:  # an event (d, tau): its centred value
            m.d.comb += [kv.addr.eq(ev.addr), kv.ren.eq(1), mem.valid.eq(1),
                         mem.operand.eq(regs.conf.i_max_q - ev.tau)]
            count("events_in", 1)
            count("weight_row_reads", 1)
            count("accumulate_ops", regs.seq.length)


class ContextTile(wiring.Component):
    """The probability x value tile of one head: ``attn_prob`` events in, ``attn_out_in``
    events out.

    Rows are the ``seq_max`` key slots, neurons the ``head_dim`` dimensions, weights the value
    codes written at run time (:class:`RuntimeWeights`, ``"rows"``). A window is the neuron
    tile's (docs/rtl_tile.md): init (the folded ``mu_p * sum_j v[j][d]``, one clock), one event
    per clock, then the threshold walk, here over the one ``attn_out_in`` table every neuron
    shares (registers, not an SRAM), masked events out in time order, then a marker.

    Members
    -------
    load : In(stream.Signature(attn_load_layout(config)))
        Configuration (``config``, ``ctx_table``, ``sequence``) and value writes (``value``)
        while idle.
    i : In(stream.Signature(event_layout(slot_width, time_width, time="tau")))
    o : Out(stream.Signature(out_event_layout(context_tile)))
    busy, complete : Out(1)
    cnt_<name> : Out(width)
        :func:`context_counters`; ``value_writes`` counts since the sequence started.
    """

    #: The dense design's counters (:class:`DenseContextTile`).
    DENSE = False

    def __init__(self, config: AttentionConfig):
        self._cfg = cfg = _check_attention(config)
        self._tile = cfg.context_tile()
        super().__init__({
            "load": In(stream.Signature(attn_load_layout(cfg))),
            "i": In(stream.Signature(event_layout(cfg.slot_width, cfg.time_width,
                                                  time="tau"))),
            "o": Out(stream.Signature(out_event_layout(self._tile))),
            "busy": Out(1),
            "complete": Out(1),
            **counter_ports(context_counters(cfg, dense=self.DENSE)),
        })

    @property
    def config(self) -> AttentionConfig:
        return self._cfg

    def elaborate(self, platform):
        cfg, tile, m = self._cfg, self._tile, Module()
        m.submodules.registers = regs = NodeRegisters(cfg, "ctx_table", cfg.ctx_theta_width)
        m.submodules.weights = kv = RuntimeWeights(cfg, "rows", tile.acc_width)
        m.submodules.membranes = mem = Membranes(tile)
        m.submodules.walk = walk = ThresholdWalk(tile)
        m.submodules.compare = compare = Comparator(tile)
        m.submodules.emit = emit = EventEmitter(tile)
        count, clear = counters(m, self, [n for n in context_counters(cfg)
                                          if n != "value_writes"])
        ld, step, conf = self.load.payload, walk.step, regs.conf
        idle = Signal()
        m.d.comb += [
            regs.load.payload.eq(ld), kv.w.payload.eq(ld.data),
            kv.w.valid.eq(self.load.valid & (ld.target == ATTN_TARGETS["value"])),
            kv.accept.eq(idle), kv.start.eq(regs.start), kv.length.eq(regs.seq.length),
            kv.mu.eq(_mu(m, cfg.prob_space, conf.i_max_p)),
            mem.row.eq(kv.rdata), self.complete.eq(kv.complete),
            self.cnt_value_writes.eq(kv.writes), self.busy.eq(~idle),
            self.load.ready.eq(idle), regs.take.eq(self.load.valid & idle),
        ]
        self._walk(m, walk, compare, emit, regs.theta, mem, conf, count)
        with m.FSM(name="phase"):
            with m.State("IDLE"):
                m.d.comb += idle.eq(1)
                with m.If(self.i.valid & kv.complete & ~self.load.valid):
                    m.d.sync += clear
                    m.d.comb += [compare.clear.eq(1), mem.init.load.eq(-1),
                                 *(a.eq(b) for a, b in zip(mem.init.value, kv.init,
                                                           strict=True))]
                    m.next = "INTEGRATE"
            with m.State("INTEGRATE"):
                m.d.comb += self.i.ready.eq(1)
                ev = self.i.payload
                with m.If(self.i.valid):
                    with m.If(ev.last):
                        m.d.comb += walk.start.eq(1)
                        m.next = "FIRE"
                    with m.Else():
                        m.d.comb += [kv.addr.eq(ev.addr), kv.ren.eq(1), mem.valid.eq(1),
                                     mem.operand.eq(conf.i_max_p - ev.tau)]
                        count("events_in", 1)
                        count("weight_row_reads", 1)
                        count("accumulate_ops", cfg.head_dim)
            with m.State("FIRE"):
                m.d.comb += [self.o.valid.eq(emit.o.valid), self.o.payload.eq(emit.o.payload),
                             emit.o.ready.eq(self.o.ready),
                             walk.advance.eq(~step.valid | emit.free)]
                with m.If(~walk.issuing & ~step.valid & emit.free):
                    m.next = "END"
            with m.State("END"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.last.eq(1)]
                with m.If(self.o.ready):
                    m.next = "IDLE"
        return m

    def _walk(self, m, walk, compare, emit, theta, mem, conf, count) -> None:
        """The fire walk over the shared table: every lane compares with ``theta[t]``; the
        crossing lanes go to the emitter unless ``t`` is in the ``attn_out_in`` dead zone."""
        tile = self._tile
        step = walk.step
        row = Signal(tile.theta_row_width, name="theta_row")
        t_row = Array(theta)[step.t.as_unsigned()] if tile.T > 2 else theta[0]
        m.d.comb += row.eq(Cat(*([t_row.as_signed()] * tile.lanes)))
        tx = Signal()
        wiring.connect(m, walk.step, compare.step)
        m.d.comb += [
            compare.theta.eq(row),
            compare.commit.eq(step.valid & walk.advance),
            *(c.eq(v) for c, v in zip(compare.v, mem.v, strict=True)),
            tx.eq(transmitted(step.t, conf.i_max_c, conf.k_c)),
            emit.push.eq(compare.commit), emit.lanes.eq(Mux(tx, compare.cross, 0)),
            emit.t.eq(step.t), emit.g.eq(step.g),
        ]
        with m.If(compare.commit):
            with m.If(~step.last):
                count("compare_ops", compare.n_active)
                count("threshold_reads", compare.n_active)
            with m.If(tx):
                count("events_out", compare.n_cross)
            with m.Else():
                count("events_suppressed", compare.n_cross)



class DenseContextTile(ContextTile):
    """The probability x value tile of the dense design: every probability code in, every
    output code out, the same run-time value memory.

    A window: membranes at 0 (no folded offset); each beat ``{addr = slot j, tau = code p, last}``
    reads value row ``j`` and adds ``v[j][d] * p`` (``mac_ops``); at the marker the walk over the
    shared ``attn_out_in`` table gives every neuron its code ``c - t`` (no mask), and the
    ``d_k`` codes leave in address order as ``{addr = d, t = code (two's complement), last}``,
    then a marker.

    Members
    -------
    load, i, o, busy, complete : as :class:`ContextTile`, whose constructor it shares (``i.tau``
        and ``o.t`` carry codes)
    cnt_<name> : Out(width)
        :func:`context_counters` of the dense design.
    """

    DENSE = True

    def elaborate(self, platform):
        cfg, tile, m = self._cfg, self._tile, Module()
        m.submodules.registers = regs = NodeRegisters(cfg, "ctx_table", cfg.ctx_theta_width)
        m.submodules.weights = kv = RuntimeWeights(cfg, "rows", tile.acc_width)
        m.submodules.membranes = mem = Membranes(tile)
        m.submodules.walk = walk = ThresholdWalk(tile)
        m.submodules.compare = compare = Comparator(tile)
        count, clear = counters(m, self, [n for n in context_counters(cfg, dense=True)
                                          if n != "value_writes"])
        ld, step = self.load.payload, walk.step
        idle = Signal()
        m.d.comb += [
            regs.load.payload.eq(ld), kv.w.payload.eq(ld.data),
            kv.w.valid.eq(self.load.valid & (ld.target == ATTN_TARGETS["value"])),
            kv.accept.eq(idle), kv.start.eq(regs.start), kv.length.eq(regs.seq.length),
            kv.mu.eq(0), mem.row.eq(kv.rdata), self.complete.eq(kv.complete),
            self.cnt_value_writes.eq(kv.writes), self.busy.eq(~idle),
            self.load.ready.eq(idle), regs.take.eq(self.load.valid & idle),
        ]
        codes = self._quantize(m, walk, compare, regs.theta, mem, count)
        d = Signal(range(max(cfg.head_dim, 2)), name="dim")
        with m.FSM(name="phase"):
            with m.State("IDLE"):
                m.d.comb += idle.eq(1)
                with m.If(self.i.valid & kv.complete & ~self.load.valid):
                    m.d.sync += clear
                    m.d.comb += [compare.clear.eq(1), mem.init.load.eq(-1)]
                    m.next = "INTEGRATE"
            with m.State("INTEGRATE"):
                m.d.comb += self.i.ready.eq(1)
                ev = self.i.payload
                with m.If(self.i.valid & ev.last):
                    m.d.comb += walk.start.eq(1)
                    m.next = "QUANTIZE"
                with m.Elif(self.i.valid):
                    m.d.comb += [kv.addr.eq(ev.addr), kv.ren.eq(1), mem.valid.eq(1),
                                 mem.operand.eq(ev.tau)]
                    count("codes_in", 1)
                    count("weight_row_reads", 1)
                    count("mac_ops", cfg.head_dim)
            with m.State("QUANTIZE"):
                m.d.comb += walk.advance.eq(1)
                with m.If(~walk.issuing & ~step.valid):
                    m.d.sync += d.eq(0)
                    m.next = "SEND"
            with m.State("SEND"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.addr.eq(d),
                             self.o.payload.t.eq(Array(codes)[d])]
                with m.If(self.o.ready):
                    count("codes_out", 1)
                    m.d.sync += d.eq(d + 1)
                    with m.If(d == cfg.head_dim - 1):
                        m.next = "END"
            with m.State("END"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.last.eq(1)]
                with m.If(self.o.ready):
                    m.next = "IDLE"
        return m

    def _quantize(self, m, walk, compare, theta, mem, count) -> list:
        """The walk over the shared table; a neuron's code ``c - t`` is latched at the step it
        crosses. Returns the code registers."""
        cfg, tile = self._cfg, self._tile
        step = walk.step
        row = Signal(tile.theta_row_width, name="theta_row")
        t_row = Array(theta)[step.t.as_unsigned()] if tile.T > 2 else theta[0]
        m.d.comb += row.eq(Cat(*([t_row.as_signed()] * tile.lanes)))
        wiring.connect(m, walk.step, compare.step)
        m.d.comb += [compare.theta.eq(row), compare.commit.eq(step.valid & walk.advance),
                     *(c.eq(v) for c, v in zip(compare.v, mem.v, strict=True))]
        codes = [Signal(cfg.time_width, name=f"q{j}") for j in range(cfg.head_dim)]
        c = cfg.ctx_space.c
        with m.If(compare.commit):
            with m.If(~step.last):
                count("compare_ops", compare.n_active)
                count("threshold_reads", compare.n_active)
            for j, q in enumerate(codes):
                with m.If(compare.cross[j]):  # one group: lane j is neuron j
                    m.d.sync += q.eq(c - step.t)
        return codes
