"""Pieces shared by the Amaranth-simulator drivers of the components.

:func:`rtl_gen.encoder.simulate_encoder`, :func:`rtl_gen.tile.simulate_tile` and
:func:`rtl_gen.system.simulate_system` check their probabilities, drain an output stream with
random backpressure, wait for ``busy`` to fall, check that a run's output ends with exactly one
marker beat, read the ``cnt_*`` ports and run the simulator (optionally into a waveform file)
the same way; each of those steps lives here once.
"""

from __future__ import annotations

__all__ = [
    "check_probability",
    "drain",
    "marked_output",
    "read_counters",
    "run_simulator",
    "wait_idle",
]


def check_probability(name: str, p: object) -> float:
    """Return ``p`` if it is in ``(0, 1]``, else raise ``ValueError`` naming ``name``."""
    if not 0.0 < p <= 1.0:
        raise ValueError(f"{name} must be in (0, 1], not {p!r}")
    return p


def drain(stream, field: str, seen: list, *, o_ready: float, rng):
    """Testbench coroutine that takes every beat of ``stream`` (an output of the design).

    ``stream.ready`` is high on a clock with probability ``o_ready`` (drawn from ``rng`` only
    when ``o_ready < 1``); each beat taken is appended to ``seen`` as
    ``(addr, payload.<field>, last, clock)``, clocks counted from 1.
    """

    async def collect(ctx):
        cycle = 0
        while True:
            ready = o_ready >= 1.0 or rng.random() < o_ready
            ctx.set(stream.ready, ready)
            _, _, valid, payload = await ctx.tick().sample(stream.valid, stream.payload)
            cycle += 1
            if valid and ready:
                seen.append((int(payload.addr), int(getattr(payload, field)), int(payload.last),
                             cycle))

    return collect


async def wait_idle(ctx, busy) -> int:
    """Testbench coroutine: clock until ``busy`` is sampled low; returns the clocks taken."""
    clocks = 0
    while True:
        _, _, value = await ctx.tick().sample(busy)
        clocks += 1
        if not value:
            return clocks


def marked_output(beats: list, what: str) -> list:
    """``beats`` (as from :func:`drain`) if exactly the last one is a marker, else raise.

    Raises
    ------
    RuntimeError
        "output of <what> is not ended by one marker".
    """
    if not beats or not beats[-1][2] or any(b[2] for b in beats[:-1]):
        raise RuntimeError(f"output of {what} is not ended by one marker")
    return beats


def read_counters(ctx, dut, names, port: str = "cnt_{}") -> dict[str, int]:
    """Counter name -> value of the port ``port.format(name)`` of ``dut``."""
    return {name: ctx.get(getattr(dut, port.format(name))) for name in names}


def run_simulator(top, *testbenches, background=(), vcd: str | None = None) -> None:
    """Simulate ``top`` with a 100 MHz ``sync`` clock until the ``testbenches`` return.

    ``background`` testbenches run alongside and are stopped then; ``vcd`` names a waveform
    file to write.
    """
    from amaranth.sim import Simulator

    sim = Simulator(top)
    sim.add_clock(1e-8)
    for bench in background:
        sim.add_testbench(bench, background=True)
    for bench in testbenches:
        sim.add_testbench(bench)
    if vcd is None:
        sim.run()
    else:
        with sim.write_vcd(vcd):
            sim.run()
