"""The attention path of one encoder block on a mesh: per head, query events -> query x key
tile -> softmax node -> probability x value tile -> ``attn_out_in`` events
(docs/rtl_attention.md).

Head ``h`` is mesh row ``h`` of a ``heads x 3`` :class:`rtl_gen.router.Mesh`: the query x key
tile (:class:`rtl_gen.kv_tiles.ScoreTile`) at ``(0, h)``, the softmax node (the block
``attn_softmax``, :class:`rtl_gen.attn_softmax.SoftmaxNode`, or any component with its ports)
at ``(1, h)``, the probability x value tile (:class:`rtl_gen.kv_tiles.ContextTile`) at
``(2, h)``. The raw scores and the ``attn_prob`` events travel as flits (``addr`` the key
slot, ``t`` the score or the time and a ``last`` bit, so a row's marker follows its data on
the same in-order path); the query events come from ``i`` (each to its head's tile, the
marker to all), the ``attn_out_in`` events of the heads are merged into ``o`` in time order
(:class:`rtl_gen.system_parts.OutputMerge`).

The order of a sequence (docs/rtl_attention.md, "The order of a sequence"): a ``sequence``
beat on ``load`` starts it (every node's written bits, init sums and write counts clear); then
its key and value codes arrive on ``load`` (``key``, ``value``) in any order; a query on ``i``
is held (``i.ready`` low) until every head's key and value memories hold every slot of the
sequence (``complete``); a window (one token's query events and marker) then runs through
every head, and ends when the output marker is taken.
"""

from __future__ import annotations

from amaranth.hdl import (
    Array,
    Cat,
    ClockSignal,
    Const,
    Instance,
    Module,
    Mux,
    ResetSignal,
    Signal,
    signed,
)
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

from rtl_gen.attn_params import (
    ATTN_TARGETS,
    AttentionConfig,
    attn_load_layout,
)
from rtl_gen.attn_softmax import SoftmaxNode
from rtl_gen.kv_tiles import (
    ContextTile,
    DenseContextTile,
    ScoreTile,
    context_counters,
    dense_query_layout,
    score_counters,
)
from rtl_gen.layouts import coord_width, event_layout, flit_layout, out_event_layout
from rtl_gen.params import RTLConfig, check_config, counter_ports, port_values
from rtl_gen.router import Router
from rtl_gen.system_parts import OutputMerge

__all__ = [
    "DENSE_HEAD_MODULE",
    "HEAD_MODULE",
    "HeadOrderMerge",
    "PARTS",
    "AttentionHead",
    "AttentionSystem",
    "EagerFork",
    "FlitEjector",
    "FlitInjector",
    "attention_counters",
    "attention_from_config",
    "attention_manifest",
    "head_counters",
]

#: The three node blocks of a head, by counter prefix, and their mesh column.
PARTS = {"qk": 0, "sm": 1, "pv": 2}
#: Width of the flit and hop totals.
TOTAL_WIDTH = 32


class EagerFork(wiring.Component):
    """Every output in ``en`` takes the input beat once; then the input beat is taken.

    Parameters
    ----------
    layout : Layout
        The payload.
    n : int
        Outputs.

    Members
    -------
    i : In(stream.Signature(layout))
    o : Out(stream.Signature(layout)).array(n)
    en : In(n)
        The outputs that take the current beat (a function of its payload); with none, the
        beat is taken at once.
    """

    def __init__(self, layout, n: int):
        self._n = n
        super().__init__({"i": In(stream.Signature(layout)),
                          "o": Out(stream.Signature(layout)).array(n), "en": In(n)})

    def elaborate(self, platform):
        m = Module()
        taken = Signal(self._n)
        m.d.comb += self.i.ready.eq(Cat(*(~self.en[k] | taken[k] | o.ready
                                          for k, o in enumerate(self.o))).all())
        fire = self.i.valid & self.i.ready
        with m.If(fire):
            m.d.sync += taken.eq(0)
        for k, o in enumerate(self.o):
            m.d.comb += [o.valid.eq(self.en[k] & self.i.valid & ~taken[k]),
                         o.payload.eq(self.i.payload)]
            with m.If(o.valid & o.ready & ~fire):
                m.d.sync += taken[k].eq(1)
        return m


