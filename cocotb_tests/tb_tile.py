"""cocotb bench for ``mttfs_tile``: load SRAM images, run windows, check events and counters.

Stimulus and expected results come from :mod:`regression.reference` (golden models) as JSON.
Windows of one block run back to back (the next window's events wait on ``i`` while the tile
fires), with random idle cycles on ``load`` and ``i`` and random ``ready`` on ``o``. One window
per run is hit by a reset (during integrate or during fire); the tile must come back idle,
keep its SRAM, take a fresh config and then run that same window exactly.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from cocotb_tests.bench import END, Bench, event_item, reset_midway, wait_until
from golden_models.mask import transmitted
from regression.coverage import CoverageModel
from regression.scoreboard import InOrderScoreboard


class TileBench(Bench):
    """Drivers, monitor, counter watcher, scoreboards and coverage around one tile."""

    def __init__(self, dut) -> None:
        super().__init__(dut)
        self.counters = [(c["name"], c["port"]) for c in self.cfg["counters"]]
        self.load = self.driver("load")
        self.inp = self.driver("i")
        self.out = self.monitor("o")
        self.events = InOrderScoreboard("o")
        self.counts = InOrderScoreboard("counters")
        self.aborted: InOrderScoreboard | None = None
        self.snapshots: list[tuple] = []
        self.markers = 0
        self.cov = CoverageModel("tile", self.T, tile=True)
        self.out.on_beat.append(self._on_out)
        self.inp.on_beat.append(self._on_in)
        self.stats = {
            "windows": 0,
            "events_in": 0,
            "events_out": 0,
            "suppressed": 0,
            "resets": 0,
            "cycles": 0,
        }
        self._watch = None

    # -- monitors ------------------------------------------------------------------------------

    def _on_out(self, beat) -> None:
        p = beat.payload
        item = event_item(p, "t")
        board = self.aborted if self.aborted is not None else self.events
        board.observe(item)
        if p["last"]:
            self.markers += 1
        elif self.aborted is None:
            self.cov.sample_out(p["t"], False, beat.stalled)

    def _on_in(self, beat) -> None:
        if not beat.payload["last"]:
            self.cov.sample_in(beat.payload["tau"])

    async def _watch_busy(self) -> None:
        """Snapshot the counters in the cycle ``busy`` falls (they hold until the next start)."""
        prev = False
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            self.stats["cycles"] += 1
            if int(self.dut.rst.value):
                prev = False
                continue
            busy = bool(int(self.dut.busy.value))
            if prev and not busy and self.aborted is None:
                self.snapshots.append(
                    tuple(int(getattr(self.dut, port).value) for _, port in self.counters)
                )
                self.counts.observe(self.snapshots[-1])
            prev = busy

    # -- phases --------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.power_up()
        await self.release(self.load, self.inp, self.out)
        self._watch = cocotb.start_soon(self._watch_busy())

    async def drain(self, timeout: int) -> None:
        """Wait until every queued window has left its marker and the tile is idle."""
        target = self.markers_expected
        await self.settle(lambda: self.markers >= target, (self.inp, self.load), timeout,
                          f"{target} window markers (saw {self.markers})")

    markers_expected = 0

    async def load_block(self, beats: list[dict], timeout: int) -> None:
        self.load.send(beats)
        await wait_until(self.dut, lambda: self.load.idle, timeout, "load beats accepted")
        await ClockCycles(self.dut.clk, 2)

    def queue_window(self, win: dict, corrupt: str | None = None) -> None:
        events = [tuple(e) for e in win["out"]]
        events = self.corrupt(events, corrupt)
        self.events.expect_all(events)
        self.events.expect((END, 0, 0))
        self.counts.expect(tuple(win["counters"][name] for name, _ in self.counters))
        self.inp.send([{"addr": a, "tau": t, "last": 0} for a, t in win["in"]])
        self.inp.send([{"addr": 0, "tau": 0, "last": 1}])
        self.markers_expected += 1

    def window_done(self, win: dict, mask: tuple[int, int]) -> None:
        """Sample the coverage only the golden taus give (masked events, fire-step groups)."""
        i_max, k = mask
        per_step: dict[int, int] = {}
        for tau in win["tau"]:
            per_step[tau] = per_step.get(tau, 0) + 1
            if not transmitted(tau, i_max, k):
                self.cov.sample_out(tau, True, False)
        for t, n in per_step.items():
            self.cov.sample_fire(t, n)
        self.stats["windows"] += 1
        self.stats["events_in"] += len(win["in"])
        self.stats["events_out"] += len(win["out"])
        self.stats["suppressed"] += win["counters"]["events_suppressed"]

    async def reset_window(self, win: dict, phase: str, rng, timeout: int) -> None:
        """Run ``win`` and reset the tile in ``phase``; check it returns idle."""
        self.aborted = InOrderScoreboard("o(aborted)")
        self.aborted.expect_all([tuple(e) for e in win["out"]])
        self.inp.send([{"addr": a, "tau": t, "last": 0} for a, t in win["in"]])
        self.inp.send([{"addr": 0, "tau": 0, "last": 1}])
        await wait_until(self.dut, lambda: int(self.dut.busy.value), timeout, "window start")
        if phase == "integrate":
            await ClockCycles(self.dut.clk, rng.randrange(1, max(2, len(win["in"]))))
        else:
            await wait_until(self.dut, lambda: self.inp.idle, timeout, "marker accepted")
            # the fire walk takes at least T clocks after the marker
            await ClockCycles(self.dut.clk, rng.randrange(0, self.T // 2 + 1))
        await ReadOnly()
        if not int(self.dut.busy.value):
            raise AssertionError(f"bench error: the {phase} reset came after the window ended")
        await RisingEdge(self.dut.clk)
        # the aborted window may only have produced a correct prefix of its events
        await reset_midway(self.dut, [self.inp], ("busy", "i__ready", "o__valid"), self.aborted)
        self.aborted = None
        self.stats["resets"] += 1
        self.cov.sample_reset(phase)


@cocotb.test()
async def test_tile(dut):
    tb = TileBench(dut)
    cfg = tb.cfg
    await tb.start()
    rng = tb.rng("bench")
    blocks = cfg["blocks"]
    resets = {(b, w): phase for b, w, phase in cfg.get("resets", [])}
    corrupt = cfg.get("corrupt")
    slack = tb.slack
    geo = cfg["geometry"]
    per_window = int(slack * 4 * (geo["n_in"] + geo["T"] * geo["groups"] + geo["neurons"] + 8))
    for b, block in enumerate(blocks):
        await tb.drain(per_window * (len(block["windows"]) + 1))
        await tb.load_block(block["load"], int(slack * 4 * len(block["load"])) + 50)
        mask = (block["i_max_out"], block["k"])
        for w, win in enumerate(block["windows"]):
            if (b, w) in resets:
                await tb.drain(per_window * (len(block["windows"]) + 1))
                await tb.reset_window(win, resets[(b, w)], rng, per_window)
                # config registers reset to their generated values; SRAM rows survive
                await tb.load_block([block["load"][-1]], 200)
            # self-check: corrupt the first window that has output events
            tb.queue_window(win, corrupt if win["out"] else None)
            if win["out"]:
                corrupt = None
            tb.window_done(win, mask)
    await tb.drain(per_window * (sum(len(b["windows"]) for b in blocks) + 1))
    await ClockCycles(dut.clk, 4)
    mismatches = tb.events.finish() + tb.counts.finish()
    errors = [str(m) for m in mismatches[:10]] + tb.out.stats.protocol_errors[:5]
    tb.report(
        {
            "bench": "tile",
            "T": tb.T,
            "windows": tb.stats["windows"],
            "vectors": tb.stats["windows"],
            "events_in": tb.stats["events_in"],
            "events_out": tb.stats["events_out"],
            "events": tb.stats["events_in"] + tb.stats["events_out"],
            "events_suppressed": tb.stats["suppressed"],
            "resets": tb.stats["resets"],
            "cycles": tb.stats["cycles"],
            "stalled_out_beats": sum(b.stalled for b in tb.out.beats),
            "mismatches": len(mismatches) + len(tb.out.stats.protocol_errors),
            "mismatch_examples": errors,
            "counters_checked": len(tb.snapshots),
            "counters_expected": tb.counts.matched + len(tb.counts.mismatches),
            "counter_totals_rtl": _totals(tb.counters, tb.snapshots),
            "counter_totals_golden": {
                name: sum(win["counters"][name] for blk in blocks for win in blk["windows"])
                for name, _ in tb.counters
            },
            "coverage": tb.cov.export(),
        }
    )
    assert not errors, "\n".join(errors)


def _totals(counters, snapshots) -> dict:
    return {name: sum(s[i] for s in snapshots) for i, (name, _) in enumerate(counters)}
