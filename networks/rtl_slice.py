"""A tile-sized slice of a real MiniLM layer as a golden :class:`IntegerLayer`.

The slice is the Q projection of one block: its input is the spike-encoded "Q-proj. input"
position, its output the "Query activation" position, so both ends are M-TTFS event streams
with calibrated masks. It keeps the full fan-in (the layer's ``hidden`` inputs, so the output
codes are the QNN's own) and ``n_out`` consecutive output neurons. Weights are the QNN's 4-bit
integers; the threshold tables come from
:func:`golden_models.integer_layer.threshold_table` on the same float64 affine map the QNN
evaluates, so the slice's output codes equal the QNN's bit for bit (checked by
:func:`capture_slice`). Input vectors are real tokens of corpus sentences.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from golden_models.codespace import check_integer
from golden_models.integer_layer import (
    IntegerLayer,
    accumulator_bound,
    threshold_table,
)
from golden_models.mask import Mask
from golden_models.mttfs import folded_init
from networks.bert import BertEncoder, Tokenizer
from toolkit_base.files import write_atomic

SCHEMA = "matterhorn.layer_slice/1"
#: Output neurons of a model's exported slice: one tile's worth (``matterhorn stats`` exports
#: it, ``matterhorn compare`` takes the same from a model).
SLICE_NEURONS = 16


@dataclass(frozen=True)
class LayerSlice:
    """A golden integer layer with real input vectors and the QNN's output codes.

    Parameters
    ----------
    layer : IntegerLayer
    q_in : int tensor ``[n_vectors, n_in]``
        Pre-mask input codes (one row per token).
    q_out : int tensor ``[n_vectors, n_out]``
        The QNN's pre-mask output codes of the sliced neurons for the same tokens.
    meta : dict
        Provenance: model, block, neuron range, scales, radius.
    """

    layer: IntegerLayer
    q_in: torch.Tensor
    q_out: torch.Tensor
    meta: dict


def _check_int(v: object, name: str, lo: int, hi: int) -> int:
    check_integer(name, v)
    if not lo <= v <= hi:
        raise ValueError(f"{name} must be in {lo}..{hi}, not {v!r}")
    return v


def capture_slice(
    qnn: BertEncoder,
    tokenizer: Tokenizer,
    sentences: Sequence[str],
    *,
    block: int = 0,
    n_out: int = 16,
    out_offset: int = 0,
    k: int = 0,
    max_vectors: int = 8,
    model: str = "all-MiniLM-L6-v2",
) -> LayerSlice:
    """Build the Q-projection slice of ``block`` and capture real vectors through the QNN.

    ``model`` is the name the slice's document gives the network (no path).

    Raises
    ------
    RuntimeError
        If the integer layer's output codes differ from the QNN's in any vector.
    """
    cfg = qnn.cfg
    _check_int(block, "block", 0, cfg.num_hidden_layers - 1)
    _check_int(n_out, "n_out", 1, cfg.hidden_size)
    _check_int(out_offset, "out_offset", 0, cfg.hidden_size - n_out)
    _check_int(max_vectors, "max_vectors", 1, 1 << 20)
    if not sentences:
        raise ValueError("capture_slice needs at least one sentence")
    layer = qnn.layers[block]
    p_in, p_out, lin = layer.points["q_proj_in"], layer.points["query"], layer.query
    if p_in.alpha is None or p_in.mask is None or p_out.mask is None or lin.w_int is None:
        raise ValueError("the QNN is not calibrated: convert it with networks.ptq")
    _check_int(k, "k", 0, p_in.space.T - 1)
    in_mask = Mask(p_in.space, p_in.mask.i_max, k)
    out_mask = Mask(p_out.space, p_out.mask.i_max, k)
    cols = slice(out_offset, out_offset + n_out)
    w = lin.w_int[cols].T.contiguous()  # [n_in, n_out]
    scale = lin.w_scale[cols] * p_in.alpha  # the same float64 product QLinear forms
    bias = lin.bias[cols].to(torch.float64)
    bound = accumulator_bound(w.shape[0], lin.weight_bits, p_in.space)
    theta = threshold_table(scale, bias, p_out.alpha, p_out.space, "round", (-bound, bound))
    ilayer = IntegerLayer(
        weights=w,
        weight_bits=lin.weight_bits,
        init=folded_init(w, in_mask.mu),
        theta=theta,
        in_mask=in_mask,
        out_mask=out_mask,
    )

    captured: dict[str, list[torch.Tensor]] = {"in": [], "out": []}

    def record(point, q, n_events):
        if point is p_in:
            captured["in"].append(q.reshape(-1, q.shape[-1]))
        elif point is p_out:  # [1, heads, S, dk] -> [S, hidden]
            captured["out"].append(q.transpose(1, 2).reshape(q.shape[2], -1))

    saved = {id(p): p.mask for p in qnn.spike_points()}
    for p in qnn.spike_points():
        p.mask = Mask(p.space, p.mask.i_max, k)
    p_in.recorder = p_out.recorder = record
    try:
        with torch.no_grad():
            for s in sentences:
                qnn(*tokenizer([s]))
                if sum(t.shape[0] for t in captured["in"]) >= max_vectors:
                    break
    finally:
        p_in.recorder = p_out.recorder = None
        for p in qnn.spike_points():
            p.mask = saved[id(p)]
    q_in = torch.cat(captured["in"])[:max_vectors]
    q_out = torch.cat(captured["out"])[:max_vectors, cols]
    for i in range(q_in.shape[0]):
        tau = ilayer.run_codes(q_in[i]).tau
        if not torch.equal(p_out.space.c - tau, q_out[i]):
            raise RuntimeError(f"the integer slice differs from the QNN at vector {i}")
    meta = {
        "model": model,
        "layer": f"block {block} Q projection",
        "input_position": "q_proj_in",
        "output_position": "query",
        "out_neurons": [out_offset, out_offset + n_out],
        "alpha_in": p_in.alpha,
        "alpha_out": p_out.alpha,
        "rounding": "round",
        "k": k,
    }
    return LayerSlice(ilayer, q_in, q_out, meta)


#: The corpus the slices of :func:`model_slice` are calibrated and captured on.
SLICE_CORPUS = "pydoc-topics"


def model_slice(
    model: str | Path = "minilm",
    *,
    n_out: int | None = None,
    k: int = 1,
    windows: int = 8,
    calibration: int = 6,
    block: int = 0,
    qnn: tuple[BertEncoder, Tokenizer] | None = None,
) -> LayerSlice:
    """The Q projection of ``block`` of a real model, with ``windows`` real token windows.

    The model (``"minilm"`` or a model folder, :func:`networks.hf_folder.resolve_model`) is
    converted post-training (:func:`networks.ptq.convert`) on the first ``calibration``
    sentences of the ``pydoc-topics`` corpus, unless ``qnn`` is given as ``(qnn, tokenizer)``;
    its first ``n_out`` output neurons (default: all, the model's hidden size) are sliced at
    radius ``k`` (:func:`capture_slice`) and captured on the tokens of the corpus's evaluation
    sentences.

    Raises
    ------
    FileNotFoundError
        The model is not installed or the folder does not exist.
    ValueError
        A model outside the family, or fewer tokens than ``windows``.
    """
    from networks.corpus import load_corpus
    from networks.hf_folder import SHIPPED, load_model, resolve_model

    _check_int(windows, "windows", 1, 1 << 20)
    _check_int(calibration, "calibration", 1, 1 << 16)
    corpus = load_corpus(SLICE_CORPUS)
    if qnn is None:
        from networks.ptq import convert

        source = resolve_model(model)
        float_model, tok = load_model(source)
        net, name = convert(float_model, tok, corpus.calibration[:calibration]), source.name
    else:
        (net, tok), name = qnn, SHIPPED.get(str(model), Path(model).name)
    hidden = net.cfg.hidden_size
    sl = capture_slice(net, tok, corpus.evaluation, block=block,
                       n_out=hidden if n_out is None else min(n_out, hidden), k=k,
                       max_vectors=windows, model=name)
    if sl.q_in.shape[0] < windows:
        raise ValueError(f"windows must be at most {sl.q_in.shape[0]} (the tokens of the "
                         f"corpus's evaluation sentences), not {windows}")
    return sl


def slice_document(sl: LayerSlice) -> dict:
    """JSON-ready description: parameters, masks, input vectors, expected events and codes."""
    L = sl.layer

    def mask_doc(m: Mask) -> dict:
        return {"T": m.T, "family": m.space.family, "i_max": m.i_max, "k": m.k}

    vectors = []
    for i in range(sl.q_in.shape[0]):
        res = L.run_codes(sl.q_in[i])
        vectors.append(
            {
                "q_in": [int(v) for v in sl.q_in[i]],
                "q_out": [int(v) for v in sl.q_out[i]],
                "tau_out": [int(v) for v in res.tau],
                "v": [int(v) for v in res.v],
                "out_events": [
                    [int(a), int(t)] for a, t in zip(res.out_index, res.out_time, strict=True)
                ],
                "counters": res.counters.as_dict(),
            }
        )
    return {
        "schema": SCHEMA,
        **sl.meta,
        "n_in": L.n_in,
        "n_out": L.n_out,
        "weight_bits": L.weight_bits,
        "weights": [[int(v) for v in row] for row in L.weights],
        "init": [int(v) for v in L.init],
        "theta": [[int(v) for v in row] for row in L.theta],
        "in_mask": mask_doc(L.in_mask),
        "out_mask": mask_doc(L.out_mask),
        "vectors": vectors,
    }


def export_slice(sl: LayerSlice, path: Path | str) -> Path:
    """Write :func:`slice_document` as deterministic JSON (temp file, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, json.dumps(slice_document(sl), indent=1) + "\n", prefix=".slice-")
    return path


def read_slice(path: Path | str) -> LayerSlice:
    """The slice of a ``matterhorn.layer_slice/1`` file (:func:`export_slice` writes one).

    The document is checked against its schema (``toolkit_base/schemas/layer_slice.json``),
    then as a layer: the sizes agree, the weights fit ``weight_bits``, the threshold tables
    and masks are valid, every input vector holds ``n_in`` codes of the input's code space,
    and a vector's ``q_out``, where given, is the layer's output for it. ``q_out`` of the
    result is the layer's output codes.

    Raises
    ------
    FileNotFoundError, IsADirectoryError
        No such file.
    ValueError
        Anything else; one line that names the file and what is wrong.
    """
    from golden_models.codespace import CodeSpace
    from golden_models.tensor_checks import check_codes
    from toolkit_base.jsonfile import read_json
    from toolkit_base.schemas import validate

    path = Path(path)
    doc = validate(read_json(path, "slice file"), "layer_slice", path.name)
    try:
        def mask(m: dict) -> Mask:
            return Mask(CodeSpace(m["T"], m["family"]), m["i_max"], m["k"])

        in_mask, out_mask = mask(doc["in_mask"]), mask(doc["out_mask"])
        n_in, n_out = doc["n_in"], doc["n_out"]
        weights, theta, init = doc["weights"], doc["theta"], doc["init"]
        if len(weights) != n_in or any(len(row) != n_out for row in weights):
            raise ValueError(f"field 'weights' must be {n_in} rows of {n_out} integers "
                             "(n_in x n_out)")
        if len(theta) != n_out or any(len(row) != out_mask.T - 1 for row in theta):
            raise ValueError(f"field 'theta' must be {n_out} rows of {out_mask.T - 1} "
                             "thresholds (n_out x T-1)")
        if len(init) != n_out:
            raise ValueError(f"field 'init' must hold {n_out} integers (n_out)")
        bound = 1 << 62  # beyond any accumulator of a real layer, within int64
        for name, values in (("weights", weights), ("theta", theta), ("init", [init])):
            if any(abs(v) > bound for row in values for v in row):
                raise ValueError(f"field {name!r} holds a value beyond +-2**62")
        layer = IntegerLayer(
            weights=torch.tensor(weights, dtype=torch.int64).reshape(n_in, n_out),
            weight_bits=doc["weight_bits"],
            init=torch.tensor(init, dtype=torch.int64),
            theta=torch.tensor(theta, dtype=torch.int64).reshape(n_out, out_mask.T - 1),
            in_mask=in_mask,
            out_mask=out_mask,
        )
        q_in, q_out = [], []
        for i, vector in enumerate(doc["vectors"]):
            codes = vector["q_in"]
            if len(codes) != n_in or any(abs(v) > in_mask.T for v in codes):
                raise ValueError(f"field 'vectors[{i}].q_in' must hold {n_in} codes of "
                                 f"{in_mask.space}")
            q = check_codes(torch.tensor(codes, dtype=torch.int64), in_mask.space,
                            f"field 'vectors[{i}].q_in'")
            out = out_mask.space.c - layer.run_codes(q).tau
            given = vector.get("q_out")
            if given is not None and given != [int(v) for v in out]:
                raise ValueError(f"field 'vectors[{i}].q_out' is not the layer's output for "
                                 "its q_in")
            q_in.append(q)
            q_out.append(out)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{path.name}: {' '.join(str(exc).split())}") from None
    meta = {key: doc[key] for key in ("model", "layer", "k") if key in doc}
    return LayerSlice(layer, torch.stack(q_in), torch.stack(q_out), meta)
