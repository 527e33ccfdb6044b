"""Interrupted runs, vacuous regressions and repeated values, on real runs (docs/reliability.md).

The interrupted runs are real ``matterhorn`` processes sent SIGINT or SIGTERM mid-run: after
them, no summary may read as a pass and no staging folder may be left.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from matterhorn.cli import main

ROOT = Path(__file__).resolve().parent.parent
INTERRUPTED = "interrupted; the run is incomplete"


def _start(args: list[str], cwd: Path) -> subprocess.Popen:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "matterhorn.cli", *args], cwd=cwd, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        preexec_fn=_default_signals,
    )


def _default_signals() -> None:
    """In the child: the default SIGINT and SIGTERM. A shell starts background jobs with SIGINT
    ignored, and an ignored signal stays ignored across exec (Python then never raises
    KeyboardInterrupt), so a suite started in the background would test nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _interrupt_when(proc: subprocess.Popen, marker: str, sig: int, timeout: float = 300,
                    delay: float = 0.0) -> tuple[int, list[str]]:
    """Read ``proc``'s output until a line contains ``marker``, wait ``delay`` s, send ``sig``;
    return the exit status and every line printed."""
    lines: list[str] = []
    seen = threading.Event()

    def reader() -> None:
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if marker in line:
                seen.set()
        seen.set()  # ended without the marker

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    assert seen.wait(timeout), f"no {marker!r} within {timeout} s:\n" + "\n".join(lines)
    assert proc.poll() is None, "the run ended before it could be interrupted:\n" + "\n".join(
        lines)
    time.sleep(delay)
    proc.send_signal(sig)
    code = proc.wait(timeout=timeout)
    t.join(10)
    return code, lines


def test_flow_interrupted(tmp_path, capsys):
    # before the fix: the earlier run's flow.json and summary.md (all stages ok) stayed
    out = tmp_path / "flow"
    skip = ["--skip", "generate", "--skip", "synth", "--skip", "energy", "--skip", "compare",
            "--skip", "block", "--skip", "network"]
    assert main(["flow", "--T", "4", "--out", str(out), "--skip", "regress", *skip]) == 0
    capsys.readouterr()
    first = json.loads((out / "flow.json").read_text())
    assert {s["status"] for s in first["stages"].values()} == {"ok", "skipped"}
    # stats ran above: the run goes straight to the regress stage, where it is interrupted
    proc = _start(["flow", "--T", "4", "--out", "flow", "--skip", "stats", *skip], tmp_path)
    # at once: with the simulators' builds cached (as in the whole suite) the stage is short
    code, lines = _interrupt_when(proc, "regress: start", signal.SIGINT)
    doc = json.loads((out / "flow.json").read_text())
    assert (doc.get("status"), doc["stages"]) == ("running", {})  # not the earlier all-ok
    summary = (out / "summary.md").read_text()
    assert "**INCOMPLETE**" in summary and "| ok" not in summary
    assert code == 130, lines
    assert f"matterhorn flow: {INTERRUPTED}" in lines  # (Amaranth may warn after it)


def test_regress_interrupted(tmp_path, capsys):
    # before the fix: the earlier run's regress_summary.json (seed 0, all passed) stayed
    out = tmp_path / "r"
    assert main(["regress", "--T", "4", "--bench", "sram", "--quick", "--out", str(out)]) == 0
    capsys.readouterr()
    first = json.loads((out / "regress_summary.json").read_text())
    assert (first["passed"], first["failed"], first["parameters"]["seed"]) == (1, 0, 0)
    # benches of one parameter set (the run generates its Verilog once before any job)
    proc = _start(["regress", "--T", "4", "--seed", "9", "--bench", "sram", "--bench", "tile",
                   "--bench", "router", "--quick", "--out", "r"], tmp_path)
    # at once, with two benches still to run (their builds may be cached by earlier tests)
    code, lines = _interrupt_when(proc, "PASS sram", signal.SIGINT)
    assert not (out / "regress_summary.json").exists()  # not the earlier seed-0 pass
    assert code == 130, lines
    assert f"matterhorn regress: {INTERRUPTED}" in lines


