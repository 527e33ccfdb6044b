"""cocotb bench for ``mttfs_router``: XY routing, hop counts, no loss, duplication or reordering.

The router's position is an input port, so one build serves every node of the mesh: the bench
runs a phase per position. In each phase all five inputs inject XY-consistent flits at once
(random idle cycles) and all five outputs take them with random ``ready``. Each input uses
its own set of ``(addr, t)`` values, so an output flit names the input it came from; the flits
of every (input, output) pair must leave in injection order, on the XY port, with ``hops + 1``
on N/E/S/W and ``hops`` unchanged on local. One phase is cut by a reset.
"""

from __future__ import annotations

import cocotb
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from cocotb_tests.bench import Bench, wait_until
from regression.scoreboard import InOrderScoreboard

PORTS = ("north", "east", "south", "west", "local")


@cocotb.test()
async def test_router(dut):
    tb = Bench(dut)
    cfg = tb.cfg
    await tb.power_up()
    drivers = {p: tb.driver(f"i_{p}", "i", p) for p in PORTS}
    monitors = {p: tb.monitor(f"o_{p}", "o", p) for p in PORTS}
    fields = ("dst_x", "dst_y", "addr", "t", "hops")
    from cocotb_coverage import coverage as cov

    name = f"router.T{cfg['T']}.route"
    pairs = [tuple(b) for b in cfg["pairs"]]

    @cov.CoverPoint(
        name,
        xf=lambda i, o, s: (i, o, s),
        bins=[(i, o, s) for i, o in pairs for s in (False, True)],
    )
    def sample(i, o, stalled):
        pass

    state = {"boards": {}, "owner": {}, "live": True}
    seen = {"flits": 0, "hops": 0}
    errors: list[str] = []

    def on_beat(out_port):
        def cb(beat):
            item = tuple(beat.payload[f] for f in fields)
            src = state["owner"].get((beat.payload["addr"], beat.payload["t"]))
            board = state["boards"].get((src, out_port))
            if board is None:
                errors.append(f"flit {item} left on {out_port}, no input sends it there")
                return
            board.observe(item)
            if state["live"]:
                sample(src, out_port, beat.stalled)
                seen["flits"] += 1
                seen["hops"] += beat.payload["hops"]

        return cb

    for p in PORTS:
        monitors[p].on_beat.append(on_beat(p))
        drivers[p].start()
        monitors[p].start()
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    totals = {"flits": 0, "hops": 0, "phases": 0, "resets": 0}
    rng = tb.rng("bench")
    for n, phase in enumerate(cfg["phases"]):
        dut.x.value, dut.y.value = phase["x"], phase["y"]
        boards = {}
        owner = {}
        for i_port, flits in phase["flits"].items():
            for f in flits:
                owner[(f["addr"], f["t"])] = i_port
        for i_port, o_port, out in phase["expected"]:
            board = boards.setdefault((i_port, o_port), InOrderScoreboard(f"{i_port}->{o_port}"))
            board.expect(tuple(out[f] for f in fields))
        state["boards"], state["owner"] = boards, owner
        reset = phase.get("reset")
        state["live"] = not reset
        for p in PORTS:
            drivers[p].send(phase["flits"].get(p, []))
        total = sum(len(v) for v in phase["flits"].values())
        target = sum(m.stats.beats for m in monitors.values()) + total
        if reset:
            await ClockCycles(dut.clk, rng.randrange(2, max(3, total // 2)))
            dut.rst.value = 1
            for d in drivers.values():
                d.clear()
            await ClockCycles(dut.clk, 2)
            dut.rst.value = 0
            await ReadOnly()
            errors.extend(
                f"{s} high after reset"
                for s in ["busy", *(f"o_{p}__valid" for p in PORTS)]
                if int(getattr(dut, s).value)
            )
            await RisingEdge(dut.clk)
            for board in boards.values():
                errors.extend(str(m) for m in board.mismatches)  # a prefix is fine
            totals["resets"] += 1
            continue
        await wait_until(
            dut,
            lambda t=target: sum(m.stats.beats for m in monitors.values()) >= t,
            int(cfg["timeout"]),
            f"{total} flits of phase {n}",
        )
        await wait_until(dut, lambda: not int(dut.busy.value), 50, "router empty")
        for board in boards.values():
            errors.extend(str(m) for m in board.finish())
        totals["flits"] += total
        totals["hops"] += sum(out["hops"] for _, _, out in phase["expected"])
        totals["phases"] += 1
        if len(errors) > 10:
            break
    errors += [e for m in monitors.values() for e in m.stats.protocol_errors][:5]
    from cocotb_coverage.coverage import coverage_db

    tb.report(
        {
            "bench": "router",
            "T": int(cfg["T"]),
            "vectors": totals["phases"],
            "events": totals["flits"],
            "events_in": totals["flits"],
            "events_out": totals["flits"],
            "resets": totals["resets"],
            "cycles": monitors["local"].cycle,
            "stalled_out_beats": sum(b.stalled for m in monitors.values() for b in m.beats),
            "mismatches": len(errors),
            "mismatch_examples": errors[:10],
            "counter_totals_golden": {"flits": totals["flits"], "hops": totals["hops"]},
            "counter_totals_rtl": dict(seen),
            "coverage": {
                name: {
                    str(b).replace(" ", "").replace("'", ""): int(h)
                    for b, h in coverage_db[name].detailed_coverage.items()
                }
            },
        }
    )
    assert not errors, "\n".join(errors[:10])
