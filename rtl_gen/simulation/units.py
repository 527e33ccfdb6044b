"""The non-linear units in the Amaranth simulator: rows through the softmax unit
(:func:`simulate_softmax`) and the residual add + LayerNorm unit (:func:`simulate_add_norm`),
after their constants are loaded; their testbenches, for other runners."""

from __future__ import annotations

import random
from dataclasses import dataclass

from rtl_gen.add_norm import AddNorm
from rtl_gen.layouts import NORM_CODES, score_layout
from rtl_gen.params import RTLConfig
from rtl_gen.simulation import check_probability, run_simulator, stream_put
from rtl_gen.softmax import Softmax

__all__ = [
    "NormRow",
    "SoftmaxRow",
    "add_norm_testbench",
    "simulate_add_norm",
    "simulate_softmax",
    "softmax_testbench",
]


@dataclass(frozen=True)
class SoftmaxRow:
    """What one simulated row produced: its codes, the clocks from its first input beat to
    its output marker, the overflow flag, and the clock (counted from the first) at which its
    marker was taken."""

    codes: list[int]
    clocks: int
    overflow: bool
    end: int = 0


def softmax_testbench(dut, config: RTLConfig, rows, load, out: list, *, o_ready: float = 1.0,
                      i_valid: float = 1.0, seed: int = 0, on_load=None):
    """The testbench coroutine behind :func:`simulate_softmax`: the ``load`` beats, then the
    rows, each to its marker; a :class:`SoftmaxRow` per row is appended to ``out``.
    ``on_load(clock)`` is called with the clock of the last load beat (the gate-level
    measurement subtracts the load phase)."""
    check_probability("o_ready", o_ready)
    check_probability("i_valid", i_valid)
    rng = random.Random(seed)
    word = score_layout(config)

    async def bench(ctx):
        clock = 0
        for target, addr, data in load:
            clock += await stream_put(ctx, dut.load, {"target": target, "addr": addr,
                                                      "data": data})
        if on_load is not None:
            on_load(clock)
        for scores, valid in rows:
            beats = [{"score": int(a), "valid": int(v), "last": 0}
                     for a, v in zip(scores, valid, strict=True)]
            codes, start, pending = [], None, list(beats) + [{"last": 1}]
            done = False
            while not done:
                offer = bool(pending) and (i_valid >= 1.0 or rng.random() < i_valid)
                ready = o_ready >= 1.0 or rng.random() < o_ready
                if offer:
                    ctx.set(dut.i.payload, word.const(pending[0]))
                ctx.set(dut.i.valid, offer)
                ctx.set(dut.o.ready, ready)
                _, _, i_rdy, o_val, o_pay, ovf = await ctx.tick().sample(
                    dut.i.ready, dut.o.valid, dut.o.payload, dut.overflow)
                clock += 1
                if offer and i_rdy:
                    start = clock if start is None else start
                    pending.pop(0)
                if o_val and ready:
                    if o_pay.last:
                        done = True
                    else:
                        codes.append(int(o_pay.code))
            ctx.set(dut.i.valid, 0)
            ctx.set(dut.o.ready, 0)
            out.append(SoftmaxRow(codes, clock - start + 1, bool(ovf), clock))

    return bench


def simulate_softmax(
    config: RTLConfig,
    rows: list[tuple[list[int], list[bool]]],
    load: list[tuple[int, int, int]],
    *,
    o_ready: float = 1.0,
    i_valid: float = 1.0,
    seed: int = 0,
    component=None,
    vcd: str | None = None,
) -> list[SoftmaxRow]:
    """Run rows ``(scores, valid)`` through :class:`Softmax` in the Amaranth simulator, after
    the ``load`` beats; ``o_ready`` / ``i_valid`` are the probabilities of ``o.ready`` and of
    an input beat on a clock. ``component`` replaces the unit (a mutant, in tests)."""
    dut = Softmax(config) if component is None else component
    out: list[SoftmaxRow] = []
    run_simulator(dut, softmax_testbench(dut, config, rows, load, out, o_ready=o_ready,
                                         i_valid=i_valid, seed=seed), vcd=vcd)
    return out