class FlitInjector(wiring.Component):
    """A node's output stream ``{addr, <field>, last}`` into flits to node ``(dst_x, dst_y)``.

    The flit's ``t`` is ``Cat(<field>, last)``: the marker rides the same path behind the data.
    """

    def __init__(self, cfg: AttentionConfig, layout, field: str, dst_x: int):
        self._field, self._dst_x = field, dst_x
        flit = flit_layout(cfg.heads, 3, cfg.flit_addr_width, cfg.flit_value_width)
        self._vw = cfg.flit_value_width - 1
        super().__init__({"i": In(stream.Signature(layout)), "o": Out(stream.Signature(flit)),
                          "dst_y": In(flit["dst_y"].shape)})

    def elaborate(self, platform):
        m = Module()
        p = self.i.payload
        bits = getattr(p, self._field).as_unsigned()
        pad = self._vw - len(bits)
        t = Cat(bits, Const(0, pad), p.last) if pad > 0 else Cat(bits[:self._vw], p.last)
        m.d.comb += [
            self.o.valid.eq(self.i.valid), self.i.ready.eq(self.o.ready),
            self.o.payload.dst_x.eq(self._dst_x), self.o.payload.dst_y.eq(self.dst_y),
            self.o.payload.addr.eq(p.addr), self.o.payload.t.eq(t),
            self.o.payload.hops.eq(0),
        ]
        return m


class FlitEjector(wiring.Component):
    """Flits leaving a router's local port into a node's input stream ``{addr, <field>,
    last}``; each flit's hops are reported as it is taken."""

    def __init__(self, cfg: AttentionConfig, layout, field: str):
        self._field = field
        flit = flit_layout(cfg.heads, 3, cfg.flit_addr_width, cfg.flit_value_width)
        self._vw = cfg.flit_value_width - 1
        super().__init__({"i": In(stream.Signature(flit)), "o": Out(stream.Signature(layout)),
                          "take": Out(1), "hops": Out(flit["hops"].shape)})

    def elaborate(self, platform):
        m = Module()
        f = self.i.payload
        field = getattr(self.o.payload, self._field)
        m.d.comb += [
            self.o.valid.eq(self.i.valid), self.i.ready.eq(self.o.ready),
            self.o.payload.addr.eq(f.addr),
            field.eq(f.t[:len(field)]),
            self.o.payload.last.eq(f.t[self._vw]),
            self.take.eq(self.i.valid & self.i.ready), self.hops.eq(f.hops),
        ]
        return m


def _part_counters(cfg: AttentionConfig, softmax: dict[str, int] | None = None,
                   dense: bool = False):
    from rtl_gen.attn_softmax import softmax_counters

    return {"qk": score_counters(cfg, dense), "sm": softmax or softmax_counters(cfg),
            "pv": context_counters(cfg, dense)}


class HeadOrderMerge(wiring.Component):
    """The dense design's output: head 0's codes, then head 1's, ...: each head's beats
    ``{addr = d, t = code}`` leave as ``{addr = h * d_k + d, t}`` until its marker, then the next
    head's; after the last head's marker, one marker."""

    def __init__(self, cfg: AttentionConfig):
        self._cfg = cfg
        head = out_event_layout(cfg.context_tile())
        super().__init__({
            "i": In(stream.Signature(head)).array(cfg.heads),
            "o": Out(stream.Signature(event_layout(cfg.global_dim_width, cfg.time_width))),
        })

    def elaborate(self, platform):
        cfg, m = self._cfg, Module()
        H = cfg.heads
        cur = Signal(range(max(H, 2)), name="head")
        p = Array(i.payload for i in self.i)[cur]
        valid = Array(i.valid for i in self.i)[cur]
        last = p.last
        with m.If(valid & ~last):
            m.d.comb += [self.o.valid.eq(1), self.o.payload.addr.eq(p.addr + cur * cfg.head_dim),
                         self.o.payload.t.eq(p.t)]
        with m.Elif(valid & last & (cur == H - 1)):
            m.d.comb += [self.o.valid.eq(1), self.o.payload.last.eq(1)]
        take = valid & (last & (cur != H - 1) | self.o.ready)
        for h, i in enumerate(self.i):
            m.d.comb += i.ready.eq((cur == h) & take)
        with m.If(take & last):
            m.d.sync += cur.eq(Mux(cur == H - 1, 0, cur + 1))
        return m


def _dense_softmax(cfg: AttentionConfig):
    return SoftmaxNode(cfg, dense=True)


