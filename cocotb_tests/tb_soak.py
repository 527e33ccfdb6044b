"""cocotb bench for the router soak (``mttfs_soak``, :class:`regression.soak_rtl.SoakHarness`).

Traffic and checking run inside the design: the bench sets the configuration inputs, resets,
pulses ``start``, waits for ``done`` (one trigger, no per-clock Python), lets the mesh run on
for some clocks (so a late duplicate is still counted), then reads every counter and the
per-pair and per-node counts through ``rd_sel`` into its report. It judges nothing itself:
:func:`regression.soak.verdict` does, on the report.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, Timer

from cocotb_tests.bench import load_config, start_and_wait, write_report

GRACE = 64


@cocotb.test()
async def test_soak(dut):
    cfg = load_config()
    nodes = int(cfg["nodes"])
    dut.rd_sel.value = 0
    seconds = await start_and_wait(dut, cfg["inputs"])
    await ClockCycles(dut.clk, GRACE)
    await ReadOnly()

    def get(name):
        return int(getattr(dut, name).value)

    report = {
        "done": bool(get("done")), "stalled": bool(get("stalled")),
        "timed_out": bool(get("timed_out")), "busy_at_done": bool(get("busy_at_done")),
        "busy_end": bool(get("busy")), "cycles": get("cycles"), "sent": get("sent"),
        "recv": get("recv"), "seconds": seconds,
        "errors": {n: get(n) for n in ("err_dst", "err_hops", "err_order", "err_stream")},
    }
    await Timer(1, unit="ns")
    rows = {"pair_sent": [], "pair_recv": [], "node_sent": [], "node_recv": []}
    for i in range(nodes * nodes):
        dut.rd_sel.value = i
        await Timer(1, unit="ns")
        rows["pair_sent"].append(get("rd_pair_sent"))
        rows["pair_recv"].append(get("rd_pair_recv"))
        if i < nodes:
            rows["node_sent"].append(get("rd_node_sent"))
            rows["node_recv"].append(get("rd_node_recv"))
    report.update(rows)
    write_report(report)
