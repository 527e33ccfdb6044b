"""RTLConfig validation, `generate` (files, manifest, determinism, atomicity), Verilator lint."""

from __future__ import annotations

import gc
import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from golden_models import CodeSpace, accumulator_bound, signed_width
from matterhorn.cli import main
from rtl_gen import generate as gen
from rtl_gen.params import RTLConfig
from rtl_gen.verilog_text import collapse_zero_init

SMALL = RTLConfig(T=4, k=1, n_in=4, tile_neurons=3, lanes=2, mesh_rows=1, mesh_cols=2)


# -- RTLConfig ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"T": 12}, ValueError, r"^T must be a power of two 2\*\*n with n in 1\.\.6, not 12$"),
        ({"T": 128}, ValueError, r"^T must be in 2\.\.64, not 128$"),
        ({"T": 16.0}, TypeError, r"^T must be an integer, not 16\.0$"),
        ({"T": True}, TypeError, r"^T must be an integer, not True$"),
        ({"T": 4, "k": 4}, ValueError, r"^k must be in 0\.\.3, not 4$"),
        ({"family": "signed"}, ValueError,
         r"^family must be one of \('sym', 'asym'\), not 'signed'$"),
        ({"i_max_in": 16}, ValueError, r"^i_max_in must be in 0\.\.15, not 16$"),
        ({"i_max_out": -1}, ValueError, r"^i_max_out must be in 0\.\.15, not -1$"),
        ({"weight_bits": 9}, ValueError, r"^weight_bits must be in 1\.\.8, not 9$"),
        ({"n_in": 0}, ValueError, r"^n_in must be in 1\.\.4096, not 0$"),
        ({"tile_neurons": 257}, ValueError, r"^tile_neurons must be in 1\.\.256, not 257$"),
        ({"tile_neurons": 4, "lanes": 5}, ValueError, r"^lanes must be in 1\.\.4, not 5$"),
        ({"mesh_rows": 0}, ValueError, r"^mesh_rows must be in 1\.\.16, not 0$"),
        ({"mesh_cols": "2"}, TypeError, r"^mesh_cols must be an integer, not '2'$"),
        ({"sram_macro": "yes"}, TypeError, r"^sram_macro must be a bool, not 'yes'$"),
    ],
)
def test_config_rejects(kwargs, error, message):
    with pytest.raises(error, match=message):
        RTLConfig(**kwargs)


@pytest.mark.parametrize("family", ["sym", "asym"])
@pytest.mark.parametrize("weight_bits", [1, 4])
def test_config_derived_widths(family, weight_bits):
    cfg = RTLConfig(T=16, family=family, weight_bits=weight_bits, n_in=100, tile_neurons=10,
                    lanes=4)
    space = CodeSpace(16, family)
    bound = accumulator_bound(100, weight_bits, space)
    assert cfg.acc_bound == bound
    assert cfg.acc_width == signed_width(bound)
    # the bound is reached by the worst case and fits, one more would not be guaranteed
    assert -(1 << (cfg.acc_width - 1)) <= -bound and bound <= (1 << (cfg.acc_width - 1)) - 1
    w_max = 1 if weight_bits == 1 else 8
    assert cfg.init_bound + 100 * w_max * 15 == bound
    assert cfg.i_max_in == cfg.i_max_out == space.c
    assert (cfg.groups, cfg.theta_depth) == (3, 15 * 3)
    assert (cfg.in_addr_width, cfg.out_addr_width, cfg.time_width) == (7, 4, 4)


# -- generate ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("rtl")
    manifest = gen.generate(SMALL, out)
    return out, manifest


def verilog_ports(text: str, module: str) -> list[dict[str, object]]:
    """Ports of ``module`` as declared in Amaranth's Verilog (name, dir, width)."""
    start = text.index(f"\nmodule {module}(")
    body = text[start:text.index("endmodule", start)]
    header = re.search(r"module \S+\((.*?)\);", body, re.S).group(1)
    names = [n.strip() for n in header.split(",")]
    decl = {}
    for d, hi, name in re.findall(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\S+);", body, re.M):
        decl[name] = {"name": name, "dir": d[:-3] if d == "output" else "in",
                      "width": int(hi) + 1 if hi else 1}
    decl = {n: {**p, "dir": "out" if p["dir"] == "out" else "in"} for n, p in decl.items()}
    assert sorted(decl) == sorted(names)
    return [decl[n] for n in names]


