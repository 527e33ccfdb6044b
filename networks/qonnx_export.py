"""The golden QNN as a QONNX graph: the format FINN and Brevitas share (docs/qonnx.md).

:func:`export_qonnx` writes the post-training (or fine-tuned) encoder of
:mod:`networks.bert` as an ONNX model whose quantizers are QONNX ``Quant`` nodes
(``qonnx.custom_op.general``): every activation position (:class:`networks.bert.QuantPoint`:
scale ``alpha``, ``log2 T`` bits, signed for ``sym``, unsigned for ``asym``), every weight
(per-output-channel scale, ``weight_bits`` bits, signed) and, for a network with a dead-zone
mask, the projection ``qbar = mu if |q - mu| <= k else q`` in standard ONNX operators. The rest
is standard ONNX (opset 17): the embeddings (``Gather``), ``LayerNormalization``, ``MatMul``,
``Softmax`` and the exact GELU (``Erf``).

Each ``Quant`` node's output is named ``block<b>.<position>`` (activations) or
``block<b>.<linear>.weight_q`` (weights), so a QONNX execution
(``qonnx.core.onnx_exec.execute_onnx(..., return_full_exec_context=True)``) gives every code
the golden QNN computes: ``round(output / alpha)``.

What is not the golden QNN's arithmetic, and so may differ from it:

- QONNX runs in float32 (a ``Quant`` node's output is float32); the golden QNN in float64.
  A code whose ``x / alpha`` lies within float32's rounding of a level's edge can differ by one
  (measured in docs/qonnx.md).
- Rounding: the golden QNN rounds ``floor(x + 1/2)``; QONNX's nearest mode is ``HALF_UP``
  (``sign(x) * floor(|x| + 1/2)``): the same but at negative exact halves.

Refused in one line: the integer mode (its integer softmax, LayerNorm and GELU table are no
ONNX operators), 1-bit weights (QONNX's ``BipolarQuant`` is not written here), a network
without calibrated scales.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

__all__ = ["DOMAIN", "OPSET", "SCHEMA", "compare_execution", "export_model", "export_qonnx",
           "point_output", "run_golden", "weight_output"]

#: The domain of QONNX's custom operators.
DOMAIN = "qonnx.custom_op.general"
#: The standard ONNX opset of the graph (LayerNormalization needs 17).
OPSET = 17


def point_output(block: int, position: str) -> str:
    """The name of the ``Quant`` output of activation ``position`` in ``block``."""
    return f"block{block}.{position}"


def weight_output(block: int, linear: str) -> str:
    """The name of the ``Quant`` output of ``linear``'s weights in ``block``."""
    return f"block{block}.{linear}.weight_q"


class _Graph:
    """Nodes and initializers under construction, with fresh names."""

    def __init__(self):
        self.nodes, self.inits, self._n = [], [], 0

    def name(self, hint: str) -> str:
        self._n += 1
        return f"{hint}_{self._n}"

    def const(self, value, hint: str, dtype=np.float32) -> str:
        from onnx import numpy_helper

        name = self.name(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(value, dtype=dtype), name))
        return name

    def op(self, op_type: str, inputs, hint: str, out: str | None = None, domain: str = "",
           **attrs) -> str:
        from onnx import helper

        out = out or self.name(hint)
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=out,
                                           domain=domain, **attrs))
        return out

    def quant(self, x: str, scale, bits: int, signed: bool, out: str) -> str:
        return self.op("Quant", [x, self.const(scale, "scale"), self.const(0.0, "zeropt"),
                                 self.const(float(bits), "bitwidth")], "quant", out=out,
                       domain=DOMAIN, signed=int(signed), narrow=0, rounding_mode="HALF_UP")


