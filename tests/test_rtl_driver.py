"""The one tile driver (rtl_gen/simulation/driver.py): its trace hook sees every beat, on both
tiles."""

from __future__ import annotations

import gc
import warnings

import pytest
import torch

from golden_models import random_qnn
from golden_models.dense import run_dense
from rtl_gen.dense import DenseTile, dense_counters, dense_load_beats, unpack_codes
from rtl_gen.params import RTLConfig
from rtl_gen.simulation import elaborated
from rtl_gen.simulation.driver import TileDriver, Window
from rtl_gen.tile import NeuronTile, load_beats
from synth_scripts import gatelevel


def layers_and_codes(cfg: RTLConfig, seed: int):
    chain = random_qnn((cfg.n_in, cfg.tile_neurons), T=cfg.T, weight_bits=cfg.weight_bits,
                       rounding="round", seed=seed)
    return chain.integer_layers()[0], chain.random_input(2, seed=seed + 1)


def windows_of(kind: str, cfg: RTLConfig):
    """Two windows of one layer (loaded once), a window of another layer (reloaded), and an
    empty window; the golden output of each."""
    a, qa = layers_and_codes(cfg, 1)
    b, qb = layers_and_codes(cfg, 2)
    mask = (1 << cfg.time_width) - 1
    plan = [(a, qa[0], True), (a, qa[1], False), (b, qb[0], True), (b, None, False)]
    windows, golden = [], []
    for layer, q, load in plan:
        if kind == "dense":
            codes = [] if q is None else q.tolist()
            beats = [*({"code": c & mask, "last": 0} for c in codes), {"code": 0, "last": 1}]
            loads = dense_load_beats(cfg, layer) if load else None
            golden.append(None if q is None else run_dense(layer, q).codes.tolist())
        else:
            if q is None:
                index, t = torch.zeros(0, dtype=torch.int64), torch.zeros(0, dtype=torch.int64)
            else:
                from golden_models import encode_events

                index, t = encode_events(q, layer.in_mask)
            beats = [*({"addr": i, "tau": s, "last": 0}
                       for i, s in zip(index.tolist(), t.tolist(), strict=True)),
                     {"addr": 0, "tau": 0, "last": 1}]
            loads = load_beats(cfg, layer) if load else None
            res = layer.run_events(index, t)
            golden.append(list(zip(res.out_index.tolist(), res.out_time.tolist(), strict=True)))
        windows.append((layer, Window(loads, beats)))
    return windows, golden


def packed(layout, payload: dict) -> int:
    return layout.const(payload).as_bits()


@pytest.mark.parametrize("kind", ["mttfs", "dense"])
def test_trace_hook_sees_every_beat(kind):
    cfg = RTLConfig(T=16, k=1, family="sym", weight_bits=1, n_in=6, tile_neurons=5, lanes=2)
    windows, golden = windows_of(kind, cfg)
    dut = DenseTile(cfg) if kind == "dense" else NeuronTile(cfg)
    names = dense_counters(cfg) if kind == "dense" else cfg.tile_counters
    beats = []
    driver = TileDriver(dut, [w for _, w in windows], names, o_ready=0.5, i_valid=0.7, seed=3,
                        on_beat=beats.append)
    # an observer of its own: every clock edge's port values, recorded beside the driver
    trace = gatelevel.record(dut, driver.testbench)
    for port in ("load", "i", "o"):
        layout = getattr(dut, port).payload.shape()
        hooked = [(b.cycle, packed(layout, b.payload)) for b in beats if b.port == port]
        v, r, p = (trace.values[f"{port}__{x}"] for x in ("valid", "ready", "payload"))
        on_wire = [(c + 1, p[c]) for c in range(trace.cycles) if v[c] and r[c]]
        assert on_wire and hooked == on_wire, port
    # the beats, window by window, are what was offered and what the tile sent
    offered_load = [{"target": t, "addr": a, "data": d}
                    for _, w in windows for t, a, d in (w.load or ())]
    assert [b.payload for b in beats if b.port == "load"] == offered_load
    assert [(b.window, b.payload) for b in beats if b.port == "i"] == [
        (n, beat) for n, (_, w) in enumerate(windows) for beat in w.beats]
    assert [(b.window, b.payload) for b in beats if b.port == "o"] == [
        (n, beat) for n, r in enumerate(driver.results) for beat in r.output]
    assert [b.cycle for b in beats] == sorted(b.cycle for b in beats)
    for n, ((layer, _), run, want) in enumerate(zip(windows, driver.results, golden,
                                                    strict=True)):
        ins = [b.cycle for b in beats if b.port == "i" and b.window == n]
        outs = [b.cycle for b in beats if b.port == "o" and b.window == n]
        assert run.cycles == {"first_in": ins[0], "last_in": ins[-1], "last_out": outs[-1]}
        if want is None:
            continue
        if kind == "dense":
            pairs = [p for b in run.output[:-1]
                     for p in unpack_codes(cfg, b["addr"], b["codes"], layer.n_out)]
            assert [q for _, q in sorted(pairs)] == want, n
        else:
            assert [(b["addr"], b["t"]) for b in run.output[:-1]] == want, n


def test_a_window_without_its_marker_is_an_error():
    cfg = RTLConfig(T=16, k=1, n_in=6, tile_neurons=5, lanes=2)
    with pytest.raises(ValueError, match="window 0 has no input beat"):
        TileDriver(NeuronTile(cfg), [Window(None, [])], cfg.tile_counters).run()


def unused_warnings(make) -> list[str]:
    # what earlier tests in this process left unused is collected first, outside the capture:
    # its warnings are not ``make``'s
    gc.collect()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        make()
        gc.collect()
    return [str(w.message) for w in caught if "never used" in str(w.message)]


def test_elaborated_leaves_no_unused_elaboratable():
    cfg = RTLConfig(T=16, k=1, n_in=6, tile_neurons=5, lanes=2)

    def probe():
        top, module = elaborated(NeuronTile(cfg))
        assert module.submodules["weights"].bus.rdata is not None

    assert unused_warnings(probe) == []
    # the direct call it replaces leaves the component unused, and Amaranth says so
    assert unused_warnings(lambda: NeuronTile(cfg).elaborate(None)) != []


def test_a_payload_packed_once_is_the_constant_amaranth_builds():
    """``rtl_gen.simulation.packer``: the bits of ``layout.const(payload)`` (signed fields in
    two's complement, wide values cut to their field), for the tiles' own streams and a
    layout of every kind of field; a nested layout is left to Amaranth."""
    import random

    from amaranth.hdl import signed, unsigned
    from amaranth.lib import data, stream

    from rtl_gen.simulation import packer

    cfg = RTLConfig(n_in=24, tile_neurons=8, T=8, k=1)
    ports = [DenseTile(cfg).load, DenseTile(cfg).i, NeuronTile(cfg).load, NeuronTile(cfg).i,
             stream.Signature(data.StructLayout({"a": unsigned(3), "b": signed(5),
                                                  "c": unsigned(70)})).create()]
    rng = random.Random(0)
    for port in ports:
        layout, pack = port.payload.shape(), packer(port)
        for _ in range(50):
            payload = {name: rng.randrange(-(1 << 72), 1 << 72) for name, _ in layout}
            assert pack(payload) == (port.payload.as_value(), layout.const(payload).as_bits())
    nested = stream.Signature(data.StructLayout({"x": data.StructLayout({"y": 2})})).create()
    assert packer(nested)({"x": {"y": 1}}) == (nested.payload, {"x": {"y": 1}})