class AttentionHead(wiring.Component):
    """One head: mesh row ``y`` of the attention path, three nodes and their three routers.

    The query x key tile at ``(0, y)``, the softmax node at ``(1, y)`` and the probability x
    value tile at ``(2, y)``, each beside its router (:class:`rtl_gen.router.Router`, position
    ``x`` fixed, ``y`` an input, so one module serves every row). The routers' north and south
    ports are this component's, for the rows above and below.

    Parameters
    ----------
    config : AttentionConfig
    softmax : callable, optional
        The softmax node's factory (:class:`AttentionSystem`).
    dense : bool
        The dense design's head (:class:`AttentionSystem`).

    Members
    -------
    y : In(coord_width(heads))
        The row.
    load : In(stream.Signature(attn_load_layout(config)))
        The head's beats: configuration and sequences (to all three nodes), its key and value
        writes.
    i : In(stream.Signature(event_layout(dim_width, time_width, time="tau")))
        The head's query events and the window's marker.
    o : Out(stream.Signature(out_event_layout(context_tile)))
        Its ``attn_out_in`` events, then a marker.
    clear : In(1)
        A window starts: the flit and hop counts clear.
    complete : Out(1)
    north_i_x<x>, south_i_x<x> : In(stream.Signature(flit)); north_o_x<x>, south_o_x<x> : Out
        The vertical links of router ``x``.
    cnt_<part>_<name> : Out(width)
        The three nodes' counters.
    cnt_flits, cnt_hops : Out(32)
        Flits ejected in this row since ``clear``, and their hops.
    """

    def __init__(self, config: AttentionConfig, softmax=None, *, dense: bool = False):
        if not isinstance(config, AttentionConfig):
            raise TypeError(f"config must be an AttentionConfig, not {config!r}")
        self._cfg = cfg = config
        self._dense = bool(dense)
        default = _dense_softmax if dense else SoftmaxNode
        self._sm = (default if softmax is None else softmax)(cfg)
        sm_counters = {n[4:]: len(v) for n, v in port_values(self._sm).items()
                       if n.startswith("cnt_")}
        self._counters = _part_counters(cfg, sm_counters, dense)
        flit = stream.Signature(flit_layout(cfg.heads, 3, cfg.flit_addr_width,
                                            cfg.flit_value_width))
        members = {
            "y": In(coord_width(cfg.heads)),
            "load": In(stream.Signature(attn_load_layout(cfg))),
            "i": In(stream.Signature(
                dense_query_layout(cfg) if dense
                else event_layout(cfg.dim_width, cfg.time_width, time="tau"))),
            "o": Out(stream.Signature(out_event_layout(cfg.context_tile()))),
            "clear": In(1),
            "complete": Out(1),
        }
        for x in range(3):
            members.update({f"north_i_x{x}": In(flit), f"north_o_x{x}": Out(flit),
                            f"south_i_x{x}": In(flit), f"south_o_x{x}": Out(flit)})
        for part, widths in self._counters.items():
            members.update(counter_ports(widths, f"cnt_{part}_{{}}"))
        members.update(counter_ports({"flits": TOTAL_WIDTH, "hops": TOTAL_WIDTH}))
        super().__init__(members)

    @property
    def config(self) -> AttentionConfig:
        return self._cfg

    def part_counters(self) -> dict[str, dict[str, int]]:
        """Counter name -> width of each part (``qk``, ``sm``, ``pv``)."""
        return {part: dict(w) for part, w in self._counters.items()}

    def elaborate(self, platform):
        cfg, m = self._cfg, Module()
        m.submodules.qk = qk = ScoreTile(cfg, dense=self._dense)
        m.submodules.sm = sm = self._sm
        m.submodules.pv = pv = DenseContextTile(cfg) if self._dense else ContextTile(cfg)
        m.submodules.load_fork = fork = EagerFork(attn_load_layout(cfg), 3)
        ld = self.load.payload
        broadcast = ((ld.target != ATTN_TARGETS["key"]) & (ld.target != ATTN_TARGETS["value"]))
        m.d.comb += [fork.en.eq(Cat(broadcast | (ld.target == ATTN_TARGETS["key"]), broadcast,
                                    broadcast | (ld.target == ATTN_TARGETS["value"]))),
                     self.complete.eq(qk.complete & pv.complete)]
        wiring.connect(m, wiring.flipped(self.load), fork.i)
        for o, node in zip(fork.o, (qk, sm, pv), strict=True):
            wiring.connect(m, o, node.load)
        wiring.connect(m, wiring.flipped(self.i), qk.i)
        wiring.connect(m, pv.o, wiring.flipped(self.o))
        ejectors = self._row(m, qk, sm, pv)
        for part, node in (("qk", qk), ("sm", sm), ("pv", pv)):
            for name in self._counters[part]:
                m.d.comb += getattr(self, f"cnt_{part}_{name}").eq(getattr(node, f"cnt_{name}"))
        with m.If(self.clear):
            m.d.sync += [self.cnt_flits.eq(0), self.cnt_hops.eq(0)]
        with m.Else():
            m.d.sync += [
                self.cnt_flits.eq(self.cnt_flits + sum((e.take for e in ejectors), Const(0, 1))),
                self.cnt_hops.eq(self.cnt_hops + sum((Mux(e.take, e.hops, 0) for e in ejectors),
                                                     Const(0, 1))),
            ]
        return m

    def _row(self, m, qk, sm, pv) -> list:
        """The three routers; scores (0, y) -> (1, y), events (1, y) -> (2, y). Returns the
        ejectors."""
        cfg = self._cfg
        routers = []
        for x in range(3):
            m.submodules[f"router_x{x}"] = r = Router(cfg.heads, 3, x=x, y=None,
                                                      addr_width=cfg.flit_addr_width,
                                                      time_width=cfg.flit_value_width)
            m.d.comb += r.y.eq(self.y)
            for side in ("north", "south"):
                wiring.connect(m, wiring.flipped(getattr(self, f"{side}_i_x{x}")),
                               getattr(r, f"i_{side}"))
                wiring.connect(m, getattr(r, f"o_{side}"),
                               wiring.flipped(getattr(self, f"{side}_o_x{x}")))
            routers.append(r)
        for a, b in ((0, 1), (1, 2)):
            wiring.connect(m, routers[a].o_east, routers[b].i_west)
            wiring.connect(m, routers[b].o_west, routers[a].i_east)
        m.d.comb += [routers[2].i_local.valid.eq(0), routers[0].o_local.ready.eq(0)]
        ejectors = []
        for src, dst, field, x in ((qk.o, sm.i, "score", 0), (sm.o, pv.i, None, 1)):
            inj = FlitInjector(cfg, src.payload.shape(), field or "t", x + 1)
            ej = FlitEjector(cfg, dst.payload.shape(), field or "tau")
            m.submodules[f"inject_x{x}"], m.submodules[f"eject_x{x + 1}"] = inj, ej
            m.d.comb += inj.dst_y.eq(self.y)
            wiring.connect(m, src, inj.i)
            wiring.connect(m, inj.o, routers[x].i_local)
            wiring.connect(m, routers[x + 1].o_local, ej.i)
            wiring.connect(m, ej.o, dst)
            ejectors.append(ej)
        return ejectors


