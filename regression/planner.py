"""The planner: which jobs a regression over ``T`` and ``k`` runs."""

from __future__ import annotations

import random
from collections.abc import Sequence

from golden_models.codespace import check_k, check_T
from regression import sim
from regression.benches import ALL_BENCHES, BENCHES
from regression.jobs import Job, job
from toolkit_base.checks import check_rtl_T

__all__ = ["block_params", "check_regress_T", "regression_jobs"]

#: Per ``T``: (family, weight_bits, lanes) of the two default parameter sets, so every ``T``
#: runs both families, 1-bit and multi-bit weights, and one comparator-group layout.
_VARIANTS = {
    4: (("sym", 1, None), ("asym", 3, 3)),
    8: (("asym", 1, 4), ("sym", 2, None)),
    16: (("sym", 1, None), ("asym", 4, 3)),
    32: (("asym", 1, None), ("sym", 2, 4)),
    2: (("sym", 1, None), ("asym", 2, None)),
    64: (("sym", 1, None), ("asym", 2, 4)),
}


def check_regress_T(T: object) -> int:
    """:func:`golden_models.codespace.check_T`, plus the generated RTL's ``T <= 64``."""
    return check_rtl_T(check_T(T))


def block_params(T: int, variant: int, k: int, seed: int) -> dict:
    """RTLConfig arguments of default parameter set ``variant`` (0/1) of ``T``: the encoder's
    mask (``k``, a random ``I_max``) is fixed at elaboration; the tile's is loaded at run time."""
    family, wb, lanes = _VARIANTS[T][variant]
    rng = random.Random(f"params:{T}:{variant}:{k}:{seed}")
    params = {
        "T": T,
        "k": k,
        "family": family,
        "weight_bits": wb,
        "n_in": 16,
        "tile_neurons": 8,
        "i_max_in": rng.randrange(T),
    }
    if lanes is not None:
        params["lanes"] = lanes
    return params


def regression_jobs(
    Ts: Sequence[int] = (4, 8, 16),
    ks: Sequence[int] = (0, 1, 2),
    sims: Sequence[str] = sim.SIMULATORS,
    *,
    seed: int = 0,
    benches: Sequence[str] = BENCHES,
    quick: bool = False,
) -> list[Job]:
    """The jobs of a regression over ``Ts`` and ``ks`` on ``sims``.

    Per ``T``: two parameter sets (both families); the encoder runs on each with its own
    ``k`` (cycling through ``ks``) and a random ``I_max``; the tile runs every ``k`` of ``ks``
    with random ``I_max`` (loaded at run time) on each; the SRAM runs on one; the system runs
    a 3-layer random QNN on a 2x2 mesh (its ``k``, family and distribution vary with ``T``).
    The fast benches (``tile-fast``, ``system-fast``) run the tile's and the system's jobs
    through the fast harness. ``quick``: one parameter set per ``T`` and fewer vectors.
    """
    ks = tuple(check_k(k, min(check_regress_T(T) for T in Ts)) for k in ks)
    for name in sims:
        sim.check_sim(name)
    for b in benches:
        if b not in ALL_BENCHES:
            raise ValueError(f"bench must be one of {ALL_BENCHES}, not {b!r}")
    jobs = []
    short = {"vectors": 12} if quick else {}
    tile_windows = 4 if quick else 8
    for ti, T in enumerate(Ts):
        for v in (0,) if quick else (0, 1):
            k = ks[(ti + v) % len(ks)]
            params = block_params(T, v, k, seed)
            s = seed * 1000 + T * 10 + v
            for name in sims:
                if "encoder" in benches:
                    jobs.append(job("encoder", name, params, s, **short))
                if "sram" in benches and v == 0:
                    jobs.append(job("sram", name, params, s))
                if "router" in benches and v == 0:
                    jobs.append(job("router", name, params, s))
                if "tile" in benches:
                    jobs.append(job("tile", name, params, s, ks=ks, windows=tile_windows))
                if "tile-fast" in benches:
                    jobs.append(job("tile-fast", name, params, s, ks=ks, windows=tile_windows))
                if "dense_tile" in benches and v == 0:
                    jobs.append(job("dense_tile", name, params, s))
        sys_params = {
            "T": T,
            "k": ks[ti % len(ks)],
            "family": ("sym", "asym")[ti % 2],
            "distribution": ("uniform", "peaked")[ti % 2],
            "shape": ti % 2,
        }
        short_sys = {"inferences": 4} if quick else {}
        for name in sims:
            for bench in ("system", "system-fast"):
                if bench in benches:
                    jobs.append(job(bench, name, sys_params, seed * 1000 + T, **short_sys))
    return jobs
