"""Where the jobs of a sweep run: this process, a local Dask cluster, or an existing one.

One home for the executor of every sweep (``matterhorn regress``, ``matterhorn synth`` over
several ``T``/``k``; docs/cluster.md). :func:`executor` opens an :class:`Executor` whose
``map`` runs a function over items and returns the results in item order, calling ``progress``
on the client as each one finishes; :func:`run_all` is one such map. A job says how it is
getting on with :func:`tell`: the line reaches the console of the process that ran the map,
from a worker too:

- ``scheduler=None, workers=1``: one after the other in this process;
- ``scheduler=None, workers=N > 1``: a :class:`distributed.LocalCluster` of ``N`` worker
  processes (one thread each) on 127.0.0.1, started for the block and closed after it;
- ``scheduler="tcp://HOST:PORT"``: the workers of an existing Dask cluster (``dask scheduler``
  + ``dask worker``, or a ``dask_jobqueue`` SLURMCluster/LSFCluster).

The function and its items travel to the workers by pickle (module-level functions and plain
data); the results travel back. ``distributed`` is imported only when a cluster is used.
"""

from __future__ import annotations

import asyncio
import re
import socket
import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext, suppress

from toolkit_base.checks import check_int

__all__ = [
    "CONNECT_TIMEOUT",
    "Executor",
    "executor",
    "MAX_WORKERS",
    "check_scheduler",
    "check_workers",
    "probe",
    "run_all",
    "tell",
]

#: Seconds to wait for a scheduler to answer before the run is refused.
CONNECT_TIMEOUT = 5.0
#: Largest number of local worker processes.
MAX_WORKERS = 64
#: What a scheduler address looks like, for the error messages.
VALID = "tcp://HOST:PORT with PORT in 1..65535, e.g. tcp://127.0.0.1:8786"

#: The topic of the worker events :func:`tell` sends (Dask's ``log_event``).
TOPIC = "toolkit-progress"

_ADDRESS = re.compile(r"tcp://(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[0-9]{1,5})")


def check_scheduler(address: object) -> str | None:
    """Return ``address`` if it is None or ``tcp://HOST:PORT``, else raise ValueError."""
    if address is None:
        return None
    if not isinstance(address, str):
        raise TypeError(f"scheduler must be an address string ({VALID}), not {address!r}")
    m = _ADDRESS.fullmatch(address)
    if m is None or not 1 <= int(m["port"]) <= 65535:
        raise ValueError(f"scheduler address {address!r} is malformed; expected {VALID}")
    return address


def check_workers(workers: object) -> int:
    """Return ``workers`` if it is an int in ``1..MAX_WORKERS``, else raise."""
    return check_int("workers", workers, 1, MAX_WORKERS)


def _host_port(address: str) -> tuple[str, int]:
    m = _ADDRESS.fullmatch(address)
    assert m is not None
    return m["host"].strip("[]"), int(m["port"])


async def _identity(address: str, timeout: float) -> dict:
    from distributed.comm import connect

    # bounded here too: distributed's own timeout does not hold when a peer accepts and closes
    # (it retries, and a retry the peer's backlog accepts but nobody answers waits forever)
    comm = await asyncio.wait_for(connect(address, timeout=timeout), timeout)
    try:
        await comm.write({"op": "identity"})
        return await asyncio.wait_for(comm.read(), timeout)
    finally:
        await comm.close()


def probe(address: str, timeout: float = CONNECT_TIMEOUT) -> dict:
    """Check that a Dask scheduler answers at ``address``; return its identity.

    A closed port fails at once, a silent host after ``timeout`` seconds.

    Raises
    ------
    ValueError
        The address is malformed, or nothing answers there as a Dask scheduler.
    """
    check_scheduler(address)
    host, port = _host_port(address)
    unreachable = (
        f"cannot reach a Dask scheduler at {address!r} within {timeout:g} s; give the address "
        f"of a running scheduler ({VALID}), or leave --scheduler out for local workers"
    )
    try:
        socket.create_connection((host, port), timeout=timeout).close()
        ident = asyncio.run(_identity(address, timeout))
    except (TimeoutError, OSError, EOFError) as exc:
        raise ValueError(f"{unreachable} ({type(exc).__name__})") from None
    if not isinstance(ident, dict) or ident.get("type") != "Scheduler":
        raise ValueError(f"{unreachable} (it answered, but not as a scheduler)")
    return ident


