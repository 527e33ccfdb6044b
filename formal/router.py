"""Proof harnesses of the mesh router (``rtl_gen.router.Router``).

One router at the centre ``(1, 1)`` of a 3x3 mesh, so every port leads somewhere; flits arrive
on all five inputs with any destination on the mesh and any backpressure on all five outputs.

- stream rule: every output holds ``valid`` and its payload until ``ready``;
- routing and conservation: every flit leaves on the port of ``rtl_gen.router.xy_route``; a
  watched flit (any flit: the solver chooses it when it enters) leaves exactly once, never
  before it entered, and ``busy`` stays high while it is inside (none lost, none duplicated,
  none created), with ``dst`` and ``t`` unchanged and ``hops`` one higher on N/E/S/W
  (unchanged on local). The router never reads ``addr``, so its one bit marks the watched flit:
  at most one flit ever enters with ``addr = 1``.
"""

from __future__ import annotations

from amaranth.hdl import Assert, Assume, Const, Signal

from formal.harness import Harness, drive_input, drive_ready, stream_rule

__all__ = ["RouterFlow", "RouterStream"]

ROWS = COLS = 3
X = Y = 1


def _router_module(module):
    if module is None:
        from rtl_gen import router as module
    return module


class RouterStream(Harness):
    """The stream rule on all five outputs."""

    def __init__(self, addr_width: int = 1, time_width: int = 2, module=None):
        super().__init__()
        self.module = _router_module(module)
        self.dut = self.module.Router(ROWS, COLS, x=X, y=Y, addr_width=addr_width,
                                      time_width=time_width)

    def ports_of(self, dut, side):
        return [(p, getattr(dut, f"{side}_{p}")) for p in self.module.PORTS]

    def check(self, m):
        m.submodules.dut = dut = self.dut
        for p, port in self.ports_of(dut, "i"):
            drive_input(self, m, port, f"i_{p}")
            f = port.payload
            m.d.comb += Assume((f.dst_x < COLS) & (f.dst_y < ROWS))
        for p, port in self.ports_of(dut, "o"):
            drive_ready(self, m, port, f"o_{p}")
            stream_rule(m, port, Assert, f"o_{p}")


class RouterFlow(RouterStream):
    """XY port, conservation, the watched flit, hop counts."""

    def check(self, m):
        super().check(m)
        dut = self.dut
        ins, outs = self.ports_of(dut, "i"), self.ports_of(dut, "o")
        # every flit leaves on its XY port
        dsts = [(dx, dy) for dy in range(ROWS) for dx in range(COLS)]
        for p, port in outs:
            f = port.payload
            allowed = Const(0, 1)
            for dx, dy in dsts:
                if self.module.xy_route(X, Y, dx, dy) == p:
                    allowed = allowed | ((f.dst_x == dx) & (f.dst_y == dy))
            with m.If(port.valid):
                m.d.comb += Assert(allowed, f"router: a flit for another port left on {p}")

        # the watched flit: the router never reads `addr`, so its one bit marks the watched
        # flit; the solver picks which flit (if any) enters with addr = 1, at most one ever
        armed = Signal(name="w_armed")      # the watched flit is inside
        done = Signal(name="w_done")        # it has left
        w = {name: Signal(len(getattr(ins[0][1].payload, name)), name=f"w_{name}")
             for name in ("dst_x", "dst_y", "t", "hops")}
        marks = [port.valid & port.ready & port.payload.addr[0] for _, port in ins]
        for i in range(len(ins)):
            with m.If(marks[i]):
                m.d.comb += Assume(~armed & ~done)
                m.d.sync += [armed.eq(1)] + [
                    w[name].eq(getattr(ins[i][1].payload, name)) for name in w]
            for j in range(i + 1, len(ins)):
                m.d.comb += Assume(~(marks[i] & marks[j]))
        for p, port in outs:
            f = port.payload
            mine = port.valid & port.ready & f.addr[0]
            with m.If(mine):
                hops = w["hops"] + (0 if p == "local" else 1)
                m.d.comb += [
                    Assert(armed, "router: the watched flit left twice or was created"),
                    Assert((f.dst_x == w["dst_x"]) & (f.dst_y == w["dst_y"]) & (f.t == w["t"]),
                           "router: the watched flit changed"),
                    Assert(f.hops == hops[:len(f.hops)], "router: hops not one higher per hop"),
                ]
                m.d.sync += [armed.eq(0), done.eq(1)]
        with m.If(armed):
            m.d.comb += Assert(dut.busy, "router: empty while the watched flit is inside")
