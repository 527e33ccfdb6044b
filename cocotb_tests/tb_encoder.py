"""cocotb bench for ``mttfs_encoder``: dense code vectors in, masked events out, counters.

Expected events are ``golden_models.encode_events`` of each vector (time order, ascending
address within a step) followed by the marker beat; expected counters are the transmitted and
suppressed counts. Random idle cycles on ``i``, random ``ready`` on ``o``; one vector is cut
by a reset while it is being collected or emitted.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from cocotb_tests.bench import END, Bench, EventSink, reset_midway, wait_until
from golden_models.mask import transmitted
from regression.coverage import CoverageModel
from regression.scoreboard import InOrderScoreboard


@cocotb.test()
async def test_encoder(dut):
    tb = Bench(dut)
    cfg, T = tb.cfg, tb.T
    counters = [(c["name"], c["port"]) for c in cfg["module"]["counters"]]
    await tb.power_up()
    drv, mon = tb.driver("i"), tb.monitor("o")
    cov = CoverageModel("encoder", T, mask=(int(cfg["i_max"]), int(cfg["k"])))
    events = InOrderScoreboard("o")
    counts = InOrderScoreboard("counters")
    state = {"vectors": 0, "events": 0, "codes": 0}
    sink = EventSink(events, "tau", cov)
    mon.on_beat.append(sink)
    await tb.release(drv, mon)
    rng = tb.rng("bench")
    i_max, k = int(cfg["i_max"]), int(cfg["k"])
    corrupt = cfg.get("corrupt")
    p = max(float(cfg["p_idle"]), float(cfg["p_stall"]))
    timeout = int((4 * (len(cfg["vectors"][0]["codes"]) + 2 * T) + 40) / max(0.05, 1 - p))
    reset_at = cfg.get("reset")  # [vector, phase]
    resets = 0
    totals: dict[str, int] = {}
    for v, vec in enumerate(cfg["vectors"]):
        if reset_at is not None and reset_at[0] == v:
            # cut this vector short: during collection, or while events are leaving
            aborted = InOrderScoreboard("o(aborted)")
            aborted.expect_all(tuple(e) for e in vec["events"])
            sink.board = aborted
            drv.send({"q": q} for q in vec["codes"])
            if reset_at[1] == "collect":
                await ClockCycles(dut.clk, rng.randrange(1, max(2, len(vec["codes"]) // 2)))
            else:
                await wait_until(dut, lambda: drv.idle, timeout, "codes accepted")
                await ClockCycles(dut.clk, rng.randrange(1, 4))
            await reset_midway(dut, [drv], ("busy", "o__valid"), aborted)
            sink.board = events
            resets += 1
        expected = [tuple(e) for e in vec["events"]]
        if corrupt and expected:  # self-check: the first vector with events
            expected = tb.corrupt(expected, corrupt)
            corrupt = None
        events.expect_all(expected)
        events.expect((END, 0, 0))
        counts.expect(tuple(vec["counters"][name] for name, _ in counters))
        target = sink.markers + 1
        drv.send({"q": q} for q in vec["codes"])
        await wait_until(dut, lambda t=target: sink.markers >= t, timeout, f"marker of vector {v}")
        # no code is queued now, so the counters hold once the encoder is idle
        await wait_until(dut, lambda: not int(dut.busy.value), timeout, "encoder idle")
        await ReadOnly()
        seen = tuple(int(getattr(dut, port).value) for _, port in counters)
        counts.observe(seen)
        for (name, _), value in zip(counters, seen, strict=True):
            totals[name] = totals.get(name, 0) + value
        await RisingEdge(dut.clk)
        for tau in vec["taus"]:
            if not transmitted(tau, i_max, k):
                cov.sample_out(tau, True, False)
        state["vectors"] += 1
        state["events"] += len(vec["events"])
        state["codes"] += len(vec["codes"])
    await ClockCycles(dut.clk, 4)
    mismatches = events.finish() + counts.finish()
    errors = [str(m) for m in mismatches[:10]] + mon.stats.protocol_errors[:5]
    tb.report(
        {
            "bench": "encoder",
            "T": T,
            "vectors": state["vectors"],
            "events": state["events"],
            "events_in": state["codes"],
            "events_out": state["events"],
            "resets": resets,
            "cycles": mon.cycle,
            "stalled_out_beats": sum(b.stalled for b in mon.beats),
            "mismatches": len(mismatches) + len(mon.stats.protocol_errors),
            "mismatch_examples": errors,
            "counters_checked": counts.observed,
            "counter_totals_rtl": totals,
            "counter_totals_golden": {
                name: sum(vec["counters"][name] for vec in cfg["vectors"]) for name, _ in counters
            },
            "coverage": cov.export(),
        }
    )
    assert not errors, "\n".join(errors)
