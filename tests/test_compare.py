"""``matterhorn compare``: designs bit-exact at RTL, energy from gates, the report, bad input."""

from __future__ import annotations

import json

import pytest
import torch

from matterhorn import compare as C
from matterhorn.cli import main


@pytest.fixture(scope="module")
def small(tmp_path_factory, nangate_lib):
    """Two windows of the random workload on NanGate 45 nm (Icarus replays)."""
    out = tmp_path_factory.mktemp("compare") / "out"
    lines = []
    doc = C.compare(16, 1, out, liberties=[nangate_lib], windows=2, progress=lines.append)
    return {"doc": doc, "out": out, "lines": lines}


def test_report_shape(small):
    doc, out = small["doc"], small["out"]
    assert sorted(p.name for p in out.iterdir()) == ["compare.json", "compare.md", "compare.png"]
    on_disk = json.loads((out / "compare.json").read_text())
    assert on_disk == json.loads(json.dumps(doc))
    assert doc["schema"] == "matterhorn.compare/1"
    from toolkit_base.schemas import validate

    validate(on_disk, "compare", "compare.json")
    broken = json.loads(json.dumps(on_disk))
    broken["workloads"][0]["designs"][0]["design"] = "sparse"
    with pytest.raises(ValueError, match=r"compare.json: field 'workloads\[0\].designs\[0\]"):
        validate(broken, "compare", "compare.json")
    assert doc["pdk"] == "NangateOpenCellLibrary"
    wl = doc["workloads"][0]
    assert wl["name"] == "random" and wl["windows"] == 2
    assert [d["design"] for d in wl["designs"]] == list(C.DESIGNS)
    for d in wl["designs"]:
        g = d["energy_pJ"]["gates"]
        assert set(g) == {"sram", "compute", "movement", "idle", "total", "total_gated"}
        assert g["total"] == pytest.approx(g["sram"] + g["compute"] + g["movement"] + g["idle"],
                                           rel=1e-4)
        assert min(g["sram"], g["compute"], g["movement"]) > 0 and g["idle"] >= 0
        assert set(d["energy_pJ"]["model"]) == {"sram", "compute", "movement", "idle", "total"}
    dense = wl["designs"][0]
    assert dense["rel_dense"] == {"gates": 1.0, "gates_gated": 1.0, "model": 1.0}
    # the dense design reads every code; the spiking ones only their events
    assert dense["counters"]["codes_in"] == 64
    k1 = {d["design"]: d for d in wl["designs"]}["mttfs-k1"]
    assert k1["counters"]["events_in"] < k1["counters"]["weight_row_reads"] + 1 <= 65
    assert k1["events"] == k1["counters"]["events_in"]
    text = (out / "compare.md").read_text()
    assert "**Verdict:** in our gates, M-TTFS k=1 costs" in text
    assert "the paper reports 0.67x" in text
    assert "Not run: minilm" in text or "### minilm" in text
    for path in out.iterdir():
        if path.suffix != ".png":
            assert str(out) not in path.read_text() and "/tmp" not in path.read_text()


def test_spiking_rows_move_fewer_flits_than_ttfs(small):
    d = {x["design"]: x for x in small["doc"]["workloads"][0]["designs"]}
    assert d["mttfs-k2"]["flits"] <= d["mttfs-k1"]["flits"] <= d["mttfs-k0"]["flits"]
    assert d["mttfs-k0"]["flits"] < d["ttfs"]["flits"]
    assert d["dense"]["flits"] == 64 / 4  # 4 codes per dense flit at T = 16


def test_a_wrong_rtl_result_is_an_error(monkeypatch):
    import golden_models.dense as gd

    wl = C.random_workload(16, windows=1)
    real = gd.run_dense

    def off_by_one(layer, q):
        r = real(layer, q)
        codes = r.codes.clone()
        codes[0] = codes[0] - 1 if codes[0] > layer.out_mask.space.q_min else codes[0] + 1
        return gd.DenseResult(r.v, codes, r.counters)

    monkeypatch.setattr(gd, "run_dense", off_by_one)
    layer = C.design_layer(wl.layer, "dense")
    with pytest.raises(AssertionError, match="dense: window 0: RTL codes differ"):
        C.run_tile(layer, "dense", wl.codes)


def test_design_layers_share_weights_and_thresholds():
    wl = C.random_workload(16, windows=1)
    layers = {d: C.design_layer(wl.layer, d) for d in C.DESIGNS}
    for layer in layers.values():
        assert torch.equal(layer.weights, wl.layer.weights)
        assert torch.equal(layer.theta, wl.layer.theta)
    assert layers["mttfs-k2"].in_mask.k == 2 and layers["ttfs"].in_mask.i_max == 15


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--k", "3"], "k must be 0, 1 or 2 (the compared radii), not 3"),
        (["--windows", "0"], "windows must be in 1..256, not 0"),
        (["--liberty", "no/such.lib"], "liberty file 'no/such.lib' does not exist"),
        (["--slice", "no/such.json"], "slice file 'no/such.json' does not exist"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(args, message, tmp_path, capsys):
    out = tmp_path / "cmp"
    assert main(["compare", *args, "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1
    assert not out.exists()


def test_slice_round_trip_and_a_foreign_slice(tmp_path):
    from networks.rtl_slice import LayerSlice, export_slice

    wl = C.random_workload(16, windows=3)
    q_out = torch.zeros((3, wl.layer.n_out), dtype=torch.int64)
    path = export_slice(LayerSlice(wl.layer, wl.codes, q_out, {}), tmp_path / "s.json")
    back = C.read_slice(path)
    assert torch.equal(back.codes, wl.codes)
    for name in ("weights", "init", "theta"):
        assert torch.equal(getattr(back.layer, name), getattr(wl.layer, name)), name
    assert (back.layer.in_mask, back.layer.out_mask) == (wl.layer.in_mask, wl.layer.out_mask)
    doc = json.loads(path.read_text())
    doc["in_mask"]["family"] = "signed"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"s.json: field 'in_mask.family': 'signed' is not"):
        C.read_slice(path)
    path.write_text('{"schema": "other"}')
    with pytest.raises(ValueError, match="s.json: field 'n_in' is missing"):
        C.read_slice(path)
