"""Throughput of the neuron tile and the encoder, measured in the Amaranth simulator.

Prints, per configuration:

- integrate: input events per clock while ``i.valid`` is held high (target 1.0);
- fire: clocks from the input marker to the output marker, against ``T * G`` (``G`` groups of
  comparator lanes): with every output event in the dead zone (``k = T-1``, no emission
  stalls) and with random thresholds (several firings of one ``(t, g)`` leave on consecutive
  clocks);
- encoder: clocks from the last code to the marker, against ``T + events``.

Every window is also checked against ``golden_models`` (a wrong result is not a figure).

Run: ``./run bench rtl`` (or ``python benchmarks/bench_rtl.py``).
"""

from __future__ import annotations

import random
import time

import torch

from golden_models import CodeSpace, IntegerLayer, Mask, encode_events, folded_init
from rtl_gen.encoder import simulate_encoder
from rtl_gen.params import RTLConfig
from rtl_gen.tile import simulate_tile


def layer_for(cfg: RTLConfig, seed: int, out_k: int) -> tuple[IntegerLayer, list, list]:
    rng = random.Random(seed)
    g = torch.Generator().manual_seed(seed)
    space = CodeSpace(cfg.T, cfg.family)
    w = torch.randint(0, 2, (cfg.n_in, cfg.tile_neurons), generator=g) * 2 - 1
    in_mask = Mask(space, space.c, 0)
    out_mask = Mask(space, rng.randrange(cfg.T), out_k)
    init = folded_init(w, in_mask.mu)
    lo, hi = -cfg.n_in * space.max_abs, cfg.n_in * space.max_abs
    theta = torch.randint(lo // 4, hi // 4 + 1, (cfg.tile_neurons, cfg.T - 1), generator=g)
    theta = theta.sort(dim=1, descending=True).values
    layer = IntegerLayer(w, 1, init, theta, in_mask, out_mask)
    # every input address transmits (no code equals the silent one)
    q = torch.randint(1, space.q_max + 1, (cfg.n_in,), generator=g)
    index, times = encode_events(q, in_mask)
    return layer, index.tolist(), times.tolist()


def check(layer, index, times, result) -> None:
    gold = layer.run_events(torch.tensor(index), torch.tensor(times))
    events = list(zip(gold.out_index.tolist(), gold.out_time.tolist(), strict=True))
    if result.events != events or result.counters != gold.counters.as_dict():
        raise SystemExit("RTL and golden model disagree; no figures")


def bench_tile() -> None:
    print("tile (1-bit weights, sym), o.ready and i.valid always high")
    print(f"{'T':>3} {'N':>3} {'L':>3} {'G':>3} {'n_in':>4} | {'events':>6} {'ev/clk':>6} | "
          f"{'T*G':>5} {'fire(k=T-1)':>11} {'fire(rand)':>10} {'out ev':>6} | {'sim s':>5}")
    for T, N, L, n_in in [(16, 16, 16, 64), (16, 16, 4, 64), (16, 16, 1, 64),
                          (64, 16, 16, 64), (64, 16, 8, 64), (4, 32, 32, 128)]:
        t0 = time.perf_counter()
        row = []
        for out_k in (T - 1, 1):
            cfg = RTLConfig(T=T, k=out_k, n_in=n_in, tile_neurons=N, lanes=L)
            layer, index, times = layer_for(cfg, seed=T * N + L, out_k=out_k)
            (res,) = simulate_tile(cfg, [(layer, index, times)])
            check(layer, index, times, res)
            c = res.cycles
            row.append((len(index), len(index) / (c["last_in"] - c["first_in"]),
                        c["last_out"] - c["last_in"], len(res.events)))
        G = -(-N // L)
        (ev, rate, fire_silent, _), (_, _, fire_rand, n_out) = row
        print(f"{T:>3} {N:>3} {L:>3} {G:>3} {n_in:>4} | {ev:>6} {rate:>6.3f} | "
              f"{T * G:>5} {fire_silent:>11} {fire_rand:>10} {n_out:>6} | "
              f"{time.perf_counter() - t0:>5.1f}")
    print("fire(k=T-1) - T*G = pipeline fill (2 clocks) + output marker (1 clock); fire(rand) "
          "adds one clock per extra firing in the same (t, g)")


def bench_encoder() -> None:
    print()
    print("encoder, o.ready always high")
    print(f"{'T':>3} {'n_in':>4} | {'events':>6} {'clocks':>6} {'T+ev-steps+1':>12}")
    for T, n in [(16, 64), (64, 64), (4, 256)]:
        cfg = RTLConfig(T=T, k=0, n_in=n, family="sym")
        space = cfg.space
        rng = random.Random(T + n)
        q = [rng.randint(space.q_min, space.q_max) for _ in range(n)]
        ((events, _, clocks),) = simulate_encoder(cfg, [q])
        steps = len({t for _, t in events})
        print(f"{T:>3} {n:>4} | {len(events):>6} {clocks:>6} {T + len(events) - steps + 1:>12}")
    print("a step costs max(1, events in it) clocks, plus 1 for the marker")


if __name__ == "__main__":
    bench_tile()
    bench_encoder()
