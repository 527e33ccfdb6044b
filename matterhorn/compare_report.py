"""The report of ``matterhorn compare``: the verdict sentence, ``compare.md`` and ``compare.png``.

Everything here reads a finished ``compare.json`` document (docs/compare.md, schema
``matterhorn.compare/2``) and writes nothing but the files it is asked for.
"""

from __future__ import annotations

from pathlib import Path

#: The paper's M-TTFS k=1 energy relative to its dense INT4 QNN, quoted beside our verdict.
PAPER_REL_K1 = 0.67


def verdict(wl: dict, k: int) -> str:
    """One sentence: M-TTFS at ``k`` against dense on workload ``wl``, gates, model, paper."""
    d = {x["design"]: x for x in wl["designs"]}[f"mttfs-k{k}"]
    r = d["rel_dense"]
    return (f"in our gates, M-TTFS k={k} costs {r['gates']:.3g}x the dense INT4 design "
            f"({r['gates_gated']:.3g}x with idle blocks clock-gated); the model predicts "
            f"{r['model']:.3g}x; the paper reports {PAPER_REL_K1}x")


#: Column order of the verdict: every design against dense.
VERDICT_DESIGNS = ("ttfs", "mttfs-k0", "mttfs-k1", "mttfs-k2")
#: How the verdict names a design.
DESIGN_LABEL = {"dense": "dense INT4", "ttfs": "TTFS", "mttfs-k0": "M-TTFS k=0",
                "mttfs-k1": "M-TTFS k=1", "mttfs-k2": "M-TTFS k=2"}


def _rel(wl: dict) -> dict[str, dict]:
    return {d["design"]: d["rel_dense"] for d in wl["designs"]}


def _ratio_error(r: dict) -> float:
    """The model's ratio against the gates' ratio (model / gates - 1): small where its errors
    on the two designs' energies cancel, so not the model's error (``error.total``)."""
    return r["model"] / r["gates"] - 1.0


def _shape(wl: dict) -> str:
    return f"{wl['n_in']} x {wl['n_out']}, {wl['weight_bits']}-bit weights"


def verdict_rows(doc: dict) -> list[dict]:
    """One row per library and workload: each design's energy relative to dense INT4 in our
    gates; at the verdict's radius, the model's ratio, its error on the design's energy
    (``model_energy_error``: model / gates - 1, as compare.md's per-component errors) and the
    difference of the two ratios (``model_ratio_error``)."""
    k = doc["parameters"]["k"]
    rows = []
    for e in doc["pdks"]:
        for wl in e["workloads"]:
            rel = _rel(wl)
            named = rel[f"mttfs-k{k}"]
            design = next(d for d in wl["designs"] if d["design"] == f"mttfs-k{k}")
            rows.append({"workload": wl["name"], "shape": _shape(wl),
                         "technology": e["technology"], "k": k,
                         "gates": {d: rel[d]["gates"] for d in VERDICT_DESIGNS if d in rel},
                         "model": named["model"],
                         "model_energy_error": design["error"]["total"],
                         "model_ratio_error": _ratio_error(named)})
    return rows


