"""``matterhorn network``: the whole network through the generated hardware, block after
block, bit-exact, each design at its own fine-tuned quality, its energy per sentence in our
gates (docs/network.md).

:func:`check_inputs` refuses, before any work, what the run cannot take (a checkpoint of
another model, radius or configuration, a sentence longer than the generated sequence
length); :func:`setup` loads the model's networks (the ones fine-tuned in integer mode at
``k = 0, 1, 2`` that the designs run, :func:`networks.network.trained_k`; or the post-training
conversion, or the small random network) and the sentences; :func:`run` runs each design
(:func:`networks.network.network_case`, then :func:`regression.network.run_network`: every
block through its hardware pieces, block ``b``'s hardware output feeding block ``b + 1``, the
embedding made from the last block's stream as the hardware made it), measures each design's
network on the evaluation split (:func:`networks.network.design_quality`), prices each block in
our gates (:func:`price`: the calibrated pricing of one block's sample,
:mod:`synth_scripts.block_calibration`, applied to every block's windows, and a held-out block
replayed in full to validate it) and with the paper's model at the rates each block measured;
:func:`network_document` is ``network.json`` (schema ``matterhorn.network/1``), written with
``network.md`` and ``network.png`` by :func:`write` (the report is
:mod:`matterhorn.network_report`'s).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import dataclass
from pathlib import Path

from golden_models.block_pieces import TILE_NEURONS

__all__ = ["CHECKPOINT_HELP", "KEPT_SCHEMA", "RANDOM_NETWORK", "SCHEMA", "NetworkGates",
           "NetworkSetup", "TrainedNetwork", "check_checkpoints", "check_sentences", "kept",
           "network_document", "network_key", "price", "run", "setup", "write"]

SCHEMA = "matterhorn.network/1"
#: Schema of a design's result, kept as the design ends (``DIR/designs/<design>.json``).
KEPT_SCHEMA = "matterhorn.network-design/1"
#: The small random network (``--model random``): blocks and sizes
#: (:func:`networks.block.random_block_model`).
RANDOM_NETWORK = {"layers": 2, "hidden": 8, "heads": 2, "ffn": 16, "seq": 8}
#: How to make the fine-tuned networks, and how long it takes (measured: MiniLM, 2 cores).
CHECKPOINT_HELP = ("train them with `matterhorn finetune --model {model} --k 0 1 2 --integer "
                   "--out DIR` (about an hour and a quarter on 2 cores: 35 minutes for k = 0, "
                   "then 20 for each of k = 1 and 2)")
#: Calibration sentences of a conversion (as ``matterhorn block``).
CALIBRATION = 6


@dataclass(frozen=True)
class TrainedNetwork:
    """One network a run's designs run: ``k`` the radius it was fine-tuned at (``None``:
    converted post-training, or the random network), the integer-mode QNN, how it is named
    in the report, and (``source``) what it was made from (digests, for the kept results)."""

    k: int | None
    qnn: object
    name: str
    source: str


@dataclass(frozen=True)
class NetworkSetup:
    """What a run is about: the model's name, the float teacher and its tokenizer, the
    networks the designs run (by the radius a design needs, :func:`networks.network.trained_k`:
    0, 1, 2), the sentences run through the hardware, the evaluation sentences the quality is
    measured on, and the generated sequence length."""

    model: str
    float_model: object
    tokenizer: object
    networks: dict[int, TrainedNetwork]
    sentences: list[str]
    evaluation: list[str]
    seq_max: int
    corpus: str = "pydoc-topics"

    def network(self, design: str) -> TrainedNetwork:
        from networks.network import trained_k

        return self.networks[trained_k(design)]


@dataclass(frozen=True)
class NetworkGates:
    """How each design is priced in our gates: ``gates`` (the liberty, the replays'
    simulator, the working folder, the clock and the sample of sentences replayed window by
    window, :class:`matterhorn.block.GatesSetup`), the block whose sample is replayed
    (``block``; every block's windows priced by its fits) and the held-out block replayed in
    full on the sample's sentences to validate that (``validate``, or None)."""

    gates: object  # matterhorn.block.GatesSetup
    block: int = 0
    validate: int | None = None

    def identity(self) -> dict:
        return {**self.gates.identity(), "block": self.block, "validate": self.validate}


# -- checks before any work ---------------------------------------------------------------------


def check_checkpoints(model: str, checkpoints, designs, *, converted: bool = False) -> dict:
    """The checkpoint folder of each radius the designs need (``DIR/k0`` serves dense, TTFS and
    M-TTFS ``k = 0``; ``DIR/k1``, ``DIR/k2`` their own), each checked before anything is
    loaded: complete, of ``model``, fine-tuned at that radius, in integer mode, and all of one
    configuration (bits, rounding, the integer mode's widths). Returns radius -> folder
    (empty for the random network and with ``converted``); raises ``ValueError`` in one line
    naming what is missing or wrong and how to make it."""
    from networks.network import trained_k

    if model == "random":
        if checkpoints is not None:
            raise ValueError("--checkpoints needs the model they were fine-tuned from "
                             "(--model minilm or a model folder), not the random network")
        return {}
    if converted:
        if checkpoints is not None:
            raise ValueError("--converted runs the post-training conversion: give it or "
                             "--checkpoints, not both")
        return {}
    from networks.hf_folder import resolve_model

    key = resolve_model(model).key
    how = CHECKPOINT_HELP.format(model=model)
    needed = sorted({trained_k(d) for d in designs})
    if checkpoints is None:
        names = ", ".join(f"DIR/k{k}" for k in needed)
        raise ValueError(f"--checkpoints DIR is needed: the networks fine-tuned in integer mode "
                         f"that the designs run ({names}); {how}; or --converted for the "
                         "post-training conversion")
    root = Path(checkpoints)
    if not root.is_dir():
        raise FileNotFoundError(f"--checkpoints folder {str(root)!r} does not exist")
    out, config = {}, None
    for k in needed:
        folder = root / f"k{k}"
        if not folder.is_dir():
            uses = [d for d in designs if trained_k(d) == k]
            raise ValueError(f"--checkpoints {str(root)!r} has no k{k} (the network fine-tuned "
                             f"at k = {k}, which {', '.join(uses)} "
                             f"run{'s' if len(uses) == 1 else ''}); {how}")
        this = _checkpoint_config(folder, k, key)
        if config is None:
            config = (k, this)
        elif this != config[1]:
            differ = ", ".join(f"{n} {this[n]} against {config[1][n]}" for n in this
                               if this[n] != config[1][n])
            raise ValueError(f"checkpoint {str(folder)!r} has another configuration than "
                             f"k{config[0]}'s ({differ}): the designs are compared on one "
                             "configuration")
        out[k] = folder
    return out


def _checkpoint_config(folder: Path, k: int, model_key: str) -> dict:
    """The configuration of the checkpoint ``folder``, checked: of ``model_key``, fine-tuned
    at ``k``, in integer mode."""
    from networks.checkpoint import check

    doc = check(folder, model=model_key)
    run = doc["runs"][0]
    if run["k"] != k:
        raise ValueError(f"checkpoint {str(folder)!r} was fine-tuned at k={run['k']}, not "
                         f"k={k} (DIR/k<k> holds the network fine-tuned at k)")
    if doc.get("integer") is None:
        raise ValueError(f"checkpoint {str(folder)!r} was fine-tuned with float "
                         "non-linearities, not in integer mode (matterhorn finetune --integer)")
    return {n: doc.get(n) for n in ("T", "weight_bits", "act_bits", "rounding", "integer")}


def check_sentences(model: str, sentences) -> None:
    """Refuse, before any model is loaded, a sentence longer than the generated sequence
    length (the model's tokenizer, no truncation below it)."""
    if not sentences:
        return
    if model == "random":
        from networks.block import HashTokenizer

        tok, seq_max = HashTokenizer(512, 1 << 16), RANDOM_NETWORK["seq"]
    else:
        from networks.hf_folder import dims_of, resolve_model, tokenizer_of

        source = resolve_model(model)
        seq_max = dims_of(source.config)["seq"]
        tok = tokenizer_of(source, max_length=source.config.max_position_embeddings + 1)
    for s in sentences:
        if not isinstance(s, str) or not s.strip():
            raise ValueError(f"--sentence must be a sentence, not {s!r}")
        n = int(tok([s])[1].sum())
        if n > seq_max:
            short = s if len(s) <= 40 else s[:37] + "..."
            raise ValueError(f"--sentence {short!r} is {n} tokens; the generated hardware takes "
                             f"at most {seq_max} (the block's sequence length)")


# -- the networks ---------------------------------------------------------------------------------


def setup(model: str, sentences: int, designs, *, checkpoints: dict | None = None,
          texts=None, evaluation: int | None = None, seed: int = 0) -> NetworkSetup:
    """Load ``model`` (``random``: the small random network of :data:`RANDOM_NETWORK`;
    ``minilm`` or a model folder) and the networks ``designs`` run: the checkpoints
    (:func:`check_checkpoints`: radius -> folder), else the post-training conversion for every
    design; pick ``sentences`` sentences of the evaluation split with their lengths spread
    (or run ``texts``), and the evaluation sentences the quality is measured on (all of the
    split, or its first ``evaluation``)."""
    import torch

    from networks.corpus import load_corpus, spread_by_length
    from networks.integer import integer_mode_
    from networks.network import check_blocks, trained_k
    from regression.block_parts import seq_max_of
    from toolkit_base.files import folder_digest

    corpus = load_corpus("pydoc-topics")
    needed = sorted({trained_k(d) for d in designs})
    if model == "random":
        from networks.block import random_block_model, random_float_model

        float_model, tok = random_float_model(seed=seed, **RANDOM_NETWORK)
        qnn, _ = random_block_model(seed=seed, **RANDOM_NETWORK)
        one = TrainedNetwork(None, qnn, f"random, {RANDOM_NETWORK['layers']} blocks, converted "
                             "post-training", f"random network {RANDOM_NETWORK}, seed {seed}")
        networks, name = dict.fromkeys(needed, one), "random network"
    else:
        from networks.hf_folder import load_model, resolve_model

        source = resolve_model(model)
        made_of = f"{source.key} {folder_digest(source.folder)}"
        float_model, tok = load_model(source)
        name = source.name
        if not checkpoints:
            from networks.ptq import convert

            qnn = integer_mode_(convert(float_model, tok, corpus.calibration[:CALIBRATION]))
            one = TrainedNetwork(None, qnn, "converted post-training", made_of)
            networks = dict.fromkeys(needed, one)
        else:
            from networks.checkpoint import load

            networks = {}
            for k in needed:
                qnn, _ = load(checkpoints[k], float_model, model=source.key, k=k, integer=True)
                networks[k] = TrainedNetwork(
                    k, qnn, f"fine-tuned in integer mode at k={k} ({Path(checkpoints[k]).name})",
                    f"{made_of}, checkpoint {folder_digest(checkpoints[k])}")
    for net in {id(n): n for n in networks.values()}.values():
        check_blocks(net.qnn)
    qnn0 = next(iter(networks.values())).qnn
    seq_max = seq_max_of(qnn0.cfg)
    picked = (list(texts) if texts else
              spread_by_length(corpus.evaluation, tok, sentences, longest=seq_max,
                               what="evaluation sentences", name="--sentences"))
    evals = corpus.evaluation if evaluation is None else corpus.evaluation[:evaluation]
    float_model = float_model.to(torch.float64)
    return NetworkSetup(name, float_model, tok, networks, picked, list(evals), seq_max)


def network_key(st: NetworkSetup, design: str, *, tile_neurons: int, gates, rtl: str) -> dict:
    """What ``design``'s result in a run is made of (the kept result of an earlier run with
    the same key is the one this run would give): the network, the sentences, the tiles, the
    pieces' simulator, the pricing and the toolkit's sources."""
    from matterhorn.block import code_digest

    code = code_digest()
    return {"network": st.network(design).source, "sentences": list(st.sentences),
            "design": design, "tile_neurons": tile_neurons, "rtl": rtl,
            "gates": None if gates is None else gates.identity(), "code": code}


# -- one design --------------------------------------------------------------------------------


#: The packages whose sources make a block's pricing (a kept sample names their digest).
PRICED_BY = ("golden_models", "networks", "rtl_gen", "synth_scripts", "toolkit_base")


def _replayed(keep, key: dict, measure):
    """A block's replay at gate level (:class:`synth_scripts.block_gates.BlockGates`): the one
    kept in file ``keep`` under ``key`` by an earlier run, else ``measure()``, kept there as
    it ends (the replays are the long part of a pricing: a run stopped after them, or one
    whose report changed, does not replay them again)."""
    from synth_scripts.block_gates import BlockGates
    from toolkit_base.files import write_atomic

    if keep is not None and Path(keep).is_file():
        try:
            doc = json.loads(Path(keep).read_text(encoding="utf-8"))
            if doc.get("key") == key:
                return BlockGates.load(doc["gates"])
        except (OSError, ValueError, KeyError, TypeError):
            pass
    priced = measure()
    if keep is not None:
        Path(keep).parent.mkdir(parents=True, exist_ok=True)
        write_atomic(Path(keep), json.dumps({"key": key, "gates": priced.dump()}) + "\n")
    return priced


def _replay_key(case, gates: NetworkGates, block: int, n: int, tile_neurons: int, source: str,
                windows: bool) -> dict:
    from matterhorn.block import code_digest

    code = code_digest(PRICED_BY)
    return {"network": source, "tokens": [list(t) for t in case.tokens[:n]],
            "design": case.design.name, "block": block, "tile_neurons": tile_neurons,
            "gates": gates.gates.identity(), "windows": windows, "code": code}


def price(qnn, case, run, gates: NetworkGates, *, placement, tile_neurons: int,
          cache: dict | None = None, told=None, keep=None, source: str = "") -> dict:
    """Every block of the design of ``case`` (:class:`networks.network.NetworkCase`, its run
    ``run``, :class:`regression.network.NetworkRun`) priced in our gates.

    Block ``gates.block``'s sample sentences (the shortest ``gates.gates.sample``; all with 0)
    are replayed window by window (:func:`matterhorn.block_gates.measure_block_gates`; of
    each linear piece and the attention path the tiles, heads and windows ``gates.gates``
    samples, all of them by default); every block's windows over every sentence are priced
    by those windows' fits to their counters
    (:func:`synth_scripts.block_calibration.calibrate` on the block's own
    :func:`~matterhorn.block_gates.activity`, its movement at the block placement's hops for
    its own flits). With ``gates.validate``, that block is replayed in full on the sample's
    sentences and set beside its fitted figures (:func:`~synth_scripts.block_calibration.compare`).
    ``keep``: a folder where the replays are kept (and taken from by a later run of the same
    network, ``source``, sentences, pricing and pricing sources).
    Returns ``{"blocks": [BlockGates], "sample": BlockGates, "validation": dict or None}``."""
    from matterhorn.block import hops_per_flit
    from matterhorn.block_gates import activity, measure_block_gates, measure_path
    from synth_scripts.block_calibration import calibrate, compare

    g = gates.gates
    fast = Path(g.work) / "netlists" / "fast"  # the harness of the attention path's activity
    total = case.sentences
    n = g.sample if 0 < g.sample < total else total
    hops = [hops_per_flit(placement, b.flits) for b in run.blocks]
    kw = {"lib_path": g.liberty, "sim": g.sim, "clock_ns": g.clock_ns, "cache": cache,
          "netlist_dir": Path(g.work) / "netlists", "told": told, "tile_neurons": tile_neurons}
    design = case.design.name
    gb = gates.block
    sample = _replayed(
        None if keep is None else Path(keep) / f"{design}-sample-block{gb}.json",
        _replay_key(case, gates, gb, n, tile_neurons, source, True),
        lambda: measure_block_gates(qnn, case.blocks[gb].head(n),
                                    work=Path(g.work) / design / f"block{gb}",
                                    hops_per_flit=hops[gb], windows=True,
                                    replay_tiles=g.tiles, replay_heads=g.heads,
                                    replay_windows=g.windows, **kw))
    blocks = []
    for b, bcase in enumerate(case.blocks):
        act = activity(qnn, bcase, tile_neurons=tile_neurons,
                       path=measure_path(qnn, bcase, root=fast, sim=g.sim))
        blocks.append(calibrate(sample, act, tokens=bcase.tokens, sentences=total,
                                hops_per_flit=hops[b]))
        if told is not None:
            told(f"{design}: block {b} priced by block {gates.block}'s fits, "
                 f"{blocks[-1].totals()['total']:.0f} pJ per token")
    validation = None
    if gates.validate is not None:
        vb = gates.validate
        held = case.blocks[vb].head(n)
        measured = _replayed(
            None if keep is None else Path(keep) / f"{design}-held-out-block{vb}.json",
            _replay_key(case, gates, vb, n, tile_neurons, source, False),
            lambda: measure_block_gates(qnn, held, work=Path(g.work) / design / f"block{vb}",
                                        hops_per_flit=hops[vb], **kw))
        path = measure_path(qnn, held, root=fast, sim=g.sim)
        fitted = calibrate(sample, activity(qnn, held, tile_neurons=tile_neurons, path=path),
                           tokens=held.tokens, sentences=n, hops_per_flit=hops[vb])
        cmp = compare(fitted, measured)
        validation = {"held_out_block": vb, "fitted_from": gates.block, "sentences": n,
                      "tokens": held.tokens, "seconds": round(measured.seconds, 1),
                      "pieces": cmp["pieces"], "totals": cmp["block"]}
    return {"blocks": blocks, "sample": sample, "validation": validation}


def _measure(job, *, cache=None, steps=None) -> tuple:
    """One design of a run: its network's case, through every block's hardware and, with
    gates, priced; ``(NetworkRun, pricing or None)``, kept in ``keep`` under ``key`` as it
    ends. ``job``: ``(qnn, tokenizer, sentences, design, tile_neurons, placement, gates,
    rtl, keep, key)``, plain data, so that a worker process can take it."""
    from networks.network import network_case
    from regression.network import run_network

    qnn, tok, sentences, d, tile_neurons, placement, gates, (sim, root), keep, key = job
    say = steps.say if steps is not None else None
    if steps is not None:
        steps.start(f"{d}: {len(sentences)} sentences through the network's "
                    f"{len(qnn.layers)} blocks ({sim})")
    case = network_case(qnn, tok, sentences, d)
    run = run_network(qnn, case, tile_neurons=tile_neurons, sim=sim, root=root, told=say)
    if steps is not None:
        steps.advance(f"{d}: {run.mismatches} mismatches, embeddings equal to the QNN's: "
                      f"{sum(run.equal)} of {len(run.equal)}")
    priced = None
    if gates is not None and run.mismatches == 0:
        if steps is not None:
            steps.start(f"{d}: priced in gates (block {gates.block}'s sample, every block by "
                        "its fits)")
        priced = price(qnn, case, run, gates, placement=placement, tile_neurons=tile_neurons,
                       cache=cache, told=say, keep=keep, source=key["network"])
        if steps is not None:
            steps.advance(f"{d}: {sum(b.totals()['total'] for b in priced['blocks']):.0f} pJ "
                          "per token in gates")
    elif gates is not None and steps is not None:
        steps.advance(f"{d}: not priced in gates (its blocks mismatch)")
    if keep is not None:
        _keep(keep, key, run, priced)
    return run, priced


def _keep(keep, key: dict, run, priced) -> None:
    from toolkit_base.files import write_atomic

    doc = {"schema": KEPT_SCHEMA, "key": key, "run": run.dump(),
           "gates": None if priced is None else {
               "blocks": [b.dump() for b in priced["blocks"]], "sample": priced["sample"].dump(),
               "validation": priced["validation"]}}
    Path(keep).mkdir(parents=True, exist_ok=True)
    write_atomic(Path(keep) / f"{key['design']}.json", json.dumps(doc) + "\n")


def kept(keep, key: dict) -> tuple | None:
    """The result ``(NetworkRun, pricing or None)`` kept in folder ``keep`` for the design of
    ``key`` (:func:`network_key`) by an earlier run, or None when there is none, it is
    unreadable or it was made of anything else (:func:`matterhorn.block.read_kept`)."""
    from matterhorn.block import read_kept
    from regression.network import NetworkRun
    from synth_scripts.block_gates import BlockGates

    doc = read_kept(keep, key, KEPT_SCHEMA)
    if doc is None:
        return None
    try:
        g = doc["gates"]
        priced = None if g is None else {
            "blocks": [BlockGates.load(b) for b in g["blocks"]],
            "sample": BlockGates.load(g["sample"]), "validation": g["validation"]}
        return NetworkRun.load(doc["run"]), priced
    except (ValueError, KeyError, TypeError):
        return None


def _in_worker(job) -> tuple:
    """:func:`_measure` in a worker process: one torch thread (a design per core); its steps
    told to the run's console."""
    import torch

    from matterhorn.block import Told

    torch.set_num_threads(1)
    return _measure(job, steps=Told())


# -- the run ---------------------------------------------------------------------------------------


def run(st: NetworkSetup, designs, *, tile_neurons: int = TILE_NEURONS, rtl: str = "verilator",
        rtl_root=None, gates: NetworkGates | None = None, jobs: int = 1, keep=None,
        steps=None) -> dict:
    """Every design of ``designs`` through the whole network (its own network,
    :meth:`NetworkSetup.network`) on ``rtl`` (builds in ``rtl_root``), its quality on the
    evaluation split and, with ``gates``, its energy in our gates (:func:`price`); the
    ``network.json`` document. ``jobs``: designs run at a time, each in a worker process;
    ``keep``: a folder where each design's result is kept as it ends, and taken by a later
    run of the same key (:func:`network_key`)."""
    import warnings

    from matterhorn.block import take_kept
    from regression.block_fast import DEFAULT_ROOT
    from rtl_gen.block_map import BlockShape, place_block
    from toolkit_base.cluster import executor

    qnn0 = st.network(designs[0]).qnn
    placement = place_block(BlockShape.of(qnn0.cfg, seq_max=st.seq_max,
                                          tile_neurons=tile_neurons))
    keys = {d: network_key(st, d, tile_neurons=tile_neurons, gates=gates, rtl=rtl)
            for d in designs}
    fast = (rtl, Path(DEFAULT_ROOT if rtl_root is None else rtl_root).resolve())
    where = None if keep is None else Path(keep).resolve()
    done = take_kept(keep, keys, kept, steps)
    todo = [(st.network(d).qnn, st.tokenizer, st.sentences, d, tile_neurons, placement,
             gates, fast, where, keys[d]) for d in designs if d not in done]
    if steps is not None:  # the quality, then per design its run and its pricing
        steps.set_total(1 + len(todo) * (2 if gates and jobs == 1 else 1))
    quality = _quality(st, designs, steps)
    with executor(workers=jobs, jobs=max(len(todo), 1)) as ex, warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Sending large graph", category=UserWarning)
        if not todo:
            results = []
        elif ex.client is None:
            cache: dict = {}
            results = [_measure(job, cache=cache, steps=steps) for job in todo]
        else:
            names = [job[3] for job in todo]
            if steps is not None:
                steps.start(f"{', '.join(names)}: {min(jobs, len(todo))} at a time, each in a "
                            "worker process")
            results = ex.map(_in_worker, todo, names=names,
                             progress=lambda r: steps.advance(_said(r)) if steps else None,
                             told=steps.say if steps is not None else lambda line: None)
    done.update({job[3]: r for job, r in zip(todo, results, strict=True)})
    return network_document(st, designs, done, quality, tile_neurons=tile_neurons, rtl=rtl,
                            gates=gates)


def _said(result) -> str:
    run, priced = result
    said = f"{run.design}: {run.mismatches} mismatches"
    if priced:
        said += f", {sum(b.totals()['total'] for b in priced['blocks']):.0f} pJ per token in gates"
    return said


def _quality(st: NetworkSetup, designs, steps) -> dict:
    """Each design's quality on the evaluation split (:func:`networks.network.design_quality`)
    and its embeddings there; designs of one network and one set of masks share one
    measurement (dense INT4 and M-TTFS ``k = 0``: the same masks)."""
    import torch

    from networks.finetune_report import float_embeddings
    from networks.network import design_quality

    if steps is not None:
        steps.start(f"quality: each design's network on {len(st.evaluation)} evaluation "
                    "sentences, and the float teacher")
    emb_float = float_embeddings(st.float_model, st.tokenizer, st.evaluation)
    out, seen = {}, {}
    for d in designs:
        net = st.network(d)
        masks = "k0" if d in ("dense", "mttfs-k0") else d
        if (id(net), masks) not in seen:
            t0 = time.perf_counter()
            seen[id(net), masks] = design_quality(net.qnn, st.tokenizer, st.evaluation, d,
                                                  emb_float)
            if steps is not None:
                q = seen[id(net), masks][0]
                steps.say(f"quality: {d}, cosine {q['cos_float']['mean']:.4f}, retrieval "
                          f"{q['retrieval_agreement']} ({time.perf_counter() - t0:.0f} s)")
        out[d] = seen[id(net), masks]
    # the lossless designs of one network: the same embeddings (Proposition 2)
    lossless = [d for d in designs if d in ("dense", "ttfs", "mttfs-k0")]
    for d in lossless:
        out[d][0]["equal_to"] = [o for o in lossless
                                 if o != d and st.network(o) is st.network(d)
                                 and torch.equal(out[o][1], out[d][1])]
    # the float teacher's embeddings of the sentences run, for the hardware's cosine
    run_float = float_embeddings(st.float_model, st.tokenizer, st.sentences)
    if steps is not None:
        steps.advance("quality: " + ", ".join(
            f"{d} {out[d][0]['cos_float']['mean']:.4f}" for d in designs))
    return {"designs": out, "float_run": run_float}


# -- the document ----------------------------------------------------------------------------------


def _per_sentence(per_token: dict, tokens: int, sentences: int) -> dict:
    return {k: (None if v is None else v * tokens / sentences) for k, v in per_token.items()}


def _model_rows(st, runs: dict, designs) -> dict:
    """The paper's model (:func:`matterhorn.block.model_block_energy`, 22 nm / 0.8 V) per
    block at the rates that block measured for each design, at the run's dimensions (B = the
    sentences, S = their mean length): pJ per token by component, summed over the blocks."""
    from energy_model.dims import ModelDims
    from matterhorn.block import model_block_energy
    from matterhorn.block_report import MODEL_COMPONENTS

    any_run = next(iter(runs.values()))
    cfg = st.network(designs[0]).qnn.cfg
    n = len(st.sentences)
    dims = ModelDims("measured block", hidden=cfg.hidden_size, ffn=cfg.intermediate_size,
                     heads=cfg.num_attention_heads, layers=1, batch=n,
                     seq=max(round(any_run.tokens / n), 1),
                     weight_bits=st.network(designs[0]).qnn.layers[0].query.weight_bits)
    tokens = dims.batch * dims.seq
    out = {d: dict.fromkeys((*MODEL_COMPONENTS, "total"), 0.0) for d in runs}
    blocks = len(any_run.blocks)
    per_block = {d: [] for d in runs}
    for b in range(blocks):
        model = model_block_energy([runs[d].blocks[b] for d in runs], dims)
        for d in runs:
            row = {c: model[d][f"{c}_J"] * 1e12 / tokens for c in (*MODEL_COMPONENTS, "total")}
            per_block[d].append(row)
            for c, v in row.items():
                out[d][c] += v
    return {"per_token": out, "per_block": per_block,
            "dims": {"batch": dims.batch, "seq": dims.seq}}


def _gates_figures(priced: dict, tokens: int, sentences: int, clock_ns: float) -> dict:
    """A design's gates over the network: pJ per token and per sentence by component (the
    blocks' leakage among them), per block, and the latency and throughput at ``clock_ns``."""
    from synth_scripts.block_gates import TOTALS

    blocks = priced["blocks"]
    per_token = {k: math.fsum(b.totals()[k] for b in blocks) for k in TOTALS}
    # the pieces run one after the other (the tiles of a layer side by side): clocks a token
    cycles = [sum(p.cycles for p in b.pieces) / b.tokens for b in blocks]
    slowest = max(p.cycles / b.tokens for b in blocks for p in b.pieces)
    latency_ns = sum(cycles) * clock_ns
    return {
        "per_token_pJ": per_token,
        "per_sentence_pJ": _per_sentence(per_token, tokens, sentences),
        "per_block_per_token_pJ": [dict(b.totals()) for b in blocks],
        "speed": {"clock_ns": clock_ns,
                  "cycles_per_token": sum(cycles),
                  "latency_per_token_ns": latency_ns,
                  "tokens_per_s": 1e9 / latency_ns if latency_ns else None,
                  "sentences_per_s": (1e9 / latency_ns) * sentences / tokens
                  if latency_ns else None,
                  "pipelined_tokens_per_s": 1e9 / (slowest * clock_ns) if slowest else None},
    }


def _design_document(st: NetworkSetup, d: str, r, quality: dict, p: dict | None, model: dict,
                     *, tokens: int, n: int, gates: NetworkGates | None) -> dict:
    """One design's entry of ``network.json`` (:func:`network_document`)."""
    import torch

    q, _ = quality["designs"][d]
    float_run = quality["float_run"]
    emb = torch.tensor(r.embeddings, dtype=torch.float64)
    cos = (emb * float_run).sum(1) / (emb.norm(dim=1) * float_run.norm(dim=1))
    return {
        "design": d,
        "network": st.network(d).name,
        "trained_k": st.network(d).k,
        "mismatches": r.mismatches,
        "checked": r.checked,
        "handoff_mismatches": sum(r.handoff),
        "embeddings_equal": sum(r.equal),
        "quality": {
            "qnn": q,
            "hardware": {"sentences": len(r.equal), "equal_to_qnn": sum(r.equal),
                         "cos_float": {"mean": round(float(cos.mean()), 6),
                                       "min": round(float(cos.min()), 6)}},
        },
        "embeddings": r.embeddings,
        "blocks": [{
            "block": b,
            "mismatches": br.mismatches,
            "checked": sum(pc.checked for pc in br.pieces),
            "handoff_mismatches": r.handoff[b],
            "cycles": br.cycles,
            "seconds": round(r.seconds[b], 1) if b < len(r.seconds) else None,
            "events": dict(br.deliveries),
            "rates_percent": {k: round(100 * v, 4) for k, v in br.rates().items()},
            "first_mismatch": next((pc.first_mismatch for pc in br.pieces
                                    if pc.first_mismatch), None),
            "gates_per_token_pJ": (None if p is None else dict(p["blocks"][b].totals())),
            "model_per_token_pJ": model["per_block"][d][b],
        } for b, br in enumerate(r.blocks)],
        "energy": {
            "gates": (None if p is None else
                      _gates_figures(p, tokens, n, gates.gates.clock_ns)),
            "model": {"per_token_pJ": model["per_token"][d],
                      "per_sentence_pJ": _per_sentence(model["per_token"][d], tokens, n)},
        },
        "validation": None if p is None else p["validation"],
    }


def _gates_document(priced: dict, gates: NetworkGates) -> dict | None:
    """How the gates were measured (``network.json``'s ``gates``), or None."""
    if not priced:
        return None
    g0 = next(iter(priced.values()))["sample"]
    g = gates.gates
    return {
        "library": g0.library, "liberty": g0.liberty, "clock_ns": g0.clock_ns,
        "simulator": g0.simulator, "sram_pJ_per_bit": g0.sram_bit_pJ,
        "sram_macros": g0.sram_macros,
        "scaling_divide_by": g0.divide_by, "sources": dict(g0.sources),
        "leakage": {"priced": True,
                    "why": "each block's pricing counts its cells' leakage and, with the "
                           "macros (NanGate 45), its macros' over each piece's clocks: the "
                           "component leakage (synth_scripts.block_gates)"},
        "method": {"sample_block": gates.block, "validate_block": gates.validate,
                   "sample_sentences": g0.sentences, "sample_tokens": g0.tokens,
                   # 0: every one (GatesSetup)
                   "sample_tiles": g.tiles, "sample_heads": g.heads, "sample_windows": g.windows,
                   "how": f"block {gates.block}'s sample sentences replayed at gate level window "
                          f"by window{g.sampling_said()}; every window of every block over every "
                          "sentence priced "
                          "by the sample's per-unit fits to its counters (the golden QNN's, "
                          "equal to the RTL's); SRAM bits, flits and hops counted per block "
                          "(synth_scripts.block_calibration)"},
        "seconds": {d: round(p["sample"].seconds, 1) for d, p in priced.items()},
    }


def _pdk_label(library: str) -> str:
    """The PDK a liberty's library belongs to, as its table names it (``NanGate 45 nm``), or
    the library's own name."""
    from synth_scripts.gatelevel.pdk import match

    pdk = match(library)
    return library if pdk.generic else pdk.label


def network_document(st: NetworkSetup, designs, done: dict, quality: dict, *,
                     tile_neurons: int, rtl: str, gates: NetworkGates | None) -> dict:
    """``network.json``: the run's parameters, the sentences and their tokens, and per design
    its checks (every block's, the values handed on, the embeddings), its quality (the QNN on
    the evaluation split, the hardware's embeddings on the sentences run), its per-block
    events and rates, its energy per token and per sentence (our gates by component, with the
    latency and throughput; the paper's model at the measured rates) and where each figure
    comes from."""
    runs = {d: done[d][0] for d in designs}
    priced = {d: done[d][1] for d in designs if done[d][1] is not None}
    tokens, n = runs[designs[0]].tokens, len(st.sentences)
    model = _model_rows(st, runs, designs)
    qnn0 = st.network(designs[0]).qnn
    cfg = qnn0.cfg
    sentence_docs = []
    for s in st.sentences:
        ids = st.tokenizer([s])[0][0].tolist()
        sentence_docs.append({"text": s, "tokens": ids, "length": len(ids)})
    gdoc = _gates_document(priced, gates)
    return {
        "schema": SCHEMA,
        "model": st.model,
        "dims": {"hidden": cfg.hidden_size, "heads": cfg.num_attention_heads,
                 "head_dim": cfg.head_dim, "ffn": cfg.intermediate_size,
                 "blocks": len(qnn0.layers), "seq_max": st.seq_max},
        "networks": {f"k{k}" if net.k is not None else "converted": net.name
                     for k, net in st.networks.items()},
        "sentences": sentence_docs,
        "tokens": tokens,
        "tile_neurons": tile_neurons,
        "rtl_sim": rtl,
        "evaluation": {"corpus": st.corpus, "split": "evaluation",
                       "sentences": len(st.evaluation)},
        "model_workload": {"batch": model["dims"]["batch"], "seq": model["dims"]["seq"],
                           "what": "the paper's model (energy_model, its unit costs at 22 nm, "
                                   "0.8 V) per block at the rates each block measured, at B = "
                                   "the sentences run and S = their mean length, summed over "
                                   "the blocks"},
        "pdk": None if gdoc is None else _pdk_label(gdoc["library"]),
        "gates": gdoc,
        "designs": [_design_document(st, d, runs[d], quality, priced.get(d), model,
                                     tokens=tokens, n=n, gates=gates) for d in designs],
    }


def write(doc: dict, out: Path) -> list[Path]:
    """``network.json``, ``network.md`` and ``network.png`` into ``out``: staged beside it,
    then moved in, the summary (``network.md``) last; nothing is written for an invalid
    document."""

    from matterhorn.network_report import markdown, plot
    from toolkit_base.files import write_report_set
    from toolkit_base.schemas import validate

    for d in doc["designs"]:
        for source in ("gates", "model"):
            e = d["energy"][source]
            if e is not None and not math.isfinite(e["per_token_pJ"]["total"]):
                raise ValueError("an energy figure of network.json is not finite")
    validate(doc, "network", "network.json")
    return write_report_set(out, "network", doc, plot, markdown)