#: Module name of one head in the generated Verilog (:meth:`AttentionSystem.extra_verilog`).
HEAD_MODULE = "mttfs_attention_head"
#: The same of the dense design's head.
DENSE_HEAD_MODULE = "dense_attention_head"


class AttentionSystem(wiring.Component):
    """The attention path of ``heads`` heads on a ``heads x 3`` mesh (module docstring).

    Parameters
    ----------
    config : AttentionConfig
    softmax : callable, optional
        ``softmax(config) -> component`` of the node at ``(1, h)``: ports ``load``, ``i``
        (raw scores), ``o`` (``attn_prob`` events), ``busy`` and its ``cnt_*`` counters;
        default :class:`rtl_gen.attn_softmax.SoftmaxNode`.
    instances : bool
        Place each head as an instance of one Verilog module :data:`HEAD_MODULE` (for Verilog:
        its text is :meth:`extra_verilog`, written once whatever the head count) instead of
        as a component of its own per head (for the Amaranth simulator).

    Members
    -------
    load : In(stream.Signature(attn_load_layout(config)))
        Configuration, sequences, key and value writes (docs/rtl_attention.md, "Load"). The
        targets ``config``, ``prob_table``, ``ctx_table`` and ``sequence`` reach every node
        and are accepted between windows; ``key``/``value`` go to head ``node``'s tile.
    i : In(stream.Signature(event_layout(global_dim_width, time_width, time="tau")))
        A window: a token's query events ``(h * d_k + d, tau)``, then a marker. Held until
        the sequence is complete.
    o : Out(stream.Signature(event_layout(global_dim_width, time_width)))
        The window's ``attn_out_in`` events ``(h * d_k + d, t)`` in time order, ascending
        address within a step, then a marker.
    busy : Out(1)
        A window runs (from its first beat to its output marker).
    complete : Out(1)
        Every key and value of the sequence is written in every head.
    cnt_<part>_<name>_h<h> : Out(width)
        The counters of head ``h``'s ``qk``, ``sm`` and ``pv`` nodes.
    cnt_flits, cnt_hops : Out(32)
        Flits ejected and their hops in the last window (markers included).
    """

    def __init__(self, config: AttentionConfig, softmax=None, *, instances: bool = False,
                 dense: bool = False):
        if not isinstance(config, AttentionConfig):
            raise TypeError(f"config must be an AttentionConfig, not {config!r}")
        self._cfg = cfg = config
        self._softmax, self._instances, self._dense = softmax, bool(instances), bool(dense)
        self._heads = [AttentionHead(cfg, softmax, dense=self._dense)
                       for _ in range(1 if instances else cfg.heads)]
        self._counters = self._heads[0].part_counters()
        members = {
            "load": In(stream.Signature(attn_load_layout(cfg))),
            "i": In(stream.Signature(
                data.StructLayout({"code": signed(cfg.time_width), "last": 1}) if dense
                else event_layout(cfg.global_dim_width, cfg.time_width, time="tau"))),
            "o": Out(stream.Signature(event_layout(cfg.global_dim_width, cfg.time_width))),
            "busy": Out(1),
            "complete": Out(1),
        }
        members.update(counter_ports(head_counters(cfg, self._counters["sm"], self._dense)))
        super().__init__(members)

    @property
    def config(self) -> AttentionConfig:
        return self._cfg

    def node_counters(self) -> dict[str, dict[str, int]]:
        """Counter name -> width of each part (``qk``, ``sm``, ``pv``) of a head."""
        return {part: dict(w) for part, w in self._counters.items()}

    @property
    def head_module(self) -> str:
        """The Verilog module of one head with ``instances``: :data:`HEAD_MODULE`, or
        :data:`DENSE_HEAD_MODULE` for the dense design."""
        return DENSE_HEAD_MODULE if self._dense else HEAD_MODULE

    def extra_verilog(self) -> str:
        """The Verilog of the modules this one instantiates by name: :data:`HEAD_MODULE` with
        ``instances`` (``rtl_gen.verilog_text.to_verilog`` appends it), else nothing."""
        if not self._instances:
            return ""
        from rtl_gen.verilog_text import to_verilog

        name = self.head_module
        text = to_verilog(self._heads[0], name)
        # one class for all heads in Verilator's model, not a copy per instance (inlined, the
        # twelve heads of MiniLM made 42 MB of C++); other tools read a comment
        header = text.index(f"module {name}(")
        body = text.index(");\n", header) + 3
        return text[:body] + "  /* verilator no_inline_module */\n" + text[body:]

    def elaborate(self, platform):
        cfg, m = self._cfg, Module()
        H = cfg.heads
        m.submodules.load_fork = lfork = EagerFork(attn_load_layout(cfg), H)
        m.submodules.query_fork = qfork = EagerFork(self.i.payload.shape(), H)
        if self._dense:
            m.submodules.merge = merge = HeadOrderMerge(cfg)
        else:
            merge_cfg = RTLConfig(T=cfg.T, k=0, n_in=1, tile_neurons=cfg.head_dim,
                                  mesh_rows=H, mesh_cols=1)
            m.submodules.merge = merge = OutputMerge(merge_cfg)
        heads = [self._place(m, h) for h in range(H)]
        running, complete = Signal(name="running"), Signal(name="complete")
        m.d.comb += [complete.eq(Cat(*(hd["complete"] for hd in heads)).all()),
                     self.complete.eq(complete), self.busy.eq(running)]
        self._links(m, heads)
        self._load(m, lfork, heads, running)
        start = self._queries(m, qfork, heads, complete, running)
        self._output(m, merge, heads, running)
        for hd in heads:
            m.d.comb += hd["clear"].eq(start)
            for part, widths in self._counters.items():
                for name in widths:
                    m.d.comb += getattr(self, f"cnt_{part}_{name}_h{hd['h']}").eq(
                        hd[f"cnt_{part}_{name}"])
        m.d.comb += [self.cnt_flits.eq(sum((hd["cnt_flits"] for hd in heads), Const(0, 1))),
                     self.cnt_hops.eq(sum((hd["cnt_hops"] for hd in heads), Const(0, 1)))]
        return m

    def _place(self, m, h: int) -> dict:
        """Head ``h``: a component, or an instance of :data:`HEAD_MODULE`; returns its ports
        by name (streams as interfaces), with ``h``."""
        if not self._instances:
            m.submodules[f"head{h}"] = head = self._heads[h]
            ports = {name: getattr(head, name) for name in head.signature.members}
        else:
            proto, conns, ports = self._heads[0], {}, {}
            for name, member in proto.signature.members.items():
                if member.is_signature:
                    sig = member.signature  # flipped for an In member
                    ports[name] = intf = sig.create(path=(f"h{h}_{name}",))
                    for key, value in _ports_of_interface(intf, sig).items():
                        prefix, _, sub = key.partition("_")
                        conns[f"{prefix}_{name}__{sub}"] = value
                else:
                    ports[name] = sig = Signal(member.shape, name=f"h{h}_{name}")
                    conns[("i_" if member.flow == In else "o_") + name] = sig
            m.submodules[f"head{h}"] = Instance(self.head_module, i_clk=ClockSignal(),
                                                i_rst=ResetSignal(), **conns)
        ports["h"] = h
        m.d.comb += ports["y"].eq(h)
        return ports

    def _links(self, m, heads) -> None:
        """Router ``x`` of row ``h`` south to row ``h+1``'s north; the edges idle."""
        for x in range(3):
            for h, hd in enumerate(heads):
                if h + 1 < len(heads):
                    below = heads[h + 1]
                    wiring.connect(m, hd[f"south_o_x{x}"], below[f"north_i_x{x}"])
                    wiring.connect(m, below[f"north_o_x{x}"], hd[f"south_i_x{x}"])
            top, bottom = heads[0], heads[-1]
            m.d.comb += [top[f"north_i_x{x}"].valid.eq(0), top[f"north_o_x{x}"].ready.eq(0),
                         bottom[f"south_i_x{x}"].valid.eq(0),
                         bottom[f"south_o_x{x}"].ready.eq(0)]

    def _load(self, m, fork, heads, running) -> None:
        """``load`` to the heads: configuration and sequences to all (between windows), key
        and value writes to their head."""
        ld = self.load.payload
        broadcast = (ld.target != ATTN_TARGETS["key"]) & (ld.target != ATTN_TARGETS["value"])
        gate = ~broadcast | ~running
        m.d.comb += [fork.i.valid.eq(self.load.valid & gate), fork.i.payload.eq(ld),
                     self.load.ready.eq(fork.i.ready & gate),
                     fork.en.eq(Cat(*(broadcast | (ld.node == hd["h"]) for hd in heads)))]
        for o, hd in zip(fork.o, heads, strict=True):
            wiring.connect(m, o, hd["load"])

    def _queries(self, m, fork, heads, complete, running):
        """``i`` to the heads (held until the sequence is complete). Returns the strobe of a
        window's first beat."""
        cfg, p = self._cfg, self.i.payload
        d = cfg.head_dim
        if self._dense:  # codes in address order: the address is a counter
            addr = Signal(range(cfg.heads * d + 1), name="query_addr")
            with m.If(self.i.valid & self.i.ready):
                m.d.sync += addr.eq(Mux(p.last, 0, addr + 1))
        else:
            addr = p.addr
        en = [p.last | ((addr >= h * d) & (addr < (h + 1) * d)) for h in range(cfg.heads)]
        m.d.comb += [fork.i.valid.eq(self.i.valid & complete), fork.i.payload.eq(p),
                     self.i.ready.eq(fork.i.ready & complete), fork.en.eq(Cat(*en))]
        for o, hd in zip(fork.o, heads, strict=True):
            qi = hd["i"]
            m.d.comb += [qi.valid.eq(o.valid), o.ready.eq(qi.ready),
                         qi.payload.last.eq(o.payload.last)]
            if self._dense:
                m.d.comb += qi.payload.code.eq(o.payload.code)
            else:
                m.d.comb += [qi.payload.addr.eq(o.payload.addr - hd["h"] * d),
                             qi.payload.tau.eq(o.payload.tau)]
        start = Signal(name="window_start")
        m.d.comb += start.eq(self.i.valid & self.i.ready & ~running)
        with m.If(start):
            m.d.sync += running.eq(1)
        return start

    def _output(self, m, merge, heads, running) -> None:
        """The heads' events merged into ``o`` (the dense design: their codes, head after
        head); the output marker ends the window."""
        cfg = self._cfg
        if self._dense:
            for hd in heads:
                wiring.connect(m, hd["o"], merge.i[hd["h"]])
            wiring.connect(m, merge.o, wiring.flipped(self.o))
            with m.If(self.o.valid & self.o.ready & self.o.payload.last):
                m.d.sync += running.eq(0)
            return
        done = Signal(cfg.heads, name="done")
        for hd in heads:
            h, o = hd["h"], hd["o"]
            ev = o.payload
            m.d.comb += [merge.i[h].valid.eq(o.valid & ~ev.last), merge.i[h].payload.eq(ev),
                         merge.offset[h].eq(h * cfg.head_dim),
                         o.ready.eq(ev.last | merge.i[h].ready)]
            with m.If(o.valid & ev.last):
                m.d.sync += done[h].eq(1)
        m.d.comb += [merge.final.eq(-1), merge.done.eq(done), merge.active.eq(running)]
        wiring.connect(m, merge.o, wiring.flipped(self.o))
        with m.If(self.o.valid & self.o.ready & self.o.payload.last):
            m.d.sync += [running.eq(0), done.eq(0)]


