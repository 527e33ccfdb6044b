"""cocotb bench for the stream buffer of :mod:`cocotb_tests.passthrough` (infrastructure smoke)."""

from __future__ import annotations

import cocotb

from cocotb_tests.bench import (
    check_scoreboards,
    corrupt_expectation,
    load_config,
    merge_report,
    reset,
    start_clock,
    wait_until,
)
from cocotb_tests.layout import PayloadLayout
from cocotb_tests.stream import StreamDriver, StreamMonitor, make_rng
from regression.scoreboard import InOrderScoreboard


@cocotb.test()
async def test_passthrough(dut):
    cfg = load_config()
    seed = int(cfg["seed"])
    li = PayloadLayout.of(cfg["streams"]["i"]["fields"])
    lo = PayloadLayout.of(cfg["streams"]["o"]["fields"])
    await start_clock(dut)
    dut.rst.value = 1
    drv = StreamDriver(dut, "i", li, dut.clk, dut.rst, make_rng(seed, "drv"), cfg["p_idle"])
    mon = StreamMonitor(dut, "o", lo, dut.clk, dut.rst, make_rng(seed, "mon"), cfg["p_stall"])
    await reset(dut)
    drv.start()
    mon.start()
    rng = make_rng(seed, "stim")
    beats = [{f.name: rng.randrange(1 << f.width) for f in li.fields} for _ in range(cfg["n"])]
    expected = [tuple(b[n] for n in lo.names) for b in beats]
    board = InOrderScoreboard("o")
    board.expect_all(corrupt_expectation(expected, cfg.get("corrupt"), rng))
    mon.on_beat.append(lambda beat: board.observe(tuple(beat.payload[n] for n in lo.names)))
    drv.send(beats)
    await wait_until(
        dut, lambda: mon.stats.beats >= len(beats) and drv.idle, 20 * len(beats), "all beats"
    )
    await cocotb.triggers.ClockCycles(dut.clk, 5)
    drv.stop()
    mon.stop()
    errors = check_scoreboards(board) + mon.stats.protocol_errors
    merge_report(
        {
            "beats": mon.stats.beats,
            "stall_cycles": mon.stats.stall_cycles,
            "stalled_beats": sum(b.stalled for b in mon.beats),
            "mismatches": len(board.mismatches),
        }
    )
    assert not errors, "\n".join(errors)
