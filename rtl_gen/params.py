"""Generator parameters: one validated configuration and the widths derived from it.

Every width of the generated hardware is a property of :class:`RTLConfig`, so the components,
the image packer, the manifest and the test benches agree on one definition. The accumulator
width comes from :func:`golden_models.accumulator_bound`, which bounds every partial sum for any
``I_max``, any event order and any weights, so no membrane can overflow.

The configuration checks live here too: :func:`check_config` and :class:`ConfigComponent` for the
components built from one configuration (encoder, tile, system), on
:func:`toolkit_base.checks.check_int` (re-exported here), so each check and its message exist once.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from amaranth.lib import wiring
from amaranth.lib.wiring import Out

from golden_models import FAMILIES, CodeSpace, accumulator_bound, signed_width, weight_range
from golden_models.bounds import score_bits
from golden_models.counters import COUNTER_NAMES
from golden_models.positions import POSITION_FAMILY
from toolkit_base.checks import MAX_RTL_T, check_int

__all__ = [
    "AXIS_WIDTHS",
    "MAX_MESH",
    "MAX_T",
    "ConfigComponent",
    "RTLConfig",
    "bits_for",
    "check_config",
    "check_int",
    "counter_ports",
    "port_values",
    "index_width",
    "unit_fields",
]

#: The generator supports ``T = 2**n`` with ``n`` in 1..6 (one home: :mod:`toolkit_base.checks`).
MAX_T = MAX_RTL_T
#: Upper limits that keep elaboration and the SRAM images of a tile reasonable.
MAX_N_IN = 4096
MAX_TILE_NEURONS = 256
#: Largest mesh side: 16x16 (256 nodes) generates in about 140 s of CPU with 2 GB peak memory
#: and a 38 MB ``mttfs_system.v`` (one Verilog module per instance); both grow with the node
#: count, so 32x32 would be about 150 MB and 8 GB (docs/rtl_system.md "Scale").
MAX_MESH = 16
#: Longest row of the non-linear units (the golden units' ``MAX_ROW``, docs/integer_contract.md).
MAX_ROW = 4096
#: TDATA widths of the AXI4-Stream ports of the AXI wrappers (whole bytes, docs/rtl_axi.md).
AXIS_WIDTHS = (8, 16, 32, 64)


def bits_for(n: int) -> int:
    """Bits of an unsigned register that holds ``0..n`` (at least one)."""
    return max(int(n).bit_length(), 1)


def index_width(n: int) -> int:
    """Bits of an index ``0..n-1`` (at least one, so every field exists in Verilog)."""
    return max((int(n) - 1).bit_length(), 1)


@dataclass(frozen=True)
class RTLConfig:
    """Parameters of the generated hardware (validated on construction).

    Parameters
    ----------
    T : int
        Time steps and activation levels, ``2**n`` with ``n`` in 1..6.
    k : int
        Dead-zone radius ``0..T-1`` of the output mask (tile) and of the encoder's mask.
    family : {"sym", "asym"}
        Code family of the layer input (encoder codes, accumulator bound).
    i_max_in, i_max_out : int or None
        Silent centres of the consumed and produced positions, ``0..T-1``; ``None`` means
        ``c`` (code 0 silent).
    weight_bits : int
        1 (weights +-1) or a signed width 2..8.
    n_in : int
        Input addresses of a tile (weight rows) and encoder vector length, 1..4096.
    tile_neurons : int
        Output neurons ``N`` of a tile, 1..256.
    lanes : int or None
        Comparator lanes ``L`` of the fire phase, ``1..N``; ``None`` means ``N``.
    mesh_rows, mesh_cols : int
        Mesh size, 1..16 each (MAX_MESH).
    sram_macro : bool
        Emit ``mttfs_sram`` as a wrapper around a black-box macro.
    raw_sums : bool
        The tiles emit their integer sums instead of firing (docs/rtl_tile.md, "Raw sums"):
        for the layers that feed softmax or a residual add.
    seq_len : int
        Longest row of the softmax unit (the model's longest sequence), 2..4096.
    head_dim : int
        ``d_k``: products in a raw attention score (with ``T``, the scores' width).
    score_bits : int or None
        Signed width of the raw scores; ``None`` means the width of the scores' range
        (:func:`golden_models.bounds.score_bits`); a narrower one is refused.
    hidden : int
        Row of the residual-add + LayerNorm unit (the model's hidden size), 2..4096.
    ffn_dim : int
        The FFN width: the fan-in of the second FFN layer, whose sums the unit adds.
    residual_bits, guard_bits : int
        Signed width of the residual stream (4..24) and the guard bits of its sum (0..12).
    exp_frac_bits : int
        Fraction bits of the softmax exponent (its ``EXP2`` table has ``2**exp_frac_bits``
        entries), 1..12.
    axil_addr_width : int
        Address bits of the AXI wrappers' AXI4-Lite slave, 8..32; the register map must fit
        (checked by :mod:`rtl_gen.axi`, docs/rtl_axi.md).
    axis_width : int
        TDATA bits of the AXI wrappers' AXI4-Stream ports: 8, 16, 32 or 64.

    Raises
    ------
    TypeError, ValueError
        On the first invalid field, naming it and the valid range.
    """

    T: int = 16
    k: int = 1
    family: str = "sym"
    i_max_in: int | None = None
    i_max_out: int | None = None
    weight_bits: int = 1
    n_in: int = 16
    tile_neurons: int = 8
    lanes: int | None = None
    mesh_rows: int = 2
    mesh_cols: int = 2
    sram_macro: bool = False
    raw_sums: bool = False
    seq_len: int = 16
    head_dim: int = 8
    score_bits: int | None = None
    hidden: int = 16
    ffn_dim: int = 64
    residual_bits: int = 16
    guard_bits: int = 5
    exp_frac_bits: int = 6
    axil_addr_width: int = 16
    axis_width: int = 32

    def __post_init__(self) -> None:
        T = check_int("T", self.T, 2, MAX_T)
        if T & (T - 1):
            raise ValueError(f"T must be a power of two 2**n with n in 1..6, not {T!r}")
        check_int("k", self.k, 0, T - 1)
        if self.family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, not {self.family!r}")
        for name in ("i_max_in", "i_max_out"):
            value = getattr(self, name)
            if value is None:
                object.__setattr__(self, name, self.space.c)
            else:
                check_int(name, value, 0, T - 1)
        check_int("weight_bits", self.weight_bits, 1, 8)
        check_int("n_in", self.n_in, 1, MAX_N_IN)
        check_int("tile_neurons", self.tile_neurons, 1, MAX_TILE_NEURONS)
        if self.lanes is None:
            object.__setattr__(self, "lanes", self.tile_neurons)
        else:
            check_int("lanes", self.lanes, 1, self.tile_neurons)
        check_int("mesh_rows", self.mesh_rows, 1, MAX_MESH)
        check_int("mesh_cols", self.mesh_cols, 1, MAX_MESH)
        for name in ("sram_macro", "raw_sums"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, not {getattr(self, name)!r}")
        check_int("axil_addr_width", self.axil_addr_width, 8, 32)
        check_int("axis_width", self.axis_width, 8, 64)
        if self.axis_width not in AXIS_WIDTHS:
            raise ValueError(f"axis_width must be one of {AXIS_WIDTHS}, not {self.axis_width}")
        self._check_units()

    def _check_units(self) -> None:
        """The non-linear units' parameters (docs/rtl_units.md); the widths their constants
        need are checked when a unit is built, against the golden units' bounds."""
        check_int("seq_len", self.seq_len, 2, MAX_ROW)
        check_int("head_dim", self.head_dim, 1, MAX_ROW)
        check_int("hidden", self.hidden, 2, MAX_ROW)
        check_int("ffn_dim", self.ffn_dim, 1, 4 * MAX_ROW)
        check_int("residual_bits", self.residual_bits, 4, 24)
        check_int("guard_bits", self.guard_bits, 0, 12)
        check_int("exp_frac_bits", self.exp_frac_bits, 1, 12)
        need = self.score_range_bits
        if self.score_bits is not None:
            check_int("score_bits", self.score_bits, 2, 24)  # the range needs at most 24
            if self.score_bits < need:
                raise ValueError(
                    f"score_bits={self.score_bits} cannot hold the scores of head_dim "
                    f"{self.head_dim} at T={self.T}; at least {need}")

    # -- code space ------------------------------------------------------------------------------

    @property
    def space(self) -> CodeSpace:
        return CodeSpace(self.T, self.family)

    @property
    def c(self) -> int:
        return self.space.c

    @property
    def time_width(self) -> int:
        """Bits of an event time ``0..T-1``."""
        return self.T.bit_length() - 1

    @property
    def d_width(self) -> int:
        """Bits of the signed centred value ``d = i_max_in - tau`` (``|d| <= T-1``)."""
        return self.time_width + 1

    # -- tile geometry ---------------------------------------------------------------------------

    @property
    def groups(self) -> int:
        """Comparator groups ``G = ceil(N / L)``."""
        return -(-self.tile_neurons // self.lanes)

    @property
    def in_addr_width(self) -> int:
        return index_width(self.n_in)

    @property
    def out_addr_width(self) -> int:
        return index_width(self.tile_neurons)

    @property
    def w_max(self) -> int:
        lo, hi = weight_range(self.weight_bits)
        return max(-lo, hi)

    @property
    def acc_bound(self) -> int:
        """Largest ``|V|`` of any partial sum (:func:`golden_models.accumulator_bound`)."""
        return accumulator_bound(self.n_in, self.weight_bits, self.space)

    @property
    def acc_width(self) -> int:
        return signed_width(self.acc_bound)

    @property
    def init_bound(self) -> int:
        """Largest accepted ``|B[j]|``: keeps ``|B| + n_in*w_max*(T-1)`` within ``acc_bound``."""
        return self.n_in * self.w_max * self.space.max_abs

    @property
    def theta_width(self) -> int:
        """Thresholds are clamped to ``[-acc_bound, acc_bound + 1]`` (no comparison changes)."""
        return signed_width(self.acc_bound + 1)

    @property
    def weight_row_width(self) -> int:
        return self.tile_neurons * self.weight_bits

    @property
    def theta_row_width(self) -> int:
        return self.lanes * self.theta_width

    @property
    def init_row_width(self) -> int:
        return self.lanes * self.acc_width

    @property
    def config_width(self) -> int:
        return 3 * self.time_width

    @property
    def theta_depth(self) -> int:
        return (self.T - 1) * self.groups

    @property
    def load_addr_width(self) -> int:
        return index_width(max(self.n_in, self.theta_depth, self.groups))

    @property
    def load_data_width(self) -> int:
        return max(self.weight_row_width, self.theta_row_width, self.init_row_width,
                   self.config_width)

    # -- non-linear units -------------------------------------------------------------------------

    @property
    def score_width(self) -> int:
        """Signed width of the raw scores: ``score_bits``, or the range's width when it is
        ``None`` (kept ``None`` in the parameters, so a configuration derived with another
        ``T`` or ``head_dim`` gets its own)."""
        return self.score_range_bits if self.score_bits is None else self.score_bits

    @property
    def score_range_bits(self) -> int:
        """Width of the raw scores' range: ``head_dim`` products of a query and a key code."""
        space = CodeSpace(self.T, POSITION_FAMILY["Query activation"])
        return score_bits(space, space, self.head_dim)

    @property
    def sum_bits(self) -> int:
        """Width of the residual sum, the LayerNorm's input (``residual_bits + guard_bits``)."""
        return self.residual_bits + self.guard_bits

    @property
    def residual_bound(self) -> int:
        """Largest ``|V|`` of the sums entering a residual add: the attention-output layer's
        (fan-in ``hidden``) and the second FFN layer's (fan-in ``ffn_dim``) accumulator bounds,
        each over its input's code space."""
        attn = CodeSpace(self.T, POSITION_FAMILY["Attn.-out. input"])
        ffn = CodeSpace(self.T, POSITION_FAMILY["FFN-contract input"])
        return max(accumulator_bound(self.hidden, self.weight_bits, attn),
                   accumulator_bound(self.ffn_dim, self.weight_bits, ffn))

    @property
    def residual_sum_width(self) -> int:
        return signed_width(self.residual_bound)

    # -- counters --------------------------------------------------------------------------------

    @property
    def tile_counters(self) -> dict[str, int]:
        """Counter name -> width, in the order of :data:`golden_models.counters.COUNTER_NAMES`."""
        n, e = self.tile_neurons, self.n_in
        compares = bits_for(n * (self.T - 1))
        widths = {
            "events_in": bits_for(e),
            "weight_row_reads": bits_for(e),
            "accumulate_ops": bits_for(e * n),
            "compare_ops": compares,
            "threshold_reads": compares,
            "events_out": bits_for(n),
            "events_suppressed": bits_for(n),
        }
        return {name: widths[name] for name in COUNTER_NAMES}

    @property
    def encoder_counters(self) -> dict[str, int]:
        return {"events_out": bits_for(self.n_in), "events_suppressed": bits_for(self.n_in)}

    # -- export ----------------------------------------------------------------------------------

    def as_dict(self) -> dict[str, object]:
        return dataclasses.asdict(self)

    def derived(self) -> dict[str, object]:
        """Every derived width and bound, for the manifest."""
        return {
            "c": self.c,
            "time_width": self.time_width,
            "d_width": self.d_width,
            "in_addr_width": self.in_addr_width,
            "out_addr_width": self.out_addr_width,
            "groups": self.groups,
            "w_max": self.w_max,
            "acc_bound": self.acc_bound,
            "acc_bound_formula": "n_in * w_max * (max|q| + T - 1) "
            "(golden_models.accumulator_bound): every partial sum B + sum W*d, "
            "|B| <= init_bound, |d| <= T-1",
            "acc_width": self.acc_width,
            "acc_width_formula": "golden_models.signed_width(acc_bound)",
            "init_bound": self.init_bound,
            "theta_width": self.theta_width,
            "theta_clamp": [-self.acc_bound, self.acc_bound + 1],
            "weight_row_width": self.weight_row_width,
            "theta_row_width": self.theta_row_width,
            "init_row_width": self.init_row_width,
            "theta_depth": self.theta_depth,
            "load_addr_width": self.load_addr_width,
            "load_data_width": self.load_data_width,
            "score_width": self.score_width,
            "sum_bits": self.sum_bits,
            "residual_bound": self.residual_bound,
            "residual_sum_width": self.residual_sum_width,
        }


def unit_fields(*, hidden: int, heads: int, ffn: int, seq_len: int) -> dict[str, int]:
    """The :class:`RTLConfig` fields of the non-linear units for a model's dimensions.

    ``hidden``, ``heads`` and ``ffn`` are the model's hidden size, attention heads and FFN
    width; ``seq_len`` the longest row its softmax takes (for the BERT family the golden
    softmax is built for ``max_position_embeddings``, docs/integer_contract.md). Returns
    ``hidden``, ``head_dim``, ``ffn_dim`` and ``seq_len``.

    Raises
    ------
    ValueError
        A dimension out of range, or ``hidden`` not a multiple of ``heads``.
    """
    check_int("hidden", hidden, 2, MAX_ROW)
    check_int("heads", heads, 1, hidden)
    check_int("ffn", ffn, 1, 4 * MAX_ROW)
    check_int("seq_len", seq_len, 2, MAX_ROW)
    if hidden % heads:
        raise ValueError(f"hidden={hidden} must be a multiple of heads={heads} "
                         f"(divisors up to 64: {[h for h in range(1, 65) if hidden % h == 0]})")
    return {"hidden": hidden, "head_dim": hidden // heads, "ffn_dim": ffn, "seq_len": seq_len}


# -- components built from one configuration ---------------------------------------------------


def check_config(config: object) -> RTLConfig:
    """Return ``config`` if it is an :class:`RTLConfig`, else raise ``TypeError``.

    Every function and component that takes a whole configuration checks it here, before any
    width is derived from it.
    """
    if not isinstance(config, RTLConfig):
        raise TypeError(f"config must be an RTLConfig, not {config!r}")
    return config


def port_values(component) -> dict:
    """Port name (``a__b``) -> value of every port of ``component``'s signature."""
    return {"__".join(map(str, path)): value
            for path, _, value in component.signature.flatten(component)}


def counter_ports(widths: dict[str, int], name: str = "cnt_{}") -> dict[str, object]:
    """Output ports of activity counters: ``name.format(counter) -> Out(width)``, in order."""
    return {name.format(counter): Out(width) for counter, width in widths.items()}


class ConfigComponent(wiring.Component):
    """Base of the components whose ports all follow from one :class:`RTLConfig`.

    The configuration is checked (:func:`check_config`) before any port width is derived, then
    kept behind the read-only :attr:`config`; a subclass lists its ports in ``_members(config)``.

    Parameters
    ----------
    config : RTLConfig
    src_loc_at : int
        Stack frames between the constructor and the code to name as the creator (for
        Amaranth's source locations and its unused-elaboratable warning): a factory that
        returns the component passes 1, so the warning names the factory's caller.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`RTLConfig`.
    """

    def __init__(self, config: RTLConfig, *, src_loc_at: int = 0):
        self._config = check_config(config)
        super().__init__(self._members(self._config), src_loc_at=src_loc_at + 1)

    def _members(self, config: RTLConfig) -> dict[str, object]:
        """Signature members of the component for ``config``, in port order."""
        raise NotImplementedError

    @property
    def config(self) -> RTLConfig:
        return self._config
