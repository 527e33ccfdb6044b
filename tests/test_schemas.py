"""JSON schemas (toolkit_base/schemas): each writer's output validates; readers reject a
malformed document with a one-line error that names the failing field."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch
from jsonschema import Draft202012Validator

from golden_models.codespace import CodeSpace
from golden_models.export import read_layers, write_layers
from golden_models.qnn import random_qnn
from golden_models.statistics import PositionStats, read_stats, write_stats
from regression.cache import read_manifest
from regression.jobs import JobResult, job
from regression.summary import summarize, write_summary
from rtl_gen.block_map import BlockShape, place_block, read_document, write_document
from rtl_gen.generate import generate
from rtl_gen.params import RTLConfig
from synth_scripts import report
from toolkit_base.schemas import SCHEMAS, field_path, schema, validate


def read(path):
    return json.loads(path.read_text())


def check_rejected(path, edit, reader, message):
    """``edit`` a copy of the document at ``path``: ``reader`` must raise ``message``."""
    good = path.read_text()
    doc = json.loads(good)
    edit(doc)
    path.write_text(json.dumps(doc))
    try:
        with pytest.raises(ValueError) as info:
            reader(path)
    finally:
        path.write_text(good)
    assert str(info.value) == message


@pytest.mark.parametrize("name", SCHEMAS)
def test_schema_files_are_schemas(name):
    Draft202012Validator.check_schema(schema(name))


@pytest.mark.parametrize("name", SCHEMAS)
def test_schema_ids_follow_one_style(name):
    """Every document names its schema ``matterhorn.<schema file>/<version>`` (docs/design.md)."""
    doc = schema(name)
    prefix, _, version = doc["$id"].partition("/")
    assert prefix == f"matterhorn.{name}" and version.isdigit(), doc["$id"]
    assert doc["properties"]["schema"] == {"const": doc["$id"]}


def test_field_path():
    assert field_path(["jobs", 0, "sim"]) == "jobs[0].sim"
    assert field_path([]) == "(document)"


def test_unknown_schema():
    with pytest.raises(ValueError) as info:
        schema("nope")
    assert str(info.value).startswith("schema must be one of (")


def test_manifest(tmp_path):
    generate(RTLConfig(T=4, k=1, n_in=4, tile_neurons=2, mesh_rows=1, mesh_cols=2), tmp_path)
    path = tmp_path / "manifest.json"
    assert read_manifest(path)["schema"] == "matterhorn.rtl_manifest/1"
    check_rejected(
        path,
        lambda d: d["parameters"].update(family="odd"),
        read_manifest,
        "manifest.json: field 'parameters.family': 'odd' is not one of ['sym', 'asym']",
    )
    check_rejected(
        path,
        lambda d: d["counters"][1].pop("width"),
        read_manifest,
        "manifest.json: field 'counters[1].width' is missing",
    )


def test_golden_stats(tmp_path):
    space = CodeSpace(4, "sym")
    st = PositionStats.from_counts("x", torch.tensor([1, 5, 2, 0]), space, ks=(0, 1))
    path = tmp_path / "golden_stats.json"
    write_stats(path, [st])
    validate(read(path), "golden_stats", path.name)
    assert read_stats(path) == [st]
    check_rejected(
        path,
        lambda d: d.update(version=2),
        read_stats,
        "golden_stats.json: field 'version': 1 was expected",
    )


def test_golden_layers(tmp_path):
    chain = [(f"l{i}", layer) for i, layer in enumerate(
        random_qnn((6, 4, 3), T=4, k=1, seed=0).integer_layers())]
    path = tmp_path / "layers.json"
    write_layers(path, chain)
    validate(read(path), "golden_layers", path.name)
    check_rejected(
        path,
        lambda d: d["layers"][1].update(weight_bits="one"),
        read_layers,
        "layers.json: field 'layers[1].weight_bits': 'one' is not of type 'integer'",
    )


def test_regress_summary(tmp_path):
    j = job("encoder", "icarus", {"T": 4, "k": 0}, 1)
    r = JobResult(j, True, {"events": 10, "vectors": 2, "sim_seconds": 0.5})
    path = write_summary(summarize([r], 1.0, {"T": [4]}), tmp_path)
    doc = validate(read(path), "regress_summary", path.name)
    assert doc["jobs"][0]["sim"] == "icarus"
    doc["jobs"][0]["sim"] = "modelsim"
    with pytest.raises(ValueError) as info:
        validate(doc, "regress_summary", path.name)
    assert str(info.value) == (
        "regress_summary.json: field 'jobs[0].sim': 'modelsim' is not one of "
        "['icarus', 'verilator']"
    )


def test_flow_json(tmp_path):
    from matterhorn.report import write_summary as write_flow

    cfg = SimpleNamespace(T=4, k=1, sims=("icarus",), seed=0, clock_ns=10.0, liberty=None,
                          rates_file=None)
    result = SimpleNamespace(config=cfg, stages={"generate": {"status": "skipped"}})
    write_flow(result, tmp_path)
    doc = validate(read(tmp_path / "flow.json"), "flow", "flow.json")
    doc["stages"]["generate"].pop("status")
    with pytest.raises(ValueError) as info:
        validate(doc, "flow", "flow.json")
    assert str(info.value) == "flow.json: field 'stages.generate.status' is missing"
    assert doc["status"] == "complete"


def test_flow_json_running(tmp_path):
    from matterhorn.report import write_running

    cfg = SimpleNamespace(T=4, k=1, sims=("icarus",), seed=0, clock_ns=10.0, liberty=None,
                          rates_file=None)
    write_running(cfg, tmp_path)
    doc = validate(read(tmp_path / "flow.json"), "flow", "flow.json")
    assert (doc["status"], doc["stages"]) == ("running", {})
    doc["status"] = "ok"
    with pytest.raises(ValueError, match="field 'status'"):
        validate(doc, "flow", "flow.json")


def test_energy_report(tmp_path, capsys):
    from matterhorn.cli import main

    assert main(["energy", "--out", str(tmp_path)]) == 0
    capsys.readouterr()
    doc = validate(read(tmp_path / "energy_report.json"), "energy_report", "energy_report.json")
    doc["rates"] = []
    with pytest.raises(ValueError) as info:
        validate(doc, "energy_report", "energy_report.json")
    assert str(info.value) == "energy_report.json: field 'rates': [] is not of type 'object'"


def test_synth_report_reader(tmp_path):
    """The writer's output is validated by tests/test_synth_flow.py (report.load after a run);
    here a minimal document and a malformed cost."""
    doc = {
        "schema": report.SCHEMA,
        "parameters": {"T": 4, "k": 1, "clock_ns": 10.0},
        "tools": {"yosys": "Yosys 0.23"},
        "liberty": None,
        "operators": [],
        "blocks": [],
        "unit_costs_pJ": {"E_ACC4": {"value": 0.05, "unit": "pJ/op"}},
    }
    path = tmp_path / "synth_report.json"
    path.write_text(json.dumps(doc))
    assert report.load(path) == doc
    check_rejected(
        path,
        lambda d: d["unit_costs_pJ"]["E_ACC4"].update(value="x"),
        report.load,
        "synth_report.json: field 'unit_costs_pJ.E_ACC4.value': 'x' is not of type 'number'",
    )
    check_rejected(
        path,
        lambda d: d.update(schema="other"),
        report.load,
        "synth_report.json: field 'schema': 'matterhorn.synth_report/2' was expected",
    )


def test_block_placement(tmp_path):
    path = write_document(place_block(BlockShape(32, 2, 16, 64, 16, 8)), tmp_path / "block.json")
    doc = read_document(path)
    assert doc["schema"] == "matterhorn.block_placement/1"
    validate(doc, "block_placement", path.name)
    check_rejected(
        path,
        lambda d: d["mesh"].update(rows="six"),
        read_document,
        "block.json: field 'mesh.rows': 'six' is not of type 'integer'",
    )
    check_rejected(
        path,
        lambda d: d["nodes"][3]["routes"][0].pop("offset"),
        read_document,
        "block.json: field 'nodes[3].routes[0].offset' is missing",
    )
