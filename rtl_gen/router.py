"""2D-mesh router and mesh: dimension-order (XY) routing, five valid/ready ports, hop counts.

A flit is one ``amaranth.lib.stream`` beat whose payload is :func:`rtl_gen.layouts.flit_layout`:
destination ``(dst_x, dst_y)``, the source neuron address ``addr``, the time step ``t`` and a
``hops`` counter. Coordinates: ``x`` is the column (``0 .. cols-1``, east is ``x + 1``), ``y``
the row (``0 .. rows-1``, south is ``y + 1``).

Micro-architecture (one clock per hop):

- every input port has a two-entry FIFO (:class:`FlitFIFO`, ``amaranth.lib.fifo.SyncFIFO``), so
  an input accepts one flit per clock and its ``ready`` depends only on the FIFO's own state
  (no combinational ready chain across routers);
- the head of each FIFO is routed X first, then Y (east/west until ``dst_x == x``, then
  north/south until ``dst_y == y``, then local): a flit never turns from Y back to X, so the
  channel dependency graph is acyclic and the mesh is deadlock-free by construction;
- each output has a round-robin arbiter over the inputs whose head requests it; the grant is
  held while the output is stalled, so a valid output never changes its payload before it is
  taken (stream rule);
- ``hops`` is incremented when a flit leaves through N, E, S or W, so a delivered flit carries
  the number of links it crossed, the Manhattan distance of its source and destination.

A flit is always in exactly one input FIFO between injection and ejection, so ``busy`` (some
FIFO holds a flit) low means the mesh is empty.
"""

from __future__ import annotations

from fractions import Fraction

from amaranth.hdl import Const, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.fifo import SyncFIFO
from amaranth.lib.wiring import In, Out

from rtl_gen.layouts import check_mesh, coord_width, flit_layout
from rtl_gen.params import check_config, check_int

__all__ = [
    "PORTS",
    "Mesh",
    "Router",
    "mean_hops",
    "router_from_config",
    "xy_path",
    "xy_route",
]

#: Port names, in arbitration index order.
PORTS = ("north", "east", "south", "west", "local")
_N, _E, _S, _W, _L = range(5)
# The port of the neighbour that a directional output feeds.
_OPPOSITE = {_N: _S, _E: _W, _S: _N, _W: _E}


def xy_route(x: int, y: int, dst_x: int, dst_y: int) -> str:
    """Reference XY decision: the output port name a flit at ``(x, y)`` takes."""
    if dst_x > x:
        return "east"
    if dst_x < x:
        return "west"
    if dst_y > y:
        return "south"
    if dst_y < y:
        return "north"
    return "local"


#: The neighbour a directional output leads to: ``(dx, dy)`` per port name.
_STEP = {"north": (0, -1), "east": (1, 0), "south": (0, 1), "west": (-1, 0)}


def xy_path(src: tuple[int, int], dst: tuple[int, int]) -> tuple[tuple[int, int], ...]:
    """The routers ``(x, y)`` a flit from ``src`` to ``dst`` passes, both ends included:
    :func:`xy_route` applied at every router (X first, then Y). Its hops are ``len - 1``, the
    Manhattan distance of the two nodes."""
    (x, y), path = src, [tuple(src)]
    while (port := xy_route(x, y, *dst)) != "local":
        dx, dy = _STEP[port]
        x, y = x + dx, y + dy
        path.append((x, y))
    return tuple(path)


def mean_hops(rows: int, cols: int) -> float:
    """Mean hops of an XY-routed flit between two distinct nodes of a ``rows x cols`` mesh.

    Every ordered pair of distinct nodes counts once (uniform traffic). A flit's hops are the
    links :func:`xy_route` takes it over, the Manhattan distance of its two nodes, so the sum
    over all pairs is ``rows^2 S(cols) + cols^2 S(rows)`` with ``S(n) = (n^3 - n) / 3`` the sum
    of ``|a - b|`` over ``a, b`` in ``0..n-1``. ``mean_hops(4, 4) = 8/3``.

    Raises
    ------
    ValueError
        The mesh has fewer than two nodes (no pair), or a size is not in 1..16
        (:func:`rtl_gen.layouts.check_mesh`).
    """
    rows, cols = check_mesh(rows, cols)
    nodes = rows * cols
    if nodes < 2:
        raise ValueError(f"a {rows}x{cols} mesh has no two distinct nodes to route between")

    def spread(n: int) -> int:
        return (n ** 3 - n) // 3

    return float(Fraction(rows ** 2 * spread(cols) + cols ** 2 * spread(rows),
                          nodes * (nodes - 1)))


