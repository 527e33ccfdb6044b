"""Sweeps on Dask distributed (toolkit_base.cluster, docs/cluster.md): a sweep on a local
two-worker cluster gives the local run's results, in the same order; the tasks really run on the
cluster's workers; an unreachable or malformed scheduler address is one line, exit 2, and
nothing is written or removed."""

from __future__ import annotations

import functools
import json
import logging
import os
import socket
import sys
import threading
import time
from pathlib import Path

import cloudpickle
import pytest
from distributed import LocalCluster
from distributed.diagnostics.plugin import SchedulerPlugin

from matterhorn.cli import main
from regression import run_regression
from regression.summary import without_timings
from synth_scripts.sweep import SWEEP_JSON, synthesize_sweep
from toolkit_base import cluster
from toolkit_base.schemas import validate

# the helper functions below travel to the workers by value (tests/ is not a package there)
cloudpickle.register_pickle_by_value(sys.modules[__name__])

#: A few small regression jobs on Icarus: encoder and SRAM at T=4 and T=8.
REGRESS = {"T": (4, 8), "k": 1, "sims": "icarus", "benches": ("encoder", "sram"), "quick": True}


class Ran(SchedulerPlugin):
    """Which worker each task finished on (the scheduler's own record)."""

    def __init__(self, scheduler):
        self.scheduler = scheduler
        self.ran: dict[str, str] = {}

    def transition(self, key, start, finish, *args, **kwargs):
        if finish == "memory":
            ts = self.scheduler.tasks.get(key)
            self.ran[str(key)] = next(iter(ts.who_has)).address if ts and ts.who_has else "?"


@pytest.fixture(scope="module")
def two_workers():
    """A local cluster of two worker processes, as a user would start one (docs/cluster.md)."""
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      silence_logs=logging.ERROR,
                      scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"}) as c:
        plugin = Ran(c.scheduler)
        c.scheduler.add_plugin(plugin)
        yield c, plugin


def ran_here(task_prefix: str, plugin: Ran) -> dict[str, str]:
    """Task name (the unique suffix dropped) -> worker, of the tasks named ``task_prefix...``."""
    return {k.rsplit("-", 1)[0]: w for k, w in plugin.ran.items() if k.startswith(task_prefix)}


def _where(x):
    time.sleep(0.5)
    return x, os.getpid()


def test_run_all_orders_results_and_uses_worker_processes():
    got = cluster.run_all(_where, range(4), workers=2)
    assert [x for x, _ in got] == [0, 1, 2, 3]
    assert os.getpid() not in {pid for _, pid in got}  # the local cluster's processes ran them
    assert cluster.run_all(_where, range(2)) == [(0, os.getpid()), (1, os.getpid())]


def test_a_local_cluster_has_at_most_one_worker_per_job():
    """The cap has one home, ``executor(jobs=...)``: a single job runs in this process whatever
    ``workers`` says, and two jobs start two workers, not four."""
    assert cluster.run_all(_where, range(1), workers=4) == [(0, os.getpid())]
    with cluster.executor(workers=4, jobs=2) as ex:
        assert len(ex.client.scheduler_info()["workers"]) == 2
    with cluster.executor(workers=4, jobs=0) as ex:
        assert ex.client is None


@pytest.fixture
def probes(monkeypatch):
    """The addresses :func:`toolkit_base.cluster.probe` was called with (it still probes)."""
    seen = []
    real = cluster.probe

    def counted(address, *args, **kwargs):
        seen.append(address)
        return real(address, *args, **kwargs)

    monkeypatch.setattr(cluster, "probe", counted)
    return seen


def test_regression_on_two_workers_equals_local(tmp_path, two_workers, probes):
    c, plugin = two_workers
    seen = []
    # the cluster's run first, in a new folder: its workers generate and build everything.
    # The local run follows in the same folder and runs every job again on those builds (the
    # cache): the simulations are compared, without building the same Verilog twice.
    dist = run_regression(**REGRESS, out_dir=tmp_path, scheduler=c.scheduler_address,
                          progress=lambda r: seen.append(r.job.name))
    assert json.loads((tmp_path / "regress_summary.json").read_text()) == dist
    local = run_regression(**REGRESS, out_dir=tmp_path)
    assert probes == [c.scheduler_address]  # the scheduler is probed once a run
    assert local["status"] == "passed" and local["configurations"] == 4
    assert without_timings(dist) == without_timings(local)
    names = [j["name"] for j in local["jobs"]]
    assert sorted(seen) == sorted(names)  # progress per job, on the client
    ran = ran_here("encoder-", plugin) | ran_here("sram-", plugin)
    assert sorted(ran) == sorted(names)  # every job ran as a task of this cluster
    assert set(ran.values()) <= set(c.scheduler_info["workers"])
    assert dist["parameters"]["scheduler"] == c.scheduler_address


