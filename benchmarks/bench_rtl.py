"""Throughput of the neuron tile and the encoder, measured in the Amaranth simulator.

Prints, per configuration:

- integrate: input events per clock while ``i.valid`` is held high (target 1.0);
- fire: clocks from the input marker to the output marker, against ``T * G`` (``G`` groups of
  comparator lanes): with every output event in the dead zone (``k = T-1``, no emission
  stalls) and with random thresholds (several firings of one ``(t, g)`` leave on consecutive
  clocks);
- encoder: clocks from the last code to the marker, against ``T + events - steps + 1``, and the
  clocks of a whole window (``n_in`` codes in, events out) up to ``n_in = 4096``;
- sizes (``--sizes``): elaboration time and Verilog size of the encoder and of a whole
  ``generate`` at ``n_in`` 1024/2048/4096, against the earlier per-address encoder
  (``benchmarks/encoder_parallel.py``), which runs in a child process with a time limit (it needs
  minutes and gigabytes from ``n_in = 2048`` on).

Every window is also checked against ``golden_models`` (a wrong result is not a figure).

Run: ``./run bench rtl`` (or ``python benchmarks/bench_rtl.py [--sizes]``).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from golden_models import CodeSpace, IntegerLayer, Mask, encode_events, folded_init
from rtl_gen.encoder import Encoder, emit_clocks
from rtl_gen.params import RTLConfig
from rtl_gen.simulation.tiles import simulate_encoder, simulate_tile


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
    print("encoder, o.ready always high (window = n_in clocks to collect + clocks to the marker)")
    print(f"{'T':>3} {'n_in':>4} | {'events':>6} {'clocks':>6} {'T+ev-steps+1':>12} "
          f"{'window':>6} | {'sim s':>5}")
    for T, n in [(16, 64), (64, 64), (4, 256), (16, 1024), (16, 4096)]:
        t0 = time.perf_counter()
        cfg = RTLConfig(T=T, k=0, n_in=n, family="sym")
        space = cfg.space
        rng = random.Random(T + n)
        q = [rng.randint(space.q_min, space.q_max) for _ in range(n)]
        ((events, counters, clocks),) = simulate_encoder(cfg, [q])
        index, times = encode_events(torch.tensor(q), Mask(space, cfg.i_max_in, cfg.k))
        if events != list(zip(index.tolist(), times.tolist(), strict=True)) \
                or counters["events_out"] != len(events):
            raise SystemExit("RTL and golden model disagree; no figures")
        formula = emit_clocks(T, [t for _, t in events])
        print(f"{T:>3} {n:>4} | {len(events):>6} {clocks:>6} {formula:>12} {n + clocks:>6} | "
              f"{time.perf_counter() - t0:>5.1f}")
    print("a step costs max(1, events in it) clocks, plus 1 for the marker (the same for the "
          "earlier per-address encoder)")


def _verilog_of(component, name: str) -> tuple[float, int]:
    from amaranth.back import verilog

    t0 = time.perf_counter()
    text = verilog.convert(component, name=name, emit_src=False)
    return time.perf_counter() - t0, len(text.encode())


def _old_encoder(n_in: int, T: int, limit: float) -> str:
    """Elaborate the per-address encoder in a child process: ``"s  kB"`` or why it failed."""
    cmd = [sys.executable, __file__, "--old-one", str(n_in), "--T", str(T)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=limit, check=False)
    except subprocess.TimeoutExpired:
        return f"not done in {limit:.0f} s"
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
        return f"failed: {tail[:40]}"
    sec, size = json.loads(proc.stdout)
    return f"{sec:>7.1f} {size / 1e3:>9.0f}"


def bench_sizes(sizes: list[int], T: int, old_max: int, limit: float) -> None:
    from rtl_gen.generate import generate

    print()
    print(f"Verilog size and elaboration time, T={T} (kB = 1000 bytes)")
    print(f"{'n_in':>4} | {'encoder s':>9} {'kB':>5} | {'generate s':>10} {'all .v kB':>9} "
          f"{'(sram_macro)':>12} | old encoder s, kB")
    for n in sizes:
        cfg = RTLConfig(T=T, n_in=n)
        enc_s, enc_b = _verilog_of(Encoder(cfg), "mttfs_encoder")
        totals = []
        for macro in (False, True):
            with tempfile.TemporaryDirectory() as tmp:
                t0 = time.perf_counter()
                generate(RTLConfig(T=T, n_in=n, sram_macro=macro), tmp)
                sec = time.perf_counter() - t0
                totals.append((sec, sum(f.stat().st_size for f in Path(tmp).glob("*.v"))))
        old = _old_encoder(n, T, limit) if n <= old_max else "not run (--old-max)"
        (gen_s, gen_b), (_, macro_b) = totals
        print(f"{n:>4} | {enc_s:>9.1f} {enc_b / 1e3:>5.0f} | {gen_s:>10.1f} {gen_b / 1e3:>9.0f} "
              f"{macro_b / 1e3:>12.0f} | {old}")
    print("all .v: every generated file (zero-initialised SRAM rows included: Amaranth writes one "
          "initial row per word); sram_macro: SRAMs as macro wrappers")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", action="store_true",
                    help="only the Verilog sizes and elaboration times, old vs new encoder")
    ap.add_argument("--n-in", type=int, nargs="+", default=[1024, 2048, 4096])
    ap.add_argument("--T", type=int, default=16)
    ap.add_argument("--old-max", type=int, default=1024,
                    help="largest n_in at which the old encoder is elaborated [1024]")
    ap.add_argument("--old-limit", type=float, default=900.0,
                    help="seconds allowed to each old-encoder elaboration [900]")
    ap.add_argument("--old-one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.old_one:
        sys.path.insert(0, str(Path(__file__).parent))
        from encoder_parallel import ParallelEncoder

        cfg = RTLConfig(T=args.T, n_in=args.old_one)
        print(json.dumps(_verilog_of(ParallelEncoder(cfg), "mttfs_encoder")))
        return
    if args.sizes:
        bench_sizes(args.n_in, args.T, args.old_max, args.old_limit)
        return
    bench_tile()
    bench_encoder()
    bench_sizes(args.n_in, args.T, args.old_max, args.old_limit)


if __name__ == "__main__":
    main()
