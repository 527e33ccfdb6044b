"""The bench kinds the regression knows: module under test, cocotb bench, stimulus, config.

Adding a bench kind (docs/regress.md, "Adding a bench"): a module here with a ``config(job,
manifest)`` builder (and ``params(job)`` when the parameter set is derived), a stimulus
dataclass in :mod:`regression.stimulus`, a cocotb bench ``cocotb_tests/tb_<name>.py``, and one
:class:`BenchKind` entry below; :func:`regression.planner.regression_jobs` schedules it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from regression import stimulus
from regression.benches import dense_tile, encoder, fast, router, sram, system, tile

__all__ = ["ALL_BENCHES", "BENCHES", "BENCH_KINDS", "FAST_BENCHES", "BenchKind"]


def _own_params(job) -> dict:
    return dict(job.params)


@dataclass(frozen=True)
class BenchKind:
    """How the regression runs one kind of bench.

    Parameters
    ----------
    top : str
        Generated module under test (a key of the manifest's ``modules``).
    testbench : str
        cocotb test module that drives it.
    stimulus : type
        Frozen dataclass of the bench's stimulus options.
    config : callable
        ``config(job, manifest) -> dict``: the JSON configuration the bench reads.
    params : callable
        ``params(job) -> dict``: the :class:`rtl_gen.params.RTLConfig` arguments to generate.
    build : callable, optional
        ``build(sim, rtl_dir, manifest, top, config, root, waves) -> regression.sim.Build``
        when the bench runs a harness around ``top`` (the fast benches); by default ``top``
        alone is built (:func:`regression.cache.build_module`).
    """

    top: str
    testbench: str
    stimulus: type
    config: Callable[[object, Mapping], dict]
    params: Callable[[object], dict] = _own_params
    build: Callable | None = None


#: bench name -> kind, in the order the regression runs them.
BENCH_KINDS = {
    "encoder": BenchKind(
        "mttfs_encoder", "cocotb_tests.tb_encoder", stimulus.EncoderStimulus, encoder.config
    ),
    "sram": BenchKind("mttfs_sram", "cocotb_tests.tb_sram", stimulus.SramStimulus, sram.config),
    "tile": BenchKind("mttfs_tile", "cocotb_tests.tb_tile", stimulus.TileStimulus, tile.config),
    "dense_tile": BenchKind(
        "dense_tile", "cocotb_tests.tb_dense_tile", stimulus.DenseTileStimulus, dense_tile.config
    ),
    "router": BenchKind(
        "mttfs_router", "cocotb_tests.tb_router", stimulus.RouterStimulus, router.config
    ),
    "system": BenchKind(
        "mttfs_system",
        "cocotb_tests.tb_system",
        stimulus.SystemStimulus,
        system.config,
        params=system.params,
    ),
}
#: The per-beat benches, in the order the regression runs them (its default set).
BENCHES = tuple(BENCH_KINDS)
#: The fast benches (stimulus and expected response in the simulation, :mod:`regression.fast`):
#: the tile's and the system's vectors without per-beat Python; run when asked for.
BENCH_KINDS["tile-fast"] = BenchKind(
    "mttfs_tile", "cocotb_tests.tb_fast", stimulus.FastTileStimulus, fast.tile_config,
    build=fast.build,
)
BENCH_KINDS["system-fast"] = BenchKind(
    "mttfs_system", "cocotb_tests.tb_fast", stimulus.FastSystemStimulus, fast.system_config,
    params=system.params, build=fast.build,
)
FAST_BENCHES = ("tile-fast", "system-fast")
#: Every bench a job may name.
ALL_BENCHES = BENCHES + FAST_BENCHES