def _ports_of_interface(intf, sig) -> dict:
    """``{"i_<member>" or "o_<member>": value}`` of an interface of signature ``sig`` (a
    module's port, flipped for an input port) seen from outside the module: ``i_`` where the
    member flows into the module."""
    out = {}
    for path, member, value in sig.flatten(intf):
        name = "__".join(map(str, path))
        out[("i_" if member.flow == In else "o_") + name] = (
            value.as_value() if hasattr(value, "as_value") else value)
    return out


def head_counters(cfg: AttentionConfig, softmax: dict[str, int] | None = None,
                  dense: bool = False) -> dict[str, int]:
    """Counter name -> width of the attention path's ports ``cnt_<name>``: each head's
    ``<part>_<counter>_h<h>`` (``softmax``: the softmax node's counters, default
    :func:`rtl_gen.attn_softmax.softmax_counters`; ``dense``: the dense design's), then
    ``flits`` and ``hops``."""
    parts = _part_counters(cfg, softmax, dense)
    out = {f"{part}_{name}_h{h}": w for h in range(cfg.heads)
           for part, widths in parts.items() for name, w in widths.items()}
    return {**out, "flits": TOTAL_WIDTH, "hops": TOTAL_WIDTH}


def attention_counters(config: RTLConfig) -> dict[str, int]:
    """:func:`head_counters` of the ``attention`` block of an :class:`RTLConfig`."""
    return head_counters(AttentionConfig.from_rtl(check_config(config)))


