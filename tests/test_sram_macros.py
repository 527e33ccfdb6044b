"""SRAM macros (docs/sram_macros.md): the shipped table, the banking, the memories of the
designs, the pricing, the trimming of a real OpenRAM netlist, the liberty's leakage; the slow
test measures the smallest macro end to end and compares it with the shipped table."""

from __future__ import annotations

import json
import math

import pytest

from synth_scripts.gatelevel import liberty
from synth_scripts.sram import macros, pricing, shapes, table
from synth_scripts.sram.macros import MACRO_SHAPES, Shape
from synth_scripts.sram.shapes import MemoryShape, bank
from toolkit_base.schemas import validate
from toolkit_base.toolchain import ToolNotFoundError, require

# -- the shipped table -----------------------------------------------------------------------


def test_shipped_table_holds_every_macro_shape_with_its_provenance():
    tab = table.load()
    validate(tab.to_json(), "sram_macros", "freepdk45_macros.json")
    assert tab.shapes() == sorted(MACRO_SHAPES)
    for e in tab.macros:
        p = e["provenance"]
        assert p["openram_package"] == macros.OPENRAM
        assert p["openram"] == macros.OPENRAM.split("==")[1]
        assert p["ngspice"].startswith("ngspice-")
        assert p["models"] == [f"openram/technology/freepdk45/models/tran_models/models_nom/{f}"
                               for f in macros.MODEL_FILES]
        assert p["seconds_to_characterize"] > 0
        assert e["corner"] == "TT_1V_25C" == table.NOMINAL
        assert e["bench"] == {"vdd": 1.0, "temp": 25.0, "corner": "TT", "period_ns": 4.0,
                              "slew_ns": 0.05, "load_ff": 1.0}
        c = e["cycles_pJ"]
        # the summaries are the documented means of the measured cycles
        assert e["read_pJ"] == pytest.approx((c["read_toggle"] + c["read_hold"]) / 2, rel=1e-4)
        assert e["write_pJ"] == pytest.approx((c["write_same"] + c["write_flip"]) / 2, rel=1e-4)
        assert e["deselected_pJ"] == pytest.approx(
            (c["deselected_a"] + c["deselected_b"]) / 2, rel=1e-4)
        # an access costs more than a deselected cycle; flipping every bit more than none
        assert e["deselected_pJ"] < e["read_pJ"] and c["write_same"] < c["write_flip"]
        n = e["netlist"]
        assert n["trimmed"] and n["rows"] * n["columns"] == n["cells_simulated"] \
            + n["cells_trimmed"] == e["words"] * e["bits"]


def test_a_malformed_table_is_one_line(tmp_path):
    doc = table.load().to_json()
    bad = json.loads(json.dumps(doc))
    bad["macros"][0]["read_pJ"] = -1
    path = tmp_path / "t.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(ValueError, match=r"t\.json: field 'macros\[0\]\.read_pJ'"):
        table.load(path)
    del bad["macros"][0]["provenance"]
    with pytest.raises(ValueError, match="provenance"):
        validate(bad, "sram_macros", "t.json")


def test_a_missing_shape_names_the_command_that_measures_it():
    with pytest.raises(ValueError, match="matterhorn sram --shapes 32x32"):
        table.load().entry(Shape(32, 32))


def test_shapes_parse_and_refuse():
    assert Shape.parse(" 64x32 ") == Shape(64, 32)
    for text, msg in (("64", "WORDSxBITS"), ("12x32", "power of two >= 16"),
                      ("8x32", "power of two >= 16"), ("64x0", "positive")):
        with pytest.raises(ValueError, match=msg):
            Shape.parse(text)


# -- banking and the designs' memories ----------------------------------------------------------


