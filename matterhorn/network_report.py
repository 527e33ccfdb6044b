"""``matterhorn network``'s report: the verdict, ``network.md`` and ``network.png`` of a
``network.json`` document (:func:`matterhorn.network.network_document`), as
:mod:`matterhorn.block_report` is ``block``'s."""

from __future__ import annotations

from pathlib import Path

__all__ = ["CONVERTED_BLOCK_RATIO", "markdown", "plot", "ratio", "verdict"]

#: This project's figure for MiniLM's block 0 converted post-training (not fine-tuned), eight
#: sentences, NanGate 45 nm: M-TTFS k = 1 against the dense INT4 block in our gates
#: (docs/block_gates.md). The converted network's embeddings have a cosine of 0.295 to the
#: float model's: a network nobody would deploy.
CONVERTED_BLOCK_RATIO = 0.300


def _by(doc: dict) -> dict:
    return {d["design"]: d for d in doc["designs"]}


def ratio(doc: dict, design: str = "mttfs-k1", source: str = "gates",
          key: str = "total") -> float | None:
    """``design``'s energy per sentence over the dense design's (``source``: ``gates`` or
    ``model``; ``key``: ``total`` or ``gated_total``)."""
    by = _by(doc)
    if design not in by or "dense" not in by:
        return None
    a, b = by[design]["energy"][source], by["dense"]["energy"][source]
    if a is None or b is None or key not in a["per_sentence_pJ"]:
        return None
    return a["per_sentence_pJ"][key] / b["per_sentence_pJ"][key]


def _q(d: dict) -> str:
    q = d["quality"]["qnn"]
    r = q["retrieval_agreement"]
    return (f"cosine {q['cos_float']['mean']:.3f}"
            + (f", retrieval {r:.3f}" if r is not None else ""))


def verdict(doc: dict) -> list[str]:
    """The answer first: at the M-TTFS k = 1 network's quality, what it costs against the
    dense INT4 network per sentence (our gates when priced, else the paper's model), then the
    checks, beside the paper's per-block figure and this project's converted-network one."""
    from matterhorn.block_report import PAPER_RATIO

    by = _by(doc)
    lines = []
    n, blocks = len(doc["sentences"]), doc["dims"]["blocks"]
    g = ratio(doc)
    m = ratio(doc, source="model")
    if "mttfs-k1" in by and "dense" in by and (g is not None or m is not None):
        k1, dense = by["mttfs-k1"], by["dense"]
        where = (f"in our gates on {doc['pdk']}" if g is not None
                 else "in the paper's model at the rates measured (not priced in our gates: "
                      "--gates)")
        lines.append(f"At quality {_q(k1)} (to the float model, {doc['evaluation']['sentences']} "
                     f"evaluation sentences), an M-TTFS k = 1 network costs "
                     f"{g if g is not None else m:.3f}x the dense INT4 network ({_q(dense)}) "
                     f"per sentence {where}.")
        if g is not None:
            gated = ratio(doc, key="gated_total")
            converted = (f"; this toolkit's figure for MiniLM's block 0 converted post-training, "
                         f"{CONVERTED_BLOCK_RATIO:.3f}x, is at the rates of a network at cosine "
                         "0.295" if doc["model"] == "all-MiniLM-L6-v2" else "")
            lines.append(f"Clock-gated {gated:.3f}x; the paper's model at the same rates "
                         f"{m:.3f}x; the paper's per-block figure {PAPER_RATIO:.3f}x (BERT-base "
                         f"at SST-2's rates){converted}.")
    bad = sum(d["mismatches"] for d in doc["designs"])
    checked = sum(d["checked"] for d in doc["designs"])
    equal = sum(d["embeddings_equal"] for d in doc["designs"])
    names = ", ".join(d["design"] for d in doc["designs"])
    run = (f"{doc['model']}, {blocks} blocks, {n} sentence{'s' if n > 1 else ''} "
           f"({doc['tokens']} tokens, {doc['rtl_sim']}): ")
    if bad == 0:
        lines.append(run + f"0 mismatches in {checked} values checked ({names}); the hardware's "
                     f"sentence embeddings equal the QNN's for {equal} of "
                     f"{n * len(doc['designs'])}.")
    else:
        lines.append(run + f"FAIL: {bad} mismatches in {checked} values checked ({names}).")
    return lines