class Executor:
    """Runs lists of jobs on one executor: this process, or a Dask client (:func:`executor`)."""

    def __init__(self, client=None):
        self.client = client

    def map(
        self,
        fn: Callable,
        items: Sequence,
        *,
        names: Sequence[str] | None = None,
        progress: Callable[[object], object] | None = None,
        what: str | None = None,
        told: Callable[[str], object] | None = None,
    ) -> list:
        """``[fn(x) for x in items]``, results in item order; ``progress`` is called on the
        client with each result as it finishes, ``told`` (default: a line on the console,
        :func:`toolkit_base.console.note`) with each line a job sends by :func:`tell` while it
        runs, on a worker too. An exception raised by ``fn`` is raised here;
        on an error or an interrupt the items not started yet are cancelled (one already
        running on a cluster's worker finishes there).

        With ``what`` (``"regress"``), the items are the steps of a progress display on the
        console (:func:`toolkit_base.console.steps`); a step is named by the string
        ``progress`` returns for its result, else by its name."""
        from toolkit_base import console

        items = list(items)
        names = [f"item{i}" for i in range(len(items))] if names is None else list(names)
        if len(names) != len(items):
            raise ValueError(f"names must give one name per item ({len(items)}), not "
                             f"{len(names)}")
        shown = console.steps(what, len(items)) if what is not None else nullcontext()
        with shown as bar:

            def done(result, name: str) -> None:
                said = progress(result) if progress is not None else None
                if what is not None:
                    bar.advance(said if isinstance(said, str) else name)

            if self.client is None:
                out = []
                with _telling(told):
                    for x, name in zip(items, names, strict=True):
                        out.append(fn(x))
                        done(out[-1], name)
                return out
            return self._map_on_cluster(fn, items, names, done, told or console.note)

    def _map_on_cluster(self, fn: Callable, items: list, names: list,
                        done: Callable[[object, str], None],
                        told: Callable[[str], object]) -> list:
        from distributed import as_completed

        run = uuid.uuid4().hex[:8]
        # what the jobs tell, as the scheduler forwards it: (time, line)
        self.client.subscribe_topic(TOPIC, lambda event: told(event[1]))
        # a job per worker thread, the next as one finishes: Dask assigns a job to a worker
        # when it is submitted, and does not move a queued job that carries a whole network to
        # a worker that has come free (its work stealing weighs the move against the job)
        slots = max(sum(self.client.nthreads().values()), 1)
        todo = iter(enumerate(zip(items, names, strict=True)))
        where: dict = {}
        running = as_completed(loop=self.client.loop)

        def submit_next() -> None:
            for i, (x, name) in todo:
                # the index keeps two items of the same name apart (Dask shares a key's result)
                fut = self.client.submit(fn, x, key=f"{name}-{run}.{i}", pure=False)
                where[fut.key] = i, fut
                running.add(fut)
                return

        out: list = [None] * len(items)
        try:
            for _ in range(slots):
                submit_next()
            for fut in running:
                i, _ = where[fut.key]
                out[i] = result = fut.result()  # fetched once
                done(result, names[i])
                submit_next()
            return out
        finally:  # on an error or an interrupt, what has not started yet does not start
            self.client.cancel([f for _, f in where.values() if not f.done()])
            self.client.unsubscribe_topic(TOPIC)


#: Where :func:`tell` sends a line in this process (:meth:`Executor.map`'s ``told``).
_TOLD: list[Callable[[str], object]] = []


@contextmanager
def _telling(told: Callable[[str], object] | None) -> Iterator[None]:
    if told is None:
        yield
        return
    _TOLD.append(told)
    try:
        yield
    finally:
        _TOLD.remove(told)


def tell(line: str) -> None:
    """A job's line of progress: in a worker of a cluster, sent to the client whose map runs
    the job (its console shows it, or its ``told``); in this process, to the ``told`` of the
    map that runs it, else the console (:func:`toolkit_base.console.note`)."""
    from toolkit_base import console

    if _TOLD:
        _TOLD[-1](line)
        return
    if "distributed" in sys.modules:  # a worker has it; this process, if it ran a cluster
        from distributed import get_worker

        try:
            worker = get_worker()
        except ValueError:  # not a worker
            worker = None
        if worker is not None:
            worker.log_event(TOPIC, line)
            return
    console.note(line)


