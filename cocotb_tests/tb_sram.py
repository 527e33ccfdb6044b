"""cocotb bench for ``mttfs_sram``: the weight SRAM of a tile, through its bus only.

The rows written are the weight rows of a golden ``IntegerLayer`` (packed as the load image
says); the reads follow the input events of golden windows, the way the tile reads them, so
every read row must decode to ``W[addr, :]``. Random writes, idle cycles and a mid-run reset
are mixed in. Checked every clock: ``rdata`` after a read, ``rdata`` held while ``ren`` is low,
and the ``reads`` counter (reads since reset).
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, RisingEdge

from cocotb_tests.bench import WallClock, check_ports, load_config, merge_report, start_clock


@cocotb.test()
async def test_sram(dut):
    cfg = load_config()
    clock = WallClock()
    check_ports(dut, cfg["module"])
    await start_clock(dut)
    bus = {n: getattr(dut, f"bus__{n}") for n in ("addr", "ren", "wen", "wdata", "rdata")}
    from cocotb_coverage import coverage as cov

    name = f"sram.T{cfg['T']}.op"

    @cov.CoverPoint(name, bins=["read", "write", "idle", "read_after_write", "reset"])
    def sample(op):
        pass

    dut.rst.value = 1
    for n in ("ren", "wen"):
        bus[n].value = 0
    bus["addr"].value = 0
    bus["wdata"].value = 0
    await ClockCycles(dut.clk, 2)
    await FallingEdge(dut.clk)
    dut.rst.value = 0
    model: dict[int, int] = {}
    width = int(cfg["width"])
    reads = 0
    held = None  # rdata after the last read
    errors: list[str] = []
    last_write = None
    n_reads = n_writes = 0
    for step, op in enumerate(cfg["ops"]):
        kind = op[0]
        await FallingEdge(dut.clk)
        bus["ren"].value = int(kind == "read")
        bus["wen"].value = int(kind == "write")
        dut.rst.value = int(kind == "reset")
        if kind in ("read", "write"):
            bus["addr"].value = op[1]
        if kind == "write":
            bus["wdata"].value = op[2]
        await RisingEdge(dut.clk)
        await ReadOnly()
        if kind == "write":
            model[op[1]] = op[2]
            last_write = op[1]
            n_writes += 1
            sample("write")
        elif kind == "read":
            want = model.get(op[1], 0)
            got = int(bus["rdata"].value)
            if got != want:
                errors.append(f"op {step}: read row {op[1]}: expected {want:#x}, got {got:#x}")
            if len(op) > 2 and op[2] is not None and got != op[2]:
                errors.append(f"op {step}: row {op[1]} is not the golden weight row")
            held = want
            reads += 1
            n_reads += 1
            sample("read_after_write" if last_write == op[1] else "read")
            last_write = None
        elif kind == "reset":
            reads = 0
            sample("reset")
        else:
            sample("idle")
            last_write = None
        if kind != "read" and held is not None and kind != "reset":
            got = int(bus["rdata"].value)
            if got != held:
                errors.append(f"op {step}: rdata changed to {got:#x} while ren was low")
        counted = int(dut.reads.value)
        if counted != reads % (1 << 32):
            errors.append(f"op {step}: reads counter {counted}, expected {reads}")
        if len(errors) >= 10:
            break
    await FallingEdge(dut.clk)
    bus["ren"].value = 0
    bus["wen"].value = 0
    from cocotb_coverage.coverage import coverage_db

    merge_report(
        {
            "bench": "sram",
            "T": int(cfg["T"]),
            "vectors": len(cfg["ops"]),
            "events": n_reads + n_writes,
            "events_in": n_writes,
            "events_out": n_reads,
            "cycles": len(cfg["ops"]) + 3,
            "width": width,
            "mismatches": len(errors),
            "mismatch_examples": errors[:10],
            "counter_totals_rtl": {"reads": int(dut.reads.value)},
            "counter_totals_golden": {"reads": reads},
            "coverage": {
                name: {str(b): int(h) for b, h in coverage_db[name].detailed_coverage.items()}
            },
            "sim_seconds": clock.seconds,
        }
    )
    assert not errors, "\n".join(errors)
