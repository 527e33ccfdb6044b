"""Workloads of the energy comparison: a golden layer, its input windows, and its designs.

A :class:`Workload` is a golden :class:`golden_models.IntegerLayer` (its masks are the M-TTFS
calibration) and input code vectors, one per window. Two are made here: a seeded random layer
(:func:`random_workload`) and the real MiniLM slice that ``matterhorn stats`` exports
(:func:`read_slice`, a ``matterhorn.layer_slice/1`` document). Every design of
:data:`DESIGNS` runs the same layer on the same windows with its own masks
(:func:`design_layer`); ``matterhorn compare`` measures them (docs/compare.md).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import torch

__all__ = ["DESIGNS", "Workload", "design_layer", "random_workload", "read_slice"]

#: The compared designs: the dense INT4 tile, the TTFS mask, M-TTFS at radius 0, 1 and 2.
DESIGNS = ("dense", "ttfs", "mttfs-k0", "mttfs-k1", "mttfs-k2")


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


def read_slice(path: str | os.PathLike) -> Workload:
    """The real MiniLM slice that ``matterhorn stats`` exports (``matterhorn.layer_slice/1``).

    Raises
    ------
    ValueError
        The file is not readable JSON, or not a valid slice document (the message names the
        field, :func:`toolkit_base.schemas.validate`).
    """
    from golden_models import CodeSpace, IntegerLayer, Mask
    from toolkit_base.schemas import validate

    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"slice {str(path)!r} is not a readable JSON document: {exc}") from exc
    validate(doc, "layer_slice", path.name)

    def mask(m):
        return Mask(CodeSpace(m["T"], m["family"]), m["i_max"], m["k"])

    layer = IntegerLayer(
        torch.tensor(doc["weights"], dtype=torch.int64), doc["weight_bits"],
        torch.tensor(doc["init"], dtype=torch.int64),
        torch.tensor(doc["theta"], dtype=torch.int64), mask(doc["in_mask"]),
        mask(doc["out_mask"]))
    codes = torch.tensor([v["q_in"] for v in doc["vectors"]], dtype=torch.int64)
    return Workload("minilm", layer, codes,
                    f"{path.name}: MiniLM block 0 Q projection, {layer.n_in} inputs x "
                    f"{layer.n_out} neurons, {layer.weight_bits}-bit weights, "
                    f"{codes.shape[0]} corpus tokens")


def design_layer(layer, design: str):
    """The golden layer of ``design`` (one of :data:`DESIGNS`): ``layer`` with its masks.

    ``dense`` and ``ttfs``: the TTFS mask (silent lowest level, ``k = 0``) in and out;
    ``mttfs-k<k>``: radius ``k`` around the calibrated silent centres.
    """
    from golden_models import Mask, ttfs_mask
    from golden_models.dense import with_masks

    if design not in DESIGNS:
        raise ValueError(f"design must be one of {', '.join(DESIGNS)}, not {design!r}")
    sin, sout = layer.in_mask.space, layer.out_mask.space
    if design in ("dense", "ttfs"):
        return with_masks(layer, ttfs_mask(sin), ttfs_mask(sout))
    k = int(design.rsplit("k", 1)[1])
    return with_masks(layer, Mask(sin, layer.in_mask.i_max, k),
                      Mask(sout, layer.out_mask.i_max, k))