def test_cli_regress_local_cluster_progress(tmp_path, capsys):
    """``--workers 2`` runs on a local cluster: one progress line per job, as with one worker,
    and the summary in job order."""
    small = ["--T", "4", "--k", "1", "--bench", "encoder", "--bench", "sram", "--quick"]
    assert main(["regress", *small, "--workers", "2", "--out", str(tmp_path)]) == 0
    # one progress line per job on stderr (not a terminal here): "[regress 1/2, 3 s] PASS name"
    lines = [line.split("] ", 1)[1] for line in capsys.readouterr().err.splitlines()
             if line.startswith("[regress ") and "] PASS " in line]
    summary = json.loads((tmp_path / "regress_summary.json").read_text())
    names = [j["name"] for j in summary["jobs"]]
    assert names == ["encoder-T4-sym-w1-k1-s40@icarus", "sram-T4-sym-w1-k1-s40@icarus"]
    assert sorted(lines) == sorted(f"PASS {n}" for n in names)
    assert summary["parameters"]["workers"] == 2 and summary["status"] == "passed"


def test_synth_sweep_on_two_workers_equals_local(tmp_path, two_workers, probes):
    c, plugin = two_workers
    opts = {"blocks": False, "default_liberty": False, "environ": {}}
    local = synthesize_sweep((4, 8), 1, tmp_path / "local", **opts)
    dist = synthesize_sweep((4, 8), 1, tmp_path / "cluster", scheduler=c.scheduler_address,
                            **opts)
    assert probes == [c.scheduler_address]  # the scheduler is probed once a sweep
    assert [(p["T"], p["k"]) for p in dist["points"]] == [(4, 1), (8, 1)]
    assert without_timings(dist) == without_timings(local)
    validate(json.loads((tmp_path / "cluster" / SWEEP_JSON).read_text()), "synth_sweep", "x")
    for point in ("T4-k1", "T8-k1"):
        for name in ("synth_report.json", "synth_report.md"):
            assert (tmp_path / "cluster" / point / name).read_bytes() == (
                tmp_path / "local" / point / name).read_bytes()
    assert sorted(ran_here("synth-", plugin)) == ["synth-T4-k1", "synth-T8-k1"]


def _mark_slowly(folder: str, name: str) -> str:
    """Mark that the job started, run 3 s, mark that it finished."""
    (Path(folder) / f"{name}.started").touch()
    time.sleep(3)
    (Path(folder) / f"{name}.done").touch()
    return name


def _files(folder: Path, suffix: str) -> list[str]:
    return sorted(p.stem for p in folder.glob(f"*{suffix}"))


def test_interrupt_cancels_jobs_not_started(tmp_path, two_workers):
    """An interrupt during a map on an existing cluster (docs/cluster.md): the jobs not started
    yet are cancelled and never start; those already running on the workers run to completion.

    The interrupt is raised where Ctrl-C lands in a long map, in the loop that waits for
    results (here by the progress callback at the first result, so the test does not depend
    on timing): two workers, six 3-s jobs; without the cancel all six would run."""
    c, _ = two_workers

    def interrupt(result):
        raise KeyboardInterrupt

    names = [f"job{i}" for i in range(6)]
    with cluster.executor(c.scheduler_address) as ex:
        with pytest.raises(KeyboardInterrupt):
            ex.map(functools.partial(_mark_slowly, str(tmp_path)), names, names=names,
                   progress=interrupt)
        # the client stays connected: what map did not cancel would still run. Wait until
        # every started job has finished, then longer than a job runs
        deadline = time.monotonic() + 60
        while (_files(tmp_path, ".done") != _files(tmp_path, ".started")
               and time.monotonic() < deadline):
            time.sleep(0.1)
        time.sleep(4)
        started = _files(tmp_path, ".started")
    assert 2 <= len(started) < len(names)  # the jobs not started never started
    assert _files(tmp_path, ".done") == started  # the running ones finished


UNREACHABLE = "tcp://127.0.0.1:1"
MALFORMED = ["127.0.0.1:8786", "tcp://:8786", "tcp://127.0.0.1", "tcp://127.0.0.1:0",
             "tcp://127.0.0.1:65536", "http://127.0.0.1:8786", "tcp://127.0.0.1:8786/x", ""]


@pytest.mark.parametrize("command", ["regress --T 4 --bench encoder --quick",
                                     "synth --T 4 8 --no-blocks --no-liberty"])
