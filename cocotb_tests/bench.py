"""Simulator-side helpers shared by every test bench: configuration, clock, reset, report."""

from __future__ import annotations

import json
import os
import time

from cocotb_tests.scoreboard import InOrderScoreboard
from cocotb_tests.sim import ENV_CONFIG, ENV_REPORT

CLOCK_PERIOD_NS = 10


def load_config() -> dict:
    """The bench configuration written by :func:`cocotb_tests.sim.run`."""
    path = os.environ.get(ENV_CONFIG)
    if not path:
        raise RuntimeError(f"{ENV_CONFIG} is not set: run benches through cocotb_tests.sim.run")
    with open(path) as f:
        return json.load(f)


def write_report(report: dict) -> None:
    path = os.environ.get(ENV_REPORT)
    if path:
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(report, f, sort_keys=True, indent=1)
        os.replace(tmp, path)


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


async def reset(dut, cycles: int = 2) -> None:
    """Synchronous active-high reset for ``cycles`` rising edges."""
    from cocotb.triggers import RisingEdge

    dut.rst.value = 1
    for _ in range(cycles):
        await RisingEdge(dut.clk)
    dut.rst.value = 0


async def cycles(dut, n: int) -> None:
    from cocotb.triggers import RisingEdge

    for _ in range(n):
        await RisingEdge(dut.clk)


async def wait_until(dut, predicate, timeout: int, what: str) -> int:
    """Wait (up to ``timeout`` cycles) until ``predicate()`` holds in a read-only phase.

    Returns the cycles waited, right after the rising edge that follows the cycle in which the
    predicate held (so the caller may write signals). Must not be called in a read-only phase.
    """
    from cocotb.triggers import ReadOnly, RisingEdge

    for n in range(timeout + 1):
        await ReadOnly()
        if predicate():
            await RisingEdge(dut.clk)
            return n
        await RisingEdge(dut.clk)
    raise AssertionError(f"timeout after {timeout} cycles waiting for {what}")


def check_scoreboards(*boards: InOrderScoreboard, limit: int = 10) -> list[str]:
    """Finish the scoreboards; return the first ``limit`` mismatch messages."""
    out: list[str] = []
    for board in boards:
        out.extend(str(m) for m in board.finish())
    return out[:limit]


class WallClock:
    def __init__(self) -> None:
        self.start = time.perf_counter()

    @property
    def seconds(self) -> float:
        return time.perf_counter() - self.start


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
