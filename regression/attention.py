"""The attention path's regression: golden sequences as fast-harness memories
(docs/rtl_attention.md, "Regression").

A case is a golden :class:`golden_models.attention.AttentionPath` and sequences of query, key
and value codes with their valid keys: random ones (:func:`random_case`) or the sentences of
MiniLM's calibration split at block 0 (:func:`minilm_case`, captured through the integer QNN,
whose own ``attn_prob`` and ``attn_out_in`` codes the golden path reproduces). The fast
harness (:mod:`regression.fast_rtl`) plays them: :func:`attention_vectors` for the whole path
(``mttfs_attention``: configuration, per sequence its start, key and value writes, then one
window per token), :func:`softmax_vectors` for the softmax node alone (``mttfs_attn_softmax``:
one window per row of raw scores). A case runs as one job of the regression
(:func:`regression.attention_run.run_attention`).

Self-checks (``corrupt``): ``"alter"`` / ``"drop"`` one expected output event;
``"key-drop"`` (a key write never sent: the sequence never completes and the harness
stalls), ``"key-alter"`` (one key code changed on its way), ``"key-stale"`` (a key row of the
previous sequence written instead of the current one's). Each run must fail.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Mapping
from dataclasses import dataclass

import torch

from regression.fast import FastVectors, corrupt_out, counter_word, pack_window_out, seq_word

__all__ = [
    "ATTENTION_CORRUPT",
    "AttentionCase",
    "MINILM_HEADS",
    "attention_figures",
    "attention_vectors",
    "design_params",
    "minilm_case",
    "minilm_sentences",
    "random_case",
    "run_figures",
    "softmax_vectors",
]

#: Self-checks of the attention bench, besides ``"alter"`` and ``"drop"``.
ATTENTION_CORRUPT = (None, "alter", "drop", "key-drop", "key-alter", "key-stale")
#: MiniLM's block geometry: heads, head dimension; its longest calibration sentence.
MINILM_HEADS = 12
MINILM_HEAD_DIM = 32


@dataclass(frozen=True)
class AttentionCase:
    """A golden path and its sequences ``(query, keys, values, valid)`` (codes
    ``[S, heads * d_k]``, valid keys ``[S]``); ``source`` names where they came from."""

    path: object
    sequences: tuple
    source: str


def random_case(cfg, *, k: int, seed: int, sequences: int = 3) -> AttentionCase:
    """Random sequences for the design ``cfg`` (:class:`rtl_gen.attn_params.AttentionConfig`):
    the longest, a half and a one-token one (then random lengths), a padded key or two, a
    path with random masks (radius ``k``) and scales."""
    from golden_models.attention import AttentionPath

    rng = random.Random(f"attention:{seed}")
    g = torch.Generator().manual_seed(seed)
    path = AttentionPath.random(cfg.head_dim, T=cfg.T, k=min(k, cfg.T - 1),
                                seq_len=cfg.seq_max, seed=seed, frac_bits=cfg.frac_bits,
                                row_max=cfg.row_max)
    sp = cfg.query_space
    width = cfg.heads * cfg.head_dim
    lengths = [cfg.seq_max, max(cfg.seq_max // 2, 1), 1]
    lengths += [rng.randint(1, cfg.seq_max) for _ in range(max(sequences - 3, 0))]
    out = []
    for S in lengths[:sequences]:
        q, key, v = (torch.randint(sp.q_min, sp.q_max + 1, (S, width), generator=g)
                     for _ in range(3))
        valid = torch.ones(S, dtype=torch.bool)
        for j in rng.sample(range(S), min(S - 1, rng.randint(0, 2))):
            valid[j] = False
        out.append((q, key, v, valid))
    return AttentionCase(path, tuple(out), f"random seed {seed}")


def minilm_sentences(count: int = 8, *, longest: int = 64) -> list[str]:
    """``count`` sentences of MiniLM's calibration split (``pydoc-topics``) of at most
    ``longest`` tokens, their lengths spread over the split's range (evenly spaced ranks of
    the sorted lengths)."""
    from networks.bert import load_minilm
    from networks.corpus import load_corpus, spread_by_length
    from toolkit_base.checks import check_int

    check_int("count", count, 1, 1 << 12)
    _, tok = load_minilm()
    return spread_by_length(load_corpus("pydoc-topics").calibration, tok, count,
                            longest=longest, what="calibration sentences", name="--sentences",
                            longest_name="--longest")


@functools.lru_cache(maxsize=4)
def minilm_case(sentences: int = 8, *, k: int = 1, calibration: int = 6,
                longest: int = 64) -> AttentionCase:
    """Block 0 of MiniLM in integer mode (converted post-training on the first
    ``calibration`` calibration sentences, masks at radius ``k``) and the attention of
    ``sentences`` calibration sentences (:func:`minilm_sentences`), captured through the QNN
    (:func:`networks.attention.capture_attention`, which checks the golden path against the
    QNN's own codes). Cached in the process (the conversion takes a minute or two)."""
    from networks.attention import attention_path, capture_attention
    from networks.bert import load_minilm
    from networks.corpus import load_corpus
    from networks.integer import integer_mode_
    from networks.ptq import convert, set_masks_

    texts = minilm_sentences(sentences, longest=longest)
    model, tok = load_minilm()
    qnn = convert(model, tok, load_corpus("pydoc-topics").calibration[:calibration])
    integer_mode_(qnn)
    set_masks_(qnn, k)
    seqs = capture_attention(qnn, tok, texts)
    path = attention_path(qnn.layers[0])
    return AttentionCase(path, tuple((s.query, s.keys, s.values, s.valid) for s in seqs),
                         f"MiniLM block 0, {sentences} calibration sentences, k={k}")


def _corrupt_writes(beats: list[dict], previous: list[dict] | None, mode: str | None,
                    cfg) -> list[dict]:
    """The key writes of a sequence with one self-check fault (module docstring)."""
    from rtl_gen.attn_params import ATTN_TARGETS, kv_write_layout
    from rtl_gen.layouts import pack, unpack

    keys = [i for i, b in enumerate(beats) if b["target"] == ATTN_TARGETS["key"]]
    if mode is None or not mode.startswith("key-") or not keys:
        return beats
    beats = [dict(b) for b in beats]
    first = keys[0]
    if mode == "key-drop":
        del beats[first]
    elif mode == "key-alter":
        layout = kv_write_layout(cfg)
        word = unpack(layout, beats[first]["data"])
        lo, hi = cfg.kv_space.q_min, cfg.kv_space.q_max
        word["codes"][0] = hi if word["codes"][0] != hi else lo
        beats[first]["data"] = pack(layout, word)
    elif mode == "key-stale" and previous is not None:
        old = next(b for b in previous if b["target"] == ATTN_TARGETS["key"]
                   and b["node"] == beats[first]["node"])
        slot = unpack(kv_write_layout(cfg), beats[first]["data"])["slot"]
        word = unpack(kv_write_layout(cfg), old["data"])
        word["slot"] = slot
        beats[first]["data"] = pack(kv_write_layout(cfg), word)
    return beats


def attention_vectors(cfg, case: AttentionCase, manifest_entry: Mapping,
                      corrupt: str | None = None) -> FastVectors:
    """The fast-harness memories of ``case`` on the design ``cfg`` (its manifest record
    ``manifest_entry`` gives the counter ports and their widths)."""
    from rtl_gen.attn_images import attention_reference, config_beats, kv_beats, sequence_beats
    from rtl_gen.attn_params import attn_load_layout
    from rtl_gen.layouts import event_layout, pack

    if corrupt not in ATTENTION_CORRUPT:
        raise ValueError(f"corrupt must be one of {ATTENTION_CORRUPT}, not {corrupt!r}")
    lload = attn_load_layout(cfg)
    lin = event_layout(cfg.global_dim_width, cfg.time_width, time="tau")
    lout = event_layout(cfg.global_dim_width, cfg.time_width)
    ports = tuple(c["port"] for c in manifest_entry["counters"])
    widths = {c["port"]: int(c["width"]) for c in manifest_entry["counters"]}
    seq = [seq_word(pack(lload, b), 0, barrier=j == 0)
           for j, b in enumerate(config_beats(cfg, case.path))]
    beats_load = len(seq)
    outs, cnt, totals = [], [], dict.fromkeys(ports, 0)
    events = events_out = beats_in = 0
    previous = None
    for q, k, v, valid in case.sequences:
        writes = kv_beats(cfg, k, v)
        load = sequence_beats(cfg, valid) + _corrupt_writes(writes, previous, corrupt, cfg)
        previous = writes
        seq += [seq_word(pack(lload, b), 0, barrier=j == 0) for j, b in enumerate(load)]
        beats_load += len(load)
        for win in attention_reference(cfg, case.path, q, k, v, valid):
            seq += [seq_word(pack(lin, b), 1, start=j == 0, barrier=j == 0)
                    for j, b in enumerate(win["query"])]
            outs.append([tuple(e) for e in win["out"]])
            values = [win["counters"][p] for p in ports]
            cnt.append(counter_word(values, ports, widths))
            for p, val in zip(ports, values, strict=True):
                totals[p] += int(val)
            c = win["counters"]
            prob = sum(c[n] for n in c if n.startswith("cnt_sm_events_out_h"))
            events += len(win["query"]) - 1 + prob + len(win["out"])
            events_out += len(win["out"])
            beats_in += len(win["query"])
    corrupt_out(outs, corrupt)
    out = [w for ev in outs for w in pack_window_out(lout, ev, corrupt)]
    return FastVectors(seq, out, cnt, ports, widths, events, events_out, len(outs), beats_in,
                       beats_load, totals)


def softmax_vectors(cfg, case: AttentionCase, manifest_entry: Mapping,
                    corrupt: str | None = None) -> FastVectors:
    """The fast-harness memories of the softmax node alone: the configuration, per sequence
    its start, then every row of raw scores of head 0 (in slot order, as the query x key tile
    sends them), the expected ``attn_prob`` events and counters of each."""
    from rtl_gen.attn_images import config_beats, sequence_beats
    from rtl_gen.attn_params import attn_load_layout, score_layout
    from rtl_gen.layouts import event_layout, pack

    if corrupt not in (None, "alter", "drop"):
        raise ValueError(f"corrupt must be one of (None, 'alter', 'drop'), not {corrupt!r}")
    lload, lin = attn_load_layout(cfg), score_layout(cfg)
    lout = event_layout(cfg.slot_width, cfg.time_width)
    ports = tuple(c["port"] for c in manifest_entry["counters"])
    widths = {c["port"]: int(c["width"]) for c in manifest_entry["counters"]}
    seq = [seq_word(pack(lload, b), 0, barrier=j == 0)
           for j, b in enumerate(config_beats(cfg, case.path))]
    beats_load = len(seq)
    outs, cnt, totals = [], [], dict.fromkeys(ports, 0)
    events = beats_in = 0
    d = cfg.head_dim
    for q, k, v, valid in case.sequences:
        load = sequence_beats(cfg, valid)
        seq += [seq_word(pack(lload, b), 0, barrier=True) for b in load]
        beats_load += len(load)
        for w in case.path.run_head(q[:, :d], k[:, :d], v[:, :d], valid):
            rows = [{"addr": j, "score": int(s)} for j, s in enumerate(w.scores.tolist())]
            beats = [*rows, {"last": 1}]
            seq += [seq_word(pack(lin, b), 1, start=j == 0, barrier=j == 0)
                    for j, b in enumerate(beats)]
            outs.append(list(zip(w.prob_index.tolist(), w.prob_time.tolist(), strict=True)))
            values = [w.softmax.as_dict()[p.removeprefix("cnt_")] for p in ports]
            cnt.append(counter_word(values, ports, widths))
            for p, val in zip(ports, values, strict=True):
                totals[p] += int(val)
            events += len(rows) + len(outs[-1])
            beats_in += len(beats)
    corrupt_out(outs, corrupt)
    out = [x for ev in outs for x in pack_window_out(lout, ev, corrupt)]
    return FastVectors(seq, out, cnt, ports, widths, events, sum(len(o) for o in outs),
                       len(outs), beats_in, beats_load, totals)


def attention_figures(case: AttentionCase, cfg) -> dict:
    """Per sequence: tokens, key and value writes; per position and head the events the
    golden path sends (query, ``attn_prob``, ``attn_out_in``) per token."""
    from rtl_gen.attn_images import attention_reference

    heads = cfg.heads
    per = {pos: [0] * heads for pos in ("query", "attn_prob", "attn_out_in")}
    tokens, writes = 0, []
    for q, k, v, valid in case.sequences:
        refs = attention_reference(cfg, case.path, q, k, v, valid)
        tokens += len(refs)
        c0 = refs[0]["counters"]
        writes.append({"tokens": len(refs),
                       "key_writes": sum(c0[f"cnt_qk_key_writes_h{h}"] for h in range(heads)),
                       "value_writes": sum(c0[f"cnt_pv_value_writes_h{h}"]
                                           for h in range(heads))})
        for r in refs:
            c = r["counters"]
            for h in range(heads):
                per["query"][h] += c[f"cnt_qk_events_in_h{h}"]
                per["attn_prob"][h] += c[f"cnt_sm_events_out_h{h}"]
                per["attn_out_in"][h] += c[f"cnt_pv_events_out_h{h}"]
    return {"tokens": tokens, "sequences": writes,
            "events_per_token": {pos: [round(n / max(tokens, 1), 3) for n in v]
                                 for pos, v in per.items()}}


def design_params(cfg) -> dict:
    """The :class:`rtl_gen.params.RTLConfig` arguments whose attention path
    (:meth:`rtl_gen.attn_params.AttentionConfig.from_rtl`) is the design ``cfg``."""
    from rtl_gen.attn_params import AttentionConfig
    from rtl_gen.params import RTLConfig

    params = {"T": cfg.T, "k": 0, "family": "sym", "weight_bits": 1, "n_in": cfg.head_dim,
              "tile_neurons": cfg.seq_max, "mesh_rows": cfg.heads, "mesh_cols": 1}
    if AttentionConfig.from_rtl(RTLConfig(**params)) != cfg:
        raise ValueError(f"the design {cfg} is not one the generator builds from an RTLConfig "
                         "(its kv_pack, row_max and frac_bits must be the defaults)")
    return params


def run_figures(cfg, case: AttentionCase, report: dict, repeat: int = 1) -> dict:
    """Figures of a run: tokens, cycles per token, tokens per second of simulation, and per
    position and head the events per token of the design (its counter totals) beside the
    golden model's (:func:`attention_figures`), and the write counts per sequence."""
    golden = attention_figures(case, cfg)
    tokens = golden["tokens"] * repeat
    totals = report.get("counter_totals_rtl", {})
    rtl = {pos: [round(totals.get(f"cnt_{part}_{name}_h{h}", 0) / max(tokens, 1), 3)
                 for h in range(cfg.heads)]
           for pos, part, name in (("query", "qk", "events_in"), ("attn_prob", "sm", "events_out"),
                                   ("attn_out_in", "pv", "events_out"))}
    cycles = int(report.get("cycles", 0))
    seconds = float(report.get("run_seconds", 0.0) or report.get("sim_seconds", 0.0))
    return {
        "tokens": tokens,
        "cycles": cycles,
        "cycles_per_token": round(cycles / max(tokens, 1), 1),
        "tokens_per_second": round(tokens / seconds, 1) if seconds else 0.0,
        "events_per_token": rtl,
        "golden_events_per_token": golden["events_per_token"],
        "sequences": golden["sequences"],
    }
