"""cocotb bench of the AXI wrappers (``mttfs_axi_tile``, ``mttfs_axi_system``) on the
ecosystem's bus models: cocotbext-axi's ``AxiLiteMaster``, ``AxiStreamSource`` and
``AxiStreamSink``.

The identification register reads its value and an unmapped address answers SLVERR (read and
write); the images are loaded over AXI4-Lite; every run's input goes in as one AXI4-Stream frame
and its output comes back as one frame, compared word for word with the golden reference, and
every counter is read over AXI4-Lite after it. All channels pause at random (AXI4-Lite timing,
source gaps, sink backpressure). While a run goes on, a second coroutine reads ``DONE``, a few
counters and ``DONE`` again, over and over: when both ``DONE`` reads agree, the counters must be
the golden ones of run ``DONE`` (all 0 before the first). One system run may carry a stray
TLAST, which ``STATUS`` must report (and a write of 1 clear). The configuration comes from
:mod:`regression.axi`; the report has the keys of every regression bench (``vectors``: runs
completed, ``events`` they checked, ``mismatches``, the counter totals read and golden).
"""

from __future__ import annotations

import random

import cocotb
from cocotb.triggers import ClockCycles, SimTimeoutError, with_timeout

from cocotb_tests.bench import CLOCK_PERIOD_NS, WallClock, load_config, start_clock, write_report

OKAY, SLVERR = 0, 2


def _pause(rng: random.Random, p: float):
    while True:
        yield rng.random() < p


