"""The ``matterhorn demo`` report: one random QNN layer, TTFS vs M-TTFS, exactness checks."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from golden_models.codespace import check_k, check_T
from golden_models.mask import Mask, ttfs_mask
from golden_models.mttfs import encode_events
from golden_models.qnn import random_qnn
from golden_models.statistics import PositionStats, transmitted_events
from toolkit_base.checks import MAX_SEED, check_int

#: Largest ``n_in``, ``n_out`` and ``batch`` of the demo (docs/reliability.md): the demo is a
#: quick look at one layer; without a bound a large size ends in a torch allocation error.
MAX_DEMO_SIZE = 4096


@dataclass(frozen=True)
class DemoRow:
    label: str
    silent_times: tuple[int, ...]
    events: int
    activations: int
    T: int
    accumulate_exact: int | None = None  # vectors whose V equals the QNN's integer sum
    codes_exact: int | None = None  # vectors whose output codes equal the QNN's

    @property
    def s(self) -> float:
        return self.events / self.activations

    @property
    def rate(self) -> float:
        return self.s / self.T


@dataclass(frozen=True)
class DemoResult:
    T: int
    k: int
    seed: int
    n_in: int
    n_out: int
    batch: int
    i_max: int
    p_q0: float
    rows: tuple[DemoRow, ...]

    @property
    def exact(self) -> bool:
        return all(r.codes_exact in (None, self.batch) and r.accumulate_exact in (None, self.batch)
                   for r in self.rows)

    def report(self) -> str:
        n_bits = self.T.bit_length() - 1
        head = (
            f"Random W1A{n_bits} QNN layer {self.n_in} -> {self.n_out}, T={self.T}, "
            f"seed {self.seed}, {self.batch} input vectors (codes peaked at 0)"
        )
        where = (
            f"input position: I_max={self.i_max} (code {self.T // 2 - 1 - self.i_max}), "
            f"p(q=0)={self.p_q0:.3f}"
        )
        columns = (
            f"{'encoding':<12} {'silent times':<16} {'events':>8} {'events/act.':>12} "
            f"{'rate/step':>10}  integer layer == QNN"
        )
        lines = [head, where, "", columns]
        for r in self.rows:
            silent = "{" + ",".join(map(str, r.silent_times)) + "}"
            check = "-"
            if r.codes_exact is not None:
                check = (f"V {r.accumulate_exact}/{self.batch}, "
                         f"codes {r.codes_exact}/{self.batch}")
            lines.append(
                f"{r.label:<12} {silent:<16} {r.events:>8} {r.s:>12.4f} {r.rate:>10.4%}  {check}"
            )
        lines.append("")
        lines.append("exact: " + ("yes, every vector, every k" if self.exact else "NO"))
        return "\n".join(lines)


def run_demo(
    *, T: int = 16, k: int = 1, seed: int = 0, n_in: int = 64, n_out: int = 32, batch: int = 256
) -> DemoResult:
    """Build a random layer and compare TTFS with M-TTFS ``k = 0..k``.

    For each ``k`` the layer's integer form (folded init, thresholds) runs every input vector
    event by event; its membranes must equal the dead-zone QNN's integer sums and its output
    codes the float QNN's codes.
    """
    check_T(T)
    check_k(k, T)
    check_int("seed", seed, 0, MAX_SEED)
    for name, v in (("n_in", n_in), ("n_out", n_out), ("batch", batch)):
        check_int(name, v, 1, MAX_DEMO_SIZE)
    chain = random_qnn((n_in, n_out), T=T, k=0, seed=seed)
    layer = chain.layers[0]
    q_in = chain.random_input(batch, seed=seed + 1)
    space = layer.in_space
    stats = PositionStats.from_codes("input", q_in, space, i_max=layer.in_mask.i_max)
    counts = torch.tensor(stats.counts)
    act = q_in.numel()
    rows = [DemoRow("TTFS", ttfs_mask(space).silent_times,
                    transmitted_events(counts, ttfs_mask(space)), act, T)]
    for kk in range(k + 1):
        mask = Mask(space, layer.in_mask.i_max, kk)
        layer.set_in_mask(mask)
        integer = layer.to_integer(chain.out_mask)
        v_ref, q_ref = layer.integer_sum(q_in), layer(q_in)
        events = acc_ok = codes_ok = 0
        for b in range(batch):
            index, _ = encode_events(q_in[b], mask)
            events += int(index.numel())
            res = integer.run_codes(q_in[b])
            acc_ok += bool(torch.equal(res.v, v_ref[b]))
            codes_ok += bool(torch.equal(integer.output_codes(res), q_ref[b]))
        assert events == transmitted_events(counts, mask)  # histogram and event list agree
        rows.append(DemoRow(f"M-TTFS k={kk}", mask.silent_times, events, act, T, acc_ok,
                            codes_ok))
    return DemoResult(T, k, seed, n_in, n_out, batch, layer.in_mask.i_max, stats.p_q0,
                      tuple(rows))


__all__ = ["MAX_DEMO_SIZE", "DemoResult", "DemoRow", "run_demo"]