def _point(g: _Graph, point, x: str, out: str) -> str:
    """A :class:`networks.bert.QuantPoint`: smoothing, the quantizer, the dead-zone mask."""
    if point.alpha is None:
        raise ValueError(f"position {point.name} of block {point.block} has no scale: export "
                         "a converted QNN (networks.ptq.convert or a checkpoint)")
    if point.smooth is not None:
        x = g.op("Div", [x, g.const(point.smooth.numpy(), "smooth")], "smooth")
    space = point.space
    mask = point.mask
    target = out if mask is None or mask.k == 0 else None
    y = g.quant(x, float(point.alpha), space.n_bits, space.family == "sym",
                target or g.name("pre_mask"))
    if target is not None:
        return y
    # the dead-zone projection: qbar = mu if |q - mu| <= k else q, in dequantized values
    a, mu = float(point.alpha), mask.i_max
    q = g.op("Div", [y, g.const(a, "alpha")], "codes")
    dist = g.op("Abs", [g.op("Sub", [q, g.const(float(mu), "mu")], "off")], "dist")
    near = g.op("LessOrEqual", [dist, g.const(float(mask.k) + 0.5, "k")], "near")
    return g.op("Where", [near, g.const(mu * a, "mu_value"), y], "masked", out=out)


def _linear(g: _Graph, lin, x: str, block: int, name: str) -> str:
    """``x @ W.T + b`` with the integer weights behind a ``Quant`` node."""
    if lin.w_int is None:
        raise ValueError(f"block {block}'s {name} has float weights: export a converted QNN")
    if lin.weight_bits == 1:
        raise ValueError("1-bit weights are not exported (QONNX writes them as BipolarQuant, "
                         "which this exporter does not); convert with weight_bits >= 2")
    scale = lin.w_scale.numpy().astype(np.float64)
    w = (lin.w_int.numpy().astype(np.float64) * scale[:, None]).T  # [in, out]
    wq = g.quant(g.const(w, f"{name}_w"), scale[None, :], lin.weight_bits, True,
                 weight_output(block, name))
    return g.op("Add", [g.op("MatMul", [x, wq], f"{name}_mm"),
                        g.const(lin.bias.numpy(), f"{name}_b")], name)


def _layer_norm(g: _Graph, norm, x: str, hint: str) -> str:
    return g.op("LayerNormalization", [x, g.const(norm.weight.numpy(), f"{hint}_w"),
                                       g.const(norm.bias.numpy(), f"{hint}_b")], hint,
                axis=-1, epsilon=float(norm.eps))


def _block(g: _Graph, layer, x: str, b: int) -> str:
    cfg = layer.cfg
    nh, dk = cfg.num_attention_heads, cfg.head_dim
    pt = layer.points
    split = g.const([0, 0, nh, dk], "heads_shape", np.int64)

    def heads(t: str) -> str:
        return g.op("Transpose", [g.op("Reshape", [t, split], "split")], "heads",
                    perm=[0, 2, 1, 3])

    xq = _point(g, pt["q_proj_in"], x, point_output(b, "q_proj_in"))
    xk = _point(g, pt["k_proj_in"], x, point_output(b, "k_proj_in"))
    xv = _point(g, pt["v_proj_in"], x, point_output(b, "v_proj_in"))
    query = _point(g, pt["query"], heads(_linear(g, layer.query, xq, b, "query")),
                   point_output(b, "query"))
    key = _point(g, pt["key"], heads(_linear(g, layer.key, xk, b, "key")),
                 point_output(b, "key"))
    value = _point(g, pt["value"], heads(_linear(g, layer.value, xv, b, "value")),
                   point_output(b, "value"))
    scores = g.op("Div", [g.op("MatMul", [query, g.op("Transpose", [key], "keyT",
                                                      perm=[0, 1, 3, 2])], "qk"),
                          g.const(math.sqrt(dk), "sqrt_dk")], "scores")
    prob = _point(g, pt["attn_prob"], g.op("Softmax", [scores], "softmax", axis=-1),
                  point_output(b, "attn_prob"))
    ctx = g.op("Transpose", [g.op("MatMul", [prob, value], "ctx")], "merge", perm=[0, 2, 1, 3])
    ctx = g.op("Reshape", [ctx, g.const([0, 0, cfg.hidden_size], "merge_shape", np.int64)],
               "ctx_flat")
    ctx = _point(g, pt["attn_out_in"], ctx, point_output(b, "attn_out_in"))
    x = _layer_norm(g, layer.attn_norm,
                    g.op("Add", [x, _linear(g, layer.attn_out, ctx, b, "attn_out")], "res1"),
                    "attn_norm")
    xf = _point(g, pt["ffn_expand_in"], x, point_output(b, "ffn_expand_in"))
    pre = _linear(g, layer.ffn_expand, xf, b, "ffn_expand")
    # the exact GELU: x / 2 * (1 + erf(x / sqrt 2))
    erf = g.op("Erf", [g.op("Div", [pre, g.const(math.sqrt(2.0), "sqrt2")], "gelu_in")], "erf")
    mid = g.op("Mul", [g.op("Mul", [pre, g.const(0.5, "half")], "gelu_half"),
                       g.op("Add", [erf, g.const(1.0, "one")], "gelu_one")], "gelu")
    mid = _point(g, pt["ffn_contract_in"], mid, point_output(b, "ffn_contract_in"))
    return _layer_norm(g, layer.ffn_norm,
                       g.op("Add", [x, _linear(g, layer.ffn_contract, mid, b, "ffn_contract")],
                            "res2"), "ffn_norm")


