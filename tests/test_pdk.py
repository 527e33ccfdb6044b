"""PDKs as data (synth_scripts/gatelevel/pdks, docs/synth.md "Adding a PDK"): the tables and their
schema, how a liberty finds its table, what an unknown liberty gets, the one Liberty reader
(synth_scripts/gatelevel/liberty.py) and the one mapping script that synthesis, the whole system
and the gate-level netlists share."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from matterhorn.cli import main
from synth_scripts import flow, gatelevel, scaling
from synth_scripts.gatelevel import liberty, pdk
from toolkit_base.schemas import schema, validate

ROOT = Path(__file__).resolve().parent.parent
TABLES = ROOT / "synth_scripts" / "gatelevel" / "pdks"

# -- the tables ---------------------------------------------------------------------------------


def test_every_table_follows_the_schema():
    paths = sorted(TABLES.glob("*.json"))
    assert [p.stem for p in paths] == ["nangate45", "sky130hd"]
    for path in paths:
        validate(json.loads(path.read_text()), "pdk", path.name)
    assert set(pdk.tables()) == {"nangate45", "sky130hd"}
    with pytest.raises(ValueError, match=r"^PDK must be one of nangate45, sky130hd, not 'x'$"):
        pdk.table("x")


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["tie_cells"].pop("source"),
     "nangate45.json: field 'tie_cells.source' is missing"),
    (lambda d: d["scaling"].update(model="HP7"),
     ("nangate45.json: field 'scaling.model': 'HP7' is not one of ['130', '90', '65', 'HP45', "
     "'LP45', 'HP32', 'LP32', 'HP20', 'LP20']")),
    (lambda d: d["sram_bit"].update(pJ_per_bit=0),
     "nangate45.json: field 'sram_bit.pJ_per_bit': 0 is less than or equal to the minimum of 0"),
    (lambda d: d.update(name="nangate"),
     "nangate45.json: field 'name': 'nangate' is not the file's name 'nangate45'"),
    (lambda d: d.update(colour="blue"),
     ("nangate45.json: field '(document)': Additional properties are not allowed ('colour' was "
     "unexpected)")),
])
def test_a_malformed_table_is_refused(tmp_path, edit, message):
    doc = json.loads((TABLES / "nangate45.json").read_text())
    edit(doc)
    path = tmp_path / "nangate45.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ValueError) as info:
        pdk.load(path)
    assert str(info.value) == message


@pytest.mark.parametrize("name", ["nangate45", "sky130hd"])
def test_each_table_agrees_with_its_liberty(name, request):
    # supply, corner, dont-use patterns, and the tie and clock-gating cells the liberty's own
    # cells would give; sky130 through the shared fixture (skipped outside CI when missing)
    path = request.getfixturevalue({"nangate45": "nangate_lib", "sky130hd": "sky130_lib"}[name])
    lib = liberty.read(path)
    assert pdk.match(lib.name).name == name
    assert liberty.table_problems(pdk.table(name), lib) == []


def test_a_table_that_disagrees_with_its_liberty_is_caught(tmp_path, nangate_lib):
    doc = json.loads((TABLES / "nangate45.json").read_text())
    doc["supply_V"] = 1.0
    doc["dont_use"]["cells"] = ["*__lpflow_*"]  # a sky130 pattern: removes nothing here
    doc["tie_cells"]["high"]["pin"] = "ZN"
    doc["clock_gating_cell"]["cell"] = "CLKGATE_X2"  # exists, but not the smallest
    path = tmp_path / "nangate45.json"
    path.write_text(json.dumps(doc))
    assert liberty.table_problems(pdk.load(path), liberty.read(nangate_lib)) == [
        "supply_V 1.0 is not the liberty's nom_voltage 1.1",
        "dont_use pattern '*__lpflow_*' matches no cell",
        "the liberty lacks LOGIC1_X1 ZN (tie high)",
        "clock_gating_cell CLKGATE_X2 is not the liberty's own smallest CLKGATE_X1",
    ]


# -- matching -----------------------------------------------------------------------------------


def test_a_liberty_is_matched_by_its_library_name():
    assert pdk.match("NangateOpenCellLibrary").name == "nangate45"
    assert pdk.match("sky130_fd_sc_hd__tt_025C_1v80").name == "sky130hd"
    assert pdk.match("sky130_fd_sc_hd__ss_100C_1v60").name == "sky130hd"  # another corner
    assert pdk.match("sky130_fd_sc_hs__tt_025C_1v80").generic  # sky130, but not the HD cells
    assert pdk.match("acme45_tt") is pdk.GENERIC


def test_overlapping_tables_are_an_error(tmp_path):
    for name in ("one", "two"):
        doc = json.loads((TABLES / "nangate45.json").read_text())
        doc["name"] = name
        (tmp_path / f"{name}.json").write_text(json.dumps(doc))
    with pytest.raises(ValueError) as info:
        pdk.match("NangateOpenCellLibrary", folder=str(tmp_path))
    assert str(info.value) == ("liberty library 'NangateOpenCellLibrary' matches more than one "
                               "PDK table: one.json, two.json")


# -- a liberty no table describes ---------------------------------------------------------------


def _renamed(src: Path, dst: Path, library: str = "acme45_tt", strip: str | None = None) -> Path:
    """NanGate under another library name (no table matches it), optionally without the cells
    whose name matches ``strip``."""
    text = liberty.read_text(src).replace("library (NangateOpenCellLibrary)",
                                          f"library ({library})", 1)
    if strip is not None:
        lib = liberty.read(src)
        for name in lib.cells:
            if re.fullmatch(strip, name):
                a, b = lib.spans[name]
                text = text.replace(liberty.read_text(src)[a:b], "", 1)
    dst.write_text(text, encoding="utf-8")
    return dst


@pytest.fixture(scope="module")
def unknown_lib(tmp_path_factory, nangate_lib):
    return _renamed(nangate_lib, tmp_path_factory.mktemp("acme") / "acme.lib")


def test_an_unknown_liberty_gets_generic_defaults(unknown_lib, tmp_path):
    lib = liberty.prepare(unknown_lib, tmp_path)
    got = lib.pdk
    assert got.generic and got.name == "generic" and lib.removed == ()
    # found in the liberty: what the NanGate table names
    assert (got.tie_high, got.tie_low) == (("LOGIC1_X1", "Z"), ("LOGIC0_X1", "Z"))
    assert got.clock_gating_cell == "CLKGATE_X1"
    assert got.scaling is None and got.sram_bit is None and got.node_nm is None
    with pytest.raises(ValueError) as info:
        scaling.technology_of(lib.name)
    assert str(info.value) == (
        "no technology scaling is known for liberty library 'acme45_tt': no PDK table matches "
        "it (known: nangate45 (NangateOpenCellLibrary*), sky130hd (sky130_fd_sc_hd__*)); add "
        "one (docs/synth.md, 'Adding a PDK')")


def test_an_unknown_liberty_at_the_gate_level(unknown_lib, tmp_path):
    from amaranth.back import verilog
    from test_gatelevel import Counter, counter_trace

    from synth_scripts.gatelevel import energy as gate_energy

    trace, _ = counter_trace(cycles=60, idle_from=30)
    text = verilog.convert(Counter(), name="ctr", emit_src=False)
    net = gatelevel.map_netlist(text, "ctr", unknown_lib, tmp_path / "net")
    assert net.lib.pdk.generic
    tg = gatelevel.replay(net, trace, tmp_path / "run", sim="icarus")
    e = gate_energy.energy(net, tg, enable=[c < 30 for c in range(60)])
    assert e.icg == "CLKGATE_X1" and e.gated["total"] < e.free["total"]


def test_an_unknown_liberty_without_tie_cells(nangate_lib, tmp_path):
    lib = _renamed(nangate_lib, tmp_path / "notie.lib", strip=r"LOGIC[01]_X1")
    with pytest.raises(ValueError) as info:
        gatelevel.map_netlist("module m(input a, output y); assign y = a; endmodule\n", "m",
                              lib, tmp_path / "w")
    assert str(info.value) == ("liberty 'notie.lib' (library 'acme45_tt') has no tie cells for "
                               "constant nets: no cell without inputs drives a constant 1 and 0")


def test_a_known_liberty_without_its_tables_tie_cells(nangate_lib, tmp_path):
    # still NanGate by name, but the table's cells are gone: the table is not replaced by a guess
    text = liberty.read_text(nangate_lib)
    lib_data = liberty.read(nangate_lib)
    a, b = lib_data.spans["LOGIC1_X1"]
    path = tmp_path / "nohi.lib"
    path.write_text(text[:a] + text[b:])
    with pytest.raises(ValueError) as info:
        gatelevel.map_netlist("module m(input a, output y); assign y = a; endmodule\n", "m",
                              path, tmp_path / "w")
    assert str(info.value) == (
        "liberty 'nohi.lib' (library 'NangateOpenCellLibrary') has no tie cells for constant "
        "nets: it lacks LOGIC1_X1 Z (tie high) of its PDK table nangate45.json")


def test_synth_refuses_an_unknown_liberty_before_it_runs(unknown_lib, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["synth", "--T", "4", "--no-blocks", "--liberty", str(unknown_lib), "--out",
                 str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(
        "matterhorn synth: error: no technology scaling is known for liberty library "
        "'acme45_tt': no PDK table matches it")
    assert not out.exists() and not list(tmp_path.glob(".synth-*"))


# -- the one Liberty reader ---------------------------------------------------------------------

#: NanGate 45 nm values copied from the liberty by hand: (cell, what) -> value. The CK tables
#: are read at the transition 0.0409838 ns, a breakpoint (no interpolation), at no load.
HAND = {
    ("DFF_X1", "area"): 4.522,
    ("DFF_X1", "leakage"): 79.112308,
    ("DFF_X1", "ff"): True,
    ("DFF_X1", "clock_pin"): "CK",
    ("DFF_X1", "pin CK capacitance"): 0.949653,
    ("DFF_X1", "pin D capacitance"): 1.14029,
    ("DFF_X1", "pin Q function"): "IQ",
    ("DFF_X1", "pin CK rise"): [2.5383, 0.0, 0.0, 2.730149],
    ("DFF_X1", "pin CK fall"): [4.653631, 7.732922, 7.700613, 4.421492],
    ("INV_X1", "area"): 0.532,
    ("INV_X1", "leakage"): 14.353185,
    ("INV_X1", "pin A capacitance"): 1.70023,
    ("INV_X1", "pin ZN function"): "!A",
    ("LOGIC1_X1", "pin Z function"): "1",
    ("CLKGATE_X1", "icg"): "latch_posedge",
    ("CLKGATE_X1", "pin roles"): {"CK": "clock", "E": "enable", "GCK": "out"},
}


def _value(lib: liberty.Library, cell: str, what: str):
    c = lib.cells[cell]
    if what == "pin roles":
        return {n: p.gate_role for n, p in c.pins.items()}
    if what.startswith("pin "):
        _, pin, attr = what.split()
        p = c.pins[pin]
        if attr in ("rise", "fall"):
            return [t.at(0.0409838, 0.0) for t in getattr(p, attr)]
        return {"capacitance": p.cap, "function": p.function}[attr]
    return getattr(c, what)


def reader_problems(lib: liberty.Library) -> list[str]:
    """Where the reader's values differ from :data:`HAND`."""
    out = []
    for (cell, what), want in HAND.items():
        got = _value(lib, cell, what)
        if got != want:
            out.append(f"{cell} {what}: {got}, by hand {want}")
    return out


