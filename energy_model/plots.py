"""PNG plots of an energy report (matplotlib, Agg backend, deterministic bytes).

- :func:`plot_breakdown`: stacked Move / W-read / Compute per row (the paper's Appendix figure);
- :func:`plot_sensitivity`: energy relative to the dense QNN against the event price, crossovers
  marked (the paper's sensitivity figure);
- :func:`plot_spike_times`: spike-time distribution of each position with the silent sets;
- :func:`plot_minilm`: the figures of a MiniLM statistics report (event times per position,
  p(q=0) per block, spike rates per encoding).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)
from matplotlib.ticker import MaxNLocator  # noqa: E402

from energy_model.histogram import Histogram  # noqa: E402
from energy_model.model import COMPONENT_LABELS, COMPONENTS, EnergyReport  # noqa: E402
from energy_model.quantity import format_sig  # noqa: E402
from energy_model.sensitivity import Sweep  # noqa: E402
from golden_models.codespace import CodeSpace  # noqa: E402
from golden_models.positions import LABEL_OF_KEY, POSITION_KEYS  # noqa: E402

#: PNG metadata without version or date, so the same figure gives the same bytes.
_METADATA = {"Software": None}
_COLORS = {"move": "#4C72B0", "wread": "#DD8452", "kvwrite": "#C44E52", "compute": "#55A868"}


def _wrap(text: str, width: int) -> str:
    import textwrap

    return "\n".join(textwrap.wrap(text, width))


def _save(fig, path: str | Path, dpi: int = 120) -> Path:
    path = Path(path)
    fig.savefig(path, dpi=dpi, metadata=_METADATA)
    plt.close(fig)
    return path


def costs_label(report: EnergyReport) -> str:
    """Where the report's unit costs come from, in a few words: the paper's, or ours with the
    components priced with the paper's (borrowed) costs named."""
    borrowed = report.borrowed()
    if all(c.borrowed for c in report.unit_costs.values()):
        return "the paper's unit costs (22 nm)"
    if not borrowed:
        return "our synthesized unit costs"
    return ("our synthesized unit costs, "
            + " and ".join(COMPONENT_LABELS[c] for c in COMPONENTS if c in borrowed)
            + " at the paper's (borrowed)")


def rates_label(report: EnergyReport) -> str:
    """The rates, T and the radii of the report's M-TTFS rows."""
    ks = ", ".join(str(k) for k in report.rates.mttfs)
    return f"rates: {report.rates.source}, T={report.rates.T}, M-TTFS k={ks}"


def plot_breakdown(report: EnergyReport, path: str | Path) -> Path:
    """Horizontal stacked bars, one per row, in mJ per block, annotated with total and the
    energy relative to the dense QNN; the title says which rates, unit costs, T and k."""
    rows = list(report.rows)
    names = [r.name for r in rows]
    fig, ax = plt.subplots(figsize=(9, 0.45 * len(rows) + 1.6))
    left = [0.0] * len(rows)
    for comp in COMPONENTS:
        values = [getattr(r.energy, comp).mJ for r in rows]
        ax.barh(names, values, left=left, color=_COLORS[comp], label=COMPONENT_LABELS[comp])
        left = [a + b for a, b in zip(left, values, strict=True)]
    top = max(left)
    for i, r in enumerate(rows):
        ax.text(
            left[i] + top * 0.01,
            i,
            f"{format_sig(r.energy.total.mJ)} mJ ({r.rel:.2f}x dense)",
            va="center",
            fontsize=8,
        )
    dense = next(r for r in rows if r.spec.encoding == "dense")
    ax.axvline(dense.energy.total.mJ, color="k", lw=0.8, ls="--")
    ax.set_xlim(0, top * 1.35)
    ax.invert_yaxis()
    ax.set_xlabel("Energy per encoder block (mJ)")
    ev = report.unit_costs["E_move_event"].quantity.pJ
    ax.set_title(
        _wrap(f"Energy per encoder block, {report.model.name} (B={report.model.batch}, "
              f"S={report.model.seq}, W{report.model.weight_bits}); {rates_label(report)}; "
              f"{costs_label(report)}; event {format_sig(ev, 3)} pJ per hop; dashed: dense QNN",
              90),
        fontsize=10,
    )
    ax.legend(loc="lower right", fontsize=9)
    ax.tick_params(axis="y", labelsize=9)
    fig.tight_layout()
    return _save(fig, path)