def verdict_table(rows: list[dict], k: int, details: str = "") -> list[str]:
    """The verdict (Markdown lines) of :func:`verdict_rows`: energy per window relative to
    dense INT4 in our gates, per workload and library; the model's ratio beside it with its
    error on the energy; what each figure is; ``details`` names the full report."""
    head = ["workload", "library", *(DESIGN_LABEL[d] for d in VERDICT_DESIGNS),
            f"model, k={k} (its energy's error)"]
    out = ["| " + " | ".join(head) + " |", "| --- | --- |" + " ---: |" * (len(head) - 2)]
    for r in rows:
        cells = [(f"**{r['gates'][d]:.3g}x**" if d == f"mttfs-k{k}" else f"{r['gates'][d]:.3g}x")
                 if d in r["gates"] else "n/a" for d in VERDICT_DESIGNS]
        out.append(f"| {r['workload']} ({r['shape']}) | {r['technology']} | " + " | ".join(cells)
                   + f" | {r['model']:.3g}x ({r['model_energy_error']:+.0%}) |")
    ratio = ", ".join(f"{r['model_ratio_error']:+.0%} ({r['workload']}, {r['technology']})"
                      for r in rows)
    out += ["", ("Energy per window (one token through one layer) relative to the dense INT4 "
                 "design generated from the same parameters, from the toggles of both mapped "
                 "netlists: below 1 the spiking design is cheaper. The model is the paper's "
                 "analytical model on the same counts, priced with unit costs synthesized on the "
                 f"same library; in brackets, its error on M-TTFS k={k}'s energy (model / gates "
                 "- 1, per component in the report). Its errors on the two designs' energies "
                 f"partly cancel in its ratio, which differs from ours by {ratio}. The paper "
                 f"reports {PAPER_REL_K1}x for M-TTFS k=1 (22 nm, its own unit costs)."
                 + (f" Details: {details}." if details else ""))]
    return out


def verdict_markdown(doc: dict) -> list[str]:
    """The verdict block of ``compare.md`` (:func:`verdict_table`)."""
    return verdict_table(verdict_rows(doc), doc["parameters"]["k"])


def verdict_lines(doc: dict) -> list[str]:
    """The verdict as console lines (no Markdown)."""
    k = doc["parameters"]["k"]
    out = [(f"M-TTFS k={k} against dense INT4, energy per window in our gates "
            "(relative to dense; below 1 is cheaper):")]
    rows = verdict_rows(doc)
    width = max((len(f"{r['workload']} ({r['shape']}), {r['technology']}") for r in rows),
                default=0)
    for r in rows:
        where = f"{r['workload']} ({r['shape']}), {r['technology']}"
        others = ", ".join(f"{DESIGN_LABEL[d]} {v:.3g}x" for d, v in r["gates"].items()
                           if d != f"mttfs-k{k}")
        out.append(f"  {where:<{width}}  {r['gates'][f'mttfs-k{k}']:.3g}x  ({others}); model "
                   f"{r['model']:.3g}x (its energy {r['model_energy_error']:+.0%})")
    for m in doc.get("missing", []):
        out.append(f"  not run: {m}")
    out.append(f"  the paper reports {PAPER_REL_K1}x for M-TTFS k=1")
    return out


def markdown(doc: dict) -> str:
    """``compare.md``: per library and workload, the verdict, the table and the model error."""
    p = doc["parameters"]
    lines = [f"# M-TTFS against a dense INT4 design, in gates (T={p['T']})", ""]
    lines += verdict_markdown(doc) + [""]
    lines += [("Energy per window (one token through one layer) in pJ, from the liberty-mapped "
               "netlists simulated on the workload; `model` is the analytical model on the "
               "same counts with unit costs synthesized on the same library. `SRAM desel.` is "
               "the memories' clock on the cycles they are not read; `leakage` the cells' and "
               "the memories'. Where each library's SRAM figures come from is said below it "
               "(our macros, or a cited per-bit figure that is not our gates)."), ""]
    for entry in doc["pdks"]:
        lines += [f"## {entry['technology']} (`{entry['liberty']}`)", ""]
        for wl in entry["workloads"]:
            lines += [f"### {wl['name']}: {wl['source']}", "",
                      "**Verdict:** " + verdict(wl, p["k"]) + ".", "",
                      ("| design | flits | cycles | SRAM | SRAM desel. | compute | movement | "
                       "idle | leakage | total | gated | Rel. gates | Rel. gated | model total | "
                       "Rel. model | model err |"),
                      ("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
                       "---: | ---: | ---: | ---: | ---: | ---: |")]
            for d in wl["designs"]:
                g, m, r = d["energy_pJ"]["gates"], d["energy_pJ"]["model"], d["rel_dense"]
                err = d["error"]["total"]
                lines.append(
                    f"| {d['design']} | {d['flits']:.4g} | {d['cycles']:.4g} | {g['sram']:.4g} "
                    f"| {g['sram_deselected']:.4g} | {g['compute']:.4g} | {g['movement']:.4g} "
                    f"| {g['idle']:.4g} | {g['leakage']:.4g} | "
                    f"{g['total']:.4g} | {g['total_gated']:.4g} | {r['gates']:.3g} | "
                    f"{r['gates_gated']:.3g} | {m['total']:.4g} | {r['model']:.3g} | "
                    f"{'-' if err is None else f'{err:+.0%}'} |")
            lines += ["", "Model error per component (model / gates - 1): "
                      + "; ".join(f"{d['design']} " + ", ".join(
                          f"{c} {'-' if d['error'][c] is None else format(d['error'][c], '+.0%')}"
                          for c in ("sram", "compute", "movement")) for d in wl["designs"]),
                      ""]
        lines += ["Unit costs of the model (synthesized on this library, "
                  f"{entry['technology']}, unscaled): "
                  + ", ".join(f"{k} {v:g}" for k, v in entry["unit_costs_pJ"].items()
                              if not k.startswith(("E_weight", "E_move_dense", "E_move_event")))
                  + f", E_move_event_router {entry['unit_costs_pJ']['E_move_event_router']:g}.",
                  "", f"SRAM: {entry['sram_source']}.", ""]
    for m in doc["missing"]:
        lines += [f"Not run: {m}.", ""]
    lines += ["Method: docs/compare.md."]
    return "\n".join(lines) + "\n"


