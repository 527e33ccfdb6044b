"""The regression API: generate Verilog, build each parameter set once per simulator, run benches.

``run_regression(...)`` is what ``matterhorn regress`` and ``matterhorn flow`` call; the pytest
files in this package run the same jobs one by one. A *job* is one bench on one generated
parameter set on one simulator, with its stimulus (seeded, from the golden models). Verilog
comes from :func:`rtl_gen.generate.generate` (the API behind ``matterhorn generate``); one
build directory per (simulator, module, Verilog content), reused by every job on it.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from cocotb_tests import sim

#: Benches in the order the regression runs them.
BENCHES = ("encoder", "sram", "tile", "router", "system")
#: Schema identifier of the summary JSON (docs/regress.md).
SCHEMA = "matterhorn-regress-summary/1"
#: Default root of generated Verilog and builds (relative to the working directory).
DEFAULT_ROOT = Path("build") / "cocotb"


def _check_T(T: object) -> int:
    if isinstance(T, bool) or not isinstance(T, int):
        raise TypeError(f"T must be an integer, not {T!r}")
    if T not in (2, 4, 8, 16, 32, 64):
        raise ValueError(f"T must be one of 2, 4, 8, 16, 32, 64, not {T!r}")
    return T


def _check_k(k: object, T: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k must be an integer, not {k!r}")
    if not 0 <= k < T:
        raise ValueError(f"k must be in 0..{T - 1} for T={T}, not {k!r}")
    return k


# -- generated Verilog --------------------------------------------------------------------------


def _params_key(params: Mapping) -> str:
    text = json.dumps(dict(params), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def generate_rtl(params: Mapping, root: Path) -> tuple[Path, dict]:
    """Verilog and manifest of ``RTLConfig(**params)`` under ``root/rtl/<key>`` (cached).

    Written to a temporary directory first and moved into place, so an interrupted run never
    leaves a half-written set behind.
    """
    from rtl_gen.generate import generate
    from rtl_gen.params import RTLConfig

    config = RTLConfig(**params)
    out = Path(root) / "rtl" / _params_key(params)
    manifest_path = out / "manifest.json"
    if manifest_path.is_file():
        return out, json.loads(manifest_path.read_text())
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=".gen-"))
    try:
        generate(config, tmp)
        if not out.exists():
            os.replace(tmp, out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    return out, json.loads(manifest_path.read_text())


def module_entry(manifest: Mapping, module: str) -> dict:
    """The manifest record of ``module``; a clear error if the generator skipped it."""
    mods = manifest.get("modules", {})
    if module not in mods:
        raise ValueError(f"manifest has no module {module!r}; modules: {sorted(mods)}")
    entry = mods[module]
    if "skipped" in entry:
        raise ValueError(f"the generator skipped {module!r}: {entry['skipped']}")
    return entry


def verilator_waivers(manifest: Mapping) -> list[str]:
    """``-Wno-<warning>`` flags for the lint waivers the generator lists."""
    out = []
    for w in manifest.get("lint", {}).get("waivers", []) or []:
        name = w.get("warning") if isinstance(w, Mapping) else w
        if name and str(name).isidentifier():
            out.append(f"-Wno-{name}")
    return sorted(set(out))


def build_module(
    sim_name: str, rtl_dir: Path, manifest: Mapping, module: str, root: Path, waves: bool
) -> sim.Build:
    entry = module_entry(manifest, module)
    sources = [rtl_dir / entry["file"]]
    extra = [rtl_dir / f for f in entry.get("depends", [])]
    key = _params_key({"p": manifest.get("parameters"), "m": module, "w": waves})
    build_dir = Path(root) / "sim" / sim_name / f"{module}-{key}"
    return sim.build(
        sim_name,
        [*extra, *sources],
        module,
        build_dir,
        waves=waves,
        extra_args=verilator_waivers(manifest),
    )


# -- jobs ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """One bench on one parameter set on one simulator.

    ``params`` are :class:`rtl_gen.params.RTLConfig` keyword arguments; ``stim`` the bench's
    stimulus options (seeded).
    """

    bench: str
    sim: str
    params: tuple[tuple[str, object], ...]
    stim: tuple[tuple[str, object], ...] = ()
    seed: int = 0

    @property
    def name(self) -> str:
        p = dict(self.params)
        parts = [self.bench, f"T{p.get('T')}", str(p.get("family", "sym"))]
        for key, tag in (("weight_bits", "w"), ("lanes", "L"), ("k", "k")):
            if key in p:
                parts.append(f"{tag}{p[key]}")
        parts.append(f"s{self.seed}")
        return "-".join(parts) + f"@{self.sim}"


def job(bench: str, sim_name: str, params: Mapping, seed: int = 0, **stim) -> Job:
    if bench not in BENCHES:
        raise ValueError(f"bench must be one of {BENCHES}, not {bench!r}")
    sim.check_sim(sim_name)
    return Job(bench, sim_name, tuple(sorted(params.items())), tuple(sorted(stim.items())), seed)


@dataclass
class JobResult:
    job: Job
    passed: bool
    report: dict = field(default_factory=dict)
    error: str = ""
    build_seconds: float = 0.0
    run_seconds: float = 0.0


def _tile_config(job: Job, manifest: Mapping) -> dict:
    from cocotb_tests.reference import TileGeometry, tile_blocks

    stim = dict(job.stim)
    geo = TileGeometry.from_manifest(manifest)
    ks = tuple(stim.get("ks", (0, 1, 2)))
    blocks = tile_blocks(
        geo, job.seed, blocks=int(stim.get("blocks", 6)), windows=int(stim.get("windows", 8)), ks=ks
    )
    rng = random.Random(f"reset:{job.seed}")
    resets = []
    if stim.get("reset", True):
        # one reset during integrate and one during fire, in distinct windows
        spots = [(b, w) for b, blk in enumerate(blocks) for w in range(len(blk["windows"]))]
        for phase, (b, w) in zip(("integrate", "fire"), rng.sample(spots, 2), strict=True):
            resets.append([b, w, phase])
    return {
        "seed": job.seed,
        "T": geo.T,
        "module": module_entry(manifest, "mttfs_tile"),
        "counters": module_entry(manifest, "mttfs_tile")["counters"],
        "geometry": {"T": geo.T, "n_in": geo.n_in, "neurons": geo.neurons, "groups": geo.groups},
        "p_idle": float(stim.get("p_idle", 0.25)),
        "p_stall": float(stim.get("p_stall", 0.35)),
        "blocks": blocks,
        "resets": resets,
        "corrupt": stim.get("corrupt"),
    }


def _encoder_config(job: Job, manifest: Mapping) -> dict:
    from cocotb_tests.reference import encoder_vectors
    from golden_models import CodeSpace

    stim = dict(job.stim)
    p = manifest["parameters"]
    space = CodeSpace(int(p["T"]), str(p["family"]))
    n = int(stim.get("vectors", 24))
    vectors = encoder_vectors(
        space, int(p["n_in"]), int(p["i_max_in"]), int(p["k"]), job.seed, vectors=n
    )
    rng = random.Random(f"reset:{job.seed}")
    return {
        "seed": job.seed,
        "T": space.T,
        "i_max": int(p["i_max_in"]),
        "k": int(p["k"]),
        "module": module_entry(manifest, "mttfs_encoder"),
        "p_idle": float(stim.get("p_idle", 0.25)),
        "p_stall": float(stim.get("p_stall", 0.35)),
        "vectors": vectors,
        "reset": [rng.randrange(1, n), rng.choice(("collect", "emit"))]
        if stim.get("reset", True) and n > 1
        else None,
        "corrupt": stim.get("corrupt"),
    }


#: bench -> (top module, cocotb test module, config builder)
_BENCH_TABLE = {
    "encoder": ("mttfs_encoder", "cocotb_tests.tb_encoder", _encoder_config),
    "tile": ("mttfs_tile", "cocotb_tests.tb_tile", _tile_config),
}


def run_job(j: Job, root: Path | str = DEFAULT_ROOT, *, waves: bool = False) -> JobResult:
    """Generate, build (cached) and run one job; return its result (never raises on a
    mismatch: the result says it failed and why)."""
    root = Path(root).resolve()
    if j.bench not in _BENCH_TABLE:
        raise ValueError(f"no bench for {j.bench!r} yet; available: {sorted(_BENCH_TABLE)}")
    module, test_module, make_config = _BENCH_TABLE[j.bench]
    rtl_dir, manifest = generate_rtl(dict(j.params), root)
    t0 = time.perf_counter()
    b = build_module(j.sim, rtl_dir, manifest, module, root, waves)
    t1 = time.perf_counter()
    config = make_config(j, manifest)
    run_dir = root / "runs" / j.name.replace("@", "-")
    res = sim.run(b, test_module, config, run_dir, seed=j.seed, waves=waves)
    t2 = time.perf_counter()
    report = dict(res.report)
    error = ""
    if not res.passed:
        examples = report.get("mismatch_examples") or []
        error = "; ".join(examples[:3]) or f"failed tests {res.failed}: {res.tail(15)}"
    return JobResult(j, res.passed, report, error, t1 - t0, t2 - t1)
