"""Router figures in the Amaranth simulator: latency per hop and throughput of the XY mesh.

Run: ``./run bench router`` (or ``.venv/bin/python benchmarks/bench_router.py``).

- zero-load latency: one flit at a time, clocks from the injecting clock edge to the clock edge
  that ejects it, for every source/destination pair of a 4x4 mesh; a least-squares line over the
  hop count gives the latency per hop and the fixed overhead;
- single-stream throughput: one source sends back-to-back flits to a destination 6 hops away;
- uniform random throughput: every node offers a flit every clock to a random destination,
  every sink always ready (saturation), accepted flits per node per clock;
- hotspot: every node sends to one node; the ejection port is the bottleneck (1 flit/clock);
- in context: clocks per inference of the system (3-layer chain 8-8-4-4 on a 2x2 mesh, N = 4),
  with the flits and hops it moved, each inference checked against the golden reference.
"""

from __future__ import annotations

import random
import sys
import warnings
from pathlib import Path

from amaranth.sim import Simulator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rtl_gen.router import Mesh  # noqa: E402
from rtl_gen.simulation.mesh import simulate_zero_load  # noqa: E402

ADDR_W, TIME_W = 12, 4


def flit(dx, dy, addr, t=0):
    return {"dst_x": dx, "dst_y": dy, "addr": addr, "t": t, "hops": 0}


def zero_load(rows, cols):
    points = [(trip.hops, trip.clocks)
              for trip in simulate_zero_load(rows, cols, addr_width=ADDR_W, time_width=TIME_W,
                                             addr=1)]
    n = len(points)
    mx = sum(h for h, _ in points) / n
    my = sum(w for _, w in points) / n
    sxx = sum((h - mx) ** 2 for h, _ in points)
    slope = sum((h - mx) * (w - my) for h, w in points) / sxx
    return slope, my - slope * mx, points


def saturate(rows, cols, pick_dst, cycles, *, sources=None, seed=1):
    """Every source offers a flit every clock; returns accepted and delivered flits per clock."""
    rng = random.Random(seed)
    dut = Mesh(rows, cols, addr_width=ADDR_W, time_width=TIME_W)
    nodes = [(x, y) for y in range(rows) for x in range(cols)]
    sources = nodes if sources is None else sources
    result = {}

    async def bench(ctx):
        current = {}
        for x, y in nodes:
            ctx.set(dut.o[y][x].ready, 1)
        accepted = delivered = 0
        warm = cycles // 5
        for c in range(cycles):
            for n in sources:
                if n not in current:
                    current[n] = pick_dst(n, rng)
                    ctx.set(dut.i[n[1]][n[0]].payload, flit(*current[n], 1))
                ctx.set(dut.i[n[1]][n[0]].valid, 1)
            _, _, *vals = await ctx.tick().sample(
                *(dut.i[y][x].ready for x, y in sources),
                *(dut.o[y][x].valid for x, y in nodes))
            if c >= warm:
                accepted += sum(vals[: len(sources)])
                delivered += sum(vals[len(sources):])
            for n, r in zip(sources, vals[: len(sources)], strict=True):
                if r:
                    del current[n]
        result["accepted"] = accepted / (cycles - warm)
        result["delivered"] = delivered / (cycles - warm)

    sim = Simulator(dut)
    sim.add_clock(1e-6)
    sim.add_testbench(bench)
    sim.run()
    return result


def system_inference(T, k, batch=8):
    from golden_models.qnn import random_qnn
    from rtl_gen.mapper import config_for_chain, map_chain, system_reference
    from rtl_gen.simulation.mesh import simulate_system

    qnn = random_qnn((8, 8, 4, 4), T=T, k=k, seed=0, distribution="uniform")
    layers = qnn.integer_layers()
    smap = map_chain(config_for_chain(layers, tile_neurons=4, mesh_rows=2, mesh_cols=2), layers)
    inputs = qnn.random_input(batch, seed=1)
    results = simulate_system(smap, inputs)
    for q, r in zip(inputs, results, strict=True):
        ref = system_reference(smap, q)
        want = list(zip(ref.out_index.tolist(), ref.out_time.tolist(), strict=True))
        if r.events != want or (r.flits, r.hops) != (len(ref.flits), ref.total_hops):
            raise SystemExit("system output differs from the golden reference")
    n = len(results)
    return (sum(r.cycles for r in results) / n, sum(r.flits for r in results) / n,
            sum(r.hops for r in results) / n)


def main() -> int:
    warnings.simplefilter("ignore")
    rows, cols = 4, 4
    slope, offset, points = zero_load(rows, cols)
    exact = all(w == h + 1 for h, w in points)
    print(f"zero-load latency, {rows}x{cols} mesh, {len(points)} source/destination pairs:")
    print(f"  latency per hop     {slope:.3f} clocks")
    print(f"  fixed overhead      {offset:.3f} clocks (injection FIFO to ejection)")
    print(f"  every flit at hops+1 clocks: {exact}")

    one = saturate(rows, cols, lambda n, rng: (3, 3), 400, sources=[(0, 0)])
    print(f"single stream (0,0)->(3,3), 6 hops: {one['delivered']:.3f} flits/clock")

    uni = saturate(rows, cols, lambda n, rng: (rng.randrange(cols), rng.randrange(rows)), 600)
    print(f"uniform random, {rows}x{cols}, saturated: {uni['accepted'] / (rows * cols):.3f} "
          f"flits/clock/node accepted, {uni['delivered']:.2f} flits/clock delivered in total")

    hot = saturate(rows, cols, lambda n, rng: (1, 1), 600)
    print(f"hotspot (all to (1,1)), saturated: {hot['delivered']:.3f} flits/clock ejected")

    print("system, chain 8-8-4-4 on 2x2, N=4, 8 inferences each (checked against golden):")
    for T, k in ((4, 0), (8, 1), (16, 1)):
        cycles, flits, hops = system_inference(T, k)
        print(f"  T={T:2d} k={k}: {cycles:6.1f} clocks/inference, {flits:5.1f} flits, "
              f"{hops:5.1f} hops")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