@pytest.mark.parametrize(("words", "bits", "macro", "width", "depth"), [
    (1, 864, "16x32", 27, 1),
    (15, 864, "16x32", 27, 1),
    (16, 32, "16x32", 1, 1),
    (64, 64, "64x32", 2, 1),
    (256, 32, "256x32", 1, 1),
    (17, 32, "64x32", 1, 1),
    (32, 512, "64x32", 16, 1),
    (65, 33, "256x32", 2, 1),
    (384, 192, "256x32", 6, 2),
    (512, 14, "256x32", 1, 2),
    (1536, 192, "256x32", 6, 6),
])
def test_banking(words, bits, macro, width, depth):
    b = bank(MemoryShape("m", words, bits))
    assert (b.macro.name, b.width, b.depth) == (macro, width, depth)
    # the macros hold the memory, and one macro fewer in either direction would not
    assert b.width * b.macro.bits >= bits > (b.width - 1) * b.macro.bits
    assert b.depth * b.macro.words >= words > (b.depth - 1) * b.macro.words
    assert b.unused_bits == b.macros * b.macro.words * b.macro.bits - words * bits


def test_memories_are_read_from_the_generated_tile():
    from rtl_gen.params import RTLConfig
    from rtl_gen.tile import NeuronTile

    cfg = RTLConfig(T=16, k=1, weight_bits=4, n_in=24, tile_neurons=6, lanes=3)
    got = {m.path: m for m in shapes.memories(NeuronTile(cfg))}
    assert {p: (m.words, m.bits) for p, m in got.items()} == {
        "weights.mem": (cfg.n_in, cfg.weight_row_width),
        "thresholds.mem": (cfg.theta_depth, cfg.theta_row_width),
        "init.mem": (cfg.groups, cfg.init_row_width)}
    assert all(m.read_ports == m.write_ports == 1 and m.granularity is None
               for m in got.values())


def test_the_key_memory_writes_one_code_at_a_time():
    from rtl_gen.attn_params import AttentionConfig
    from rtl_gen.kv_tiles import ScoreTile

    cfg = AttentionConfig(heads=2, head_dim=4, seq_max=6, T=16)
    [m] = shapes.memories(ScoreTile(cfg))
    assert (m.words, m.bits, m.granularity) == (4, 6 * cfg.code_bits, cfg.code_bits)


# -- pricing -------------------------------------------------------------------------------------


def test_pricing_by_access():
    tab = table.load()
    mem = MemoryShape("weights.mem", 384, 192)  # 6 x 2 macros of 256x32
    e = tab.entry(Shape(256, 32))
    p = pricing.memory_energy(mem, reads=10, writes=3, idle_cycles=7, clock_ns=10.0, table=tab)
    assert (p.banking.width, p.banking.depth) == (6, 2)
    assert p.read == pytest.approx(10 * 6 * e["read_pJ"])
    assert p.write == pytest.approx(3 * 6 * e["write_pJ"])
    # the other bank's six macros on every access, all twelve on an idle cycle
    assert p.deselected == pytest.approx((13 * 6 + 7 * 12) * e["deselected_pJ"])
    assert p.leakage == pytest.approx(12 * e["leakage_uW"] * 1e-6 * 20 * 10e-9 * 1e12)
    gated = pricing.memory_energy(mem, reads=10, writes=3, idle_cycles=7, clock_ns=10.0,
                                  gated=True, table=tab)
    assert (gated.read, gated.write, gated.deselected) == (p.read, p.write, 0.0)
    assert gated.leakage == pytest.approx(p.leakage)
    longer = pricing.memory_energy(mem, reads=10, writes=3, cycles=40, clock_ns=10.0, table=tab)
    assert longer.deselected == pytest.approx(13 * 6 * e["deselected_pJ"])
    assert longer.leakage == pytest.approx(2 * p.leakage)
    key = MemoryShape("weights.mem", 32, 512, granularity=4)  # 16 macros of 64x32
    k = pricing.memory_energy(key, reads=0, granule_writes=5, clock_ns=1.0, table=tab)
    e64 = tab.entry(Shape(64, 32))
    assert k.write == pytest.approx(5 * e64["write_pJ"])
    assert k.deselected == pytest.approx(5 * 15 * e64["deselected_pJ"])


