"""A whole layer on the mesh: one golden layer partitioned over the tiles of ``mttfs_system``.

:func:`run_layer` partitions a golden :class:`golden_models.IntegerLayer` into tiles of
``tile_neurons`` output neurons (:func:`rtl_gen.mapper.map_chain`), generates the system for
that mesh, builds it (cached) on one simulator, loads the tile images through ``load`` and runs
the input windows through the system bench (:mod:`cocotb_tests.tb_system`), which compares every
output event and every counter (each tile's seven, the encoder's two, flits and hops) with
:func:`rtl_gen.mapper.system_reference`, itself checked against the layer run on its own.

:func:`minilm_q_projection` captures the layer this is made for: the whole block-0 Q
projection of MiniLM (384 x 384, its 4-bit weights, calibrated masks at radius ``k``) with real
token windows (:func:`networks.rtl_slice.capture_slice`).

The layer must fit the mesh: :func:`layer_config` says so in one line naming the tiles needed
and the nodes there are, before anything is generated.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from golden_models.block_pieces import TILE_NEURONS
from golden_models.codespace import check_k
from regression.benches.system import chain_config
from regression.cache import generate_rtl
from regression.execute import DEFAULT_ROOT, check_windows, execute_config
from regression.jobs import JobResult, job
from regression.planner import check_regress_T
from rtl_gen.registry import block
from toolkit_base.checks import check_int, check_seed

__all__ = [
    "DEFAULT_MESH",
    "MAX_WINDOWS",
    "LayerRun",
    "check_layer_fits",
    "layer_config",
    "minilm_T",
    "minilm_q_projection",
    "run_layer",
]

#: Mesh ``(rows, cols)`` of the default partition.
DEFAULT_MESH = (3, 3)
#: Most input windows of one layer run (:func:`run_layer`, :func:`minilm_q_projection`,
#: ``matterhorn layer --windows``). The bench's configuration carries every window's codes, and
#: a window of the 384 x 384 layer takes about 720 clocks: 4096 windows are about 3 million
#: clocks, some 12 minutes on Verilator and over an hour on Icarus (docs/rtl_system.md).
MAX_WINDOWS = 4096


@dataclass(frozen=True)
class LayerRun:
    """One layer run on one simulator.

    Members
    -------
    result : JobResult
        ``passed``, ``error`` and the bench report (docs/regress.md, system bench).
    tiles : int
        Tiles the layer is partitioned into.
    generate_seconds : float
        Generating the Verilog (about 0 when it was cached).
    figures : dict
        :func:`layer_figures`: windows, events, cycles, mismatches, simulation, build and
        run seconds.
    """

    result: JobResult
    tiles: int
    generate_seconds: float = 0.0
    figures: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.result.passed

    @property
    def error(self) -> str:
        return self.result.error


def layer_config(layer, *, tile_neurons: int = TILE_NEURONS,
                 mesh: Sequence[int] = DEFAULT_MESH):
    """The :class:`rtl_gen.params.RTLConfig` of a mesh that holds ``layer`` in tiles of
    ``tile_neurons`` neurons, and the layer's :class:`rtl_gen.mapper.SystemMap` on it.

    Raises
    ------
    TypeError, ValueError
        ``layer`` is no ``IntegerLayer``, the tile or mesh size is out of range, or the layer
        needs more tiles than the mesh has nodes (one line naming both).
    """
    from golden_models.integer_layer import IntegerLayer
    from rtl_gen.mapper import config_for_chain, map_chain

    if not isinstance(layer, IntegerLayer):
        raise TypeError(f"layer must be a golden_models.IntegerLayer, not {type(layer).__name__}")
    check_regress_T(layer.out_mask.T)
    check_layer_fits(layer.n_out, tile_neurons=tile_neurons, mesh=mesh)
    rows, cols = mesh
    cfg = config_for_chain([layer], tile_neurons=tile_neurons, mesh_rows=rows, mesh_cols=cols)
    return cfg, map_chain(cfg, [layer])


def check_layer_fits(n_out: int, *, tile_neurons: int, mesh: Sequence[int]) -> int:
    """The number of tiles a layer of ``n_out`` neurons takes; a ValueError in one line naming
    the tiles needed and the nodes of the mesh when it does not fit (and for a tile or mesh
    size out of range)."""
    from rtl_gen.params import MAX_MESH, MAX_TILE_NEURONS

    if not isinstance(mesh, (tuple, list)) or len(mesh) != 2:
        raise ValueError(f"mesh must be (rows, cols), not {mesh!r}")
    rows, cols = mesh
    check_int("mesh_rows", rows, 1, MAX_MESH)
    check_int("mesh_cols", cols, 1, MAX_MESH)
    check_int("tile_neurons", tile_neurons, 1, MAX_TILE_NEURONS)
    check_int("n_out", n_out, 1, 1 << 20)
    tiles = -(-n_out // tile_neurons)
    if tiles > rows * cols:
        raise ValueError(
            f"the layer's {n_out} outputs need {tiles} tiles of {tile_neurons} neurons, "
            f"the {rows}x{cols} mesh has {rows * cols} node{'s' if rows * cols > 1 else ''}")
    return tiles


def run_layer(
    layer,
    windows,
    sim_name: str,
    *,
    tile_neurons: int = TILE_NEURONS,
    mesh: Sequence[int] = DEFAULT_MESH,
    out_dir: Path | str = DEFAULT_ROOT,
    seed: int = 0,
    p_idle: float = 0.0,
    p_stall: float = 0.0,
    name: str = "layer",
    loaded=None,
    waves: bool = False,
) -> LayerRun:
    """Run ``layer`` partitioned over the mesh on ``windows``; every event and counter checked.

    Parameters
    ----------
    layer : golden_models.IntegerLayer
        The golden layer; its input mask is the encoder's.
    windows : sequence of torch.Tensor
        Input code vectors, ``layer.n_in`` codes each, one inference (token window) each.
    sim_name : {"icarus", "verilator"}
    tile_neurons : int
        Output neurons per tile ``N``; the layer takes ``ceil(n_out / N)`` tiles.
    mesh : (rows, cols)
        The mesh; it must have at least as many nodes as the layer has tiles.
    out_dir : path
        Root of the generated Verilog, builds and ``runs/<name>-<sim_name>``.
    seed : int
        Seed of the random idle input and stalled output cycles.
    p_idle, p_stall : float
        Probability of an idle input cycle and of a low ``o.ready`` (0: full speed).
    name : str
        Name of the run directory.
    loaded : golden_models.IntegerLayer, optional
        The layer whose images are loaded into the tiles (default ``layer``); a different
        one is a planted fault, which the bench must report as mismatches.
    waves : bool
        Dump waveforms.

    Returns
    -------
    LayerRun
        The job result, the tile count, the generation time and :func:`layer_figures`.
    """
    cfg, smap = layer_config(layer, tile_neurons=tile_neurons, mesh=mesh)
    windows = check_windows(layer, windows)
    if loaded is not None:
        layer_config(loaded, tile_neurons=tile_neurons, mesh=mesh)
    check_seed(seed)
    for pname, p in (("p_idle", p_idle), ("p_stall", p_stall)):
        if not isinstance(p, (int, float)) or not 0 <= p < 1:
            raise ValueError(f"{pname} must be in [0, 1), not {p!r}")
    check_int("windows", len(windows), 1, MAX_WINDOWS)
    params = cfg.as_dict()
    j = job("system", sim_name, params, seed, inferences=len(windows), reset=False,
            p_idle=float(p_idle), p_stall=float(p_stall))
    t0 = time.perf_counter()
    root = Path(out_dir).resolve()
    generated = generate_rtl(params, root, modules=(block("system").module,))  # timed here
    t_gen = time.perf_counter() - t0

    def make_config(manifest):
        return chain_config(
            manifest, [layer], windows, seed=seed, p_idle=float(p_idle), p_stall=float(p_stall),
            loaded=None if loaded is None else [loaded],
        )

    res = execute_config(j, params, make_config, root, waves=waves,
                         run_name=f"{name}-{sim_name}", generated=generated)
    return LayerRun(res, len(smap.tiles), t_gen, layer_figures(res))


def layer_figures(res: JobResult) -> dict:
    """Windows, events, cycles and times of a layer run, from the bench report."""
    rep = res.report
    golden = rep.get("counter_totals_golden", {})
    tiles_in = sum(v for k, v in golden.items() if k.startswith("cnt_events_in_n"))
    return {
        "windows": int(rep.get("vectors", 0)),
        "encoder_events": int(golden.get("cnt_enc_events_out", 0)),
        "tile_events_in": int(tiles_in),
        "events_out": int(rep.get("events_out", 0)),
        "events": int(rep.get("events", 0)),
        "cycles": int(rep.get("cycles", 0)),
        "sim_seconds": round(float(rep.get("sim_seconds", 0.0)), 2),
        "mismatches": res.mismatches,
        "build_seconds": round(res.build_seconds, 2),
        "run_seconds": round(res.run_seconds, 2),
    }


def minilm_T() -> int:
    """``T`` of the layer :func:`minilm_q_projection` converts: ``2**act_bits`` of the
    post-training conversion's default :class:`networks.ptq.PTQConfig` (16)."""
    from networks.ptq import PTQConfig

    return 2 ** PTQConfig().act_bits


