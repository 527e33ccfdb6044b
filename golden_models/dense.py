"""The dense INT4 baseline of one layer: every input code read, every output code sent.

The dense QNN computes the same layer as the spiking designs without events or masks
(docs/design.md, "The numerical contract", with no dead zone):

- integrate: ``V[j] = D[j] + sum over all inputs i of W[i, j] * q[i]``, with the dense init
  ``D[j] = B[j] - mu_in * sum_i W[i, j]`` (the folded init of :class:`IntegerLayer` without the
  input offset, i.e. the integer bias alone);
- quantize: the same threshold tables, ``q_out[j] = c_out - min({t : V[j] >= theta[j][t]} or
  {T-1})``: the QNN's output code, bit-exact to the float quantizer (:func:`threshold_table`);
- no output mask: all ``N`` codes leave.

At ``k = 0`` the spiking layer's membranes equal these exactly (the dead zone is empty), which
is what makes the two designs comparable on one workload.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch

from golden_models.counters import DenseCounters
from golden_models.integer_layer import IntegerLayer, fire
from golden_models.mask import Mask
from golden_models.mttfs import folded_init
from golden_models.tensor_checks import check_codes


def dense_init(layer: IntegerLayer) -> torch.Tensor:
    """``D = B - mu_in * sum_i W``: the integer bias without the folded input offset."""
    return layer.init.to(torch.int64) - folded_init(layer.weights, layer.in_mask.mu)


def with_masks(layer: IntegerLayer, in_mask: Mask, out_mask: Mask) -> IntegerLayer:
    """The same layer (weights, bias, thresholds) consuming ``in_mask`` and producing ``out_mask``.

    The folded init follows the new input centre: ``B' = D + mu'_in * sum_i W``.
    """
    if in_mask.space != layer.in_mask.space or out_mask.space != layer.out_mask.space:
        raise ValueError(
            f"masks must keep the layer's code spaces ({layer.in_mask.space}, "
            f"{layer.out_mask.space}), not ({in_mask.space}, {out_mask.space})")
    init = dense_init(layer) + folded_init(layer.weights, in_mask.mu)
    return replace(layer, init=init, in_mask=in_mask, out_mask=out_mask)


@dataclass(frozen=True)
class DenseResult:
    v: torch.Tensor  # membranes after integration [N_out]
    codes: torch.Tensor  # output codes [N_out]
    counters: DenseCounters


def _integrate(layer: IntegerLayer, q_in: torch.Tensor) -> torch.Tensor:
    """``V = D + sum_i W[i, :] * q[i]`` of the input codes ``q_in[N_in]``."""
    check_codes(q_in, layer.in_mask.space, "q_in")
    if tuple(q_in.shape) != (layer.n_in,):
        raise ValueError(f"q_in must have shape ({layer.n_in},), not {tuple(q_in.shape)}")
    return dense_init(layer) + (layer.weights.to(torch.int64)
                                * q_in.to(torch.int64)[:, None]).sum(0)


def run_dense(layer: IntegerLayer, q_in: torch.Tensor) -> DenseResult:
    """The dense baseline of ``layer`` on the input codes ``q_in[N_in]`` (no mask anywhere)."""
    v = _integrate(layer, q_in)
    T = layer.out_mask.T
    tau = fire(v, layer.theta, T)
    compares = int(torch.clamp(tau + 1, max=T - 1).sum())
    n = layer.n_in
    counters = DenseCounters(
        codes_in=n,
        weight_row_reads=n,
        mac_ops=n * layer.n_out,
        compare_ops=compares,
        threshold_reads=compares,
        codes_out=layer.n_out,
    )
    return DenseResult(v=v, codes=layer.out_mask.space.c - tau, counters=counters)


def run_dense_sums(layer: IntegerLayer, q_in: torch.Tensor) -> tuple[torch.Tensor, DenseCounters]:
    """The raw-sum mode of the dense tile: ``V = D + sum_i W[i, :] * q[i]`` for every neuron,
    sent in neuron order (no quantize). Counters: the integrate phase's as in
    :func:`run_dense`, no compare or threshold read, ``codes_out`` = the ``N`` sums sent."""
    v = _integrate(layer, q_in)
    n = layer.n_in
    counters = DenseCounters(codes_in=n, weight_row_reads=n, mac_ops=n * layer.n_out,
                             compare_ops=0, threshold_reads=0, codes_out=layer.n_out)
    return v, counters


__all__ = ["DenseCounters", "DenseResult", "dense_init", "run_dense", "run_dense_sums",
           "with_masks"]
