"""Model dimensions and the delivery/output counts of one encoder block, per spike-encoded position.

The paper's counts (Appendix "Energy Model and Unit Costs", Eqs. opt-fc and opto-score) for one
block with batch ``B``, sequence ``S``, width ``C``, FFN width ``F``, ``h`` heads, ``d_k = C/h``:

- linear-layer deliveries ``LIN = 4*B*S*C^2 + 2*B*S*C*F`` (each input element is delivered to
  every output channel of its layer: fan-out ``C_o``);
- attention deliveries ``ATT = 2*B*h*S^2*d_k`` (query activation into ``Q K^T``, attention
  probabilities into ``P V``);
- outputs ``N_out = 13*B*S*C`` at BERT-base, counting both attention matmuls as ``B*h*S^2``
  outputs (see ``attention_outputs`` in :class:`~energy_model.model.Options`);
- K/V elements ``KV = 2*B*S*C``, written once and read as weights.

Two generalisations keep the presets honest and reduce to the paper at BERT-base:
``kv_heads`` (grouped-query attention: K/V projections have ``kv_heads*d_k`` outputs) and
``ffn_linears`` (2 for a GELU FFN, 3 for LLaMA's SwiGLU: gate and up both read the FFN-expand
input). Decoder causality is not modelled: attention counts are full ``S^2``, as in the paper.

``weight_bits`` is the width of the linear layers' weights: 1 for the paper's BERT track ("a W1A4
QNN (1-bit weights, 4-bit activations ...)", Results), 4 for its LLaMA track ("converted from
4-bit-weight, 4-bit-activation QNNs", Section "Extended results for Larger model") and for our
MiniLM conversion (W4A4, ``docs/minilm.md``). :mod:`energy_model.model` reads it per weight access.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from golden_models.codespace import check_integer

#: Widest weight the model accepts (the paper uses 1 and 4).
MAX_WEIGHT_BITS = 8


def _check_positive_int(name: str, value: object) -> int:
    check_integer(name, value)
    if value < 1:
        raise ValueError(f"{name} must be >= 1, not {value!r}")
    return value


@dataclass(frozen=True)
class ModelDims:
    """Dimensions of a transformer and the workload of one energy estimate.

    Parameters
    ----------
    name : str
        Label for reports.
    hidden : int
        Width ``C``.
    ffn : int
        FFN width ``F``.
    heads : int
        Attention heads ``h``; ``hidden`` must be a multiple.
    layers : int
        Blocks ``L`` (the paper uses it only to amortize the pooler).
    kv_heads : int
        K/V heads (``heads`` unless grouped-query attention).
    ffn_linears : int
        Matrices in the FFN: 2 (expand, contract) or 3 (SwiGLU gate, up, down).
    batch : int
        ``B``.
    seq : int
        ``S``.
    source : str
        Where the dimensions come from.
    weight_bits : int
        Width of the linear layers' weights, 1..8 (the paper: 1 for BERT, 4 for LLaMA-2). Bits
        read per weight access, and the MAC the dense path pays (see :mod:`energy_model.model`).
    """

    name: str
    hidden: int
    ffn: int
    heads: int
    layers: int
    kv_heads: int | None = None
    ffn_linears: int = 2
    batch: int = 64
    seq: int = 128
    source: str = ""
    weight_bits: int = 1

    def __post_init__(self) -> None:
        for field in ("hidden", "ffn", "heads", "layers", "batch", "seq"):
            _check_positive_int(field, getattr(self, field))
        check_integer("weight_bits", self.weight_bits)
        if not 1 <= self.weight_bits <= MAX_WEIGHT_BITS:
            raise ValueError(
                f"weight_bits must be in 1..{MAX_WEIGHT_BITS}, not {self.weight_bits!r}"
            )
        if self.kv_heads is None:
            object.__setattr__(self, "kv_heads", self.heads)
        _check_positive_int("kv_heads", self.kv_heads)
        if self.hidden % self.heads:
            raise ValueError(f"hidden ({self.hidden}) must be a multiple of heads ({self.heads})")
        if self.heads % self.kv_heads:
            raise ValueError(
                f"heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads})"
            )
        if self.ffn_linears not in (2, 3):
            raise ValueError(f"ffn_linears must be 2 or 3, not {self.ffn_linears!r}")

    @property
    def d_k(self) -> int:
        return self.hidden // self.heads

    @property
    def kv_width(self) -> int:
        """Output width of the K and V projections (``kv_heads * d_k``)."""
        return self.kv_heads * self.d_k

    def with_workload(self, *, batch: int | None = None, seq: int | None = None) -> ModelDims:
        """A copy with another batch and/or sequence length."""
        return replace(
            self,
            batch=self.batch if batch is None else batch,
            seq=self.seq if seq is None else seq,
        )

    def to_json(self) -> dict:
        return {
            "name": self.name,
            "hidden": self.hidden,
            "ffn": self.ffn,
            "heads": self.heads,
            "kv_heads": self.kv_heads,
            "d_k": self.d_k,
            "layers": self.layers,
            "ffn_linears": self.ffn_linears,
            "weight_bits": self.weight_bits,
            "batch": self.batch,
            "seq": self.seq,
            "source": self.source,
        }


#: Presets. BERT-base is the paper's workload; LLaMA-2 dimensions are the published model cards
#: (Touvron et al. 2023, "Llama 2", Table 1 and the released configs: hidden, intermediate size,
#: heads, layers, key/value heads). Weight widths are the paper's: BERT is W1A4, LLaMA-2 W4A4;
#: MiniLM is our own W4A4 conversion (``networks.ptq``, ``weight_bits=4``).
PRESETS: dict[str, ModelDims] = {
    "bert-base": ModelDims(
        "bert-base",
        768,
        3072,
        12,
        12,
        source="BERT-base (Devlin et al. 2019); the paper's Appendix parameters B=64, S=128",
    ),
    "llama2-7b": ModelDims(
        "llama2-7b",
        4096,
        11008,
        32,
        32,
        kv_heads=32,
        ffn_linears=3,
        weight_bits=4,
        source="LLaMA-2 7B published config (hidden 4096, intermediate 11008, 32 heads, 32 layers)",
    ),
    "llama2-13b": ModelDims(
        "llama2-13b",
        5120,
        13824,
        40,
        40,
        kv_heads=40,
        ffn_linears=3,
        weight_bits=4,
        source="LLaMA-2 13B published config (hidden 5120, intermediate 13824, 40 heads, "
        "40 layers)",
    ),
    "llama2-70b": ModelDims(
        "llama2-70b",
        8192,
        28672,
        64,
        80,
        kv_heads=8,
        ffn_linears=3,
        weight_bits=4,
        source="LLaMA-2 70B published config (hidden 8192, intermediate 28672, 64 heads, "
        "8 key/value heads, 80 layers)",
    ),
    "minilm-l6": ModelDims(
        "minilm-l6",
        384,
        1536,
        12,
        6,
        weight_bits=4,
        source="all-MiniLM-L6-v2 config (hidden 384, intermediate 1536, 12 heads, 6 layers), "
        "our W4A4 conversion (docs/minilm.md); B=64, S=128 as in the paper",
    ),
}


def preset(name: object) -> ModelDims:
    """The preset called ``name`` (see :data:`PRESETS`)."""
    if not isinstance(name, str) or name not in PRESETS:
        raise ValueError(f"unknown preset {name!r}; valid presets: {', '.join(PRESETS)}")
    return PRESETS[name]


@dataclass(frozen=True)
class PositionCounts:
    """Counts charged to one spike-encoded position (and the layer that consumes it).

    Parameters
    ----------
    position : str
    attention : bool
        The consuming operation is an attention matmul (its weights are K or V operands).
    deliveries : int
        Operand deliveries: elements times fan-out.
    outputs : int
        Output neurons of the consuming layer.
    kv_elements : int
        K or V elements this layer writes (K- and V-projection only).
    """

    position: str
    attention: bool
    deliveries: int
    outputs: int
    kv_elements: int


def position_counts(
    dims: ModelDims, *, attention_outputs: str = "paper"
) -> tuple[PositionCounts, ...]:
    """The eight positions' counts for one block.

    ``attention_outputs="paper"`` counts the ``P V`` outputs as ``B*h*S^2`` like ``Q K^T`` (the
    paper's ``N_out = 13*B*S*C``); ``"exact"`` counts them as ``B*h*S*d_k``.
    """
    if attention_outputs not in ("paper", "exact"):
        raise ValueError(f"attention_outputs must be 'paper' or 'exact', not {attention_outputs!r}")
    B, S, C, F = dims.batch, dims.seq, dims.hidden, dims.ffn
    h, dk, ckv = dims.heads, dims.d_k, dims.kv_width
    bs = B * S
    att = B * h * S * S * dk
    pv_out = B * h * S * S if attention_outputs == "paper" else B * h * S * dk
    expand = dims.ffn_linears - 1  # matrices that read the FFN-expand input
    return (
        PositionCounts("Q-proj. input", False, bs * C * C, bs * C, 0),
        PositionCounts("K-proj. input", False, bs * C * ckv, bs * ckv, bs * ckv),
        PositionCounts("V-proj. input", False, bs * C * ckv, bs * ckv, bs * ckv),
        PositionCounts("Query activation", True, att, B * h * S * S, 0),
        PositionCounts("Attn. probability", True, att, pv_out, 0),
        PositionCounts("Attn.-out. input", False, bs * C * C, bs * C, 0),
        PositionCounts("FFN-expand input", False, expand * bs * C * F, expand * bs * F, 0),
        PositionCounts("FFN-contract input", False, bs * F * C, bs * C, 0),
    )


def block_totals(dims: ModelDims, *, attention_outputs: str = "paper") -> dict[str, int]:
    """``LIN``, ``ATT``, ``N8``, ``N_out`` and ``KV`` of one block (the paper's symbols)."""
    counts = position_counts(dims, attention_outputs=attention_outputs)
    lin = sum(c.deliveries for c in counts if not c.attention)
    att = sum(c.deliveries for c in counts if c.attention)
    return {
        "LIN": lin,
        "ATT": att,
        "N8": lin + att,
        "N_out": sum(c.outputs for c in counts),
        "KV": sum(c.kv_elements for c in counts),
    }
