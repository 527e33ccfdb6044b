"""``matterhorn block``'s report: the verdict, ``block.md`` and ``block.png`` of a ``block.json``
document (:func:`matterhorn.block.block_document`), as :mod:`matterhorn.compare_report` is
``compare``'s."""

from __future__ import annotations

from pathlib import Path

from golden_models.block_pieces import PIECE_NAMES

__all__ = ["CLOCKS_NS", "MODEL_COMPONENTS", "PAPER_RATIO", "by_bit", "by_clock", "markdown", "plot",
           "ratio", "sram_said", "verdict"]

#: The components of a design's energy in the paper's model (``energy_model``'s, joules in its
#: report: Move, W-read, KV-write, Compute), each with the component of our gates it is set
#: beside.
MODEL_COMPONENTS = {"move": "movement", "wread": "sram_read", "kvwrite": "sram_write",
                    "compute": "compute"}
#: The paper's per-block ratio of M-TTFS k = 1 to the dense QNN (BERT-base, its energy table:
#: 48.27 / 71.54 mJ).
PAPER_RATIO = 48.27 / 71.54


def ratio(doc: dict, design: str = "mttfs-k1", source: str = "model") -> float | None:
    """``design``'s total over the dense design's (``source``: ``model`` or ``gates``)."""
    by = {d["design"]: d["energy_pJ"][source] for d in doc["designs"]}
    if design not in by or "dense" not in by or by[design] is None or by["dense"] is None:
        return None
    return by[design]["total"] / by["dense"]["total"]


#: The clock periods (ns) the verdict is shown at beside the pricing's (:func:`by_clock`).
CLOCKS_NS = (2.0, 5.0, 10.0, 20.0, 50.0, 100.0)


def by_clock(doc: dict, clocks_ns=CLOCKS_NS, design: str = "mttfs-k1") -> list[dict]:
    """``design``'s total over the dense design's in our gates at each clock period of
    ``clocks_ns``, free-running and clock-gated: every component as priced but ``leakage``,
    which grows with the period (the cells' and the macros' leakage power times the same
    clocks); the rest does not depend on it (the replays' toggles and the macros' access
    energies are per clock). ``[]`` without gates, a dense design or ``design``."""
    by = {d["design"]: d["energy_pJ"]["gates"] for d in doc["designs"]}
    if not doc.get("gates") or by.get("dense") is None or by.get(design) is None:
        return []
    at = doc["gates"]["clock_ns"]

    def total(e: dict, key: str, ns: float) -> float:
        leak = e.get("leakage", 0.0)
        return e[key] - leak + leak * ns / at

    return [{"clock_ns": ns,
             **{k: total(by[design], k, ns) / total(by["dense"], k, ns)
                for k in ("total", "gated_total")},
             "leakage_share_dense": by["dense"].get("leakage", 0.0) * ns / at
             / total(by["dense"], "total", ns)}
            for ns in clocks_ns]


#: How the verdict names the pieces' simulator.
_RTL_SIM = {"amaranth": "Amaranth simulator", "icarus": "Icarus, fast harness",
            "verilator": "Verilator, fast harness"}


def verdict(doc: dict) -> list[str]:
    """The answer, first: the checks, then the ratio in our gates (when measured) and in the
    paper's model, against the paper's."""
    bad = sum(d["mismatches"] for d in doc["designs"])
    checked = sum(d["checked"] for d in doc["designs"])
    names = ", ".join(d["design"] for d in doc["designs"])
    n = doc["sentences"]
    lines = [f"{doc['model']} block {doc['block']}, {n} sentence{'s' if n > 1 else ''} "
             f"({doc['tokens']} tokens, {_RTL_SIM[doc.get('rtl_sim', 'amaranth')]}): "
             + (f"0 mismatches in {checked} values checked ({names})" if bad == 0 else
                f"FAIL: {bad} mismatches in {checked} values checked ({names})")]
    g = ratio(doc, source="gates")
    if g is not None:
        by = {d["design"]: d["energy_pJ"]["gates"] for d in doc["designs"]}
        gated = by["mttfs-k1"]["gated_total"] / by["dense"]["gated_total"]
        logic = _logic(by["mttfs-k1"]) / _logic(by["dense"])
        m = doc["gates"].get("method", {}).get("mttfs-k1", {})
        how = (f", {m['sample_sentences']} sentence{'s' if m['sample_sentences'] > 1 else ''} "
               "replayed, the rest by their fits" if m.get("calibrated") else "")
        sram = ("our FreePDK45 macros" if doc["gates"].get("sram_macros") else
                "the PDK table's per-bit figure and not our gates")
        lines.append(f"In our gates ({doc['gates']['library']}, {doc['gates']['clock_ns']:g} ns "
                     f"clock{how}), an M-TTFS k=1 block costs {g:.3f}x the dense INT4 block "
                     f"(clock-gated {gated:.3f}x; without the SRAM accesses, which are "
                     f"{sram}, {logic:.3f}x).")
        bit = by_bit(doc)
        if bit is not None:
            lines.append(f"With the memories priced by the bit instead ({bit['bit_pJ']:.4g} pJ a "
                         "bit, the PDK table's figure, no deselected clock or macro leakage: "
                         f"the accounting before the macros) it would read {bit['total']:.3f}x "
                         f"(clock-gated {bit['gated_total']:.3f}x).")
    r = ratio(doc)
    if r is not None:
        lines.append(f"In the paper's model (its 22 nm unit costs) at the rates measured here, "
                     f"an M-TTFS k=1 block costs {r:.3f}x the dense INT4 block (the paper: "
                     f"{PAPER_RATIO:.3f}x)" + ("." if g is not None else
                                              "; in our gates: not measured (--gates)."))
    return lines