def plot(doc: dict, path: Path) -> None:
    """``compare.png``: stacked gate-level bars per design, the model total as a black tick,
    each design's energy relative to dense INT4 written above its bar; one panel per library
    and workload."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(e, w) for e in doc["pdks"] for w in e["workloads"]]
    fig, axes = plt.subplots(1, len(panels), figsize=(6.4 * len(panels), 5.2), squeeze=False)
    colors = {"sram": "#4c72b0", "sram_deselected": "#8fa8d4", "compute": "#dd8452",
              "movement": "#55a868", "idle": "#c7c7c7", "leakage": "#937860"}
    k = doc["parameters"]["k"]
    for ax, (e, w) in zip(axes[0], panels, strict=True):
        names = [DESIGN_LABEL.get(d["design"], d["design"]) for d in w["designs"]]
        xs = range(len(names))
        bottom = [0.0] * len(names)
        for comp, color in colors.items():
            vals = [d["energy_pJ"]["gates"][comp] for d in w["designs"]]
            ax.bar(xs, vals, bottom=bottom, color=color, label=comp, width=0.7)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        model = [d["energy_pJ"]["model"]["total"] for d in w["designs"]]
        ax.plot(xs, model, "k_", markersize=22, markeredgewidth=2, label="model total")
        top = max(max(bottom), max(model))
        for x, d, height in zip(xs, w["designs"], bottom, strict=True):
            bold = d["design"] in ("dense", f"mttfs-k{k}")
            ax.text(x, max(height, d["energy_pJ"]["model"]["total"]) + 0.02 * top,
                    f"{d['rel_dense']['gates']:.2f}x", ha="center", va="bottom", fontsize=10,
                    fontweight="bold" if bold else "normal")
        ax.set_ylim(0, top * 1.15)
        ax.set_xticks(list(xs), names, fontsize=10)
        ax.set_title(f"{w['name']} ({_shape(w)}), {e['technology']}", fontsize=11)
        ax.set_ylabel("energy per window (pJ), our gates", fontsize=10)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].legend(fontsize=9, loc="upper right")
    fig.suptitle(f"Energy per window in our gates, T={doc['parameters']['T']}\nlabels: energy "
                 f"relative to dense INT4 (the paper: {PAPER_REL_K1}x at k=1)", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=120, metadata={"Software": None})
    plt.close(fig)


__all__ = ["DESIGN_LABEL", "PAPER_REL_K1", "markdown", "plot", "verdict", "verdict_lines",
           "verdict_markdown", "verdict_rows"]
