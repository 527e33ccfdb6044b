"""The integer form of one spike-encoded layer: integrate, dynamic-firing-threshold fire, counters.

This is what the RTL must equal bit for bit (docs/design.md, "The numerical contract"):

- integrate: ``V[j] = B[j] + sum over transmitted input events (i, tau) of W[i, j] * d``,
  ``d = c_in - tau - mu_in``;
- fire: ``tau_out[j] = min({t in 0..T-2 : V[j] >= theta[j][t]} or {T-1})``, then the output mask;
- threshold tables are derived from the float affine map of the QNN so that
  ``c_out - tau_out`` equals the QNN's output code exactly (:func:`threshold_table`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import torch

# re-exported: their home is golden_models.bounds (torch-free)
from golden_models.bounds import accumulator_bound as accumulator_bound
from golden_models.bounds import signed_width as signed_width
from golden_models.bounds import weight_range as weight_range
from golden_models.codespace import CodeSpace
from golden_models.counters import Counters as Counters
from golden_models.mask import Mask
from golden_models.mttfs import encode_events, event_time
from golden_models.quantizer import check_rounding, check_scale, level_of
from golden_models.tensor_checks import check_codes


def check_weights(weights: torch.Tensor, weight_bits: int) -> torch.Tensor:
    """Return integer weights ``[N_in, N_out]`` if they fit ``weight_bits``, else raise."""
    if not isinstance(weights, torch.Tensor) or weights.dim() != 2:
        raise ValueError("weights must be a 2-D torch.Tensor [N_in, N_out]")
    if weights.dtype.is_floating_point or weights.dtype == torch.bool:
        raise TypeError(f"weights must hold integers, not dtype {weights.dtype}")
    lo, hi = weight_range(weight_bits)
    if weights.numel():
        if weight_bits == 1 and bool(((weights != 1) & (weights != -1)).any()):
            raise ValueError("1-bit weights must be -1 or +1")
        if int(weights.min()) < lo or int(weights.max()) > hi:
            raise ValueError(f"{weight_bits}-bit weights must be in {lo}..{hi}")
    return weights.to(torch.int64)




def threshold_table(
    scale: torch.Tensor,
    bias: torch.Tensor,
    alpha_out: float,
    space_out: CodeSpace,
    rounding: str = "floor",
    v_range: tuple[int, int] | None = None,
    activation: Callable[[torch.Tensor], torch.Tensor] | None = None,
) -> torch.Tensor:
    """Per-neuron, non-increasing integer thresholds ``theta[j][t]``, ``t = 0..T-2``.

    The layer's float pre-activation is ``a[j] = bias[j] + scale[j] * V[j]`` (float64, ``V``
    integer), and its code ``clip(level(a/alpha_out), q_min, q_max)``. ``theta[j][t]`` is the
    least integer ``V`` whose code is at least ``c - t``. It is found by evaluating the very
    same float expression, so the comparison ``V >= theta`` reproduces the float code exactly,
    boundary cases included.

    With ``v_range = (v_min, v_max)`` (the membrane's reachable range) the result is the least
    such ``V`` in ``[v_min, v_max + 1]``, ``v_max + 1`` meaning "never in range": a bisection
    over that interval, exact whatever the scales (a degenerate calibration with a tiny
    ``alpha_out`` included), and the table's width stays bounded. Without ``v_range`` the
    closed form is corrected by unit steps, which needs well-conditioned scales.

    With ``activation`` (a non-decreasing float64 function, e.g.
    :func:`golden_models.gelu.gelu_monotone`) the code is ``clip(level(f(a)/alpha_out))``: the
    threshold walk then realises the activation too (it needs ``v_range``).

    Raises
    ------
    ValueError
        A bad scale, shape or rounding mode, or (without ``v_range``) scales so extreme that
        the closed form is off by more than 64 units.
    """
    check_rounding(rounding)
    check_scale(alpha_out, "alpha_out")
    scale = torch.as_tensor(scale, dtype=torch.float64).reshape(-1)
    bias = torch.as_tensor(bias, dtype=torch.float64).reshape(-1)
    if scale.shape != bias.shape:
        raise ValueError(f"scale and bias must have one shape, not {scale.shape} and {bias.shape}")
    check_scale(scale, "scale")

    if activation is not None and v_range is None:
        raise ValueError("a threshold table with an activation needs v_range")

    def code(v: torch.Tensor) -> torch.Tensor:
        a = bias[:, None] + scale[:, None] * v
        if activation is not None:
            a = activation(a)
        return level_of(a / alpha_out, rounding)

    t = torch.arange(space_out.T - 1, dtype=torch.float64)
    target = (space_out.c - t)[None, :].expand(scale.numel(), -1)  # code needed to fire at t

    if v_range is not None:
        v_min, v_max = int(v_range[0]), int(v_range[1])
        if v_min > v_max:
            raise ValueError(f"v_range must have v_min <= v_max, not {v_range!r}")
        # the code is monotone in V, so bisect for the least V in [v_min, v_max + 1] reaching it
        lo = torch.full(target.shape, float(v_min), dtype=torch.float64)
        hi = torch.full(target.shape, float(v_max + 1), dtype=torch.float64)
        while bool((active := lo < hi).any()):
            mid = torch.floor((lo + hi) / 2)
            ok = code(mid) >= target
            hi = torch.where(active & ok, mid, hi)
            lo = torch.where(active & ~ok, mid + 1, lo)
        return lo.to(torch.int64)

    offset = 0.5 if rounding == "round" else 0.0
    guess = torch.ceil(((target - offset) * alpha_out - bias[:, None]) / scale[:, None])
    guess = torch.nan_to_num(guess, nan=0.0, posinf=2.0**52, neginf=-(2.0**52))
    guess = guess.clamp(-(2.0**52), 2.0**52)
    for _ in range(64):
        down = code(guess - 1) >= target
        up = code(guess) < target
        if not bool(down.any()) and not bool(up.any()):
            return guess.to(torch.int64)
        guess = guess - down.to(torch.float64) + up.to(torch.float64)
    raise ValueError(
        "threshold search did not converge: scales too extreme for the closed form "
        f"(alpha_out={alpha_out!r}, scale in [{float(scale.min())!r}, {float(scale.max())!r}]); "
        "pass v_range to bisect within the membrane's range"
    )


def check_thresholds(theta: torch.Tensor, n_out: int, T: int) -> torch.Tensor:
    """Return ``theta`` if it is an integer ``[n_out, T-1]`` non-increasing table, else raise."""
    if not isinstance(theta, torch.Tensor) or tuple(theta.shape) != (n_out, T - 1):
        shape = tuple(theta.shape) if isinstance(theta, torch.Tensor) else theta
        raise ValueError(f"theta must have shape ({n_out}, {T - 1}), not {shape}")
    if theta.dtype.is_floating_point:
        raise TypeError(f"theta must hold integers, not dtype {theta.dtype}")
    if theta.shape[1] > 1 and bool((theta[:, 1:] > theta[:, :-1]).any()):
        raise ValueError("theta must be non-increasing in t for every neuron")
    return theta.to(torch.int64)


def fire(v: torch.Tensor, theta: torch.Tensor, T: int) -> torch.Tensor:
    """Event times ``tau_out = min({t <= T-2 : V >= theta[t]} or {T-1})`` of membranes ``V``."""
    crossed = v[..., None] >= theta  # [..., T-1]
    first = torch.where(crossed.any(-1), crossed.to(torch.int8).argmax(-1), T - 1)
    return first.to(torch.int64)


@dataclass(frozen=True)
class LayerResult:
    v: torch.Tensor  # membranes after integration [N_out]
    tau: torch.Tensor  # pre-mask event times [N_out]
    out_index: torch.Tensor  # transmitted output events, time order
    out_time: torch.Tensor
    counters: Counters = field(default_factory=Counters)


@dataclass(frozen=True)
class IntegerLayer:
    """One spike-encoded layer in integer form, as stored in the tile's SRAM.

    Parameters
    ----------
    weights : int tensor ``[N_in, N_out]``
    weight_bits : int
        1 (weights ``+-1``) or a signed width 2..8.
    init : int tensor ``[N_out]``
        Folded init values ``B`` (bias and the input offset ``mu_in * sum_i W``).
    theta : int tensor ``[N_out, T_out-1]``
        Non-increasing threshold tables.
    in_mask, out_mask : Mask
        Masks of the consumed and of the produced position.
    """

    weights: torch.Tensor
    weight_bits: int
    init: torch.Tensor
    theta: torch.Tensor
    in_mask: Mask
    out_mask: Mask

    def __post_init__(self) -> None:
        w = check_weights(self.weights, self.weight_bits)
        n_out = w.shape[1]
        if not isinstance(self.init, torch.Tensor) or tuple(self.init.shape) != (n_out,):
            raise ValueError(f"init must be an integer tensor of shape ({n_out},)")
        if self.init.dtype.is_floating_point:
            raise TypeError(f"init must hold integers, not dtype {self.init.dtype}")
        check_thresholds(self.theta, n_out, self.out_mask.T)

    @property
    def n_in(self) -> int:
        return int(self.weights.shape[0])

    @property
    def n_out(self) -> int:
        return int(self.weights.shape[1])

    def integrate(self, index: torch.Tensor, time: torch.Tensor) -> torch.Tensor:
        """Membranes after the events ``(index, time)`` of the input position."""
        d = self.in_mask.centred(time.to(torch.int64))
        w = self.weights.to(torch.int64)[index.long()]  # [E, N_out]
        return self.init.to(torch.int64) + (w * d[:, None]).sum(0)

    def run_events(self, index: torch.Tensor, time: torch.Tensor) -> LayerResult:
        """Integrate the input events, fire, mask; return membranes, events and counters."""
        v = self.integrate(index, time)
        tau = fire(v, self.theta, self.out_mask.T)
        keep = self.out_mask.transmitted(tau)
        out_index, out_time = encode_events(self.out_mask.space.c - tau, self.out_mask)
        compares = int(torch.clamp(tau + 1, max=self.out_mask.T - 1).sum())
        n_ev = int(index.numel())
        counters = Counters(
            events_in=n_ev,
            weight_row_reads=n_ev,
            accumulate_ops=n_ev * self.n_out,
            compare_ops=compares,
            threshold_reads=compares,
            events_out=int(keep.sum()),
            events_suppressed=int((~keep).sum()),
        )
        return LayerResult(v, tau, out_index, out_time, counters)

    def run_sums(self, index: torch.Tensor, time: torch.Tensor) -> tuple[torch.Tensor, Counters]:
        """The raw-sum mode of a tile: integrate the input events and send every membrane.

        For the layers that feed softmax or a residual add (the query x key scores, the
        attention-output projection, the second FFN layer) the consumer needs the integer sums
        ``V[j] = B[j] + sum W[i, j] * d`` (Proposition 2: ``sum_i W[i, j] * qbar[i]`` plus the
        bias part of ``B``), not codes: no fire, no threshold read, no mask. The tile sends
        ``V[0..N-1]`` in neuron order, then its window's marker. Counters: the integrate
        phase's as in :meth:`run_events`, no compare or threshold read, ``events_out`` = the
        ``N`` sums sent, ``events_suppressed`` = 0.
        """
        v = self.integrate(index, time)
        n_ev = int(index.numel())
        counters = Counters(
            events_in=n_ev,
            weight_row_reads=n_ev,
            accumulate_ops=n_ev * self.n_out,
            compare_ops=0,
            threshold_reads=0,
            events_out=self.n_out,
            events_suppressed=0,
        )
        return v, counters

    def run_codes(self, q_in: torch.Tensor) -> LayerResult:
        """Encode the input codes ``q_in[N_in]`` with the input mask, then :meth:`run_events`."""
        check_codes(q_in, self.in_mask.space, "q_in")
        if tuple(q_in.shape) != (self.n_in,):
            raise ValueError(f"q_in must have shape ({self.n_in},), not {tuple(q_in.shape)}")
        index, time = encode_events(q_in, self.in_mask)
        return self.run_events(index, time)

    def output_codes(self, result: LayerResult) -> torch.Tensor:
        """Pre-mask output codes ``q_out = c - tau_out``."""
        return self.out_mask.space.c - result.tau

    def v_range(self) -> tuple[int, int]:
        """Exact range of the final membrane over all input codes (per layer, all neurons)."""
        space, w = self.in_mask.space, self.weights.to(torch.int64)
        hi = (w.clamp(min=0) * space.q_max + w.clamp(max=0) * space.q_min).sum(0)
        lo = (w.clamp(min=0) * space.q_min + w.clamp(max=0) * space.q_max).sum(0)
        return int(lo.min()), int(hi.max())


__all__ = [
    "Counters",
    "IntegerLayer",
    "LayerResult",
    "accumulator_bound",
    "check_thresholds",
    "check_weights",
    "event_time",
    "fire",
    "signed_width",
    "threshold_table",
    "weight_range",
]
