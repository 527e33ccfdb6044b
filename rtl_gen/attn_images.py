"""The beats that program and feed the attention path (docs/rtl_attention.md, "Load" and
"Windows"): a golden :class:`golden_models.attention.AttentionPath` and a sequence's codes as
``load`` and ``i`` payloads, packed with the layouts of :mod:`rtl_gen.attn_params`.

Every function checks its inputs against the generated configuration first and raises one
``ValueError`` (or ``TypeError``) naming the value: a sequence longer than ``seq_max``, a head
dimension or head count the design does not have, codes outside their width.
"""

from __future__ import annotations

import torch

from golden_models.attention import AttentionPath
from golden_models.mttfs import encode_events
from golden_models.tensor_checks import check_codes
from rtl_gen.attn_params import (
    ATTN_TARGETS,
    AttentionConfig,
    attn_config_layout,
    kv_write_layout,
    sequence_layout,
)
from rtl_gen.layouts import pack

__all__ = ["attention_reference", "check_path", "check_sequence", "config_beats",
           "dense_query_beats", "dense_reference", "kv_beats", "query_beats", "sequence_beats",
           "window_counters"]


def _beat(target: str, data: int, node: int = 0, addr: int = 0) -> dict[str, int]:
    return {"node": node, "target": ATTN_TARGETS[target], "addr": addr, "data": data}


def check_path(cfg: AttentionConfig, path: AttentionPath) -> AttentionPath:
    """``path`` if the generated design ``cfg`` can run it, else one ValueError naming what
    differs (head dimension, ``T`` of a position, the softmax's fraction bits, reciprocal or
    score width)."""
    if not isinstance(cfg, AttentionConfig):
        raise TypeError(f"cfg must be an AttentionConfig, not {cfg!r}")
    if not isinstance(path, AttentionPath):
        raise TypeError(f"path must be a golden_models.attention.AttentionPath, not {path!r}")
    if path.head_dim != cfg.head_dim:
        raise ValueError(f"head dimension {path.head_dim} does not match the design's "
                         f"head_dim={cfg.head_dim}")
    for name, space, want in (("query", path.query_mask.space, cfg.query_space),
                              ("key and value", path.kv_space, cfg.kv_space),
                              ("attn_prob", path.prob_mask.space, cfg.prob_space),
                              ("attn_out_in", path.ctx_mask.space, cfg.ctx_space)):
        if space != want:
            raise ValueError(f"the {name} codes are {space}, the design takes {want}")
    sm = path.softmax
    if sm.frac_bits != cfg.frac_bits:
        raise ValueError(f"softmax frac_bits {sm.frac_bits} does not match the design's "
                         f"frac_bits={cfg.frac_bits}")
    if sm.recip_bits != cfg.recip_bits:
        raise ValueError(f"softmax row_max {sm.row_max} (Pd={sm.recip_bits}) does not match "
                         f"the design's row_max={cfg.row_max} (Pd={cfg.recip_bits})")
    if path.score_bound > cfg.score_bound:
        raise ValueError(f"scores up to {path.score_bound} exceed the design's "
                         f"{cfg.score_bits}-bit scores")
    if not 0 <= sm.shift < 2**cfg.shift_bits:
        raise ValueError(f"softmax shift {sm.shift} does not fit {cfg.shift_bits} bits")
    return path


def config_beats(cfg: AttentionConfig, path: AttentionPath) -> list[dict[str, int]]:
    """The masks, the softmax multiplier and the two walk tables (every head's)."""
    check_path(cfg, path)
    word = pack(attn_config_layout(cfg), {
        "i_max_q": path.query_mask.i_max, "k_q": path.query_mask.k,
        "i_max_p": path.prob_mask.i_max, "k_p": path.prob_mask.k,
        "i_max_c": path.ctx_mask.i_max, "k_c": path.ctx_mask.k,
        "mult": path.softmax.mult, "shift": path.softmax.shift,
    }, name="config")
    beats = [_beat("config", word)]
    top = 2 ** cfg.prob_theta_width - 1
    for t, v in enumerate(path.prob_theta.tolist()):
        beats.append(_beat("prob_table", min(max(int(v), 0), top), addr=t))
    bound, width = cfg.ctx_acc_bound, cfg.ctx_theta_width
    for t, v in enumerate(path.ctx_theta.tolist()):
        clamped = min(max(int(v), -bound), bound + 1)  # changes no comparison
        beats.append(_beat("ctx_table", clamped & ((1 << width) - 1), addr=t))
    return beats


def check_sequence(cfg: AttentionConfig, path: AttentionPath, query, keys, values,
                   valid) -> int:
    """The length ``S`` of a sequence the design can run, else one ValueError/TypeError naming
    the value (``S > seq_max``, another head count, codes outside their width)."""
    check_path(cfg, path)
    for name, t in (("query", query), ("keys", keys), ("values", values)):
        if isinstance(t, torch.Tensor) and t.dim() == 2 and t.shape[0] > cfg.seq_max:
            raise ValueError(f"sequence length {t.shape[0]} exceeds the design's "
                             f"seq_max={cfg.seq_max} (generate it with a larger seq_max)")
        if isinstance(t, torch.Tensor) and t.dim() == 2 and \
                t.shape[1] != cfg.heads * cfg.head_dim:
            raise ValueError(f"{name} has {t.shape[1]} codes per token, the design "
                             f"{cfg.heads} heads x {cfg.head_dim} = "
                             f"{cfg.heads * cfg.head_dim}")
    S, heads = path.check_sequence(query, keys, values, valid)
    return S


