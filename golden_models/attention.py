"""The integer attention path of one encoder block, head by head: the golden model of the
attention hardware (docs/rtl_attention.md; the integer contract: docs/integer_contract.md,
"The integer encoder block").

Per head, with ``d_k`` dimensions and a sequence of ``S`` tokens whose key and value codes were
written as run-time weights before its first query:

- **query x key.** The query codes ``q [S, d_k]`` travel as events through the query mask; a
  token's events ``(d, tau)`` read key-memory row ``d`` (one neuron per key slot) and add
  ``k[j][d] * (c - tau - mu_q)`` to the score of every slot ``j``, from the folded init
  ``mu_q * sum_d k[j][d]``; so the raw score is ``A[i][j] = sum_d qbar[i][d] * k[j][d]``
  (Proposition 2), the contract's scores;
- **softmax.** :class:`golden_models.int_softmax.IntSoftmax` turns a row ``A[i]`` and the
  sequence's valid keys into ``u`` (``2**Pu`` is one), and the ``attn_prob`` walk (one shared
  table over ``u``) into codes, sent as events through the ``attn_prob`` mask;
- **probability x value.** An event ``(j, tau)`` reads value-memory row ``j`` (one neuron per
  head dimension) and adds ``v[j][d] * (c - tau - mu_p)``, from ``mu_p * sum_j v[j][d]``: the
  contract's raw sums ``C[i][d] = sum_j pbar[i][j] * v[j][d]``, walked by the one
  ``attn_out_in`` table into codes, sent through the ``attn_out_in`` mask.

A padded key (``valid`` low) takes part as the golden model's attention mask says: its score is
computed, the softmax gives it ``u = 0``, and its (silent-code) probability still multiplies its
value row. The model is :func:`networks.integer.block_forward`'s attention, head by head
(tests/test_attention_golden.py checks the two agree on MiniLM).

The dense counterpart (:meth:`AttentionPath.run_dense`) computes the same path on codes with no
mask: every query code, every probability code, every output code.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from golden_models.codespace import CodeSpace
from golden_models.counters import (
    ContextCounters,
    DenseContextCounters,
    DenseScoreCounters,
    ScoreCounters,
    SoftmaxCounters,
)
from golden_models.int_softmax import PROB_BITS, IntSoftmax
from golden_models.integer_layer import check_thresholds, fire
from golden_models.mask import Mask
from golden_models.mttfs import encode_events
from golden_models.tensor_checks import check_codes
from toolkit_base.checks import check_int

__all__ = [
    "AttentionPath",
    "DenseWindow",
    "HeadWindow",
    "MAX_HEAD_DIM",
    "MAX_HEADS",
    "SequenceRun",
]

#: Largest head dimension and head count the model (and the generator) accepts.
MAX_HEAD_DIM = 256
MAX_HEADS = 64


def _int_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` of small integer codes, exactly (float64 holds every partial sum: rows of at
    most 4096 products of 8-bit codes, below ``2**53``)."""
    return (a.to(torch.float64) @ b.to(torch.float64)).to(torch.int64)


def _compares(tau: torch.Tensor, T: int) -> int:
    """(neuron, step) compares of a walk whose neurons fire at ``tau``: ``min(tau+1, T-1)``."""
    return int(torch.clamp(tau + 1, max=T - 1).sum())


@dataclass(frozen=True)
class HeadWindow:
    """One query window (one token) of one head.

    ``scores [S]`` raw scores, ``u [S]`` probabilities times ``2**Pu``, ``prob_codes [S]`` and
    ``ctx [d_k]`` (the raw sums ``C``) and ``out_codes [d_k]`` before their masks; the events
    ``(index, time)`` of each masked position in time order; the three parts' counters.
    """

    scores: torch.Tensor
    u: torch.Tensor
    prob_codes: torch.Tensor
    prob_index: torch.Tensor
    prob_time: torch.Tensor
    ctx: torch.Tensor
    out_codes: torch.Tensor
    out_index: torch.Tensor
    out_time: torch.Tensor
    score: ScoreCounters
    softmax: SoftmaxCounters
    context: ContextCounters


@dataclass(frozen=True)
class DenseWindow:
    """One query window of one head in the dense design: the codes and the counters of the
    query x key tile (``d_k`` query codes in), the softmax (``events_out``: the ``S``
    probability codes sent, none suppressed) and the probability x value tile."""

    scores: torch.Tensor
    prob_codes: torch.Tensor
    ctx: torch.Tensor
    out_codes: torch.Tensor
    score: DenseScoreCounters
    softmax: SoftmaxCounters
    context: DenseContextCounters