def test_generate_writes_every_module(generated):
    out, manifest = generated
    assert manifest["schema"] == gen.SCHEMA
    assert list(manifest["modules"]) == list(gen.MODULES)
    for name in gen.MODULES:
        entry = manifest["modules"][name]
        assert set(entry) >= {"file", "sha256", "ports", "streams"}, name
        text = (out / entry["file"]).read_text()
        assert entry["file"] == f"{name}.v"
        assert entry["sha256"] == hashlib.sha256(text.encode()).hexdigest()
        assert f"\nmodule {name}(" in text
    on_disk = json.loads((out / gen.MANIFEST).read_text())
    assert on_disk == manifest
    assert sorted(p.name for p in out.iterdir()) == sorted(
        [f"{n}.v" for n in gen.MODULES] + [gen.MANIFEST] + _companions(manifest))


def test_generate_a_subset_is_the_same_verilog(generated, tmp_path):
    """``modules`` generates those and what their Verilog needs (an AXI wrapper's block), the
    same text as the whole set; the manifest lists only them; an unknown name is refused."""
    out, manifest = generated
    sub = gen.generate(SMALL, tmp_path / "sub", ["mttfs_axi_tile", "mttfs_encoder"])
    assert list(sub["modules"]) == ["mttfs_encoder", "mttfs_tile", "mttfs_axi_tile"]
    for name, entry in sub["modules"].items():
        assert entry == manifest["modules"][name]
        assert (tmp_path / "sub" / entry["file"]).read_text() == (out / entry["file"]).read_text()
    assert (tmp_path / "sub" / "mttfs_axi_tile.h").is_file()  # the wrapper's companions
    only = gen.generate(SMALL, tmp_path / "one", ["mttfs_router"])
    assert list(only["modules"]) == ["mttfs_router"]
    assert not (tmp_path / "one" / "mttfs_axi.rdl").exists()
    with pytest.raises(ValueError, match="module must be one of .*not 'tile'"):
        gen.generate(SMALL, tmp_path / "bad", ["tile"])
    with pytest.raises(ValueError, match="modules must name at least one module"):
        gen.generate(SMALL, tmp_path / "bad", [])
    assert not (tmp_path / "bad").exists()


def _companions(manifest) -> list[str]:
    """The FuseSoC cores, the AXI wrappers' C headers, drivers and register tables
    (docs/fusesoc.md), their AMBA shells and IP-XACT components (docs/rtl_axi.md)."""
    from rtl_gen.amba import amba_files
    from rtl_gen.axi import companion_files
    from rtl_gen.fusesoc import core_files, version

    return [*core_files(SMALL, manifest), *companion_files(SMALL),
            *amba_files(SMALL, manifest, version())]


def test_manifest_ports_match_verilog(generated):
    out, manifest = generated
    for name, entry in manifest["modules"].items():
        text = (out / entry["file"]).read_text()
        declared = verilog_ports(text, name)
        assert sorted(declared, key=lambda p: p["name"]) == sorted(
            entry["ports"], key=lambda p: p["name"]), name


def test_manifest_stream_fields(generated):
    out, manifest = generated
    ports = {p["name"]: p for p in manifest["modules"]["mttfs_tile"]["ports"]}
    streams = manifest["modules"]["mttfs_tile"]["streams"]
    assert {n: s["direction"] for n, s in streams.items()} == {"load": "in", "i": "in", "o": "out"}
    for name, s in streams.items():
        assert ports[f"{name}__payload"]["width"] == s["payload_width"]
        offset = 0
        for f in s["fields"]:
            assert f["offset"] == offset
            offset += f["width"]
        assert offset == s["payload_width"]
    fields = {f["name"]: f for f in streams["i"]["fields"]}
    assert [f["name"] for f in streams["i"]["fields"]] == ["addr", "tau", "last"]
    assert fields["tau"] == {"name": "tau", "offset": SMALL.in_addr_width,
                             "width": SMALL.time_width, "signed": False}
    assert [f["name"] for f in streams["o"]["fields"]] == ["addr", "t", "last"]
    assert [f["name"] for f in streams["load"]["fields"]] == ["target", "addr", "data"]
    enc = manifest["modules"]["mttfs_encoder"]["streams"]
    assert enc["o"]["fields"] == streams["i"]["fields"]  # the encoder feeds a tile directly
    assert enc["i"]["fields"] == [{"name": "q", "offset": 0, "width": 2, "signed": True}]


