"""``mttfs_system`` synthesized with its hierarchy kept (synth_scripts/system_area.py): cells
and area per tile, router and the other instances, on Yosys and the NanGate 45 nm library."""

from __future__ import annotations

import json

import pytest

from matterhorn.cli import main
from rtl_gen.params import RTLConfig
from synth_scripts.system_area import SYSTEM_JSON, SYSTEM_MD, group, synthesize_system
from toolkit_base.schemas import validate

CFG = RTLConfig(T=4, k=1, n_in=8, tile_neurons=2, mesh_rows=2, mesh_cols=2)


@pytest.fixture(scope="module")
def mapped(tmp_path_factory, nangate_lib):
    out = tmp_path_factory.mktemp("system")
    return out, synthesize_system(CFG, out, liberty_file=nangate_lib)


def test_group_names_every_instance_kind():
    assert group("mttfs_system") == ("glue", "mttfs_system")
    assert group("mttfs_system.mesh") == ("glue", "mesh")
    assert group("mttfs_system.mesh.router_x1_y0.fifo_east.fifo") == ("router",
                                                                      "mesh.router_x1_y0")
    assert group("mttfs_system.tile_x0_y1.sram_w") == ("tile", "tile_x0_y1")
    assert group("mttfs_system.inject_x1_y1") == ("injector", "inject_x1_y1")
    with pytest.raises(ValueError, match="mttfs_system.widget"):
        group("mttfs_system.widget")


def test_area_per_instance_kind(mapped):
    out, doc = mapped
    validate(json.loads((out / SYSTEM_JSON).read_text()), "system_area", SYSTEM_JSON)
    for part in (doc["generic"], doc["mapped"]):
        assert part["tile"]["instances"] == 4 and part["router"]["instances"] == 4
        assert part["injector"]["instances"] == 4
        assert {"encoder", "config", "sequencer", "fork", "merge"} <= set(part)
        assert all(g["cells"] > 0 for g in part.values())
    m = doc["mapped"]
    # the instance areas add up to the top module's area (checked against Yosys's own total)
    assert sum(g["area"] for g in m.values()) == pytest.approx(doc["area_total"], rel=1e-4)
    for g in m.values():
        a = g["area_per_instance"]
        assert 0 < a["min"] <= a["mean"] <= a["max"]
    # corner routers of a 2x2 mesh differ only in which ports they have
    assert m["router"]["area_per_instance"]["max"] < 1.2 * m["router"]["area_per_instance"]["min"]
    text = (out / SYSTEM_MD).read_text()
    assert "| tile | 4 |" in text and str(out) not in text and "/" not in doc["liberty"]
    # nothing of the temporary work folder is left
    assert sorted(p.name for p in out.iterdir()) == [SYSTEM_JSON, SYSTEM_MD]


def test_mesh_option_is_checked(capsys):
    assert main(["synth", "--system", "2by2", "--out", "unused"]) == 2
    assert "--system must be ROWSxCOLS such as 2x2, not '2by2'" in capsys.readouterr().err
