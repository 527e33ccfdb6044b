"""Amaranth-simulator tests of the tiles' sub-components (rtl_gen/tile_parts.py).

Each part runs clock by clock against a behavioural model written here from its docstring, on
random inputs; every output is compared on every clock.
"""

from __future__ import annotations

import gc
import random

import pytest

from golden_models import weight_range
from rtl_gen.layouts import init_row_layout, pack, theta_row_layout, weight_row_layout
from rtl_gen.params import RTLConfig
from rtl_gen.simulation import run_simulator
from rtl_gen.tile_parts import Comparator, EventEmitter, InitLoader, Membranes, ThresholdWalk

CONFIGS = [
    RTLConfig(T=16, k=1, n_in=6, tile_neurons=5, lanes=2),  # a partial last group
    RTLConfig(T=4, k=0, n_in=3, tile_neurons=3, lanes=1, weight_bits=4),
    RTLConfig(T=2, k=0, n_in=2, tile_neurons=4, weight_bits=3),  # one group, T = 2
]
IDS = ["N5L2", "N3L1w4", "N4T2w3"]


def _groups(cfg: RTLConfig):
    """``(g, lane, j)`` of every neuron."""
    return [(j // cfg.lanes, j % cfg.lanes, j) for j in range(cfg.tile_neurons)]


# -- Membranes -----------------------------------------------------------------------------------


def _weight_row(cfg: RTLConfig, weights):
    values = [int(w > 0) for w in weights] if cfg.weight_bits == 1 else weights
    return pack(weight_row_layout(cfg), values)


def _random_weights(cfg, rng, extreme=False):
    lo, hi = weight_range(cfg.weight_bits)
    if cfg.weight_bits == 1:
        return [rng.choice((-1, 1)) for _ in range(cfg.tile_neurons)]
    return [lo if extreme else rng.randint(lo, hi) for _ in range(cfg.tile_neurons)]


def _membrane_clocks(cfg, rng):
    """Per clock: the init values loaded ``{j: value}`` and the input beat ``(weights,
    operand)`` or None. The first two windows drive every membrane to -acc_bound and
    +acc_bound (extreme init, weights and operands); the others are random, with idle clocks."""
    T, N = cfg.T, cfg.tile_neurons
    w_big = -1 if cfg.weight_bits == 1 else weight_range(cfg.weight_bits)[0]
    d = T - 1
    windows = [([-cfg.init_bound] * N, [([w_big] * N, d)] * cfg.n_in),
               ([cfg.init_bound] * N, [([w_big] * N, -d)] * cfg.n_in)]
    for _ in range(4):
        init = [rng.randint(-cfg.init_bound, cfg.init_bound) for _ in range(N)]
        beats = [(_random_weights(cfg, rng), rng.randint(-d, d))
                 for _ in range(rng.randint(0, cfg.n_in))]
        windows.append((init, beats))
    clocks = []
    for init, beats in windows:
        half = set(rng.sample(range(N), N // 2))  # any subset of membranes loads at a time
        for subset in (half, set(range(N)) - half):
            clocks.append(({j: init[j] for j in subset}, None))
        for beat in beats:
            while rng.random() < 0.3:
                clocks.append(({}, None))
            clocks.append(({}, beat))
        clocks.append(({}, None))  # the last beat's row arrives
    return clocks


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_membranes_load_then_accumulate(cfg):
    rng = random.Random(cfg.T * 31 + cfg.weight_bits)
    dut = Membranes(cfg)
    clocks = _membrane_clocks(cfg, rng)
    seen = []

    async def bench(ctx):
        model = [0] * cfg.tile_neurons
        prev = None  # the beat of the clock before: its weight row is read now
        for load, beat in clocks:
            ctx.set(dut.init.load, sum(1 << j for j in load))
            for j, value in load.items():
                ctx.set(dut.init.value[j], value)
            ctx.set(dut.valid, beat is not None)
            # without a beat the operand is anything, and so is the row without one pending
            ctx.set(dut.operand, beat[1] if beat else rng.randint(-cfg.T + 1, cfg.T - 1))
            ctx.set(dut.row, _weight_row(cfg, prev[0]) if prev
                    else rng.getrandbits(cfg.weight_row_width))
            await ctx.tick()
            for j in range(cfg.tile_neurons):
                if j in load:
                    model[j] = load[j]
                elif prev is not None:
                    model[j] += prev[0][j] * prev[1]
            prev = beat
            seen.append(([ctx.get(v) for v in dut.v], list(model)))

    run_simulator(dut, bench)
    for n, (got, want) in enumerate(seen):
        assert got == want, f"clock {n}"
    assert {min(min(w) for _, w in seen), max(max(w) for _, w in seen)} == {
        -cfg.acc_bound, cfg.acc_bound}


# -- InitLoader ----------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_init_loader_reads_row_g_then_loads_group_g(cfg):
    rng = random.Random(cfg.groups)
    G, L = cfg.groups, cfg.lanes
    layout = init_row_layout(cfg)
    rows = [[rng.randint(-cfg.init_bound, cfg.init_bound) for _ in range(L)] for _ in range(G)]
    mem = [pack(layout, r) for r in rows]
    got, want = [], []

    async def bench(ctx):
        rdata = 0
        for _window in range(3):
            for _ in range(rng.randint(1, 3)):  # idle clocks: no read, no load
                got.append((ctx.get(dut.ren), ctx.get(dut.addr), ctx.get(dut.init.load),
                            ctx.get(dut.done)))
                want.append((0, 0, 0, 0))
                await ctx.tick()
            ctx.set(dut.en, 1)
            for c in range(G + 1):
                ctx.set(dut.row, rdata)
                load = ctx.get(dut.init.load)
                got.append((ctx.get(dut.ren), ctx.get(dut.addr), load, ctx.get(dut.done)))
                group = [j for g, _, j in _groups(cfg) if g == c - 1]
                want.append((int(c < G), c % (1 << len(dut.addr)), sum(1 << j for j in group),
                             int(c == G)))
                for j in group:
                    got.append(ctx.get(dut.init.value[j]))
                    want.append(rows[c - 1][j % L])
                _, _, ren, addr = await ctx.tick().sample(dut.ren, dut.addr)
                if ren:  # the synchronous read: the row shows from the next clock
                    rdata = mem[addr]
            ctx.set(dut.en, 0)

    dut = InitLoader(cfg)
    run_simulator(dut, bench)
    assert got == want


# -- ThresholdWalk -------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
@pytest.mark.parametrize("p_advance", [1.0, 0.4])
def test_threshold_walk_steps_t_outer_g_inner(cfg, p_advance):
    rng = random.Random(int(p_advance * 10) + cfg.T)
    T, G = cfg.T, cfg.groups
    order = [(t, g) for t in range(T) for g in range(G)]
    walks = []

    def step(ctx):
        return tuple(ctx.get(s) for s in (dut.step.valid, dut.step.t, dut.step.g, dut.step.last))

    async def bench(ctx):
        for restart_after in (None, len(order) // 2, None):
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            assert ctx.get(dut.step.valid) == 0 and ctx.get(dut.issuing) == 1
            handed, reads, held = [], [], []
            while ctx.get(dut.issuing) or ctx.get(dut.step.valid):
                if len(handed) == restart_after:
                    break  # a new walk starts in the middle of this one
                advance = rng.random() < p_advance
                ctx.set(dut.advance, advance)
                before = step(ctx)
                if advance and before[0]:
                    handed.append(before[1:])
                if advance and ctx.get(dut.issuing):
                    reads.append((ctx.get(dut.ren), ctx.get(dut.addr)))
                else:  # no read, address 0
                    assert (ctx.get(dut.ren), ctx.get(dut.addr)) == (0, 0)
                await ctx.tick()
                if not advance:  # nothing moves without advance
                    held.append(step(ctx) == before)
            ctx.set(dut.advance, 0)
            walks.append((restart_after, handed, reads, held))

    dut = ThresholdWalk(cfg)
    run_simulator(dut, bench)
    for restart_after, handed, reads, held in walks:
        n = len(order) if restart_after is None else restart_after
        assert handed == [(t, g, int(t == T - 1)) for t, g in order[:n]]
        if restart_after is None:
            # row t*G + g read as (t, g) enters stage B; none for t = T-1
            assert [r[0] for r in reads] == [int(t != T - 1) for t, _ in order]
            assert [a for ren, a in reads if ren] == list(range(cfg.theta_depth))
        assert all(held)


# -- Comparator ----------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
def test_comparator_crosses_once_per_window(cfg):
    rng = random.Random(cfg.tile_neurons * 7 + cfg.lanes)
    T, N, L, G = cfg.T, cfg.tile_neurons, cfg.lanes, cfg.groups
    bound = cfg.acc_bound
    tlayout = theta_row_layout(cfg)
    got, want = [], []

    async def bench(ctx):
        for _window in range(4):
            ctx.set(dut.clear, 1)
            await ctx.tick()
            ctx.set(dut.clear, 0)
            fired = set()
            v = [rng.randint(-bound, bound) for _ in range(N)]
            for j in range(N):
                ctx.set(dut.v[j], v[j])
            for t in range(T):
                for g in range(G):
                    theta = [rng.randint(-bound, bound + 1) for _ in range(L)]
                    if rng.random() < 0.3:  # thresholds equal to the membrane: >= crosses
                        theta = [v[min(g * L + lane, N - 1)] for lane in range(L)]
                    ctx.set(dut.theta, pack(tlayout, theta))
                    ctx.set(dut.step.g, g)
                    ctx.set(dut.step.t, t)
                    ctx.set(dut.step.last, t == T - 1)
                    commit = rng.random() < 0.8 or t == T - 1
                    ctx.set(dut.commit, commit)
                    active = [g * L + lane < N and g * L + lane not in fired
                              for lane in range(L)]
                    cross = [a and (t == T - 1 or v[g * L + lane] >= theta[lane])
                             for lane, a in enumerate(active)]
                    got.append((ctx.get(dut.active), ctx.get(dut.cross),
                                ctx.get(dut.n_active), ctx.get(dut.n_cross)))
                    want.append((sum(a << i for i, a in enumerate(active)),
                                 sum(c << i for i, c in enumerate(cross)),
                                 sum(active), sum(cross)))
                    if commit:
                        fired |= {g * L + lane for lane, c in enumerate(cross) if c}
                    await ctx.tick()
            ctx.set(dut.commit, 0)
            assert fired == set(range(N))  # every neuron fired once at the latest at T-1

    dut = Comparator(cfg)
    run_simulator(dut, bench)
    assert got == want


# -- EventEmitter --------------------------------------------------------------------------------


@pytest.mark.parametrize("cfg", CONFIGS, ids=IDS)
@pytest.mark.parametrize("p_ready", [1.0, 0.5])
def test_event_emitter_sends_lowest_lane_first(cfg, p_ready):
    rng = random.Random(cfg.lanes * 3 + int(p_ready * 10))
    L, G, T = cfg.lanes, cfg.groups, cfg.T
    got, want = [], []

    async def bench(ctx):
        pend, t, g = [], 0, 0
        for _ in range(200):
            ready = rng.random() < p_ready
            ctx.set(dut.o.ready, ready)
            valid = bool(pend)
            fire = valid and ready
            free = not pend or (fire and len(pend) == 1)
            got.append((ctx.get(dut.o.valid), ctx.get(dut.free)))
            want.append((int(valid), int(free)))
            if valid:
                got.append((ctx.get(dut.o.payload.addr), ctx.get(dut.o.payload.t),
                            ctx.get(dut.o.payload.last)))
                want.append((g * L + pend[0], t, 0))
            if fire:
                pend = pend[1:]
            push = free and rng.random() < 0.7
            ctx.set(dut.push, push)
            if push:
                lanes = rng.getrandbits(L)
                t, g = rng.randrange(T), rng.randrange(G)
                ctx.set(dut.lanes, lanes)
                ctx.set(dut.t, t)
                ctx.set(dut.g, g)
                pend = [lane for lane in range(L) if lanes >> lane & 1]
            await ctx.tick()
            ctx.set(dut.push, 0)

    dut = EventEmitter(cfg)
    run_simulator(dut, bench)
    assert got == want


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
@pytest.mark.parametrize("part", [Membranes, InitLoader, ThresholdWalk, Comparator, EventEmitter])
def test_parts_reject_non_config(part):
    with pytest.raises(TypeError, match=r"^config must be an RTLConfig, not 16$"):
        part(16)
    gc.collect()  # the half-built component warns when collected; keep that inside this test
