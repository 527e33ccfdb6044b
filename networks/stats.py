"""Spike statistics of a post-training-converted MiniLM on an evaluation split.

For each evaluation sentence (one at a time, so no padding enters a statistic) the pipeline runs

- the float encoder (float32) and the W4A4 QNN (no masks) for reference embeddings;
- the M-TTFS network for every radius ``k = 0 .. k_max``: the QNN with the dead zone of radius
  ``k`` around the calibrated ``I_max`` at every spike-encoded position of every block, the codes
  travelling as events. At each position it records the pre-mask event-time histogram and the
  number of transmitted events.

TTFS needs no run of its own: it is lossless, and its events are the codes other than the
lowest level (time ``T-1`` is its silent step), counted on the ``k = 0`` histograms.

Rates are per step, as in the paper: transmitted events / (elements * T).
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from golden_models.codespace import check_integer
from networks.bert import (
    POSITION_FAMILY,
    POSITION_LABELS,
    POSITIONS,
    BertEncoder,
    Tokenizer,
)
from networks.ptq import set_masks_
from toolkit_base import console

SCHEMA = "matterhorn.minilm_stats/1"


def check_k_max(k_max: object, T: int = 16) -> int:
    check_integer("k_max", k_max)
    if not 0 <= k_max < T:
        raise ValueError(f"k_max must be in 0..{T - 1}, not {k_max!r}")
    return k_max


def retrieval_agreement(emb: torch.Tensor, emb_ref: torch.Tensor) -> float:
    """Share of sentences whose nearest neighbour (cosine, itself excluded) is the same under
    ``emb`` as under ``emb_ref`` (rows L2-normalised; ties go to the lower index)."""
    if emb.shape[0] < 2:
        raise ValueError("retrieval agreement needs at least two sentences")

    def nearest(e: torch.Tensor) -> torch.Tensor:
        sim = e.to(torch.float64) @ e.to(torch.float64).T
        sim.fill_diagonal_(-torch.inf)
        return sim.argmax(1)

    return float((nearest(emb) == nearest(emb_ref)).to(torch.float64).mean())


@dataclass
class Tally:
    """Histograms and event counts of one radius, per (block, position)."""

    hist: dict[tuple[int, str], torch.Tensor] = field(default_factory=dict)
    events: dict[tuple[int, str], int] = field(default_factory=dict)

    def record(self, point, q: torch.Tensor, n_events: int) -> None:
        key = (point.block, point.name)
        tau = (point.space.c - q).reshape(-1)
        h = torch.bincount(tau, minlength=point.space.T)
        self.hist[key] = self.hist.get(key, 0) + h
        self.events[key] = self.events.get(key, 0) + n_events


@dataclass
class StatsRun:
    """Raw results of :func:`collect`: tallies per radius, embeddings, timing."""

    tallies: dict[int, Tally]
    emb_float: torch.Tensor
    emb_qnn: torch.Tensor
    emb_k: dict[int, torch.Tensor]
    tokens: int
    seconds: float


def collect(
    float_model: BertEncoder,
    qnn: BertEncoder,
    tokenizer: Tokenizer,
    sentences: Sequence[str],
    k_max: int = 4,
) -> StatsRun:
    """Run the evaluation sentences through the float model, the QNN and M-TTFS k=0..k_max.

    Raises
    ------
    RuntimeError
        If the ``k = 0`` network differs from the QNN in any bit (Proposition 2).
    """
    if not sentences:
        raise ValueError("statistics need at least one evaluation sentence")
    points = qnn.spike_points()
    if any(p.mask is None or p.alpha is None for p in points):
        raise ValueError("the QNN is not calibrated: convert it with networks.ptq")
    check_k_max(k_max, points[0].space.T)
    i_max = {id(p): p.mask.i_max for p in points}
    tallies = {k: Tally() for k in range(k_max + 1)}
    emb_f, emb_q, emb_k = [], [], {k: [] for k in tallies}
    tokens = 0
    start = time.perf_counter()
    try:
        with torch.no_grad(), console.steps("stats: sentences", len(sentences)) as bar:
            for s in sentences:
                ids, mask = tokenizer([s])
                tokens += int(ids.numel())
                emb_f.append(float_model.embed(ids, mask).to(torch.float64))
                set_masks_(qnn, None)
                for p in points:
                    p.recorder = None
                emb_q.append(qnn.embed(ids, mask))
                for p in points:  # set_masks_(None) dropped them: restore I_max
                    p.mask = _mask(p, i_max[id(p)], 0)
                for k, tally in tallies.items():
                    set_masks_(qnn, k)
                    for p in points:
                        p.recorder = tally.record
                    emb_k[k].append(qnn.embed(ids, mask))
                bar.advance()
    finally:
        for p in points:
            p.recorder = None
            p.mask = _mask(p, i_max[id(p)], 0)
    seconds = time.perf_counter() - start
    run = StatsRun(
        tallies,
        torch.cat(emb_f),
        torch.cat(emb_q),
        {k: torch.cat(v) for k, v in emb_k.items()},
        tokens,
        seconds,
    )
    # k = 0 is lossless M-TTFS: bit-exact to the QNN (paper, Proposition 2); checked even
    # under python -O
    if not torch.equal(run.emb_k[0], run.emb_qnn):
        raise RuntimeError("M-TTFS k=0 differs from the QNN: Proposition 2 is violated")
    return run


def _mask(point, i_max: int, k: int):
    from golden_models.mask import Mask

    return Mask(point.space, i_max, k)


def _r(x: float) -> float:
    return round(float(x), 6)


def _hist_summary(h: torch.Tensor, c: int) -> dict:
    n = int(h.sum())
    mode_t = int(torch.argmax(h))
    return {
        "histogram_tau": [int(v) for v in h],
        "elements": n,
        "mode_tau": mode_t,
        "mode_q": c - mode_t,
        "mode_is_zero": c - mode_t == 0,
        "p_q0": _r(int(h[c]) / n) if n else 0.0,
        "p_mode": _r(int(h[mode_t]) / n) if n else 0.0,
    }


def summarise(qnn: BertEncoder, run: StatsRun, meta: dict) -> dict:
    """The statistics document (schema in ``docs/minilm.md``) of one :func:`collect` run."""
    T = qnn.spike_points()[0].space.T
    n_blocks = len(qnn.layers)
    tallies = run.tallies
    t0 = tallies[0]

    def rates_of(keys: list[tuple[int, str]]) -> dict[str, float]:
        n = sum(int(t0.hist[key].sum()) for key in keys)
        ttfs = sum(
            n_ - int(t0.hist[key][T - 1])
            for key, n_ in ((key, int(t0.hist[key].sum())) for key in keys)
        )
        out = {"TTFS": _r(ttfs / (n * T))}
        for k, tally in tallies.items():
            out[f"k={k}"] = _r(sum(tally.events[key] for key in keys) / (n * T))
        return out

    blocks = []
    for b in range(n_blocks):
        entry = {"block": b, "positions": {}}
        for name in POSITIONS:
            point = qnn.layers[b].points[name]
            key = (b, name)
            d = _hist_summary(t0.hist[key], point.space.c)
            d.update(
                alpha=_r(point.alpha),
                i_max=point.mask.i_max,
                rates=rates_of([key]),
                histogram_tau_k={
                    f"k={k}": [int(v) for v in t.hist[key]] for k, t in tallies.items()
                },
            )
            entry["positions"][name] = d
        entry["rates"] = rates_of([(b, name) for name in POSITIONS])
        blocks.append(entry)

    positions = []
    for name in POSITIONS:
        keys = [(b, name) for b in range(n_blocks)]
        c = qnn.layers[0].points[name].space.c
        d = {"position": name, "label": POSITION_LABELS[name], "family": POSITION_FAMILY[name]}
        d.update(_hist_summary(sum(t0.hist[key] for key in keys), c))
        d["block_modes_q"] = [blocks[b]["positions"][name]["mode_q"] for b in range(n_blocks)]
        d["rates"] = rates_of(keys)
        positions.append(d)

    def cos(a: torch.Tensor, b: torch.Tensor) -> dict[str, float]:
        v = (a * b).sum(1) / (a.norm(dim=1) * b.norm(dim=1))
        return {"mean": _r(v.mean()), "min": _r(v.min())}

    def retrieval(e: torch.Tensor) -> float | None:
        return _r(retrieval_agreement(e, run.emb_float)) if e.shape[0] > 1 else None

    qnn_quality = {
        "cos_float": cos(run.emb_qnn, run.emb_float),
        "retrieval_agreement": retrieval(run.emb_qnn),
    }
    quality = {"qnn": qnn_quality}
    for k, e in run.emb_k.items():
        quality[f"k={k}"] = {
            "cos_float": cos(e, run.emb_float),
            "cos_qnn": cos(e, run.emb_qnn),
            "bit_exact_qnn": bool(torch.equal(e, run.emb_qnn)),
            "retrieval_agreement": retrieval(e),
        }
    all_keys = [(b, n) for b in range(n_blocks) for n in POSITIONS]
    return {
        "schema": SCHEMA,
        **meta,
        "T": T,
        "k_max": max(tallies),
        "sentences": int(run.emb_float.shape[0]),
        "tokens": run.tokens,
        "rates": rates_of(all_keys),
        "positions": positions,
        "blocks": blocks,
        "quality": quality,
        "block_modes_zero": sum(blocks[b]["positions"][n]["mode_is_zero"] for b, n in all_keys),
        "block_mode_cells": len(all_keys),
    }


def dumps(doc: dict) -> str:
    """Deterministic JSON text of a statistics document."""
    return json.dumps(doc, indent=1, sort_keys=False) + "\n"