@cocotb.test()
async def test_axi(dut):
    from cocotbext.axi import (
        AxiLiteBus,
        AxiLiteMaster,
        AxiStreamBus,
        AxiStreamFrame,
        AxiStreamSink,
        AxiStreamSource,
    )

    cfg = load_config()
    clock = WallClock()
    rng = random.Random(int(cfg["seed"]))
    p = float(cfg["p_pause"])
    await start_clock(dut)
    dut.rst.value = 1
    axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil_"), dut.clk, dut.rst)
    src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis_"), dut.clk, dut.rst,
                          byte_lanes=1)
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis_"), dut.clk, dut.rst,
                         byte_lanes=1)
    for channel in (axil.write_if.aw_channel, axil.write_if.w_channel, axil.write_if.b_channel,
                    axil.read_if.ar_channel, axil.read_if.r_channel):
        channel.set_pause_generator(_pause(random.Random(rng.random()), p))
    src.set_pause_generator(_pause(random.Random(rng.random()), p))
    sink.set_pause_generator(_pause(random.Random(rng.random()), p))
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    await ClockCycles(dut.clk, 2)
    errors: list[str] = []
    cycle = {"n": 0}

    async def count():
        while True:
            await ClockCycles(dut.clk, 1)
            cycle["n"] += 1

    cocotb.start_soon(count())

    async def read(addr: int) -> tuple[int, int]:
        r = await axil.read(addr, 4)
        return int.from_bytes(r.data, "little"), int(r.resp)

    async def write(addr: int, value: int) -> int:
        return int((await axil.write(addr, int(value).to_bytes(4, "little"))).resp)

    # identification and SLVERR
    ident, unmapped = cfg["id"], int(cfg["unmapped"])
    got = await read(int(ident[0]))
    if got != (int(ident[1]), OKAY):
        errors.append(f"ID reads {got}, expected ({ident[1]}, OKAY)")
    for what, resp in (("read", (await read(unmapped))[1]),
                       ("write", await write(unmapped, 0xFFFF_FFFF))):
        if resp != SLVERR:
            errors.append(f"{what} of unmapped {unmapped:#x} answered {resp}, not SLVERR")

    # load over AXI4-Lite
    t0 = cycle["n"]
    for addr, value in cfg["writes"]:
        resp = await write(int(addr), int(value))
        if resp != OKAY:
            errors.append(f"load write of {value:#x} to {addr:#x} answered {resp}")
    load_cycles = cycle["n"] - t0

    counters = {k: int(v) for k, v in cfg["counters"].items()}
    zero = dict.fromkeys(counters, 0)
    runs = cfg["runs"]
    done_addr = int(cfg["done"])
    status_addr, tlast_bit = (int(x) for x in cfg["status"])
    state = {"running": False, "run": 0, "checked": 0, "looks": 0}

    async def look_while_running():
        names = sorted(counters)
        while state["running"]:
            before = (await read(done_addr))[0]
            sample = rng.sample(names, min(int(cfg["look_sample"]), len(names)))
            seen = {n: (await read(counters[n]))[0] for n in sample}
            after = (await read(done_addr))[0]
            state["looks"] += 1
            if before != after:
                continue
            if before not in (state["run"], state["run"] + 1):  # not this run, nor the last
                bad = f"DONE reads {before} while run {state['run']} goes on"
                if bad not in errors:
                    errors.append(bad)
                continue
            want = runs[before - 1]["counters"] if before else zero
            state["checked"] += 1
            for n in sample:
                if seen[n] != int(want[n]):
                    errors.append(f"read while running after run {before}: {n} = {seen[n]}, "
                                  f"that run's value is {want[n]}")

    run_cycles = []
    totals_rtl = dict.fromkeys(counters, 0)
    totals_golden = dict.fromkeys(counters, 0)
    events = 0
    for n, run in enumerate(runs):
        words = [int(w) for w in run["in"]]
        if cfg["kind"] == "tile":
            words.append(0)  # the window's end marker: a TLAST beat without an event
        cuts = [0, *run["cut"], len(words)]
        state["running"], state["run"] = True, n
        looker = cocotb.start_soon(look_while_running())
        t0 = cycle["n"]
        for a, b in zip(cuts, cuts[1:], strict=False):
            await src.send(AxiStreamFrame(words[a:b]))
        try:
            frame = await with_timeout(sink.recv(), int(cfg["timeout"]) * CLOCK_PERIOD_NS, "ns")
        except SimTimeoutError:
            errors.append(f"run {n}: no output frame within {cfg['timeout']} clocks")
            state["running"] = False
            await looker
            break
        run_cycles.append(cycle["n"] - t0)
        state["running"] = False
        await looker
        expected = [*map(int, run["out"]), 0]
        if list(frame.tdata) != expected:
            errors.append(f"run {n}: output {list(frame.tdata)} != golden {expected}")
        await ClockCycles(dut.clk, 2)
        seen = {name: (await read(addr))[0] for name, addr in counters.items()}
        for name in counters:
            totals_rtl[name] += seen[name]
            totals_golden[name] += int(run["counters"].get(name, 0))
        events += int(run["events"])
        diff = {k: (seen[k], int(v)) for k, v in run["counters"].items() if seen[k] != int(v)}
        if diff:
            errors.append(f"run {n}: counters (rtl, golden) {diff}")
        done = (await read(done_addr))[0]
        if done != n + 1:
            errors.append(f"run {n}: DONE reads {done}")
        status = (await read(status_addr))[0]
        if bool(status & tlast_bit) != bool(run["cut"]):
            errors.append(f"run {n}: STATUS.tlast_error is {bool(status & tlast_bit)}")
        if run["cut"]:
            await write(status_addr, tlast_bit)
            if (await read(status_addr))[0] & tlast_bit:
                errors.append(f"run {n}: STATUS.tlast_error not cleared by writing 1")
    # a run with events lasts long enough for a read while it runs; one whose codes the mask
    # drops (T = 4, k = 3) may end first: that job checks nothing and is reported as such
    busy = sum(1 for run in runs if int(run["events"]) > 0)
    if state["checked"] < busy:
        errors.append(f"only {state['checked']} reads while running were checked in "
                      f"{busy} runs with events")

    write_report({
        "bench": f"axi_{cfg['kind']}",
        "runs": len(runs),
        "vectors": len(run_cycles),
        "events": events,
        "events_out": sum(len(r["out"]) for r in runs[:len(run_cycles)]),
        "resets": 0,
        "corrupt": cfg.get("corrupt"),
        "counter_totals_rtl": totals_rtl,
        "counter_totals_golden": totals_golden,
        "sim_seconds": clock.seconds,
        "cpu_seconds": clock.cpu_seconds,
        "load_writes": len(cfg["writes"]),
        "load_cycles": load_cycles,
        "run_cycles": run_cycles,
        "reads_while_running": state["looks"],
        "reads_while_running_checked": state["checked"],
        "mismatches": len(errors),
        "mismatch_examples": errors[:10],
    })
    assert not errors, "\n".join(errors[:10])
