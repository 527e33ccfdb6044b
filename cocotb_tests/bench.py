"""Simulator-side helpers shared by every test bench: configuration, clock, reset, report."""

from __future__ import annotations

import json
import os
import time

from cocotb_tests.layout import PayloadLayout
from cocotb_tests.stream import StreamDriver, StreamMonitor, make_rng
from regression.scoreboard import InOrderScoreboard
from regression.sim import ENV_CONFIG, ENV_REPORT
from toolkit_base.files import write_atomic

CLOCK_PERIOD_NS = 10
#: Clocks between two looks at ``done`` of a harness that stops its own clock when done.
POLL_CLOCKS = 1 << 16
#: First element of a window's (or vector's) end-marker item on the scoreboards.
END = "end"


def event_item(payload: dict, time_field: str) -> tuple:
    """Scoreboard item of an output beat: ``(addr, t)``, or ``(END, addr, t)`` for a marker."""
    item = (payload["addr"], payload[time_field])
    return (END, *item) if payload["last"] else item


def load_config() -> dict:
    """The bench configuration written by :func:`regression.sim.run`."""
    path = os.environ.get(ENV_CONFIG)
    if not path:
        raise RuntimeError(f"{ENV_CONFIG} is not set: run benches through regression.sim.run")
    with open(path) as f:
        return json.load(f)


def write_report(report: dict) -> None:
    path = os.environ.get(ENV_REPORT)
    if path:
        write_atomic(path, json.dumps(report, sort_keys=True, indent=1))


def merge_report(update: dict) -> dict:
    """Merge ``update`` into the report file (several cocotb tests may share one run)."""
    path = os.environ.get(ENV_REPORT)
    report: dict = {}
    if path and os.path.exists(path):
        with open(path) as f:
            report = json.load(f)
    for key, value in update.items():
        if key in report and isinstance(value, dict) and isinstance(report[key], dict):
            report[key].update(value)
        else:
            report[key] = value
    write_report(report)
    return report


async def start_clock(dut) -> None:
    import cocotb
    from cocotb.clock import Clock

    cocotb.start_soon(Clock(dut.clk, CLOCK_PERIOD_NS, unit="ns").start())


async def start_and_wait(dut, inputs: dict, *, internal_clock: bool = False) -> float:
    """Run a self-checking harness (the router soak, the fast harness): set its configuration
    ``inputs``, reset, pulse ``start`` and wait for ``done`` (one trigger, no per-clock Python).
    ``internal_clock``: the harness makes its own clock (reset input ``reset``), stops it at
    ``done`` and is polled every :data:`POLL_CLOCKS` clocks; else the bench drives ``clk``
    (reset ``rst``). Returns the wall seconds from ``start`` to ``done``."""
    from cocotb.triggers import ClockCycles, RisingEdge, Timer

    for name, value in inputs.items():
        getattr(dut, name).value = int(value)
    dut.start.value = 0
    if internal_clock:
        # the harness's own clock rises at 5, 15, 25, ... ns: write between its edges
        dut.reset.value = 1
        await Timer(3 * CLOCK_PERIOD_NS, unit="ns")
        dut.reset.value = 0
        dut.start.value = 1
        await Timer(CLOCK_PERIOD_NS, unit="ns")
    else:
        await start_clock(dut)
        dut.rst.value = 1
        await ClockCycles(dut.clk, 2)
        dut.rst.value = 0
        dut.start.value = 1
        await RisingEdge(dut.clk)
    dut.start.value = 0
    t0 = time.perf_counter()
    if internal_clock:
        # its clock stops at ``done``: poll with long timers, so the simulator runs no
        # per-clock callback (a value-change callback on ``done`` is checked every evaluation)
        while not int(dut.done.value):
            await Timer(POLL_CLOCKS * CLOCK_PERIOD_NS, unit="ns")
    else:
        await RisingEdge(dut.done)
    return time.perf_counter() - t0


async def reset(dut, cycles: int = 2) -> None:
    """Synchronous active-high reset for ``cycles`` rising edges."""
    from cocotb.triggers import ClockCycles

    dut.rst.value = 1
    await ClockCycles(dut.clk, cycles)
    dut.rst.value = 0


