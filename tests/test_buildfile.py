"""The build file (matterhorn.buildfile, docs/buildfile.md): a whole flow run's settings in
TOML, validated against its schema, paths relative to the file, flags winning over it."""

from __future__ import annotations

import argparse

import pytest

from matterhorn.buildfile import apply, read_build_file
from matterhorn.cli import build_parser, main

GOOD = """\
schema = "matterhorn.build/1"
[flow]
T = 8
k = 2
sim = ["icarus", "verilator"]
out = "runs/t8k2"
model = "none"
skip = ["stats", "synth"]
"""


def _flow_args(argv: list[str]) -> argparse.Namespace:
    return build_parser().parse_args(["flow", *argv])


def test_the_file_sets_the_run_and_a_flag_wins(tmp_path):
    (tmp_path / "b.toml").write_text(GOOD)
    settings = read_build_file(tmp_path / "b.toml")
    assert settings["flow"]["out"] == str(tmp_path / "runs/t8k2")  # relative to the file
    args = _flow_args(["--k", "1"])
    apply(args, settings)
    assert (args.T, args.k, args.sim, args.model, args.skip) == (
        8, 1, ["icarus", "verilator"], "none", ["stats", "synth"])


@pytest.mark.parametrize(("text", "message"), [
    ("[flow]\nT = 6\n", "b.toml: field 'flow.T': 6 is not one of [2, 4, 8, 16, 32, 64]"),
    ("[flow]\nsteps = 3\n", ("b.toml: field 'flow': Additional properties are not allowed "
     "('steps' was unexpected)")),
    ("[flow]\nsim = [\"modelsim\"]\n", ("b.toml: field 'flow.sim[0]': 'modelsim' is not one of "
     "['icarus', 'verilator']")),
    ("[flow\nT = 8\n", "b.toml is not TOML: "),
    ("schema = \"matterhorn.build/9\"\n", ("b.toml: field 'schema': 'matterhorn.build/1' was "
     "expected")),
])
def test_a_bad_build_file_is_one_line(text, message, tmp_path, capsys):
    (tmp_path / "b.toml").write_text(text)
    code = main(["flow", "--config", str(tmp_path / "b.toml"), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"matterhorn flow: error: {message}"), err
    assert not (tmp_path / "o").exists()


def test_flow_runs_from_a_build_file(tmp_path, capsys):
    """``matterhorn flow --config FILE``: the file's T, k and stages, its out folder."""
    (tmp_path / "b.toml").write_text(
        "[flow]\nT = 4\nk = 1\nout = \"run\"\nmodel = \"none\"\n"
        "skip = [\"regress\", \"stats\", \"synth\", \"energy\", \"compare\"]\n")
    code = main(["flow", "--config", str(tmp_path / "b.toml")])
    out = capsys.readouterr().out
    assert (tmp_path / "run" / "summary.md").is_file(), out
    assert code in (0, 1), out
    assert "T = 4" in (tmp_path / "run" / "summary.md").read_text() or "T=4" in out + (
        tmp_path / "run" / "summary.md").read_text()
