"""``matterhorn block``: a whole encoder block through its hardware pieces on real sentences,
every design, bit-exact, and its energy per block (docs/rtl_block.md).

:func:`run` loads and converts the model (the small random block, MiniLM or a model folder),
picks sentences of the evaluation split with their lengths spread, runs them through the
block's hardware pieces as each design (:func:`regression.block.run_block`: every position,
every key and value code, the raw sums, both LayerNorms' streams and codes checked), prices
each design with the paper's model at the rates it measured (``energy_model``), and writes
``block.json`` (schema ``matterhorn.block/1``), ``block.md`` and ``block.png`` into ``--out``.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from regression.block import DESIGNS, PIECES, TILE_NEURONS, seq_max_of

__all__ = ["BlockSetup", "block_document", "check_checkpoint", "check_designs", "markdown",
           "model_energy", "plot", "ratio", "run", "setup", "verdict", "write"]

#: The paper's per-block ratio of M-TTFS k = 1 to the dense QNN (BERT-base, its energy table:
#: 48.27 / 71.54 mJ).
PAPER_RATIO = 48.27 / 71.54
#: Calibration sentences of a real model's conversion (as ``matterhorn layer``).
CALIBRATION = 6
#: Model components of a design's energy (``energy_model``'s, joules in its report).
MODEL_COMPONENTS = ("move", "wread", "kvwrite", "compute")


@dataclass(frozen=True)
class BlockSetup:
    """What a run is about: the network, its tokenizer, its name and the sentences."""

    qnn: object
    tokenizer: object
    name: str
    sentences: list[str]
    seq_max: int


def check_designs(designs, ks) -> list[str]:
    """The designs of ``--design dense|ttfs|mttfs`` and ``--k``: M-TTFS once per radius."""
    from golden_models.codespace import check_k

    out = []
    for d in designs:
        if d not in ("dense", "ttfs", "mttfs"):
            raise ValueError(f"--design must be one of dense, ttfs, mttfs, not {d!r}")
        if d == "mttfs":
            for k in ks:
                check_k(k, 16)
                if k > 2:
                    raise ValueError(f"--k must be 0, 1 or 2 (the compared radii), not {k}")
                out.append(f"mttfs-k{k}")
        else:
            out.append(d)
    return [d for d in DESIGNS if d in out]


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

    check(checkpoint, model=resolve_model(model).key)


def setup(model: str, sentences: int, *, block: int = 0, seed: int = 0,
          checkpoint=None) -> BlockSetup:
    """Load ``model`` (``random``, ``minilm`` or a model folder) in integer mode: converted
    post-training, or the fine-tuned integer-mode network of ``checkpoint`` (a folder of
    ``matterhorn finetune --integer``); pick ``sentences`` sentences of the ``pydoc-topics``
    evaluation split that fit the block's sequence length, lengths spread."""
    from networks.corpus import load_corpus, spread_by_length
    from networks.integer import integer_mode_

    corpus = load_corpus("pydoc-topics")
    if model == "random":
        from networks.block import random_block_model

        qnn, tok = random_block_model(seed=seed)
        name = "random"
    else:
        from networks.hf_folder import load_model, resolve_model

        source = resolve_model(model)
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
    return BlockSetup(qnn, tok, name, picked, seq_max)


def run(st: BlockSetup, designs, *, block: int = 0, tile_neurons: int = TILE_NEURONS,
        steps=None) -> dict:
    """Every design of ``designs`` over the sentences; the ``block.json`` document.
    ``steps``: a :class:`toolkit_base.console.Steps` told of each design."""
    from regression.block import run_block

    runs = []
    for d in designs:
        if steps is not None:
            n = len(st.sentences)
            steps.start(f"{d}: {n} sentence{'s' if n > 1 else ''} through the block's pieces")
        runs.append(run_block(st.qnn, st.tokenizer, st.sentences, d, block=block,
                              tile_neurons=tile_neurons))
        if steps is not None:
            steps.advance(f"{d}: {runs[-1].mismatches} mismatches")
    dims = _dims(st)
    return block_document(st, runs, model_energy(runs, dims), dims, block=block,
                          tile_neurons=tile_neurons)


