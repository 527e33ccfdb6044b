"""Parsers on real Yosys/OpenSTA output, malformed and truncated reports, missing tools, bad input.

The tool outputs are produced here by running Yosys and OpenSTA on the encoder operator mapped
to the default NanGate 45 nm liberty; the sky130 HD liberty of ../shared/pdk (the test copy; the
product never needs it) is used where a test needs sky130 itself.
"""

from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from synth_scripts import activity, flow, operators, parse, run
from synth_scripts.gatelevel import liberty
from toolkit_base import toolchain


def test_the_test_liberties_are_there(nangate_lib, sky130_lib):
    assert nangate_lib.is_file() and sky130_lib.is_file()


@pytest.fixture(scope="module")
def mapped(tmp_path_factory, nangate_lib):
    """The encoder operator through Yosys (generic + liberty) and OpenSTA, in a temp dir."""
    work = tmp_path_factory.mktemp("enc").resolve()
    lib = liberty.prepare(nangate_lib, work)
    op = next(o for o in operators.operators(16, 1) if o.name == "enc")
    d = work / op.top
    d.mkdir()
    shutil.copy(Path(operators.__file__).with_name("operators.v"), d / "operators.v")
    syn = flow.synthesize(op.top, run._operator_reads(op), d, lib)
    q = activity.operand_streams(16, 1, operators.LINEAR_FAN_IN)["enc"]["q"]
    acts = flow.activity_commands({"q": activity.bit_activity(q, 4)})
    pw = flow.power(op.top, syn.netlist, acts, lib, 10.0, work / "sta")
    return {"lib": lib, "op": op, "syn": syn, "power": pw, "dir": d, "sta": work / "sta"}


def test_yosys_outputs_parse(mapped):
    syn, lib = mapped["syn"], mapped["lib"]
    g = syn.generic
    assert g["cells"] == sum(g["cells_by_type"].values()) > 0
    assert g["transistors"] > 0 and not g["transistors_lower_bound"]
    assert all(c.startswith("$_") for c in g["cells_by_type"])
    assert g["cells_by_type"]["$_DFF_P_"] == 4 + 4 + 1  # q_r, tau, valid
    assert syn.depth > 0
    assert syn.area_um2 > 0
    cells = syn.mapped["cells_by_type"]
    assert set(cells) <= set(lib.outputs), "mapped onto cells outside the working liberty"
    assert not any("lpflow" in c for c in cells)
    assert syn.flops == 9


def test_opensta_output_parses(mapped):
    p = mapped["power"]["power_W"]
    total = p["total"]
    assert total["total"] > 0 and total["leakage"] > 0
    assert abs(total["internal"] + total["switching"] + total["leakage"] - total["total"]) < (
        1e-3 * total["total"]
    )
    assert p["sequential"]["total"] + p["combinational"]["total"] == pytest.approx(
        total["total"], rel=1e-3
    )
    assert mapped["power"]["worst_slack"] > 0  # meets the 10 ns clock


def _real(mapped, name: str) -> str:
    return (mapped["dir"] / name).read_text()