def minilm_q_projection(windows: int = 64, *, k: int = 1, calibration: int = 6,
                        block: int = 0, qnn=None, model="minilm"):
    """The whole Q projection of block ``block`` of a model and ``windows`` real token windows.

    The model (``"minilm"``, all-MiniLM-L6-v2 of the ``models`` extra, or a BERT-family model
    folder: :func:`networks.hf_folder.resolve_model`) is converted post-training on the first
    ``calibration`` sentences of the ``pydoc-topics`` corpus (unless ``qnn`` is given as
    ``(qnn, tokenizer)``), its masks set to radius ``k``, and the tokens of the corpus's
    evaluation sentences captured at the layer's input and output
    (:func:`networks.rtl_slice.model_slice`, which checks that the integer layer reproduces
    the QNN's output codes on every window).

    Raises
    ------
    FileNotFoundError
        MiniLM is not installed, or the model folder does not exist.
    """
    from networks.rtl_slice import model_slice

    check_int("windows", windows, 1, MAX_WINDOWS)
    check_int("calibration", calibration, 1, 1 << 16)
    if qnn is None:  # (a given QNN's own T is checked by capture_slice)
        check_k(k, minilm_T())
    return model_slice(model, k=k, windows=windows, calibration=calibration, block=block,
                       qnn=qnn)