def model_energy(runs, dims) -> dict[str, dict[str, float]]:
    """The paper's model (``energy_model.compute``) per block at ``dims`` (its B and S), at
    the spike rates the runs measured: joules per component and total, per design."""
    from energy_model.model import compute
    from energy_model.rates import Rate, Rates

    by = {r.design: r for r in runs}
    T = runs[0].T
    source = f"measured on the block's hardware pieces ({runs[0].tokens} tokens)"
    rates = Rates(
        T=T,
        ttfs=Rate(by["ttfs"].rates(), source, "TTFS") if "ttfs" in by else None,
        mttfs={int(d.rsplit("k", 1)[1]): Rate(by[d].rates(), source, d)
               for d in DESIGNS if d.startswith("mttfs") and d in by},
        source=source,
    )
    report = compute(dims, rates)
    out = {}
    for row in report.rows:
        spec = row.spec
        design = ("dense" if spec.encoding == "dense" else
                  "ttfs" if spec.k is None else f"mttfs-k{spec.k}")
        if design in by:
            out[design] = row.energy.to_json()
    return out


def _dims(st: BlockSetup):
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
                   tile_neurons: int) -> dict:
    """``block.json``: the run's parameters, and per design its checks, deliveries, clocks
    and energy (the paper's model at the measured rates; the gates column is ``null`` until
    the block's gate-level pricing exists)."""
    from rtl_gen.block_map import BlockShape, place_block

    cfg = st.qnn.cfg
    placement = place_block(BlockShape.of(cfg, seq_max=st.seq_max, tile_neurons=tile_neurons))
    designs = []
    for r in runs:
        m = model[r.design]
        traffic = placement.traffic(r.flits)
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
                "gates": None,
                "model": {c: m[f"{c}_J"] * 1e12 for c in (*MODEL_COMPONENTS, "total")},
            },
        })
    return {
        "schema": "matterhorn.block/1",
        "model": st.name,
        "block": block,
        "dims": {"hidden": cfg.hidden_size, "heads": cfg.num_attention_heads,
                 "head_dim": cfg.head_dim, "ffn": cfg.intermediate_size,
                 "seq_max": st.seq_max},
        "k": sorted(int(r.design[-1]) for r in runs if r.design.startswith("mttfs")),
        "pdk": None,
        "sentences": len(st.sentences),
        "tokens": runs[0].tokens,
        "tile_neurons": tile_neurons,
        "mesh": placement.document(),
        "workload": {"batch": dims.batch, "seq": dims.seq,
                     "what": "energy per block of B sequences of S tokens, the paper's model "
                     "(energy_model) at the spike rates measured here, its unit costs the "
                     "paper's table"},
        "designs": designs,
    }


def ratio(doc: dict, design: str = "mttfs-k1", source: str = "model") -> float | None:
    """``design``'s total over the dense design's (``source``: ``model`` or ``gates``)."""
    by = {d["design"]: d["energy_pJ"][source] for d in doc["designs"]}
    if design not in by or "dense" not in by or by[design] is None or by["dense"] is None:
        return None
    return by[design]["total"] / by["dense"]["total"]


def verdict(doc: dict) -> list[str]:
    """The answer, first: the checks, then the ratio against the paper's."""
    bad = sum(d["mismatches"] for d in doc["designs"])
    checked = sum(d["checked"] for d in doc["designs"])
    names = ", ".join(d["design"] for d in doc["designs"])
    n = doc["sentences"]
    lines = [f"{doc['model']} block {doc['block']}, {n} sentence{'s' if n > 1 else ''} "
             f"({doc['tokens']} tokens): "
             + (f"0 mismatches in {checked} values checked ({names})" if bad == 0 else
                f"FAIL: {bad} mismatches in {checked} values checked ({names})")]
    r = ratio(doc)
    if r is not None:
        lines.append(f"An M-TTFS k=1 block costs {r:.3f}x the dense INT4 block in the paper's "
                     f"model at the rates measured here (the paper: {PAPER_RATIO:.3f}x); in "
                     "our gates: not measured yet.")
    return lines