def export_qonnx(qnn, path: str | os.PathLike, seq_len: int, *,
                 name: str = "matterhorn_qnn") -> Path:
    """Write ``qnn`` (a converted :class:`networks.bert.BertEncoder`) as a QONNX model at
    ``path``: input ``input_ids`` ``[1, seq_len]`` (int64, one sentence of ``seq_len``
    tokens, no padding: FINN's flows and QONNX's execution want static shapes), output
    ``last_hidden_state`` ``[1, seq_len, hidden]``. The file is written atomically and holds
    no path, date or producer version (same network, same bytes).

    Raises
    ------
    ValueError
        The integer mode, 1-bit weights, or a network without scales (one line).
    """
    import onnx
    from onnx import TensorProto, helper

    from toolkit_base.files import write_atomic

    if getattr(qnn, "integer", None) is not None:
        raise ValueError("the integer mode is not exported: its integer softmax, LayerNorm and "
                         "GELU table are no ONNX operators; export the float-non-linearity QNN")
    cfg = qnn.cfg
    from toolkit_base.checks import check_int

    check_int("seq_len", seq_len, 1, cfg.positions)
    g = _Graph()
    ids = "input_ids"
    pos = g.const(np.arange(seq_len) + cfg.position_offset, "positions", np.int64)
    x = g.op("Add", [
        g.op("Add", [g.op("Gather", [g.const(qnn.word_embeddings.weight.numpy(), "word"), ids],
                          "word_emb"),
                     g.op("Gather", [g.const(qnn.position_embeddings.weight.numpy(), "pos"),
                                     pos], "pos_emb")], "emb"),
        g.const(qnn.token_type_embeddings.weight[0].numpy(), "type0")], "emb_type")
    x = _layer_norm(g, qnn.embed_norm, x, "embed_norm")
    for b, layer in enumerate(qnn.layers):
        x = _block(g, layer, x, b)
    g.nodes.append(helper.make_node("Identity", [x], ["last_hidden_state"],
                                    name="last_hidden_state"))
    graph = helper.make_graph(
        g.nodes, name,
        [helper.make_tensor_value_info(ids, TensorProto.INT64, [1, seq_len])],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT,
                                       [1, seq_len, cfg.hidden_size])],
        initializer=g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid(DOMAIN, 1)],
                              producer_name="matterhorn")
    model.ir_version = 8
    onnx.checker.check_model(model)
    path = Path(path)
    write_atomic(path, model.SerializeToString())
    return path


def run_golden(qnn, input_ids):
    """The golden QNN on one sentence: every position's codes ``{(block, name): q}`` (after
    the mask, as the consumer sees them), every position's float input divided by its scale
    (``x / alpha``, where a code's rounding is decided) and the last hidden state."""
    import torch

    codes, levels = {}, {}

    def observe(point, x):
        if point.smooth is not None:
            x = x / point.smooth.to(x.dtype)
        levels[(point.block, point.name)] = (x / point.alpha).detach().clone()

    def emit(point, q):
        q_out = type(point).emit(point, q)
        codes[(point.block, point.name)] = q_out.clone()
        return q_out

    saved = [(p, p.observer, p.emit) for p in qnn.points()]
    try:
        for p in qnn.points():
            p.observer = observe
            p.emit = (lambda q, p=p: emit(p, q))
        with torch.no_grad():
            hidden = qnn(input_ids)
    finally:
        for p, observer, _ in saved:
            p.observer = observer
            del p.emit
    return codes, levels, hidden


