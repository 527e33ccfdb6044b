"""The fast benches (``tile-fast``, ``system-fast``): the tile's and the system's golden vectors
(the per-beat benches' own configuration builders) played by the fast harness
(:mod:`regression.fast`): stimulus and expected response in memories, checked in the simulation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from regression.benches import system, tile
from regression.stimulus import SystemStimulus, TileStimulus

__all__ = ["build", "system_config", "tile_config"]


def _run_config(job, vectors, T: int, bench: str) -> dict:
    from regression.fast import fast_config

    stim = job.stim
    return fast_config(vectors, seed=job.seed, T=T, repeat=int(stim.repeat),
                       p_valid=1.0 - float(stim.p_idle), p_ready=1.0 - float(stim.p_stall),
                       bench=bench)


def tile_config(job, manifest: Mapping) -> dict:
    """:func:`regression.benches.tile.config`'s blocks, as fast-harness memories."""
    from regression.fast import tile_vectors

    s = job.stim
    per_beat = TileStimulus(ks=tuple(s.ks), blocks=s.blocks, windows=s.windows, reset=False)
    cfg = tile.config(dataclasses.replace(job, stim=per_beat), manifest)
    return _run_config(job, tile_vectors(cfg, manifest, s.corrupt), cfg["T"], "tile-fast")


def system_config(job, manifest: Mapping) -> dict:
    """:func:`regression.benches.system.config`'s inferences, as fast-harness memories."""
    from regression.fast import system_vectors

    s = job.stim
    per_beat = SystemStimulus(inferences=s.inferences, reset=False)
    cfg = system.config(dataclasses.replace(job, stim=per_beat), manifest)
    return _run_config(job, system_vectors(cfg, manifest, s.corrupt), cfg["T"], "system-fast")


def build(sim_name, rtl_dir, manifest, top, config, root, waves):
    """The harness build around ``top`` (:func:`regression.fast.build_fast`)."""
    from regression.fast import build_fast

    return build_fast(sim_name, rtl_dir, manifest, top, config, root, waves)
