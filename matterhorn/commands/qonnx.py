"""``matterhorn qonnx``: the golden QNN as a QONNX model (docs/qonnx.md)."""

from __future__ import annotations

import argparse

HELP = ("export the post-training QNN of a BERT-family model to QONNX (the format of FINN and "
        "Brevitas) and check its execution against the golden QNN on a sentence")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="minilm", metavar="minilm|FOLDER",
                        help="the shipped all-MiniLM-L6-v2 or a local model folder")
    parser.add_argument("--calibration", type=int, default=32,
                        help="calibration sentences of the post-training conversion")
    parser.add_argument("--no-check", action="store_true",
                        help="write the model only; no execution in qonnx")
    parser.add_argument("--out", default="build/qonnx", metavar="DIR",
                        help="folder of qnn.onnx and qonnx.json")


def run(args: argparse.Namespace) -> int:
    from networks.qonnx_export import export_model
    from toolkit_base import console

    if not args.no_check:
        import importlib.util

        if importlib.util.find_spec("qonnx") is None:
            raise ValueError("the check runs the model in qonnx, which is not installed: "
                             "pip install -e .[onnx], or give --no-check")
    doc = export_model(args.model, args.out, calibration=args.calibration,
                       check=not args.no_check)
    console.out(f"{doc['model']}: {doc['blocks']} blocks, {doc['quant_nodes']} Quant nodes, "
                f"{doc['seq_len']} tokens -> {args.out}/{doc['file']}")
    c = doc["check"]
    if c is not None:
        console.out(f"qonnx execution: {c['codes_equal']} of {c['codes']} codes equal the golden "
                    f"QNN's ({c['codes_differ']} differ, {c['differ_at_edge']} of them on a "
                    f"rounding edge); last hidden state within {c['hidden_max_abs_diff']:.2g}")
        return 0 if c["codes_differ"] == c["differ_at_edge"] else 1
    return 0