def test_pricing_refuses_bad_counts():
    mem = MemoryShape("m", 16, 32)
    for kw, msg in (({"reads": -1}, "reads must be"), ({"reads": 1.5}, "reads must be"),
                    ({"reads": 5, "cycles": 4}, "fewer than the accesses"),
                    ({"reads": 1, "granule_writes": 1}, "writes whole words")):
        with pytest.raises(ValueError, match=msg):
            pricing.memory_energy(mem, clock_ns=1.0, **kw)
    with pytest.raises(ValueError, match="clock_ns"):
        pricing.memory_energy(mem, reads=1, clock_ns=0)


def test_cross_check_ratios():
    rows = pricing.cross_check()
    assert [r["shape"] for r in rows] == [s.name for s in MACRO_SHAPES]
    # Horowitz's 45 nm bit at 0.9 V is 0.156 pJ; at 1.0 V and at NanGate's 1.1 V more
    assert 0.156 < rows[0]["horowitz_pJ_per_bit"] < rows[0]["horowitz_at_liberty_pJ_per_bit"]
    for r in rows:
        assert r["macro_over_horowitz"] == pytest.approx(
            r["read_pJ_per_bit"] / r["horowitz_pJ_per_bit"])
        assert r["macro_over_openram_analytical"] == pytest.approx(
            r["read_pJ_per_bit"] / r["openram_analytical_pJ_per_bit"])
    # a deeper macro's bit lines are longer: its read costs more a bit
    bits = [r["read_pJ_per_bit"] for r in rows]
    assert bits == sorted(bits)


# -- OpenRAM's netlist and its trimming ---------------------------------------------------------


@pytest.fixture(scope="module")
def macro16(tmp_path_factory):
    try:
        macros.openram_dir()
    except ToolNotFoundError as exc:
        from tests.conftest import missing

        missing(str(exc))
    return macros.generate(Shape(16, 32), tmp_path_factory.mktemp("openram"))


def test_openram_compiles_the_smallest_macro(macro16):
    assert (macro16.rows, macro16.columns, macro16.words_per_row) == (16, 32, 1)
    assert macro16.analytical["event_MHz"] == macros.EVENT_MHZ
    assert macro16.analytical["access_pJ"] > 0


def test_trimming_keeps_the_accessed_row_and_every_bit_line_load(macro16):
    text = macro16.netlist.read_text()
    small, counts = macros.trim(text, macro16.top, {15})
    assert counts == {"cells_kept": 32, "cells_trimmed": 15 * 32}
    assert small.count(" cell_1rw\n") < text.count(" cell_1rw\n")
    loads = [line.split() for line in small.splitlines() if line.startswith("Xload_")]
    # per column: the trimmed rows' access transistors on bl and on br, 15 each
    per_net: dict[str, int] = {}
    for f in loads:
        per_net[f[1]] = per_net.get(f[1], 0) + int(f[-1].removeprefix("mult="))
    assert len(per_net) == 64 and set(per_net.values()) == {15}
    # half the trimmed rows hold a 0, half a 1: each bit line sees both rails
    rails = {(f[1], f[2]): int(f[-1].removeprefix("mult=")) for f in loads}
    assert sorted({rails[("bl_0_0", r)] for r in ("gnd", "vdd")}) == [7, 8]
    # the kept row's cells are whole, no other row's is left in the array
    array = small[small.index(f".SUBCKT {macro16.top}_bitcell_array"):]
    array = array[:array.index(".ENDS")]
    assert [f"Xbit_r15_c{c}" for c in range(32)] == [
        line.split()[0] for line in array.splitlines() if line.startswith("Xbit_")]
    model, size = macros.access_transistor(text)
    assert model == "NMOS_VTG" and "W=135" in size


