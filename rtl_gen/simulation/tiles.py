"""The tiles and the encoder in the Amaranth simulator: windows through a neuron tile
(:func:`simulate_tile`), a dense tile (:func:`simulate_dense`), codes through the encoder
(:func:`simulate_encoder`)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from golden_models import IntegerLayer
from rtl_gen.dense import DenseTile, dense_counters, dense_load_beats, unpack_codes
from rtl_gen.encoder import Encoder
from rtl_gen.params import RTLConfig
from rtl_gen.simulation import (
    check_probability,
    drain,
    marked_output,
    read_counters,
    run_simulator,
    stream_put,
    wait_idle,
)
from rtl_gen.simulation.driver import TileDriver, Window
from rtl_gen.tile import NeuronTile, load_beats

__all__ = ["DenseWindow", "WindowResult", "simulate_dense", "simulate_encoder", "simulate_tile"]


@dataclass(frozen=True)
class WindowResult:
    """What one simulated window produced.

    ``events`` are the ``(addr, t)`` output events in emission order; ``counters`` the
    ``cnt_*`` ports after the window; ``cycles`` the clock edge (counted from 1) of: the window's
    first input beat ``first_in``, its marker ``last_in``, the output marker ``last_out``.
    """

    events: list[tuple[int, int]]
    counters: dict[str, int]
    cycles: dict[str, int]


def simulate_tile(
    config: RTLConfig,
    windows: list[tuple[IntegerLayer, list[int], list[int]]],
    *,
    o_ready: float = 1.0,
    i_valid: float = 1.0,
    seed: int = 0,
    vcd: str | None = None,
) -> list[WindowResult]:
    """Run windows of input events through :class:`NeuronTile` in the Amaranth simulator.

    Parameters
    ----------
    config : RTLConfig
    windows : list of (layer, index, time)
        Each window's layer is loaded through the ``load`` port when it differs from the
        previous window's; then the events ``(index[e], time[e])`` and a marker are sent.
    o_ready, i_valid : float
        Probability that ``o.ready`` / ``i.valid`` is high on a clock (random backpressure and
        input bubbles), from a ``random.Random(seed)``.
    vcd : str, optional
        Write a waveform file.
    """
    check_probability("o_ready", o_ready)
    check_probability("i_valid", i_valid)
    runs, loaded = [], None
    for layer, index, time in windows:
        beats = [{"addr": int(a), "tau": int(t), "last": 0}
                 for a, t in zip(index, time, strict=True)]
        runs.append(Window(load_beats(config, layer) if layer is not loaded else None,
                           [*beats, {"addr": 0, "tau": 0, "last": 1}]))
        loaded = layer
    driver = TileDriver(NeuronTile(config), runs, config.tile_counters, o_ready=o_ready,
                        i_valid=i_valid, seed=seed)
    return [WindowResult(events=[(b["addr"], b["t"]) for b in r.output[:-1]],
                         counters=r.counters, cycles=r.cycles)
            for r in driver.run(vcd=vcd)]


@dataclass(frozen=True)
class DenseWindow:
    """One simulated dense window: the output codes by neuron and the counters."""

    codes: list[int]
    counters: dict[str, int]


def simulate_dense(
    config: RTLConfig,
    windows: list[tuple[IntegerLayer, list[int]]],
    *,
    o_ready: float = 1.0,
    i_valid: float = 1.0,
    seed: int = 0,
    vcd: str | None = None,
) -> list[DenseWindow]:
    """Run windows of input codes through :class:`DenseTile` in the Amaranth simulator.

    Parameters
    ----------
    config : RTLConfig
    windows : list of (layer, codes)
        Each window's layer is loaded when it differs from the previous window's; then its
        ``n_in`` codes and a marker are sent.
    o_ready, i_valid : float
        Probability of ``o.ready`` / ``i.valid`` on a clock (random backpressure and bubbles).
    """
    check_probability("o_ready", o_ready)
    check_probability("i_valid", i_valid)
    mask = (1 << config.time_width) - 1
    runs, loaded = [], None
    for layer, codes in windows:
        beats = [{"code": int(q) & mask, "last": 0} for q in codes]
        runs.append(Window(dense_load_beats(config, layer) if layer is not loaded else None,
                           [*beats, {"code": 0, "last": 1}]))
        loaded = layer
    driver = TileDriver(DenseTile(config), runs, dense_counters(config), o_ready=o_ready,
                        i_valid=i_valid, seed=seed)
    results = []
    for (layer, _), r in zip(windows, driver.run(vcd=vcd), strict=True):
        out = []
        for b in r.output[:-1]:
            out.extend(unpack_codes(config, b["addr"], b["codes"], layer.n_out))
        results.append(DenseWindow(codes=[q for _, q in sorted(out)], counters=r.counters))
    return results


def simulate_encoder(
    config: RTLConfig,
    vectors: list[list[int]],
    *,
    o_ready: float = 1.0,
    seed: int = 0,
) -> list[tuple[list[tuple[int, int]], dict[str, int], int]]:
    """Encode ``vectors`` of codes in the Amaranth simulator.

    Returns, per vector, the ``(addr, tau)`` events in emission order, the counters, and the
    clocks from the last code's handshake to the marker's. An encoder still busy far beyond
    :func:`emit_clocks` (20 times the longest window at the given ``o_ready``) raises
    ``RuntimeError``.
    """
    check_probability("o_ready", o_ready)
    for v in vectors:
        if len(v) != config.n_in:
            raise ValueError(f"each vector must hold n_in={config.n_in} codes, not {len(v)}")
    dut = Encoder(config)
    rng = random.Random(seed)
    seen: list[tuple[int, int, int, int]] = []
    results = []
    limit = int(20 * (config.n_in + config.T + 2) / o_ready)

    async def drive(ctx):
        cycle = 0
        for v in vectors:
            start = len(seen)
            for q in v:
                cycle += await stream_put(ctx, dut.i, {"q": int(q)})
            last_in = cycle
            cycle += await wait_idle(ctx, dut.busy, limit)
            window = marked_output(seen[start:], f"vector {len(results)}")
            counters = read_counters(ctx, dut, config.encoder_counters)
            results.append(([(a, t) for a, t, _, _ in window[:-1]], counters,
                            window[-1][3] - last_in))

    run_simulator(dut, drive, background=[drain(dut.o, "tau", seen, o_ready=o_ready, rng=rng)])
    return results
