"""The tile bench (:mod:`cocotb_tests.tb_tile`): random layers loaded through the load port,
windows of golden events in, every output event and counter compared."""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from regression.cache import module_entry
from regression.stimulus import P_IDLE, P_STALL
from rtl_gen.registry import block

__all__ = ["config", "plan", "tile_config"]

#: Windows per layer of a regression job: default, quick.
WINDOWS, QUICK_WINDOWS = 8, 4


def tile_config(
    manifest: Mapping,
    blocks: Sequence[Mapping],
    *,
    seed: int = 0,
    resets: Sequence[Sequence] = (),
    p_idle: float = P_IDLE,
    p_stall: float = P_STALL,
    corrupt: str | None = None,
) -> dict:
    """The configuration :mod:`cocotb_tests.tb_tile` reads: the one home of its layout.

    Parameters
    ----------
    manifest : mapping
        Manifest of the generated Verilog (:func:`regression.cache.generate_rtl`).
    blocks : sequence of dict
        Loads and their windows (:func:`regression.reference.tile_block`).
    seed : int
        Seed of the bench's random idle and stall cycles.
    resets : sequence of [block, window, phase]
        Windows cut by a reset, ``phase`` ``"integrate"`` or ``"fire"``.
    p_idle, p_stall : float
        Probability of an idle input cycle and of a low ``ready`` on the output.
    corrupt : {None, "alter", "drop"}
        Self-check: alter or drop one expected event so the bench must fail.
    """
    from regression.reference import TileGeometry

    geo = TileGeometry.from_manifest(manifest)
    entry = module_entry(manifest, block("tile").module)
    return {
        "seed": seed,
        "T": geo.T,
        "module": entry,
        "counters": entry["counters"],
        "geometry": {"T": geo.T, "n_in": geo.n_in, "neurons": geo.neurons, "groups": geo.groups},
        "p_idle": float(p_idle),
        "p_stall": float(p_stall),
        "blocks": [dict(b) for b in blocks],
        "resets": [list(r) for r in resets],
        "corrupt": corrupt,
    }


def config(job, manifest: Mapping) -> dict:
    """Random blocks of ``job.stim`` (:class:`regression.stimulus.TileStimulus`)."""
    from regression.reference import TileGeometry, tile_blocks

    stim = job.stim
    geo = TileGeometry.from_manifest(manifest)
    blocks = tile_blocks(
        geo, job.seed, blocks=int(stim.blocks), windows=int(stim.windows), ks=tuple(stim.ks)
    )
    rng = random.Random(f"reset:{job.seed}")
    resets = []
    if stim.reset:
        # one reset during integrate and one during fire, in distinct windows
        spots = [(b, w) for b, blk in enumerate(blocks) for w in range(len(blk["windows"]))]
        for phase, (b, w) in zip(("integrate", "fire"), rng.sample(spots, 2), strict=True):
            resets.append([b, w, phase])
    return tile_config(
        manifest,
        blocks,
        seed=job.seed,
        resets=resets,
        p_idle=stim.p_idle,
        p_stall=stim.p_stall,
        corrupt=stim.corrupt,
    )


def plan(point) -> tuple | None:
    """Every parameter set, with every radius of the sweep (the mask is loaded at run time)."""
    return point.params, point.seed, {"ks": point.ks,
                                      "windows": QUICK_WINDOWS if point.quick else WINDOWS}