def _table(doc: dict) -> list[str]:
    from toolkit_base.tables import markdown_table

    by, rows = _by(doc), []
    for d in doc["designs"]:
        g, mo = d["energy"]["gates"], d["energy"]["model"]
        sp = g["speed"] if g else None
        rows.append([
            d["design"], d["network"], f"{d['quality']['qnn']['cos_float']['mean']:.4f}",
            _fmt(d["quality"]["qnn"]["retrieval_agreement"], "{:.3f}"),
            f"{d['quality']['hardware']['equal_to_qnn']} / {d['quality']['hardware']['sentences']}",
            str(d["mismatches"]),
            _fmt(g and g["per_sentence_pJ"]["total"] / 1e6, "{:.4g}"),
            _fmt(ratio(doc, d["design"]) if "dense" in by else None, "{:.3f}"),
            _fmt(ratio(doc, d["design"], key="gated_total") if "dense" in by else None,
                 "{:.3f}"),
            f"{mo['per_sentence_pJ']['total'] / 1e6:.4g}",
            _fmt(ratio(doc, d["design"], "model") if "dense" in by else None, "{:.3f}"),
            _fmt(sp and sp["latency_per_token_ns"] / 1e3, "{:.3g}"),
            _fmt(sp and sp["tokens_per_s"], "{:.4g}"),
        ])
    return markdown_table(
        ["design", "network", "cosine", "retrieval", "hardware = QNN", "mismatches",
         "gates µJ / sentence", "vs dense", "gated vs dense", "model µJ / sentence",
         "model vs dense", "latency µs / token", "tokens / s"], rows)


def _fmt(v, f: str) -> str:
    return "" if v is None else f.format(v)


def markdown(doc: dict) -> str:
    """``network.md``: the verdict, each design's quality and energy in one table, the energy
    by component and by block, the validation of the pricing, the checks per block."""
    from toolkit_base.tables import markdown_table

    lines = ["# The whole network through the generated hardware", ""]
    lines += [f"**{line}**" for line in verdict(doc)] + [""]
    lines += ["## Quality and energy per sentence", ""]
    w = doc["model_workload"]
    lines += [(f"Quality: the QNN of each design's network on the {doc['evaluation']['sentences']} "
               f"sentences of {doc['evaluation']['corpus']}'s evaluation split (cosine of the "
               "sentence embedding to the float model's, mean; top-1 retrieval agreement with "
               "the float model); *hardware = QNN*: the sentences run whose embedding, made "
               "from the hardware's last stream, equals the QNN's bit for bit. Energy per "
               f"sentence: the run's total over its {len(doc['sentences'])} sentences "
               f"({doc['tokens']} tokens). Our gates: "
               + (f"{doc['gates']['library']}, {doc['gates']['clock_ns']:g} ns clock, at the "
                  "library's node" if doc["gates"] else "not priced (--gates)")
               + f"; the model: {w['what']} (B = {w['batch']}, S = {w['seq']}). Latency: the "
               "pieces of every block one after the other, the tiles of a layer side by side, "
               "at the pricing's clock."), ""]
    lines += _table(doc) + [""]
    if doc["gates"]:
        lines += _gates_markdown(doc)
    lines += ["## The blocks: values checked / mismatches, values handed on that differ", ""]
    by = doc["designs"]
    nblocks = doc["dims"]["blocks"]
    lines += markdown_table(
        ["block", *(d["design"] for d in by)],
        [[str(b), *(f"{d['blocks'][b]['checked']} / {d['blocks'][b]['mismatches']} / "
                    f"{d['blocks'][b]['handoff_mismatches']}" for d in by)]
         for b in range(nblocks)]) + [""]
    lines += ["## Spike rates per block (% per step, mean over the counted positions)", ""]
    lines += markdown_table(
        ["block", *(d["design"] for d in by)],
        [[str(b), *(f"{_mean(d['blocks'][b]['rates_percent']):.3f}" for d in by)]
         for b in range(nblocks)]) + [""]
    lines += ["## The sentences", ""]
    lines += [f"- {s['length']} tokens: {s['text']}" for s in doc["sentences"]] + [""]
    return "\n".join(lines)


def _mean(rates: dict) -> float:
    return sum(rates.values()) / max(len(rates), 1)


