"""The system bench (:mod:`cocotb_tests.tb_system`): a random 3-layer QNN mapped on a 2x2 mesh,
loaded, and run inference by inference against the golden chain."""

from __future__ import annotations

import random
from collections.abc import Mapping

from regression.cache import module_entry
from rtl_gen.registry import block

__all__ = ["SYSTEM_SHAPES", "chain_config", "config", "params", "plan"]

#: Layer widths ``(N_0, N_1, N_2, N_3)`` of the system's 3-layer QNN and the tile size that
#: maps it on 4 nodes of a 2x2 mesh (2 + 1 + 1 tiles; the second shape pads partly used tiles).
SYSTEM_SHAPES = (((16, 8, 4, 4), 4), ((12, 6, 4, 3), 4))


def _chain(job):
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


#: Inferences per job of a quick regression (the stimulus default otherwise).
QUICK_INFERENCES = 4


def plan(point) -> tuple | None:
    """Once per ``T`` (at parameter set 0): its own QNN parameters, whose ``k``, family and
    distribution vary with the position of ``T`` in the sweep."""
    if point.variant:
        return None
    i = point.index
    params = {"T": point.T, "k": point.ks[i % len(point.ks)], "family": ("sym", "asym")[i % 2],
              "distribution": ("uniform", "peaked")[i % 2], "shape": i % 2}
    return (params, point.base_seed * 1000 + point.T,
            {"inferences": QUICK_INFERENCES} if point.quick else {})


def params(job) -> dict:
    """The :class:`rtl_gen.params.RTLConfig` arguments the mapper chooses for the job's QNN."""
    from rtl_gen.mapper import config_for_chain

    qnn, neurons = _chain(job)
    p = dict(job.params)
    cfg = config_for_chain(
        qnn.integer_layers(), tile_neurons=neurons, mesh_rows=2, mesh_cols=2, lanes=p.get("lanes")
    )
    return cfg.as_dict()


def config(job, manifest: Mapping) -> dict:
    """Inferences of ``job.stim`` (:class:`regression.stimulus.SystemStimulus`)."""
    stim = job.stim
    qnn, _ = _chain(job)
    n = int(stim.inferences)
    return chain_config(
        manifest,
        qnn.integer_layers(),
        qnn.random_input(n, seed=job.seed),
        seed=job.seed,
        p_idle=float(stim.p_idle),
        p_stall=float(stim.p_stall),
        reset=bool(stim.reset),
        corrupt=stim.corrupt,
    )


def chain_config(
    manifest: Mapping,
    layers,
    batch,
    *,
    seed: int,
    p_idle: float,
    p_stall: float,
    reset: bool = False,
    corrupt: str | None = None,
    loaded=None,
) -> dict:
    """The :mod:`cocotb_tests.tb_system` configuration of a chain of golden layers.

    ``layers`` (a chain of :class:`golden_models.IntegerLayer`) is mapped on the mesh of the
    manifest's parameters; ``batch`` holds the layer-0 input code vectors, one inference each.
    Every inference's expected output events and counters come from
    :func:`rtl_gen.mapper.system_reference`, cross-checked with the chain run on its own.
    ``loaded`` (default ``layers``) is the chain whose images the bench loads: a different
    one is a planted fault the comparison must catch.
    """
    from golden_models import encode_events
    from rtl_gen.mapper import map_chain, system_reference
    from rtl_gen.params import RTLConfig

    config = RTLConfig(**manifest["parameters"])
    smap = map_chain(config, layers)
    loaded_map = smap if loaded is None else map_chain(config, loaded)
    module = block("system").module
    entry = module_entry(manifest, module)
    port_names = {p["name"] for p in entry["ports"]}
    n = len(batch)
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
            raise ValueError(f"{module} has no counter ports {missing}")
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
    beats = [{"node": b[0], "target": b[1], "addr": b[2], "data": b[3]}
             for b in loaded_map.load_beats()]
    T, G = config.T, config.groups
    span = config.n_in + len(layers) * (T * G + config.tile_neurons + config.n_in + 8)
    rng = random.Random(f"reset:{seed}")
    return {
        "seed": seed,
        "T": T,
        "module": entry,
        "out_mask": [layers[-1].out_mask.i_max, layers[-1].out_mask.k],
        "load": beats,
        "reload": [b for b in beats if b["target"] == 3],
        "inferences": inferences,
        "p_idle": p_idle,
        "p_stall": p_stall,
        "timeout": int(200 + 6 * span / max(0.05, 1 - max(p_idle, p_stall))),
        "reset": [rng.randrange(1, n), span] if reset and n > 1 else None,
        "corrupt": corrupt,
        "layers": len(layers),
        "mesh": [config.mesh_rows, config.mesh_cols],
        "tiles": len(smap.tiles),
    }
