"""Dense INT4 baseline tile in the Amaranth simulator against golden_models.dense.run_dense."""

from __future__ import annotations

import random

import pytest
import torch
from amaranth.hdl import Fragment

from golden_models import CodeSpace, IntegerLayer, Mask, folded_init, weight_range
from golden_models.dense import dense_init, run_dense, with_masks
from rtl_gen.dense import DenseTile, dense_counters, dense_pack, unpack_codes
from rtl_gen.params import RTLConfig
from rtl_gen.simulation.tiles import simulate_dense


def random_layer(cfg: RTLConfig, rng: random.Random):
    """A random layer that fits ``cfg`` and one input vector of codes."""
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
    init = folded_init(w, in_mask.mu) + torch.randint(-3, 4, (cfg.tile_neurons,), generator=g)
    zero = torch.zeros(cfg.tile_neurons, cfg.T - 1, dtype=torch.int64)
    v_lo, v_hi = IntegerLayer(w, cfg.weight_bits, init, zero, in_mask, out_mask).v_range()
    theta = torch.randint(v_lo - 2, v_hi + 3, (cfg.tile_neurons, cfg.T - 1), generator=g)
    theta = theta.sort(dim=1, descending=True).values
    layer = IntegerLayer(w, cfg.weight_bits, init, theta, in_mask, out_mask)
    q = torch.randint(space.q_min, space.q_max + 1, (cfg.n_in,), generator=g)
    return layer, q.tolist()


def check_windows(cfg: RTLConfig, windows, **kw):
    results = simulate_dense(cfg, windows, **kw)
    assert len(results) == len(windows)
    for n, ((layer, codes), got) in enumerate(zip(windows, results, strict=True)):
        ref = run_dense(layer, torch.tensor(codes, dtype=torch.int64))
        assert got.codes == ref.codes.tolist(), f"window {n}"
        assert got.counters == ref.counters.as_dict(), f"window {n}"


@pytest.mark.parametrize("weight_bits", [1, 4])
@pytest.mark.parametrize(("T", "family", "N", "lanes"), [
    (2, "sym", 3, 3), (4, "asym", 5, 2), (16, "sym", 5, 2), (16, "asym", 8, 8), (64, "sym", 4, 1),
])
def test_dense_matches_golden(T, family, N, lanes, weight_bits):
    rng = random.Random(T * 100 + N * 10 + weight_bits)
    cfg = RTLConfig(T=T, k=0, family=family, weight_bits=weight_bits, n_in=7,
                    tile_neurons=N, lanes=lanes)
    a, b = random_layer(cfg, rng), random_layer(cfg, rng)
    windows = [a, (a[0], a[1][::-1]), b]
    check_windows(cfg, windows, o_ready=0.5, i_valid=0.7, seed=T + N)


def test_dense_equals_mttfs_k0_membranes():
    # at k = 0 the spiking layer's membrane is the dense one: the baseline computes the same QNN
    rng = random.Random(5)
    cfg = RTLConfig(T=16, k=0, n_in=12, tile_neurons=4)
    layer, codes = random_layer(cfg, rng)
    k0 = with_masks(layer, Mask(layer.in_mask.space, layer.in_mask.i_max, 0), layer.out_mask)
    q = torch.tensor(codes)
    assert torch.equal(run_dense(layer, q).v, k0.run_codes(q).v)
    assert torch.equal(dense_init(k0), dense_init(layer))


def test_pack_and_unpack():
    cfg = RTLConfig(T=16, family="sym", tile_neurons=6)
    assert dense_pack(cfg) == 4
    word = (0b0111) | (0b1000 << 4) | (0b1111 << 8) | (0b0001 << 12)
    assert unpack_codes(cfg, 4, word, 6) == [(4, 7), (5, -8)]
    assert unpack_codes(cfg, 0, word, 6) == [(0, 7), (1, -8), (2, -1), (3, 1)]
    assert dense_pack(RTLConfig(T=64, tile_neurons=8)) == 2
    assert dense_pack(RTLConfig(T=2, tile_neurons=3)) == 3


def test_dense_ports():
    cfg = RTLConfig(T=16, n_in=16, tile_neurons=8)
    dut = DenseTile(cfg)
    Fragment.get(dut, None)  # elaborates (and marks the component used)
    assert [f"cnt_{n}" for n in dense_counters(cfg)] == [
        name for name in dut.signature.members if name.startswith("cnt_")]
    assert dut.o.payload.shape().size == 3 + 16 + 1