def by_bit(doc: dict, design: str = "mttfs-k1") -> dict | None:
    """``design`` over dense in our gates with the memories priced by the bit
    (``gates_sram_by_bit``, :meth:`synth_scripts.block_gates.BlockGates.per_bit_totals`):
    ``{"total", "gated_total", "bit_pJ"}``; None unless both were priced at the macros."""
    by = {d["design"]: d["energy_pJ"].get("gates_sram_by_bit") for d in doc["designs"]}
    if by.get("dense") is None or by.get(design) is None:
        return None
    return {k: by[design][k] / by["dense"][k] for k in ("total", "gated_total")} | {
        "bit_pJ": doc["gates"]["sram_pJ_per_bit"]}


def _logic(e: dict) -> float:
    """A design's energy less its memories' accesses and deselected clock (their leakage
    stays: the cells' and the macros' are one component)."""
    return e["total"] - e["sram_read"] - e["sram_write"] - e.get("sram_deselected", 0.0)


def sram_said(gd: dict) -> str:
    """What the SRAM components of a ``gates`` section (``block.json``, ``network.json``) are
    priced with, in a sentence."""
    if gd.get("sram_macros"):
        return ("The SRAM columns are each memory's accesses and deselected cycles at "
                + gd["sources"]["sram_read"].split(":")[0]
                + "'s measured energies (docs/sram_macros.md); leakage is the cells' and the "
                "macros'.")
    return (f"The SRAM columns are bits x {gd['sram_pJ_per_bit']:.4g} pJ per bit, the PDK "
            "table's figure, not our gates (no macro table in this liberty's process); "
            "leakage is the cells' only.")


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
    if doc.get("gates"):
        lines += _gates_markdown(doc)
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
         for piece in PIECE_NAMES]) + [""]
    return "\n".join(lines)


