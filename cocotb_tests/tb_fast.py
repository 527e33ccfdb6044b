"""cocotb bench of the fast harness (:class:`regression.fast_rtl.FastHarness` around the tile or
the mesh system): stimulus, expected events and expected counters are in the harness's memories
(``$readmemh`` files in the run directory), so the bench only sets the run's inputs, pulses
``start``, waits for ``done`` and reads the totals. :func:`regression.fast.verdict` judges them.
"""

from __future__ import annotations

import time

import cocotb
from cocotb.triggers import ReadOnly, Timer

from cocotb_tests.bench import CLOCK_PERIOD_NS, load_config, start_and_wait, write_report
from regression.fast import verdict
from regression.fast_rtl import TOTALS


@cocotb.test()
async def test_fast(dut):
    cfg = load_config()
    t0, c0 = time.perf_counter(), time.process_time()
    run_seconds = await start_and_wait(dut, cfg["inputs"], internal_clock=True)
    await Timer(2 * CLOCK_PERIOD_NS, unit="ns")
    await ReadOnly()
    totals = {name: int(getattr(dut, name).value) for name in TOTALS}
    totals.update({n: bool(int(getattr(dut, n).value)) for n in ("done", "stalled", "timed_out")})
    rtl = {p: int(getattr(dut, f"tot_{p}").value) for p in cfg["counter_ports"]}
    problems = verdict(cfg, totals)
    errors = sum(totals[n] for n in ("err_out", "err_extra", "err_cnt", "err_stream"))
    write_report({
        "bench": cfg["bench"],
        "T": cfg["T"],
        "vectors": totals["checks"],
        "windows": totals["windows"],
        "events": cfg["events"],
        "events_out": cfg["events_out"],
        "cycles": totals["cycles"],
        "stalled_out_beats": totals["stalled_out"],
        "mismatches": errors if errors else int(bool(problems)),
        "mismatch_examples": problems[:10],
        "counters_checked": totals["checks"],
        "counter_totals_rtl": rtl,
        "counter_totals_golden": cfg["counter_totals_golden"],
        "harness": totals,
        "run_seconds": run_seconds,
        "cpu_seconds": time.process_time() - c0,
        "sim_seconds": time.perf_counter() - t0,
    })
    assert not problems, "\n".join(problems)
