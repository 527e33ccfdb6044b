"""The planner: which jobs a regression over ``T`` and ``k`` runs."""

from __future__ import annotations

import random
from collections.abc import Sequence

from golden_models.codespace import check_k, check_T
from regression import sim
from regression.benches import ALL_BENCHES, BENCH_KINDS, BENCHES, PlanPoint
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

    Per ``T``: two parameter sets (both families, :func:`block_params`; ``quick``: the first
    only), each with its own ``k`` (cycling through ``ks``) and a random ``I_max``. At every
    set and simulator, each bench kind of ``benches`` (in :data:`regression.benches.BENCH_KINDS`
    order) says through its ``plan`` whether it runs there and with what: the encoder and the
    tile on every set (the tile with every ``k`` of ``ks``, loaded at run time), the SRAM,
    router and dense tile on the first, the system once per ``T`` on a 3-layer random QNN on a
    2x2 mesh (its ``k``, family and distribution vary with ``T``), the AXI wrappers once per
    sweep (at its first ``T`` and ``k``); ``quick`` also shortens the runs.
    """
    ks = tuple(check_k(k, min(check_regress_T(T) for T in Ts)) for k in ks)
    for name in sims:
        sim.check_sim(name)
    for b in benches:
        if b not in ALL_BENCHES:
            raise ValueError(f"bench must be one of {ALL_BENCHES}, not {b!r}")
    kinds = [(b, kind) for b, kind in BENCH_KINDS.items() if b in benches]
    jobs = []
    for ti, T in enumerate(Ts):
        for v in (0,) if quick else (0, 1):
            k = ks[(ti + v) % len(ks)]
            point = PlanPoint(T=T, index=ti, variant=v, params=block_params(T, v, k, seed),
                              seed=seed * 1000 + T * 10 + v, base_seed=seed, ks=ks, quick=quick)
            for name in sims:
                for bench, kind in kinds:
                    planned = kind.plan(point)
                    if planned is not None:
                        params, job_seed, stim = planned
                        jobs.append(job(bench, name, params, job_seed, **stim))
    return jobs