def test_manifest_counters_and_bound(generated):
    _, manifest = generated
    tile = manifest["modules"]["mttfs_tile"]
    ports = {p["name"]: p for p in tile["ports"]}
    names = [c["name"] for c in tile["counters"]]
    assert names == ["events_in", "weight_row_reads", "accumulate_ops", "compare_ops",
                     "threshold_reads", "events_out", "events_suppressed"]
    for c in tile["counters"]:
        assert ports[c["port"]] == {"name": c["port"], "dir": "out", "width": c["width"]}
        assert c["counts"]
    assert manifest["counters"] == tile["counters"]
    d = manifest["derived"]
    assert d["acc_bound"] == SMALL.acc_bound
    assert d["acc_width"] == signed_width(d["acc_bound"])
    assert manifest["parameters"]["T"] == 4 and manifest["parameters"]["lanes"] == 2
    assert manifest["sram_images"]["thresholds"]["depth"] == 3 * 2
    assert manifest["load_protocol"]["targets"] == {"weights": 0, "thresholds": 1, "init": 2,
                                                    "config": 3}


def test_generate_is_deterministic_and_path_free(generated, tmp_path):
    out, _ = generated
    other = tmp_path / "again"
    gen.generate(SMALL, other)
    for f in out.iterdir():
        assert (other / f.name).read_bytes() == f.read_bytes(), f.name
        text = f.read_text()
        assert str(out) not in text and str(Path.cwd()) not in text
        assert "/work" not in text and "/tmp" not in text


def test_generate_replaces_only_its_own_files(tmp_path):
    out = tmp_path / "rtl"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "mttfs_tile.v").write_text("stale")
    (out / "mttfs_sram_macro.v").write_text("stale macro model")
    gen.generate(SMALL, out, ["mttfs_tile"])
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "mttfs_tile.v").read_text().startswith("/* Generated by Amaranth")
    assert not (out / "mttfs_sram_macro.v").exists()  # own file of a block not generated now
    assert not [p for p in out.iterdir() if p.name.startswith(".rtl_gen-")]


def test_generate_rejects_before_writing(tmp_path):
    out = tmp_path / "never"
    with pytest.raises(TypeError, match=r"^config must be an RTLConfig, not \{'T': 16\}$"):
        gen.generate({"T": 16}, out)
    assert not out.exists()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"exists and is not a directory$"):
        gen.generate(SMALL, tmp_path / "file")


@pytest.mark.filterwarnings("ignore::amaranth.hdl.UnusedElaboratable")
def test_failed_elaboration_leaves_no_output(tmp_path, monkeypatch):
    out = tmp_path / "rtl"
    out.mkdir()
    (out / "mttfs_tile.v").write_text("previous")
    from amaranth.back import verilog

    real = verilog.convert
    calls = []

    def failing(component, **kw):
        calls.append(kw["name"])
        if kw["name"] == "mttfs_tile":
            raise RuntimeError("elaboration failed")
        return real(component, **kw)

    monkeypatch.setattr(verilog, "convert", failing)
    with pytest.raises(RuntimeError, match="elaboration failed"):
        gen.generate(SMALL, out)
    assert calls[-1] == "mttfs_tile"
    assert sorted(p.name for p in out.iterdir()) == ["mttfs_tile.v"]
    assert (out / "mttfs_tile.v").read_text() == "previous"
    gc.collect()  # the components that were never converted warn when collected


_ZERO_ROWS = "".join(f"    mem[{i}] = 8'h00;\n" for i in range(6))


@pytest.mark.parametrize(
    "body, collapsed",
    [
        (_ZERO_ROWS, True),
        (_ZERO_ROWS.replace("mem[3] = 8'h00", "mem[3] = 8'h01"), False),  # a non-zero word
        (_ZERO_ROWS.replace("mem[3]", "mem[4]"), False),  # words out of order
        (_ZERO_ROWS.replace("    mem[5]", "    other[5]"), False),  # two memories
        (_ZERO_ROWS[: _ZERO_ROWS.index("    mem[3]")], False),  # too short to gain
        (_ZERO_ROWS + "    x = 1'h0;\n", False),  # another statement
    ],
)
def test_collapse_zero_init(body, collapsed):
    text = f"module m;\n  reg [7:0] mem [5:0];\n  initial begin\n{body}  end\nendmodule\n"
    out = collapse_zero_init(text)
    if not collapsed:
        assert out == text
        return
    assert out == ("module m;\n  reg [7:0] mem [5:0];\n  initial begin : zero_init_1\n"
                   "    integer zero_init_i;\n"
                   "    for (zero_init_i = 0; zero_init_i < 6; zero_init_i = zero_init_i + 1)\n"
                   "      mem[zero_init_i] = 8'h0;\n"
                   "  end\nendmodule\n")