def markdown(doc: dict) -> str:
    """``block.md``: the verdict, the designs' energy per block by component, the deliveries
    per position, the pieces' checks and clocks."""
    from golden_models.positions import POSITION_KEYS
    from toolkit_base.tables import markdown_table

    lines = ["# A whole encoder block through its hardware pieces", ""]
    lines += [f"**{line}**" for line in verdict(doc)] + [""]
    w = doc["workload"]
    lines += [f"## Energy per block (µJ), B = {w['batch']}, S = {w['seq']}", "",
              f"{w['what']}.", ""]
    rows = []
    dense = next((d for d in doc["designs"] if d["design"] == "dense"), None)
    for d in doc["designs"]:
        m = d["energy_pJ"]["model"]
        rel = (f"{m['total'] / dense['energy_pJ']['model']['total']:.3f}"
               if dense is not None else "")
        rows.append([d["design"], *(f"{m[c] / 1e6:.4g}" for c in (*MODEL_COMPONENTS, "total")),
                     rel])
    lines += markdown_table(["design", *MODEL_COMPONENTS, "total", "vs dense"], rows) + [""]
    mesh = doc["mesh"]["mesh"]
    lines += [(f"## Movement on the block's mesh ({mesh['rows']}x{mesh['cols']}, "
              f"docs/rtl_block.md), all sentences"), ""]
    lines += markdown_table(
        ["design", "flits", "flit-hops", "hops per flit", "busiest router (flits)"],
        [[d["design"], str(d["traffic"]["flits"]), str(d["traffic"]["flit_hops"]),
          f"{d['traffic']['flit_hops'] / max(d['traffic']['flits'], 1):.2f}",
          str(d["traffic"]["busiest_router"])] for d in doc["designs"]]) + [""]
    lines += ["## Deliveries per position (events; codes for the dense design)", ""]
    lines += markdown_table(
        ["design", *POSITION_KEYS],
        [[d["design"], *(str(d["events"][p]) for p in POSITION_KEYS)] for d in doc["designs"]]
    ) + [""]
    lines += ["## The pieces: values checked, mismatches, clocks", ""]
    lines += markdown_table(
        ["piece", *(d["design"] for d in doc["designs"])],
        [[piece, *(f"{p['checked']} / {p['mismatches']} / {p['cycles']}"
                   for d in doc["designs"] for p in d["pieces"] if p["piece"] == piece)]
         for piece in PIECES]) + [""]
    return "\n".join(lines)


def plot(doc: dict, path: Path) -> None:
    """``block.png``: one stacked bar per design, the model's components per block."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [d["design"] for d in doc["designs"]]
    fig, ax = plt.subplots(figsize=(1.2 * len(names) + 2.5, 3.6))
    bottom = [0.0] * len(names)
    for comp in MODEL_COMPONENTS:
        vals = [d["energy_pJ"]["model"][comp] / 1e6 for d in doc["designs"]]
        ax.bar(names, vals, bottom=bottom, label=comp)
        bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
    ax.set_ylabel("µJ per block (model, measured rates)")
    ax.set_title(f"{doc['model']}: energy per block, B={doc['workload']['batch']}, "
                 f"S={doc['workload']['seq']}")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)


def write(doc: dict, out: Path) -> list[Path]:
    """``block.json``, ``block.md`` and ``block.png`` into ``out``: staged beside it, then
    moved in, the summary (``block.md``) last; nothing is written for an invalid document."""
    import os

    from toolkit_base.files import staging_dir
    from toolkit_base.schemas import validate

    if not all(math.isfinite(d["energy_pJ"]["model"]["total"]) for d in doc["designs"]):
        raise ValueError("an energy figure of block.json is not finite")
    validate(doc, "block", "block.json")
    out = Path(out)
    names = ("block.json", "block.png", "block.md")
    with staging_dir(out.parent, prefix=".block-") as stage:
        (stage / "block.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
        plot(doc, stage / "block.png")
        (stage / "block.md").write_text(markdown(doc), encoding="utf-8")
        out.mkdir(parents=True, exist_ok=True)
        for name in names:
            os.replace(stage / name, out / name)
    return [out / n for n in names]