def _gates_markdown(doc: dict) -> list[str]:
    from matterhorn.block_report import sram_said
    from synth_scripts.block_gates import COMPONENTS
    from toolkit_base.tables import markdown_table

    gd = doc["gates"]
    priced = [d for d in doc["designs"] if d["energy"]["gates"] is not None]
    keys = (*COMPONENTS, "total", "gated_total")
    lines = ["## Our gates per sentence by component (µJ)", "",
             (f"{gd['library']} ({gd['liberty']}), {gd['clock_ns']:g} ns, gate-level replays on "
              f"{gd['simulator']}. {gd['method']['how']}: {_n(gd['method']['sample_sentences'])} "
              f"({gd['method']['sample_tokens']} tokens) of block "
              f"{gd['method']['sample_block']}. {sram_said(gd)} "
              f"Leakage: {gd['leakage']['why']}."), ""]
    lines += markdown_table(
        ["design", *keys],
        [[d["design"], *(_fmt(d["energy"]["gates"]["per_sentence_pJ"][k] and
                              d["energy"]["gates"]["per_sentence_pJ"][k] / 1e6, "{:.4g}")
                         for k in keys)] for d in priced]) + [""]
    lines += ["### Per block, pJ per token (free-running total)", ""]
    lines += markdown_table(
        ["block", *(d["design"] for d in priced)],
        [[str(b), *(f"{d['blocks'][b]['gates_per_token_pJ']['total']:.0f}" for d in priced)]
         for b in range(doc["dims"]["blocks"])]) + [""]
    lines += ["### Speed at the pricing's clock", ""]
    lines += markdown_table(
        ["design", "clocks / token", "latency µs / token", "tokens / s", "sentences / s",
         "tokens / s, pipelined"],
        [[d["design"], f"{s['cycles_per_token']:.0f}", f"{s['latency_per_token_ns'] / 1e3:.3g}",
          _fmt(s["tokens_per_s"], "{:.4g}"), _fmt(s["sentences_per_s"], "{:.4g}"),
          _fmt(s["pipelined_tokens_per_s"], "{:.4g}")]
         for d in priced for s in [d["energy"]["gates"]["speed"]]]) + [""]
    lines += [("(*pipelined*: every piece of every block its own hardware, the slowest piece "
               "setting the rate; not measured as such.)"), ""]
    checked = [d for d in priced if d.get("validation")]
    if checked:
        v0 = checked[0]["validation"]
        lines += [f"### The pricing's validation: block {v0['held_out_block']} replayed in full",
                  "",
                  (f"Block {v0['held_out_block']} on the sample's {_n(v0['sentences'])} "
                   f"({v0['tokens']} tokens), priced by "
                   f"block {v0['fitted_from']}'s fits and replayed at gate level in full; pJ per "
                   "token, fitted / replayed (error)."), ""]
        comps = keys  # every component, leakage and the deselected macros' clock included
        lines += markdown_table(
            ["design", *comps],
            [[d["design"], *(_err(d["validation"]["totals"][c]) for c in comps)]
             for d in checked]) + [""]
    lines += ["### Where each cost comes from", ""]
    lines += [f"- **{k}**: {v}" for k, v in gd["sources"].items()] + [""]
    return lines


def _n(n: int) -> str:
    return f"{n} sentence{'s' if n != 1 else ''}"


def _err(row: dict) -> str:
    e = row["error"]
    return (f"{row['calibrated']:.4g} / {row['measured']:.4g}"
            + ("" if e is None else f" ({100 * e:+.1f} %)"))


def plot(doc: dict, path: Path) -> None:
    """``network.png``: energy per sentence against quality (cosine to the float model), one
    point per design: our gates when priced, and the paper's model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.6, 4.0))
    for source, marker, label in (("gates", "o", f"our gates ({doc['pdk']})"),
                                  ("model", "s", "the paper's model (22 nm)")):
        pts = [(d["quality"]["qnn"]["cos_float"]["mean"],
                d["energy"][source]["per_sentence_pJ"]["total"] / 1e6, d["design"])
               for d in doc["designs"] if d["energy"][source] is not None]
        if not pts:
            continue
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, label=label)
        for x, y, name in pts:
            ax.annotate(name, (x, y), fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.set_xlabel("quality: cosine to the float model (evaluation split)")
    ax.set_ylabel("µJ per sentence, whole network")
    ax.set_title(f"{doc['model']}: energy against quality", fontsize=10)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
