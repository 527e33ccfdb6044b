"""cocotb bench for ``dense_tile``: load SRAM images, run windows of codes, check every packed
output beat and the counters.

Stimulus and expected results come from :mod:`regression.reference` (``dense_blocks``, the
golden :func:`golden_models.dense.run_dense`) as JSON. Windows of one block run back to back,
with random idle cycles on ``load`` and ``i`` and random ``ready`` on ``o``.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from cocotb_tests.bench import END, Bench, wait_until
from regression.scoreboard import InOrderScoreboard


class DenseBench(Bench):
    """Drivers, monitor, counter watcher and scoreboards around one dense tile."""

    def __init__(self, dut) -> None:
        super().__init__(dut)
        self.counters = [(c["name"], c["port"]) for c in self.cfg["counters"]]
        self.load = self.driver("load")
        self.inp = self.driver("i")
        self.out = self.monitor("o")
        self.beats = InOrderScoreboard("o")
        self.counts = InOrderScoreboard("counters")
        self.snapshots: list[tuple] = []
        self.markers = 0
        self.markers_expected = 0
        self.cycles = 0
        self.out.on_beat.append(self._on_out)

    def _on_out(self, beat) -> None:
        p = beat.payload
        if p["last"]:
            self.markers += 1
            self.beats.observe((END,))
        else:
            self.beats.observe((p["addr"], p["codes"]))

    async def _watch_busy(self) -> None:
        """Snapshot the counters in the cycle ``busy`` falls (they hold until the next start)."""
        prev = False
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            self.cycles += 1
            busy = bool(int(self.dut.busy.value))
            if prev and not busy:
                self.snapshots.append(
                    tuple(int(getattr(self.dut, port).value) for _, port in self.counters))
                self.counts.observe(self.snapshots[-1])
            prev = busy

    async def start(self) -> None:
        await self.power_up()
        await self.release(self.load, self.inp, self.out)
        cocotb.start_soon(self._watch_busy())

    async def drain(self, timeout: int) -> None:
        target = self.markers_expected
        await self.settle(lambda: self.markers >= target, (self.inp, self.load), timeout,
                          f"{target} window markers (saw {self.markers})")

    def queue_window(self, win: dict, corrupt: str | None) -> None:
        self.beats.expect_all(self.corrupt([tuple(b) for b in win["out"]], corrupt))
        self.beats.expect((END,))
        self.counts.expect(tuple(win["counters"][name] for name, _ in self.counters))
        self.inp.send([{"code": q, "last": 0} for q in win["codes"]])
        self.inp.send([{"code": 0, "last": 1}])
        self.markers_expected += 1


@cocotb.test()
async def test_dense_tile(dut):
    tb = DenseBench(dut)
    cfg = tb.cfg
    await tb.start()
    geo = cfg["geometry"]
    slack = tb.slack
    per_window = int(slack * 4 * (geo["n_in"] + geo["T"] * geo["groups"] + geo["neurons"] + 8))
    corrupt = cfg.get("corrupt")
    windows = codes = 0
    for block in cfg["blocks"]:
        await tb.drain(per_window * (len(block["windows"]) + 1))
        tb.load.send(block["load"])
        await wait_until(dut, lambda: tb.load.idle, int(slack * 4 * len(block["load"])) + 50,
                         "load beats accepted")
        await ClockCycles(dut.clk, 2)
        for win in block["windows"]:
            tb.queue_window(win, corrupt)
            corrupt = None
            windows += 1
            codes += len(win["codes"])
    await tb.drain(per_window * (windows + 1))
    await ClockCycles(dut.clk, 4)
    mismatches = tb.beats.finish() + tb.counts.finish()
    errors = [str(m) for m in mismatches[:10]] + tb.out.stats.protocol_errors[:5]
    golden = {name: sum(w["counters"][name] for b in cfg["blocks"] for w in b["windows"])
              for name, _ in tb.counters}
    tb.report({
        "bench": "dense_tile",
        "T": tb.T,
        "windows": windows,
        "vectors": windows,
        "events": codes + golden["codes_out"],
        "codes_in": codes,
        "cycles": tb.cycles,
        "stalled_out_beats": sum(b.stalled for b in tb.out.beats),
        "mismatches": len(mismatches) + len(tb.out.stats.protocol_errors),
        "mismatch_examples": errors,
        "counters_checked": len(tb.snapshots),
        "counters_expected": tb.counts.matched + len(tb.counts.mismatches),
        "counter_totals_rtl": {name: sum(s[i] for s in tb.snapshots)
                               for i, (name, _) in enumerate(tb.counters)},
        "counter_totals_golden": golden,
    })
    assert not errors, "\n".join(errors)