def test_generate_at_the_largest_n_in_is_under_a_megabyte(tmp_path):
    """Every memory's zero contents are one loop: the modules ``n_in`` sizes (the linear blocks
    and their AXI wrappers) stay under 1 MB at ``n_in = 4096`` (0.91 MB; the linear blocks were
    1.66 MB with a row per word), and everything lints clean."""
    # the units and the attention path are sized by their own parameters, not by n_in
    own_sizes = {"mttfs_softmax", "mttfs_add_norm", "mttfs_attn_softmax", "mttfs_attention"}
    sized = [m for m in gen.MODULES if m not in own_sizes]
    manifest = gen.generate(RTLConfig(n_in=4096), tmp_path, sized)
    assert list(manifest["modules"]) == sized
    size = sum((tmp_path / e["file"]).stat().st_size for e in manifest["modules"].values())
    assert size < 1_000_000, size
    assert "zero_init_" in (tmp_path / "mttfs_encoder.v").read_text()
    assert list(gen.lint(tmp_path, manifest)) == sized


def test_generate_sram_macro(tmp_path):
    cfg = RTLConfig(T=2, k=0, n_in=3, tile_neurons=2, mesh_rows=1, mesh_cols=1, sram_macro=True)
    manifest = gen.generate(cfg, tmp_path, ["mttfs_sram", "mttfs_tile"])
    assert manifest["modules"]["mttfs_sram"]["sram"]["macro"] is True
    model = (tmp_path / "mttfs_sram_macro.v").read_text()
    assert manifest["sram_macro_model"]["sha256"] == hashlib.sha256(model.encode()).hexdigest()
    assert "mttfs_sram_macro #(" in (tmp_path / "mttfs_tile.v").read_text()
    # the blocks that instantiate the macro lint clean against the behavioural model
    mine = {n: manifest["modules"][n] for n in ("mttfs_sram", "mttfs_tile")}
    assert list(gen.lint(tmp_path, {**manifest, "modules": mine})) == list(mine)


# -- lint --------------------------------------------------------------------------------------


@pytest.mark.parametrize("module", gen.MODULES)
def test_verilator_lint(generated, module):
    out, manifest = generated
    entry = manifest["modules"][module]
    report = gen.lint(out, {**manifest, "modules": {module: entry}})
    assert list(report) == [module]


def test_lint_fails_on_a_real_warning(tmp_path):
    manifest = {"modules": {"bad": {"file": "bad.v"}}}
    (tmp_path / "bad.v").write_text(
        "module bad(input wire [3:0] a, output wire [1:0] y);\n  assign y = a;\nendmodule\n")
    assert list(gen.lint(tmp_path, manifest)) == ["bad"]  # WIDTHTRUNC is waived
    # an undriven output bit is not
    (tmp_path / "bad.v").write_text(
        "module bad(input wire a, output wire [1:0] y);\n  assign y[0] = a;\nendmodule\n")
    with pytest.raises(RuntimeError, match=r"^verilator lint of bad failed:\n"):
        gen.lint(tmp_path, manifest)


# -- several configurations in one design (--prefix) ------------------------------------------


def _soc(tops: dict[str, list[dict]]) -> str:
    """A user's top that instantiates every module of ``tops`` (module -> manifest ports),
    each port wired to a port of its own, so the top itself lints clean."""
    decl, insts = [], []
    for n, (module, ports) in enumerate(tops.items()):
        conns = []
        for p in ports:
            net = f"u{n}_{p['name']}"
            rng = f"[{p['width'] - 1}:0] " if p["width"] > 1 else ""
            decl.append(f"  {'input' if p['dir'] == 'in' else 'output'} wire {rng}{net}")
            conns.append(f"    .{p['name']}({net})")
        insts.append(f"  {module} u{n} (\n" + ",\n".join(conns) + "\n  );\n")
    return "module soc (\n" + ",\n".join(decl) + "\n);\n" + "".join(insts) + "endmodule\n"


