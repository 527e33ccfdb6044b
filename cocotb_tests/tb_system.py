"""cocotb bench for ``mttfs_system``: a multi-layer QNN mapped on the mesh, end to end.

Load the chain (tile images, route tables, node configuration, layer count) through ``load``,
then run inferences: codes on ``i``, output events of the last layer on ``o`` (random
``ready``), then every counter (per tile, encoder, flits, hops) against the golden reference.
One inference is cut by a reset; the system must come back idle, take a reload of the tile
mask registers and run that inference exactly.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from cocotb_tests.bench import END, Bench, EventSink, reset_midway, wait_until
from golden_models.mask import transmitted
from regression.coverage import CoverageModel
from regression.scoreboard import InOrderScoreboard


@cocotb.test()
async def test_system(dut):
    tb = Bench(dut)
    cfg, T = tb.cfg, tb.T
    await tb.power_up()
    load, drv, mon = tb.driver("load", "l"), tb.driver("i"), tb.monitor("o")
    cov = CoverageModel("system", T, system=True, layers=int(cfg["layers"]))
    events = InOrderScoreboard("o")
    counts = InOrderScoreboard("counters")
    mask = (int(cfg["out_mask"][0]), int(cfg["out_mask"][1]))
    sink = EventSink(events, "t", cov)
    mon.on_beat.append(sink)
    await tb.release(load, drv, mon)
    ports = sorted(cfg["inferences"][0]["counters"]) if cfg["inferences"] else []
    timeout = int(cfg["timeout"])

    async def do_load(beats):
        load.send(beats)
        await wait_until(dut, lambda: load.idle, timeout + 8 * len(beats), "load accepted")
        await ClockCycles(dut.clk, 2)

    await do_load(cfg["load"])
    rng = tb.rng("bench")
    corrupt = cfg.get("corrupt")
    reset_at = cfg.get("reset")
    totals_rtl: dict[str, int] = {}
    stats = {"inferences": 0, "events": 0, "resets": 0}
    durations: list[int] = []
    for n, inf in enumerate(cfg["inferences"]):
        if reset_at is not None and n == reset_at[0]:
            aborted = InOrderScoreboard("o(aborted)")
            aborted.expect_all(tuple(e) for e in inf["out"])
            aborted.expect((END, 0, 0))
            sink.board = aborted
            drv.send({"q": q} for q in inf["codes"])
            await wait_until(dut, lambda: int(dut.busy.value), timeout, "inference start")
            # somewhere in the first 3/4 of the shortest inference seen so far
            await ClockCycles(dut.clk, rng.randrange(1, max(2, 3 * min(durations) // 4)))
            await ReadOnly()
            assert int(dut.busy.value), "bench error: the reset came after the inference ended"
            await RisingEdge(dut.clk)
            await reset_midway(dut, [drv], ("busy", "o__valid"), aborted)
            sink.board = events
            stats["resets"] += 1
            # the tiles' mask registers reset to the generated values: reload them
            await do_load(cfg["reload"])
        expected = [tuple(e) for e in inf["out"]]
        if corrupt and expected:  # self-check: the first inference with output events
            expected = tb.corrupt(expected, corrupt)
            corrupt = None
        events.expect_all(expected)
        events.expect((END, 0, 0))
        counts.expect(tuple(inf["counters"][p] for p in ports))
        target = sink.markers + 1
        drv.send({"q": q} for q in inf["codes"])
        took = await wait_until(
            dut, lambda t=target: sink.markers >= t, timeout, f"output marker of inference {n}"
        )
        took += await wait_until(dut, lambda: not int(dut.busy.value), timeout, "system idle")
        durations.append(took)
        await ReadOnly()
        seen = tuple(_value(getattr(dut, p)) for p in ports)
        counts.observe(seen)
        for p, v in zip(ports, seen, strict=True):
            totals_rtl[p] = totals_rtl.get(p, 0) + (v if isinstance(v, int) else 0)
        await RisingEdge(dut.clk)
        for tau in inf["tau"]:
            if not transmitted(tau, mask[0], mask[1]):
                cov.sample_out(tau, True, False)
        for layer, count in enumerate(inf["layer_events"]):
            if count:
                cov.sample_layer(layer)
        stats["inferences"] += 1
        stats["events"] += inf["events"]
    await ClockCycles(dut.clk, 4)
    mismatches = events.finish() + counts.finish()
    errors = [str(m) for m in mismatches[:10]] + mon.stats.protocol_errors[:5]
    if counts.mismatches:
        # name the counters that differ, not only the tuples
        m = counts.mismatches[0]
        if m.expected is not None and m.observed is not None:
            errors.append(
                "counters differ: "
                + ", ".join(
                    f"{p}: golden {e} rtl {o}"
                    for p, e, o in zip(ports, m.expected, m.observed, strict=True)
                    if e != o
                )
            )
    tb.report(
        {
            "bench": "system",
            "T": T,
            "vectors": stats["inferences"],
            "events": stats["events"],
            "events_out": sum(len(inf["out"]) for inf in cfg["inferences"]),
            "resets": stats["resets"],
            "cycles": mon.cycle,
            "stalled_out_beats": sum(b.stalled for b in mon.beats),
            "mismatches": len(mismatches) + len(mon.stats.protocol_errors),
            "mismatch_examples": errors,
            "counters_checked": counts.observed,
            "counter_totals_rtl": totals_rtl,
            "counter_totals_golden": {
                p: sum(inf["counters"][p] for inf in cfg["inferences"]) for p in ports
            },
            "coverage": cov.export(),
        }
    )
    assert not errors, "\n".join(errors)


def _value(handle) -> int | str:
    """The signal as an integer, or its bit string if it holds X/Z (reported as a mismatch)."""
    value = handle.value
    try:
        return int(value)
    except ValueError:
        return str(value)
