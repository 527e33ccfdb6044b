"""The golden QNN exported to QONNX (networks.qonnx_export): the file loads in ``qonnx``, its
shapes infer, and its execution gives the golden QNN's codes at every position on a sentence
(a code may differ only where the golden ``x / alpha`` sits on a rounding edge, float32 against
float64) and its last hidden state; the export is deterministic and refuses what it cannot
write (docs/qonnx.md)."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("qonnx")
pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def qnn_and_sentence(tmp_path_factory):
    from networks.corpus import load_corpus
    from networks.hf_folder import load_model, resolve_model
    from networks.ptq import PTQConfig, convert
    from tests.test_user_model import write_bert_folder

    folder = write_bert_folder(tmp_path_factory.mktemp("q") / "tiny-bert")
    model, tok = load_model(resolve_model(str(folder)))
    data = load_corpus("pydoc-topics")
    torch.set_num_threads(1)
    qnn = convert(model, tok, data.calibration[:8], PTQConfig())
    ids, _ = tok([data.evaluation[0]])
    return qnn, ids, folder


def test_qonnx_execution_matches_the_golden_qnn(qnn_and_sentence, tmp_path):
    from qonnx.core.modelwrapper import ModelWrapper

    from networks.qonnx_export import compare_execution, export_qonnx, point_output

    qnn, ids, _ = qnn_and_sentence
    path = export_qonnx(qnn, tmp_path / "qnn.onnx", ids.shape[1])
    model = ModelWrapper(str(path))
    quants = [n for n in model.graph.node if n.op_type == "Quant"]
    # a block: eight spike positions, the key and value activations, six weight matrices
    assert len(quants) == 2 * (8 + 2 + 6)
    assert {n.output[0] for n in quants} >= {point_output(1, "attn_prob")}
    r = compare_execution(qnn, path, ids)
    assert r["codes"] > 50_000
    assert r["codes_differ"] == r["differ_at_edge"] <= r["codes"] // 10_000, r
    assert r["hidden_max_abs_diff"] < 1e-2, r


def test_a_wrong_scale_is_caught(qnn_and_sentence, tmp_path):
    """The comparison can fail: an export with one position's scale off by 1 %."""
    from networks.qonnx_export import compare_execution, export_qonnx

    qnn, ids, _ = qnn_and_sentence
    point = qnn.layers[0].points["ffn_expand_in"]
    alpha = point.alpha
    point.alpha = alpha * 1.01
    try:
        path = export_qonnx(qnn, tmp_path / "bad.onnx", ids.shape[1])
    finally:
        point.alpha = alpha
    r = compare_execution(qnn, path, ids)
    assert r["codes_differ"] > r["differ_at_edge"]


def test_export_is_deterministic_and_refuses_what_it_cannot_write(qnn_and_sentence, tmp_path):
    from networks.qonnx_export import export_qonnx

    qnn, ids, _ = qnn_and_sentence
    a = export_qonnx(qnn, tmp_path / "a.onnx", 8).read_bytes()
    assert a == export_qonnx(qnn, tmp_path / "b.onnx", 8).read_bytes()
    assert str(tmp_path).encode() not in a
    with pytest.raises(ValueError, match="seq_len must be in 1..64, not 65"):
        export_qonnx(qnn, tmp_path / "c.onnx", 65)
    qnn.integer = object()
    try:
        with pytest.raises(ValueError, match="the integer mode is not exported"):
            export_qonnx(qnn, tmp_path / "d.onnx", 8)
    finally:
        qnn.integer = None


def test_cli_qonnx_writes_the_model_and_its_check(qnn_and_sentence, tmp_path, capsys):
    import json

    from matterhorn.cli import main
    from toolkit_base.schemas import validate

    _, _, folder = qnn_and_sentence
    out = tmp_path / "q"
    code = main(["qonnx", "--model", str(folder), "--calibration", "4", "--out", str(out)])
    console = capsys.readouterr().out
    assert code == 0, console
    doc = validate(json.loads((out / "qonnx.json").read_text()), "qonnx_export", "qonnx.json")
    assert doc["model"] == "tiny-bert" and (out / doc["file"]).is_file()
    assert doc["check"]["codes_differ"] == doc["check"]["differ_at_edge"]
    assert "qonnx execution:" in console