def test_missing_tools_name_their_package(monkeypatch):
    import importlib.util

    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ToolNotFoundError, match=r"apt-get install ngspice"):
        require("ngspice")
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "openram" else real(name, *a))
    with pytest.raises(ToolNotFoundError, match=r"pip install openram==1\.2\.48"):
        macros.openram_dir()


@pytest.mark.slow
def test_the_smallest_macro_measured_again_matches_the_table(tmp_path):
    """OpenRAM and ngspice end to end on 16 x 32 (about 10 minutes on two shared cores)."""
    from tests.conftest import missing

    try:
        macros.openram_dir()
        require("ngspice")
    except ToolNotFoundError as exc:
        missing(str(exc))
    new = table.regenerate([Shape(16, 32)], tmp_path / "t.json", tmp_path / "work")
    a, b = new.entry(Shape(16, 32)), table.load().entry(Shape(16, 32))
    for k in ("read_pJ", "write_pJ", "deselected_pJ", "leakage_uW"):
        assert math.isclose(a[k], b[k], rel_tol=0.02), (k, a[k], b[k])


# -- leakage from the liberty -------------------------------------------------------------------


def test_leakage_of_nangate_cells_by_hand(nangate_lib):
    lib = liberty.read(nangate_lib)
    # NanGate 45: INV_X1's states !A 10.102224 and A 18.604146 nW (cell_leakage_power 14.353185);
    # DFF_X1's cell_leakage_power 79.112308 nW
    w, how = liberty.cell_leakage(lib, "INV_X1")
    assert w == pytest.approx((10.102224 + 18.604146) / 2 * 1e-9) and how == "state mean of 2"
    assert w == pytest.approx(14.353185e-9, rel=1e-6)
    got = liberty.cells_leakage(lib, {"INV_X1": 3, "DFF_X1": 2})
    assert got["cells"]["DFF_X1"]["how"] == "state mean of 8"
    assert got["cells"]["DFF_X1"]["each_W"] == pytest.approx(79.112308e-9, rel=1e-6)
    assert got["total_W"] == pytest.approx(3 * 14.353185e-9 + 2 * 79.112308e-9, rel=1e-6)
    with pytest.raises(ValueError, match=r"no cell '\$_AND_'"):
        liberty.cells_leakage(lib, {"$_AND_": 1})


def test_leakage_of_sky130_cells_by_hand(sky130_lib):
    lib = liberty.read(sky130_lib)
    # sky130 HD tt: inv_1's states A 0.0104575 and !A 0.0001958 nW
    w, how = liberty.cell_leakage(lib, "sky130_fd_sc_hd__inv_1")
    assert w == pytest.approx((0.0104575 + 0.0001958) / 2 * 1e-9) and how == "state mean of 2"
    # dfxtp_1's eight CLK/D/Q states, and its cell_leakage_power 0.008438635 nW
    states = (0.009126, 0.0080516, 0.0084678, 0.0081494, 0.0092298, 0.0080467, 0.008041,
              0.0083967)
    w, how = liberty.cell_leakage(lib, "sky130_fd_sc_hd__dfxtp_1")
    assert w == pytest.approx(sum(states) / 8 * 1e-9) and how == "state mean of 8"
    assert w == pytest.approx(0.008438635e-9, rel=1e-5)


def test_the_command_shows_the_table_and_refuses_a_bad_shape(capsys):
    from matterhorn.cli import main

    assert main(["sram", "--show"]) == 0
    out = capsys.readouterr().out
    assert "| 256x32 | TT_1V_25C |" in out and "OpenRAM analytical pJ/bit" in out
    assert "| M-TTFS | score | weights.mem | 32x512 | 4 | 16 x 1 x 64x32 |" in out
    assert main(["sram", "--shapes", "64x31x2"]) == 2
    assert capsys.readouterr().err.strip() == (
        "matterhorn sram: error: a macro shape is WORDSxBITS (e.g. 64x32), not '64x31x2'")