@dataclass(frozen=True)
class NormRow:
    """What one simulated row produced: the new stream, its codes per position
    (``codes[p][j]``), the clocks from its first input pair to its last output beat, and the
    clock (counted from the first) of that beat."""

    r: list[int]
    codes: list[list[int]]
    clocks: int
    end: int = 0


def add_norm_testbench(dut, config: RTLConfig, rows, load, out: list, *,  # noqa: C901 -- load, then rows, in one bench
                       o_ready: float = 1.0, i_valid: float = 1.0, seed: int = 0,
                       on_load=None):
    """The testbench coroutine behind :func:`simulate_add_norm`: the ``load`` beats, then the
    rows; a :class:`NormRow` per row is appended to ``out``. ``on_load(clock)`` is called with
    the clock of the last load beat."""
    check_probability("o_ready", o_ready)
    check_probability("i_valid", i_valid)
    rng = random.Random(seed)
    n = config.hidden

    async def row(ctx, r, v, clock: int) -> tuple[list, int, int]:
        """One row in, its ``n`` outputs out: ``(outputs, clock of the first input, clock)``."""
        todo = {"r": list(r), "v": list(v)}
        got, start = [], None
        # each input set only when it changes (every ctx.set settles the whole design)
        driven = {"r": None, "v": None, "o": None}  # valid, valid, ready
        fresh = {"r": True, "v": True}  # the head of todo is not on the payload yet
        while len(got) < n:
            offers = {}
            for name in ("r", "v"):
                port = getattr(dut, name)
                offers[name] = bool(todo[name]) and (i_valid >= 1.0 or rng.random() < i_valid)
                if offers[name] and fresh[name]:
                    ctx.set(port.payload, {name: todo[name][0]})
                    fresh[name] = False
                if driven[name] != offers[name]:
                    ctx.set(port.valid, offers[name])
                    driven[name] = offers[name]
            ready = o_ready >= 1.0 or rng.random() < o_ready
            if driven["o"] != ready:
                ctx.set(dut.o.ready, ready)
                driven["o"] = ready
            _, _, r_rdy, v_rdy, o_val, o_pay = await ctx.tick().sample(
                dut.r.ready, dut.v.ready, dut.o.valid, dut.o.payload)
            clock += 1
            for name, rdy in (("r", r_rdy), ("v", v_rdy)):
                if offers[name] and rdy:
                    start = clock if start is None else start
                    todo[name].pop(0)
                    fresh[name] = True
            if o_val and ready:
                got.append((int(o_pay.r), [int(o_pay.q[p]) for p in range(NORM_CODES)]))
        for name in ("r", "v"):
            ctx.set(getattr(dut, name).valid, 0)
        ctx.set(dut.o.ready, 0)
        return got, start, clock

    async def bench(ctx):
        clock = 0
        for target, addr, data in load:
            clock += await stream_put(ctx, dut.load, {"target": target, "addr": addr,
                                                      "data": data})
        if on_load is not None:
            on_load(clock)
        for r, v in rows:
            if len(r) != n or len(v) != n:
                raise ValueError(f"a row has {len(r)} and {len(v)} entries, the unit {n}")
            got, start, clock = await row(ctx, r, v, clock)
            out.append(NormRow([g[0] for g in got],
                               [[g[1][p] for g in got] for p in range(NORM_CODES)],
                               clock - start + 1, clock))

    return bench


def simulate_add_norm(
    config: RTLConfig,
    rows: list[tuple[list[int], list[int]]],
    load: list[tuple[int, int, int]],
    *,
    o_ready: float = 1.0,
    i_valid: float = 1.0,
    seed: int = 0,
    component=None,
    vcd: str | None = None,
) -> list[NormRow]:
    """Run rows ``(r, V)`` through :class:`AddNorm` in the Amaranth simulator, after the
    ``load`` beats; ``o_ready`` / ``i_valid`` are the probabilities of ``o.ready`` and of a
    beat on each input on a clock. ``component`` replaces the unit (a mutant, in tests)."""
    dut = AddNorm(config) if component is None else component
    out: list[NormRow] = []
    run_simulator(dut, add_norm_testbench(dut, config, rows, load, out, o_ready=o_ready,
                                          i_valid=i_valid, seed=seed), vcd=vcd)
    return out