class FlitFIFO(wiring.Component):
    """Two-flit input buffer: ``amaranth.lib.fifo.SyncFIFO`` with stream ports.

    Full rate, zero read latency, ``w.ready`` from its own state only (``level != 2``).

    Members
    -------
    w : In(stream.Signature(layout))
    r : Out(stream.Signature(layout))
    """

    def __init__(self, layout):
        self._layout = layout
        super().__init__({"w": In(stream.Signature(layout)), "r": Out(stream.Signature(layout))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.fifo = fifo = SyncFIFO(width=self._layout.size, depth=2)
        wiring.connect(m, wiring.flipped(self.w), fifo.w_stream)
        wiring.connect(m, fifo.r_stream, wiring.flipped(self.r))
        return m


class Router(wiring.Component):
    """One mesh node: five stream ports, XY routing, round-robin output arbitration.

    Parameters
    ----------
    rows, cols : int
        Mesh size, 1..16 each (MAX_MESH).
    x, y : int or None
        Own column and row. ``None`` turns the coordinate into an input port of the same name
        (one Verilog module for every position); an integer makes it a constant.
    addr_width : int
        Bits of the flit's source address field, 1..32.
    time_width : int
        Bits of the flit's time-step field, 1..16.
    src_loc_at : int
        Stack frames to skip when Amaranth names the creator (1 from a factory).

    Members
    -------
    i_north, i_east, i_south, i_west, i_local : In(stream.Signature(flit_layout(...)))
        Flits arriving from the neighbours and injected by the local client.
    o_north, o_east, o_south, o_west, o_local : Out(stream.Signature(flit_layout(...)))
        Flits leaving to the neighbours (``hops`` incremented) and ejected to the local client.
    busy : Out(1)
        Some input FIFO holds a flit.
    x, y : In(coord_width(cols)), In(coord_width(rows))
        Only when the constructor's ``x`` / ``y`` is ``None``.

    Raises
    ------
    TypeError
        A parameter is not an integer (or ``None`` for ``x``/``y``).
    ValueError
        A parameter is out of range.
    """

    def __init__(self, rows, cols, *, x=None, y=None, addr_width=16, time_width=6,
                 src_loc_at=0):
        rows, cols = check_mesh(rows, cols)
        if x is not None:
            check_int("x", x, 0, cols - 1, must_be="must be")
        if y is not None:
            check_int("y", y, 0, rows - 1, must_be="must be")
        layout = flit_layout(rows, cols, addr_width, time_width)
        self._rows, self._cols = rows, cols
        self._x, self._y = x, y
        self._addr_width, self._time_width = addr_width, time_width
        self._layout = layout
        members = {}
        for p in PORTS:
            members[f"i_{p}"] = In(stream.Signature(layout))
        for p in PORTS:
            members[f"o_{p}"] = Out(stream.Signature(layout))
        members["busy"] = Out(1)
        if x is None:
            members["x"] = In(coord_width(cols))
        if y is None:
            members["y"] = In(coord_width(rows))
        super().__init__(members, src_loc_at=src_loc_at + 1)

    rows = property(lambda self: self._rows)
    cols = property(lambda self: self._cols)
    addr_width = property(lambda self: self._addr_width)
    time_width = property(lambda self: self._time_width)
    layout = property(lambda self: self._layout, doc="The flit payload layout.")

    @property
    def position(self):
        """``(x, y)`` as given to the constructor (``None`` where it is an input port)."""
        return self._x, self._y

    def elaborate(self, platform):
        m = Module()
        x = Const(self._x, coord_width(self._cols)) if self._x is not None else self.x
        y = Const(self._y, coord_width(self._rows)) if self._y is not None else self.y
        ins = [getattr(self, f"i_{p}") for p in PORTS]
        outs = [getattr(self, f"o_{p}") for p in PORTS]

        heads = []
        route = []  # route[i][o]: head of input i requests output o
        for i, p in enumerate(PORTS):
            fifo = FlitFIFO(self._layout)
            m.submodules[f"fifo_{p}"] = fifo
            wiring.connect(m, wiring.flipped(ins[i]), fifo.w)
            heads.append(fifo.r)
            f = fifo.r.payload
            want = [Signal(name=f"{p}_to_{q}") for q in PORTS]
            go_x = f.dst_x != x
            m.d.comb += [
                want[_E].eq(fifo.r.valid & (f.dst_x > x)),
                want[_W].eq(fifo.r.valid & (f.dst_x < x)),
                want[_S].eq(fifo.r.valid & ~go_x & (f.dst_y > y)),
                want[_N].eq(fifo.r.valid & ~go_x & (f.dst_y < y)),
                want[_L].eq(fifo.r.valid & ~go_x & (f.dst_y == y)),
            ]
            route.append(want)
        m.d.comb += self.busy.eq(sum((h.valid for h in heads), Const(0, 1)) != 0)

        pops = [[] for _ in PORTS]
        for o, q in enumerate(PORTS):
            req = [route[i][o] for i in range(5)]
            # `last` is the input granted most recently: it has the lowest priority next.
            last = Signal(range(5), init=4, name=f"{q}_last")
            locked = Signal(name=f"{q}_locked")
            held = Signal(range(5), name=f"{q}_held")
            pick = Signal(range(5), name=f"{q}_pick")
            any_req = Signal(name=f"{q}_any")
            m.d.comb += any_req.eq(sum((r for r in req), Const(0, 1)) != 0)
            with m.Switch(last):
                for p in range(5):
                    with m.Case(p):
                        order = [(p + 1 + k) % 5 for k in range(5)]
                        # the first requester in `order` wins: assign in reverse so it is last
                        for i in reversed(order):
                            with m.If(req[i]):
                                m.d.comb += pick.eq(i)
            sel = Signal(range(5), name=f"{q}_sel")
            m.d.comb += sel.eq(pick)
            with m.If(locked):
                m.d.comb += sel.eq(held)
            out = outs[o]
            m.d.comb += out.valid.eq(locked | any_req)
            with m.Switch(sel):
                for i in range(5):
                    with m.Case(i):
                        m.d.comb += out.payload.eq(heads[i].payload)
                        if o != _L:
                            m.d.comb += out.payload.hops.eq(heads[i].payload.hops + 1)
            take = out.valid & out.ready
            with m.If(take):
                m.d.sync += [last.eq(sel), locked.eq(0)]
            with m.Elif(out.valid):
                m.d.sync += [held.eq(sel), locked.eq(1)]
            for i in range(5):
                pops[i].append(take & (sel == i))
        for i in range(5):
            m.d.comb += heads[i].ready.eq(sum(pops[i], Const(0, 1)) != 0)
        return m


class Mesh(wiring.Component):
    """``rows x cols`` routers, neighbours connected, local ports exposed.

    Parameters
    ----------
    rows, cols : int
        Mesh size, 1..16 each (MAX_MESH).
    addr_width, time_width : int
        Flit field widths, as for :class:`Router`.

    Members
    -------
    i : In(stream.Signature(flit_layout(...))).array(rows, cols)
        ``i[y][x]`` injects into the local port of the router at ``(x, y)``.
    o : Out(stream.Signature(flit_layout(...))).array(rows, cols)
        ``o[y][x]`` ejects from the local port of the router at ``(x, y)``.
    busy : Out(1)
        Some router holds a flit.

    Every destination must lie on the mesh (``dst_x < cols``, ``dst_y < rows``): the edge
    ports are not connected and a flit routed off the mesh would wait there forever.
    """

    def __init__(self, rows, cols, *, addr_width=16, time_width=6):
        rows, cols = check_mesh(rows, cols)
        layout = flit_layout(rows, cols, addr_width, time_width)
        self._rows, self._cols = rows, cols
        self._addr_width, self._time_width = addr_width, time_width
        self._layout = layout
        super().__init__({
            "i": In(stream.Signature(layout)).array(rows, cols),
            "o": Out(stream.Signature(layout)).array(rows, cols),
            "busy": Out(1),
        })

    rows = property(lambda self: self._rows)
    cols = property(lambda self: self._cols)
    addr_width = property(lambda self: self._addr_width)
    time_width = property(lambda self: self._time_width)
    layout = property(lambda self: self._layout, doc="The flit payload layout.")

    def elaborate(self, platform):
        m = Module()
        nodes = {}
        for y in range(self._rows):
            for x in range(self._cols):
                r = Router(self._rows, self._cols, x=x, y=y, addr_width=self._addr_width,
                           time_width=self._time_width)
                m.submodules[f"router_x{x}_y{y}"] = nodes[x, y] = r
                wiring.connect(m, wiring.flipped(self.i[y][x]), r.i_local)
                wiring.connect(m, r.o_local, wiring.flipped(self.o[y][x]))
        for (x, y), r in nodes.items():
            if (x + 1, y) in nodes:
                wiring.connect(m, r.o_east, nodes[x + 1, y].i_west)
                wiring.connect(m, nodes[x + 1, y].o_west, r.i_east)
            if (x, y + 1) in nodes:
                wiring.connect(m, r.o_south, nodes[x, y + 1].i_north)
                wiring.connect(m, nodes[x, y + 1].o_north, r.i_south)
        busy = Const(0, 1)
        for r in nodes.values():
            busy = busy | r.busy
        m.d.comb += self.busy.eq(busy)
        return m


def router_from_config(config) -> Router:
    """The stand-alone ``mttfs_router`` of an :class:`rtl_gen.params.RTLConfig`.

    Its position is an input port (one module for every node); the flit widths are those of
    the system's mesh: ``mesh_rows x mesh_cols``, ``addr`` = ``config.in_addr_width`` (a tile
    input address), ``t`` = ``config.time_width``.
    """
    check_config(config)
    # src_loc_at=1: the caller, not this factory, is the creator Amaranth names
    return Router(config.mesh_rows, config.mesh_cols, addr_width=config.in_addr_width,
                  time_width=config.time_width, src_loc_at=1)


# -- simulation driver -------------------------------------------------------------------------