@contextmanager
def executor(
    scheduler: str | None = None,
    workers: int = 1,
    *,
    jobs: int | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> Iterator[Executor]:
    """The executor that ``scheduler`` and ``workers`` choose, for the ``with`` block.

    Parameters
    ----------
    scheduler : str, optional
        ``tcp://HOST:PORT`` of an existing Dask scheduler; checked (:func:`probe`) first, once:
        open the executor before anything is removed, and run every map of the run on it.
    workers : int
        Without ``scheduler``: 1 runs in this process, more start a local cluster of that many
        worker processes (closed when the block ends). Unused with ``scheduler`` (the
        cluster's workers run the jobs).
    jobs : int, optional
        The most jobs one map of the block runs, when known: a local cluster gets at most one
        worker per job (one job or none runs in this process).
    connect_timeout : float
        Seconds to wait for the scheduler.
    """
    check_scheduler(scheduler)
    check_workers(workers)
    if jobs is not None:
        workers = min(workers, max(jobs, 1))
    if scheduler is None and workers == 1:
        yield Executor()
        return
    if scheduler is not None:
        probe(scheduler, connect_timeout)
    import logging

    from distributed import Client, LocalCluster

    local = None
    # Ctrl-C in a terminal reaches the whole process group, the local workers too: each
    # would print its own KeyboardInterrupt and CancelledError tracebacks. The workers are
    # therefore started with SIGINT blocked (a signal mask is inherited by the threads that
    # start them and by the processes they start) and, once up, handle it by doing nothing
    # (dask_setup below): this process stops the cluster. A Ctrl-C while the cluster starts
    # is delivered here when it is up.
    if scheduler is None:
        # multiprocessing's resource tracker, started by the first thread that needs it,
        # unblocks SIGINT in that thread once it is up (SIG_UNBLOCK, not the earlier mask):
        # started there, by the cluster's IO loop, it would leave SIGINT open in the loop
        # and in the workers it starts, and a Ctrl-C while they import gave their tracebacks.
        # Started now, before the mask, the cluster's own call finds it running.
        from multiprocessing import resource_tracker

        resource_tracker.ensure_running()
    masked = _block_sigint()
    try:
        if scheduler is None:
            local = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                host="127.0.0.1",
                silence_logs=logging.ERROR,
                memory_limit=0,  # no memory cap a run in this process would not have either
                # no dashboard, and its HTTP server on a free port rather than 8787
                scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"},
                preload=[__name__],  # dask_setup in each worker
            )
        masked = _unblock(masked)
        client = Client(local if local is not None else scheduler, timeout=connect_timeout,
                        set_as_default=False)
        try:
            yield Executor(client)
        except KeyboardInterrupt:
            # the workers and their nannies are being stopped mid-task: what they log about
            # it is not news
            _quiet_logs()
            raise
        finally:
            if local is not None:
                # nor is a worker's heartbeat that finds the scheduler gone as the cluster
                # closes (a loaded machine's race: "Failed to communicate with scheduler")
                with suppress(Exception):
                    client.run(_quiet_logs)
            client.close()
    finally:
        _unblock(masked)
        if local is not None:
            local.close()


def _block_sigint():
    """Block SIGINT in this (main) thread; the mask to restore, or None."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _unblock(mask) -> None:
    """Restore the mask of :func:`_block_sigint` (a SIGINT that waited is delivered now)."""
    import signal

    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _quiet_logs() -> None:
    import logging

    for name in ("distributed", "tornado", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def dask_setup(worker) -> None:
    """Run by each local worker process when it starts (``preload``, :func:`executor`).

    SIGINT gets a handler that only silences the worker (its logs, warnings and output),
    then is unblocked: a Ctrl-C to the process group leaves the worker to be stopped by the client,
    quietly (no heartbeat errors, no warnings about a job it was in the middle of). A
    handler, not ``SIG_IGN``, and no mask: the simulators the worker's jobs start get the
    default SIGINT again and stop with the rest of the group.
    """
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _worker_interrupted)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _worker_interrupted(signum, frame) -> None:
    """A local worker after Ctrl-C: the client stops it; nothing it or a job of it still
    prints (logs, warnings, a simulator that stopped) reaches the terminal."""
    import logging
    import os
    import warnings

    _quiet_logs()
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    null = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        os.dup2(null, fd)
    os.close(null)


def run_all(
    fn: Callable,
    items: Sequence,
    *,
    names: Sequence[str] | None = None,
    scheduler: str | None = None,
    workers: int = 1,
    progress: Callable[[object], object] | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> list:
    """``[fn(x) for x in items]`` on the executor that ``scheduler`` and ``workers`` choose
    (:func:`executor`, :meth:`Executor.map`); a local cluster gets at most one worker per item.

    ``fn`` is a module-level function (or a ``functools.partial`` of one) of one item; ``names``
    (one per item) name the tasks on the cluster, a unique suffix added per call.
    """
    items = list(items)
    with executor(scheduler, workers, jobs=len(items), connect_timeout=connect_timeout) as ex:
        return ex.map(fn, items, names=names, progress=progress)
