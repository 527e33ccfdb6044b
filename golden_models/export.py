"""Export and import of integer layer parameters (weights, folded init B, thresholds, masks).

Two containers carry the same document (schema in ``docs/golden_models.md``):

- JSON (``.json``): human-readable, integers as nested lists;
- NumPy (``.npz``): arrays ``layer<i>.weights`` (int8 ``[N_in, N_out]``), ``layer<i>.init``
  and ``layer<i>.theta`` (int64), plus ``meta``: the JSON document without the arrays.

Both are deterministic (same layers, same bytes) and written to a temporary file that is then
renamed, so a failed export leaves nothing half-written. :func:`read_layers` checks every field
and rebuilds :class:`golden_models.IntegerLayer` objects, which re-check their own invariants
(weight range, shapes, non-increasing thresholds).
"""

from __future__ import annotations

import io
import json
import os

import numpy as np
import torch

from golden_models.codespace import CodeSpace
from golden_models.integer_layer import IntegerLayer, accumulator_bound, signed_width
from golden_models.mask import Mask
from toolkit_base.files import write_atomic
from toolkit_base.schemas import validate

SCHEMA = "matterhorn.golden_layers/1"
SCHEMA_VERSION = 1
FORMATS = ("json", "npz")


def mask_dict(mask: Mask) -> dict:
    sp = mask.space
    return {"T": sp.T, "family": sp.family, "c": sp.c, "i_max": mask.i_max, "k": mask.k,
            "mu": mask.mu, "silent_times": list(mask.silent_times)}


def _mask_of(d: object, where: str) -> Mask:
    if not isinstance(d, dict):
        raise ValueError(f"field {where!r} must be an object")
    for key in ("T", "family", "i_max", "k"):
        if key not in d:
            raise ValueError(f"field {where}.{key} is missing")
    return Mask(CodeSpace(d["T"], d["family"]), d["i_max"], d["k"])


def layer_meta(name: str, layer: IntegerLayer) -> dict:
    """The per-layer document without its arrays."""
    theta = layer.theta
    t_bound = int(theta.abs().max()) if theta.numel() else 0
    acc = accumulator_bound(layer.n_in, layer.weight_bits, layer.in_mask.space)
    return {
        "name": name,
        "n_in": layer.n_in,
        "n_out": layer.n_out,
        "weight_bits": layer.weight_bits,
        "in_mask": mask_dict(layer.in_mask),
        "out_mask": mask_dict(layer.out_mask),
        "accumulator_bound": acc,
        "accumulator_bits": signed_width(acc),
        "theta_bits": signed_width(t_bound),
    }


def layers_document(layers: list[tuple[str, IntegerLayer]], arrays: bool = True) -> dict:
    """The export document; with ``arrays`` the weights, init and theta as nested lists."""
    if not layers:
        raise ValueError("layers is empty: nothing to export")
    names = [n for n, _ in layers]
    if len(set(names)) != len(names):
        raise ValueError(f"layer names must be unique, not {names}")
    docs = []
    for name, layer in layers:
        if not isinstance(name, str) or not isinstance(layer, IntegerLayer):
            raise TypeError(f"layers must be (str, IntegerLayer) pairs, not ({name!r}, ...)")
        d = layer_meta(name, layer)
        if arrays:
            d["weights"] = layer.weights.to(torch.int64).tolist()
            d["init"] = layer.init.to(torch.int64).tolist()
            d["theta"] = layer.theta.to(torch.int64).tolist()
        docs.append(d)
    return {"schema": SCHEMA, "version": SCHEMA_VERSION, "layers": docs}


def _format_of(path: str, fmt: str | None) -> str:
    if fmt is None:
        fmt = os.path.splitext(path)[1].lstrip(".").lower()
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {FORMATS} (or a .json/.npz path), not {fmt!r}")
    return fmt


def write_layers(
    path: str | os.PathLike, layers: list[tuple[str, IntegerLayer]], *, fmt: str | None = None
) -> None:
    """Write named integer layers to ``path`` as JSON or npz (from the suffix unless ``fmt``)."""
    path = os.fspath(path)
    fmt = _format_of(path, fmt)
    if fmt == "json":
        text = json.dumps(layers_document(layers), sort_keys=True, separators=(",", ":"))
        write_atomic(path, text + "\n", prefix=".export-")
        return
    meta = layers_document(layers, arrays=False)
    arrays = {"meta": np.array(json.dumps(meta, sort_keys=True))}
    for i, (_, layer) in enumerate(layers):
        arrays[f"layer{i}.weights"] = layer.weights.to(torch.int8).numpy()
        arrays[f"layer{i}.init"] = layer.init.to(torch.int64).numpy()
        arrays[f"layer{i}.theta"] = layer.theta.to(torch.int64).numpy()
    buf = io.BytesIO()
    np.savez(buf, **arrays)  # zip entries carry the fixed 1980 timestamp: deterministic
    write_atomic(path, buf.getvalue(), prefix=".export-")


def _build(d: dict, w, init, theta, i: int) -> tuple[str, IntegerLayer]:
    for key in ("name", "weight_bits", "in_mask", "out_mask"):
        if key not in d:
            raise ValueError(f"field layers[{i}].{key} is missing")
    layer = IntegerLayer(
        weights=torch.as_tensor(np.asarray(w), dtype=torch.int64),
        weight_bits=d["weight_bits"],
        init=torch.as_tensor(np.asarray(init), dtype=torch.int64),
        theta=torch.as_tensor(np.asarray(theta), dtype=torch.int64).reshape(
            len(init), -1
        ),
        in_mask=_mask_of(d["in_mask"], f"layers[{i}].in_mask"),
        out_mask=_mask_of(d["out_mask"], f"layers[{i}].out_mask"),
    )
    return d["name"], layer


def _check_doc(doc: object, path: str) -> list:
    return validate(doc, "golden_layers", os.path.basename(path))["layers"]


def read_layers(
    path: str | os.PathLike, *, fmt: str | None = None
) -> list[tuple[str, IntegerLayer]]:
    """Read layers written by :func:`write_layers`; a malformed file raises naming the field."""
    path = os.fspath(path)
    fmt = _format_of(path, fmt)
    if fmt == "json":
        with open(path) as f:
            docs = _check_doc(json.load(f), path)
        out = []
        for i, d in enumerate(docs):
            for key in ("weights", "init", "theta"):
                if key not in d:
                    raise ValueError(f"field layers[{i}].{key} is missing")
            out.append(_build(d, d["weights"], d["init"], d["theta"], i))
        return out
    with np.load(path, allow_pickle=False) as z:
        if "meta" not in z.files:
            raise ValueError(f"{path!r} lacks the array 'meta'")
        docs = _check_doc(json.loads(str(z["meta"])), path)
        out = []
        for i, d in enumerate(docs):
            keys = [f"layer{i}.{a}" for a in ("weights", "init", "theta")]
            for key in keys:
                if key not in z.files:
                    raise ValueError(f"{path!r} lacks the array {key!r}")
            out.append(_build(d, *(z[key] for key in keys), i))
        return out


__all__ = ["FORMATS", "SCHEMA", "SCHEMA_VERSION", "layers_document", "read_layers",
           "write_layers"]
