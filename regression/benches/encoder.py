"""The encoder bench (:mod:`cocotb_tests.tb_encoder`): code vectors in, masked events out."""

from __future__ import annotations

import random
from collections.abc import Mapping

from regression.cache import module_entry

__all__ = ["config"]


def config(job, manifest: Mapping) -> dict:
    """Vectors of ``job.stim`` (:class:`regression.stimulus.EncoderStimulus`)."""
    from golden_models.codespace import CodeSpace
    from regression.reference import encoder_vectors

    stim = job.stim
    p = manifest["parameters"]
    space = CodeSpace(int(p["T"]), str(p["family"]))
    n = int(stim.vectors)
    vectors = encoder_vectors(
        space, int(p["n_in"]), int(p["i_max_in"]), int(p["k"]), job.seed, vectors=n
    )
    rng = random.Random(f"reset:{job.seed}")
    return {
        "seed": job.seed,
        "T": space.T,
        "i_max": int(p["i_max_in"]),
        "k": int(p["k"]),
        "module": module_entry(manifest, "mttfs_encoder"),
        "p_idle": float(stim.p_idle),
        "p_stall": float(stim.p_stall),
        "vectors": vectors,
        "reset": [rng.randrange(1, n), rng.choice(("collect", "emit"))]
        if stim.reset and n > 1
        else None,
        "corrupt": stim.corrupt,
    }
