"""Neuron tile in the Amaranth simulator against golden_models.IntegerLayer.run_events."""

from __future__ import annotations

import gc
import random

import pytest
import torch
from amaranth.hdl import ClockDomain, Module
from amaranth.sim import Simulator
from hypothesis import given, settings
from hypothesis import strategies as st

from golden_models import CodeSpace, IntegerLayer, Mask, encode_events, folded_init, weight_range
from rtl_gen.params import RTLConfig
from rtl_gen.simulation import stream_get, stream_put
from rtl_gen.simulation.tiles import simulate_tile
from rtl_gen.tile import NeuronTile, load_beats

# every (T, k) of the grid T in {2, 4, 16, 64} x k in {0, 1, T-1}
GRID = sorted({(T, k) for T in (2, 4, 16, 64) for k in (0, 1, T - 1)})


def random_layer(cfg: RTLConfig, rng: random.Random, *, density: float = 1.0):
    """A random layer that fits ``cfg`` and one window of its input events.

    Masks are random (so the config registers are reprogrammed through ``load``); thresholds
    are drawn around the layer's reachable membrane range so neurons fire at many steps.
    """
    space = CodeSpace(cfg.T, cfg.family)
    g = torch.Generator().manual_seed(rng.randrange(1 << 30))
    lo, hi = weight_range(cfg.weight_bits)
    shape = (cfg.n_in, cfg.tile_neurons)
    if cfg.weight_bits == 1:
        w = torch.randint(0, 2, shape, generator=g) * 2 - 1
    else:
        w = torch.randint(lo, hi + 1, shape, generator=g)
    in_mask = Mask(space, rng.randrange(cfg.T), rng.randrange(cfg.T))
    out_mask = Mask(space, rng.randrange(cfg.T), cfg.k)
    init = folded_init(w, in_mask.mu)
    zero = torch.zeros(cfg.tile_neurons, cfg.T - 1, dtype=torch.int64)
    v_lo, v_hi = IntegerLayer(w, cfg.weight_bits, init, zero, in_mask, out_mask).v_range()
    theta = torch.randint(v_lo - 2, v_hi + 3, (cfg.tile_neurons, cfg.T - 1), generator=g)
    theta = theta.sort(dim=1, descending=True).values
    layer = IntegerLayer(w, cfg.weight_bits, init, theta, in_mask, out_mask)
    q = torch.randint(space.q_min, space.q_max + 1, (cfg.n_in,), generator=g)
    index, time = encode_events(q, in_mask)
    keep = [e for e in range(index.numel()) if rng.random() < density]
    return layer, index[keep].tolist(), time[keep].tolist()


def golden(layer: IntegerLayer, index, time):
    res = layer.run_events(torch.tensor(index, dtype=torch.int64),
                           torch.tensor(time, dtype=torch.int64))
    pairs = zip(res.out_index.tolist(), res.out_time.tolist(), strict=True)
    return list(pairs), res.counters.as_dict()


def check_windows(cfg: RTLConfig, windows, **kw):
    results = simulate_tile(cfg, windows, **kw)
    assert len(results) == len(windows)
    for n, ((layer, index, time), got) in enumerate(zip(windows, results, strict=True)):
        events, counters = golden(layer, index, time)
        assert got.events == events, f"window {n}"
        assert got.counters == counters, f"window {n}"
    return results


@pytest.mark.parametrize("weight_bits", [1, 4])
@pytest.mark.parametrize(("T", "k"), GRID)
def test_tile_matches_golden_grid(T, k, weight_bits):
    rng = random.Random(T * 1000 + k * 10 + weight_bits)
    family = ("sym", "asym")[(T + k + weight_bits) % 2]
    cfg = RTLConfig(T=T, k=k, family=family, weight_bits=weight_bits, n_in=6,
                    tile_neurons=5, lanes=2)
    a = random_layer(cfg, rng)
    b = random_layer(cfg, rng, density=0.5)
    # same layer twice (no reload), a new layer, and an empty window
    windows = [a, (a[0], a[1][::-1][:3], a[2][::-1][:3]), b, (b[0], [], [])]
    check_windows(cfg, windows, o_ready=0.5, i_valid=0.7, seed=T + k)


@pytest.mark.parametrize("family", ["sym", "asym"])
def test_tile_one_group_full_throughput(family):
    cfg = RTLConfig(T=16, k=1, family=family, weight_bits=1, n_in=8, tile_neurons=4)
    rng = random.Random(7)
    results = check_windows(cfg, [random_layer(cfg, rng) for _ in range(3)])
    for r in results:
        assert r.cycles["last_in"] - r.cycles["first_in"] <= 8  # one event per clock