def compare_execution(qnn, path: str | os.PathLike, input_ids) -> dict:
    """Execute the QONNX model at ``path`` in ``qonnx`` (its shapes inferred first, as a FINN
    flow does) on ``input_ids`` ``[1, S]`` and compare it with the golden QNN: every code of
    every position, and the last hidden state.

    Returns ``{"codes", "codes_equal", "codes_differ", "differ_at_edge", "hidden_max_abs_diff"}``:
    a code that differs counts as at an edge when the golden ``x / alpha`` lies within
    ``1e-4`` of a rounding edge (``n + 1/2``), where float32 and float64 may round apart.
    """
    from qonnx.core.modelwrapper import ModelWrapper
    from qonnx.core.onnx_exec import execute_onnx
    from qonnx.transformation.infer_shapes import InferShapes

    codes, levels, hidden = run_golden(qnn, input_ids)
    model = ModelWrapper(str(path)).transform(InferShapes())
    ctx = execute_onnx(model, {"input_ids": input_ids.numpy().astype(np.int64)},
                       return_full_exec_context=True)
    total = differ = edge = 0
    for (b, name), q in codes.items():
        alpha = qnn.layers[b].points[name].alpha
        got = np.round(ctx[point_output(b, name)].astype(np.float64) / alpha).astype(np.int64)
        want = q.numpy()
        bad = got != want
        total += want.size
        differ += int(bad.sum())
        level = levels[(b, name)].numpy()
        edge += int((bad & (np.abs(level - np.floor(level) - 0.5) < 1e-4)).sum())
    diff = np.abs(ctx["last_hidden_state"].astype(np.float64) - hidden.numpy())
    return {"codes": total, "codes_equal": total - differ, "codes_differ": differ,
            "differ_at_edge": edge, "hidden_max_abs_diff": float(diff.max())}


#: The schema id of ``qonnx.json``.
SCHEMA = "matterhorn.qonnx_export/1"


def export_model(model: str, out: str | os.PathLike, *, calibration: int = 32,
                 corpus: str = "pydoc-topics", check: bool = True) -> dict:
    """``matterhorn qonnx``: the post-training QNN of ``model`` (``minilm`` or a folder),
    calibrated on ``calibration`` sentences, written as ``qnn.onnx`` in ``out`` at the length
    of the corpus's first evaluation sentence, and ``qonnx.json`` saying what was written and,
    with ``check`` (``qonnx`` installed), how its QONNX execution compares with the golden
    QNN on that sentence. Returns the document."""
    import json

    from networks.corpus import load_corpus
    from networks.hf_folder import load_model, resolve_model
    from networks.ptq import PTQConfig, convert
    from toolkit_base.checks import check_int, check_out_writable
    from toolkit_base.files import write_atomic

    source = resolve_model(model)
    check_int("calibration", calibration, 1, 100_000)
    check_out_writable(out)
    data = load_corpus(corpus)
    float_model, tok = load_model(source)
    qnn = convert(float_model, tok, data.calibration[:calibration], PTQConfig())
    ids, _ = tok([data.evaluation[0]])
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = export_qonnx(qnn, out / "qnn.onnx", ids.shape[1], name=source.name)
    doc = {
        "schema": SCHEMA,
        "model": source.name,
        "file": path.name,
        "seq_len": int(ids.shape[1]),
        "blocks": len(qnn.layers),
        "quant_nodes": sum(1 for _ in qnn.points()) + 6 * len(qnn.layers),
        "rounding": "HALF_UP (the golden QNN: floor(x + 1/2); equal but at negative exact halves)",
        "calibration_sentences": min(calibration, len(data.calibration)),
        "check": compare_execution(qnn, path, ids) if check else None,
    }
    write_atomic(out / "qonnx.json", json.dumps(doc, indent=2) + "\n")
    return doc
