"""The MiniLM statistics report: one call from corpus name to JSON, Markdown (and plots).

``matterhorn stats --model minilm`` is a thin wrapper over :func:`minilm_stats`. The figures are
drawn by a callback (``energy_model.plots.plot_minilm``), which keeps matplotlib out of
``golden_models``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import torch

from golden_models.codespace import CodeSpace, check_integer
from networks.bert import POSITION_FAMILY, POSITION_LABELS, POSITIONS, check_spec_for_model
from networks.corpus import load_corpus
from networks.hf_folder import load_model, resolve_model
from networks.integer import IntegerSpec, integer_mode_
from networks.ptq import PTQConfig, convert
from networks.rtl_slice import SLICE_NEURONS, capture_slice, slice_document
from networks.stats import check_k_max, collect, dumps, summarise
from toolkit_base import console
from toolkit_base.checks import check_out_writable
from toolkit_base.files import replace_owned, staging_dir
from toolkit_base.tables import markdown_table

MODELS = ("minilm",)
#: The exported RTL slice (:mod:`networks.rtl_slice`) in the report folder.
SLICE_FILE = "slice_block0_qproj.json"
#: The QNN histograms in the shared statistics schema (:mod:`golden_models.statistics`).
GOLDEN_FILE = "golden_stats.json"

#: The paper's p(q=0) per position (SST-2, source QNN; Table "Proportion of the most frequent
#: quantized value"), printed beside the measured values.
PAPER_P_Q0 = {
    "q_proj_in": 0.264,
    "k_proj_in": 0.264,
    "v_proj_in": 0.293,
    "query": 0.200,
    "attn_prob": 0.807,
    "attn_out_in": 0.878,
    "ffn_expand_in": 0.330,
    "ffn_contract_in": 0.911,
}
#: The paper's per-step spike rates in percent (BERT GLUE average T=16; LLaMA-2 7B).
PAPER_RATES = {
    "BERT GLUE avg": {"TTFS": 3.74, "k=0": 2.60, "k=1": 1.64},
    "LLaMA-2 7B": {"TTFS": 6.18, "k=0": 5.19, "k=1": 3.57, "k=2": 2.33},
}


def _check_count(n: object, name: str) -> int | None:
    if n is None:
        return None
    check_integer(name, n)
    if n < 1:
        raise ValueError(f"{name} must be at least 1, not {n!r}")
    return n


def minilm_stats(
    corpus: str = "pydoc-topics",
    *,
    sentences: int | None = None,
    calibration: int | None = None,
    k_max: int = 4,
    out: Path | str | None = None,
    plot: Callable[[dict, Path], object] | None = None,
    threads: int | None = None,
    checkpoint: Path | str | None = None,
    integer: IntegerSpec | None = None,
    model: str | Path = "minilm",
) -> dict:
    """Convert a BERT-family model post-training, measure spike statistics, write the report.

    Parameters
    ----------
    model : str or path
        ``"minilm"`` (the shipped all-MiniLM-L6-v2) or a model folder
        (:func:`networks.hf_folder.resolve_model`); its dimensions flow into the conversion,
        the statistics, the slice and ``dims``.
    corpus : str
        Corpus name (:data:`networks.corpus.CORPORA`) or a ``.txt`` path.
    sentences, calibration : int, optional
        Use the first ``sentences`` evaluation and ``calibration`` calibration sentences
        (default: the whole split).
    k_max : int
        Largest dead-zone radius.
    threads : int, optional
        Torch intra-op threads for the call (restored afterwards). On a loaded machine one
        thread is often faster: the work is many small tensor operations.
    out : path, optional
        Folder for ``stats.json``, ``rates.json``, ``summary.md`` and the plots; it is
        written completely into a temporary folder first, then moved into place.
    plot : callable, optional
        ``plot(doc, folder)`` draws the figures into the report folder (see
        :func:`write_report`; ``energy_model.plots.plot_minilm`` writes the PNGs).
    checkpoint : path, optional
        A checkpoint folder of ``matterhorn finetune`` (:mod:`networks.checkpoint`):
        measure that QNN instead of converting one (``calibration`` is then unused). Its radius
        must not exceed ``k_max``.
    integer : IntegerSpec, optional
        Measure the QNN in integer mode (:mod:`networks.integer`) with these widths. A
        checkpoint must have been made in integer mode (its own widths are used), and one made
        in integer mode needs ``integer``.

    Returns
    -------
    dict
        The statistics document (as in ``stats.json``), plus ``"sentences_per_second"``
        (not written: it is not deterministic).
    """
    threads = _check_count(threads, "threads")
    saved = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _minilm_stats(corpus, sentences, calibration, k_max, out, plot, checkpoint,
                             model, integer)
    finally:
        torch.set_num_threads(saved)


def _minilm_stats(corpus, sentences, calibration, k_max, out, plot, checkpoint,
                  model="minilm", integer=None) -> dict:
    # every input before the model is loaded and anything is written
    source = resolve_model(model)
    if integer is not None:
        check_spec_for_model(integer, source.config)
    sentences = _check_count(sentences, "sentences")
    calibration = _check_count(calibration, "calibration")
    check_k_max(k_max)
    if out is not None:
        check_out_writable(out, beside=True)  # the report is staged beside it
    if checkpoint is not None:
        from networks import checkpoint as ckpt

        ckpt.check(checkpoint, model=source.key, k_max=k_max, integer=integer is not None)
    data = load_corpus(corpus)  # a corpus file is read and checked here
    with console.steps("stats", 4) as phase:
        return _measure(source, data, sentences, calibration, k_max, out, plot, checkpoint,
                        integer, phase)


def _measure(source, data, sentences, calibration, k_max, out, plot, checkpoint, integer,
             phase):
    phase.start(f"loading {source.name}")
    cal = data.calibration[:calibration]
    ev = data.evaluation[:sentences]
    float_model, tok = load_model(source)
    phase.advance(source.describe())
    cfg = PTQConfig()
    finetuned = None
    if checkpoint is None:
        phase.start(f"converting post-training on {len(cal)} calibration sentences")
        qnn = convert(float_model, tok, cal, cfg)
        if integer is not None:
            integer_mode_(qnn, integer)
    else:
        from networks import checkpoint as ckpt

        qnn, ck = ckpt.load(checkpoint, float_model, model=source.key,
                            integer=integer is not None)
        run = ck["runs"][0]
        if run["k"] > k_max:
            raise ValueError(
                f"checkpoint {str(checkpoint)!r} was fine-tuned at k={run['k']}, beyond "
                f"k_max={k_max}"
            )
        cal = data.calibration[: ck["corpus"]["calibration_sentences"]]
        finetuned = {
            "k": run["k"],
            "steps": run["config"]["steps"],
            "seed": run["config"]["seed"],
            "corpus": ck["corpus"]["name"],
        }
    phase.advance("QNN ready")
    phase.start(f"measuring {len(ev)} evaluation sentences at k = 0..{k_max}")
    run = collect(float_model, qnn, tok, ev, k_max)
    phase.advance(f"{len(ev)} sentences measured")
    meta = {
        "model": source.name,
        "dims": source.dims,
        "corpus": {
            "name": data.name,
            "source": data.source,
            "calibration_sentences": len(cal),
            "evaluation_sentences": len(ev),
        },
        "quantization": {
            "weight_bits": cfg.weight_bits,
            "weights": "per-output-channel symmetric, MSE-searched clipping",
            "act_bits": cfg.act_bits,
            "activations": "per position and block, MSE-searched clipping on calibration split",
            "rounding": cfg.rounding,
            "key_value": "4-bit symmetric per block, consumed as weights (not spike-encoded)",
            "i_max": "mode of the calibration histogram per position and block",
        },
        "finetuned": finetuned,
        "integer": None if qnn.integer is None else qnn.integer.as_dict(),
    }
    doc = summarise(qnn, run, meta)
    # one tile-sized real layer for the RTL: block 0's Q projection, 16 neurons, k = 1
    phase.start("the RTL slice and the report")
    sl = capture_slice(qnn, tok, ev, block=0, n_out=min(SLICE_NEURONS, source.config.hidden_size),
                       k=min(1, k_max), max_vectors=8, model=source.name)
    doc["rtl_tile"] = rtl_tile(sl)
    if out is not None:
        extra = {SLICE_FILE: slice_document(sl), GOLDEN_FILE: golden_stats_document(doc)}
        write_report(doc, Path(out), plot=plot, extra=extra)
    phase.advance("report written" if out is not None else "slice captured")
    doc = dict(doc)
    doc["sentences_per_second"] = run.emb_float.shape[0] / run.seconds
    return doc


def rtl_tile(sl) -> dict:
    """The generated tile that runs the slice ``sl`` (block 0's Q projection at the model's
    width): its parameters, and the ``matterhorn generate`` line that writes its Verilog."""
    L = sl.layer
    tile = {
        "layer": sl.meta["layer"],
        "T": L.in_mask.T,
        "k": L.in_mask.k,
        "family": L.in_mask.space.family,
        "i_max_in": L.in_mask.i_max,
        "i_max_out": L.out_mask.i_max,
        "weight_bits": L.weight_bits,
        "n_in": L.n_in,
        "tile_neurons": L.n_out,
    }
    tile["generate"] = (
        f"matterhorn generate --T {tile['T']} --k {tile['k']} --family {tile['family']} "
        f"--i-max {tile['i_max_in']} {tile['i_max_out']} --weight-bits {tile['weight_bits']} "
        f"--n-in {tile['n_in']} --tile-neurons {tile['tile_neurons']}"
    )
    return tile


def golden_stats_document(doc: dict) -> dict:
    """The QNN (k = 0) histograms as ``matterhorn.golden_stats/1``: one record per block and
    position.

    Records are named by the paper's position labels, with the calibrated ``I_max``. Their
    M-TTFS rates are computed from the QNN histogram alone (no downstream effect of the mask);
    ``stats.json`` has the measured rates of each k network.
    """
    from golden_models.statistics import PositionStats, stats_document

    ks = tuple(range(doc["k_max"] + 1))
    records = []
    for block in doc["blocks"]:
        for name in POSITIONS:
            entry = block["positions"][name]
            space = CodeSpace(doc["T"], POSITION_FAMILY[name])
            counts = torch.tensor(entry["histogram_tau"], dtype=torch.int64)
            records.append(
                PositionStats.from_counts(
                    POSITION_LABELS[name], counts, space, i_max=entry["i_max"], ks=ks
                )
            )
    return stats_document(records)


def rates_document(doc: dict) -> dict:
    """Per-position and per-block rates, in the shape an energy model consumes."""
    return {
        "schema": "matterhorn.minilm_rates/1",
        "model": doc["model"],
        "dims": doc["dims"],
        "T": doc["T"],
        "rate_unit": "events per element per time step",
        "network": doc["rates"],
        "positions": {p["position"]: p["rates"] for p in doc["positions"]},
        "blocks": [
            {name: b["positions"][name]["rates"] for name in POSITIONS} for b in doc["blocks"]
        ],
    }


def write_report(
    doc: dict,
    out: Path,
    *,
    plot: Callable[[dict, Path], object] | None = None,
    extra: dict[str, dict] | None = None,
) -> None:
    """Write ``stats.json``, ``rates.json``, ``summary.md`` (and plots) to ``out`` atomically.

    Only these files are replaced (and the ones an earlier call wrote and this one did not,
    e.g. plots, removed); other files in ``out`` stay (:func:`toolkit_base.files.replace_owned`).

    ``plot(doc, folder)`` draws the figures into the folder being written (the project's is
    :func:`energy_model.plots.plot_minilm`: the plotting layer, since ``golden_models`` depends
    on torch and numpy only); None writes no figures. ``extra`` maps further file names to JSON
    documents written alongside.
    """
    out = Path(out)
    with staging_dir(out.parent, prefix=".stats-") as tmp:
        (tmp / "stats.json").write_text(dumps(doc), "utf-8")
        (tmp / "rates.json").write_text(json.dumps(rates_document(doc), indent=1) + "\n", "utf-8")
        (tmp / "summary.md").write_text(summary_markdown(doc), "utf-8")
        for name, value in (extra or {}).items():
            (tmp / name).write_text(json.dumps(value, indent=1) + "\n", "utf-8")
        if plot is not None:
            plot(doc, tmp)
        replace_owned(tmp, out, also_own=("stats.json", "rates.json", "summary.md"))


def summary_markdown(doc: dict) -> str:
    """A Markdown summary: p(q=0) and modes per position, rates per k, quality per k."""
    ks = [f"k={k}" for k in range(doc["k_max"] + 1)]
    c = doc["corpus"]
    d = doc["dims"]
    r, q = doc["rates"], doc["quality"]
    k1 = "k=1" if "k=1" in r else ks[-1]
    lines = [
        f"# {doc['model']}: spike statistics",
        "",
        (
            f"**Answer.** Spike rate per step of the network: TTFS {100 * r['TTFS']:.2f} %, "
            + ", ".join(f"M-TTFS {k} {100 * r[k]:.2f} %" for k in ks[:3])
            + f"; cosine of the sentence embeddings to the float model: QNN "
            f"{q['qnn']['cos_float']['mean']:.3f}, M-TTFS {k1} {q[k1]['cos_float']['mean']:.3f}"
            f". Zero is the most frequent code in {doc['block_modes_zero']} of "
            f"{doc['block_mode_cells']} (block, position) cells."
        ),
        *(
            [
                "",
                f"Model: {d['layers']} blocks, hidden {d['hidden']}, FFN {d['ffn']}, "
                f"{d['heads']} heads of {d['head_dim']}"
                + (f", {d['max_positions']} positions" if "max_positions" in d else "")
                + ".",
            ]
            if {"layers", "hidden", "ffn", "heads", "head_dim"} <= set(d)
            else []
        ),
        "",
        (
            f"Corpus `{c['name']}` ({c['source']}): {c['calibration_sentences']} calibration, "
            f"{c['evaluation_sentences']} evaluation sentences ({doc['tokens']} tokens). "
            f"W{doc['quantization']['weight_bits']}A{doc['quantization']['act_bits']}, "
            f"T={doc['T']}, rounding `{doc['quantization']['rounding']}`."
        ),
        *(
            [
                "",
                (
                    f"Fine-tuned at k={doc['finetuned']['k']} ({doc['finetuned']['steps']} "
                    f"steps, seed {doc['finetuned']['seed']}; `matterhorn finetune`)."
                ),
            ]
            if doc.get("finetuned")
            else []
        ),
        "",
        "## Most frequent code per position (QNN, all blocks pooled)",
        "",
        *markdown_table(
            ["position", "family", "p(q=0)", "paper p(q=0)", "mode q", "per-block modes q"],
            (
                [
                    p["label"],
                    p["family"],
                    f"{p['p_q0']:.3f}",
                    f"{PAPER_P_Q0[p['position']]:.3f}",
                    p["mode_q"],
                    " ".join(str(m) for m in p["block_modes_q"]),
                ]
                for p in doc["positions"]
            ),
        ),
    ]
    lines += [
        "",
        f"Per-block modes at q=0: {doc['block_modes_zero']} of {doc['block_mode_cells']}.",
        "",
        "## Spike rate per step (%)",
        "",
        "| position | TTFS | " + " | ".join(ks) + " |",
        "| --- | --- | " + " | ".join("---" for _ in ks) + " |",
    ]
    for p in doc["positions"]:
        r = p["rates"]
        vals = " | ".join(f"{100 * r[k]:.2f}" for k in ks)
        lines.append(f"| {p['label']} | {100 * r['TTFS']:.2f} | {vals} |")
    r = doc["rates"]
    lines.append(
        f"| **network** | **{100 * r['TTFS']:.2f}** | "
        + " | ".join(f"**{100 * r[k]:.2f}**" for k in ks)
        + " |"
    )
    for name, pr in PAPER_RATES.items():
        lines.append(
            f"| paper, {name} | {pr['TTFS']:.2f} | "
            + " | ".join(f"{pr[k]:.2f}" if k in pr else "" for k in ks)
            + " |"
        )
    q = doc["quality"]
    lines += [
        "",
        "## Quality: cosine similarity of sentence embeddings (mean / min)",
        "",
        "| network | to float | to QNN | bit-exact to QNN |",
        "| --- | --- | --- | --- |",
        (
            f"| QNN | {q['qnn']['cos_float']['mean']:.4f} / {q['qnn']['cos_float']['min']:.4f} "
            "| 1 | yes |"
        ),
    ]
    for k in ks:
        e = q[k]
        lines.append(
            f"| M-TTFS {k} | {e['cos_float']['mean']:.4f} / {e['cos_float']['min']:.4f} | "
            f"{e['cos_qnn']['mean']:.4f} / {e['cos_qnn']['min']:.4f} | "
            f"{'yes' if e['bit_exact_qnn'] else 'no'} |"
        )
    tile = doc.get("rtl_tile")
    if tile:
        lines += [
            "",
            "## One tile of this model in RTL",
            "",
            (
                f"The slice `{SLICE_FILE}` is the {tile['layer']} at this model's width: "
                f"{tile['n_in']} inputs x {tile['tile_neurons']} neurons, "
                f"{tile['weight_bits']}-bit weights, calibrated I_max {tile['i_max_in']} in, "
                f"{tile['i_max_out']} out (k={tile['k']}). Its Verilog:"
            ),
            "",
            f"    {tile['generate']}",
        ]
    lines.append("")
    return "\n".join(lines)
