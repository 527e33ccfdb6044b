"""The golden QNN linear layer, its integer (M-TTFS) form, and seeded random QNN chains.

A layer (paper Eqs. qnn_pre_activation, qnn_code) consumes dead-zone-projected input codes
``qbar`` at scale ``alpha_in`` and integer weights ``W`` with a per-output scale ``s``:

    ``V[j] = sum_i W[i, j] * qbar[i]``           (int64, exact)
    ``a[j] = b[j] + (s[j] * alpha_in) * V[j]``   (float64, one fixed expression)
    ``q[j] = clip(level(a[j] / alpha_out), q_min, q_max)``

Evaluating the matmul in integers and the scales in float64 makes the float QNN deterministic,
and :func:`golden_models.threshold_table` evaluates the very same expression, so the integer
threshold form reproduces ``q`` bit for bit (Proposition 2 plus the threshold export).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from golden_models.calibration import event_histogram, select_i_max
from golden_models.codespace import CodeSpace, check_integer
from golden_models.integer_layer import IntegerLayer, check_weights, threshold_table, weight_range
from golden_models.mask import Mask
from golden_models.mttfs import folded_init
from golden_models.quantizer import check_rounding, check_scale, level_of
from golden_models.tensor_checks import check_codes

#: Input-code distributions of :func:`random_qnn`.
DISTRIBUTIONS = ("peaked", "uniform")


def quantize_weights(w: torch.Tensor, weight_bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Integer weights ``[N_in, N_out]`` and per-output scales of float weights ``w[N_in, N_out]``.

    1 bit: ``W = sign(w)`` (0 maps to +1), ``s = mean |w|`` per output (XNOR-Net style).
    b bits: ``s = max |w| / (2**(b-1) - 1)`` per output, ``W = clip(round(w / s))``.
    """
    if not isinstance(w, torch.Tensor) or w.dim() != 2 or not w.dtype.is_floating_point:
        raise TypeError("w must be a 2-D floating-point torch.Tensor [N_in, N_out]")
    lo, hi = weight_range(weight_bits)
    w = w.to(torch.float64)
    if weight_bits == 1:
        scale = w.abs().mean(0)
        wi = torch.where(w >= 0, 1, -1).to(torch.int8)
    else:
        scale = w.abs().amax(0) / hi
        wi = torch.round(w / scale.clamp(min=1e-300)).clamp(lo, hi).to(torch.int8)
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    return wi, scale


