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
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from golden_models.codespace import check_k, check_T
from regression import coverage as cov
from regression import sim

#: Benches in the order the regression runs them.
BENCHES = ("encoder", "sram", "tile", "router", "system")
#: Schema identifier of the summary JSON (docs/regress.md).
SCHEMA = "matterhorn-regress-summary/1"
#: Default root of generated Verilog and builds (relative to the working directory).
DEFAULT_ROOT = Path("build") / "cocotb"


def _check_T(T: object) -> int:
    """:func:`golden_models.codespace.check_T`, plus the generator's ``T <= 64``."""
    from rtl_gen.params import MAX_T

    check_T(T)
    if T > MAX_T:
        raise ValueError(f"T must be at most {MAX_T} for the generated RTL, not {T!r}")
    return T


# -- generated Verilog --------------------------------------------------------------------------


def _generator_digest() -> str:
    """Digest of the generator's sources, so cached Verilog is regenerated when they change."""
    import rtl_gen

    h = hashlib.sha256()
    for path in sorted(Path(rtl_gen.__file__).parent.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def _params_key(params: Mapping) -> str:
    text = json.dumps({"p": dict(params), "gen": _generator_digest()}, sort_keys=True)
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
            try:
                os.replace(tmp, out)
            except OSError:
                if not manifest_path.is_file():  # not a concurrent writer of the same set
                    raise
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
        stim = dict(self.stim)
        if p.get("distribution"):
            parts.append(str(p["distribution"]))
        if stim.get("corrupt"):
            parts.append(f"corrupt-{stim['corrupt']}")
        parts.append(f"s{self.seed}")
        return "-".join(parts) + f"@{self.sim}"


def job(bench: str, sim_name: str, params: Mapping, seed: int = 0, **stim) -> Job:
    if bench not in BENCHES:
        raise ValueError(f"bench must be one of {BENCHES}, not {bench!r}")
    sim.check_sim(sim_name)
    return Job(bench, sim_name, tuple(sorted(params.items())), tuple(sorted(stim.items())), seed)


@dataclass
class JobResult:
    """The outcome of one job: ``passed``, the bench's ``report`` (docs/regress.md), why it
    failed (``error``) and the build and run times."""

    job: Job
    passed: bool
    report: dict = field(default_factory=dict)
    error: str = ""
    build_seconds: float = 0.0
    run_seconds: float = 0.0

    @property
    def events(self) -> int:
        """Events the bench checked (input and output)."""
        return int(self.report.get("events", 0))

    @property
    def mismatches(self) -> int:
        """Mismatched events, counters and stream-protocol errors."""
        return int(self.report.get("mismatches", 0 if self.passed else 1))

    @property
    def counters_rtl(self) -> dict:
        """Counter totals the design reported."""
        return dict(self.report.get("counter_totals_rtl", {}))

    @property
    def counters_golden(self) -> dict:
        """Counter totals of the golden model."""
        return dict(self.report.get("counter_totals_golden", {}))


def tile_config(
    manifest: Mapping,
    blocks: Sequence[Mapping],
    *,
    seed: int = 0,
    resets: Sequence[Sequence] = (),
    p_idle: float = 0.25,
    p_stall: float = 0.35,
    corrupt: str | None = None,
) -> dict:
    """The configuration :mod:`cocotb_tests.tb_tile` reads: the one home of its layout.

    Parameters
    ----------
    manifest : mapping
        Manifest of the generated Verilog (:func:`generate_rtl`).
    blocks : sequence of dict
        Loads and their windows (:func:`regression.reference.tile_block`).
    seed : int
        Seed of the bench's random idle and stall cycles.
    resets : sequence of [block, window, phase]
        Windows cut by a reset, ``phase`` ``"integrate"`` or ``"fire"``.
    p_idle, p_stall : float
        Probability of an idle input cycle and of a low ``ready`` on the output.
    corrupt : {None, "alter", "drop"}
        Self-check: alter or drop one expected event so the bench must fail.
    """
    from regression.reference import TileGeometry

    geo = TileGeometry.from_manifest(manifest)
    entry = module_entry(manifest, "mttfs_tile")
    return {
        "seed": seed,
        "T": geo.T,
        "module": entry,
        "counters": entry["counters"],
        "geometry": {"T": geo.T, "n_in": geo.n_in, "neurons": geo.neurons, "groups": geo.groups},
        "p_idle": float(p_idle),
        "p_stall": float(p_stall),
        "blocks": [dict(b) for b in blocks],
        "resets": [list(r) for r in resets],
        "corrupt": corrupt,
    }


def _tile_config(job: Job, manifest: Mapping) -> dict:
    from regression.reference import TileGeometry, tile_blocks

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
    return tile_config(
        manifest,
        blocks,
        seed=job.seed,
        resets=resets,
        p_idle=float(stim.get("p_idle", 0.25)),
        p_stall=float(stim.get("p_stall", 0.35)),
        corrupt=stim.get("corrupt"),
    )


def _encoder_config(job: Job, manifest: Mapping) -> dict:
    from golden_models import CodeSpace
    from regression.reference import encoder_vectors

    stim = dict(job.stim)
    p = manifest["parameters"]
    space = CodeSpace(int(p["T"]), str(p["family"]))
    n = int(stim.get("vectors", 40))
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


def _sram_config(job: Job, manifest: Mapping) -> dict:
    from regression.reference import (
        TileGeometry,
        load_beats,
        random_codes,
        random_layer,
        tile_window,
    )

    stim = dict(job.stim)
    geo = TileGeometry.from_manifest(manifest)
    entry = module_entry(manifest, "mttfs_sram")
    depth, width = int(entry["sram"]["depth"]), int(entry["sram"]["width"])
    rng = random.Random(f"sram:{job.seed}")
    T = geo.T
    layer = random_layer(
        rng,
        geo,
        i_max_in=rng.randrange(T),
        i_max_out=rng.randrange(T),
        k=rng.randrange(3),
        dist="uniform",
    )
    rows = {b["addr"]: b["data"] for b in load_beats(geo, layer) if b["target"] == 0}
    ops: list[list] = []

    def idle():
        while rng.random() < 0.2:
            ops.append(["idle"])

    order = list(range(depth))
    rng.shuffle(order)
    for a in order:
        ops.append(["write", a, rows[a]])
        idle()
    windows = int(stim.get("windows", 12))
    reset_at = rng.randrange(windows // 2, windows) if stim.get("reset", True) else -1
    for w in range(windows):
        if w == reset_at:
            ops.append(["reset"])
        q = random_codes(rng, geo.space, geo.n_in, ("peaked", "uniform")[w % 2], layer.in_mask.mu)
        for a, _ in tile_window(layer, q)["in"]:
            ops.append(["read", a, rows[a]])
            idle()
    # random traffic: writes of random words, reads, a read right after a write
    for _ in range(int(stim.get("random_ops", 64))):
        a = rng.randrange(depth)
        r = rng.random()
        if r < 0.35:
            ops.append(["write", a, rng.randrange(1 << width)])
            if rng.random() < 0.5:
                ops.append(["read", a, None])
        elif r < 0.8:
            ops.append(["read", a, None])
        else:
            ops.append(["idle"])
    if stim.get("corrupt"):
        # self-check: one golden row altered in the expectation
        for op in ops:
            if op[0] == "read" and op[2] is not None:
                op[2] ^= 1
                break
    return {"seed": job.seed, "T": T, "depth": depth, "width": width, "ops": ops, "module": entry}


#: Layer widths ``(N_0, N_1, N_2, N_3)`` of the system's 3-layer QNN and the tile size that
#: maps it on 4 nodes of a 2x2 mesh (2 + 1 + 1 tiles; the second shape pads partly used tiles).
SYSTEM_SHAPES = (((16, 8, 4, 4), 4), ((12, 6, 4, 3), 4))


def _system_chain(job: Job):
    from golden_models.qnn import random_qnn

    p = dict(job.params)
    widths, neurons = SYSTEM_SHAPES[int(p.get("shape", 0))]
    rng = random.Random(f"system:{job.seed}")
    fam = p.get("family", "sym")
    families = (fam, *(rng.choice(("sym", "asym")) for _ in range(len(widths) - 1)))
    qnn = random_qnn(
        widths,
        T=int(p["T"]),
        k=int(p["k"]),
        families=families,
        weight_bits=int(p.get("weight_bits", 1)),
        rounding=rng.choice(("floor", "round")),
        distribution=str(p.get("distribution", "peaked")),
        seed=job.seed,
    )
    return qnn, neurons


def _system_params(job: Job) -> dict:
    from rtl_gen.mapper import config_for_chain

    qnn, neurons = _system_chain(job)
    p = dict(job.params)
    cfg = config_for_chain(
        qnn.integer_layers(), tile_neurons=neurons, mesh_rows=2, mesh_cols=2, lanes=p.get("lanes")
    )
    return cfg.as_dict()


def _system_config(job: Job, manifest: Mapping) -> dict:
    from golden_models import encode_events
    from rtl_gen.mapper import map_chain, system_reference
    from rtl_gen.params import RTLConfig

    stim = dict(job.stim)
    qnn, _ = _system_chain(job)
    layers = qnn.integer_layers()
    config = RTLConfig(**manifest["parameters"])
    smap = map_chain(config, layers)
    entry = module_entry(manifest, "mttfs_system")
    port_names = {p["name"] for p in entry["ports"]}
    n = int(stim.get("inferences", 8))
    batch = qnn.random_input(n, seed=job.seed)
    inferences = []
    for q in batch:
        ref = system_reference(smap, q)
        # the golden chain on its own, independent of the mapper
        idx, tm = encode_events(q, layers[0].in_mask)
        per_layer = []
        for layer in layers:
            res = layer.run_events(idx, tm)
            per_layer.append(res.counters.events_out)
            idx, tm = res.out_index, res.out_time
        golden_out = list(zip(idx.tolist(), tm.tolist(), strict=True))
        mapped_out = list(zip(ref.out_index.tolist(), ref.out_time.tolist(), strict=True))
        if golden_out != mapped_out:
            raise AssertionError("mapper reference output differs from the golden chain")
        for li, count in enumerate(per_layer):
            spikes = sum(ref.tile_counters[t.node].events_out for t in smap.tiles_of(li))
            if spikes != count:
                raise AssertionError(f"layer {li}: tiles emit {spikes} events, golden {count}")
        counters = {}
        for node, c in ref.tile_counters.items():
            for name, value in c.as_dict().items():
                counters[f"cnt_{name}_n{node}"] = int(value)
        counters["cnt_enc_events_out"] = ref.encoder_events
        counters["cnt_enc_events_suppressed"] = config.n_in - ref.encoder_events
        counters["cnt_flits"] = len(ref.flits)
        counters["cnt_hops"] = ref.total_hops
        missing = sorted(set(counters) - port_names)
        if missing:
            raise ValueError(f"mttfs_system has no counter ports {missing}")
        tiles_events = sum(c.events_in + c.events_out for c in ref.tile_counters.values())
        inferences.append(
            {
                "codes": [int(x) for x in smap.pad_input(q).tolist()],
                "out": [[int(a), int(t)] for a, t in golden_out],
                "tau": [int(t) for t in res.tau.tolist()],
                "counters": counters,
                "events": ref.encoder_events + tiles_events,
                "layer_events": per_layer,
            }
        )
    beats = [{"node": b[0], "target": b[1], "addr": b[2], "data": b[3]} for b in smap.load_beats()]
    T, G = config.T, config.groups
    p_idle = float(stim.get("p_idle", 0.2))
    p_stall = float(stim.get("p_stall", 0.35))
    span = config.n_in + len(layers) * (T * G + config.tile_neurons + config.n_in + 8)
    rng = random.Random(f"reset:{job.seed}")
    return {
        "seed": job.seed,
        "T": T,
        "module": entry,
        "out_mask": [layers[-1].out_mask.i_max, layers[-1].out_mask.k],
        "load": beats,
        "reload": [b for b in beats if b["target"] == 3],
        "inferences": inferences,
        "p_idle": p_idle,
        "p_stall": p_stall,
        "timeout": int(200 + 6 * span / max(0.05, 1 - max(p_idle, p_stall))),
        "reset": [rng.randrange(1, n), span] if stim.get("reset", True) and n > 1 else None,
        "corrupt": stim.get("corrupt"),
        "layers": len(layers),
        "mesh": [config.mesh_rows, config.mesh_cols],
        "tiles": len(smap.tiles),
    }


_ROUTER_PORTS = ("north", "east", "south", "west", "local")


def xy_port(x: int, y: int, dst_x: int, dst_y: int) -> str:
    """XY (dimension-order) routing decision, as docs/rtl_router.md states it."""
    if dst_x != x:
        return "east" if dst_x > x else "west"
    if dst_y != y:
        return "south" if dst_y > y else "north"
    return "local"


def _legal_dsts(port: str, x: int, y: int, rows: int, cols: int) -> list[tuple[int, int]]:
    """Destinations a flit can have when it arrives on ``port`` of node ``(x, y)`` under XY
    routing (it came from that neighbour, moving away from it; it never turns Y -> X)."""
    every = [(dx, dy) for dy in range(rows) for dx in range(cols)]
    if port == "local":
        return every
    if port == "west":  # from x-1, moving east
        return [(dx, dy) for dx, dy in every if x >= 1 and dx >= x]
    if port == "east":
        return [(dx, dy) for dx, dy in every if x <= cols - 2 and dx <= x]
    if port == "north":  # from y-1, moving south
        return [(dx, dy) for dx, dy in every if y >= 1 and dx == x and dy >= y]
    return [(dx, dy) for dx, dy in every if y <= rows - 2 and dx == x and dy <= y]


def _router_config(job: Job, manifest: Mapping) -> dict:
    stim = dict(job.stim)
    p = manifest["parameters"]
    rows, cols, T = int(p["mesh_rows"]), int(p["mesh_cols"]), int(p["T"])
    entry = module_entry(manifest, "mttfs_router")
    fields = {f["name"]: f for f in entry["streams"]["o_local"]["fields"]}
    addr_n, hop_max = 1 << int(fields["addr"]["width"]), rows + cols - 2
    rng = random.Random(f"router:{job.seed}")
    per_port = int(stim.get("flits", 10))
    positions = [(x, y) for y in range(rows) for x in range(cols)]
    pairs = sorted(
        {
            (i, xy_port(x, y, *d))
            for x, y in positions
            for i in _ROUTER_PORTS
            for d in _legal_dsts(i, x, y, rows, cols)
        }
    )
    phases = []
    plan = [(x, y, False) for x, y in positions] * int(stim.get("rounds", 2))
    if stim.get("reset", True):
        plan.insert(rng.randrange(1, len(plan)), (*rng.choice(positions), True))
    for x, y, reset in plan:
        combos = [(a, t) for a in range(addr_n) for t in range(T)]
        rng.shuffle(combos)
        chunk = len(combos) // len(_ROUTER_PORTS)
        flits, expected = {}, []
        for pi, port in enumerate(_ROUTER_PORTS):
            dsts = _legal_dsts(port, x, y, rows, cols)
            if not dsts:
                continue
            own = combos[pi * chunk : (pi + 1) * chunk]
            flits[port] = []
            for _ in range(per_port if port != "local" else 2 * per_port):
                dx, dy = rng.choice(dsts)
                a, t = rng.choice(own)
                f = {
                    "dst_x": dx,
                    "dst_y": dy,
                    "addr": a,
                    "t": t,
                    "hops": rng.randrange(max(1, hop_max)),
                }
                flits[port].append(f)
                out = xy_port(x, y, dx, dy)
                expected.append([port, out, dict(f, hops=f["hops"] + (out != "local"))])
        phases.append({"x": x, "y": y, "flits": flits, "expected": expected, "reset": reset})
    if stim.get("corrupt"):
        # self-check: one expected flit of the first phase altered or dropped
        exp = phases[0]["expected"]
        i = rng.randrange(len(exp))
        if stim["corrupt"] == "drop":
            del exp[i]
        else:
            exp[i][2] = dict(exp[i][2], hops=exp[i][2]["hops"] ^ 1)
    return {
        "seed": job.seed,
        "T": T,
        "module": entry,
        "phases": phases,
        "pairs": pairs,
        "p_idle": float(stim.get("p_idle", 0.25)),
        "p_stall": float(stim.get("p_stall", 0.35)),
        "timeout": 4000,
    }


#: bench -> (top module, cocotb test module, config builder)
_BENCH_TABLE = {
    "encoder": ("mttfs_encoder", "cocotb_tests.tb_encoder", _encoder_config),
    "sram": ("mttfs_sram", "cocotb_tests.tb_sram", _sram_config),
    "router": ("mttfs_router", "cocotb_tests.tb_router", _router_config),
    "tile": ("mttfs_tile", "cocotb_tests.tb_tile", _tile_config),
    "system": ("mttfs_system", "cocotb_tests.tb_system", _system_config),
}


def run_job(j: Job, root: Path | str = DEFAULT_ROOT, *, waves: bool = False) -> JobResult:
    """Generate, build (cached) and run one job; return its result.

    Never raises on a mismatch or a failing build: the result says it failed and why.
    """
    if j.bench not in _BENCH_TABLE:
        raise ValueError(f"no bench for {j.bench!r}; available: {sorted(_BENCH_TABLE)}")
    make_config = _BENCH_TABLE[j.bench][2]
    params = _system_params(j) if j.bench == "system" else dict(j.params)
    return _execute(j, params, lambda manifest: make_config(j, manifest), root, waves=waves)


def _execute(
    j: Job, params: Mapping, make_config, root: Path | str, *, waves: bool, run_name: str = ""
) -> JobResult:
    """Generate ``params``, build the bench's module (cached), run it on
    ``make_config(manifest)`` under ``root/runs/<run_name or job name>``."""
    root = Path(root).resolve()
    module, test_module, _ = _BENCH_TABLE[j.bench]
    t0 = t1 = time.perf_counter()
    try:
        rtl_dir, manifest = generate_rtl(params, root)
        t0 = time.perf_counter()
        b = build_module(j.sim, rtl_dir, manifest, module, root, waves)
        t1 = time.perf_counter()
        config = make_config(manifest)
        run_dir = root / "runs" / (run_name or j.name.replace("@", "-"))
        res = sim.run(b, test_module, config, run_dir, seed=j.seed, waves=waves)
    except (RuntimeError, SystemExit, OSError, AssertionError, ValueError) as exc:
        return JobResult(j, False, {}, f"{type(exc).__name__}: {exc}", t1 - t0, 0.0)
    t2 = time.perf_counter()
    report = dict(res.report)
    error = ""
    if not res.passed:
        examples = report.get("mismatch_examples") or []
        error = "; ".join(examples[:3]) or f"failed tests {res.failed}: {res.tail(15)}"
    return JobResult(j, res.passed, report, error, t1 - t0, t2 - t1)


def tile_params(layer) -> dict:
    """:class:`rtl_gen.params.RTLConfig` arguments of a tile that holds ``layer`` whole."""
    return {
        "T": layer.out_mask.T,
        "k": layer.out_mask.k,
        "family": layer.in_mask.space.family,
        "weight_bits": layer.weight_bits,
        "n_in": layer.n_in,
        "tile_neurons": layer.n_out,
    }


def run_tile(
    layer,
    windows,
    sim_name: str,
    *,
    out_dir: Path | str = DEFAULT_ROOT,
    seed: int = 0,
    p_idle: float = 0.25,
    p_stall: float = 0.35,
    name: str = "tile-layer",
    waves: bool = False,
) -> JobResult:
    """Run the generated tile on one golden layer and a list of input windows.

    The tile is generated at the layer's size (:func:`tile_params`), built (cached) on
    ``sim_name``, loaded with the layer through its load port and run by
    :mod:`cocotb_tests.tb_tile`, which compares every output event and every counter with
    :meth:`golden_models.integer_layer.IntegerLayer.run_events` of each window.

    Parameters
    ----------
    layer : golden_models.IntegerLayer
        The golden layer (weights, thresholds, masks).
    windows : sequence of torch.Tensor
        Input code vectors, one window each, ``layer.n_in`` codes of the layer's code space.
    sim_name : {"icarus", "verilator"}
    out_dir : path
        Root of the generated Verilog, builds and ``runs/<name>-<sim_name>``.
    seed : int
        Seed of the random idle and stall cycles.
    p_idle, p_stall : float
        Probability of an idle input cycle and of a low ``ready`` on the output.
    name : str
        Name of the run directory.
    waves : bool
        Dump waveforms.

    Returns
    -------
    JobResult
        ``passed``, ``error``, and the bench report: ``events_in``, ``events_out``,
        ``events_suppressed``, ``mismatches``, ``mismatch_examples``, ``counter_totals_rtl``
        and ``counter_totals_golden`` (see docs/regress.md).
    """
    from golden_models import IntegerLayer
    from regression.reference import TileGeometry, tile_block

    if not isinstance(layer, IntegerLayer):
        raise TypeError(f"layer must be a golden_models.IntegerLayer, not {type(layer).__name__}")
    windows = list(windows)
    if not windows:
        raise ValueError("windows must hold at least one input code vector, not none")
    for i, q in enumerate(windows):
        if tuple(getattr(q, "shape", ())) != (layer.n_in,):
            raise ValueError(
                f"window {i} must be a tensor of {layer.n_in} codes (the layer's n_in), "
                f"not shape {tuple(getattr(q, 'shape', ()))}"
            )
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, not {seed!r}")
    params = tile_params(layer)
    _check_T(params["T"])
    j = job("tile", sim_name, params, seed)

    def make_config(manifest: Mapping) -> dict:
        block = tile_block(TileGeometry.from_manifest(manifest), layer, windows, "layer")
        return tile_config(manifest, [block], seed=seed, p_idle=p_idle, p_stall=p_stall)

    return _execute(j, params, make_config, out_dir, waves=waves, run_name=f"{name}-{sim_name}")


# -- configurations -----------------------------------------------------------------------------

#: Per ``T``: (family, weight_bits, lanes) of the two default parameter sets, so every ``T``
#: runs both families, 1-bit and multi-bit weights, and one comparator-group layout.
_VARIANTS = {
    4: (("sym", 1, None), ("asym", 3, 3)),
    8: (("asym", 1, 4), ("sym", 2, None)),
    16: (("sym", 1, None), ("asym", 4, 3)),
    32: (("asym", 1, None), ("sym", 2, 4)),
    2: (("sym", 1, None), ("asym", 2, None)),
    64: (("sym", 1, None), ("asym", 2, 4)),
}


def block_params(T: int, variant: int, k: int, seed: int) -> dict:
    """RTLConfig arguments of default parameter set ``variant`` (0/1) of ``T``: the encoder's
    mask (``k``, a random ``I_max``) is fixed at elaboration; the tile's is loaded at run time."""
    family, wb, lanes = _VARIANTS[T][variant]
    rng = random.Random(f"params:{T}:{variant}:{k}:{seed}")
    params = {
        "T": T,
        "k": k,
        "family": family,
        "weight_bits": wb,
        "n_in": 16,
        "tile_neurons": 8,
        "i_max_in": rng.randrange(T),
    }
    if lanes is not None:
        params["lanes"] = lanes
    return params


def regression_jobs(
    Ts: Sequence[int] = (4, 8, 16),
    ks: Sequence[int] = (0, 1, 2),
    sims: Sequence[str] = sim.SIMULATORS,
    *,
    seed: int = 0,
    benches: Sequence[str] = BENCHES,
    quick: bool = False,
) -> list[Job]:
    """The jobs of a regression over ``Ts`` and ``ks`` on ``sims``.

    Per ``T``: two parameter sets (both families); the encoder runs on each with its own
    ``k`` (cycling through ``ks``) and a random ``I_max``; the tile runs every ``k`` of ``ks``
    with random ``I_max`` (loaded at run time) on each; the SRAM runs on one; the system runs
    a 3-layer random QNN on a 2x2 mesh (its ``k``, family and distribution vary with ``T``).
    ``quick``: one parameter set per ``T`` and fewer vectors.
    """
    ks = tuple(check_k(k, min(_check_T(T) for T in Ts)) for k in ks)
    for name in sims:
        sim.check_sim(name)
    for b in benches:
        if b not in BENCHES:
            raise ValueError(f"bench must be one of {BENCHES}, not {b!r}")
    jobs = []
    short = {"vectors": 12} if quick else {}
    tile_windows = 4 if quick else 8
    for ti, T in enumerate(Ts):
        for v in (0,) if quick else (0, 1):
            k = ks[(ti + v) % len(ks)]
            params = block_params(T, v, k, seed)
            s = seed * 1000 + T * 10 + v
            for name in sims:
                if "encoder" in benches:
                    jobs.append(job("encoder", name, params, s, **short))
                if "sram" in benches and v == 0:
                    jobs.append(job("sram", name, params, s))
                if "router" in benches and v == 0:
                    jobs.append(job("router", name, params, s))
                if "tile" in benches:
                    jobs.append(job("tile", name, params, s, ks=ks, windows=tile_windows))
        if "system" in benches:
            sys_params = {
                "T": T,
                "k": ks[ti % len(ks)],
                "family": ("sym", "asym")[ti % 2],
                "distribution": ("uniform", "peaked")[ti % 2],
                "shape": ti % 2,
            }
            for name in sims:
                jobs.append(
                    job(
                        "system",
                        name,
                        sys_params,
                        seed * 1000 + T,
                        **({"inferences": 4} if quick else {}),
                    )
                )
    return jobs


# -- the regression ------------------------------------------------------------------------------


def _row(r: JobResult) -> dict:
    rep = r.report
    p = dict(r.job.params)
    golden, rtl = r.counters_golden, r.counters_rtl
    sim_s = float(rep.get("sim_seconds", 0.0))
    events = r.events
    return {
        "name": r.job.name,
        "bench": r.job.bench,
        "sim": r.job.sim,
        "T": p.get("T"),
        "family": p.get("family", "sym"),
        "k": p.get("k"),
        "passed": r.passed,
        "vectors": int(rep.get("vectors", 0)),
        "events": events,
        "mismatches": r.mismatches,
        "resets": int(rep.get("resets", 0)),
        "counters_equal": bool(golden) and golden == rtl,
        "counter_totals_golden": golden,
        "counter_totals_rtl": rtl,
        "build_seconds": round(r.build_seconds, 3),
        "run_seconds": round(r.run_seconds, 3),
        "sim_seconds": round(sim_s, 3),
        "events_per_second": round(events / sim_s, 1) if sim_s > 0 else 0.0,
        "error": r.error,
    }


def summarize(results: Sequence[JobResult], wall_seconds: float, parameters: Mapping) -> dict:
    """The summary dict of a regression (schema in docs/regress.md)."""
    rows = [_row(r) for r in results]
    merged = cov.merge(r.report.get("coverage", {}) for r in results)
    per_sim = {}
    for name in sorted({r["sim"] for r in rows}):
        mine = [r for r in rows if r["sim"] == name]
        ev = sum(r["events"] for r in mine)
        secs = sum(r["sim_seconds"] for r in mine)
        per_sim[name] = {
            "jobs": len(mine),
            "events": ev,
            "sim_seconds": round(secs, 3),
            "events_per_second": round(ev / secs, 1) if secs > 0 else 0.0,
            "build_seconds": round(sum(r["build_seconds"] for r in mine), 3),
        }
    total_ev = sum(r["events"] for r in rows)
    total_sim = sum(r["sim_seconds"] for r in rows)
    return {
        "schema": SCHEMA,
        "parameters": dict(parameters),
        "configurations": len(rows),
        "passed": sum(r["passed"] for r in rows),
        "failed": sum(not r["passed"] for r in rows),
        "vectors": sum(r["vectors"] for r in rows),
        "events": total_ev,
        "mismatches": sum(r["mismatches"] for r in rows),
        "counters_equal": all(r["counters_equal"] for r in rows if r["passed"]),
        "coverage": cov.summary(merged),
        "wall_seconds": round(wall_seconds, 3),
        "events_per_second": round(total_ev / total_sim, 1) if total_sim > 0 else 0.0,
        "simulators": per_sim,
        "jobs": rows,
    }


def format_table(summary: Mapping) -> str:
    """A plain-text table of the summary (one line per job, then the totals)."""
    head = (
        f"{'job':<44} {'ok':<4} {'vec':>5} {'events':>7} {'mism':>5} {'ctr':>4} "
        f"{'build s':>8} {'ev/s':>8}"
    )
    lines = [head, "-" * len(head)]
    for r in summary["jobs"]:
        lines.append(
            f"{r['name']:<44} {'PASS' if r['passed'] else 'FAIL':<4} {r['vectors']:>5} "
            f"{r['events']:>7} {r['mismatches']:>5} {'=' if r['counters_equal'] else '!=':>4} "
            f"{r['build_seconds']:>8.1f} {r['events_per_second']:>8.0f}"
        )
        if r["error"]:
            lines.append(f"    {r['error'][:200]}")
    c = summary["coverage"]
    lines.append("-" * len(head))
    lines.append(
        f"{summary['passed']}/{summary['configurations']} passed, {summary['vectors']} vectors, "
        f"{summary['events']} events, {summary['mismatches']} mismatches, coverage "
        f"{c['percent']}% ({c['covered']}/{c['bins']} bins), wall {summary['wall_seconds']:.1f} s"
    )
    for name, s in summary["simulators"].items():
        lines.append(
            f"  {name}: {s['events']} events in {s['sim_seconds']:.2f} s simulated "
            f"({s['events_per_second']:.0f} events/s), builds {s['build_seconds']:.1f} s"
        )
    return "\n".join(lines)


def run_jobs(
    jobs: Sequence[Job],
    root: Path | str,
    *,
    workers: int = 1,
    waves: bool = False,
    progress=None,
) -> list[JobResult]:
    """Run ``jobs`` (``workers`` at a time); results in job order.

    Verilog is generated first, one parameter set at a time (elaboration is Python and holds
    the interpreter); builds and simulations then run in parallel as subprocesses.
    """
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, not {workers!r}")
    root = Path(root).resolve()
    for name in sorted({j.sim for j in jobs}):
        sim.ensure_simulator(name)
    seen = set()
    for j in jobs:
        params = _system_params(j) if j.bench == "system" else dict(j.params)
        key = _params_key(params)
        if key not in seen:
            seen.add(key)
            generate_rtl(params, root)

    def one(j: Job) -> JobResult:
        r = run_job(j, root, waves=waves)
        if progress is not None:
            progress(r)
        return r

    if workers == 1:
        return [one(j) for j in jobs]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, jobs))