async def wait_until(dut, predicate, timeout: int, what: str) -> int:
    """Wait (up to ``timeout`` cycles) until ``predicate()`` holds in a read-only phase.

    Returns the cycles waited, right after the rising edge that follows the cycle in which the
    predicate held (so the caller may write signals). Must not be called in a read-only phase.
    """
    from cocotb.triggers import ReadOnly, RisingEdge, SimTimeoutError, with_timeout

    async def poll() -> int:
        n = 0
        while True:
            await ReadOnly()
            if predicate():
                return n
            await RisingEdge(dut.clk)
            n += 1

    # timeout + 1 checks, one per cycle; half a cycle more so the last check is never cut short
    try:
        n = await with_timeout(poll(), (timeout + 0.5) * CLOCK_PERIOD_NS, "ns")
    except SimTimeoutError:
        raise AssertionError(f"timeout after {timeout} cycles waiting for {what}") from None
    # the caller's own edge: what it writes next lands where it did before the poll
    await RisingEdge(dut.clk)
    return n


def check_scoreboards(*boards: InOrderScoreboard, limit: int = 10) -> list[str]:
    """Finish the scoreboards; return the first ``limit`` mismatch messages."""
    out: list[str] = []
    for board in boards:
        out.extend(str(m) for m in board.finish())
    return out[:limit]


class WallClock:
    def __init__(self) -> None:
        self.start = time.perf_counter()
        self.cpu_start = time.process_time()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.start

    @property
    def cpu_seconds(self) -> float:
        """CPU time of the simulator process (simulator and bench) since the start."""
        return time.process_time() - self.cpu_start


def corrupt_expectation(expected: list, mode: str | None, rng) -> list:
    """Self-check: alter or drop one expected item so a sound scoreboard must fail.

    ``mode`` None leaves ``expected`` as is; ``"alter"`` changes one field of one item;
    ``"drop"`` removes one item.
    """
    if mode is None or not expected:
        return expected
    out = list(expected)
    i = rng.randrange(len(out))
    if mode == "drop":
        del out[i]
    elif mode == "alter":
        item = out[i]
        if isinstance(item, tuple):
            out[i] = (*item[:-1], item[-1] + 1)
        else:
            out[i] = item + 1
    else:
        raise ValueError(f"corrupt must be None, 'alter' or 'drop', not {mode!r}")
    return out


def check_ports(dut, entry: dict) -> None:
    """Every port the manifest lists exists on the design with the listed width."""
    errors = []
    for port in entry.get("ports", []):
        try:
            handle = getattr(dut, port["name"])
        except AttributeError:
            errors.append(f"manifest port {port['name']!r} is not in the design")
            continue
        try:
            width = len(handle)
        except TypeError:
            width = 1
        if width != int(port["width"]):
            errors.append(
                f"port {port['name']!r} is {width} bits, the manifest says {port['width']}"
            )
    assert not errors, "; ".join(errors)


class EventSink:
    """Takes the output beats of a monitor: each goes to the current scoreboard ``board`` (the
    main one, ``events``, or one of an aborted run), markers are counted, and the time of every
    event on the main board is sampled by ``cov``.

    Parameters
    ----------
    events : InOrderScoreboard
    time_field : str
        Payload field of the event time (``"tau"`` or ``"t"``).
    cov : CoverageModel
    """

    def __init__(self, events: InOrderScoreboard, time_field: str, cov) -> None:
        self.events = self.board = events
        self.time_field = time_field
        self.cov = cov
        self.markers = 0

    def __call__(self, beat) -> None:
        p = beat.payload
        self.board.observe(event_item(p, self.time_field))
        if p["last"]:
            self.markers += 1
        elif self.board is self.events:
            self.cov.sample_out(p[self.time_field], False, beat.stalled)