def _gates_markdown(doc: dict) -> list[str]:
    """block.md's sections on our gates: per block by component, per piece per token, and the
    paper's model beside them."""
    from synth_scripts.block_gates import COMPONENTS, TOTALS
    from toolkit_base.tables import markdown_table

    gd, w = doc["gates"], doc["workload"]
    priced = [d for d in doc["designs"] if d["energy_pJ"]["gates"] is not None]
    dense = next((d for d in priced if d["design"] == "dense"), None)
    lines = [f"## Energy per block in our gates (µJ), B = {w['batch']}, S = {w['seq']}", "",
             (f"{gd['library']} ({gd['liberty']}), {gd['clock_ns']:g} ns clock, gate-level "
             f"replays on {gd['simulator']}; pJ per token on the run's {doc['tokens']} tokens, "
             f"times {w['batch'] * w['seq']} tokens; at the library's node, not scaled. "
             f"{sram_said(gd)} Where each cost comes from: below."), ""]
    method = gd.get("method", {})
    sampled = {d: m for d, m in method.items() if m.get("calibrated")}
    if sampled:
        m = next(iter(sampled.values()))
        lines += [(f"Replayed at gate level on {m['sample_sentences']} of the "
                   f"{doc['sentences']} sentences ({m['sample_tokens']} tokens: "
                   f"{', '.join(sampled)}), each window of each tile and attention node priced "
                   "on its own; every window of every sentence priced by those windows' fit to "
                   "its counters (the golden QNN's, equal to the RTL's); SRAM bits, flits and "
                   "hops counted; the add+LayerNorm units per row "
                   "(synth_scripts.block_calibration, docs/block_gates.md)."), ""]
    rows = []
    for d in priced:
        e = d["energy_pJ"]["gates"]
        rel = (f"{e['total'] / dense['energy_pJ']['gates']['total']:.3f}"
               if dense is not None else "")
        gated = (f"{e['gated_total'] / dense['energy_pJ']['gates']['gated_total']:.3f}"
                 if dense is not None else "")
        rows.append([d["design"], *(f"{e[c] / 1e6:.4g}" for c in TOTALS), rel, gated])
    lines += markdown_table(["design", *TOTALS, "vs dense", "gated vs dense"], rows) + [""]
    bit = [(d["design"], d["energy_pJ"]["gates_sram_by_bit"]) for d in priced
           if d["energy_pJ"].get("gates_sram_by_bit")]
    if bit:
        lines += ["### The memories by the bit, beside the macros", "",
                  (f"The same run with its memories priced as before the macros: the bits read "
                   f"and written at {gd['sram_pJ_per_bit']:.4g} pJ a bit (the PDK table's "
                   "figure, not our gates), no deselected clock, no macro leakage (the cells' "
                   "leakage stays); every other component as above. µJ per block."), ""]
        base = dict(bit).get("dense")
        lines += markdown_table(
            ["design", *TOTALS, "vs dense", "gated vs dense"],
            [[name, *(f"{e[c] / 1e6:.4g}" for c in TOTALS),
              "" if base is None else f"{e['total'] / base['total']:.3f}",
              "" if base is None else f"{e['gated_total'] / base['gated_total']:.3f}"]
             for name, e in bit]) + [""]
    rows = by_clock(doc)
    if rows:
        lines += ["### The verdict against the clock period", "",
                  ("M-TTFS k=1 over dense in our gates at other clock periods: leakage (the "
                   "cells' and the macros') scales with the period, every other component is "
                   f"per clock (as priced at {gd['clock_ns']:g} ns)."), ""]
        lines += markdown_table(
            ["clock ns", "vs dense", "gated vs dense", "leakage share of dense"],
            [[f"{r['clock_ns']:g}", f"{r['total']:.3f}", f"{r['gated_total']:.3f}",
              f"{100 * r['leakage_share_dense']:.1f} %"] for r in rows]) + [""]
    lines += ["### Per piece, pJ per token (free-running total / clock-gated total)", ""]
    lines += markdown_table(
        ["piece", *(d["design"] for d in priced)],
        [[p, *(f"{d['gates_per_token_pJ'][p]['total']:.0f} / "
               f"{d['gates_per_token_pJ'][p]['gated_total']:.0f}" for d in priced)]
         for p in PIECE_NAMES]) + [""]
    lines += ["### The paper's model beside our gates, per token", "",
              ("The model's rows (its formulas and unit costs at 22 nm) at the rates and "
              "dimensions of the run; our gates over the pieces the model prices (the tiles "
              "and the attention path), scaled to 22 nm / 0.8 V (divided by "
              f"{gd['scaling_divide_by']:.3g}); error = model / gates."), ""]
    ratios = gd["model_vs_gates"]
    comps = [c for c in (*COMPONENTS, "total", "gated_total")
             if c in next(iter(ratios.values()))]
    lines += markdown_table(
        ["design", *comps],
        [[d, *(f"{row[c]['model_pJ']:.3g} / {row[c]['gates_pJ']:.3g}" +
               (f" = {row[c]['ratio']:.2f}x" if row[c]["ratio"] is not None else "")
               for c in comps)] for d, row in ratios.items()]) + [""]
    lines += ["### Where each cost comes from", ""]
    lines += [f"- **{k}**: {v}" for k, v in gd["sources"].items()] + [""]
    return lines


def plot(doc: dict, path: Path) -> None:
    """``block.png``: one stacked bar per design, the model's components per block, and with
    gates beside it our gates' components."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [d["design"] for d in doc["designs"]]
    panels = [("model", MODEL_COMPONENTS,
               "µJ per block (the paper's model, its 22 nm unit costs, measured rates)")]
    if doc.get("gates"):
        from synth_scripts.block_gates import COMPONENTS

        panels.append(("gates", COMPONENTS,
                       f"µJ per block (our gates, {doc['gates']['library']})"))
    fig, axes = plt.subplots(1, len(panels), figsize=(len(panels) * (1.2 * len(names) + 2.5),
                                                      3.6), squeeze=False)
    for ax, (source, comps, label) in zip(axes[0], panels, strict=True):
        bottom = [0.0] * len(names)
        for comp in comps:
            vals = [(d["energy_pJ"][source] or {}).get(comp, 0.0) / 1e6 for d in doc["designs"]]
            # a component too thin to see still says its size in the legend
            ax.bar(names, vals, bottom=bottom, label=f"{comp} (up to {max(vals):.3g})")
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        ax.set_ylabel(label)
        ax.legend(fontsize=7)
        ax.tick_params(axis="x", labelsize=8)
    n = doc["sentences"]
    fig.suptitle(f"{doc['model']}: energy per block at B={doc['workload']['batch']}, "
                 f"S={doc['workload']['seq']}, from {doc['tokens']} tokens of {n} "
                 f"sentence{'s' if n > 1 else ''} measured", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, metadata={"Software": None})
    plt.close(fig)
