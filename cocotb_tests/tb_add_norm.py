"""cocotb bench for ``mttfs_add_norm``: load a golden residual add's and LayerNorm's constants,
run rows of the residual stream and a tile's sums, check every output beat (the new stream
and its packed codes), and count the clocks of each row.

Stimulus and expected outputs come from :mod:`regression.units` (the golden
``golden_models.residual.ResidualAdd``, ``golden_models.int_layernorm.IntLayerNorm`` and the
threshold walks) as JSON. The two inputs are driven independently, each with random idle
cycles; ``o`` has random ``ready``.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from cocotb_tests.bench import Bench, wait_until
from regression.scoreboard import InOrderScoreboard


class AddNormBench(Bench):
    """Drivers of ``load``, ``r`` and ``v``, a monitor of ``o`` and its scoreboard; the clocks
    of every row from its first input pair to its last output beat."""

    def __init__(self, dut) -> None:
        super().__init__(dut)
        self.hidden = int(self.cfg["hidden"])
        self.load = self.driver("load")
        self.r = self.driver("r")
        self.v = self.driver("v")
        self.out = self.monitor("o")
        self.beats = InOrderScoreboard("o")
        self.received = self.expected = 0
        self.cycles = 0
        self.firsts: list[int] = []
        self.row_cycles: list[int] = []
        self.r.on_beat.append(self._on_in)
        self.out.on_beat.append(self._on_out)
        self._taken = 0

    def _on_in(self, beat) -> None:
        if self._taken % self.hidden == 0:
            self.firsts.append(beat.cycle)
        self._taken += 1

    def _on_out(self, beat) -> None:
        p = beat.payload
        self.beats.observe((p["r"], p["q"]))
        self.received += 1
        if self.received % self.hidden == 0:
            row = len(self.row_cycles)
            first = self.firsts[row] if row < len(self.firsts) else beat.cycle
            self.row_cycles.append(beat.cycle - first + 1)

    async def _count(self) -> None:
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            self.cycles += 1

    async def start(self) -> None:
        await self.power_up()
        await self.release(self.load, self.r, self.v, self.out)
        cocotb.start_soon(self._count())

    async def drain(self, timeout: int) -> None:
        target = self.expected
        await self.settle(lambda: self.received >= target, (self.r, self.v, self.load), timeout,
                          f"{target} output beats (saw {self.received})")


@cocotb.test()
async def test_add_norm(dut):
    tb = AddNormBench(dut)
    cfg = tb.cfg
    await tb.start()
    corrupt = cfg.get("corrupt")
    slack = tb.slack
    per_row = int(slack * 4 * (2 * tb.hidden + 80))
    rows = 0
    for case in cfg["cases"]:
        await tb.drain(per_row * (len(case["rows"]) + 1))
        tb.load.send([{"target": t, "addr": a, "data": d} for t, a, d in case["load"]])
        await wait_until(dut, lambda: tb.load.idle, int(slack * 4 * len(case["load"])) + 50,
                         "load beats accepted")
        await ClockCycles(dut.clk, 2)
        for row in case["rows"]:
            tb.beats.expect_all(tb.corrupt([tuple(b) for b in row["out"]], corrupt))
            corrupt = None
            tb.r.send([{"r": x} for x in row["r"]])
            tb.v.send([{"v": x} for x in row["v"]])
            tb.expected += len(row["out"])
            rows += 1
    await tb.drain(per_row * (rows + 1))
    await ClockCycles(dut.clk, 4)
    mismatches = tb.beats.finish()
    errors = [str(m) for m in mismatches[:10]] + tb.out.stats.protocol_errors[:5]
    tb.report({
        "bench": "add_norm",
        "T": tb.T,
        "source": cfg["source"],
        "vectors": rows,
        "events": 3 * tb.expected,
        "channels": tb.expected,
        "cycles": tb.cycles,
        "row_cycles": tb.row_cycles,
        "stalled_out_beats": sum(b.stalled for b in tb.out.beats),
        "mismatches": len(mismatches) + len(tb.out.stats.protocol_errors),
        "mismatch_examples": errors,
        "counter_totals_rtl": {},
        "counter_totals_golden": {},
    })
    assert not errors, "\n".join(errors)
