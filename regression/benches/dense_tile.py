"""The dense-tile bench (:mod:`cocotb_tests.tb_dense_tile`): random layers loaded through the
load port, windows of codes in, every packed output beat and counter compared."""

from __future__ import annotations

from collections.abc import Mapping

from regression.cache import module_entry
from rtl_gen.registry import block

__all__ = ["config", "plan"]


def config(job, manifest: Mapping) -> dict:
    """Random blocks of ``job.stim`` (:class:`regression.stimulus.DenseTileStimulus`)."""
    from regression.reference import TileGeometry, dense_blocks

    stim = job.stim
    geo = TileGeometry.from_manifest(manifest)
    entry = module_entry(manifest, block("dense_tile").module)
    pack = int(entry["dense"]["codes_per_beat"])
    return {
        "seed": job.seed,
        "T": geo.T,
        "module": entry,
        "counters": entry["counters"],
        "geometry": {"T": geo.T, "n_in": geo.n_in, "neurons": geo.neurons,
                     "groups": geo.groups, "pack": pack},
        "p_idle": float(stim.p_idle),
        "p_stall": float(stim.p_stall),
        "blocks": dense_blocks(geo, job.seed, blocks=int(stim.blocks),
                               windows=int(stim.windows), pack=pack),
        "corrupt": stim.corrupt,
    }


def plan(point) -> tuple | None:
    """The first parameter set of each ``T`` only: the dense tile does not depend on the other."""
    return None if point.variant else (point.params, point.seed, {})