def test_the_reader_gives_the_values_copied_by_hand(nangate_lib):
    lib = liberty.read(nangate_lib)
    assert reader_problems(lib) == []
    assert (lib.nom_voltage, lib.cap_f, lib.time_s, lib.leak_w) == (1.1, 1e-15, 1e-9, 1e-9)
    assert lib.wire[:2] == (0.1774, 5.0) and lib.wire[2][0] == (1, 1.746)  # 5K_hvratio_1_1


@pytest.mark.parametrize("old, new, problem", [
    ("cell_leakage_power \t: 79.112308;", "cell_leakage_power \t: 79.112309;",
     "DFF_X1 leakage: 79.112309, by hand 79.112308"),
    ("capacitance\t\t: 0.949653;", "capacitance\t\t: 0.949654;",
     "DFF_X1 pin CK capacitance: 0.949654, by hand 0.949653"),
])
def test_a_planted_wrong_value_is_caught(nangate_lib, tmp_path, old, new, problem):
    text = liberty.read_text(nangate_lib)
    a, b = liberty.read(nangate_lib).spans["DFF_X1"]
    body = text[a:b]
    assert body.count(old) == 1, "the planted value must be the one copied by hand"
    path = tmp_path / "planted.lib"
    path.write_text(text[:a] + body.replace(old, new) + text[b:])
    assert reader_problems(liberty.read(path)) == [problem]


