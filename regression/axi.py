"""The AXI wrappers on Icarus and Verilator, driven by cocotbext-axi (docs/rtl_axi.md).

:func:`system_config` and :func:`tile_config` turn golden layers into the configuration of
``cocotb_tests/tb_axi.py``: the AXI4-Lite writes that load the images (``LOAD_DATA`` words and
``LOAD_CMD``, :func:`rtl_gen.axi_sim.load_writes`), and per run the AXI4-Stream beats in, the
beats expected out and the counters expected after it (the golden reference). :func:`run_axi`
generates the Verilog (cached), builds the wrapper with the block it instantiates and runs the
bench; its result says whether every run was bit-exact.

The regression's job shape is here too, so the wrappers become bench kinds with one entry
each: :class:`AxiStimulus`, :func:`job_params` (the configuration the job's random network
needs), :func:`job_config` (the bench configuration from a job and its manifest) and
:func:`plan` (the job a sweep runs). The block's file comes from the manifest's ``depends``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from regression import sim
from regression.cache import generate_rtl

__all__ = ["AxiRun", "AxiStimulus", "job_config", "job_params", "plan", "run_axi",
           "system_config", "tile_config"]

#: The cocotb bench module.
BENCH = "cocotb_tests.tb_axi"


#: Counters read per look while a run goes on: a look must fit in a run (a tile's window is
#: a few tens of clocks, an inference on the mesh a few hundred).
LOOK_SAMPLE = {"tile": 2, "system": 6}


def _common(kind: str, config, beats, seed: int, p_pause: float) -> dict:
    from rtl_gen.axi import counter_registers
    from rtl_gen.axi_sim import load_writes
    from rtl_gen.regmap import register_map

    rm = register_map(kind, config)
    mapped = {r.address for r in rm.registers}
    return {
        "kind": kind,
        "seed": seed,
        "p_pause": p_pause,
        "look_sample": LOOK_SAMPLE[kind],
        "writes": [list(w) for beat in beats for w in load_writes(rm, beat)],
        "id": [rm["ID"].address, rm["ID"].reset],
        "unmapped": next(a for a in range(0, rm.size, 4) if a not in mapped),
        "done": rm["DONE"].address,
        "status": [rm["STATUS"].address, 1 << rm["STATUS"].field("tlast_error").lsb],
        "counters": {name: rm[name].address for name in counter_registers(kind, config).values()},
        "out_addr_width": rm["INFO2"].field("addr_w").reset,
        # clocks a run may take before the bench calls it hung: the inputs, every layer's walk
        # and output, all slowed by the pauses, with room to spare
        "timeout": 20 * (config.n_in + config.mesh_rows * config.mesh_cols
                         * (config.T * config.groups + config.tile_neurons + config.n_in + 8))
        + 2000,
    }


def system_config(config, layers, batch, *, seed: int = 0, p_pause: float = 0.3,
                  bad_tlast: int | None = None) -> dict:
    """The bench configuration of a chain of golden layers on ``mttfs_axi_system``.

    ``batch`` holds the layer-0 code vectors, one inference each; ``bad_tlast`` is the index of
    an inference whose vector is sent with a stray TLAST after its second code (the wrapper
    must report it in ``STATUS`` and still run the vector, which is framed by its count).
    """
    from rtl_gen.axi_sim import reference_counters
    from rtl_gen.mapper import map_chain, system_reference

    smap = map_chain(config, layers)
    cfg = _common("system", config, smap.load_beats(), seed, p_pause)
    aw, tw = cfg["out_addr_width"], config.time_width
    runs = []
    for n, q in enumerate(batch):
        ref = system_reference(smap, q)
        codes = [int(c) & ((1 << tw) - 1) for c in smap.pad_input(q).tolist()]
        cut = [2] if n == bad_tlast and len(codes) > 2 else []
        runs.append({
            "in": codes, "cut": cut,
            "out": [int(a) | (int(t) << aw) for a, t in zip(ref.out_index.tolist(),
                                                           ref.out_time.tolist(), strict=True)],
            "counters": reference_counters(smap, ref),
        })
    cfg["runs"] = runs
    return cfg


def tile_config(config, layer, batch, *, seed: int = 0, p_pause: float = 0.3) -> dict:
    """The bench configuration of one golden layer (``n_out <= tile_neurons``) on
    ``mttfs_axi_tile``: each vector of ``batch`` is encoded into a window of events."""
    from golden_models import encode_events
    from rtl_gen.tile import load_beats

    cfg = _common("tile", config, load_beats(config, layer), seed, p_pause)
    aw = cfg["out_addr_width"]
    runs = []
    for q in batch:
        idx, tm = encode_events(q, layer.in_mask)
        res = layer.run_events(idx, tm)
        events = [int(a) | (int(t) << config.in_addr_width) for a, t in zip(idx.tolist(),
                                                                            tm.tolist(),
                                                                            strict=True)]
        counters = {f"COUNTERS.{k}": int(v) for k, v in res.counters.as_dict().items()}
        runs.append({
            "in": events, "cut": [],
            "out": [int(a) | (int(t) << aw) for a, t in zip(res.out_index.tolist(),
                                                           res.out_time.tolist(), strict=True)],
            "counters": counters,
        })
    cfg["runs"] = runs
    return cfg


@dataclass
class AxiRun:
    """One bench run: passed, the bench's report (cycles, mismatches, reads checked), log."""

    passed: bool
    report: dict
    log: Path | None

    @property
    def error(self) -> str:
        examples = self.report.get("mismatch_examples", [])
        return "; ".join(examples[:5]) or f"see {self.log}"