def sequence_beats(cfg: AttentionConfig, valid: torch.Tensor) -> list[dict[str, int]]:
    """The beat that starts a sequence of ``len(valid)`` keys (every head's)."""
    bits = sum(1 << j for j, v in enumerate(valid.tolist()) if v)
    return [_beat("sequence", pack(sequence_layout(cfg), {"length": int(valid.numel()),
                                                          "valid": bits}, name="sequence"))]


def kv_beats(cfg: AttentionConfig, keys: torch.Tensor, values: torch.Tensor,
             order: str = "slot") -> list[dict[str, int]]:
    """Every key and value write of a sequence: per head, slot and group of ``kv_pack`` codes.

    ``order`` ``"slot"`` interleaves them token by token (key and value of slot 0 for every
    head, then slot 1, ...: the order the projections produce them); ``"kind"`` sends every key
    first, then every value.
    """
    if order not in ("slot", "kind"):
        raise ValueError(f"order must be 'slot' or 'kind', not {order!r}")
    check_codes(keys, cfg.kv_space, "keys")
    check_codes(values, cfg.kv_space, "values")
    layout, P, d = kv_write_layout(cfg), cfg.kv_pack, cfg.head_dim
    out: dict[str, list] = {"key": [], "value": []}
    for s in range(keys.shape[0]):
        for h in range(cfg.heads):
            for kind, codes in (("key", keys), ("value", values)):
                row = codes[s, h * d:(h + 1) * d].tolist()
                for g in range(cfg.kv_groups):
                    word = pack(layout, {"slot": s, "group": g,
                                         "codes": [int(c) for c in row[g * P:(g + 1) * P]]},
                                name=kind)
                    out[kind].append(_beat(kind, word, node=h, addr=s))
    if order == "kind":
        return out["key"] + out["value"]
    pairs = []
    per = cfg.heads * cfg.kv_groups
    for s in range(keys.shape[0]):
        for h in range(per):
            pairs.append(out["key"][s * per + h])
            pairs.append(out["value"][s * per + h])
    return pairs


def query_beats(cfg: AttentionConfig, path: AttentionPath,
                query_row: torch.Tensor) -> list[dict[str, int]]:
    """A token's query events (every head: address ``h * d_k + d``) in time order, then the
    marker: the window's ``i`` beats."""
    check_codes(query_row, path.query_mask.space, "query")
    idx, tm = encode_events(query_row.to(torch.int64), path.query_mask)
    beats = [{"addr": int(a), "tau": int(t), "last": 0}
             for a, t in zip(idx.tolist(), tm.tolist(), strict=True)]
    return [*beats, {"addr": 0, "tau": 0, "last": 1}]


def window_counters(cfg: AttentionConfig, row) -> dict[str, int]:
    """The counter ports of one window (``row``: the golden windows of every head of one
    token, :attr:`golden_models.attention.SequenceRun.windows`): each head's ``qk``, ``sm``
    and ``pv`` counters, and the flits and hops of the mesh (scores and events, a marker each
    way, one hop apiece)."""
    out, flits = {}, 0
    for h, w in enumerate(row):
        for part, c in (("qk", w.score), ("sm", w.softmax), ("pv", w.context)):
            for name, value in c.as_dict().items():
                out[f"cnt_{part}_{name}_h{h}"] = int(value)
        flits += w.score.scores_out + 1 + w.softmax.events_out + 1
    out["cnt_flits"] = flits
    out["cnt_hops"] = flits
    return out


def attention_reference(cfg: AttentionConfig, path: AttentionPath, query, keys, values,
                        valid) -> list[dict]:
    """Per window (token) of a sequence: its ``i`` beats, the expected ``o`` events
    ``(addr, t)`` and the expected counter ports (:func:`window_counters`)."""
    check_sequence(cfg, path, query, keys, values, valid)
    run = path.run(query, keys, values, valid)
    out = []
    for i, row in enumerate(run.windows):
        out.append({
            "query": query_beats(cfg, path, query[i]),
            "out": list(zip(run.out_index[i].tolist(), run.out_time[i].tolist(), strict=True)),
            "counters": window_counters(cfg, row),
        })
    return out


def dense_query_beats(cfg: AttentionConfig, path: AttentionPath,
                      query_row: torch.Tensor) -> list[dict[str, int]]:
    """The dense design's ``i`` beats of a token: every query code (every head, address order),
    then the marker."""
    check_codes(query_row, path.query_mask.space, "query")
    return [*({"code": int(c), "last": 0} for c in query_row.tolist()), {"code": 0, "last": 1}]


def dense_reference(cfg: AttentionConfig, path: AttentionPath, query, keys, values,
                    valid) -> list[dict]:
    """:func:`attention_reference` of the dense design
    (:meth:`golden_models.attention.AttentionPath.run_dense`): per token its ``i`` beats, the
    expected ``o`` codes ``(h * d_k + d, code)`` of every head in address order, the counters."""
    check_sequence(cfg, path, query, keys, values, valid)
    d = cfg.head_dim
    out = []
    for i, row in enumerate(path.run_dense(query, keys, values, valid)):
        out.append({
            "query": dense_query_beats(cfg, path, query[i]),
            "out": [(h * d + j, int(c)) for h, w in enumerate(row)
                    for j, c in enumerate(w.out_codes.tolist())],
            "counters": window_counters(cfg, row),
        })
    return out
