"""Typed valid/ready stream driver and monitor with random backpressure (``amaranth.lib.stream``).

A stream port ``<p>`` of a generated module appears in Verilog as ``<p>__valid``,
``<p>__ready`` and ``<p>__payload``. Payload field offsets and widths come from the manifest
(:class:`PayloadLayout`), never retyped here.

Timing discipline: every process writes its signals right after a rising edge and samples in
the read-only phase of the same cycle, so a beat observed there with ``valid & ready``
transfers at the next rising edge. Both Icarus and Verilator agree on this.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from cocotb_tests.layout import PayloadLayout


def _int(value) -> int:
    return int(value)


@dataclass
class Beat:
    """One transferred beat: decoded payload, the cycle it transferred, and whether it stalled."""

    payload: dict
    cycle: int
    stalled: bool


@dataclass
class StreamStats:
    beats: int = 0
    stall_cycles: int = 0
    idle_cycles: int = 0
    protocol_errors: list[str] = field(default_factory=list)


class _StreamEnd:
    """The handles and bookkeeping a driver and a monitor of stream ``<port>`` both hold."""

    def __init__(self, dut, port, layout: PayloadLayout, clk, rst, rng) -> None:
        self.valid = getattr(dut, f"{port}__valid")
        self.ready = getattr(dut, f"{port}__ready")
        self.payload = getattr(dut, f"{port}__payload") if layout.width else None
        self.port = port
        self.layout = layout
        self.clk, self.rst = clk, rst
        self.rng = rng
        self.stats = StreamStats()
        self.on_beat: list[Callable[[Beat], None]] = []
        self._task = None
        self.cycle = 0

    def start(self) -> None:
        """Start the process that drives (or takes) the stream."""
        import cocotb

        self._task = cocotb.start_soon(self._run())

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _run(self) -> None:
        raise NotImplementedError


class StreamDriver(_StreamEnd):
    """Drive a stream source into the design: ``valid`` + ``payload``, honour ``ready``.

    Parameters
    ----------
    dut : cocotb handle
    port : str
        Stream port name (``<port>__valid`` etc.).
    layout : PayloadLayout
    clk, rst : cocotb handles
    rng : random.Random
    p_idle : float
        Probability of leaving a cycle idle before offering the next beat (source backpressure).
    """

    def __init__(self, dut, port, layout: PayloadLayout, clk, rst, rng, p_idle=0.0):
        super().__init__(dut, port, layout, clk, rst, rng)
        self.p_idle = p_idle
        self.queue: deque = deque()
        self.sent: list[Beat] = []
        self._current = None
        self._stalled = False
        self.valid.value = 0

    def send(self, payloads: Iterable[Mapping[str, int]]) -> None:
        self.queue.extend(dict(p) for p in payloads)

    def clear(self) -> None:
        """Drop queued beats and the beat in flight (used when the design is reset)."""
        self.queue.clear()
        self._current = None
        self.valid.value = 0

    @property
    def idle(self) -> bool:
        return self._current is None and not self.queue

    async def _run(self) -> None:
        from cocotb.triggers import ReadOnly, RisingEdge

        ready_seen = False
        while True:
            await RisingEdge(self.clk)
            self.cycle += 1
            if self._current is not None and ready_seen and not self._in_reset:
                beat = Beat(self._current, self.cycle, self._stalled)
                self.sent.append(beat)
                self.stats.beats += 1
                for cb in self.on_beat:
                    cb(beat)
                self._current = None
            if self._current is None:
                if self.queue and self.rng.random() >= self.p_idle:
                    self._current = self.queue.popleft()
                    self._stalled = False
                    if self.payload is not None:
                        self.payload.value = self.layout.pack(self._current)
                    self.valid.value = 1
                else:
                    self.valid.value = 0
                    self.stats.idle_cycles += 1
            await ReadOnly()
            self._in_reset = bool(_int(self.rst.value))
            ready_seen = self._current is not None and bool(_int(self.ready.value))
            if self._current is not None and not ready_seen:
                self._stalled = True
                self.stats.stall_cycles += 1

    _in_reset = False


class StreamMonitor(_StreamEnd):
    """Sink a stream out of the design: drive a random ``ready``, record every beat.

    ``p_stall`` is the probability that ``ready`` is low in a cycle (sink backpressure). The
    monitor also checks the stream rules: while ``valid`` waits for ``ready`` it must stay high
    and the payload must not change.
    """

    def __init__(self, dut, port, layout: PayloadLayout, clk, rst, rng, p_stall=0.0):
        super().__init__(dut, port, layout, clk, rst, rng)
        self.p_stall = p_stall
        self.beats: list[Beat] = []
        self.ready.value = 0

    def stop(self) -> None:
        super().stop()
        self.ready.value = 0

    async def _run(self) -> None:
        from cocotb.triggers import ReadOnly, RisingEdge

        waiting = None  # raw payload of a beat that was offered but not taken
        stalled = False
        while True:
            await RisingEdge(self.clk)
            self.cycle += 1
            ready = self.rng.random() >= self.p_stall
            self.ready.value = int(ready)
            await ReadOnly()
            if _int(self.rst.value):
                waiting, stalled = None, False
                continue
            valid = bool(_int(self.valid.value))
            raw = _int(self.payload.value) if self.payload is not None and valid else 0
            if waiting is not None:
                if not valid:
                    self.stats.protocol_errors.append(
                        f"{self.port}: valid dropped before ready at cycle {self.cycle}"
                    )
                elif raw != waiting:
                    self.stats.protocol_errors.append(
                        f"{self.port}: payload changed while stalled at cycle {self.cycle}"
                    )
            if not valid:
                waiting, stalled = None, False
                continue
            if ready:
                beat = Beat(self.layout.unpack(raw), self.cycle, stalled)
                self.beats.append(beat)
                self.stats.beats += 1
                for cb in self.on_beat:
                    cb(beat)
                waiting, stalled = None, False
            else:
                waiting, stalled = raw, True
                self.stats.stall_cycles += 1


def make_rng(seed: int, *names: str) -> random.Random:
    """An independent, reproducible generator per (seed, purpose)."""
    return random.Random(f"{seed}:" + ":".join(names))
