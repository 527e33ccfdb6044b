"""Amaranth-simulator tests of the fast harness's parts (regression/fast_rtl.py): the sequence
player, the output comparator and the counter checker, each against what the module docstring
promises, on random stimuli. (The whole harness around generated Verilog is tested on Icarus
and Verilator in tests/test_fast_harness.py.)"""

from __future__ import annotations

import random

import pytest

from regression.fast_rtl import CounterChecker, OutputChecker, SequencePlayer
from rtl_gen.simulation import run_simulator

LOAD_W, I_W = 5, 3


def _words(rng, n):
    """Sequence words ``(barrier, start, kind, payload)``; a start word is a barrier word."""
    words = []
    for _ in range(n):
        start = rng.random() < 0.2
        barrier = start or rng.random() < 0.1
        kind = rng.randrange(2)
        words.append((int(barrier), int(start), kind, rng.getrandbits(I_W if kind else LOAD_W)))
    return words


def _word(w):
    barrier, start, kind, payload = w
    return barrier | start << 1 | kind << 2 | payload << 3


@pytest.mark.parametrize(("p_valid", "p_ready", "passes"), [(256, 1.0, 1), (100, 0.6, 3)])
def test_sequence_player_plays_every_word_in_order(p_valid, p_ready, passes):
    rng = random.Random(p_valid + passes)
    words = _words(rng, 12)
    dut = SequencePlayer(LOAD_W, I_W, 16)
    log = []  # per clock: settled, and per stream (valid, ready, payload); take, addr

    async def bench(ctx):
        ctx.set(dut.seed, 0x1234)
        ctx.set(dut.p_valid, p_valid)
        ctx.set(dut.n_seq, len(words))
        ctx.set(dut.passes, passes)
        ctx.set(dut.start, 1)
        ctx.set(dut.word, _word(words[0]))
        await ctx.tick()
        ctx.set(dut.start, 0)
        ctx.set(dut.running, 1)
        for _ in range(2000):
            if ctx.get(dut.finished):
                break
            ctx.set(dut.word, _word(words[ctx.get(dut.addr)]))  # asynchronous read
            settled = rng.random() < 0.3
            ctx.set(dut.settled, settled)
            clock = {"settled": settled}
            for name in ("load", "i"):
                port = getattr(dut, name)
                ctx.set(port.ready, rng.random() < p_ready)
                clock[name] = (ctx.get(port.valid), ctx.get(port.ready), ctx.get(port.payload))
            clock["take"] = ctx.get(dut.take)
            log.append(clock)
            await ctx.tick()
        log.append({"end": [ctx.get(getattr(dut, n)) for n in
                            ("finished", "windows", "beats_load", "beats_in")]})

    run_simulator(dut, bench)
    end = log.pop()["end"]
    expect = words * passes
    taken, offered_since_take, settled_since_take = [], False, False
    barrier_ok = []
    for n, clock in enumerate(log):
        streams = [(kind, *clock[name]) for kind, name in enumerate(("load", "i"))]
        moved = [(kind, payload) for kind, valid, ready, payload in streams if valid and ready]
        assert clock["take"] == len(moved) <= 1
        assert sum(valid for _, valid, _, _ in streams) <= 1  # one beat offered at a time
        offered = any(valid for _, valid, _, _ in streams)
        if offered and not offered_since_take and expect[len(taken)][0]:
            barrier_ok.append(settled_since_take)  # a barrier word waits for a settled clock
        offered_since_take |= offered
        settled_since_take |= clock["settled"]
        for kind, valid, ready, payload in streams:  # the stream rule
            if valid and not ready and n + 1 < len(log):
                after = log[n + 1][("load", "i")[kind]]
                assert (after[0], after[2]) == (1, payload), f"clock {n}: beat not held"
        if moved:
            taken.append(moved[0])
            offered_since_take = settled_since_take = False
    assert taken == [(kind, payload) for _, _, kind, payload in expect]
    assert barrier_ok and all(barrier_ok)
    kinds = [kind for _, _, kind, _ in expect]
    assert end == [1, sum(start for _, start, _, _ in expect), kinds.count(0), kinds.count(1)]