def attention_manifest(comp: AttentionSystem) -> dict[str, object]:
    """The ``attention`` entry of a manifest: the parameters, derived widths and protocols."""
    cfg = comp.config
    return {"attention": {
        "parameters": cfg.as_dict(),
        "derived": cfg.derived(),
        "load_targets": dict(ATTN_TARGETS),
        "mesh": {"rows": cfg.heads, "cols": 3,
                 "nodes": "head h: query x key tile (0, h), softmax node (1, h), "
                          "probability x value tile (2, h)"},
        "window": "i: a token's query events {addr = h*d_k + d, tau, last=0} in time order, "
                  "then a marker {last=1}; held until every key and value of the sequence is "
                  "written; o: its attn_out_in events {addr = h*d_k + d, t} in time order, "
                  "ascending address within a step, then a marker",
        "sequence": "load target 'sequence' starts one (length, valid keys); then targets "
                    "'key' and 'value' write slot 'slot', group 'group' of head 'node'",
    }}


def attention_from_config(config: RTLConfig) -> AttentionSystem:
    """The ``mttfs_attention`` block of an :class:`RTLConfig`
    (:meth:`AttentionConfig.from_rtl`)."""
    return AttentionSystem(AttentionConfig.from_rtl(check_config(config)), instances=True)


# -- simulation driver ------------------------------------------------------------------------