class QNNLinear(torch.nn.Module):
    """One QNN linear layer with integer weights and n-bit activations in and out.

    Parameters
    ----------
    weight : int tensor ``[N_in, N_out]``
        ``+-1`` (``weight_bits=1``) or signed ``weight_bits``-bit integers.
    scale : float tensor ``[N_out]``
        Per-output weight scale ``s > 0`` (float weight ``w = s * W``).
    bias : float tensor ``[N_out]``
    weight_bits : int
    in_mask : Mask
        Code space, silent centre and dead zone of the consumed position.
    in_alpha, out_alpha : float
        Activation scales of the input and output positions.
    out_space : CodeSpace
    rounding : {"floor", "round"}
        Rounding of the output quantizer.
    """

    def __init__(
        self,
        weight: torch.Tensor,
        scale: torch.Tensor,
        bias: torch.Tensor,
        *,
        weight_bits: int,
        in_mask: Mask,
        in_alpha: float,
        out_space: CodeSpace,
        out_alpha: float,
        rounding: str = "floor",
    ) -> None:
        w = check_weights(weight, weight_bits)
        n_out = w.shape[1]
        scale = torch.as_tensor(scale, dtype=torch.float64).reshape(-1)
        bias = torch.as_tensor(bias, dtype=torch.float64).reshape(-1)
        for name, t in (("scale", scale), ("bias", bias)):
            if tuple(t.shape) != (n_out,):
                raise ValueError(f"{name} must have shape ({n_out},), not {tuple(t.shape)}")
        check_scale(scale, "scale")
        if not bool(torch.isfinite(bias).all()):
            raise ValueError("bias must be finite")
        if not isinstance(in_mask, Mask):
            raise TypeError(f"in_mask must be a Mask, not {in_mask!r}")
        if not isinstance(out_space, CodeSpace):
            raise TypeError(f"out_space must be a CodeSpace, not {out_space!r}")
        check_scale(in_alpha, "in_alpha")
        check_scale(out_alpha, "out_alpha")
        check_rounding(rounding)
        super().__init__()
        self.register_buffer("weight", w.to(torch.int8))  # weight_bits <= 8
        self.register_buffer("scale", scale)
        self.register_buffer("bias", bias)
        self._weight_bits = weight_bits
        self._in_mask = in_mask
        self._in_alpha = float(in_alpha)
        self._out_space = out_space
        self._out_alpha = float(out_alpha)
        self._rounding = rounding

    @classmethod
    def from_float(
        cls, w: torch.Tensor, bias: torch.Tensor, *, weight_bits: int, **kwargs
    ) -> QNNLinear:
        """Quantize float weights ``w[N_in, N_out]`` (see :func:`quantize_weights`)."""
        wi, scale = quantize_weights(w, weight_bits)
        return cls(wi, scale, bias, weight_bits=weight_bits, **kwargs)

    # read-only parameters -------------------------------------------------------------
    @property
    def weight_bits(self) -> int:
        return self._weight_bits

    @property
    def in_mask(self) -> Mask:
        return self._in_mask

    @property
    def in_space(self) -> CodeSpace:
        return self._in_mask.space

    @property
    def in_alpha(self) -> float:
        return self._in_alpha

    @property
    def out_space(self) -> CodeSpace:
        return self._out_space

    @property
    def out_alpha(self) -> float:
        return self._out_alpha

    @property
    def rounding(self) -> str:
        return self._rounding

    @property
    def n_in(self) -> int:
        return int(self.weight.shape[0])

    @property
    def n_out(self) -> int:
        return int(self.weight.shape[1])

    @property
    def effective_scale(self) -> torch.Tensor:
        """``s[j] * alpha_in`` (float64): the float value of one unit of ``V[j]``."""
        return self.scale * self._in_alpha

    def set_in_mask(self, mask: Mask) -> None:
        """Change the input position's silent centre / radius (same code space)."""
        if not isinstance(mask, Mask) or mask.space != self.in_space:
            raise ValueError(f"mask must be a Mask over {self.in_space}, not {mask!r}")
        self._in_mask = mask

    # evaluation -----------------------------------------------------------------------
    def _check_input(self, q_in: torch.Tensor) -> None:
        check_codes(q_in, self.in_space, "q_in")
        if q_in.dim() < 1 or q_in.shape[-1] != self.n_in:
            raise ValueError(
                f"q_in must have last dimension N_in={self.n_in}, not shape {tuple(q_in.shape)}"
            )

    def integer_sum(self, q_in: torch.Tensor) -> torch.Tensor:
        """``V = qbar @ W`` (int64) for input codes ``q_in[..., N_in]`` (dead zone applied here)."""
        self._check_input(q_in)
        qbar = self._in_mask.project(q_in.to(torch.int64))
        return qbar @ self.weight.to(torch.int64)

    def preactivation(self, q_in: torch.Tensor) -> torch.Tensor:
        """``a = b + (s * alpha_in) * V`` in float64."""
        return self.bias + self.effective_scale * self.integer_sum(q_in).to(torch.float64)

    def forward(self, q_in: torch.Tensor) -> torch.Tensor:
        """Output codes ``q`` (int64, before the next position's dead zone)."""
        a = self.preactivation(q_in)
        lvl = level_of(a / self._out_alpha, self._rounding)
        return lvl.clamp(self._out_space.q_min, self._out_space.q_max).to(torch.int64)

    # integer form ---------------------------------------------------------------------
    def v_range(self) -> tuple[int, int]:
        """Exact range of ``V`` over all input codes (all neurons)."""
        sp, w = self.in_space, self.weight.to(torch.int64)
        hi = (w.clamp(min=0) * sp.q_max + w.clamp(max=0) * sp.q_min).sum(0)
        lo = (w.clamp(min=0) * sp.q_min + w.clamp(max=0) * sp.q_max).sum(0)
        return int(lo.min()), int(hi.max())

    def thresholds(self) -> torch.Tensor:
        """Non-increasing integer tables ``theta[N_out, T_out-1]`` reproducing :meth:`forward`."""
        return threshold_table(
            self.effective_scale,
            self.bias,
            self._out_alpha,
            self._out_space,
            self._rounding,
            v_range=self.v_range(),
        )

    def to_integer(self, out_mask: Mask | None = None) -> IntegerLayer:
        """The M-TTFS integer layer: weights, folded init ``B = mu_in * sum_i W``, thresholds.

        ``out_mask`` is the mask of the produced position (the next layer's input mask);
        by default the paper's global rule, code 0 silent, ``k = 0``.
        """
        if out_mask is None:
            out_mask = Mask.at_zero(self._out_space)
        if not isinstance(out_mask, Mask) or out_mask.space != self._out_space:
            raise ValueError(f"out_mask must be a Mask over {self._out_space}, not {out_mask!r}")
        w = self.weight.to(torch.int64)
        return IntegerLayer(
            weights=w,
            weight_bits=self._weight_bits,
            init=folded_init(w, self._in_mask.mu),
            theta=self.thresholds(),
            in_mask=self._in_mask,
            out_mask=out_mask,
        )

    def extra_repr(self) -> str:
        return (
            f"n_in={self.n_in}, n_out={self.n_out}, weight_bits={self._weight_bits}, "
            f"in={self.in_space} I_max={self._in_mask.i_max} k={self._in_mask.k}, "
            f"out={self._out_space}, rounding={self._rounding!r}"
        )