@settings(max_examples=12, deadline=None)
@given(
    T=st.sampled_from([2, 4, 8, 16, 32]),
    data=st.data(),
)
def test_tile_random_configs(T, data):
    k = data.draw(st.integers(0, T - 1))
    n = data.draw(st.integers(1, 6))
    cfg = RTLConfig(
        T=T, k=k, family=data.draw(st.sampled_from(["sym", "asym"])),
        weight_bits=data.draw(st.sampled_from([1, 2, 3, 8])),
        n_in=data.draw(st.integers(1, 7)), tile_neurons=n, lanes=data.draw(st.integers(1, n)),
    )
    rng = random.Random(data.draw(st.integers(0, 1 << 20)))
    windows = [random_layer(cfg, rng, density=data.draw(st.floats(0.0, 1.0))) for _ in range(2)]
    check_windows(cfg, windows, o_ready=data.draw(st.sampled_from([0.3, 1.0])), seed=1)


@pytest.mark.parametrize("weight_bits", [1, 4])
@pytest.mark.parametrize("sign", [1, -1])
def test_tile_accumulator_extremes(weight_bits, sign):
    """Membranes at +-acc_bound (largest weights, largest |d|, init at +-init_bound)."""
    cfg = RTLConfig(T=16, k=0, family="sym", weight_bits=weight_bits, n_in=5, tile_neurons=3)
    space = cfg.space
    lo, hi = weight_range(weight_bits)
    w_big = lo if weight_bits > 1 else -1  # |lo| is the largest magnitude
    w = torch.full((cfg.n_in, cfg.tile_neurons), w_big, dtype=torch.int64)
    # d = i_max_in - tau = +-(T-1); the sign of W*d follows `sign`
    i_max_in, tau = (cfg.T - 1, 0) if sign * w_big < 0 else (0, cfg.T - 1)
    in_mask = Mask(space, i_max_in, 0)
    out_mask = Mask(space, 3, 0)
    init = torch.full((cfg.tile_neurons,), -sign * cfg.init_bound, dtype=torch.int64)
    init[0] = sign * cfg.init_bound
    bound = cfg.acc_bound
    # thresholds straddling the extremes; the out-of-range ones get clamped by the packer
    col = sorted([bound + 5, bound, bound - 1, 1, 0, -1, -bound + 1, -bound, -bound - 5] * 2,
                 reverse=True)[: cfg.T - 1]
    theta = torch.tensor([col] * cfg.tile_neurons, dtype=torch.int64)
    layer = IntegerLayer(w, weight_bits, init, theta, in_mask, out_mask)
    index = list(range(cfg.n_in))
    time = [tau] * cfg.n_in
    v = layer.run_events(torch.tensor(index), torch.tensor(time)).v
    assert int(v.abs().max()) == bound
    check_windows(cfg, [(layer, index, time)])


@pytest.mark.parametrize("phase", ["integrate", "fire"])
def test_tile_reset_mid_window(phase):
    """rst during a window returns to idle; the next window starts from the init values."""
    cfg = RTLConfig(T=8, k=1, n_in=6, tile_neurons=4, lanes=3)
    rng = random.Random(3)
    layer, index, time = random_layer(cfg, rng)
    expected = golden(layer, index, time)
    m = Module()
    m.domains.sync = cd = ClockDomain()
    m.submodules.dut = dut = NeuronTile(cfg)
    got = {}

    async def bench(ctx):
        ctx.set(dut.o.ready, 1)
        for target, addr, word in load_beats(cfg, layer):
            await stream_put(ctx, dut.load, {"target": target, "addr": addr, "data": word})
        for a, t in zip(index, time, strict=True):
            await stream_put(ctx, dut.i, {"addr": a, "tau": t, "last": 0})
        if phase == "fire":
            await stream_put(ctx, dut.i, {"addr": 0, "tau": 0, "last": 1})
            await ctx.tick().repeat(cfg.T)  # midway through the fire walk (T*G = 16 clocks)
            assert ctx.get(dut.busy) == 1
        ctx.set(cd.rst, 1)
        await ctx.tick()
        ctx.set(cd.rst, 0)
        assert ctx.get(dut.busy) == 0
        # rst restored the config registers: reprogram them (SRAM rows survive)
        target, addr, word = load_beats(cfg, layer)[-1]
        assert target == 3
        await stream_put(ctx, dut.load, {"target": target, "addr": addr, "data": word})
        for a, t in zip(index, time, strict=True):
            await stream_put(ctx, dut.i, {"addr": a, "tau": t, "last": 0})
        await stream_put(ctx, dut.i, {"addr": 0, "tau": 0, "last": 1})
        events = []
        while not (payload := await stream_get(ctx, dut.o)).last:
            events.append((int(payload.addr), int(payload.t)))
        await ctx.tick()
        got["events"] = events
        got["counters"] = {n: ctx.get(getattr(dut, f"cnt_{n}")) for n in cfg.tile_counters}

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert (got["events"], got["counters"]) == expected


