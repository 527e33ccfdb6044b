"""The ground floor: checks, atomic files and tables."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from golden_models.counters import COUNTER_DEFINITIONS, COUNTER_NAMES, Counters
from rtl_gen.params import RTLConfig
from toolkit_base.checks import MAX_RTL_T, check_int, check_integer, check_rtl_T
from toolkit_base.files import (
    copy_atomic,
    folder_digest,
    locked,
    replace_dir,
    staging_dir,
    write_atomic,
)
from toolkit_base.tables import markdown_table


@pytest.mark.parametrize(
    ("call", "exc", "msg"),
    [
        (lambda: check_integer("n", True), TypeError, "n must be an integer, not True"),
        (lambda: check_integer("n", 1.0), TypeError, "n must be an integer, not 1.0"),
        (lambda: check_int("n", 0, 1, 4), ValueError, "n must be in 1..4, not 0"),
        (lambda: check_int("rows", 65, 1, 64, must_be="must be"), ValueError,
         "rows must be 1..64, not 65"),
        (lambda: check_rtl_T(128), ValueError,
         "T must be at most 64 for the generated RTL, not 128"),
    ],
)
def test_check_messages(call, exc, msg):
    with pytest.raises(exc) as info:
        call()
    assert str(info.value) == msg


def test_checks_accept():
    assert check_int("n", 4, 1, 4) == 4
    assert check_rtl_T(MAX_RTL_T) == 64


def test_write_atomic_leaves_no_temporary(tmp_path):
    write_atomic(tmp_path / "a.json", "{}\n")
    copy_atomic(tmp_path / "a.json", tmp_path / "b.json")
    assert sorted(os.listdir(tmp_path)) == ["a.json", "b.json"]
    assert (tmp_path / "b.json").read_text() == "{}\n"


def test_staging_dir_replaces_a_folder_and_cleans_up_on_failure(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "old").write_text("x")
    with staging_dir(tmp_path, prefix=".s-") as tmp:
        (tmp / "new").write_text("y")
        replace_dir(tmp, out)
    assert os.listdir(out) == ["new"]
    with pytest.raises(RuntimeError), staging_dir(tmp_path, prefix=".s-") as tmp:
        (tmp / "half").write_text("z")
        raise RuntimeError("stop")
    assert sorted(os.listdir(tmp_path)) == ["out"]


def test_locked_makes_a_second_process_wait(tmp_path):
    """Two processes on one lock take turns: the child cannot take it while the parent holds it."""
    lock = tmp_path / "sub" / "build.lock"
    child = [sys.executable, "-c",
             ("import sys, time; from toolkit_base.files import locked\n"
             "with locked(sys.argv[1]): print(time.monotonic())"), str(lock)]
    with locked(lock):
        proc = subprocess.Popen(child, stdout=subprocess.PIPE, text=True)
        time.sleep(1.0)
        released = time.monotonic()
    took = float(proc.communicate(timeout=60)[0])
    assert took >= released
    with locked(lock):  # free again, and reentrant across blocks of one process
        pass


def test_folder_digest_names_the_files_wherever_the_folder_is(tmp_path):
    for where in ("a", "b"):
        (tmp_path / where / "sub").mkdir(parents=True)
        (tmp_path / where / "x.py").write_text("x = 1\n")
        (tmp_path / where / "sub" / "w.bin").write_bytes(b"\0\1")
    (tmp_path / "b" / ".cache").write_text("not a file of the folder's")
    a, b = tmp_path / "a", tmp_path / "b"
    assert folder_digest(a) == folder_digest(b)
    assert folder_digest(a, (".py",)) != folder_digest(a)
    (b / "sub" / "w.bin").write_bytes(b"\0\2")
    assert folder_digest(a) != folder_digest(b)
    assert folder_digest(a, (".py",)) == folder_digest(b, (".py",))
    (b / "x.py").rename(b / "y.py")  # a file's name counts too
    assert folder_digest(a, (".py",)) != folder_digest(b, (".py",))


def test_markdown_table():
    assert markdown_table(["a", "b"], [[1, "x"]], align="lr") == [
        "| a | b |", "| --- | ---: |", "| 1 | x |",
    ]
    with pytest.raises(ValueError) as info:
        markdown_table(["a", "b"], [[1]])
    assert str(info.value) == "a row must have 2 cells, not 1: [1]"


def test_counter_names_have_one_home():
    assert tuple(COUNTER_DEFINITIONS) == COUNTER_NAMES == tuple(Counters().as_dict())
    assert tuple(RTLConfig().tile_counters) == COUNTER_NAMES