def _check_int(value: object, name: str, lo: int) -> int:
    check_integer(name, value)
    if value < lo:
        raise ValueError(f"{name} must be at least {lo}, not {value!r}")
    return value


def random_codes(
    shape: tuple[int, ...],
    space: CodeSpace,
    *,
    distribution: str = "peaked",
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Random input codes (int64): ``"peaked"`` at 0 (rounded Laplace) or ``"uniform"``."""
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {DISTRIBUTIONS}, not {distribution!r}")
    if distribution == "uniform":
        return torch.randint(space.q_min, space.q_max + 1, shape, generator=generator)
    # Laplace with scale T/16 levels: about a quarter of the codes at 0, like LayerNorm outputs
    u = torch.rand(shape, generator=generator, dtype=torch.float64) - 0.5
    lap = -torch.sign(u) * torch.log1p(-2 * u.abs()) * max(space.T / 16, 0.5)
    if space.family == "asym":
        lap = lap.abs()
    return torch.round(lap).clamp(space.q_min, space.q_max).to(torch.int64)


@dataclass
class QNNChain:
    """A chain of QNN linear layers; layer ``l``'s output position is layer ``l+1``'s input.

    Members
    -------
    layers : list of QNNLinear
    out_mask : Mask
        Mask of the last layer's output position.
    distribution : str
        Distribution of :meth:`random_input`.
    """

    layers: list[QNNLinear]
    out_mask: Mask
    distribution: str = "peaked"

    @property
    def in_space(self) -> CodeSpace:
        return self.layers[0].in_space

    def random_input(self, batch: int, *, seed: int = 0) -> torch.Tensor:
        """Input codes ``[batch, N_in]`` of this chain's distribution."""
        g = torch.Generator().manual_seed(seed)
        return random_codes(
            (batch, self.layers[0].n_in), self.in_space, distribution=self.distribution,
            generator=g,
        )

    def forward(self, q_in: torch.Tensor) -> list[torch.Tensor]:
        """Codes at every position: ``[q_in, q_1, ..., q_L]`` (pre-dead-zone)."""
        codes = [q_in]
        for layer in self.layers:
            codes.append(layer(codes[-1]))
        return codes

    __call__ = forward

    def masks(self) -> list[Mask]:
        """Mask of every position, input first."""
        return [layer.in_mask for layer in self.layers] + [self.out_mask]

    def integer_layers(self) -> list[IntegerLayer]:
        masks = self.masks()
        return [layer.to_integer(masks[i + 1]) for i, layer in enumerate(self.layers)]


def _pick_alpha(a: torch.Tensor, space: CodeSpace, distribution: str) -> float:
    """Output scale: narrow (codes peaked at 0) or wide (every level populated)."""
    spread = float(a.std()) if a.numel() > 1 else 1.0
    spread = spread if spread > 0 and math.isfinite(spread) else 1.0
    if distribution == "peaked":
        return spread / max(space.T / 8, 1.0)
    return 2.5 * spread / (space.T / 2) if space.family == "sym" else 2.5 * spread / space.T


def random_qnn(
    widths: tuple[int, ...] = (32, 24, 16, 8),
    *,
    T: int = 16,
    k: int = 0,
    families: tuple[str, ...] | None = None,
    weight_bits: int = 1,
    rounding: str = "floor",
    distribution: str = "peaked",
    calibration_batch: int = 256,
    near_tie: float = 0.0,
    seed: int = 0,
) -> QNNChain:
    """A seeded random QNN chain, calibrated on its own random inputs.

    Parameters
    ----------
    widths : tuple of int
        ``(N_0, N_1, ..., N_L)``: ``L = len(widths) - 1`` layers.
    T, k : int
        Levels per position and dead-zone radius of every position.
    families : tuple of str, optional
        Family of each of the ``L + 1`` positions; default all ``"sym"``.
    weight_bits : int
        1 (``+-1``) or 2..8.
    rounding : {"floor", "round"}
    distribution : {"peaked", "uniform"}
        ``"peaked"``: input codes peaked at 0 and narrow output scales, so every position
        peaks at (or next to) code 0 like the paper's LayerNorm outputs; ``"uniform"``:
        uniform input codes and wide output scales, so every level occurs (RTL coverage).
    calibration_batch : int
        Random input vectors used to pick each output scale and each ``I_max``.
    near_tie : float
        Passed to :func:`golden_models.calibration.select_i_max`.
    seed : int
    """
    if not isinstance(widths, (tuple, list)) or len(widths) < 2:
        raise ValueError(f"widths must list at least two layer widths, not {widths!r}")
    for w in widths:
        _check_int(w, "each width", 1)
    n_pos = len(widths)
    families = tuple(families) if families is not None else ("sym",) * n_pos
    if len(families) != n_pos:
        raise ValueError(f"families must name {n_pos} positions, not {len(families)}")
    spaces = [CodeSpace(T, f) for f in families]
    from golden_models.codespace import check_k

    check_k(k, T)
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {DISTRIBUTIONS}, not {distribution!r}")
    _check_int(calibration_batch, "calibration_batch", 1)
    _check_int(seed, "seed", 0)
    weight_range(weight_bits)
    check_rounding(rounding)

    g = torch.Generator().manual_seed(seed)
    q = random_codes((calibration_batch, widths[0]), spaces[0], distribution=distribution,
                     generator=g)
    in_mask = Mask(spaces[0], select_i_max(event_histogram(q, spaces[0]), spaces[0],
                                           near_tie=near_tie), k)
    in_alpha = 1.0
    layers: list[QNNLinear] = []
    for li in range(n_pos - 1):
        n_in, n_out = widths[li], widths[li + 1]
        w = torch.randn((n_in, n_out), generator=g, dtype=torch.float64) / math.sqrt(n_in)
        bias = 0.1 * torch.randn(n_out, generator=g, dtype=torch.float64)
        probe = QNNLinear.from_float(
            w, bias, weight_bits=weight_bits, in_mask=in_mask, in_alpha=in_alpha,
            out_space=spaces[li + 1], out_alpha=1.0, rounding=rounding,
        )
        alpha = _pick_alpha(probe.preactivation(q), spaces[li + 1], distribution)
        layer = QNNLinear(
            probe.weight, probe.scale, probe.bias, weight_bits=weight_bits, in_mask=in_mask,
            in_alpha=in_alpha, out_space=spaces[li + 1], out_alpha=alpha, rounding=rounding,
        )
        layers.append(layer)
        q = layer(q)
        i_max = select_i_max(event_histogram(q, spaces[li + 1]), spaces[li + 1],
                             near_tie=near_tie)
        in_mask, in_alpha = Mask(spaces[li + 1], i_max, k), alpha
    return QNNChain(layers, in_mask, distribution)


__all__ = [
    "DISTRIBUTIONS",
    "QNNChain",
    "QNNLinear",
    "quantize_weights",
    "random_codes",
    "random_qnn",
]
