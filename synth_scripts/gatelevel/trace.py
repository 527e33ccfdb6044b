"""A block's ports recorded from an Amaranth testbench, clock edge by clock edge: the stimulus a
gate-level replay applies (:mod:`synth_scripts.gatelevel`).

:func:`record` runs an Amaranth testbench on a component and keeps, for every clock edge, the
value of each input and output port the flip-flops see at that edge (a :class:`Trace`);
``extra_inputs`` records further signals beside the ports (an SRAM macro's read data, which a
netlist with its macros cut takes as an input).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["Trace", "port_signals", "record"]


@dataclass
class Trace:
    """Per-clock-edge values of a block's ports, as the flip-flops see them at the edge.

    ``ports`` maps a Verilog port name (Amaranth's flattened ``a__b`` names, or an exposed
    internal signal such as ``weights.bus__rdata``) to ``{"dir": "in"|"out", "width": w}``;
    ``values[name][c]`` is the port's unsigned value at clock edge ``c``.
    """

    ports: dict[str, dict]
    values: dict[str, list[int]]

    @property
    def cycles(self) -> int:
        return len(next(iter(self.values.values()))) if self.values else 0

    def inputs(self) -> list[str]:
        return [p for p, d in self.ports.items() if d["dir"] == "in"]

    def outputs(self) -> list[str]:
        return [p for p, d in self.ports.items() if d["dir"] == "out"]

    def to_json(self) -> dict:
        return {"cycles": self.cycles, "ports": self.ports, "values": self.values}


def port_signals(component) -> dict[str, tuple[str, object]]:
    """Verilog port name -> (``"in"``/``"out"``, Amaranth value) of ``component``'s signature.

    Names follow :func:`rtl_gen.generate.port_list` (path parts joined by ``__``), which is
    what ``amaranth.back.verilog`` writes for a component's ports.
    """
    from amaranth.hdl import Value
    from amaranth.lib import wiring

    out = {}
    for path, member, value in component.signature.flatten(component):
        name = "__".join(str(p) for p in path)
        out[name] = ("in" if member.flow == wiring.In else "out", Value.cast(value))
    return out


def record(component, testbench, *, extra_inputs: Mapping[str, object] | None = None,
           top=None, clock_ns: float = 10.0) -> Trace:
    """Run ``testbench`` (``async def tb(ctx)``) on ``component``; sample its ports every edge.

    Parameters
    ----------
    component : amaranth.lib.wiring.Component
        Its ports are recorded (``clk`` and ``rst`` excepted: the trace starts from reset).
    testbench : async callable
        Drives the component; the simulation ends when it returns.
    extra_inputs : mapping of str to Amaranth value, optional
        Signals inside the design that are input ports of the gate netlist (the read data of a
        cut SRAM macro), keyed by the netlist's port name.
    top : Elaboratable, optional
        What to simulate, when it is not ``component`` itself: e.g. ``component.elaborate(None)``
        so that ``extra_inputs`` can name signals of its submodules.

    Raises
    ------
    ValueError
        An ``extra_inputs`` name clashes with a port of the component.
    """
    from amaranth.hdl import Value
    from amaranth.sim import Simulator

    sigs = port_signals(component)
    for name, sig in (extra_inputs or {}).items():
        if name in sigs:
            raise ValueError(f"extra input {name!r} is already a port of the component")
        sigs[name] = ("in", Value.cast(sig))
    names = list(sigs)
    values = [sigs[n][1] for n in names]
    widths = [len(v) for v in values]
    rows: list[tuple] = []

    async def recorder(ctx):
        while True:
            sampled = await ctx.tick().sample(*values)
            rows.append(sampled[2:])

    sim = Simulator(component if top is None else top)
    sim.add_clock(clock_ns * 1e-9)
    sim.add_testbench(recorder, background=True)
    sim.add_testbench(testbench)
    sim.run()
    cols = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    return Trace(
        ports={n: {"dir": sigs[n][0], "width": w} for n, w in zip(names, widths, strict=True)},
        values={
            n: [int(v) & ((1 << w) - 1) for v in col]
            for n, w, col in zip(names, widths, cols, strict=True)
        },
    )
