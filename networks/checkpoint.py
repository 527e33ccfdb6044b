"""Checkpoints of a (fine-tuned) MiniLM QNN: the integer contract's parameters, nothing else.

A checkpoint folder holds

- ``checkpoint.safetensors``: per linear layer ``<name>.w_int`` (int8), ``<name>.w_scale`` and
  ``<name>.bias`` (float64); per LayerNorm ``<name>.weight`` and ``<name>.bias`` (float64); per
  quant point ``<name>.alpha`` (float64) and, at the spike-encoded points, ``<name>.i_max``
  (int64). Names are the module names of :class:`networks.bert.BertEncoder`.
- ``finetune.json``: the ``matterhorn.finetune/1`` document of the run that made it (one run),
  which names the model and the radius ``k`` it was trained at, and (``integer``) the widths of
  the integer mode if it was made in it.

The token, position and type embeddings are not stored: fine-tuning keeps them, and they come
from the float model the checkpoint was made from (the shipped MiniLM, or a model folder:
``model_key`` names it, ``networks.hf_folder``). The folder is written into a staging folder
and renamed into place, so an interrupted run leaves no folder that looks complete.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import torch
from torch import nn

from golden_models.codespace import CodeSpace
from golden_models.mask import Mask
from networks.bert import BertEncoder, QLinear, QuantPoint
from networks.integer import IntegerSpec, integer_mode_
from toolkit_base.checks import check_folder
from toolkit_base.files import replace_dir, staging_dir, write_atomic
from toolkit_base.jsonfile import read_json
from toolkit_base.schemas import validate

TENSORS = "checkpoint.safetensors"
DOCUMENT = "finetune.json"


def state_of(qnn: BertEncoder) -> dict[str, torch.Tensor]:
    """The checkpoint tensors of a converted QNN."""
    out: dict[str, torch.Tensor] = {}
    for name, m in qnn.named_modules():
        if isinstance(m, QLinear):
            if m.w_int is None:
                raise ValueError(f"linear layer {name} has no integer weights")
            out[f"{name}.w_int"] = m.w_int.to(torch.int8).contiguous()
            out[f"{name}.w_scale"] = m.w_scale.to(torch.float64).contiguous()
            out[f"{name}.bias"] = m.bias.detach().to(torch.float64).contiguous()
        elif isinstance(m, nn.LayerNorm):
            out[f"{name}.weight"] = m.weight.detach().to(torch.float64).contiguous()
            out[f"{name}.bias"] = m.bias.detach().to(torch.float64).contiguous()
        elif isinstance(m, QuantPoint):
            out[f"{name}.alpha"] = torch.tensor([float(m.alpha)], dtype=torch.float64)
            if m.spike:
                out[f"{name}.i_max"] = torch.tensor([m.mask.i_max], dtype=torch.int64)
    return out


def save(qnn: BertEncoder, doc: dict, out: Path | str) -> Path:
    """Write the checkpoint folder ``out`` (tensors + one-run document), atomically."""
    from safetensors.torch import save

    validate(doc, "finetune", DOCUMENT)
    out = Path(out)
    with staging_dir(out.parent, prefix=".checkpoint-") as tmp:
        # write_atomic, not safetensors' save_file (0600): the modes the umask gives
        write_atomic(tmp / TENSORS, save(state_of(qnn)))
        write_atomic(tmp / DOCUMENT, json.dumps(doc, indent=1) + "\n")
        replace_dir(tmp, out)
    return out


def read_document(folder: Path | str) -> dict:
    """The validated ``finetune.json`` of a checkpoint folder."""
    folder = check_folder(folder, "checkpoint folder")
    if not (folder / TENSORS).is_file() or not (folder / DOCUMENT).is_file():
        subs = sorted(p.name for p in folder.glob("k*") if (p / TENSORS).is_file())
        hint = f"; its checkpoints are {', '.join(subs)}" if subs else ""
        raise ValueError(
            f"{str(folder)!r} is not a complete checkpoint (needs {TENSORS} and {DOCUMENT}){hint}"
        )
    doc = read_json(folder / DOCUMENT, "checkpoint document")
    validate(doc, "finetune", DOCUMENT)
    if len(doc["runs"]) != 1:
        raise ValueError(f"{DOCUMENT} of a checkpoint must hold one run, not {len(doc['runs'])}")
    return doc


def check(folder: Path | str, *, model: str = "minilm", k_max: int | None = None,
          k: int | None = None, integer: bool | None = None) -> dict:
    """Return the document of the checkpoint ``folder`` if it can be loaded, else raise.

    What can be checked without the float model, before any work: the document
    (:func:`read_document`), its model, its radius against ``k_max`` (or ``k``, the radius
    the caller expects), its mode against ``integer`` (True: integer, False: float
    non-linearities; a network fine-tuned in one mode is not the other's), and the header of
    the tensor file (a truncated or foreign file is refused here, not after the model is
    loaded).
    """
    doc = read_document(folder)
    run = doc["runs"][0]
    if doc["model_key"] != model:
        raise ValueError(
            f"checkpoint {str(folder)!r} is of model {doc['model_key']!r}, not {model!r}"
        )
    if k_max is not None and run["k"] > k_max:
        raise ValueError(
            f"checkpoint {str(folder)!r} was fine-tuned at k={run['k']}, beyond k_max={k_max}"
        )
    if k is not None and run["k"] != k:
        raise ValueError(f"checkpoint {str(folder)!r} was fine-tuned at k={run['k']}, not k={k}")
    spec = doc.get("integer")
    if integer is not None and integer != (spec is not None):
        raise ValueError(
            f"checkpoint {str(folder)!r} was fine-tuned in integer mode; load it in integer "
            "mode (--integer)"
            if spec is not None
            else f"checkpoint {str(folder)!r} was fine-tuned with float non-linearities; it "
            "cannot be measured in integer mode (fine-tune with --integer for that)"
        )
    _tensor_names(Path(folder) / TENSORS)
    return doc


def _tensor_names(path: Path) -> set[str]:
    """The tensor names in the header of a safetensors file; ValueError naming it if it is
    not one."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), "pt") as f:
            return set(f.keys())
    except Exception as exc:  # SafetensorError derives from Exception only
        raise ValueError(f"{path.parent.name}/{path.name} is not a safetensors file: "
                         f"{' '.join(str(exc).split())}") from None


def load(
    folder: Path | str,
    float_model: BertEncoder,
    *,
    model: str = "minilm",
    k: int | None = None,
    integer: bool | None = None,
) -> tuple[BertEncoder, dict]:
    """The QNN of a checkpoint folder (float64, ``k = 0`` masks) and its document.

    A checkpoint made in integer mode (its document's ``integer``) loads in integer mode with
    the same widths; one made with float non-linearities loads in float mode.

    Parameters
    ----------
    folder : path
    float_model : BertEncoder
        The float model the checkpoint was made from (its embeddings are used).
    model : str
        The model the caller expects; a checkpoint of another model is refused.
    k : int, optional
        The radius the caller expects; a checkpoint trained at another radius is refused.
    integer : bool, optional
        The mode the caller expects (True: integer, False: float non-linearities); a checkpoint
        of the other mode is refused: a network fine-tuned in one mode is not the other's.
    """
    from safetensors.torch import load_file

    doc = check(folder, model=model, k=k, integer=integer)
    spec = doc.get("integer")
    tensors = load_file(str(Path(folder) / TENSORS))
    qnn = copy.deepcopy(float_model).to(torch.float64)

    def get(key: str, shape: tuple[int, ...]) -> torch.Tensor:
        if key not in tensors:
            raise ValueError(f"{TENSORS}: tensor {key!r} is missing")
        t = tensors[key]
        if tuple(t.shape) != tuple(shape):
            raise ValueError(f"{TENSORS}: tensor {key!r} has shape {tuple(t.shape)}, expected "
                             f"{tuple(shape)}")
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise ValueError(f"{TENSORS}: tensor {key!r} holds NaN or infinite values")
        return t

    for name, m in qnn.named_modules():
        if isinstance(m, QLinear):
            n_out = m.weight.shape[0]
            m.w_int = get(f"{name}.w_int", m.weight.shape).to(torch.int64)
            limit = 1 << (doc["weight_bits"] - 1)
            if bool((m.w_int.abs() > limit).any()):
                raise ValueError(f"{TENSORS}: tensor {name + '.w_int'!r} holds values beyond "
                                 f"the {doc['weight_bits']}-bit weights")
            m.w_scale = get(f"{name}.w_scale", (n_out,)).to(torch.float64)
            m.weight_bits = doc["weight_bits"]
            m.bias.data = get(f"{name}.bias", (n_out,)).to(torch.float64)
        elif isinstance(m, nn.LayerNorm):
            m.weight.data = get(f"{name}.weight", m.weight.shape).to(torch.float64)
            m.bias.data = get(f"{name}.bias", m.bias.shape).to(torch.float64)
        elif isinstance(m, QuantPoint):
            m.space = CodeSpace(2 ** doc["act_bits"], m.space.family)
            m.rounding = doc["rounding"]
            m.alpha = float(get(f"{name}.alpha", (1,))[0])
            if not m.alpha > 0:
                raise ValueError(f"{TENSORS}: tensor {name + '.alpha'!r} must be > 0, not "
                                 f"{m.alpha!r}")
            if m.spike:
                i_max = int(get(f"{name}.i_max", (1,))[0])
                if not 0 <= i_max < m.space.T:
                    raise ValueError(f"{TENSORS}: tensor {name + '.i_max'!r} must be in "
                                     f"0..{m.space.T - 1}, not {i_max}")
                m.mask = Mask(m.space, i_max, 0)
    if spec is not None:
        integer_mode_(qnn, IntegerSpec.from_dict(spec))
    return qnn, doc