def test_tile_load_only_when_idle():
    cfg = RTLConfig(T=4, k=0, n_in=2, tile_neurons=2)
    dut = NeuronTile(cfg)
    seen = []

    async def bench(ctx):
        assert ctx.get(dut.load.ready) == 1
        ctx.set(dut.i.valid, 1)
        await ctx.tick()
        seen.append((ctx.get(dut.busy), ctx.get(dut.load.ready)))

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(bench)
    sim.run()
    assert seen == [(1, 0)]


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_tile_rejects_non_config():
    with pytest.raises(TypeError, match=r"^config must be an RTLConfig, not 16$"):
        NeuronTile(16)
    gc.collect()  # the half-built component warns when collected; keep that inside this test


def test_load_beats_layout():
    cfg = RTLConfig(T=4, k=0, family="sym", weight_bits=2, n_in=2, tile_neurons=3, lanes=2)
    space = cfg.space
    w = torch.tensor([[1, -2, 0], [-1, 1, -2]])
    theta = torch.tensor([[5, 4, 3], [0, 0, -1], [100, -100, -100]])
    layer = IntegerLayer(w, 2, torch.tensor([1, -2, 3]), theta, Mask(space, 1, 0),
                         Mask(space, 2, 1))
    beats = load_beats(cfg, layer)
    tw, aw, bound = cfg.theta_width, cfg.acc_width, cfg.acc_bound
    mt, ma = (1 << tw) - 1, (1 << aw) - 1
    assert beats[0] == (0, 0, 0b00_10_01)
    assert beats[1] == (0, 1, 0b10_01_11)
    # thresholds: row t*G + g, lanes of 2, clamped to [-bound, bound + 1]
    assert beats[2] == (1, 0, 5 | 0 << tw)
    assert bound == 20
    assert beats[3] == (1, 1, bound + 1)
    assert beats[4] == (1, 2, 4 | 0 << tw)
    assert beats[5] == (1, 3, -bound & mt)
    assert beats[6] == (1, 4, 3 | (-1 & mt) << tw)
    assert beats[8] == (2, 0, 1 | (-2 & ma) << aw)
    assert beats[9] == (2, 1, 3)
    assert beats[10] == (3, 0, 1 | 2 << 2 | 1 << 4)
    assert len(beats) == 11


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"tile_neurons": 4}, r"^layer has 3 outputs, the tile has 4 neurons$"),
        ({"n_in": 1}, r"^layer has 2 inputs, the tile has 1 rows$"),
        ({"weight_bits": 3}, r"^layer has 2-bit weights, the tile 3-bit$"),
        ({"T": 8, "k": 0}, r"^layer in_mask has T=4, the tile T=8$"),
    ],
)
def test_load_beats_rejects_mismatch(change, message):
    base = {"T": 4, "k": 0, "weight_bits": 2, "n_in": 2, "tile_neurons": 3}
    cfg = RTLConfig(**{**base, **change})
    space = CodeSpace(4, "sym")
    layer = IntegerLayer(torch.ones(2, 3, dtype=torch.int64), 2, torch.zeros(3, dtype=torch.int64),
                         torch.zeros(3, 3, dtype=torch.int64), Mask(space, 1), Mask(space, 1))
    with pytest.raises(ValueError, match=message):
        load_beats(cfg, layer)


def test_load_beats_rejects_large_init():
    cfg = RTLConfig(T=4, k=0, weight_bits=1, n_in=2, tile_neurons=1)
    space = cfg.space
    init = torch.tensor([cfg.init_bound + 1])
    layer = IntegerLayer(torch.ones(2, 1, dtype=torch.int64), 1, init,
                         torch.zeros(1, 3, dtype=torch.int64), Mask(space, 1), Mask(space, 1))
    with pytest.raises(ValueError, match=r"^init B\[0\] = 5 exceeds init_bound 4 "):
        load_beats(cfg, layer)


@pytest.mark.slow
@pytest.mark.parametrize(("T", "weight_bits", "lanes"), [(64, 4, 8), (32, 1, 32), (16, 8, 5)])
def test_tile_large(T, weight_bits, lanes):
    cfg = RTLConfig(T=T, k=1, family="asym", weight_bits=weight_bits, n_in=96, tile_neurons=32,
                    lanes=lanes)
    rng = random.Random(T + lanes)
    check_windows(cfg, [random_layer(cfg, rng) for _ in range(3)], o_ready=0.7, seed=5)
