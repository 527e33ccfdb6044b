"""The dense-tile bench (:mod:`cocotb_tests.tb_dense_tile`): random layers loaded through the
load port, windows of codes in, every packed output beat and counter compared."""

from __future__ import annotations

from collections.abc import Mapping

from regression.cache import module_entry

__all__ = ["config"]


def config(job, manifest: Mapping) -> dict:
    """Random blocks of ``job.stim`` (:class:`regression.stimulus.DenseTileStimulus`)."""
    from regression.reference import TileGeometry, dense_blocks

    stim = job.stim
    geo = TileGeometry.from_manifest(manifest)
    entry = module_entry(manifest, "dense_tile")
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
