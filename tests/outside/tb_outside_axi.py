"""An integrator's bench of ``mttfs_axi_tile``, written from docs/rtl_axi.md alone: register
offsets and fields from the register table, stream formats from the manifest's ``axi`` entry,
the bus models of cocotbext-axi. It imports nothing of the toolkit: the layer's load beats
``(target, addr, data)``, the windows' input events and what each window must give come in a
JSON file (``OUTSIDE_BENCH``) that the test writes from the golden model.

Checks: ``ID``; ``INFO0.t``/``k``; an unmapped address answers SLVERR; the layer loaded as
``LOAD_DATA`` words then ``LOAD_CMD``; each window's output frame, its seven counters at
``0x800`` and ``DONE``, with random pauses on every AXI channel."""

from __future__ import annotations

import json
import os
import random

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, with_timeout

ID, INFO0, DONE, LOAD_CMD, LOAD_DATA, COUNTERS = 0x000, 0x004, 0x014, 0x020, 0x400, 0x800
COUNTER_NAMES = ("events_in", "weight_row_reads", "accumulate_ops", "compare_ops",
                 "threshold_reads", "events_out", "events_suppressed")


def pauses(rng: random.Random, p: float):
    while True:
        yield rng.random() < p


@cocotb.test()
async def outside_axi_tile(dut):
    from cocotbext.axi import (
        AxiLiteBus,
        AxiLiteMaster,
        AxiStreamBus,
        AxiStreamFrame,
        AxiStreamSink,
        AxiStreamSource,
    )

    with open(os.environ["OUTSIDE_BENCH"], encoding="utf-8") as f:
        cfg = json.load(f)
    rng = random.Random(cfg["seed"])
    # the wrapper (clk, rst, s_axil__awaddr) or its AMBA shell (aclk, aresetn, s_axil_awaddr)
    amba = bool(cfg.get("amba"))
    clk, rst = (dut.aclk, dut.aresetn) if amba else (dut.clk, dut.rst)
    sep = "" if amba else "_"
    cocotb.start_soon(Clock(clk, 10, unit="ns").start())
    rst.value = 0 if amba else 1
    level = {"reset_active_level": not amba}
    axil = AxiLiteMaster(AxiLiteBus.from_prefix(dut, "s_axil" + sep), clk, rst, **level)
    src = AxiStreamSource(AxiStreamBus.from_prefix(dut, "s_axis" + sep), clk, rst, **level)
    sink = AxiStreamSink(AxiStreamBus.from_prefix(dut, "m_axis" + sep), clk, rst, **level)
    for ch in (axil.write_if.aw_channel, axil.write_if.w_channel, axil.write_if.b_channel,
               axil.read_if.ar_channel, axil.read_if.r_channel, src, sink):
        ch.set_pause_generator(pauses(random.Random(rng.random()), 0.3))
    await ClockCycles(clk, 5)
    rst.value = 1 if amba else 0
    await ClockCycles(clk, 5)
    # after reset under the simulator's own flags, nothing the bus models read is X
    for bus, sig in (("s_axis", "tready"), ("m_axis", "tvalid"), ("s_axil", "awready"),
                     ("s_axil", "arready")):
        name = f"{bus}_{sep}{sig}"
        assert getattr(dut, name).value.is_resolvable, f"{name} is {getattr(dut, name).value}"

    async def read(addr):
        r = await axil.read(addr, 4)
        return int.from_bytes(r.data, "little"), int(r.resp)

    assert await read(ID) == (0x4D540001, 0)
    info0 = (await read(INFO0))[0]
    assert (info0 & 0xFF, (info0 >> 8) & 0xFF) == (cfg["T"], cfg["k"])
    assert (await read(0x40))[1] == 2, "an unmapped address must answer SLVERR"

    words = cfg["load_words"]
    for target, addr, data in cfg["beats"]:
        for i in range(words):
            await axil.write(LOAD_DATA + 4 * i,
                             ((data >> (32 * i)) & 0xFFFFFFFF).to_bytes(4, "little"))
        await axil.write(LOAD_CMD, (addr | target << 24).to_bytes(4, "little"))

    in_aw, out_aw = cfg["in_addr_width"], cfg["out_addr_width"]
    nbytes = cfg["axis_width"] // 8
    for n, window in enumerate(cfg["windows"]):
        beats = [a | tau << in_aw for a, tau in window["in"]] + [0]  # the TLAST marker beat
        data = b"".join(b.to_bytes(nbytes, "little") for b in beats)
        await src.send(AxiStreamFrame(data))
        frame = await with_timeout(sink.recv(), 200_000, "ns")
        got = [int.from_bytes(bytes(frame.tdata[i:i + nbytes]), "little")
               for i in range(0, len(frame.tdata), nbytes)]
        assert got[-1] == 0, "the TLAST beat carries no event"
        events = [(w & ((1 << out_aw) - 1), w >> out_aw) for w in got[:-1]]
        assert events == [tuple(e) for e in window["out"]], f"window {n}: {events}"
        await ClockCycles(clk, 2)
        counters = {c: (await read(COUNTERS + 4 * i))[0] for i, c in enumerate(COUNTER_NAMES)}
        assert counters == window["counters"], f"window {n}: {counters}"
        assert (await read(DONE))[0] == n + 1
    dut._log.info("outside bench: %d windows bit-exact", len(cfg["windows"]))