def test_synth_terminated(tmp_path):
    # before the fix: SIGTERM left the .synth-* staging folder (13 MB) beside the output
    out = tmp_path / "s"
    out.mkdir()
    (out / "synth_report.json").write_text("earlier")
    proc = _start(["synth", "--T", "4", "--no-liberty", "--tool-runs", "1", "--out", "s"], tmp_path)

    def staging() -> list[str]:
        return [p.name for p in tmp_path.iterdir() if p.name.startswith(".synth-")]

    deadline = time.monotonic() + 120
    while not staging() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert staging(), "no staging folder appeared"
    time.sleep(1.0)  # Yosys is running
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    code = proc.wait(timeout=300)
    text = proc.stdout.read()
    assert code == 143, text
    assert f"matterhorn synth: {INTERRUPTED}" in text.splitlines()
    assert staging() == []
    assert sorted(p.name for p in out.iterdir()) == ["synth_report.json"]
    assert (out / "synth_report.json").read_text() == "earlier"  # left as it was


def test_vacuous_and_repeats(tmp_path, capsys):
    # before the fix: PASS with 0 events checked, and every repeated value run again
    out = tmp_path / "v"
    argv = ["regress", "--T", "4", "4", "--k", "3", "3", "--sim", "icarus", "--sim", "icarus",
            "--bench", "encoder", "--bench", "tile", "--bench", "encoder", "--quick",
            "--out", str(out)]
    assert main(argv) == 1
    text = capsys.readouterr().out
    doc = json.loads((out / "regress_summary.json").read_text())
    assert doc["parameters"]["T"] == [4] and doc["parameters"]["k"] == [3]
    assert doc["parameters"]["sims"] == ["icarus"]
    assert doc["parameters"]["benches"] == ["encoder", "tile"]
    assert [(j["bench"], j["status"], j["events"]) for j in doc["jobs"]] == [
        ("encoder", "vacuous", 0), ("tile", "vacuous", 0)]
    assert (doc["status"], doc["passed"], doc["failed"], doc["vacuous"]) == ("vacuous", 0, 0, 2)
    assert "PASS" not in text
    assert "NOTHING CHECKED by 2 job(s)" in text


def _start_group(args: list[str], cwd: Path) -> subprocess.Popen:
    """A ``matterhorn`` process leading a process group of its own, stdout and stderr apart:
    a signal to the group reaches it and everything it started, as Ctrl-C in a terminal does."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    return subprocess.Popen(
        [sys.executable, "-m", "matterhorn.cli", *args], cwd=cwd, env=env, text=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
        preexec_fn=_default_signals, start_new_session=True,
    )


def test_workers_interrupted_quietly(tmp_path):
    # before the fix: 2-4 tracebacks of the Dask workers (KeyboardInterrupt, CancelledError,
    # heartbeat errors), 34-67 lines, after or before the interrupted line
    # the benches of the block parameter set only: one Verilog generation before the first job
    # (every bench's sets would be five), five jobs, so both workers are busy when it lands
    benches = [arg for b in ("encoder", "sram", "tile", "dense_tile", "router")
               for arg in ("--bench", b)]
    proc = _start_group(["regress", "--T", "4", "--k", "0", "1", "--sim", "icarus",
                         "--workers", "2", *benches, "--quick", "--out", "r"], tmp_path)
    lines: list[str] = []
    first = threading.Event()

    def reader() -> None:  # stderr: the jobs' progress lines, then the interrupted line
        for line in proc.stderr:
            lines.append(line.rstrip("\n"))
            if "PASS" in line or "FAIL" in line:
                first.set()
        first.set()

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    assert first.wait(600), "no job ended within 600 s"
    assert proc.poll() is None, "the run ended before it could be interrupted:\n" + "\n".join(
        lines)
    os.killpg(proc.pid, signal.SIGINT)  # the whole group: the workers get it too
    code = proc.wait(timeout=300)
    t.join(10)
    err = "\n".join(lines)
    assert code == 130, err
    # nothing but the progress of the jobs that ended (this process's own lines), and the
    # interrupted line last: no worker's traceback or warning
    assert lines[-1] == f"matterhorn regress: {INTERRUPTED}", err
    progress = re.compile(r"\[regress \d+/\d+, \d+ s\] (PASS|FAIL|NONE) \S+")
    assert all(progress.fullmatch(line) for line in lines[:-1]), err
    assert proc.stdout.read() == ""  # no result: the run is incomplete
    assert not (tmp_path / "r" / "regress_summary.json").exists()


_WORKER_MASKS = """
import os, threading


def blocked():
    # SIGINT blocked, per thread of this process, by name
    names = {t.native_id: t.name for t in threading.enumerate()}
    out = {}
    for tid in os.listdir("/proc/self/task"):
        status = open(f"/proc/self/task/{tid}/status").read()
        mask = [line.split()[1] for line in status.splitlines() if line.startswith("SigBlk")]
        out[names.get(int(tid), tid)] = bool(int(mask[0], 16) & 2)
    return out


