"""The bench kinds the regression knows, by registered block: cocotb bench, stimulus, config, plan.

Every block of :data:`rtl_gen.registry.BLOCKS` has at least one :class:`BenchKind` here (its
``block`` is the registry name; ``tests/test_registry.py`` fails when one is missing). Adding a
bench kind (docs/regress.md, "Adding a bench"): a module here with a ``config(job, manifest)``
builder and a ``plan(point)`` (and ``params(job)`` when the parameter set is derived), a
stimulus dataclass in :mod:`regression.stimulus`, a cocotb bench ``cocotb_tests/tb_<name>.py``,
and one :class:`BenchKind` entry below; :func:`regression.planner.regression_jobs` asks every
kind's ``plan`` which jobs to run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

from regression import axi, stimulus
from regression.benches import (
    attention,
    dense_tile,
    encoder,
    fast,
    router,
    sram,
    system,
    tile,
    units,
)
from rtl_gen import registry

__all__ = ["ALL_BENCHES", "BENCHES", "BENCH_KINDS", "FAST_BENCHES", "BenchKind", "PlanPoint"]


def _own_params(job) -> dict:
    return dict(job.params)


@dataclass(frozen=True)
class PlanPoint:
    """One point of a regression sweep, offered to every bench kind's ``plan``.

    ``T`` (at position ``index`` of the sweep's ``Ts``), parameter set ``variant`` (0 or 1)
    with its :class:`rtl_gen.params.RTLConfig` arguments ``params`` (``block_params``) and
    seed ``seed``; the sweep's seed ``base_seed``, radii ``ks`` and ``quick`` flag.
    """

    T: int
    index: int
    variant: int
    params: Mapping
    seed: int
    base_seed: int
    ks: tuple[int, ...]
    quick: bool


#: What a ``plan`` returns for a job: its parameters, its seed and its stimulus options.
Planned = tuple[Mapping, int, Mapping]


@dataclass(frozen=True)
class BenchKind:
    """How the regression runs one kind of bench.

    Parameters
    ----------
    block : str
        The registered block under test (:func:`rtl_gen.registry.block`); its Verilog module
        is :attr:`top`.
    testbench : str
        cocotb test module that drives it.
    stimulus : type
        Frozen dataclass of the bench's stimulus options.
    config : callable
        ``config(job, manifest) -> dict``: the JSON configuration the bench reads.
    plan : callable
        ``plan(point) -> (params, seed, stim) or None``: the job the default regression runs
        at a :class:`PlanPoint`, or none there.
    params : callable
        ``params(job) -> dict``: the :class:`rtl_gen.params.RTLConfig` arguments to generate.
    build : callable, optional
        ``build(sim, rtl_dir, manifest, top, config, root, waves) -> regression.sim.Build``
        when the bench runs a harness around ``top`` (the fast benches); by default ``top``
        alone is built (:func:`regression.cache.build_module`).

    Raises
    ------
    ValueError
        ``block`` is not registered.
    """

    block: str
    testbench: str
    stimulus: type
    config: Callable[[object, Mapping], dict]
    plan: Callable[[PlanPoint], Planned | None]
    params: Callable[[object], dict] = _own_params
    build: Callable | None = None

    def __post_init__(self) -> None:
        registry.block(self.block)

    @property
    def top(self) -> str:
        """The generated module under test (a key of the manifest's ``modules``)."""
        return registry.block(self.block).module


#: bench name -> kind, in the order the regression runs them.
BENCH_KINDS = {
    "encoder": BenchKind("encoder", "cocotb_tests.tb_encoder", stimulus.EncoderStimulus,
                         encoder.config, encoder.plan),
    "sram": BenchKind("sram", "cocotb_tests.tb_sram", stimulus.SramStimulus, sram.config,
                      sram.plan),
    "tile": BenchKind("tile", "cocotb_tests.tb_tile", stimulus.TileStimulus, tile.config,
                      tile.plan),
    "dense_tile": BenchKind("dense_tile", "cocotb_tests.tb_dense_tile",
                            stimulus.DenseTileStimulus, dense_tile.config, dense_tile.plan),
    "router": BenchKind("router", "cocotb_tests.tb_router", stimulus.RouterStimulus,
                        router.config, router.plan),
    "system": BenchKind("system", "cocotb_tests.tb_system", stimulus.SystemStimulus,
                        system.config, system.plan, params=system.params),
    # the attention path and its softmax node: golden sequences in the fast harness
    "attn_softmax": BenchKind("attn_softmax", "cocotb_tests.tb_fast", stimulus.AttentionStimulus,
                              attention.softmax_config, attention.softmax_plan,
                              params=attention.params, build=fast.build),
    "attention": BenchKind("attention", "cocotb_tests.tb_fast", stimulus.AttentionStimulus,
                           attention.attention_config, attention.attention_plan,
                           params=attention.params, build=fast.build),
    "softmax": BenchKind("softmax", "cocotb_tests.tb_softmax", stimulus.SoftmaxStimulus,
                         units.softmax_config, units.plan),
    "add_norm": BenchKind("add_norm", "cocotb_tests.tb_add_norm", stimulus.AddNormStimulus,
                          units.add_norm_config, units.plan),
    # the AXI wrappers (regression/axi.py): one bench, a random network per job
    "axi_tile": BenchKind("axi_tile", axi.BENCH, stimulus.AxiStimulus,
                          partial(axi.job_config, "tile"), axi.plan,
                          params=partial(axi.job_params, "tile")),
    "axi_system": BenchKind("axi_system", axi.BENCH, stimulus.AxiStimulus,
                            partial(axi.job_config, "system"), axi.plan,
                            params=partial(axi.job_params, "system")),
}
#: The per-beat benches, in the order the regression runs them (its default set).
BENCHES = tuple(BENCH_KINDS)
#: The fast benches (stimulus and expected response in the simulation, :mod:`regression.fast`):
#: the tile's and the system's vectors without per-beat Python; run when asked for.
BENCH_KINDS["tile-fast"] = BenchKind(
    "tile", "cocotb_tests.tb_fast", stimulus.FastTileStimulus, fast.tile_config, tile.plan,
    build=fast.build,
)
BENCH_KINDS["system-fast"] = BenchKind(
    "system", "cocotb_tests.tb_fast", stimulus.FastSystemStimulus, fast.system_config,
    system.plan, params=system.params, build=fast.build,
)
FAST_BENCHES = ("tile-fast", "system-fast")
#: Every bench a job may name.
ALL_BENCHES = BENCHES + FAST_BENCHES