def test_the_reader_and_yosys_agree_on_areas(any_lib, tmp_path):
    # two independent readers of one file: Yosys' stat -liberty and ours, on a mapped design
    from synth_scripts import operators, run

    lib = liberty.prepare(any_lib, tmp_path / "lib")
    op = next(o for o in operators.operators(16, 1) if o.name == "mac4")
    d = tmp_path / op.top
    d.mkdir()
    shutil.copy(Path(operators.__file__).with_name("operators.v"), d / "operators.v")
    syn = flow.synthesize(op.top, run._operator_reads(op), d, lib)
    ours = sum(lib.library.cells[t].area * n for t, n in syn.mapped["cells_by_type"].items())
    assert ours == pytest.approx(syn.area_um2, rel=1e-6)
    assert syn.flops == sum(n for t, n in syn.mapped["cells_by_type"].items()
                            if lib.library.cells[t].ff) > 0


def test_the_reader_refuses_what_is_not_a_liberty(tmp_path):
    path = tmp_path / "x.lib"
    path.write_text("library (x) {\n cell (INV) {\n  pin (A) { direction : input; }\n")
    with pytest.raises(ValueError, match=r"^liberty 'x.lib' is truncated: its groups are not "
                                         r"closed$"):
        liberty.read(path)
    path.write_text("library (x) {\n cell (INV) {\n  pin (A) { direction : input; }\n }\n}\n")
    with pytest.raises(ValueError, match=r"^liberty 'x.lib' has no library attribute "
                                         r"'nom_voltage'$"):
        _ = liberty.read(path).nom_voltage


