"""The SRAM bench (:mod:`cocotb_tests.tb_sram`): golden weight rows written and read back."""

from __future__ import annotations

import random
from collections.abc import Mapping

from regression.cache import module_entry
from rtl_gen.registry import block

__all__ = ["config", "plan"]


def config(job, manifest: Mapping) -> dict:  # noqa: C901 -- one list of operations
    """Operations of ``job.stim`` (:class:`regression.stimulus.SramStimulus`)."""
    from regression.reference import (
        TileGeometry,
        load_beats,
        random_codes,
        random_layer,
        tile_window,
    )

    stim = job.stim
    geo = TileGeometry.from_manifest(manifest)
    entry = module_entry(manifest, block("sram").module)
    depth, width = int(entry["sram"]["depth"]), int(entry["sram"]["width"])
    rng = random.Random(f"sram:{job.seed}")
    T = geo.T
    layer = random_layer(
        rng,
        geo,
        i_max_in=rng.randrange(T),
        i_max_out=rng.randrange(T),
        k=rng.randrange(3),
        dist="uniform",
    )
    rows = {b["addr"]: b["data"] for b in load_beats(geo, layer) if b["target"] == 0}
    ops: list[list] = []

    def idle():
        while rng.random() < stim.p_idle:
            ops.append(["idle"])

    order = list(range(depth))
    rng.shuffle(order)
    for a in order:
        ops.append(["write", a, rows[a]])
        idle()
    windows = int(stim.windows)
    reset_at = rng.randrange(windows // 2, windows) if stim.reset else -1
    for w in range(windows):
        if w == reset_at:
            ops.append(["reset"])
        q = random_codes(rng, geo.space, geo.n_in, ("peaked", "uniform")[w % 2], layer.in_mask.mu)
        for a, _ in tile_window(layer, q)["in"]:
            ops.append(["read", a, rows[a]])
            idle()
    # random traffic: writes of random words, reads, a read right after a write
    for _ in range(int(stim.random_ops)):
        a = rng.randrange(depth)
        r = rng.random()
        if r < 0.35:
            ops.append(["write", a, rng.randrange(1 << width)])
            if rng.random() < 0.5:
                ops.append(["read", a, None])
        elif r < 0.8:
            ops.append(["read", a, None])
        else:
            ops.append(["idle"])
    if stim.corrupt:
        # self-check: one golden row altered in the expectation
        for op in ops:
            if op[0] == "read" and op[2] is not None:
                op[2] ^= 1
                break
    return {"seed": job.seed, "T": T, "depth": depth, "width": width, "ops": ops, "module": entry}


def plan(point) -> tuple | None:
    """The first parameter set of each ``T`` only: the SRAM does not depend on the other."""
    return None if point.variant else (point.params, point.seed, {})