def _lint_together(out: Path, manifests: list[dict], tops: list[str]):
    """One ``verilator --lint-only -Wall`` run of ``soc`` over every file of ``manifests``
    and the cores' ``.vlt`` waivers (no other flag)."""
    from toolkit_base.toolchain import require, setup_verilator_env

    setup_verilator_env()
    files, vlts, ports = [], [], {}
    for m in manifests:
        for name, entry in m["modules"].items():
            files.append(str(out / entry["file"]))
            vlts.append(str(out / f"{name}.vlt"))
            if name in tops:
                ports[name] = entry["ports"]
    (out / "soc.v").write_text(_soc(ports))
    return subprocess.run([require("verilator"), "--lint-only", "-Wall", "--top-module", "soc",
                           *vlts, str(out / "soc.v"), *files], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, check=False)


def test_two_configurations_lint_together(tmp_path):
    """A T = 4 and a T = 8 AXI tile (and their tiles) in one Verilator run: with a prefix each,
    every module name is unique and the run is clean under -Wall with the cores' waivers; the
    same two sets without prefixes fail on MODDUP."""
    t8 = RTLConfig(**{**SMALL.as_dict(), "T": 8})
    both = []
    for prefix, cfg in (("t4_", SMALL), ("t8_", t8)):
        both.append(gen.generate(cfg, tmp_path / "p", ["mttfs_axi_tile"], prefix=prefix))
    assert sorted(both[0]["modules"]) == ["t4_mttfs_axi_tile", "t4_mttfs_tile"]
    assert (tmp_path / "p" / "t8_manifest.json").is_file()
    text = (tmp_path / "p" / "t8_mttfs_axi_tile.v").read_text()
    assert "\nmodule t8_mttfs_axi_tile(" in text and "  t8_mttfs_tile block (" in text
    assert "\nmodule \\t8_mttfs_axi_tile.shell " in text
    proc = _lint_together(tmp_path / "p", both, ["t4_mttfs_axi_tile", "t8_mttfs_axi_tile"])
    assert proc.returncode == 0, proc.stderr[-3000:]

    # the same two sets without prefixes: one module name twice
    files = []
    for d, cfg in (("a", SMALL), ("b", t8)):
        m = gen.generate(cfg, tmp_path / d, ["mttfs_axi_tile"])
        files += [str(tmp_path / d / e["file"]) for e in m["modules"].values()]
    from toolkit_base.toolchain import require

    proc = subprocess.run([require("verilator"), "--lint-only", "-Wall", "--top-module",
                           "mttfs_axi_tile", *files], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, check=False)
    assert proc.returncode != 0 and "MODDUP" in proc.stderr


def test_prefix_is_checked_and_changes_nothing_else(tmp_path):
    with pytest.raises(ValueError, match="prefix must be letters, digits and _ not starting "
                       "with a digit .*, not '8x'"):
        gen.generate(SMALL, tmp_path, prefix="8x")
    assert not list(tmp_path.iterdir())
    a = gen.prefix_modules({"x.v": "module top(a);\n  top_sub u (.a(a));\nendmodule\n"
                            "module top_sub(a);\nendmodule\n"}, "p_")
    assert a["x.v"] == ("module p_top(a);\n  p_top_sub u (.a(a));\nendmodule\n"
                        "module p_top_sub(a);\nendmodule\n")


# -- command -----------------------------------------------------------------------------------


def test_cli_generate(tmp_path, capsys):
    out = tmp_path / "cli"
    rc = main(["generate", "--T", "4", "--k", "0", "--tile-neurons", "2", "--n-in", "3",
               "--mesh", "1x2", "--i-max", "1", "2", "--family", "asym", "--weight-bits", "2",
               "--module", "mttfs_encoder", "--module", "mttfs_tile", "--out", str(out)])
    assert rc == 0
    manifest = json.loads((out / "manifest.json").read_text())
    p = manifest["parameters"]
    assert (p["T"], p["k"], p["tile_neurons"], p["n_in"], p["mesh_rows"], p["mesh_cols"]) == (
        4, 0, 2, 3, 1, 2)
    assert (p["i_max_in"], p["i_max_out"], p["family"], p["weight_bits"]) == (1, 2, "asym", 2)
    assert list(manifest["modules"]) == ["mttfs_encoder", "mttfs_tile"]
    assert "accumulator:" in capsys.readouterr().out


def test_cli_generate_bad_parameter_writes_nothing(tmp_path, capsys):
    out = tmp_path / "cli"
    assert main(["generate", "--T", "12", "--out", str(out)]) == 2
    assert "T must be a power of two" in capsys.readouterr().err
    assert not out.exists()