class Bench:
    """What every stream bench starts from: its configuration, and drivers and monitors of
    the module's streams with their seeded idle and stall generators.

    Parameters
    ----------
    dut : cocotb handle
    cfg : dict, optional
        The bench configuration; by default :func:`load_config`.
    """

    def __init__(self, dut, cfg: dict | None = None) -> None:
        self.dut = dut
        self.cfg = load_config() if cfg is None else cfg
        self.clock = WallClock()
        self.seed = int(self.cfg["seed"])
        self.T = int(self.cfg["T"])
        self.p_idle = float(self.cfg["p_idle"])
        self.p_stall = float(self.cfg["p_stall"])

    @property
    def slack(self) -> float:
        """Clocks a beat may take under the random idle and stall (``1 / (1 - p)`` for the
        larger probability, at most 20): the factor of every timeout of a bench."""
        return 1.0 / max(0.05, 1.0 - max(self.p_idle, self.p_stall))

    def layout(self, port: str) -> PayloadLayout:
        """Payload layout of stream ``port`` from the manifest."""
        return PayloadLayout.of(self.cfg["module"]["streams"][port]["fields"])

    def driver(self, port: str, *tags: str) -> StreamDriver:
        """Driver of input stream ``port``; its idle cycles drawn from ``(seed, *tags)``
        (``tags`` default to ``port``)."""
        rng = make_rng(self.seed, *(tags or (port,)))
        dut = self.dut
        return StreamDriver(dut, port, self.layout(port), dut.clk, dut.rst, rng, self.p_idle)

    def monitor(self, port: str, *tags: str) -> StreamMonitor:
        """Monitor of output stream ``port``; its stalls drawn from ``(seed, *tags)``."""
        rng = make_rng(self.seed, *(tags or (port,)))
        dut = self.dut
        return StreamMonitor(dut, port, self.layout(port), dut.clk, dut.rst, rng, self.p_stall)

    def rng(self, *tags: str):
        """A generator of this bench's seed for purpose ``tags``."""
        return make_rng(self.seed, *tags)

    def corrupt(self, expected: list, mode: str | None) -> list:
        """:func:`corrupt_expectation` with this bench's generator."""
        return corrupt_expectation(expected, mode, self.rng("corrupt"))

    def report(self, update: dict) -> dict:
        """:func:`merge_report` of ``update`` plus the simulation's wall and CPU time."""
        return merge_report({**update, "sim_seconds": self.clock.seconds,
                             "cpu_seconds": self.clock.cpu_seconds})

    async def power_up(self) -> None:
        """Check the ports against the manifest, start the clock, hold reset."""
        check_ports(self.dut, self.cfg["module"])
        await start_clock(self.dut)
        self.dut.rst.value = 1

    async def release(self, *streams) -> None:
        """Start ``streams`` under reset, then release reset after 3 clocks."""
        from cocotb.triggers import ClockCycles

        for stream in streams:
            stream.start()
        await ClockCycles(self.dut.clk, 3)
        self.dut.rst.value = 0

    async def settle(self, done, drivers, timeout: int, what: str) -> None:
        """Wait until ``done()`` holds, every one of ``drivers`` is idle and the module is not
        ``busy`` (``what`` names the wait in the timeout's message), then 2 more clocks."""
        from cocotb.triggers import ClockCycles

        await wait_until(
            self.dut,
            lambda: done() and all(d.idle for d in drivers) and not int(self.dut.busy.value),
            timeout, what)
        await ClockCycles(self.dut.clk, 2)


async def reset_midway(dut, drivers, outputs: tuple[str, ...], aborted: InOrderScoreboard) -> None:
    """Reset the design for 2 clocks (dropping what ``drivers`` hold), then check it is idle:
    every signal of ``outputs`` low right after reset, and the events ``aborted`` saw a correct
    prefix of the interrupted run's."""
    from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

    dut.rst.value = 1
    for drv in drivers:
        drv.clear()
    await ClockCycles(dut.clk, 2)
    dut.rst.value = 0
    await ReadOnly()
    problems = [f"{n} high after reset" for n in outputs if int(getattr(dut, n).value)]
    await RisingEdge(dut.clk)
    problems += [str(m) for m in aborted.mismatches]
    assert not problems, "; ".join(problems)