def run_regression(
    T: int | Sequence[int] = 16,
    k: int | Sequence[int] = 1,
    sims: Sequence[str] | str = ("icarus",),
    *,
    workers: int = 1,
    seed: int = 0,
    waves: bool = False,
    out_dir: Path | str = Path("build") / "regress",
    benches: Sequence[str] = BENCHES,
    quick: bool = False,
    progress=None,
) -> dict:
    """Run the regression for ``T`` and ``k`` on ``sims``; write and return the summary.

    Parameters
    ----------
    T, k : int or sequence of int
        Window length(s) and dead-zone radius (radii).
    sims : str or sequence of {"icarus", "verilator"}
    workers : int
        Jobs run at a time.
    seed : int
        Seed of every stimulus (same seed, same vectors).
    waves : bool
        Dump waveforms (``runs/<job>/``); off by default (slow, large).
    out_dir : path
        Directory of the generated Verilog, builds, runs and ``regress_summary.json``.
    benches : sequence of str
        Subset of :data:`BENCHES`.
    quick : bool
        A short regression (one parameter set per ``T``, fewer vectors) for ``matterhorn
        flow``; its coverage is reported but not expected to reach 100%.
    progress : callable, optional
        Called with each :class:`JobResult` as it finishes.

    Returns
    -------
    dict
        The summary (docs/regress.md).
    """
    Ts = (T,) if isinstance(T, int) else tuple(T)
    ks = (k,) if isinstance(k, int) else tuple(k)
    for t in Ts:
        _check_T(t)
    for kk in ks:
        check_k(kk, min(Ts))
    if isinstance(sims, str):
        sims = (sims,)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, not {seed!r}")
    jobs = regression_jobs(Ts, ks, tuple(sims), seed=seed, benches=benches, quick=quick)
    start = time.perf_counter()
    results = run_jobs(jobs, out_dir, workers=workers, waves=waves, progress=progress)
    parameters = {
        "T": list(Ts),
        "k": list(ks),
        "sims": list(sims),
        "seed": seed,
        "workers": workers,
        "waves": waves,
        "benches": list(benches),
        "quick": quick,
    }
    summary = summarize(results, time.perf_counter() - start, parameters)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=out, suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, out / "regress_summary.json")
    return summary
