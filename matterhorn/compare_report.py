"""The report of ``matterhorn compare``: the verdict sentence, ``compare.md`` and ``compare.png``.

Everything here reads a finished ``compare.json`` document (docs/compare.md, schema
``matterhorn.compare/1``) and writes nothing but the files it is asked for.
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


def markdown(doc: dict) -> str:
    """``compare.md``: per library and workload, the verdict, the table and the model error."""
    p = doc["parameters"]
    lines = [f"# M-TTFS against a dense INT4 design, in gates (T={p['T']})", ""]
    lines += [("Energy per window (one token through one layer) in pJ, from the liberty-mapped "
               "netlists simulated on the workload; `model` is the analytical model on the "
               "same counts with unit costs synthesized on the same library. SRAM arrays are "
               "priced per bit from a cited figure, not from our gates (below)."), ""]
    for entry in doc["pdks"]:
        lines += [f"## {entry['technology']} (`{entry['liberty']}`)", ""]
        for wl in entry["workloads"]:
            lines += [f"### {wl['name']}: {wl['source']}", "",
                      "**Verdict:** " + verdict(wl, p["k"]) + ".", "",
                      ("| design | flits | cycles | SRAM | compute | movement | idle | total "
                       "| gated | Rel. gates | Rel. gated | model total | Rel. model | "
                       "model err |"),
                      ("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | "
                       "---: | ---: | ---: | ---: |")]
            for d in wl["designs"]:
                g, m, r = d["energy_pJ"]["gates"], d["energy_pJ"]["model"], d["rel_dense"]
                err = d["error"]["total"]
                lines.append(
                    f"| {d['design']} | {d['flits']:.4g} | {d['cycles']:.4g} | {g['sram']:.4g} "
                    f"| {g['compute']:.4g} | {g['movement']:.4g} | {g['idle']:.4g} | "
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
                  "", f"SRAM: {entry['sram_bit_source']}.", ""]
    for m in doc["missing"]:
        lines += [f"Not run: {m}.", ""]
    lines += ["Method: docs/compare.md."]
    return "\n".join(lines) + "\n"


def plot(doc: dict, path: Path) -> None:
    """``compare.png``: stacked gate-level bars per design, the model total as a black tick."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(e, w) for e in doc["pdks"] for w in e["workloads"]]
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
    colors = {"sram": "#4c72b0", "compute": "#dd8452", "movement": "#55a868", "idle": "#c7c7c7"}
    for ax, (e, w) in zip(axes[0], panels, strict=True):
        names = [d["design"] for d in w["designs"]]
        bottom = [0.0] * len(names)
        for comp, color in colors.items():
            vals = [d["energy_pJ"]["gates"][comp] for d in w["designs"]]
            ax.bar(names, vals, bottom=bottom, color=color, label=comp)
            bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
        model = [d["energy_pJ"]["model"]["total"] for d in w["designs"]]
        ax.plot(names, model, "k_", markersize=18, label="model total")
        ax.set_title(f"{w['name']}, {e['technology']}", fontsize=9)
        ax.set_ylabel("pJ per window")
        ax.tick_params(axis="x", labelrotation=45, labelsize=8)
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110, metadata={"Software": None})
    plt.close(fig)


__all__ = ["PAPER_REL_K1", "markdown", "plot", "verdict"]