@pytest.mark.parametrize("address", [UNREACHABLE, *MALFORMED])
def test_bad_scheduler_is_one_line(tmp_path, capsys, command, address):
    out = tmp_path / "out"
    out.mkdir()
    earlier = out / ("regress_summary.json" if command.startswith("regress") else SWEEP_JSON)
    earlier.write_text("{}\n")
    rc = main([*command.split(), "--out", str(out), "--scheduler", address])
    captured = capsys.readouterr()
    assert rc == 2
    assert captured.out == ""
    name = command.split()[0]
    if address == UNREACHABLE:
        expected = (f"cannot reach a Dask scheduler at {address!r} within 5 s; give the address "
                    f"of a running scheduler ({cluster.VALID}), or leave --scheduler out for "
                    "local workers (ConnectionRefusedError)")
    else:
        expected = f"scheduler address {address!r} is malformed; expected {cluster.VALID}"
    assert captured.err == f"matterhorn {name}: error: {expected}\n"
    assert sorted(p.name for p in out.iterdir()) == [earlier.name]  # nothing written or removed
    assert earlier.read_text() == "{}\n"


def test_probe_rejects_what_is_not_a_scheduler():
    """A port that accepts and hangs up is not a Dask scheduler."""
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]

    def serve():
        for _ in range(2):  # the plain connect, then distributed's
            conn, _ = srv.accept()
            conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        with pytest.raises(ValueError, match=f"cannot reach a Dask scheduler at 'tcp://127.0.0.1:"
                                             f"{port}' within 1 s"):
            cluster.probe(f"tcp://127.0.0.1:{port}", timeout=1)
    finally:
        srv.close()
        t.join(timeout=5)


def test_probe_names_a_running_scheduler(two_workers):
    c, _ = two_workers
    assert cluster.probe(c.scheduler_address)["type"] == "Scheduler"


def test_jobqueue_clusters_as_documented():
    """The SLURM and LSF clusters of docs/cluster.md build their worker job scripts (no batch
    system is needed for that): each starts a worker that connects to the cluster's scheduler."""
    from dask_jobqueue import LSFCluster, SLURMCluster

    for cls in (SLURMCluster, LSFCluster):
        with cls(cores=1, processes=1, memory="4GB", walltime="02:00",
                 scheduler_options={"host": "127.0.0.1", "dashboard_address": ":0"}) as c:
            script = c.job_script()
            assert c.scheduler_address.startswith("tcp://127.0.0.1:")
            assert c.scheduler_address in script and "distributed.cli.dask_worker" in script
            assert cluster.probe(c.scheduler_address)["type"] == "Scheduler"


def test_items_of_the_same_name_stay_apart_on_a_cluster():
    """Dask shares one result between tasks of the same key: two items named alike must still
    give their own results, as they do in process."""
    items, names = [1, 2, 3], ["same", "same", "other"]
    assert cluster.run_all(str, items, names=names, workers=1) == ["1", "2", "3"]
    assert cluster.run_all(str, items, names=names, workers=2) == ["1", "2", "3"]


def _telling(x):
    cluster.tell(f"job {x} in {os.getpid()}")
    return x


@pytest.mark.parametrize("workers", [1, 2])
def test_a_job_tells_the_console_of_its_map(workers):
    """What a job tells reaches the map's ``told``: from this process and from a worker."""
    heard = []
    with cluster.executor(workers=workers, jobs=2) as ex:
        assert ex.map(_telling, [0, 1], told=heard.append) == [0, 1]
    assert sorted(line.split(" in ")[0] for line in heard) == ["job 0", "job 1"]
    pids = {int(line.rsplit(" ", 1)[1]) for line in heard}
    assert (pids == {os.getpid()}) == (workers == 1)



class Held(SchedulerPlugin):
    """The most tasks named ``prefix...`` the scheduler held at once, not yet finished."""

    def __init__(self, prefix: str):
        self.prefix, self.held, self.most = prefix, set(), 0

    def transition(self, key, start, finish, *args, **kwargs):
        if not str(key).startswith(self.prefix):
            return
        if finish in ("memory", "erred", "forgotten"):
            self.held.discard(key)
        else:
            self.held.add(key)
        self.most = max(self.most, len(self.held))


def _nap(x):
    time.sleep(0.3)
    return x


def test_jobs_go_out_as_workers_come_free(two_workers):
    """A map hands the cluster a job per worker thread and the next as one finishes: a job
    never waits in a busy worker's queue while another worker is free (a queued job carrying a
    whole network is too big for Dask's work stealing to move)."""
    c, _ = two_workers
    held = Held("held")
    c.scheduler.add_plugin(held, name="held")
    with cluster.executor(c.scheduler_address) as ex:
        assert ex.map(_nap, range(6), names=["held"] * 6) == list(range(6))
    assert held.most == 2  # the two workers' threads, never more
