"""``matterhorn block``: a whole encoder block through its hardware pieces on real sentences,
every design, bit-exact, and its energy per block (docs/rtl_block.md).

:func:`run` loads and converts the model (the small random block, MiniLM or a model folder),
picks sentences of the evaluation split with their lengths spread, runs them through the
block's hardware pieces as each design (:func:`networks.block.block_case` once a design, then
:func:`regression.block.run_case`: every position, every key and value code, the raw sums,
both LayerNorms' streams and codes checked), prices each design with the paper's model at the
rates it measured (``energy_model``: :func:`model_block_energy`, :func:`model_ratios`) and,
with ``--gates``, in our gates on the same case (:mod:`matterhorn.block_gates`, movement at the
hops of the block's placement: :func:`hops_per_flit`), and writes ``block.json`` (schema
``matterhorn.block/1``, :func:`block_document`), ``block.md`` and ``block.png`` into ``--out``
(:func:`write`; the verdict, Markdown and figure are :mod:`matterhorn.block_report`'s).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

from golden_models.block_pieces import (
    ADD_NORM,
    DESIGNS,
    ENCODINGS,
    PIECES,
    TILE_NEURONS,
    Design,
)
from matterhorn.block_report import MODEL_COMPONENTS, markdown, plot
from regression.block_parts import seq_max_of

__all__ = ["BlockSetup", "GatesSetup", "KEPT_SCHEMA", "MADE_BY", "MODEL_PIECES", "Told",
           "block_document", "check_checkpoint", "check_designs", "check_gate_sentences",
           "check_run", "code_digest", "design_key", "hops_per_flit", "kept", "model_block_energy",
           "model_ratios", "read_kept", "run", "setup", "take_kept", "workload_dims", "write"]

#: Calibration sentences of a real model's conversion (as ``matterhorn layer``).
CALIBRATION = 6
#: The pieces the model's rows price (its positions' consumers: the tiles and the attention
#: path); the add+LayerNorm units are in no row of it.
MODEL_PIECES = tuple(p.name for p in PIECES if p.kind != ADD_NORM)
#: Schema of a design's result, kept as the design ends (``DIR/designs/<design>.json``).
KEPT_SCHEMA = "matterhorn.block-design/1"
#: The packages whose sources make a design's result: a kept result names their digest.
MADE_BY = ("golden_models", "networks", "regression", "rtl_gen", "synth_scripts", "matterhorn",
           "toolkit_base")


@dataclass(frozen=True)
class BlockSetup:
    """What a run is about: the network, its tokenizer, its name, the sentences, and
    (``source``) what the network was made from: the random block's seed, or the digest of
    the model folder's files and of the checkpoint's."""

    qnn: object
    tokenizer: object
    name: str
    sentences: list[str]
    seq_max: int
    source: str = ""


@dataclass(frozen=True)
class GatesSetup:
    """How :func:`run` prices each design in our gates (:mod:`matterhorn.block_gates`): the
    liberty, the replays' simulator, the working folder and the clock. The designs' replays
    are in ``work/<design>``; the netlists they share and their builds in ``work/netlists``,
    which a later run into the same folder reuses."""

    liberty: Path
    sim: str
    work: Path
    clock_ns: float = 10.0
    #: Sentences replayed at gate level, window by window (the first, the shortest), every
    #: other one priced by their fits (:mod:`synth_scripts.block_calibration`); 0: every
    #: sentence replayed
    sample: int = 0
    #: Tiles of each linear piece and heads of the attention path replayed in the sample,
    #: spread over them; every other one priced by their fits (0: all)
    tiles: int = 0
    heads: int = 0
    #: Windows of each replayed tile and rows of each add+LayerNorm unit in the sample, spread
    #: over its tokens (0: all)
    windows: int = 0

    @property
    def sampled(self) -> bool:
        """Whether only some tiles, heads or windows are replayed (every sentence then
        calibrated)."""
        return bool(self.tiles or self.heads or self.windows)

    def sampling_said(self) -> str:
        """What of the sample sentences a sampled pricing replays, in words (`` (2 tiles of
        each linear piece, ...; the others priced by their fits)``); empty when it replays
        all of them."""
        said = [f"{n} {what if n > 1 else one}" for n, what, one in (
            (self.tiles, "tiles of each linear piece", "tile of each linear piece"),
            (self.heads, "heads of the attention path", "head of the attention path"),
            (self.windows, "windows of each replayed tile and rows of each add+LayerNorm unit",
             "window of each replayed tile and row of each add+LayerNorm unit")) if n]
        return f" ({', '.join(said)}; the others priced by their fits)" if said else ""

    def identity(self) -> dict:
        """What the gates' figures depend on: the liberty's bytes, the simulator, the clock,
        the sample (not the folders)."""
        import hashlib

        return {"liberty": hashlib.sha256(Path(self.liberty).read_bytes()).hexdigest(),
                "sim": self.sim, "clock_ns": self.clock_ns, "sample": self.sample,
                "tiles": self.tiles, "heads": self.heads, "windows": self.windows}


def check_designs(designs, ks) -> list[str]:
    """The designs of ``--design dense|ttfs|mttfs`` and ``--k``: M-TTFS once per radius."""
    from golden_models.codespace import check_k

    out = []
    for d in designs:
        if d not in ENCODINGS:
            raise ValueError(f"--design must be one of dense, ttfs, mttfs, not {d!r}")
        if d == "mttfs":
            for k in ks:
                if isinstance(k, int) and not 0 <= k <= 2:
                    raise ValueError(f"--k must be 0, 1 or 2 (the compared radii), not {k}")
                check_k(k, 16)
                out.append(Design(d, k).name)
        else:
            out.append(Design(d).name)
    return [d for d in DESIGNS if d in out]


def check_gate_sentences(sample: int, sentences: int) -> int:
    """``--gate-sentences``: 0 (every sentence replayed) or 2 to ``sentences`` (two lengths at
    least tell the attention path's cost per key from its cost per window)."""
    from toolkit_base.checks import check_int

    check_int("--gate-sentences", sample, 0, sentences)
    if sample == 1:
        raise ValueError("--gate-sentences must be 0 (every sentence replayed) or 2 or more (two "
                         "lengths tell the attention path's cost per key from its cost per "
                         "window), not 1")
    return sample


def check_run(out, report: str, *, rtl: str, gate_sim: str | None) -> None:
    """Before any work: the output folder takes ``report``'s files (``block`` or ``network``:
    ``.json``, ``.md``, ``.png``) and the folders a run keeps there (``designs/``, ``fast/``,
    ``gates/``), staged beside it; the simulator of the pieces (``rtl``, unless the Amaranth
    simulator) and, with gates (``gate_sim``), Yosys and the replays' simulator are installed."""
    from regression.sim import ensure_simulator
    from toolkit_base import toolchain
    from toolkit_base.checks import check_out_writable

    check_out_writable(out, beside=True, subdirs=("designs", "fast", "gates"),
                       files=tuple(f"{report}.{ext}" for ext in ("json", "md", "png")))
    if rtl != "amaranth":
        ensure_simulator(rtl)
    if gate_sim is not None:
        toolchain.require("yosys")
        ensure_simulator(gate_sim)


def check_checkpoint(model: str, checkpoint) -> None:
    """Refuse, before any work, a ``--checkpoint`` the run cannot load: with the random block,
    of another model, or not a checkpoint (:func:`networks.checkpoint.check`)."""
    if checkpoint is None:
        return
    if model == "random":
        raise ValueError("--checkpoint needs the model it was fine-tuned from (--model minilm "
                         "or a model folder), not the random block")
    from networks.checkpoint import check
    from networks.hf_folder import resolve_model

    check(checkpoint, model=resolve_model(model, others=("random",)).key, integer=True)


def setup(model: str, sentences: int, *, block: int = 0, seed: int = 0,
          checkpoint=None) -> BlockSetup:
    """Load ``model`` (``random``, ``minilm`` or a model folder) in integer mode: converted
    post-training, or the fine-tuned integer-mode network of ``checkpoint`` (a folder of
    ``matterhorn finetune --integer``); pick ``sentences`` sentences of the ``pydoc-topics``
    evaluation split that fit the block's sequence length, lengths spread."""
    from networks.corpus import load_corpus, spread_by_length
    from networks.integer import integer_mode_
    from toolkit_base.files import folder_digest

    corpus = load_corpus("pydoc-topics")
    if model == "random":
        from networks.block import random_block_model

        qnn, tok = random_block_model(seed=seed)
        name, made_of = "random", f"random block, seed {seed}"
    else:
        from networks.hf_folder import load_model, resolve_model

        source = resolve_model(model)
        made_of = f"{source.key} {folder_digest(source.folder)}"
        if checkpoint is not None:
            made_of += f", checkpoint {folder_digest(checkpoint)}"
        float_model, tok = load_model(source)
        if checkpoint is None:
            from networks.ptq import convert

            qnn = integer_mode_(convert(float_model, tok, corpus.calibration[:CALIBRATION]))
            name = f"{source.name} (converted)"
        else:
            from networks.checkpoint import load

            qnn, doc = load(checkpoint, float_model, model=source.key, integer=True)
            name = (f"{source.name} (fine-tuned in integer mode at k={doc['runs'][0]['k']}, "
                    f"{Path(checkpoint).name})")
    if not 0 <= block < len(qnn.layers):
        raise ValueError(f"--block must be in 0..{len(qnn.layers) - 1}, not {block}")
    seq_max = seq_max_of(qnn.cfg)
    picked = spread_by_length(corpus.evaluation, tok, sentences, longest=seq_max,
                              what="evaluation sentences", name="--sentences")
    return BlockSetup(qnn, tok, name, picked, seq_max, made_of)


def code_digest(packages=MADE_BY) -> dict:
    """The digest of each of ``packages``' sources and data tables (``.py`` and ``.json``: the
    shipped PDK and SRAM macro tables price a run as much as the code does), by package: what
    a kept result was made of."""
    import importlib

    from toolkit_base.files import folder_digest

    return {m: folder_digest(Path(importlib.import_module(m).__file__).parent, (".py", ".json"))
            for m in packages}


def design_key(st: BlockSetup, design: str, *, block: int, tile_neurons: int,
               gates: GatesSetup | None, rtl: str = "amaranth") -> dict:
    """What ``design``'s result in a run is made of: the network, the sentences, the block,
    the tiles, the pieces' simulator, the gates' liberty, simulator and clock, and the
    toolkit's sources (:data:`MADE_BY`). A result kept with the same key is the result this
    run would give."""
    return {"network": st.source, "sentences": list(st.sentences), "block": block,
            "tile_neurons": tile_neurons, "design": design, "rtl": rtl,
            "gates": None if gates is None else gates.identity(), "code": code_digest(MADE_BY)}


def read_kept(keep, key: dict, schema: str = KEPT_SCHEMA) -> dict | None:
    """The document kept in folder ``keep`` for the design of ``key`` (``<design>.json``) when
    it is of ``schema`` and was made of exactly ``key``; None when there is none, it is
    unreadable or it was made of anything else (block's and network's kept designs)."""
    if keep is None:
        return None
    try:
        doc = json.loads((Path(keep) / f"{key['design']}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("schema") != schema or doc.get("key") != key:
        return None
    return doc


def take_kept(keep, keys: dict, load, steps=None) -> dict:
    """The designs of ``keys`` (design -> key) whose result an earlier run kept in ``keep``,
    loaded by ``load(keep, key)`` (:func:`kept`, ``matterhorn.network.kept``), each said on
    ``steps``: design -> result."""
    done = {}
    for d, key in keys.items():
        result = load(keep, key)
        if result is not None:
            done[d] = result
            if steps is not None:
                steps.say(f"{d}: taken from {Path(keep) / f'{d}.json'} (an earlier run's, "
                          "the same network, sentences and sources)")
    return done


def kept(keep, key: dict) -> tuple | None:
    """The result ``(BlockRun, BlockGates or None)`` kept in folder ``keep`` for the design
    of ``key`` (:func:`design_key`) by an earlier run, or None (:func:`read_kept`)."""
    from regression.block import BlockRun
    from synth_scripts.block_gates import BlockGates

    doc = read_kept(keep, key)
    if doc is None:
        return None
    try:
        return (BlockRun.load(doc["run"]),
                None if doc["gates"] is None else BlockGates.load(doc["gates"]))
    except (ValueError, KeyError, TypeError):
        return None


def _keep(keep, key: dict, result: tuple) -> None:
    """Keep a design's result in ``keep/<design>.json`` (written whole or not at all)."""
    from toolkit_base.files import write_atomic

    run, priced = result
    doc = {"schema": KEPT_SCHEMA, "key": key, "run": run.dump(),
           "gates": None if priced is None else priced.dump()}
    Path(keep).mkdir(parents=True, exist_ok=True)
    write_atomic(Path(keep) / f"{key['design']}.json", json.dumps(doc) + "\n")


def _design(job, *, cache: dict | None = None, steps=None) -> tuple:
    """One design of a run: through the block's pieces and, with gates, priced in them;
    ``(BlockRun, BlockGates or None)``, kept in folder ``keep`` (when given) under ``key``
    (:func:`design_key`) as it ends. ``job``: ``(setup, design, block, tile_neurons,
    placement, gates, keep, key, rtl)``, plain data, so that a worker process can take it
    (``rtl``: the pieces' simulator and the folder of its builds, :func:`run`)."""
    st, d, block, tile_neurons, placement, gates, keep, key, rtl = job
    result = _measure(st, d, block, tile_neurons, placement, gates, rtl, cache=cache,
                      steps=steps)
    if keep is not None:
        _keep(keep, key, result)
    return result


def _measure(st, d, block, tile_neurons, placement, gates, rtl, *, cache, steps) -> tuple:
    """:func:`_design`'s work: the design's case read once (:func:`networks.block.block_case`),
    run through the pieces and, with ``gates``, priced on the same case."""
    from networks.block import block_case
    from regression.block import run_case

    n = len(st.sentences)
    sim, root = rtl
    if steps is not None:
        steps.start(f"{d}: {n} sentence{'s' if n > 1 else ''} through the block's pieces "
                    f"({sim})")
    case = block_case(st.qnn, st.tokenizer, st.sentences, d, block=block)
    run = run_case(st.qnn, case, tile_neurons=tile_neurons, sim=sim, root=root,
                   told=steps.say if steps is not None else None)
    if steps is not None:
        steps.advance(f"{d}: {run.mismatches} mismatches")
    if gates is None:
        return run, None
    if run.mismatches:
        if steps is not None:
            steps.advance(f"{d}: not priced in gates (its pieces mismatch)")
        return run, None
    from matterhorn.block_gates import run_task

    dp, calibrated = _pricing(st, case, run, placement, gates, tile_neurons, cache=cache,
                              steps=steps)
    results = []
    for name, tasks, _ in dp.jobs:  # piece by piece, told as each ends
        got = [run_task(t) for t in tasks]
        results += got
        if steps is not None:
            steps.say(f"{d}: {name} priced in {sum(s for _, s in got):.0f} s")
    results += [run_task(t) for t in dp.measure]  # the attention path over the whole run
    priced = _priced(st, case, run, dp, results, calibrated, placement, tile_neurons)
    if steps is not None:
        steps.advance(f"{d}: {priced.totals()['total']:.0f} pJ per token in gates")
    return run, priced


def _pricing(st, case, run, placement, gates, tile_neurons, *, cache=None, steps=None):
    """A design's pricing in gates as tasks (:class:`matterhorn.block_gates.DesignPricing`) on
    the sample of its sentences that ``gates`` replays; whether the run is then calibrated
    from it."""
    from matterhorn.block_gates import DesignPricing

    d = case.design.name
    total = len(case.sequences)
    n = gates.sample if 0 < gates.sample < total else total
    calibrated = n < total or gates.sampled
    if steps is not None:
        steps.start(f"{d}: priced in gates ({Path(gates.liberty).name})"
                    + (f", {n} of {total} sentences replayed" if n < total else ""))
    dp = DesignPricing(
        st.qnn, case.head(n), lib_path=gates.liberty, work=Path(gates.work) / d,
        sim=gates.sim, clock_ns=gates.clock_ns, cache=cache,
        netlist_dir=Path(gates.work) / "netlists",
        hops_per_flit=hops_per_flit(placement, run.flits), tile_neurons=tile_neurons,
        windows=calibrated, replay_tiles=gates.tiles, replay_heads=gates.heads,
        replay_windows=gates.windows, whole=case if calibrated else None)
    return dp, calibrated


def _priced(st, case, run, dp, results, calibrated, placement, tile_neurons):
    """The design's figures in gates from its pricing's task results: the sample as priced,
    and, when it is a sample, every sentence calibrated from it
    (:mod:`synth_scripts.block_calibration`)."""
    priced = dp.finish(results)
    if calibrated:
        from matterhorn.block_gates import activity
        from synth_scripts.block_calibration import calibrate

        act = activity(st.qnn, case, tile_neurons=tile_neurons, path=dp.path)
        priced = calibrate(priced, act, tokens=run.tokens, sentences=len(case.sequences),
                           hops_per_flit=hops_per_flit(placement, run.flits))
    return priced


def _gates_on_cluster(ex, st, todo, steps) -> list[tuple]:
    """:func:`run`'s designs with gates on a cluster's workers: each design's run through the
    pieces a task, then every design's pricing tasks (each replayed tile, attention path and
    add+LayerNorm unit: :class:`matterhorn.block_gates.DesignPricing`) in one map, so that
    they spread over the workers whatever design they belong to; the designs assembled,
    calibrated and kept here."""
    from matterhorn.block_gates import run_task
    from networks.block import block_case

    said = steps.say if steps is not None else (lambda line: None)
    # the runs: the gates left out of the job (and of what a worker keeps)
    runs = ex.map(_design_in_worker,
                  [(*job[:5], None, None, job[7], job[8]) for job in todo],
                  names=[job[1] for job in todo],
                  progress=lambda r: said(f"{r[0].design}: {r[0].mismatches} mismatches"),
                  told=said)
    pricing, tasks, names, ranks = [], [], [], []
    for job, (r, _) in zip(todo, runs, strict=True):
        _, d, block, tile_neurons, placement, gates, keep, key, _ = job
        if r.mismatches:
            said(f"{d}: not priced in gates (its pieces mismatch)")
            pricing.append(None)
            continue
        case = block_case(st.qnn, st.tokenizer, st.sentences, d, block=block)
        dp, calibrated = _pricing(st, case, r, placement, gates, tile_neurons)
        pricing.append((case, dp, calibrated))
        tasks += dp.tasks
        names += dp.names()
        ranks += dp.ranks()
    if steps is not None:
        steps.start(f"{len(tasks)} pricing tasks (tiles, attention paths, add+LayerNorm "
                    "units, the attention paths' activity over the run) on the workers")
    # handed out longest first (the attention paths), each result put back in its place
    order = sorted(range(len(tasks)), key=lambda i: (ranks[i], i))
    got = ex.map(run_task, [tasks[i] for i in order], names=[names[i] for i in order],
                 what="pricing", told=said)
    placed = dict(zip(order, got, strict=True))
    results = iter(placed[i] for i in range(len(tasks)))
    out = []
    for job, (r, _), p in zip(todo, runs, pricing, strict=True):
        priced = None
        if p is not None:
            case, dp, calibrated = p
            got = [next(results) for _ in dp.tasks]
            priced = _priced(st, case, r, dp, got, calibrated, job[4], job[3])
        if job[6] is not None:
            _keep(job[6], job[7], (r, priced))
        if steps is not None:
            steps.advance(_said((r, priced)))
        out.append((r, priced))
    return out


class Told:
    """The steps of a design in a worker process: each line is told to the run's console
    (:func:`toolkit_base.cluster.tell`), with the seconds since the design started."""

    def __init__(self):
        self.t0 = time.monotonic()

    def say(self, message: str) -> None:
        from toolkit_base.cluster import tell

        tell(f"  {message} ({time.monotonic() - self.t0:.0f} s)")

    def start(self, message: str) -> None:
        self.say(message)

    def advance(self, message: str = "", n: int = 1) -> None:
        self.say(message)


def _design_in_worker(job) -> tuple:
    """:func:`_design` in a worker process: one torch thread (a design per core); its steps
    told to the run's console."""
    import torch

    torch.set_num_threads(1)
    return _design(job, steps=Told())


def _said(result) -> str:
    """A design's line on the console, when a worker finishes it."""
    run, priced = result
    said = f"{run.design}: {run.mismatches} mismatches"
    return said + (f", {priced.totals()['total']:.0f} pJ per token in gates" if priced else "")


def run(st: BlockSetup, designs, *, block: int = 0, tile_neurons: int = TILE_NEURONS,
        steps=None, gates: GatesSetup | None = None, jobs: int = 1, keep=None,
        rtl: str = "amaranth", rtl_root=None, scheduler: str | None = None) -> dict:
    """Every design of ``designs`` over the sentences, and with ``gates`` each priced in our
    gates on the same sentences; the ``block.json`` document. ``steps``: a
    :class:`toolkit_base.console.Steps` told of each design and each pricing (with ``jobs``
    > 1, of each design as it ends). ``jobs``: designs run at a time, each in a worker
    process of a local cluster (:func:`toolkit_base.cluster.executor`); the worker prices
    with netlists of its own, the same ones. ``keep``: a folder where each design's result
    is kept as it ends (:func:`kept`): a design kept there by an earlier run of the same
    network, sentences, gates and sources is taken, not run again, so a run that failed or
    was stopped goes on where it was. ``rtl``: the pieces' simulator
    (:func:`regression.block.run_block`: ``"amaranth"``, or the fast harness on
    ``"verilator"`` or ``"icarus"``, its Verilog and builds in ``rtl_root``, default
    :data:`regression.block_fast.DEFAULT_ROOT`). ``scheduler``: ``tcp://HOST:PORT`` of an
    existing Dask cluster whose workers run the jobs instead (``jobs`` unused; they reach
    the folders at the same paths). On a cluster with ``gates``, each design's run is a
    task, then each design's pricing is tasks of their own (each replayed tile, the
    attention path, each add+LayerNorm unit), spread over the workers; the document is the
    one a run in this process gives."""
    import warnings

    from regression.block_fast import DEFAULT_ROOT
    from rtl_gen.block_map import BlockShape, place_block
    from toolkit_base.cluster import executor

    placement = place_block(BlockShape.of(st.qnn.cfg, seq_max=st.seq_max,
                                          tile_neurons=tile_neurons))
    keys = {d: design_key(st, d, block=block, tile_neurons=tile_neurons, gates=gates, rtl=rtl)
            for d in designs}
    # a worker process builds and runs by the absolute path
    fast = (rtl, Path(DEFAULT_ROOT if rtl_root is None else rtl_root).resolve())
    done = take_kept(keep, keys, kept, steps)
    # a worker process writes its design's file: the folder by its absolute path
    where = None if keep is None else Path(keep).resolve()
    todo = [(st, d, block, tile_neurons, placement, gates, where, keys[d], fast)
            for d in designs if d not in done]
    # with gates, the pricing's tasks outnumber the designs: every worker asked for
    cap = None if gates is not None else max(len(todo), 1)
    with executor(scheduler, workers=jobs, jobs=cap) as ex, warnings.catch_warnings():
        # the network travels to each worker with its design (MiniLM: about 150 MiB): Dask's
        # advice on large graphs is not the user's business
        warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
        if not todo:
            results = []
        elif ex.client is not None and gates is not None:
            results = _gates_on_cluster(ex, st, todo, steps)
        elif ex.client is None:
            if steps is not None:  # two steps a design: its pieces, then its pricing
                steps.set_total(len(todo) * (2 if gates else 1))
            cache: dict = {}  # netlists shared by the designs
            results = [_design(job, cache=cache, steps=steps) for job in todo]
        else:
            names = [job[1] for job in todo]
            if steps is not None:  # a step per design, told as it ends
                steps.set_total(len(todo))
                steps.start(f"{', '.join(names)}: {min(jobs, len(todo))} at a time, each in a "
                            "worker process")
            results = ex.map(_design_in_worker, todo, names=names,
                             progress=lambda r: steps.advance(_said(r)) if steps else None,
                             told=steps.say if steps is not None else lambda line: None)
    done.update({job[1]: r for job, r in zip(todo, results, strict=True)})
    runs = [done[d][0] for d in designs]
    priced = {d: done[d][1] for d in designs if done[d][1] is not None}
    dims = workload_dims(st)
    return block_document(st, runs, model_block_energy(runs, dims), dims, block=block,
                          tile_neurons=tile_neurons, placement=placement, gates=priced or None,
                          rtl=rtl)


def hops_per_flit(placement, counts) -> dict[str, float]:
    """Per piece (``golden_models.block_pieces.PIECES``, the signals that carry its inputs:
    :attr:`~golden_models.block_pieces.Piece.signals`), the hops its input flits make on
    ``placement``
    (:class:`rtl_gen.block_map.BlockPlacement`) per flit its producers send, from the per-neuron
    flit counts of a run (:attr:`regression.block.BlockRun.flits`): the flit-hops of every
    route (a flit multicast to several consumer nodes counts on each path) over the flits
    sent. The gate-level pricing multiplies its own input flits of the piece by it."""
    by_signal = placement.traffic(counts).by_signal()
    out = {}
    for piece in PIECES:
        sent = sum(sum(counts.get(s, ())) for s in piece.signals)
        hops = sum(by_signal[s].flit_hops for s in piece.signals if s in by_signal)
        out[piece.name] = hops / sent if sent else 0.0
    return out


def model_block_energy(runs, dims) -> dict[str, dict[str, float]]:
    """The paper's model (``energy_model.compute``) per block at ``dims`` (its B and S), at
    the spike rates the runs (:class:`regression.block.BlockRun`) measured: joules per
    component and total, per design."""
    from energy_model.model import compute
    from energy_model.rates import Rate, Rates

    by = {r.design: r for r in runs}
    T = runs[0].T
    source = f"measured on the block's hardware pieces ({runs[0].tokens} tokens)"
    rates = Rates(
        T=T,
        ttfs=Rate(by["ttfs"].rates(), source, "TTFS") if "ttfs" in by else None,
        mttfs={Design.parse(d).k: Rate(by[d].rates(), source, d)
               for d in DESIGNS if Design.parse(d).encoding == "mttfs" and d in by},
        source=source,
    )
    report = compute(dims, rates)
    out = {}
    for row in report.rows:
        spec = row.spec
        design = (Design("dense") if spec.encoding == "dense" else
                  Design("ttfs") if spec.k is None else Design("mttfs", spec.k)).name
        if design in by:
            out[design] = row.energy.to_json()
    return out


def model_ratios(gates, runs, dims=None) -> dict[str, dict]:
    """The paper's model (:func:`model_block_energy`: its formulas and unit costs, 22 nm /
    0.8 V) at the rates the runs of the priced designs measured, beside our gates
    (``gates``: a :class:`synth_scripts.block_gates.BlockGates` a design) scaled to the same
    node (divided by ``BlockGates.divide_by``, Stillmaker & Baas), per token.

    ``dims`` (:class:`energy_model.dims.ModelDims`) defaults to the measured block's sizes
    with ``B`` = the sentences and ``S`` = their mean length. Returns per design and per
    component of :data:`MODEL_COMPONENTS` (ours named): ``model_pJ``, ``gates_pJ`` and
    ``ratio`` (model / gates), the gates summed over :data:`MODEL_PIECES` (the pieces the
    model prices). The model has no idle and no non-linear term in its rows, and no softmax
    row buffer in its W-read; its total is set beside our free-running ``total`` (idle
    included) and our ``gated_total``.
    """
    from energy_model.dims import ModelDims
    from synth_scripts.block_gates import TOTALS

    g0 = gates[0]
    if dims is None:
        d = g0.dims
        dims = ModelDims("measured block", hidden=d["hidden"], ffn=d["ffn"], heads=d["heads"],
                         layers=1, batch=g0.sentences,
                         seq=max(round(g0.tokens / g0.sentences), 1),
                         weight_bits=d["weight_bits"])
    priced = {g.design for g in gates}
    model = model_block_energy([r for r in runs if r.design in priced], dims)
    tokens = dims.batch * dims.seq
    out = {}
    for g in gates:
        per = g.per_token()
        ours = {k: sum(per[p][k] for p in MODEL_PIECES if p in per) for k in TOTALS}
        row = {}
        for mk, ok in (*MODEL_COMPONENTS.items(), ("total", "total"), ("total", "gated_total")):
            model_pJ = model[g.design][f"{mk}_J"] * 1e12 / tokens
            gates_pJ = ours[ok] / g.divide_by
            row[ok] = {"model_pJ": model_pJ, "gates_pJ": gates_pJ,
                       "ratio": model_pJ / gates_pJ if gates_pJ else None}
        out[g.design] = row
    return out


def workload_dims(st: BlockSetup):
    """The energy model's dimensions of the run's model at the workload ``matterhorn stats``
    prices (B = 64 as in the paper, S = the block's sequence length: 128 capped by the
    model's positions)."""
    from energy_model.dims import ModelDims

    cfg = st.qnn.cfg
    return ModelDims(st.name, hidden=cfg.hidden_size, ffn=cfg.intermediate_size,
                     heads=cfg.num_attention_heads, layers=cfg.num_hidden_layers,
                     weight_bits=st.qnn.layers[0].query.weight_bits, seq=st.seq_max,
                     source=f"the model's configuration; B=64 as in the paper, S={st.seq_max}")


def block_document(st: BlockSetup, runs, model: dict, dims, *, block: int,
                   tile_neurons: int, placement=None, gates: dict | None = None,
                   rtl: str = "amaranth") -> dict:
    """``block.json``: the run's parameters, and per design its checks, deliveries, clocks
    and energy per block: the paper's model at the measured rates and, when ``gates`` (design
    -> :class:`synth_scripts.block_gates.BlockGates`) is given, our gates (per token on the
    run's sentences, times the workload's B x S tokens; ``null`` for a design not priced)."""
    from rtl_gen.block_map import BlockShape, place_block

    cfg = st.qnn.cfg
    if placement is None:
        placement = place_block(BlockShape.of(cfg, seq_max=st.seq_max,
                                              tile_neurons=tile_neurons))
    gates = gates or {}
    tokens_per_block = dims.batch * dims.seq
    designs = []
    for r in runs:
        m = model[r.design]
        traffic = placement.traffic(r.flits)
        g = gates.get(r.design)
        designs.append({
            "design": r.design,
            "mismatches": r.mismatches,
            "checked": sum(p.checked for p in r.pieces),
            "events": dict(r.deliveries),
            "rates_percent": {p: round(100 * v, 4) for p, v in r.rates().items()},
            "cycles": r.cycles,
            "traffic": {"flits": traffic.flits, "flit_hops": traffic.flit_hops,
                        "busiest_router": max(traffic.routers.values()),
                        "by_signal": {s: {"flits": e.flits, "flit_hops": e.flit_hops}
                                      for s, e in traffic.by_signal().items()}},
            "pieces": [{"piece": p.piece, "checked": p.checked, "mismatches": p.mismatches,
                        "cycles": p.cycles, "first_mismatch": p.first_mismatch}
                       for p in r.pieces],
            "energy_pJ": {
                "gates": (None if g is None else
                          {k: v * tokens_per_block for k, v in g.totals().items()}),
                "model": {c: m[f"{c}_J"] * 1e12 for c in (*MODEL_COMPONENTS, "total")},
                **({} if g is None or not g.sram_macros else {"gates_sram_by_bit": {
                    k: v * tokens_per_block for k, v in g.per_bit_totals().items()}}),
            },
            "gates_per_token_pJ": None if g is None else g.per_token(),
            "gates_parts_per_token_pJ": None if g is None else {
                p.piece: {k: v / g.tokens for k, v in p.parts.items()} for p in g.pieces},
        })
    return {
        "schema": "matterhorn.block/1",
        "model": st.name,
        "block": block,
        "dims": {"hidden": cfg.hidden_size, "heads": cfg.num_attention_heads,
                 "head_dim": cfg.head_dim, "ffn": cfg.intermediate_size,
                 "seq_max": st.seq_max},
        "k": sorted(k for k in (Design.parse(r.design).k for r in runs) if k is not None),
        "pdk": next(iter(gates.values())).library if gates else None,
        "sentences": len(st.sentences),
        "tokens": runs[0].tokens,
        "tile_neurons": tile_neurons,
        "rtl_sim": rtl,
        "mesh": placement.document(),
        "workload": {"batch": dims.batch, "seq": dims.seq,
                     "what": "energy per block of B sequences of S tokens: the paper's model "
                     "(energy_model) at the spike rates measured here, its unit costs the "
                     "paper's table (22 nm, 0.8 V)"
                     + ("; our gates: pJ per token measured on the run's sentences (their "
                        "lengths, not S), times B x S tokens, at the liberty's own node (not "
                        "scaled)" if gates else "")},
        "gates": _gates_document(gates, runs) if gates else None,
        "designs": designs,
    }


def _gates_document(gates: dict, runs) -> dict:
    """How the gates were measured, where each component's cost comes from, and the paper's
    model beside them per component (:func:`model_ratios`)."""
    g0 = next(iter(gates.values()))
    return {
        "library": g0.library,
        "liberty": g0.liberty,
        "clock_ns": g0.clock_ns,
        "simulator": g0.simulator,
        "sram_pJ_per_bit": g0.sram_bit_pJ,
        "sram_macros": g0.sram_macros,
        "scaling_divide_by": g0.divide_by,
        "sources": dict(g0.sources),
        "seconds": {d: round(g.seconds, 1) for d, g in gates.items()},
        "method": {d: g.method or {"calibrated": False} for d, g in gates.items()},
        "model_vs_gates": model_ratios(list(gates.values()), runs),
    }


def write(doc: dict, out: Path) -> list[Path]:
    """``block.json``, ``block.md`` and ``block.png`` into ``out``: staged beside it, then
    moved in, the summary (``block.md``) last; nothing is written for an invalid document."""
    from toolkit_base.files import write_report_set
    from toolkit_base.schemas import validate

    if not all(math.isfinite(d["energy_pJ"][s]["total"]) for d in doc["designs"]
               for s in ("model", "gates") if d["energy_pJ"][s] is not None):
        raise ValueError("an energy figure of block.json is not finite")
    validate(doc, "block", "block.json")
    return write_report_set(out, "block", doc, plot, markdown)
