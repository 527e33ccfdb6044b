# amaranth: UnusedElaboratable=no
"""The tiles' raw-sum mode (RTLConfig.raw_sums: both tiles send their integer sums, not codes)
in the Amaranth simulator, bit-exact against golden_models (IntegerLayer.run_sums,
golden_models.dense.run_dense_sums): every sum, the marker and the counters, with random
backpressure; the modes that fire are untouched; a planted off-by-one is caught."""

from __future__ import annotations

import dataclasses
import random

import pytest
import torch

from formal.harness import module_over, mutant_module
from golden_models import Mask, encode_events
from golden_models.dense import dense_init, run_dense_sums
from rtl_gen import registry
from rtl_gen.dense import dense_counters
from rtl_gen.layouts import sum_out_layout
from rtl_gen.params import RTLConfig
from rtl_gen.simulation.driver import TileDriver, Window
from rtl_gen.tile import load_beats
from tests.test_rtl_dense import random_layer

CONFIGS = [
    RTLConfig(T=16, k=1, family="sym", weight_bits=1, n_in=7, tile_neurons=5, lanes=2,
              raw_sums=True),
    RTLConfig(T=4, k=0, family="asym", weight_bits=4, n_in=9, tile_neurons=3, raw_sums=True),
]


def _windows(cfg, design, seed):
    rng = random.Random(seed)
    out = []
    for _ in range(2):
        layer, q = random_layer(cfg, rng)
        for codes in (q, q[::-1]):
            codes = torch.tensor(codes, dtype=torch.int64)
            if design == "dense":
                v, counters = run_dense_sums(layer, codes)
                beats = [{"code": int(c) & ((1 << cfg.time_width) - 1), "last": 0}
                         for c in codes.tolist()] + [{"code": 0, "last": 1}]
                image = registry.block("dense_tile").node.image(cfg, layer)
            else:
                index, time = encode_events(codes, layer.in_mask)
                v, counters = layer.run_sums(index, time)
                beats = [{"addr": a, "tau": t, "last": 0}
                         for a, t in zip(index.tolist(), time.tolist(), strict=True)]
                beats.append({"addr": 0, "tau": 0, "last": 1})
                image = load_beats(cfg, layer)
            out.append((image, beats, v.tolist(), counters.as_dict()))
    return out


def _run(cfg, design, windows, module=None):
    block = registry.block("dense_tile" if design == "dense" else "tile")
    if module is None:
        dut = block.build(cfg)
    else:
        dut = (module.DenseTile if design == "dense" else module.NeuronTile)(cfg)
    names = dense_counters(cfg) if design == "dense" else cfg.tile_counters
    runs = [Window(image if n % 2 == 0 else None, beats)
            for n, (image, beats, _, _) in enumerate(windows)]
    driver = TileDriver(dut, runs, names, o_ready=0.6, i_valid=0.7, seed=3)
    return driver.run()


@pytest.mark.parametrize("design", ["spiking", "dense"])
@pytest.mark.parametrize("cfg", CONFIGS, ids=["T16sym", "T4asym-w4"])
def test_raw_sums_match_golden(cfg, design):
    windows = _windows(cfg, design, cfg.T)
    for (_, _, v, counters), run in zip(windows, _run(cfg, design, windows), strict=True):
        assert [(b["addr"], b["sum"]) for b in run.output[:-1]] == list(enumerate(v))
        # the marker is {last: 1} and nothing else
        assert run.output[-1] == {"addr": 0, "sum": 0, "last": 1}
        assert run.counters == counters


def test_raw_sums_are_the_integer_sums_of_proposition_2():
    """At ``k = 0`` (no dead zone) the spiking tile's sums equal the dense tile's: ``B + sum W
    d = D + sum W q`` (the folded offset cancels), the sums the golden QNN feeds softmax and
    the residual adds."""
    cfg = RTLConfig(T=16, k=0, n_in=7, tile_neurons=5, raw_sums=True)
    layer, q = random_layer(cfg, random.Random(5))
    layer = dataclasses.replace(layer, in_mask=Mask(layer.in_mask.space, layer.in_mask.i_max, 0))
    q = torch.tensor(q)
    v_spiking, _ = layer.run_sums(*encode_events(q, layer.in_mask))
    v_dense, _ = run_dense_sums(layer, q)
    assert torch.equal(v_spiking, v_dense)
    assert torch.equal(v_dense, dense_init(layer) + (layer.weights * q[:, None]).sum(0))


def test_sum_layout_and_the_firing_modes():
    cfg = CONFIGS[0]
    assert sum_out_layout(cfg).size == cfg.out_addr_width + cfg.acc_width + 1
    fire = registry.block("tile").build(RTLConfig(T=16, n_in=7, tile_neurons=5))
    assert "sum" not in {n for n, _ in fire.o.payload.shape()}
    # the system's nodes always fire: the mesh carries events
    registry.block("system").build(RTLConfig(T=4, n_in=4, tile_neurons=2, raw_sums=True))


def test_raw_sums_mutant_is_caught():
    # the sums stage starts one neuron late
    bad = mutant_module("rtl_gen.tile_parts", "m.d.sync += [active.eq(1), idx.eq(0)]",
                        "m.d.sync += [active.eq(1), idx.eq(1)]")
    cfg = CONFIGS[0]
    windows = _windows(cfg, "spiking", 1)
    tile = module_over("rtl_gen.tile", bad)
    runs = _run(cfg, "spiking", windows, module=tile)
    assert [[(b["addr"], b["sum"]) for b in r.output[:-1]] for r in runs] != [
        list(enumerate(v)) for _, _, v, _ in windows]
