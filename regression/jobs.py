"""The job model: one bench on one parameter set on one simulator, and its result."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from regression import sim
from regression.benches import ALL_BENCHES, BENCH_KINDS

__all__ = ["Job", "JobResult", "job"]


@dataclass(frozen=True)
class Job:
    """One bench on one parameter set on one simulator.

    ``params`` are :class:`rtl_gen.params.RTLConfig` keyword arguments (the system bench's are
    the QNN's: it derives the configuration from the mapped network); ``stim`` the bench's typed
    stimulus options (:mod:`regression.stimulus`), seeded by ``seed``.
    """

    bench: str
    sim: str
    params: tuple[tuple[str, object], ...]
    stim: object = None
    seed: int = 0

    @property
    def name(self) -> str:
        p = dict(self.params)
        parts = [self.bench, f"T{p.get('T')}", str(p.get("family", "sym"))]
        for key, tag in (("weight_bits", "w"), ("lanes", "L"), ("k", "k")):
            if key in p:
                parts.append(f"{tag}{p[key]}")
        if p.get("distribution"):
            parts.append(str(p["distribution"]))
        repeat = getattr(self.stim, "repeat", 1)
        if repeat != 1:
            parts.append(f"x{repeat}")
        corrupt = getattr(self.stim, "corrupt", None)
        if corrupt:
            parts.append(f"corrupt-{corrupt}")
        parts.append(f"s{self.seed}")
        return "-".join(parts) + f"@{self.sim}"


def job(bench: str, sim_name: str, params: Mapping, seed: int = 0, **stim) -> Job:
    """A :class:`Job`; ``stim`` are fields of the bench's stimulus dataclass.

    Raises
    ------
    ValueError
        Unknown bench or simulator.
    TypeError
        A stimulus option the bench does not have.
    """
    if bench not in ALL_BENCHES:
        raise ValueError(f"bench must be one of {ALL_BENCHES}, not {bench!r}")
    sim.check_sim(sim_name)
    return Job(bench, sim_name, tuple(sorted(params.items())), BENCH_KINDS[bench].stimulus(**stim),
               seed)


@dataclass
class JobResult:
    """The outcome of one job: ``passed``, the bench's ``report`` (docs/regress.md), why it
    failed (``error``), the build and run times, and ``failed_in``: where a job that never
    reached the bench's verdict failed (``"generate"``, ``"build"`` or ``"run"``: a tool or
    a file; ``"bench"``: the bench stopped before its verdict, e.g. a module it imports is
    missing), empty otherwise. Such a job is an error of the job, never a mismatch."""

    job: Job
    passed: bool
    report: dict = field(default_factory=dict)
    error: str = ""
    build_seconds: float = 0.0
    run_seconds: float = 0.0
    failed_in: str = ""

    @property
    def events(self) -> int:
        """Events the bench checked (input and output)."""
        return int(self.report.get("events", 0))

    @property
    def mismatches(self) -> int:
        """Mismatched events, counters and stream-protocol errors, as the bench's report
        counts them (a job that failed before the bench's verdict has none: it is an error of
        the job, ``failed_in``)."""
        return int(self.report.get("mismatches", 0))

    @property
    def counters_rtl(self) -> dict:
        """Counter totals the design reported."""
        return dict(self.report.get("counter_totals_rtl", {}))

    @property
    def counters_golden(self) -> dict:
        """Counter totals of the golden model."""
        return dict(self.report.get("counter_totals_golden", {}))
