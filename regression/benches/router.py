"""The router bench (:mod:`cocotb_tests.tb_router`): one router at each position of a mesh,
flits on every port with destinations XY routing can deliver there, compared per output."""

from __future__ import annotations

import random
from collections.abc import Mapping

from regression.cache import module_entry
from rtl_gen.registry import block
from rtl_gen.router import xy_route

__all__ = ["PORTS", "config", "legal_destinations", "plan"]

#: The router's ports, in the order the bench drives them.
PORTS = ("north", "east", "south", "west", "local")


def legal_destinations(port: str, x: int, y: int, rows: int, cols: int) -> list[tuple[int, int]]:
    """Destinations a flit can have when it arrives on ``port`` of node ``(x, y)`` under XY
    routing (it came from that neighbour, moving away from it; it never turns Y -> X)."""
    every = [(dx, dy) for dy in range(rows) for dx in range(cols)]
    if port == "local":
        return every
    if port == "west":  # from x-1, moving east
        return [(dx, dy) for dx, dy in every if x >= 1 and dx >= x]
    if port == "east":
        return [(dx, dy) for dx, dy in every if x <= cols - 2 and dx <= x]
    if port == "north":  # from y-1, moving south
        return [(dx, dy) for dx, dy in every if y >= 1 and dx == x and dy >= y]
    return [(dx, dy) for dx, dy in every if y <= rows - 2 and dx == x and dy <= y]


def config(job, manifest: Mapping) -> dict:
    """Phases of ``job.stim`` (:class:`regression.stimulus.RouterStimulus`)."""
    stim = job.stim
    p = manifest["parameters"]
    rows, cols, T = int(p["mesh_rows"]), int(p["mesh_cols"]), int(p["T"])
    entry = module_entry(manifest, block("router").module)
    fields = {f["name"]: f for f in entry["streams"]["o_local"]["fields"]}
    addr_n, hop_max = 1 << int(fields["addr"]["width"]), rows + cols - 2
    rng = random.Random(f"router:{job.seed}")
    per_port = int(stim.flits)
    positions = [(x, y) for y in range(rows) for x in range(cols)]
    pairs = sorted(
        {
            (i, xy_route(x, y, *d))
            for x, y in positions
            for i in PORTS
            for d in legal_destinations(i, x, y, rows, cols)
        }
    )
    phases = []
    plan = [(x, y, False) for x, y in positions] * int(stim.rounds)
    if stim.reset:
        plan.insert(rng.randrange(1, len(plan)), (*rng.choice(positions), True))
    for x, y, reset in plan:
        combos = [(a, t) for a in range(addr_n) for t in range(T)]
        rng.shuffle(combos)
        chunk = len(combos) // len(PORTS)
        flits, expected = {}, []
        for pi, port in enumerate(PORTS):
            dsts = legal_destinations(port, x, y, rows, cols)
            if not dsts:
                continue
            own = combos[pi * chunk : (pi + 1) * chunk]
            flits[port] = []
            for _ in range(per_port if port != "local" else 2 * per_port):
                dx, dy = rng.choice(dsts)
                a, t = rng.choice(own)
                f = {
                    "dst_x": dx,
                    "dst_y": dy,
                    "addr": a,
                    "t": t,
                    "hops": rng.randrange(max(1, hop_max)),
                }
                flits[port].append(f)
                out = xy_route(x, y, dx, dy)
                expected.append([port, out, dict(f, hops=f["hops"] + (out != "local"))])
        phases.append({"x": x, "y": y, "flits": flits, "expected": expected, "reset": reset})
    if stim.corrupt:
        # self-check: one expected flit of the first phase altered or dropped
        exp = phases[0]["expected"]
        i = rng.randrange(len(exp))
        if stim.corrupt == "drop":
            del exp[i]
        else:
            exp[i][2] = dict(exp[i][2], hops=exp[i][2]["hops"] ^ 1)
    return {
        "seed": job.seed,
        "T": T,
        "module": entry,
        "phases": phases,
        "pairs": pairs,
        "p_idle": float(stim.p_idle),
        "p_stall": float(stim.p_stall),
        "timeout": 4000,
    }


def plan(point) -> tuple | None:
    """The first parameter set of each ``T`` only: the router does not depend on the other."""
    return None if point.variant else (point.params, point.seed, {})