# -- the one mapping script ---------------------------------------------------------------------

_MAP = [line for line in flow.template(flow.MAP_SCRIPT).splitlines()
        if line.strip() and not line.startswith("#")]


def uses_the_mapping(script: str) -> bool:
    """``script`` runs the lines of ``map_liberty.ys`` in order, one after the other, and maps
    nowhere else (one ``dfflibmap`` and one ``abc``)."""
    lines = [ln for ln in script.splitlines() if ln.strip() and not ln.startswith("#")]
    pattern = [re.compile(re.escape(m).replace(re.escape("{liberty}"), r"\S+")
                          .replace(re.escape("{abc_script}"), r"(?:-script \S+ )?") + "$")
               for m in _MAP]
    starts = [i for i in range(len(lines) - len(_MAP) + 1)
              if all(p.match(lines[i + j]) for j, p in enumerate(pattern))]
    one = sum(ln.startswith("dfflibmap") for ln in lines) == 1 \
        and sum(ln.startswith("abc") for ln in lines) == 1
    return len(starts) == 1 and one


class _Stop(Exception):
    pass


def test_synthesis_system_and_gate_level_share_the_mapping_script(monkeypatch, tmp_path,
                                                                   nangate_lib):
    from rtl_gen.params import RTLConfig
    from synth_scripts import operators, run, system_area

    scripts = {}

    def spy(cmd, cwd, log, what):
        # record the script the tool would run, then stop before it runs (the runs themselves
        # are tested in test_synth_flow, test_synth_system and test_gatelevel)
        scripts[what] = (Path(cwd) / cmd[cmd.index("-s") + 1]).read_text()
        raise _Stop

    monkeypatch.setattr(flow, "run_tool", spy)
    lib = liberty.prepare(nangate_lib, tmp_path / "lib")
    op = next(o for o in operators.operators(4, 1) if o.name == "enc")
    (tmp_path / "op").mkdir()
    with pytest.raises(_Stop):
        flow.synthesize(op.top, run._operator_reads(op), tmp_path / "op", lib)
    with pytest.raises(_Stop):
        system_area.synthesize_system(
            RTLConfig(T=4, k=1, n_in=8, tile_neurons=2, mesh_rows=1, mesh_cols=2),
            tmp_path / "sys", liberty_file=nangate_lib)
    for no_fraig in (False, True):
        with pytest.raises(_Stop):
            gatelevel.map_netlist("module m(input clk, input a, output reg y);\n"
                                  "always @(posedge clk) y <= a;\nendmodule\n", "m",
                                  nangate_lib, tmp_path / f"gl{no_fraig}", no_fraig=no_fraig)
        scripts[f"yosys mapping m, no_fraig={no_fraig}"] = scripts.pop("yosys mapping m")
    assert sorted(scripts) == ["yosys mapping m, no_fraig=False", "yosys mapping m, no_fraig=True",
                               "yosys on mh_op_enc", "yosys on mttfs_system"]
    for what, text in scripts.items():
        assert uses_the_mapping(text), what
    # ABC's script without its equivalence steps, and only where asked
    assert [w for w, t in scripts.items() if "abc -script +strash;dc2;" in t] == [
        "yosys mapping m, no_fraig=True"]
    # a hand-written mapping (the system's before it shared the script) is told apart
    old = ("synth -top mttfs_system\ndfflibmap -liberty cells.lib\nabc -liberty cells.lib\n"
           "opt_clean -purge\ntee -q -o liberty_stat.txt stat -liberty cells.lib\n")
    assert not uses_the_mapping(old)
    assert not uses_the_mapping(scripts["yosys on mttfs_system"] + "abc -liberty cells.lib\n")


# -- the documentation --------------------------------------------------------------------------


def test_docs_describe_every_table_field():
    text = (ROOT / "docs" / "synth.md").read_text()
    section = text[text.index("## Adding a PDK"):]
    section = section[: section.index("\n## ", 3)] if "\n## " in section[3:] else section
    props = schema("pdk")["properties"]
    names = set(props)
    for p in props.values():
        names |= set(p.get("properties", {}))
    missing = sorted(n for n in names if f"`{n}`" not in section)
    assert missing == []