def plot_sensitivity(sweep: Sweep, path: str | Path, rows: Sequence[str] | None = None,
                     title: str = "") -> Path:
    """Energy relative to the dense QNN against the event price, crossovers marked; the legend
    gives each row's energy relative to dense at both ends of the range (the axis's
    convention, not its reciprocal). ``title`` says which rates and costs.

    ``rows`` defaults to Matterhorn's own rows (TTFS, M-TTFS, bit-serial); the rate-coded
    baselines are far off the scale of the figure.
    """
    if rows is None:
        rows = [
            r
            for r in sweep.coefficients
            if r != sweep.dense and (r.startswith("Matterhorn") or r.startswith("Bit-serial"))
        ]
    xs = sweep.event_costs_pJ
    lo, hi = min(xs), max(xs)
    fig, ax = plt.subplots(figsize=(8, 5))
    ax.axhline(1.0, color="k", lw=1.0, label=f"{sweep.dense} (1.0)")
    cmap = plt.get_cmap("tab10")
    for i, row in enumerate(rows):
        style = "--" if row.startswith("Bit-serial") else "-"
        label = f"{row}: {sweep.rel(row, lo):.2f}x .. {sweep.rel(row, hi):.2f}x"
        x = sweep.crossover_pJ(row)
        crosses = x is not None and lo <= x <= hi
        if crosses:
            label += f", crossover {x:.3f} pJ"
        ax.plot(xs, [sweep.rel(row, x) for x in xs], style, color=cmap(i % 10), label=label)
        if crosses:
            ax.plot([x], [1.0], "o", color=cmap(i % 10), ms=6, zorder=5)
            ax.axvline(x, color=cmap(i % 10), lw=0.6, ls=":")
    ax.set_xlim(lo, hi)
    ax.set_ylim(bottom=0)
    ax.set_xlabel("Sparse-event movement cost E_move_event (pJ per event per hop)")
    ax.set_ylabel("Energy relative to dense QNN")
    ax.set_title(
        _wrap((f"{title}. " if title else "")
              + f"Energy relative to the dense QNN against the event cost; legend: at {lo:g} "
              f".. {hi:g} pJ, dots: crossovers", 95),
        fontsize=10,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    return _save(fig, path)


def plot_spike_times(
    histograms: Mapping[str, Histogram], path: str | Path, ks: Sequence[int] = (0, 1),
    source: str = "",
) -> Path:
    """Spike-time distribution ``p(tau)`` per position, ``tau = c - q``, silent sets shaded.

    The standard-TTFS silent step is ``T-1``; M-TTFS silences ``Omega_k`` around ``I_max``
    (the time of code 0, the paper's global rule).
    """
    names = list(histograms)
    cols = min(4, len(names))
    nrows = (len(names) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(3.2 * cols, 2.6 * nrows), squeeze=False)
    # widest dead zone drawn first and lightest, so every narrower one stays visible
    shades = (
        ["#fde0cc", "#f9b48a", "#e8743b"][-len(ks) :] if len(ks) <= 3 else ["#fde0cc"] * len(ks)
    )
    for ax, name in zip(axes.flat, names, strict=False):
        hist = histograms[name]
        space = hist.space
        T = space.T
        probs = [hist.probability(space.c - t) for t in range(T)]
        i_max = space.c  # time of code 0
        for j, k in enumerate(sorted(ks, reverse=True)):
            ax.axvspan(
                max(i_max - k, 0) - 0.5,
                min(i_max + k, T - 1) + 0.5,
                color=shades[min(j, 2)],
                label=f"silent, k={k}",
            )
        ax.bar(range(T), probs, color="#4C72B0", width=0.8)
        ax.axvline(T - 1, color="k", ls=":", lw=1.0, label="TTFS silent")
        ax.set_title(f"{name} ({space.family})", fontsize=9)
        ax.set_xlim(-0.6, T - 0.4)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.tick_params(labelsize=7)
        ax.set_xlabel("spike time t", fontsize=8)
    for ax in list(axes.flat)[len(names) :]:
        ax.axis("off")
    axes.flat[0].set_ylabel("fraction of values", fontsize=8)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=len(labels), fontsize=8)
    T = next(iter(histograms.values())).space.T if histograms else 0
    fig.suptitle(
        (f"Spike-time distributions of {source}, T={T} (t = c - q); " if source else
         f"Spike-time distributions, T={T} (t = c - q); ")
        + "shaded: M-TTFS silent sets around code 0 for k = "
        + ", ".join(str(k) for k in sorted(ks)) + "; dotted: standard TTFS silent step",
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.06, 1, 0.96))
    return _save(fig, path)


#: Resolution of the MiniLM statistics figures.
_MINILM_DPI = 110
#: Files :func:`plot_minilm` writes into a MiniLM report folder.
MINILM_FILES = ("positions.png", "block_modes.png", "rates.png")


def plot_minilm(doc: Mapping, folder: str | Path) -> list[Path]:
    """Draw the figures of a MiniLM statistics document (``matterhorn.minilm_stats/1``).

    The callback of ``networks.report.write_report``: writes
    :data:`MINILM_FILES` into ``folder`` and returns their paths.
    """
    folder = Path(folder)
    return [
        plot_minilm_positions(doc, folder / "positions.png"),
        plot_minilm_block_modes(doc, folder / "block_modes.png"),
        plot_minilm_rates(doc, folder / "rates.png"),
    ]


