"""Workloads of the energy comparison: a golden layer, its input windows, and its designs.

A :class:`Workload` is a golden :class:`golden_models.IntegerLayer` (its masks are the M-TTFS
calibration) and input code vectors, one per window: a seeded random layer
(:func:`random_workload`), or the real MiniLM slice that ``matterhorn stats`` exports
(``matterhorn.compare.slice_workload``, a ``matterhorn.layer_slice/1`` document read by
``networks.rtl_slice.read_slice``). Every design of
:data:`DESIGNS` runs the same layer on the same windows with its own masks
(:func:`design_layer`); ``matterhorn compare`` measures them (docs/compare.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from golden_models.block_pieces import DESIGNS, Design

__all__ = ["DESIGNS", "Workload", "design_layer", "random_workload"]


@dataclass(frozen=True)
class Workload:
    """A golden layer (its masks are the M-TTFS calibration) and its input code vectors."""

    name: str
    layer: object  # golden_models.IntegerLayer
    codes: torch.Tensor  # [windows, n_in]
    source: str


def random_workload(T: int = 16, *, n_in: int = 64, n_out: int = 8, windows: int = 16,
                    seed: int = 0) -> Workload:
    """A seeded random 1-bit-weight QNN layer (peaked activations) and random input windows."""
    from golden_models import random_qnn

    chain = random_qnn((n_in, n_out), T=T, weight_bits=1, rounding="round", seed=seed)
    return Workload(
        name="random",
        layer=chain.integer_layers()[0],
        codes=chain.random_input(windows, seed=seed + 1),
        source=f"golden_models.random_qnn(({n_in}, {n_out}), T={T}, weight_bits=1, "
        f"rounding='round', seed={seed}); {windows} random peaked input windows",
    )


def design_layer(layer, design: str):
    """The golden layer of ``design`` (one of :data:`DESIGNS`, the compared designs: the dense
    INT4 tile, the TTFS mask, M-TTFS at radius 0, 1 and 2): ``layer`` with its masks
    (:meth:`golden_models.block_pieces.Design.mask` of its calibrated ones).

    ``dense`` and ``ttfs``: the TTFS mask (silent lowest level, ``k = 0``) in and out;
    ``mttfs-k<k>``: radius ``k`` around the calibrated silent centres.
    """
    from golden_models.dense import with_masks

    d = Design.parse(design)
    masks = Design("ttfs") if d.dense else d  # the dense tile runs on the TTFS code space
    return with_masks(layer, masks.mask(layer.in_mask), masks.mask(layer.out_mask))
