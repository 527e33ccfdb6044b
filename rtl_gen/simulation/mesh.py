"""The mesh in the Amaranth simulator: flits through a mesh of routers at zero load
(:func:`simulate_zero_load`), and inferences through a whole system (:func:`simulate_system`,
its coroutines :func:`load_system` and :func:`run_inference`)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from amaranth.hdl import Module

from rtl_gen.router import Mesh
from rtl_gen.simulation import check_probability, read_counters, run_simulator, stream_put
from rtl_gen.system import System

__all__ = [
    "FlitTrip",
    "InferenceResult",
    "load_system",
    "run_inference",
    "simulate_system",
    "simulate_zero_load",
]


@dataclass(frozen=True)
class FlitTrip:
    """One flit sent through an otherwise empty mesh.

    ``clocks`` counts the clock edges from the one that injects the flit (exclusive) to the one
    that ejects it (inclusive); ``hops`` is the flit's hop counter at ejection; ``busy_after``
    the mesh's ``busy`` right after the ejection (low: nothing else is in flight).
    """

    src: tuple[int, int]
    dst: tuple[int, int]
    clocks: int
    hops: int
    busy_after: bool


def simulate_zero_load(rows: int, cols: int, *, addr_width: int = 16, time_width: int = 6,
                       addr: int = 0, t: int = 0, max_clocks: int | None = None
                       ) -> list[FlitTrip]:
    """Send one flit at a time from every node to every node of a :class:`Mesh`.

    Runs in the Amaranth simulator with every local output always ready; a flit is injected
    only after the previous one was ejected, so each trip sees an empty mesh (zero-load
    latency). Sources and destinations are walked row by row, ``x`` fastest.

    Parameters
    ----------
    rows, cols, addr_width, time_width : int
        As for :class:`Mesh`.
    addr, t : int
        Payload fields of every flit.
    max_clocks : int, optional
        Clocks a flit may take before the run fails; default ``2 * (rows + cols) + 16``.

    Returns
    -------
    list of FlitTrip
        ``(rows * cols) ** 2`` trips in sending order.

    Raises
    ------
    RuntimeError
        A flit was not ejected at its destination within ``max_clocks``.
    """
    dut = Mesh(rows, cols, addr_width=addr_width, time_width=time_width)
    limit = 2 * (rows + cols) + 16 if max_clocks is None else max_clocks
    nodes = [(x, y) for y in range(rows) for x in range(cols)]
    trips: list[FlitTrip] = []

    async def bench(ctx):
        for x, y in nodes:
            ctx.set(dut.o[y][x].ready, 1)
        for sx, sy in nodes:
            port = dut.i[sy][sx]
            for dx, dy in nodes:
                out = dut.o[dy][dx]
                # an empty mesh takes the flit at once (one clock edge)
                await stream_put(ctx, port, {"dst_x": dx, "dst_y": dy, "addr": addr, "t": t,
                                             "hops": 0})
                clocks = 0
                while True:
                    if clocks >= limit:
                        raise RuntimeError(f"flit from {(sx, sy)} to {(dx, dy)} not ejected "
                                           f"within {limit} clocks")
                    clocks += 1
                    _, _, valid, hops = await ctx.tick().sample(out.valid, out.payload.hops)
                    if valid:
                        break
                trips.append(FlitTrip((sx, sy), (dx, dy), clocks, int(hops),
                                      bool(ctx.get(dut.busy))))

    run_simulator(dut, bench)
    return trips


@dataclass(frozen=True)
class InferenceResult:
    """What one simulated inference produced.

    ``events`` are the ``(addr, t)`` system output events in emission order; ``tile_counters``
    the ``cnt_*`` ports per enabled node; ``encoder`` the encoder counters; ``flits`` and
    ``hops`` the ``cnt_flits``/``cnt_hops`` totals; ``cycles`` the clocks from the first code
    offered to the output marker taken.
    """

    events: list[tuple[int, int]]
    tile_counters: dict[int, dict[str, int]]
    encoder: dict[str, int]
    flits: int
    hops: int
    cycles: int


async def load_system(ctx, dut: System, beats) -> None:
    """Testbench coroutine: send ``(node, target, addr, data)`` beats on ``dut.load``."""
    for node, target, addr, word in beats:
        await stream_put(ctx, dut.load, {"node": node, "target": target, "addr": addr,
                                         "data": word})


async def run_inference(ctx, dut: System, codes, *, nodes=(), rng=None, o_ready: float = 1.0,
                        max_cycles: int = 200_000, stop_after: int | None = None):
    """Testbench coroutine: feed ``codes`` (``n_in`` of them) on ``dut.i`` while draining ``o``.

    Returns an :class:`InferenceResult` (counters of ``nodes``) once the output marker is taken,
    or ``None`` after ``stop_after`` clocks (to interrupt an inference, e.g. with a reset).
    """
    # One clock loop puts the codes and drains ``o`` together (not stream_put plus drain): it
    # must be able to stop after ``stop_after`` clocks with both streams idle.
    cfg = dut.config
    rng = rng or random.Random(0)
    codes = list(codes)
    events = []
    cycles = 0
    while True:
        if stop_after is not None and cycles >= stop_after:
            ctx.set(dut.i.valid, 0)
            ctx.set(dut.o.ready, 0)
            return None
        if cycles >= max_cycles:
            raise RuntimeError(f"the inference did not end in {max_cycles} clocks")
        if codes:
            ctx.set(dut.i.valid, 1)
            ctx.set(dut.i.payload, {"q": codes[0]})
        else:
            ctx.set(dut.i.valid, 0)
        ready = o_ready >= 1.0 or rng.random() < o_ready
        ctx.set(dut.o.ready, ready)
        _, _, i_ready, valid, payload = await ctx.tick().sample(
            dut.i.ready, dut.o.valid, dut.o.payload)
        cycles += 1
        if codes and i_ready:
            codes.pop(0)
        if valid and ready:
            if payload.last:
                break
            events.append((int(payload.addr), int(payload.t)))
    ctx.set(dut.o.ready, 0)
    await ctx.tick()
    return InferenceResult(
        events=events,
        tile_counters={n: read_counters(ctx, dut, dut.node_counters(n), f"cnt_{{}}_n{n}")
                       for n in nodes},
        encoder=read_counters(ctx, dut, cfg.encoder_counters, "cnt_enc_{}"),
        flits=ctx.get(dut.cnt_flits),
        hops=ctx.get(dut.cnt_hops),
        cycles=cycles,
    )


def simulate_system(system_map, inputs, *, o_ready: float = 1.0, seed: int = 0,
                    max_cycles: int = 200_000, reset_after: int | None = None,
                    vcd: str | None = None) -> list[InferenceResult]:
    """Program a :class:`System` with ``system_map`` and run ``inputs`` in the Amaranth simulator.

    Parameters
    ----------
    system_map : rtl_gen.mapper.SystemMap
    inputs : sequence of code vectors
        Layer-0 input codes of each inference (padded to ``n_in`` with silent codes here).
    o_ready : float
        Probability that ``o.ready`` is high on a clock (random backpressure).
    max_cycles : int
        Clocks allowed per inference before the run is declared hung.
    reset_after : int, optional
        Before the inferences, start one with the first input and assert ``rst`` for one clock
        ``reset_after`` clocks into it, then reload the configuration.
    vcd : str, optional
        Write a waveform file.
    """
    from amaranth.hdl import ClockDomain

    check_probability("o_ready", o_ready)
    cfg = system_map.config
    dut = System(cfg, system_map.node_blocks)
    top = Module()
    top.domains.sync = domain = ClockDomain("sync")
    top.submodules.system = dut
    rng = random.Random(seed)
    vectors = [system_map.pad_input(q).tolist() for q in inputs]
    results: list[InferenceResult] = []
    nodes = [t.node for t in system_map.tiles]
    beats = system_map.load_beats()

    async def bench(ctx):
        await load_system(ctx, dut, beats)
        if reset_after is not None and vectors:
            await run_inference(ctx, dut, vectors[0], rng=rng, stop_after=reset_after)
            ctx.set(domain.rst, 1)
            await ctx.tick()
            ctx.set(domain.rst, 0)
            if ctx.get(dut.busy):
                raise RuntimeError("the system is still busy after a reset")
            await load_system(ctx, dut, beats)
        for codes in vectors:
            results.append(await run_inference(ctx, dut, codes, nodes=nodes, rng=rng,
                                               o_ready=o_ready, max_cycles=max_cycles))

    run_simulator(top, bench, vcd=vcd)
    return results
