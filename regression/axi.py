"""The AXI wrappers on Icarus and Verilator, driven by cocotbext-axi (docs/rtl_axi.md): the
bench kinds ``axi_tile`` and ``axi_system`` of the regression.

:func:`system_config` and :func:`tile_config` turn golden layers into the configuration of
``cocotb_tests/tb_axi.py``: the AXI4-Lite writes that load the images (``LOAD_DATA`` words and
``LOAD_CMD``, :func:`rtl_gen.axi_sim.load_writes`), and per run the AXI4-Stream beats in, the
beats expected out, the counters expected after it (the golden reference) and the events it
checks.

The regression's job shape: :class:`regression.stimulus.AxiStimulus`, :func:`job_params` (the
configuration the job's random network needs), :func:`job_config` (the bench configuration
from a job and its manifest) and :func:`plan` (the job a sweep runs), entered in
:data:`regression.benches.BENCH_KINDS` once per wrapper. The job is built like any other
(:func:`regression.cache.build_module`): the wrapper instantiates its block's module, whose
file comes with it from the manifest entry's ``depends``.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from regression.stimulus import AXI_CORRUPT_MODES, AxiStimulus

__all__ = ["AxiStimulus", "job_config", "job_params", "plan", "system_config", "tile_config"]

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
            # as the system bench counts: the encoder's events and every tile's in and out
            "events": int(ref.encoder_events) + sum(c.events_in + c.events_out
                                                    for c in ref.tile_counters.values()),
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
        out = [int(a) | (int(t) << aw) for a, t in zip(res.out_index.tolist(),
                                                        res.out_time.tolist(), strict=True)]
        # as the tile bench counts: the input and the output events
        runs.append({"in": events, "cut": [], "out": out, "counters": counters,
                     "events": len(events) + len(out)})
    cfg["runs"] = runs
    return cfg


# -- the regression's job shape ---------------------------------------------------------------

#: The random networks of a job: ``kind -> (layer widths, tile neurons, mesh, weight bits)``.
#: The system runs a 3-layer chain on 4 nodes of a 2x2 mesh, the tile one whole layer.
NETWORKS = {"system": ((8, 8, 4, 4), 4, (2, 2), 1), "tile": ((32, 6), 6, (1, 1), 2)}


def _network(kind: str, job):
    from golden_models.qnn import random_qnn
    from rtl_gen.mapper import config_for_chain

    p = dict(job.params)
    widths, neurons, (rows, cols), wb = NETWORKS[kind]
    # the family of the sweep's first parameter set (T = 8 runs asym), codes over every level
    # so that every T and k sends events (a peaked sym network at T = 8, k = 2 sent none)
    qnn = random_qnn(widths, T=int(p["T"]), k=int(p["k"]), weight_bits=wb, seed=job.seed,
                     families=(p.get("family", "sym"),) * len(widths), distribution="uniform")
    layers = qnn.integer_layers()
    return qnn, layers, config_for_chain(layers, tile_neurons=neurons, mesh_rows=rows,
                                         mesh_cols=cols)


def job_params(kind: str, job) -> dict:
    """The :class:`rtl_gen.params.RTLConfig` arguments of the job's network (``job.params``
    gives ``T`` and ``k``, ``job.seed`` the network)."""
    return _network(kind, job)[2].as_dict()


def job_config(kind: str, job, manifest: Mapping) -> dict:
    """The bench configuration of ``job`` (stimulus :class:`AxiStimulus` or ``None``) on the
    generated set of ``manifest``.

    ``corrupt`` (self-checks): ``"alter"`` or ``"drop"`` changes one expected output word of
    the first run that has any, ``"load"`` flips bit 0 of every ``LOAD_DATA`` word written;
    each must fail the bench.
    """
    from rtl_gen.params import RTLConfig
    from rtl_gen.regmap import register_map

    stim = job.stim if job.stim is not None else AxiStimulus()
    if stim.corrupt not in AXI_CORRUPT_MODES:
        raise ValueError(f"corrupt must be one of {AXI_CORRUPT_MODES}, not {stim.corrupt!r}")
    qnn, layers, _ = _network(kind, job)
    config = RTLConfig(**manifest["parameters"])
    batch = qnn.random_input(int(stim.runs), seed=job.seed + 1)
    if kind == "tile":
        cfg = tile_config(config, layers[0], batch, seed=job.seed, p_pause=stim.p_pause)
    else:
        cfg = system_config(config, layers, batch, seed=job.seed, p_pause=stim.p_pause,
                            bad_tlast=1 if stim.bad_tlast else None)
    cfg["corrupt"] = stim.corrupt
    if stim.corrupt == "load":
        words = {r.address for r in register_map(kind, config).registers
                 if r.name.startswith("LOAD_DATA[")}
        cfg["writes"] = [[a, v ^ 1 if a in words else v] for a, v in cfg["writes"]]
    elif stim.corrupt is not None:
        run = next((r for r in cfg["runs"] if r["out"]), None)
        if run is None:
            raise ValueError(f"corrupt={stim.corrupt!r} needs a run with an output word; "
                             "none of this job's runs has one")
        rng = random.Random(f"corrupt:{job.seed}")
        i = rng.randrange(len(run["out"]))
        if stim.corrupt == "drop":
            del run["out"][i]
        else:
            run["out"][i] ^= 1
    return cfg


def plan(point) -> tuple | None:
    """Once per sweep, at its first ``T`` and parameter set 0: ``(params, seed, stimulus)``;
    the set's family."""
    if point.variant or point.index:
        return None
    return ({"T": point.T, "k": point.ks[0], "family": point.params["family"]},
            point.base_seed * 1000 + point.T, {})
