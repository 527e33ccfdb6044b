"""The one driver of a tile in the Amaranth simulator: load, windows, output, a trace hook.

Both tiles (:class:`rtl_gen.tile.NeuronTile` and :class:`rtl_gen.dense.DenseTile`) have the
same ports around their datapaths: a ``load`` stream (``target, addr, data``), an input stream
``i`` whose ``last`` beat ends a window, an output stream ``o`` that ends each window with one
``last`` beat, ``busy`` and the ``cnt_*`` counters. :class:`TileDriver` drives any component
with those ports, and every tile simulation goes through it:
:func:`rtl_gen.simulation.tiles.simulate_tile`, :func:`rtl_gen.simulation.tiles.simulate_dense`
and the gate-level comparison
(:func:`synth_scripts.gatelevel.tile.run_tile`, which records the driver's stimulus with
:func:`synth_scripts.gatelevel.record` to replay it on the mapped netlist).

The driver is one testbench coroutine that handles both streams on every clock, so it runs
under any simulator runner that takes one testbench (:func:`rtl_gen.simulation.run_simulator`,
:func:`synth_scripts.gatelevel.record`). Per window it sends the load beats (if any), then the
input beats (with random bubbles when ``i_valid < 1``), then clocks until ``busy`` has fallen
(it falls when the output marker is taken, docs/rtl_interfaces.md); ``o.ready`` is low while
loading and high with probability ``o_ready`` on every other clock. Every beat taken on any
port is handed to the trace hook ``on_beat`` as a :class:`Beat`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from rtl_gen.simulation import (
    check_probability,
    marked_output,
    packer,
    read_counters,
    run_simulator,
)

__all__ = ["Beat", "TileDriver", "Window", "WindowRun"]


@dataclass(frozen=True)
class Beat:
    """One beat taken on a port of the tile.

    ``port`` is ``"load"``, ``"i"`` or ``"o"``; ``payload`` the beat's fields as integers
    (what was offered on ``load`` and ``i``, what the tile sent on ``o``); ``cycle`` the clock
    edge (counted from 1) at which it went through; ``window`` the index of the window it
    belongs to (a window's load beats included).
    """

    port: str
    payload: dict[str, int]
    cycle: int
    window: int


@dataclass(frozen=True)
class Window:
    """One window to drive.

    ``load``: the ``(target, addr, data)`` beats to send first, or ``None`` to keep what is
    loaded. ``beats``: the input payloads, the window's ``last`` marker beat included.
    """

    load: Sequence[tuple[int, int, int]] | None
    beats: Sequence[dict[str, int]]


@dataclass(frozen=True)
class WindowRun:
    """What the tile did in one window.

    ``output``: the payloads taken from ``o`` (the marker beat last); ``counters``: the
    ``cnt_*`` ports once idle; ``cycles``: the clock edge of the first input beat
    ``first_in`` (the marker's when the window has no other beat), of the input marker
    ``last_in`` and of the output marker ``last_out``.
    """

    output: list[dict[str, int]]
    counters: dict[str, int]
    cycles: dict[str, int]


def _fields(payload, layout) -> dict[str, int]:
    """The fields of a sampled payload (an ``amaranth.lib.data.Const``) as integers."""
    out = {}
    for name, _ in layout:
        value = getattr(payload, name)
        out[name] = value.as_bits() if hasattr(value, "as_bits") else int(value)
    return out


class TileDriver:
    """Drive ``windows`` through ``dut`` (a tile's ports) in one testbench.

    Parameters
    ----------
    dut : amaranth.lib.wiring.Component
        Has ``load``, ``i``, ``o`` (streams), ``busy`` and a ``cnt_<name>`` port per counter.
    windows : sequence of Window
    counters : iterable of str
        Counter names read after each window.
    o_ready, i_valid : float
        Probability that ``o.ready`` / ``i.valid`` is high on a clock (random backpressure and
        input bubbles), drawn from ``random.Random(seed)``; in ``(0, 1]``.
    on_beat : callable, optional
        The trace hook: called with a :class:`Beat` for every beat taken on ``load``, ``i``
        and ``o``, in the order the beats go through.

    After the simulation, :attr:`results` holds one :class:`WindowRun` per window.
    """

    def __init__(self, dut, windows: Sequence[Window], counters: Iterable[str], *,
                 o_ready: float = 1.0, i_valid: float = 1.0, seed: int = 0,
                 on_beat: Callable[[Beat], None] | None = None):
        self.dut = dut
        self.windows = list(windows)
        self.counters = list(counters)
        self.o_ready = check_probability("o_ready", o_ready)
        self.i_valid = check_probability("i_valid", i_valid)
        self.on_beat = on_beat
        self.results: list[WindowRun] = []
        self._rng = random.Random(seed)
        self._out_layout = dut.o.payload.shape()
        self._packers = {port: packer(port) for port in (dut.load, dut.i)}
        # what the driver holds on the tile's inputs: each is set only when it changes, since
        # every ctx.set of a testbench settles the whole design
        self._ready = False
        self._valid = dict.fromkeys(self._packers, False)
        self._offered = dict.fromkeys(self._packers)
        self._cycle = 0
        self._window = 0
        self._output: list[dict[str, int]] = []
        self._last_out = 0

    def _beat(self, port: str, payload: dict[str, int]) -> None:
        if self.on_beat is not None:
            self.on_beat(Beat(port, payload, self._cycle, self._window))

    async def _clock(self, ctx, stream=None, offer=None, *, output: bool = True) -> bool:
        """One clock edge, offering a beat on ``stream`` if given; True if it was taken.
        ``offer``: the beat's fields and ``(signal, value)`` that drive its payload.

        With ``output``, ``o.ready`` is drawn for this clock and an output beat is taken;
        without it (while loading) ``o.ready`` is low.
        """
        o = self.dut.o
        ready = bool(output and (self.o_ready >= 1.0 or self._rng.random() < self.o_ready))
        if ready != self._ready:
            ctx.set(o.ready, ready)
            self._ready = ready
        # a stream's valid stays high from one taken beat to the next one offered on the next
        # clock (the tile sees the same values at every edge as if it fell in between)
        for port, high in self._valid.items():
            if high and port is not stream:
                ctx.set(port.valid, 0)
                self._valid[port] = False
        if stream is not None:
            if not self._valid[stream]:
                ctx.set(stream.valid, 1)
                self._valid[stream] = True
            if self._offered[stream] is not offer:
                ctx.set(*offer[1])
                self._offered[stream] = offer
            _, _, valid, out, taken = await ctx.tick().sample(o.valid, o.payload, stream.ready)
        else:
            _, _, valid, out = await ctx.tick().sample(o.valid, o.payload)
            taken = False
        self._cycle += 1
        if valid and ready:
            beat = _fields(out, self._out_layout)
            self._output.append(beat)
            self._beat("o", beat)
            if beat["last"]:
                self._last_out = self._cycle
        if taken:
            self._offered[stream] = None  # taken: the next beat, even an equal one, is new
            self._beat("load" if stream is self.dut.load else "i", dict(offer[0]))
        return bool(taken)

    async def _put(self, ctx, stream, payload, *, gaps: bool, output: bool) -> int:
        """Offer ``payload`` until taken (after random bubbles with ``gaps``); its edge."""
        offer = (payload, self._packers[stream](payload))  # packed once, offered until taken
        while gaps and self.i_valid < 1.0 and self._rng.random() >= self.i_valid:
            await self._clock(ctx)
        while not await self._clock(ctx, stream, offer, output=output):
            pass
        return self._cycle

    async def testbench(self, ctx) -> None:
        """The testbench coroutine (``async def tb(ctx)``) that drives every window."""
        dut = self.dut
        for n, window in enumerate(self.windows):
            self._window = n
            for target, addr, word in window.load or ():
                payload = {"target": target, "addr": addr, "data": word}
                await self._put(ctx, dut.load, payload, gaps=False, output=False)
            if not window.beats:
                raise ValueError(f"window {n} has no input beat (its marker included)")
            start = len(self._output)
            edges = [await self._put(ctx, dut.i, beat, gaps=True, output=True)
                     for beat in window.beats]
            while ctx.get(dut.busy):  # high until the output marker is taken
                await self._clock(ctx)
            beats = [(0, 0, b["last"], 0) for b in self._output[start:]]
            marked_output(beats, f"window {n}")
            self.results.append(WindowRun(
                output=self._output[start:],
                counters=read_counters(ctx, dut, self.counters),
                cycles={"first_in": edges[0], "last_in": edges[-1], "last_out": self._last_out},
            ))

    def run(self, *, top=None, vcd: str | None = None) -> list[WindowRun]:
        """Simulate (``top``, default the ``dut``) with this driver; the windows' results."""
        run_simulator(self.dut if top is None else top, self.testbench, vcd=vcd)
        return self.results