def test_truncated_stat_json_is_a_clear_error(mapped):
    text = _real(mapped, "generic_stat.json")
    with pytest.raises(parse.ReportError, match="not valid JSON"):
        parse.stat_json(text[: len(text) // 2], "mh_op_enc")
    with pytest.raises(parse.ReportError, match="no module 'other'"):
        parse.stat_json(text, "other")
    broken = text.replace('"num_cells":', '"num_cellz":', 1)
    with pytest.raises(parse.ReportError, match="no 'num_cells'"):
        parse.stat_json(broken, "mh_op_enc")


def test_truncated_ltp_and_area_are_clear_errors(mapped):
    with pytest.raises(parse.ReportError, match="Longest topological path"):
        parse.ltp_length(_real(mapped, "generic_ltp.txt")[:20], "mh_op_enc")
    text = _real(mapped, "liberty_stat.txt")
    with pytest.raises(parse.ReportError, match="Chip area for module"):
        parse.liberty_area(text[: text.index("Chip area")], "mh_op_enc")


def test_truncated_power_report_is_a_clear_error(mapped):
    text = (mapped["sta"] / "sta.log").read_text()
    sec = parse.sta_sections(text)["mh_op_enc"]
    assert parse.power(sec, "mh_op_enc")["total"]["total"] > 0
    cut = sec[: sec.rindex("\nTotal")]
    with pytest.raises(parse.ReportError, match="no 'Total' row"):
        parse.power(cut, "mh_op_enc")
    with pytest.raises(parse.ReportError, match="no 'worst slack' line"):
        parse.worst_slack(cut, "mh_op_enc")
    # a section whose end marker is lost is not a section
    assert parse.sta_sections(text[: text.index(parse.END)]) == {}
    with pytest.raises(parse.ReportError, match="OpenSTA reported errors"):
        parse.sta_sections(text + "\nError: power.tcl, 3 something failed\n")


def test_malformed_liberty_is_a_clear_error(tmp_path, nangate_lib):
    raw = nangate_lib.read_bytes()
    cut = tmp_path / "cut.lib.gz"
    cut.write_bytes(gzip.compress(raw)[:100000])
    with pytest.raises(ValueError, match="truncated gzip"):
        liberty.prepare(cut, tmp_path / "w1")
    half = tmp_path / "half.lib"
    half.write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="truncated"):
        liberty.prepare(half, tmp_path / "w2")
    other = tmp_path / "x.lib"
    other.write_text("module m; endmodule\n")
    with pytest.raises(ValueError, match="not a Liberty file"):
        liberty.prepare(other, tmp_path / "w3")


def test_liberty_from_pdk_root(tmp_path, sky130_lib, nangate_lib):
    target = tmp_path / liberty.PDK_LIBS[0]
    target = target.with_name(target.name + ".gz")
    target.parent.mkdir(parents=True)
    shutil.copyfile(sky130_lib, target)
    assert liberty.resolve(None, {"PDK_ROOT": str(tmp_path)}) == target
    assert liberty.resolve(None, {}) == nangate_lib
    assert liberty.resolve(None, {}, default=False) is None
    with pytest.raises(FileNotFoundError, match="holds no sky130_fd_sc_hd"):
        liberty.resolve(None, {"PDK_ROOT": str(tmp_path / "empty")})


def test_missing_yosys_says_how_to_install(monkeypatch, tmp_path):
    real = shutil.which
    monkeypatch.setattr(
        shutil, "which", lambda name, *a, **k: None if name == "yosys" else real(name)
    )
    with pytest.raises(toolchain.ToolNotFoundError, match="apt-get install yosys"):
        run.synthesize(16, 1, tmp_path / "out", blocks=False)
    assert not (tmp_path / "out").exists()


def test_missing_sta_through_the_command(tmp_path):
    # PATH with yosys but without sta: a directory holding only a link to yosys
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(shutil.which("yosys"), bindir / "yosys")
    env = {**os.environ, "PATH": str(bindir)}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "matterhorn.cli",
            "synth",
            "--liberty",
            str(liberty.default_liberty()),
            "--out",
            str(tmp_path / "out"),
            "--no-blocks",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert "OpenSTA ('sta') is not on PATH; install it with: apt-get install opensta" in proc.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("kwargs", "exc", "message"),
    [
        ({"T": 12}, ValueError, "T must be a power of two"),
        ({"k": 16}, ValueError, "k must be in 0..15 for T=16, not 16"),
        ({"clock_ns": 0.0}, ValueError, "clock_ns must be in 0.1..1000 ns, not 0.0"),
        ({"clock_ns": "10"}, TypeError, "clock_ns must be a number of nanoseconds"),
        ({"jobs": 0}, ValueError, "jobs must be in 1..64, not 0"),
        ({"liberty_file": "no/such.lib"}, FileNotFoundError, "liberty file 'no/such.lib'"),
    ],
)
def test_bad_arguments(kwargs, exc, message, tmp_path):
    args = {"T": 16, "k": 1, "blocks": False, **kwargs}
    with pytest.raises(exc, match=message):
        run.synthesize(args.pop("T"), args.pop("k"), tmp_path / "out", **args)
    assert not (tmp_path / "out").exists()
