"""The encoder bench (:mod:`cocotb_tests.tb_encoder`): code vectors in, masked events out."""

from __future__ import annotations

import random
from collections.abc import Mapping

from regression.cache import module_entry
from rtl_gen.registry import block

__all__ = ["config", "plan"]

#: Vectors per job of a quick regression (the stimulus default otherwise).
QUICK_VECTORS = 12


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
        "module": module_entry(manifest, block("encoder").module),
        "p_idle": float(stim.p_idle),
        "p_stall": float(stim.p_stall),
        "vectors": vectors,
        "reset": [rng.randrange(1, n), rng.choice(("collect", "emit"))]
        if stim.reset and n > 1
        else None,
        "corrupt": stim.corrupt,
    }


def plan(point) -> tuple | None:
    """Every parameter set, with its own ``k`` and random ``I_max`` (fixed at elaboration)."""
    return point.params, point.seed, {"vectors": QUICK_VECTORS} if point.quick else {}
