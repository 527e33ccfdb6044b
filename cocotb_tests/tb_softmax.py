"""cocotb bench for ``mttfs_softmax``: load a golden softmax's constants, run rows of raw
scores, check every output code and marker, and count the clocks of each row.

Stimulus and expected codes come from :mod:`regression.units` (the golden
``golden_models.int_softmax.IntSoftmax`` and the threshold walk) as JSON. Rows run back to back
with random idle cycles on ``load`` and ``i`` and random ``ready`` on ``o``.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from cocotb_tests.bench import END, Bench, wait_until
from regression.scoreboard import InOrderScoreboard


class SoftmaxBench(Bench):
    """Drivers, monitor and scoreboard around one softmax unit; the clocks of every row from
    its first input beat to its output marker."""

    def __init__(self, dut) -> None:
        super().__init__(dut)
        self.load = self.driver("load")
        self.inp = self.driver("i")
        self.out = self.monitor("o")
        self.codes = InOrderScoreboard("o")
        self.markers = self.markers_expected = 0
        self.cycles = 0
        self.firsts: list[int] = []  # cycle of each row's first input beat
        self.row_cycles: list[int] = []
        self.out.on_beat.append(self._on_out)
        self.inp.on_beat.append(self._on_in)
        self._row_open = False

    def _on_in(self, beat) -> None:
        if not self._row_open:
            self.firsts.append(beat.cycle)
            self._row_open = True
        if beat.payload["last"]:
            self._row_open = False

    def _on_out(self, beat) -> None:
        p = beat.payload
        if p["last"]:
            self.markers += 1
            self.codes.observe((END,))
            first = self.firsts[len(self.row_cycles)] if len(self.firsts) > len(
                self.row_cycles) else beat.cycle
            self.row_cycles.append(beat.cycle - first + 1)
        else:
            self.codes.observe(p["code"])

    async def _count(self) -> None:
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            self.cycles += 1

    async def start(self) -> None:
        await self.power_up()
        await self.release(self.load, self.inp, self.out)
        cocotb.start_soon(self._count())

    async def drain(self, timeout: int) -> None:
        target = self.markers_expected
        await self.settle(lambda: self.markers >= target, (self.inp, self.load), timeout,
                          f"{target} row markers (saw {self.markers})")


@cocotb.test()
async def test_softmax(dut):
    tb = SoftmaxBench(dut)
    cfg = tb.cfg
    await tb.start()
    corrupt = cfg.get("corrupt")
    slack = tb.slack
    rows = codes = 0
    overflow = 0
    for case in cfg["cases"]:
        await tb.drain(int(slack * 8 * sum(len(r["scores"]) + 40 for r in case["rows"])) + 100)
        tb.load.send([{"target": t, "addr": a, "data": d} for t, a, d in case["load"]])
        await wait_until(dut, lambda: tb.load.idle, int(slack * 4 * len(case["load"])) + 50,
                         "load beats accepted")
        await ClockCycles(dut.clk, 2)
        for row in case["rows"]:
            tb.codes.expect_all(tb.corrupt(list(row["codes"]), corrupt))
            if row["codes"]:  # the self-check alters a code of the first row that has one
                corrupt = None
            tb.codes.expect((END,))
            tb.inp.send([{"score": a, "valid": v, "last": 0}
                         for a, v in zip(row["scores"], row["valid"], strict=True)])
            tb.inp.send([{"score": 0, "valid": 0, "last": 1}])
            tb.markers_expected += 1
            rows += 1
            codes += len(row["codes"])
    await tb.drain(int(slack * 8 * (codes + 40 * rows)) + 100)
    overflow += int(dut.overflow.value)
    await ClockCycles(dut.clk, 4)
    mismatches = tb.codes.finish()
    errors = [str(m) for m in mismatches[:10]] + tb.out.stats.protocol_errors[:5]
    if overflow:
        errors.append("overflow is high after rows within seq_len")
    tb.report({
        "bench": "softmax",
        "T": tb.T,
        "source": cfg["source"],
        "vectors": rows,
        "events": 2 * codes,
        "codes_out": codes,
        "cycles": tb.cycles,
        "row_cycles": tb.row_cycles,
        "stalled_out_beats": sum(b.stalled for b in tb.out.beats),
        "mismatches": len(mismatches) + len(tb.out.stats.protocol_errors) + overflow,
        "mismatch_examples": errors,
        "counter_totals_rtl": {},
        "counter_totals_golden": {},
    })
    assert not errors, "\n".join(errors)