def _run_checker(beats, expected, *, passes=1, p_ready=256, hold_broken=False):
    """Offer ``beats`` (payloads; bit 0 is ``last``) to an :class:`OutputChecker` expecting
    ``expected``; returns its totals and the clocks ``o.valid`` was high while ``o.ready`` low."""
    width = 6
    dut = OutputChecker(width, 0, 16)
    got = {}

    async def bench(ctx):
        ctx.set(dut.seed, 7)
        ctx.set(dut.p_ready, p_ready)
        ctx.set(dut.n_out, len(expected))
        ctx.set(dut.passes, passes)
        ctx.set(dut.start, 1)
        await ctx.tick()
        ctx.set(dut.start, 0)
        ctx.set(dut.running, 1)
        stalls = 0
        for n, beat in enumerate(beats):
            ctx.set(dut.o.valid, 1)
            ctx.set(dut.o.payload, beat)
            while True:
                ctx.set(dut.word, expected[ctx.get(dut.addr)])
                ready = ctx.get(dut.o.ready)
                assert ctx.get(dut.take) == ready
                await ctx.tick()
                if ready:
                    break
                stalls += 1
                if hold_broken and n == 1:  # the design changes a beat that waits
                    ctx.set(dut.o.payload, beat ^ 0b10)
            ctx.set(dut.o.valid, 0)
            await ctx.tick()
        got.update({name: ctx.get(getattr(dut, name)) for name in (
            "beats_out", "markers", "stalled_out", "err_out", "err_extra", "err_stream",
            "bad_out_at", "bad_out_got")})
        got["stalls"] = stalls

    run_simulator(dut, bench)
    return got


def test_output_checker_accepts_the_expected_beats():
    rng = random.Random(1)
    expected = [rng.getrandbits(5) << 1 for _ in range(6)] + [1]  # events, then a marker
    got = _run_checker(expected * 2, expected, passes=2, p_ready=120)
    assert got["stalls"] > 0
    assert got == {"beats_out": 14, "markers": 2, "stalled_out": got["stalls"], "err_out": 0,
                   "err_extra": 0, "err_stream": 0, "bad_out_at": 0, "bad_out_got": 0,
                   "stalls": got["stalls"]}


def test_output_checker_keeps_the_first_mismatch():
    expected = [0b000100, 0b001000, 0b001100, 0b000001]
    beats = [0b000100, 0b110000, 0b001110, 0b000001, 0b000001]  # two wrong, one extra
    got = _run_checker(beats, expected)
    assert (got["err_out"], got["bad_out_at"], got["bad_out_got"]) == (2, 2, 0b110000)
    assert (got["err_extra"], got["markers"], got["beats_out"]) == (1, 2, 5)
    assert got["err_stream"] == got["stalled_out"] == 0


def test_output_checker_catches_a_beat_changed_while_waiting():
    expected = [0b000100, 0b001000, 0b001100, 0b000001]
    got = _run_checker(expected, expected, p_ready=60, hold_broken=True)
    assert got["err_stream"] >= 1


def test_counter_checker_compares_each_window_once():
    rng = random.Random(3)
    widths = {"a": 3, "b": 5}
    windows = [(rng.getrandbits(3), rng.getrandbits(5)) for _ in range(6)]
    expected = [a | b << 3 for a, b in windows]
    wrong = {2: 0b10, 4: 0b1000}  # window -> bits flipped in the design's counters
    design = [e ^ wrong.get(n, 0) for n, e in enumerate(expected)]
    dut = CounterChecker(widths, 8)
    seen = []

    async def bench(ctx):
        ctx.set(dut.n_cnt, len(expected))
        for n, word in enumerate(design):
            ctx.set(dut.windows, n + 1)
            ctx.set(dut.counters, word)
            for quiet in (0, 1, 1, 1):  # the window ends, then the design stays quiet
                ctx.set(dut.quiet, quiet)
                ctx.set(dut.word, expected[ctx.get(dut.addr)])
                seen.append(ctx.get(dut.check))
                await ctx.tick()
        seen.append({name: ctx.get(getattr(dut, name)) for name in (
            "checks", "err_cnt", "bad_cnt_at", "bad_cnt_got", "tot_a", "tot_b")})

    run_simulator(dut, bench)
    totals = seen.pop()
    assert seen == [0, 1, 0, 0] * len(windows)  # once per window, at its first quiet clock
    assert totals == {"checks": 6, "err_cnt": 2, "bad_cnt_at": 3, "bad_cnt_got": design[2],
                      "tot_a": sum(d & 7 for d in design), "tot_b": sum(d >> 3 for d in design)}
