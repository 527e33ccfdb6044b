"""The console and the conventions of every command (docs/reliability.md, "The console").

``--quiet``/``--verbose``/``--debug`` on every command; one style of defaults in the help
texts; one meaning of ``--jobs``; an unexpected error reported as an internal error (its
traceback with ``--debug``), a user's error as one line; a command module that fails to import
is an error; result files readable by others under the umask; progress on standard error (a
bar on a terminal, lines otherwise, nothing with ``--quiet``); the flow's stage list the same
in the code, ``flow --help``, docs/flow.md and docs/quickstart.md; the licence the README
names.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import stat
import sys
from pathlib import Path

import pytest

from matterhorn import cli
from matterhorn.cli import COMMANDS, HelpFormatter, build_parser, main
from toolkit_base import console

ROOT = Path(__file__).resolve().parent.parent


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    (sub,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


@pytest.fixture(autouse=True)
def _normal_console():
    yield
    console.set_level(console.NORMAL)


# ---------------------------------------------------------------------------------------------
# options and help texts


def test_every_command_has_quiet_verbose_debug():
    for name, parser in _subparsers().items():
        options = {s for a in parser._actions for s in a.option_strings}
        assert {"-q", "--quiet", "-v", "--verbose", "--debug"} <= options, name


#: A default written into a help text by hand, in one of the styles the commands had.
_HAND_DEFAULT = re.compile(r"\[[^\]]*\]\s*$|\(default [^:]|\(default\)|\(\d[\d.]*\)\s*$")


def test_one_default_style_in_every_help_text():
    """Every option's help ends with ``(default: X)`` when it has a default (appended by
    :class:`matterhorn.cli.HelpFormatter` or written in words); no ``[16]``, ``(16)`` or
    ``(default 16)``; a default said once."""
    formatter = HelpFormatter("matterhorn")
    problems = []
    for name, parser in _subparsers().items():
        for action in parser._actions:
            if not action.option_strings or action.help in (None, argparse.SUPPRESS):
                continue
            text = " ".join(formatter._get_help_string(action).split())
            where = f"{name} {action.option_strings[-1]}: {text!r}"
            if _HAND_DEFAULT.search(" ".join(action.help.split())):
                problems.append(f"a default written by hand: {where}")
            if text.count("default") > 1:
                problems.append(f"the default said twice: {where}")
            has_default = action.nargs != 0 and action.default not in (None, [], ())
            if has_default and not re.search(r"\(default: [^)]+\)$", text):
                problems.append(f"no '(default: X)' at the end: {where}")
    assert not problems, "\n".join(problems)


def test_help_shows_the_default():
    out = io.StringIO()
    parser = _subparsers()["compare"]
    parser.print_help(out)
    text = " ".join(out.getvalue().split())
    assert "seed of the random layer (default: 0)" in text
    assert "--windows WINDOWS input windows (tokens) per workload, 1..256 (default: 16)" in text


def test_jobs_means_jobs_at_a_time_everywhere():
    """``-j/--jobs`` is the same option wherever it exists: jobs run at a time."""
    seen = {}
    for name, parser in _subparsers().items():
        for action in parser._actions:
            if "--jobs" in action.option_strings:
                seen[name] = action
    assert set(seen) == {"block", "network", "regress", "synth"}
    for name, action in seen.items():
        assert set(action.option_strings) == {"-j", "--jobs", "--workers"}, name
        assert action.help.startswith("jobs"), (name, action.help)
    assert "--tool-runs" in {s for a in _subparsers()["synth"]._actions for s in a.option_strings}


def test_out_has_a_default_in_every_command():
    for name, parser in _subparsers().items():
        outs = [a for a in parser._actions if a.dest == "out"]
        # a default in argparse, or (flow: a build file may give it) in the help text
        assert all(not a.required and (a.default or "(default: build/" in a.help)
                   for a in outs), name


# ---------------------------------------------------------------------------------------------
# errors


def _failing(monkeypatch, exc_factory):
    module = cli._load("demo")

    def run(args):
        raise exc_factory()

    monkeypatch.setattr(module, "run", run)


def _python_type_error():
    return None + 1  # a bug: Python's own TypeError


def test_an_unexpected_error_is_an_internal_error(monkeypatch, capsys):
    # before: "matterhorn demo: error: unsupported operand type(s)...", exit 2, as if the
    # user had typed something wrong, and no way to see where it came from
    module = cli._load("demo")
    monkeypatch.setattr(module, "run", lambda args: _python_type_error())
    assert main(["demo"]) == cli.INTERNAL_ERROR
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert err.startswith("matterhorn demo: internal error (a bug of the toolkit): TypeError: "
                          "unsupported operand type(s)")
    assert "run again with --debug for the traceback" in err
    assert main(["demo", "--debug"]) == cli.INTERNAL_ERROR
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "_python_type_error" in err
    assert err.splitlines()[-1].startswith("matterhorn demo: internal error")


def test_debug_from_the_environment(monkeypatch, capsys):
    module = cli._load("demo")
    monkeypatch.setattr(module, "run", lambda args: _python_type_error())
    monkeypatch.setenv("MATTERHORN_DEBUG", "1")
    assert main(["demo"]) == cli.INTERNAL_ERROR
    assert "Traceback (most recent call last)" in capsys.readouterr().err


def test_a_check_of_the_toolkit_stays_a_user_error(capsys):
    """A ``ValueError``/``TypeError`` raised by the toolkit's own check is the user's: one line,
    exit 2 (here ``check_integer``'s TypeError behind a bad --n-in, and a range)."""
    assert main(["demo", "--n-in", "0"]) == 2
    assert capsys.readouterr().err == "matterhorn demo: error: n_in must be in 1..4096, not 0\n"
    from toolkit_base.checks import check_integer

    try:
        check_integer("windows", 1.5)
    except TypeError as exc:
        assert cli.raised_by_toolkit(exc)
    try:
        _python_type_error()
    except TypeError as exc:
        assert not cli.raised_by_toolkit(exc)


def test_a_command_that_fails_to_import_is_an_error(monkeypatch, capsys):
    # before: the command silently vanished from the CLI ("invalid choice")
    real = cli._load

    def load(name):
        if name == "layer":
            raise ImportError("cannot import name 'gone' from 'regression.layer'")
        return real(name)

    monkeypatch.setattr(cli, "_load", load)
    for argv in (["layer"], ["demo"], ["--help"]):
        assert main(argv) == cli.INTERNAL_ERROR
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
        assert ("matterhorn: internal error: the command 'layer' cannot be loaded: module "
                "matterhorn.commands.layer failed to import (ImportError: cannot import name "
                "'gone' from 'regression.layer')") in err


# ---------------------------------------------------------------------------------------------
# quiet, verbose, progress


@pytest.fixture(scope="module")
def quiet_generate(tmp_path_factory):
    """One ``generate --quiet`` under the umask 022, shared by the tests of what it prints and
    of the modes of what it writes: its exit status, standard output and error, and folder."""
    out = tmp_path_factory.mktemp("quiet") / "rtl"
    printed, errors = io.StringIO(), io.StringIO()
    old = os.umask(0o022)
    try:
        with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(errors):
            # the AXI tile wrapper: Verilog, cores, headers, register tables, the SystemRDL
            code = main(["generate", "--quiet", "--module", "mttfs_axi_tile", "--out", str(out)])
    finally:
        os.umask(old)
        console.set_level(console.NORMAL)
    return code, printed.getvalue(), errors.getvalue(), out


def test_quiet_prints_nothing_and_verbose_more(quiet_generate, tmp_path, capsys):
    code, printed, errors, quiet_out = quiet_generate
    assert code == 0
    assert (printed, errors) == ("", "")
    assert (quiet_out / "manifest.json").is_file()
    out = tmp_path / "rtl"  # one module: what is printed, not what is generated
    assert main(["generate", "--module", "mttfs_tile", "--out", str(out)]) == 0
    normal = capsys.readouterr()
    assert re.search(r"^wrote 1 module and manifest.json to ", normal.out, re.M)
    assert normal.err == ""
    assert "sha256" not in normal.out
    assert main(["generate", "--module", "mttfs_tile", "--verbose", "--out", str(out)]) == 0
    assert "mttfs_tile: " in capsys.readouterr().out  # the per-module lines


def test_no_warning_of_the_toolkits_own_objects(tmp_path, capsys):
    """Amaranth's UnusedElaboratable for an object the toolkit built and never elaborated
    says nothing to a user: filtered by where the object was made (the toolkit's files)."""
    import warnings

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        cli._quiet_toolkit_warnings()
        made_here = str(ROOT / "rtl_gen" / "generate.py")
        warnings.warn_explicit("<Tile> created but never used", UserWarning, made_here, 1)
        warnings.warn_explicit("<Tile> created but never used", UserWarning, "/elsewhere.py", 1)
    assert [w.filename for w in seen] == ["/elsewhere.py"]


def _steps_output(capsys, level=console.NORMAL, terminal=False, monkeypatch=None):
    console.set_level(level)
    if monkeypatch is not None:
        monkeypatch.setattr(console, "is_terminal", lambda: terminal)
    with console.steps("work", 3) as bar:
        bar.start("first")
        for name in ("a", "b", "c"):
            bar.advance(name)
        with console.steps("inner", 1) as inner, console.steps("deepest", 1) as deepest:
            deepest.advance("three levels down")
            inner.advance("two levels down")
    return capsys.readouterr()


def test_progress_lines_off_a_terminal(capsys, monkeypatch):
    got = _steps_output(capsys, monkeypatch=monkeypatch)
    assert got.out == ""
    lines = got.err.splitlines()
    assert [re.sub(r", \d+ s\]", "]", line) for line in lines] == [
        "[work 0/3] first", "[work 1/3] a", "[work 2/3] b", "[work 3/3] c",
        "[inner 1/1] two levels down"]  # one line per step; the third level stays quiet


def test_progress_is_a_bar_on_a_terminal(capsys, monkeypatch):
    got = _steps_output(capsys, terminal=True, monkeypatch=monkeypatch)
    assert got.out == ""
    assert "work:   0%|" in got.err and "| 0/3 [" in got.err  # tqdm's bar, drawn at once
    assert "first" in got.err and "inner:" in got.err
    assert "[work 1/3]" not in got.err and got.err.endswith("\r")  # removed at the end


def test_no_progress_with_quiet(capsys, monkeypatch):
    for terminal in (False, True):
        assert _steps_output(capsys, console.QUIET, terminal, monkeypatch) == ("", "")


def test_nested_steps_print_a_tenth_off_a_terminal(capsys, monkeypatch):
    # before: a flow's synthesis printed a line per tool run (53) and stats a line per sentence
    monkeypatch.setattr(console, "is_terminal", lambda: False)
    with console.steps("flow", 1) as flow:
        with console.steps("synth", 53) as synth:
            for i in range(53):
                synth.advance(f"run {i + 1}")
        flow.advance("synth done")
    lines = [re.sub(r", \d+ s\]", "]", x) for x in capsys.readouterr().err.splitlines()]
    assert lines == [f"[synth {i}/53] run {i}" for i in range(6, 53, 6)] + [
        "[synth 53/53] run 53", "[flow 1/1] synth done"]


def test_a_failed_step_is_never_thinned_away(capsys, monkeypatch):
    # before: the flow's regression printed every second of its 12 jobs, so a failed
    # axi_tile (the 11th) never showed
    monkeypatch.setattr(console, "is_terminal", lambda: False)
    with console.steps("flow", 1) as flow:
        with console.steps("regress", 12) as regress:
            for i in range(1, 13):
                regress.advance(console.Alert(f"FAIL job{i}") if i == 11 else f"PASS job{i}")
        flow.advance("regress done")
    lines = [re.sub(r", \d+ s\]", "]", x) for x in capsys.readouterr().err.splitlines()]
    assert lines == [f"[regress {i}/12] PASS job{i}" for i in (2, 4, 6, 8, 10)] + [
        "[regress 11/12] FAIL job11", "[regress 12/12] PASS job12", "[flow 1/1] regress done"]


def test_every_steps_prints_every_nth(capsys, monkeypatch):
    monkeypatch.setattr(console, "is_terminal", lambda: False)
    with console.steps("train", 60, every=25) as bar:
        for _ in range(60):
            bar.advance()
    lines = [re.sub(r", \d+ s\]", "]", x) for x in capsys.readouterr().err.splitlines()]
    assert lines == ["[train 25/60]", "[train 50/60]", "[train 60/60]"]


# ---------------------------------------------------------------------------------------------
# result files


@pytest.mark.parametrize(("umask", "file_mode", "dir_mode"),
                         [(0o022, 0o644, 0o755), (0o077, 0o600, 0o700), (0o002, 0o664, 0o775)])
def test_result_files_follow_the_umask(umask, file_mode, dir_mode, tmp_path):
    # before: every atomically written file was 0600 and every staged folder 0700 (tempfile's
    # modes), unreadable to a colleague whatever the umask
    from toolkit_base.files import copy_atomic, replace_dir, staging_dir, write_atomic

    old = os.umask(umask)
    try:
        write_atomic(tmp_path / "a.json", "{}")
        copy_atomic(tmp_path / "a.json", tmp_path / "b.json")
        with staging_dir(tmp_path, prefix=".x-") as stage:
            (stage / "c.txt").write_text("c")
            replace_dir(stage, tmp_path / "folder")
    finally:
        os.umask(old)
    for name in ("a.json", "b.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == file_mode, name
    assert stat.S_IMODE((tmp_path / "folder").stat().st_mode) == dir_mode


def test_a_commands_results_are_0644(quiet_generate):
    code, _, _, out = quiet_generate  # generate --quiet under the umask 022
    assert code == 0
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir()}
    assert set(modes.values()) == {0o644}, modes


# ---------------------------------------------------------------------------------------------
# docs


def _table_first_column(text: str, header: str) -> list[str]:
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    out = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        out.append(line.split("|")[1].strip().strip("`"))
    return out


def test_stage_lists_agree():
    """The flow's stages in run order: the code, ``flow --help``, docs/flow.md's stage table and
    docs/quickstart.md's report table (the folder each stage writes)."""
    from matterhorn.flow import STAGE_SUMMARY, STAGES

    assert list(STAGE_SUMMARY) == list(STAGES)
    help_text = io.StringIO()
    _subparsers()["flow"].print_help(help_text)
    text = " ".join(help_text.getvalue().split())
    assert "Stages, in order: " + "; ".join(
        f"{s}: {STAGE_SUMMARY[s]}" for s in STAGES) in text
    assert re.search(r"skip a stage, repeatable: " + ", ".join(STAGES), text)
    flow_md = (ROOT / "docs" / "flow.md").read_text(encoding="utf-8")
    assert _table_first_column(flow_md, "| stage |") == list(STAGES)
    quick = (ROOT / "docs" / "quickstart.md").read_text(encoding="utf-8")
    stages_of_paths = list(dict.fromkeys(re.sub(r"\s*\(.*", "", c)
                                         for c in _table_first_column(quick, "| stage |")))
    assert stages_of_paths == list(STAGES)


def test_licence_is_the_one_the_readme_names():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "Apache-2.0" in readme and "[LICENSE](LICENSE)" in readme
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.lstrip().startswith("Apache License")
    assert "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    assert 'license = { text = "Apache-2.0" }' in (ROOT / "pyproject.toml").read_text()


def test_commands_listed():
    assert set(_subparsers()) == set(COMMANDS)
    assert sys.modules.get("matterhorn.commands.demo") is not None


@pytest.mark.parametrize("argv", [["-q", "demo"], ["demo", "-q"], ["--quiet", "demo"]])
def test_console_flags_before_or_after_the_subcommand(argv, capsys):
    """``matterhorn -q demo`` is ``matterhorn demo -q``: nothing printed, the same exit."""
    small = ["--batch", "8", "--n-in", "8", "--n-out", "4"]
    assert main([*argv, *small]) == 0
    assert capsys.readouterr().out == ""
    assert main(["demo", *small]) == 0
    assert capsys.readouterr().out != ""


def test_quiet_and_verbose_on_both_sides_is_one_line(capsys):
    assert main(["-q", "demo", "-v"]) == 2
    err = capsys.readouterr().err
    assert err == "matterhorn demo: error: -q/--quiet and -v/--verbose cannot be given together\n"