def run_axi(kind: str, config, bench_config: dict, sim_name: str, root: Path | str,
            run_dir: Path | str) -> AxiRun:
    """Generate (cached under ``root``), build and run ``kind``'s wrapper on ``sim_name``."""
    from rtl_gen.axi import BLOCKS

    sim.check_sim(sim_name)
    root = Path(root)
    rtl, manifest = generate_rtl(config.as_dict(), root)
    top = BLOCKS[kind][0]
    entry = manifest["modules"][top]
    # the wrapper instantiates its block's module: the files it depends on come with it
    sources = [rtl / f for f in entry.get("depends", ())] + [rtl / entry["file"]]
    build_dir = root / "sim" / f"{sim_name}-{top}-{rtl.name}"
    b = sim.build(sim_name, sources, top, build_dir)
    res = sim.run(b, BENCH, bench_config, run_dir, seed=int(bench_config["seed"]))
    return AxiRun(res.passed and res.report.get("mismatches") == 0, res.report, res.log)



# -- the regression's job shape ---------------------------------------------------------------

#: The random networks of a job: ``kind -> (layer widths, tile neurons, mesh, weight bits)``.
#: The system runs a 3-layer chain on 4 nodes of a 2x2 mesh, the tile one whole layer.
NETWORKS = {"system": ((8, 8, 4, 4), 4, (2, 2), 1), "tile": ((32, 6), 6, (1, 1), 2)}


@dataclass(frozen=True)
class AxiStimulus:
    """``runs`` input vectors (inferences or windows); every AXI channel pauses with
    probability ``p_pause`` on a clock; ``bad_tlast``: the system's second vector carries a
    stray TLAST."""

    runs: int = 4
    p_pause: float = 0.3
    bad_tlast: bool = True


def _network(kind: str, job):
    from golden_models.qnn import random_qnn
    from rtl_gen.mapper import config_for_chain

    p = dict(job.params)
    widths, neurons, (rows, cols), wb = NETWORKS[kind]
    qnn = random_qnn(widths, T=int(p["T"]), k=int(p["k"]), weight_bits=wb, seed=job.seed)
    layers = qnn.integer_layers()
    return qnn, layers, config_for_chain(layers, tile_neurons=neurons, mesh_rows=rows,
                                         mesh_cols=cols)


def job_params(kind: str, job) -> dict:
    """The :class:`rtl_gen.params.RTLConfig` arguments of the job's network (``job.params``
    gives ``T`` and ``k``, ``job.seed`` the network)."""
    return _network(kind, job)[2].as_dict()


def job_config(kind: str, job, manifest: Mapping) -> dict:
    """The bench configuration of ``job`` (stimulus :class:`AxiStimulus` or ``None``) on the
    generated set of ``manifest``."""
    from rtl_gen.params import RTLConfig

    stim = job.stim if job.stim is not None else AxiStimulus()
    qnn, layers, _ = _network(kind, job)
    config = RTLConfig(**manifest["parameters"])
    batch = qnn.random_input(int(stim.runs), seed=job.seed + 1)
    if kind == "tile":
        return tile_config(config, layers[0], batch, seed=job.seed, p_pause=stim.p_pause)
    return system_config(config, layers, batch, seed=job.seed, p_pause=stim.p_pause,
                         bad_tlast=1 if stim.bad_tlast else None)


def plan(point) -> tuple | None:
    """Once per sweep, at its first ``T`` and parameter set 0: ``(params, seed, stimulus)``."""
    if point.variant or point.index:
        return None
    return {"T": point.T, "k": point.ks[0]}, point.base_seed * 1000 + point.T, {}
