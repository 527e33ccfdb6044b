"""A small QNN encoder block with the paper's eight spike-encoded positions.

The block follows BERT (post-LN), quantized throughout, with the paper's positions and
families (Table "Mode location", ``paper_tables.json`` "position_family"):

==================  ======  ============================================================
position            family  tensor
==================  ======  ============================================================
Q-proj. input       sym     LayerNorm-1 output, quantized for the Q projection
K-proj. input       sym     the same tensor, quantized for the K projection
V-proj. input       sym     the same tensor, quantized for the V projection
Query activation    sym     Q projection output (input of ``Q K^T``)
Attn. probability   asym    softmax output (input of ``P V``)
Attn.-out. input    sym     ``P V`` (input of the output projection)
FFN-expand input    sym     LayerNorm-2 output
FFN-contract input  asym    ReLU(FFN expand output)
==================  ======  ============================================================

Keys and values are 4-bit codes used as the weights of the two attention matmuls (the paper's
K/V operands, never spike-encoded); the outputs of the output projection and of the FFN
contraction are quantized too (``"O-proj. output"``, ``"FFN output"``) before the residual
adds. Every linear layer is a :class:`golden_models.qnn.QNNLinear` with ``+-1`` (or b-bit)
weights, so each converts exactly to an :class:`golden_models.IntegerLayer`. ReLU followed by
the asymmetric quantizer equals the asymmetric quantizer of the pre-activation (both give 0
for negative inputs, for either rounding mode), so the FFN expand layer's thresholds produce
the FFN-contract input codes directly.

All float arithmetic is float64 and every matmul over codes is an exact int64 matmul, so the
block is deterministic for a given seed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from golden_models.calibration import event_histogram, select_i_max
from golden_models.codespace import CodeSpace, check_k
from golden_models.integer_layer import IntegerLayer
from golden_models.mask import Mask
from golden_models.positions import POSITION_FAMILY, POSITIONS
from golden_models.qnn import QNNLinear, quantize_weights
from golden_models.quantizer import check_rounding, quantize
from golden_models.statistics import DEFAULT_KS, PositionStats

#: Quantized tensors that are not spike-encoded (weights of the attention matmuls, or
#: consumed by the residual adds).
INTERNAL = ("Key codes", "Value codes", "O-proj. output", "FFN output")
#: The linear layers, each with (input position, output position).
LINEARS = {
    "q_proj": ("Q-proj. input", "Query activation"),
    "k_proj": ("K-proj. input", "Key codes"),
    "v_proj": ("V-proj. input", "Value codes"),
    "attn_out": ("Attn.-out. input", "O-proj. output"),
    "ffn_expand": ("FFN-expand input", "FFN-contract input"),
    "ffn_contract": ("FFN-contract input", "FFN output"),
}
#: The exported chain of spike-encoded linear layers, in dataflow order.
CHAIN = ("attn_out", "ffn_expand", "ffn_contract")

# Scale of each quantizer as a multiple of its input's standard deviation: LayerNorm outputs
# at 0.7 sigma put about a quarter of the codes at 0 (the paper's 0.26-0.33), the rest at 0.5.
_ALPHA_FACTOR = {"Q-proj. input": 0.7, "K-proj. input": 0.7, "V-proj. input": 0.7,
                 "FFN-expand input": 0.7}


@dataclass(frozen=True)
class BlockOutput:
    """Result of one block forward pass.

    Members
    -------
    codes : dict
        Pre-dead-zone codes (int64) at each of the eight :data:`POSITIONS`.
    internal : dict
        Codes of the :data:`INTERNAL` tensors.
    out : torch.Tensor
        Block output (float64) ``[B, S, d_model]``.
    """

    codes: dict[str, torch.Tensor]
    internal: dict[str, torch.Tensor]
    out: torch.Tensor


def _layer_norm(x: torch.Tensor, gamma: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + 1e-5) * gamma + beta


class QNNEncoderBlock(torch.nn.Module):
    """A seeded random QNN encoder block (BERT layout, small dimensions by default).

    Parameters
    ----------
    d_model, n_heads, d_ff : int
        Width, heads (``d_model % n_heads == 0``) and FFN width.
    T : int
        Levels of every position (``2**n``).
    k : int
        Dead-zone radius of every spike-encoded position.
    weight_bits : int
        1 (``+-1``, the paper's W1) or 2..8.
    rounding : {"floor", "round"}
    seed : int
        Seeds the weights and the calibration batch.
    calibration_batch, calibration_seq : int
        Shape of the random calibration input that sets every scale and ``I_max``.
    near_tie : float
        Passed to :func:`golden_models.calibration.select_i_max`.
    """

    def __init__(
        self,
        d_model: int = 32,
        n_heads: int = 2,
        d_ff: int = 64,
        *,
        T: int = 16,
        k: int = 0,
        weight_bits: int = 1,
        rounding: str = "floor",
        seed: int = 0,
        calibration_batch: int = 4,
        calibration_seq: int = 16,
        near_tie: float = 0.0,
    ) -> None:
        for name, v in (("d_model", d_model), ("n_heads", n_heads), ("d_ff", d_ff),
                        ("calibration_batch", calibration_batch),
                        ("calibration_seq", calibration_seq)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive integer, not {v!r}")
        if d_model % n_heads:
            raise ValueError(f"d_model={d_model} must be a multiple of n_heads={n_heads}")
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer, not {seed!r}")
        spaces = {p: CodeSpace(T, f) for p, f in POSITION_FAMILY.items()}
        spaces.update({p: CodeSpace(T, "sym") for p in INTERNAL})
        check_k(k, T)
        check_rounding(rounding)
        super().__init__()
        self.d_model, self.n_heads, self.d_ff = d_model, n_heads, d_ff
        self._T, self._k, self._rounding = T, k, rounding
        self._weight_bits = weight_bits
        self._spaces = spaces
        self._near_tie = near_tie

        g = torch.Generator().manual_seed(seed)
        dims = {"q_proj": (d_model, d_model), "k_proj": (d_model, d_model),
                "v_proj": (d_model, d_model), "attn_out": (d_model, d_model),
                "ffn_expand": (d_model, d_ff), "ffn_contract": (d_ff, d_model)}
        self._float_w = {}
        for name, (n_in, n_out) in dims.items():
            w = torch.randn((n_in, n_out), generator=g, dtype=torch.float64) / math.sqrt(n_in)
            b = 0.05 * torch.randn(n_out, generator=g, dtype=torch.float64)
            self._float_w[name] = (w, b)
        for i in (1, 2):
            self.register_buffer(
                f"ln{i}_gamma", 1 + 0.1 * torch.randn(d_model, generator=g, dtype=torch.float64)
            )
            self.register_buffer(
                f"ln{i}_beta", 0.1 * torch.randn(d_model, generator=g, dtype=torch.float64)
            )
        # Scales and masks start at placeholders; the calibration pass below sets them in
        # dataflow order (each scale from the spread of the tensor it quantizes).
        self._alpha = {p: 1.0 for p in (*POSITIONS, *INTERNAL)}
        self._alpha["Attn. probability"] = 1.0 / T  # p in [0, 1] over T levels
        self._masks = {p: Mask.at_zero(spaces[p], k) for p in POSITIONS}
        self._masks.update({p: Mask.at_zero(spaces[p], 0) for p in INTERNAL})
        self.linears = torch.nn.ModuleDict()
        x = self.random_input(calibration_batch, calibration_seq, seed=seed + 1)
        self._run(x, calibrate_scales=True)
        self.calibrate(x)

    # parameters -------------------------------------------------------------------------
    @property
    def T(self) -> int:
        return self._T

    @property
    def k(self) -> int:
        return self._k

    @property
    def rounding(self) -> str:
        return self._rounding

    def space(self, position: str) -> CodeSpace:
        return self._spaces[position]

    def alpha(self, position: str) -> float:
        return self._alpha[position]

    def mask(self, position: str) -> Mask:
        return self._masks[position]

    def random_input(self, batch: int, seq: int, *, seed: int = 0) -> torch.Tensor:
        """Seeded Gaussian token embeddings ``[batch, seq, d_model]`` (float64)."""
        g = torch.Generator().manual_seed(seed)
        return torch.randn((batch, seq, self.d_model), generator=g, dtype=torch.float64)

    # evaluation -------------------------------------------------------------------------
    def _quant(self, position: str, a: torch.Tensor, calibrate: bool) -> torch.Tensor:
        if calibrate and position != "Attn. probability":
            std = float(a.std())
            self._alpha[position] = _ALPHA_FACTOR.get(position, 0.5) * (std if std > 0 else 1.0)
        return quantize(a, self._alpha[position], self._spaces[position], self._rounding)

    def _linear(self, name: str, calibrate: bool) -> QNNLinear:
        src, dst = LINEARS[name]
        if calibrate:
            w, b = self._float_w[name]
            wi, scale = quantize_weights(w, self._weight_bits)
            self.linears[name] = QNNLinear(
                wi, scale, b, weight_bits=self._weight_bits, in_mask=self._masks[src],
                in_alpha=self._alpha[src], out_space=self._spaces[dst], out_alpha=1.0,
                rounding=self._rounding,
            )
        return self.linears[name]

    def _apply(self, name: str, q_in: torch.Tensor, calibrate: bool) -> torch.Tensor:
        layer = self._linear(name, calibrate)
        if not calibrate:
            return layer(q_in)
        dst = LINEARS[name][1]
        a = layer.preactivation(q_in)
        q = self._quant(dst, a, True)  # sets alpha[dst]
        self.linears[name] = QNNLinear(
            layer.weight, layer.scale, layer.bias, weight_bits=self._weight_bits,
            in_mask=layer.in_mask, in_alpha=layer.in_alpha, out_space=layer.out_space,
            out_alpha=self._alpha[dst], rounding=self._rounding,
        )
        if not torch.equal(self.linears[name](q_in), q):  # one expression, so one result
            raise RuntimeError(f"{name}: QNNLinear codes differ from the block's quantizer")
        return q

    def _run(self, x: torch.Tensor, calibrate_scales: bool = False) -> BlockOutput:
        if not isinstance(x, torch.Tensor) or x.dim() != 3 or x.shape[-1] != self.d_model:
            shape = tuple(x.shape) if isinstance(x, torch.Tensor) else x
            raise ValueError(f"x must be a tensor [batch, seq, {self.d_model}], not {shape}")
        if not x.dtype.is_floating_point:
            raise TypeError(f"x must be floating point, not dtype {x.dtype}")
        cal = calibrate_scales
        x = x.to(torch.float64)
        B, S, _ = x.shape
        h, dk = self.n_heads, self.d_model // self.n_heads
        codes: dict[str, torch.Tensor] = {}
        internal: dict[str, torch.Tensor] = {}

        h1 = _layer_norm(x, self.ln1_gamma, self.ln1_beta)
        for p in ("Q-proj. input", "K-proj. input", "V-proj. input"):
            codes[p] = self._quant(p, h1, cal)
        codes["Query activation"] = self._apply("q_proj", codes["Q-proj. input"], cal)
        internal["Key codes"] = self._apply("k_proj", codes["K-proj. input"], cal)
        internal["Value codes"] = self._apply("v_proj", codes["V-proj. input"], cal)

        def heads(t: torch.Tensor) -> torch.Tensor:
            return t.reshape(B, S, h, dk).transpose(1, 2)  # [B, h, S, dk]

        # Q K^T: the consumer sees the dead-zone-projected query codes; keys are weights
        qbar = self._masks["Query activation"].project(codes["Query activation"])
        scores_int = heads(qbar) @ heads(internal["Key codes"]).transpose(-1, -2)
        unit = self._alpha["Query activation"] * self._alpha["Key codes"] / math.sqrt(dk)
        probs = torch.softmax(scores_int.to(torch.float64) * unit, dim=-1)  # [B, h, S, S]
        codes["Attn. probability"] = self._quant("Attn. probability", probs, cal)

        pbar = self._masks["Attn. probability"].project(codes["Attn. probability"])
        ctx_int = pbar @ heads(internal["Value codes"])  # [B, h, S, dk]
        ctx = (ctx_int.to(torch.float64) * (self._alpha["Attn. probability"]
                                           * self._alpha["Value codes"]))
        ctx = ctx.transpose(1, 2).reshape(B, S, self.d_model)
        codes["Attn.-out. input"] = self._quant("Attn.-out. input", ctx, cal)

        internal["O-proj. output"] = self._apply("attn_out", codes["Attn.-out. input"], cal)
        r1 = x + self._alpha["O-proj. output"] * internal["O-proj. output"].to(torch.float64)
        h2 = _layer_norm(r1, self.ln2_gamma, self.ln2_beta)
        codes["FFN-expand input"] = self._quant("FFN-expand input", h2, cal)
        codes["FFN-contract input"] = self._apply("ffn_expand", codes["FFN-expand input"], cal)
        internal["FFN output"] = self._apply("ffn_contract", codes["FFN-contract input"], cal)
        out = r1 + self._alpha["FFN output"] * internal["FFN output"].to(torch.float64)
        return BlockOutput({p: codes[p] for p in POSITIONS}, internal, out)

    def forward(self, x: torch.Tensor) -> BlockOutput:
        """Run the block on float embeddings ``x[B, S, d_model]``; codes at every position."""
        return self._run(x)

    # calibration and statistics ---------------------------------------------------------
    def calibrate(self, x: torch.Tensor) -> dict[str, int]:
        """Set every position's ``I_max`` from the histograms of a forward pass on ``x``.

        Positions are calibrated in dataflow order, each after its producers' masks are set,
        since a mask changes the codes downstream of it. Returns ``{position: I_max}``.
        """
        result = {}
        for p in POSITIONS:
            q = self._run(x).codes[p]
            i_max = select_i_max(event_histogram(q, self._spaces[p]), self._spaces[p],
                                 near_tie=self._near_tie)
            self._masks[p] = Mask(self._spaces[p], i_max, self._k)
            for layer_name, (src, _) in LINEARS.items():
                if src == p:
                    self.linears[layer_name].set_in_mask(self._masks[p])
            result[p] = i_max
        return result

    def stats(self, x: torch.Tensor, ks: tuple[int, ...] = DEFAULT_KS) -> list[PositionStats]:
        """:class:`PositionStats` of the eight positions on input ``x`` (masks as calibrated)."""
        out = self._run(x)
        return [
            PositionStats.from_codes(p, out.codes[p], self._spaces[p],
                                     i_max=self._masks[p].i_max, ks=ks)
            for p in POSITIONS
        ]

    # integer export ---------------------------------------------------------------------
    def integer_layers(self) -> dict[str, IntegerLayer]:
        """Every linear layer in integer form, keyed by name (see :data:`LINEARS`)."""
        return {
            name: layer.to_integer(self._masks[LINEARS[name][1]])
            for name, layer in self.linears.items()
        }

    def integer_chain(self) -> list[tuple[str, IntegerLayer]]:
        """The chain :data:`CHAIN` of three spike-encoded linear layers, in dataflow order.

        Each consumes a spike-encoded position (Attn.-out. input, FFN-expand input, FFN-contract
        input). FFN expand feeds FFN contract directly; between the output projection and FFN
        expand lie the residual add and LayerNorm-2, which stay outside the spiking domain.
        Use :meth:`chain_trace` for each layer's real input and output codes.
        """
        layers = self.integer_layers()
        return [(name, layers[name]) for name in CHAIN]

    def chain_trace(self, x: torch.Tensor) -> list[tuple[str, torch.Tensor, torch.Tensor]]:
        """``(name, input codes, output codes)`` of each chain layer on input ``x``."""
        out = self._run(x)
        every = {**out.codes, **out.internal}
        return [(n, every[LINEARS[n][0]], every[LINEARS[n][1]]) for n in CHAIN]


__all__ = [
    "CHAIN",
    "INTERNAL",
    "LINEARS",
    "POSITIONS",
    "POSITION_FAMILY",
    "BlockOutput",
    "QNNEncoderBlock",
]