if __name__ == "__main__":
    from toolkit_base.cluster import executor
    with executor(workers=2, jobs=2) as ex:
        print(repr((blocked(), list(ex.client.run(blocked).values()))))
"""


def test_workers_start_with_sigint_blocked(tmp_path):
    # before the fix: a Ctrl-C to the group while the local workers were still importing
    # Dask (about 1 s after the cluster began to start) gave 2 KeyboardInterrupt tracebacks,
    # 43-105 lines: multiprocessing's resource tracker, started by the cluster's IO loop
    # thread, unblocked SIGINT there, so the workers that thread started had it open.
    # A fresh process (no resource tracker running yet), as a command starts.
    import ast

    script = tmp_path / "masks.py"
    script.write_text(_WORKER_MASKS)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    parent, workers = ast.literal_eval(done.stdout.strip().splitlines()[-1])
    assert parent["IO loop"], parent  # the thread that starts the workers
    assert len(workers) == 2
    for threads in workers:
        # the threads a worker made before its preload (dask_setup) unblocked SIGINT in its
        # main thread show the mask it started with
        assert any(b for name, b in threads.items() if name != "MainThread"), threads


def test_generation_terminated_quietly(tmp_path):
    # before the fix: three UnusedElaboratable warnings (the components of a generation cut
    # short) after the interrupted line; the same code generates the Verilog of `layer`
    proc = _start_group(["regress", "--T", "16", "--bench", "system", "--quick", "--out", "r"],
                        tmp_path)
    rtl = tmp_path / "r" / "rtl"
    deadline = time.monotonic() + 300
    while proc.poll() is None and time.monotonic() < deadline:
        if rtl.is_dir() and any(p.name.startswith(".gen-") for p in rtl.iterdir()):
            break  # the Verilog is being generated
        time.sleep(0.02)
    assert proc.poll() is None, "the run ended before the generation could be interrupted"
    time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGTERM)
    code = proc.wait(timeout=300)
    err = proc.stderr.read()
    assert code == 143, err
    assert err == f"matterhorn regress: {INTERRUPTED}\n"
    assert not any(p.name.startswith(".gen-") for p in rtl.iterdir())


def test_attention_interrupted(tmp_path):
    # the attention command (MiniLM block 0 through the attention path): SIGINT while it
    # converts MiniLM and captures the sentences, before any simulation
    proc = _start(["attention", "--sentences", "1", "--longest", "16", "--sim", "icarus",
                   "--out", "a"], tmp_path)
    time.sleep(8)  # past the checks, into the conversion
    assert proc.poll() is None, proc.stdout.read()
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=300)
    lines = proc.stdout.read().splitlines()
    assert code == 130, lines
    assert lines[-1] == f"matterhorn attention: {INTERRUPTED}"
    out = tmp_path / "a"  # nothing that reads as a pass: the command writes no summary
    assert not out.exists() or not list(out.rglob("*summary*"))


def test_network_interrupted(tmp_path):
    # the network command (the random network, block after block in the Amaranth simulator):
    # SIGINT while the blocks run; nothing that reads as a pass is left (network.md is
    # written last, staged) and no design is kept as ended.
    proc = _start(["network", "--rtl", "amaranth", "--sentences", "8", "--design", "dense",
                   "--eval-sentences", "4", "--out", "n"], tmp_path)
    code, lines = _interrupt_when(proc, "through the network's", signal.SIGINT, delay=1)
    assert code == 130, lines
    assert lines[-1] == f"matterhorn network: {INTERRUPTED}"
    assert not (tmp_path / "n" / "network.md").exists()
    assert not (tmp_path / "n" / "designs" / "dense.json").exists()
    assert not list(tmp_path.glob(".network-*"))


def test_block_interrupted(tmp_path):
    # the block command (the random block through its hardware pieces): SIGINT while the
    # pieces run; nothing that reads as a pass is left (block.md is written last, staged).
    # Eight sentences, a few seconds each on an idle machine: the run outlasts the signal.
    proc = _start(["block", "--sentences", "8", "--design", "dense", "--out", "b"], tmp_path)
    code, lines = _interrupt_when(proc, "through the block's pieces", signal.SIGINT, delay=1)
    assert code == 130, lines
    assert lines[-1] == f"matterhorn block: {INTERRUPTED}"
    assert not (tmp_path / "b" / "block.md").exists()
    assert not list(tmp_path.glob(".block-*"))