def plot_minilm_positions(doc: Mapping, path: str | Path) -> Path:
    """The paper's per-position figure: event-time histogram, silent step and mode, p(q=0)."""
    T = doc["T"]
    fig, axes = plt.subplots(2, 4, figsize=(14, 6), constrained_layout=True)
    for ax, p in zip(axes.flat, doc["positions"], strict=True):
        h = p["histogram_tau"]
        n = max(sum(h), 1)
        frac = [v / n for v in h]
        c = CodeSpace(T, p["family"]).c  # the silent step of code 0
        colors = ["tab:orange" if t == c else "tab:blue" for t in range(T)]
        bars = ax.bar(range(T), frac, color=colors, edgecolor="black", linewidth=0.4)
        bars[p["mode_tau"]].set_hatch("//")
        ax.set_title(f"{p['label']} ({p['family']})", fontsize=10)
        ax.text(
            0.02,
            0.95,
            f"p(q=0)={p['p_q0']:.3f}\nmode q={p['mode_q']}",
            transform=ax.transAxes,
            va="top",
            fontsize=8,
        )
        ax.set_xticks(range(0, T, 3))
        ax.set_xlabel("event time t = c - q", fontsize=8)
    fig.suptitle(
        f"{doc['model']} W4A4 post-training QNN, corpus {doc['corpus']['name']}: event times "
        f"per position (orange: silent step t=c, q=0; hatched: mode)",
        fontsize=10,
    )
    return _save(fig, path, dpi=_MINILM_DPI)


def plot_minilm_block_modes(doc: Mapping, path: str | Path) -> Path:
    """Heat map of p(q=0) per block and position, annotated with the block mode."""
    names = [LABEL_OF_KEY[p] for p in POSITION_KEYS]
    data = [[b["positions"][p]["p_q0"] for b in doc["blocks"]] for p in POSITION_KEYS]
    fig, ax = plt.subplots(figsize=(8, 4.5), constrained_layout=True)
    im = ax.imshow(data, cmap="viridis", vmin=0, vmax=1, aspect="auto")
    for i, p in enumerate(POSITION_KEYS):
        for j, b in enumerate(doc["blocks"]):
            m = b["positions"][p]["mode_q"]
            ax.text(
                j,
                i,
                f"{m}",
                ha="center",
                va="center",
                color="white" if data[i][j] < 0.5 else "black",
                fontsize=9,
            )
    ax.set_yticks(range(len(names)), names, fontsize=8)
    ax.set_xticks(range(len(doc["blocks"])))
    ax.set_xlabel("block")
    ax.set_title("p(q=0) per block and position (colour), block mode q (text)", fontsize=10)
    fig.colorbar(im, ax=ax)
    return _save(fig, path, dpi=_MINILM_DPI)


def plot_minilm_rates(doc: Mapping, path: str | Path) -> Path:
    """Spike rate per step of each position for TTFS and M-TTFS k=0..k_max."""
    encs = ["TTFS"] + [f"k={k}" for k in range(doc["k_max"] + 1)]
    fig, ax = plt.subplots(figsize=(11, 4.5), constrained_layout=True)
    width = 0.8 / len(encs)
    for e_i, enc in enumerate(encs):
        vals = [100 * p["rates"][enc] for p in doc["positions"]]
        xs = [i + (e_i - len(encs) / 2 + 0.5) * width for i in range(len(vals))]
        ax.bar(xs, vals, width, label=enc if enc == "TTFS" else f"M-TTFS {enc}")
    ax.set_xticks(
        range(len(POSITION_KEYS)), [LABEL_OF_KEY[p] for p in POSITION_KEYS], rotation=20, fontsize=8
    )
    ax.set_ylabel("spike rate per step (%)")
    net = doc["rates"]
    ax.set_title("network: " + ", ".join(f"{e} {100 * net[e]:.2f}%" for e in encs), fontsize=9)
    ax.legend(fontsize=8)
    return _save(fig, path, dpi=_MINILM_DPI)


def plot_finetune(doc: Mapping, path: str | Path) -> Path:
    """Quality against spike rate, before and after fine-tuning, one point per radius k.

    The paper's figure "Energy-Accuracy Trade-off", measured: x is the network spike rate per
    step, y the mean cosine to the float model (left) and the top-1 retrieval agreement
    (right) on the evaluation split (``finetune.json``, ``matterhorn.finetune/1``).
    """
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), constrained_layout=True)
    for ax, (metric, label) in zip(
        axes,
        (
            (lambda q: q["cos_float"]["mean"], "mean cosine to float"),
            (lambda q: q["retrieval_agreement"], "top-1 retrieval agreement"),
        ),
        strict=True,
    ):
        for when, style in (("before", "o--"), ("after", "s-")):
            xs = [100 * r[when]["rates"]["network"] for r in doc["runs"]]
            ys = [metric(r[when]) for r in doc["runs"]]
            name = "post-training conversion" if when == "before" else "fine-tuned"
            ax.plot(xs, ys, style, label=name)
            for r, x, y in zip(doc["runs"], xs, ys, strict=True):
                ax.annotate(
                    f"k={r['k']}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8
                )
        ax.set_xlabel("network spike rate per step (%)")
        ax.set_ylabel(label)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(
        f"{doc['model']} W{doc['weight_bits']}A{doc['act_bits']} M-TTFS: quality against spike "
        f"rate, corpus {doc['corpus']['name']} ({doc['corpus']['evaluation_sentences']} "
        "evaluation sentences)",
        fontsize=10,
    )
    return _save(fig, path, dpi=_MINILM_DPI)