@dataclass(frozen=True)
class SequenceRun:
    """A sequence through every head: ``windows[i][h]`` is token ``i``, head ``h``;
    ``out_index``/``out_time`` per token are the ``attn_out_in`` events of all heads, global
    address ``h * d_k + d``, in time order and ascending address within a step."""

    windows: list[list[HeadWindow]]
    out_index: list[torch.Tensor]
    out_time: list[torch.Tensor]


@dataclass(frozen=True)
class AttentionPath:
    """The integer constants of the attention path of one block (shared by its heads).

    Parameters
    ----------
    head_dim : int
        ``d_k``, 1..256.
    query_mask : Mask
        The query position's mask (the query codes' space and silent centre).
    kv_space : CodeSpace
        Code space of the key and value codes (quantized like weights, never spike-encoded).
    softmax : IntSoftmax
        The softmax unit; its ``score_bits`` must hold every raw score.
    prob_theta : int tensor ``[T-1]``
        The ``attn_prob`` walk over ``u`` (non-increasing).
    prob_mask : Mask
        The ``attn_prob`` mask.
    ctx_theta : int tensor ``[T-1]``
        The ``attn_out_in`` walk over the raw sums ``C``.
    ctx_mask : Mask
        The ``attn_out_in`` mask.

    Raises
    ------
    TypeError, ValueError
        A field of the wrong type, a table of the wrong shape or order, or scores that could
        overflow the softmax's ``score_bits``.
    """

    head_dim: int
    query_mask: Mask
    kv_space: CodeSpace
    softmax: IntSoftmax
    prob_theta: torch.Tensor
    prob_mask: Mask
    ctx_theta: torch.Tensor
    ctx_mask: Mask

    def __post_init__(self) -> None:
        check_int("head_dim", self.head_dim, 1, MAX_HEAD_DIM)
        for name in ("query_mask", "prob_mask", "ctx_mask"):
            if not isinstance(getattr(self, name), Mask):
                raise TypeError(f"{name} must be a Mask, not {getattr(self, name)!r}")
        if not isinstance(self.kv_space, CodeSpace):
            raise TypeError(f"kv_space must be a CodeSpace, not {self.kv_space!r}")
        if not isinstance(self.softmax, IntSoftmax):
            raise TypeError(f"softmax must be an IntSoftmax, not {self.softmax!r}")
        for name, mask in (("prob_theta", self.prob_mask), ("ctx_theta", self.ctx_mask)):
            theta = getattr(self, name)
            if not isinstance(theta, torch.Tensor) or theta.dim() != 1:
                raise ValueError(f"{name} must be a 1-D integer tensor [T-1]")
            check_thresholds(theta[None, :], 1, mask.T)
        need = self.score_bound
        if need > 2 ** (self.softmax.score_bits - 1) - 1:
            raise ValueError(
                f"softmax.score_bits={self.softmax.score_bits} cannot hold the raw scores of "
                f"head_dim={self.head_dim} (|A| <= {need})")

    # -- derived bounds ------------------------------------------------------------------------

    @property
    def score_bound(self) -> int:
        """Largest ``|A|`` of a raw score: ``d_k * max|q| * max|k|``."""
        return self.head_dim * self.query_mask.space.max_abs * self.kv_space.max_abs

    def ctx_bound(self, seq_len: int) -> int:
        """Largest ``|C|`` of a raw context sum over ``seq_len`` keys."""
        return seq_len * self.prob_mask.space.max_abs * self.kv_space.max_abs

    # -- input checks --------------------------------------------------------------------------

    def check_sequence(self, query, keys, values, valid) -> tuple[int, int]:
        """``(S, heads)`` of a sequence's inputs, or a ValueError/TypeError naming the value:
        ``query``, ``keys``, ``values`` integer codes ``[S, heads * d_k]`` of their spaces,
        ``valid`` a bool ``[S]`` (the attention mask)."""
        check_codes(query, self.query_mask.space, "query")
        check_codes(keys, self.kv_space, "keys")
        check_codes(values, self.kv_space, "values")
        if query.dim() != 2 or query.shape[0] < 1:
            raise ValueError(f"query must have shape [S, heads * {self.head_dim}] with S >= 1, "
                             f"not {tuple(query.shape)}")
        S, width = query.shape
        if width % self.head_dim:
            raise ValueError(f"query has {width} codes per token, not a multiple of "
                             f"head_dim={self.head_dim}")
        for name, t in (("keys", keys), ("values", values)):
            if tuple(t.shape) != (S, width):
                raise ValueError(f"{name} must have the query's shape {(S, width)}, not "
                                 f"{tuple(t.shape)}")
        if not isinstance(valid, torch.Tensor) or valid.dtype != torch.bool:
            raise TypeError(f"valid must be a bool tensor [S], not {valid!r}")
        if tuple(valid.shape) != (S,):
            raise ValueError(f"valid must have shape ({S},), not {tuple(valid.shape)}")
        if S > self.softmax.row_max:
            raise ValueError(f"sequence length {S} exceeds the softmax's row_max="
                             f"{self.softmax.row_max}")
        return S, width // self.head_dim

    # -- the path ------------------------------------------------------------------------------

    def _probabilities(self, scores: torch.Tensor, valid: torch.Tensor):
        u = self.softmax(scores, valid[None, :])
        sp = self.prob_mask.space
        tau = fire(u, self.prob_theta, sp.T)
        return u, sp.c - tau, tau

    def run_head(self, query, keys, values, valid) -> list[HeadWindow]:
        """Every query window of one head: ``query``, ``keys``, ``values`` ``[S, d_k]``."""
        S, heads = self.check_sequence(query, keys, values, valid)
        if heads != 1:
            raise ValueError(f"run_head takes one head of {self.head_dim} dimensions, not "
                             f"{heads * self.head_dim}")
        qm, pm, cm = self.query_mask, self.prob_mask, self.ctx_mask
        k64, v64 = keys.to(torch.int64), values.to(torch.int64)
        qbar = qm.project(query.to(torch.int64))
        scores = _int_matmul(qbar, k64.T)  # [S, S]
        u, prob_codes, prob_tau = self._probabilities(scores, valid)
        pbar = pm.project(prob_codes)
        ctx = _int_matmul(pbar, v64)  # [S, d_k]
        out_tau = fire(ctx, self.ctx_theta, cm.T)
        out_codes = cm.space.c - out_tau
        d_k = self.head_dim
        n_valid = int(valid.sum())
        windows = []
        for i in range(S):
            q_idx, _ = encode_events(query[i].to(torch.int64), qm)
            p_idx, p_time = encode_events(prob_codes[i], pm)
            o_idx, o_time = encode_events(out_codes[i], cm)
            n_q, n_p, n_o = int(q_idx.numel()), int(p_idx.numel()), int(o_idx.numel())
            p_cmp, o_cmp = _compares(prob_tau[i], pm.T), _compares(out_tau[i], cm.T)
            windows.append(HeadWindow(
                scores=scores[i], u=u[i], prob_codes=prob_codes[i], prob_index=p_idx,
                prob_time=p_time, ctx=ctx[i], out_codes=out_codes[i], out_index=o_idx,
                out_time=o_time,
                score=ScoreCounters(events_in=n_q, weight_row_reads=n_q,
                                    accumulate_ops=n_q * S, scores_out=S,
                                    key_writes=S * d_k),
                softmax=SoftmaxCounters(scores_in=S, exp_ops=n_valid, divisions=1,
                                        compare_ops=p_cmp, events_out=n_p,
                                        events_suppressed=S - n_p),
                context=ContextCounters(events_in=n_p, weight_row_reads=n_p,
                                        accumulate_ops=n_p * d_k, compare_ops=o_cmp,
                                        threshold_reads=o_cmp, events_out=n_o,
                                        events_suppressed=d_k - n_o, value_writes=S * d_k),
            ))
        return windows

    def run(self, query, keys, values, valid) -> SequenceRun:
        """A whole sequence through every head: ``query``, ``keys``, ``values``
        ``[S, heads * d_k]``, ``valid [S]``."""
        S, heads = self.check_sequence(query, keys, values, valid)
        d = self.head_dim
        per_head = [self.run_head(query[:, h * d:(h + 1) * d], keys[:, h * d:(h + 1) * d],
                                  values[:, h * d:(h + 1) * d], valid) for h in range(heads)]
        windows = [[per_head[h][i] for h in range(heads)] for i in range(S)]
        out_index, out_time = [], []
        for row in windows:
            idx, tm = encode_events(torch.cat([w.out_codes for w in row]), self.ctx_mask)
            out_index.append(idx)
            out_time.append(tm)
        return SequenceRun(windows, out_index, out_time)

    def run_dense(self, query, keys, values, valid) -> list[list[DenseWindow]]:
        """The dense counterpart, ``[token][head]``: every code read and sent, no mask (the
        spiking path's codes at ``k = 0``)."""
        S, heads = self.check_sequence(query, keys, values, valid)
        d, T = self.head_dim, self.ctx_mask.T
        out = []
        for i in range(S):
            row = []
            for h in range(heads):
                sl = slice(h * d, (h + 1) * d)
                k64, v64 = keys[:, sl].to(torch.int64), values[:, sl].to(torch.int64)
                scores = _int_matmul(query[i:i + 1, sl].to(torch.int64), k64.T)
                u, prob_codes, prob_tau = self._probabilities(scores, valid)
                ctx = _int_matmul(prob_codes, v64)[0]
                out_tau = fire(ctx, self.ctx_theta, T)
                p_cmp, o_cmp = _compares(prob_tau[0], self.prob_mask.T), _compares(out_tau, T)
                row.append(DenseWindow(
                    scores=scores[0], prob_codes=prob_codes[0], ctx=ctx,
                    out_codes=self.ctx_mask.space.c - out_tau,
                    score=DenseScoreCounters(codes_in=d, weight_row_reads=d, mac_ops=d * S,
                                             scores_out=S, key_writes=S * d),
                    softmax=SoftmaxCounters(scores_in=S, exp_ops=int(valid.sum()),
                                            divisions=1, compare_ops=p_cmp, events_out=S,
                                            events_suppressed=0),
                    context=DenseContextCounters(codes_in=S, weight_row_reads=S,
                                                 mac_ops=S * d, compare_ops=o_cmp,
                                                 threshold_reads=o_cmp, codes_out=d,
                                                 value_writes=S * d),
                ))
            out.append(row)
        return out

    # -- random paths for the tests and benches -----------------------------------------------

    @classmethod
    def random(cls, head_dim: int, *, T: int = 16, k: int = 1, seq_len: int = 64,
               seed: int = 0, frac_bits: int = 6, row_max: int = 512) -> AttentionPath:
        """A path with random masks and scales (tests and benches): query ``sym``, key and
        value ``sym``, ``attn_prob`` ``asym``, ``attn_out_in`` ``sym``, all ``T`` levels,
        dead-zone radius ``k``, silent centres drawn near the middle of each space, scales
        that spread the codes over their levels for sequences of about ``seq_len``."""
        import math
        import random

        from golden_models.integer_layer import threshold_table

        rng = random.Random(seed)
        q_sp, kv_sp = CodeSpace(T, "sym"), CodeSpace(T, "sym")
        p_sp, c_sp = CodeSpace(T, "asym"), CodeSpace(T, "sym")

        def mask(space: CodeSpace, spread: int) -> Mask:
            i_max = min(T - 1, max(0, space.c + rng.randint(-spread, spread)))
            return Mask(space, i_max, min(k, T - 1))

        score_bits = (head_dim * q_sp.max_abs * kv_sp.max_abs).bit_length() + 1
        # logits of about one unit for codes spread over their levels
        alpha = 3.0 / (math.sqrt(head_dim) * q_sp.max_abs * kv_sp.max_abs)
        softmax = IntSoftmax.from_scale(alpha * rng.uniform(0.5, 2.0), row_max, score_bits,
                                        frac_bits)
        one = torch.ones(1, dtype=torch.float64)
        zero = torch.zeros(1, dtype=torch.float64)
        p_alpha = rng.uniform(0.5, 2.0) / (3 * max(seq_len, 1))
        prob_theta = threshold_table(one * 2.0**-PROB_BITS, zero, p_alpha, p_sp, "round",
                                     (0, 2**PROB_BITS))[0]
        bound = row_max * p_sp.max_abs * kv_sp.max_abs
        c_alpha = rng.uniform(0.5, 2.0) * kv_sp.max_abs
        ctx_theta = threshold_table(one, zero, c_alpha, c_sp, "round", (-bound, bound))[0]
        return cls(head_dim, mask(q_sp, 1), kv_sp, softmax, prob_theta,
                   mask(p_sp, 2) if rng.random() < 0.5 else Mask(p_sp, p_sp.c, k),
                   ctx_theta, mask(c_sp, 1))
