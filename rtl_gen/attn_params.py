"""Parameters and bit layouts of the attention hardware (docs/rtl_attention.md).

:class:`AttentionConfig` holds what the attention path's Verilog depends on: heads, head
dimension ``d_k``, the longest sequence ``seq_max``, ``T`` and the softmax's fixed widths; every
width is a property derived from them here, once. The integer constants of a model (masks,
the softmax's multiplier and shift, the two walk tables) are loaded at run time through the
``load`` port, so one generated design serves every model of its size.

Code spaces are those of the attention positions of an encoder block (golden_models.positions):
the query and the key and value codes are symmetric (``sym``), the ``attn_prob`` codes
asymmetric (``asym``), the ``attn_out_in`` codes symmetric, all with ``T`` levels.

The block registry builds components from an :class:`rtl_gen.params.RTLConfig`;
:meth:`AttentionConfig.from_rtl` is that mapping (heads = ``mesh_rows``, ``d_k`` = ``n_in``,
``seq_max`` = ``tile_neurons``), so ``matterhorn generate`` writes an attention path of the
configuration's size.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from amaranth.hdl import signed
from amaranth.lib import data

from golden_models.bounds import accumulator_bound, signed_width
from golden_models.codespace import CodeSpace
from golden_models.int_softmax import MULT_BITS, PROB_BITS, recip_bits
from rtl_gen.params import (
    MAX_MESH,
    MAX_T,
    RTLConfig,
    bits_for,
    check_config,
    check_int,
    index_width,
)

__all__ = [
    "ATTN_TARGETS",
    "MAX_HEAD_DIM",
    "MAX_SCORE_BITS",
    "MAX_SEQ",
    "SOFTMAX_ROW_MAX",
    "AttentionConfig",
    "attn_config_layout",
    "attn_load_layout",
    "kv_write_layout",
    "score_layout",
    "sequence_layout",
]

#: Largest head dimension and sequence the generator builds.
MAX_HEAD_DIM = 256
MAX_SEQ = 256
#: Widest raw score: a flit's ``t`` field (16 bits) carries it and a ``last`` bit.
MAX_SCORE_BITS = 15
#: The row length the softmax contract sizes its reciprocal for: MiniLM's and BERT's longest
#: sequence (``max_position_embeddings``), ``IntSoftmax.row_max`` of
#: :func:`networks.integer.build_block`; the reciprocal's width ``Pd`` follows from it.
SOFTMAX_ROW_MAX = 512

#: Values of the attention path's ``load.target`` (docs/rtl_attention.md, "Load").
ATTN_TARGETS = {
    "config": 0,      # masks and the softmax multiplier: attn_config_layout (every head)
    "prob_table": 1,  # addr t: theta_prob[t] over u (every head)
    "ctx_table": 2,   # addr t: theta_ctx[t] over the raw context sums (every head)
    "sequence": 3,    # a sequence starts: sequence_layout (length, valid keys; every head)
    "key": 4,         # node = head, addr = key slot: kv_write_layout
    "value": 5,       # node = head, addr = key slot: kv_write_layout
}


@dataclass(frozen=True)
class AttentionConfig:
    """Parameters of the attention path (validated on construction).

    Parameters
    ----------
    heads : int
        Heads, one mesh row each, 1..16.
    head_dim : int
        ``d_k``, 1..256.
    seq_max : int
        Longest sequence (key slots of a head), 1..256.
    T : int
        Levels and time steps of every attention position, ``2**n`` with ``n`` in 1..6.
    frac_bits : int
        ``Ft``: fraction bits of the softmax exponent (its table has ``2**Ft`` entries), 1..8.
    row_max : int
        The row length the softmax contract sizes its reciprocal for (``Pd``); the golden
        :class:`golden_models.int_softmax.IntSoftmax`'s ``row_max``, ``seq_max..4096``.
    kv_pack : int or None
        Key or value codes per write beat, a divisor of ``head_dim``; ``None``: ``head_dim``.

    Raises
    ------
    TypeError, ValueError
        On the first invalid field, naming it and the valid range.
    """

    heads: int = 2
    head_dim: int = 8
    seq_max: int = 8
    T: int = 16
    frac_bits: int = 6
    row_max: int = SOFTMAX_ROW_MAX
    kv_pack: int | None = None

    def __post_init__(self) -> None:
        check_int("heads", self.heads, 1, MAX_MESH)
        check_int("head_dim", self.head_dim, 1, MAX_HEAD_DIM)
        check_int("seq_max", self.seq_max, 1, MAX_SEQ)
        T = check_int("T", self.T, 2, MAX_T)
        if T & (T - 1):
            raise ValueError(f"T must be a power of two 2**n with n in 1..6, not {T!r}")
        check_int("frac_bits", self.frac_bits, 1, 8)
        check_int("row_max", self.row_max, self.seq_max, 4096)
        if self.kv_pack is None:
            object.__setattr__(self, "kv_pack", self.head_dim)
        check_int("kv_pack", self.kv_pack, 1, self.head_dim)
        if self.head_dim % self.kv_pack:
            raise ValueError(f"kv_pack must divide head_dim={self.head_dim}, not "
                             f"{self.kv_pack!r}")
        if self.score_bits > MAX_SCORE_BITS:
            raise ValueError(
                f"head_dim={self.head_dim} at T={T} needs {self.score_bits}-bit scores; a flit "
                f"carries {MAX_SCORE_BITS} (head_dim at most {self.max_head_dim(T)})")

    @staticmethod
    def max_head_dim(T: int) -> int:
        """The largest head dimension whose raw scores fit a flit at ``T``."""
        m = CodeSpace(T, "sym").max_abs ** 2
        return min(MAX_HEAD_DIM, (2 ** (MAX_SCORE_BITS - 1) - 1) // m)

    @classmethod
    def from_rtl(cls, config: RTLConfig) -> AttentionConfig:
        """The attention path of an :class:`RTLConfig` (the block registry's factories):
        ``heads = mesh_rows``, ``head_dim = n_in``, ``seq_max = tile_neurons``, its ``T``."""
        check_config(config)
        return cls(heads=config.mesh_rows, head_dim=min(config.n_in, cls.max_head_dim(config.T)),
                   seq_max=config.tile_neurons, T=config.T)

    def as_dict(self) -> dict[str, object]:
        return asdict(self)

    # -- code spaces -------------------------------------------------------------------------------

    @property
    def query_space(self) -> CodeSpace:
        return CodeSpace(self.T, "sym")

    @property
    def kv_space(self) -> CodeSpace:
        return CodeSpace(self.T, "sym")

    @property
    def prob_space(self) -> CodeSpace:
        return CodeSpace(self.T, "asym")

    @property
    def ctx_space(self) -> CodeSpace:
        return CodeSpace(self.T, "sym")

    @property
    def time_width(self) -> int:
        return self.T.bit_length() - 1

    @property
    def code_bits(self) -> int:
        """Bits of a key or value code (two's complement)."""
        return self.time_width

    @property
    def kv_groups(self) -> int:
        """Write beats per key (or value) vector: ``head_dim / kv_pack``."""
        return self.head_dim // self.kv_pack

    # -- the query x key tile ----------------------------------------------------------------------

    def score_tile(self) -> RTLConfig:
        """The tile geometry of the query x key product: ``head_dim`` rows (one per query
        dimension), ``seq_max`` neurons (one per key slot), key codes as weights."""
        return RTLConfig(T=self.T, k=0, family="sym", weight_bits=self.code_bits,
                         n_in=self.head_dim, tile_neurons=self.seq_max, mesh_rows=1,
                         mesh_cols=1)

    @property
    def score_bound(self) -> int:
        """Largest ``|A|`` of a raw score: ``d_k * max|q| * max|k|``."""
        return self.head_dim * self.query_space.max_abs * self.kv_space.max_abs

    @property
    def score_bits(self) -> int:
        return signed_width(self.score_bound)

    # -- the probability x value tile --------------------------------------------------------------

    def context_tile(self) -> RTLConfig:
        """The tile geometry of the probability x value product: ``seq_max`` rows (one per
        key slot), ``head_dim`` neurons, value codes as weights, one comparator group."""
        return RTLConfig(T=self.T, k=0, family="asym", weight_bits=self.code_bits,
                         n_in=self.seq_max, tile_neurons=self.head_dim, mesh_rows=1,
                         mesh_cols=1)

    @property
    def ctx_acc_bound(self) -> int:
        return accumulator_bound(self.seq_max, self.code_bits, self.prob_space)

    @property
    def ctx_theta_width(self) -> int:
        return signed_width(self.ctx_acc_bound + 1)

    # -- the softmax unit --------------------------------------------------------------------------

    def softmax_unit(self) -> RTLConfig:
        """The configuration of the softmax unit (:class:`rtl_gen.softmax.Softmax`) each head's
        softmax node holds: its reciprocal sized for ``row_max`` (the golden ``IntSoftmax``'s
        ``Pd``; the row buffer as deep), this design's score width and ``Ft``."""
        return RTLConfig(T=self.T, seq_len=self.row_max, score_bits=self.score_bits,
                         exp_frac_bits=self.frac_bits, head_dim=self.head_dim)

    @property
    def recip_bits(self) -> int:
        """``Pd`` of the softmax contract (:func:`golden_models.int_softmax.recip_bits`)."""
        return recip_bits(self.row_max)

    @property
    def shift_bits(self) -> int:
        """Bits of the multiplier's shift ``S`` (``0 .. 62 - score_bits - 16``)."""
        return bits_for(62 - self.score_bits - MULT_BITS)

    @property
    def prob_theta_width(self) -> int:
        """Thresholds over ``u`` lie in ``0 .. 2**Pu + 1`` (unsigned)."""
        return (2**PROB_BITS + 1).bit_length()

    # -- the mesh ----------------------------------------------------------------------------------

    @property
    def slot_width(self) -> int:
        return index_width(self.seq_max)

    @property
    def dim_width(self) -> int:
        return index_width(self.head_dim)

    @property
    def flit_addr_width(self) -> int:
        return max(self.slot_width, self.dim_width)

    @property
    def flit_value_width(self) -> int:
        """A flit's ``t`` field: the value (a raw score or an event time) and a ``last`` bit."""
        return max(self.score_bits, self.time_width) + 1

    @property
    def global_dim_width(self) -> int:
        """A query or output address ``h * d_k + d``."""
        return index_width(self.heads * self.head_dim)

    def derived(self) -> dict[str, object]:
        """Every derived width, for the manifest."""
        return {
            "score_bits": self.score_bits, "score_bound": self.score_bound,
            "score_acc_width": self.score_tile().acc_width,
            "ctx_acc_bound": self.ctx_acc_bound, "ctx_acc_width": self.context_tile().acc_width,
            "ctx_theta_width": self.ctx_theta_width, "recip_bits": self.recip_bits,
            "prob_theta_width": self.prob_theta_width,
            "kv_groups": self.kv_groups, "flit_value_width": self.flit_value_width,
        }


# -- layouts ---------------------------------------------------------------------------------------


def score_layout(cfg: AttentionConfig) -> data.StructLayout:
    """A raw score on its way to the softmax unit: key slot, score, ``last`` (a marker)."""
    return data.StructLayout({"addr": cfg.slot_width, "score": signed(cfg.score_bits),
                              "last": 1})


def kv_write_layout(cfg: AttentionConfig) -> data.StructLayout:
    """A key or value write: slot, group ``g`` (codes ``g*kv_pack ..``), ``kv_pack`` codes."""
    return data.StructLayout({
        "slot": cfg.slot_width,
        "group": index_width(cfg.kv_groups),
        "codes": data.ArrayLayout(signed(cfg.code_bits), cfg.kv_pack),
    })


def sequence_layout(cfg: AttentionConfig) -> data.StructLayout:
    """A sequence's start: its length ``1..seq_max`` and the valid bit of every key slot."""
    return data.StructLayout({"length": bits_for(cfg.seq_max), "valid": cfg.seq_max})


def attn_config_layout(cfg: AttentionConfig) -> data.StructLayout:
    """The configuration word: the three masks (silent centre, radius) and the softmax's
    multiplier ``M`` and shift ``S``."""
    tw = cfg.time_width
    return data.StructLayout({
        "i_max_q": tw, "k_q": tw, "i_max_p": tw, "k_p": tw, "i_max_c": tw, "k_c": tw,
        "mult": MULT_BITS, "shift": cfg.shift_bits,
    })


def attn_load_layout(cfg: AttentionConfig) -> data.StructLayout:
    """The ``load`` beat: head (``node``), target (:data:`ATTN_TARGETS`), address, data."""
    data_width = max(attn_config_layout(cfg).size, kv_write_layout(cfg).size,
                     sequence_layout(cfg).size, cfg.prob_theta_width, cfg.ctx_theta_width)
    return data.StructLayout({
        "node": index_width(cfg.heads),
        "target": 3,
        "addr": max(cfg.slot_width, cfg.time_width),
        "data": data_width,
    })
