"""The non-linear units of an encoder block: softmax and residual-add + LayerNorm, priced apart.

The paper's per-block figure counts the eight spike-encoded positions only; softmax, the
residual adds and LayerNorm are outside it (docs/energy.md, "The non-linear units"). Our units
(docs/rtl_units.md) have their own unit costs, measured in gates
(``synth_scripts.unit_gates``): ``E_softmax_row`` (pJ per softmax row), ``E_softmax_key`` (pJ
per score of a row) and ``E_norm_channel`` (pJ per channel of a residual-add + LayerNorm
row). Per block (batch ``B``, sequence ``S``, width ``C``, ``h`` heads):

- softmax: ``B h S`` rows of ``S`` keys each;
- residual add + LayerNorm: two rows per token (after attention, after the FFN), ``2 B S C``
  channels.

Their row buffers are SRAM, which the gate figures leave out; their bits (per key, per
channel: what the unit reads and writes, from its measurement) are priced at ``E_weight``,
the model's one SRAM bit cost. The result is its own component (:class:`NonlinearUnits`),
never added to a row's Move / W-read / Compute: a comparison with the paper's figure stays
like for like.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from energy_model.dims import ModelDims
from energy_model.quantity import Quantity
from energy_model.unit_costs import NONLINEAR_KEYS as KEYS
from energy_model.unit_costs import UnitCosts

__all__ = ["KEYS", "NonlinearUnits", "nonlinear_ops", "nonlinear_units"]


def _check_bits(name: str, value: object) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
            math.isfinite(value) and value >= 0):
        raise ValueError(f"{name} must be a number of bits >= 0, not {value!r}")
    return float(value)


def nonlinear_ops(dims: ModelDims, *, softmax_bits_per_key: float | None = None,
                  norm_bits_per_channel: float | None = None) -> dict[str, dict[str, float]]:
    """Operation counts of one block's units per component and unit cost: ``compute`` (rows,
    keys, channels) and ``wread`` (the buffers' bits at ``E_weight``; empty when the bits are
    not given)."""
    if not isinstance(dims, ModelDims):
        raise TypeError(f"dims must be a ModelDims, not {dims!r}")
    b, s, c, h = dims.batch, dims.seq, dims.hidden, dims.heads
    rows, keys, channels = b * h * s, b * h * s * s, 2 * b * s * c
    bits_key = _check_bits("softmax_bits_per_key", softmax_bits_per_key)
    bits_channel = _check_bits("norm_bits_per_channel", norm_bits_per_channel)
    wread = {}
    if bits_key is not None and bits_channel is not None:
        wread["E_weight"] = keys * bits_key + channels * bits_channel
    return {
        "compute": {"E_softmax_row": float(rows), "E_softmax_key": float(keys),
                    "E_norm_channel": float(channels)},
        "wread": wread,
    }


@dataclass(frozen=True)
class NonlinearUnits:
    """The units' energy per block: ``compute`` (our gates), ``wread`` (their buffers at
    ``E_weight``, ``None`` when the bits were not given), the op counts and where each cost
    came from."""

    compute: Quantity
    wread: Quantity | None
    ops: dict[str, dict[str, float]]
    sources: dict[str, str]

    @property
    def total(self) -> Quantity:
        return self.compute if self.wread is None else self.compute + self.wread

    def to_json(self) -> dict:
        return {
            "what": "softmax and residual-add + LayerNorm units per block, NOT included in any "
            "row's total (the paper's per-block figure leaves them out)",
            "compute_J": self.compute.value,
            "wread_J": None if self.wread is None else self.wread.value,
            "wread_note": "the units' row buffers (bits read and written) at E_weight"
            if self.wread is not None else "buffer bits not given: the buffers are not charged",
            "total_J": self.total.value,
            "ops": self.ops,
            "sources": self.sources,
        }


def nonlinear_units(dims: ModelDims, costs: UnitCosts, *,
                    softmax_bits_per_key: float | None = None,
                    norm_bits_per_channel: float | None = None) -> NonlinearUnits | None:
    """The units' energy per block at ``dims`` with ``costs``, or ``None`` when ``costs``
    holds none of :data:`KEYS`.

    Raises
    ------
    ValueError
        ``costs`` holds some of :data:`KEYS` but not all (a unit half priced would read as
        cheaper than it is).
    """
    have = [k for k in KEYS if k in costs]
    if not have:
        return None
    if len(have) != len(KEYS):
        missing = ", ".join(k for k in KEYS if k not in costs)
        raise ValueError(f"the non-linear units need {', '.join(KEYS)}; the unit costs lack "
                         f"{missing}")
    ops = nonlinear_ops(dims, softmax_bits_per_key=softmax_bits_per_key,
                        norm_bits_per_channel=norm_bits_per_channel)
    compute = math.fsum(n * costs.joules(k) for k, n in ops["compute"].items())
    wread = None
    if ops["wread"]:
        wread = Quantity(ops["wread"]["E_weight"] * costs.joules("E_weight"), "J")
    used = list(KEYS) + (["E_weight"] if wread is not None else [])
    return NonlinearUnits(Quantity(compute, "J"), wread, ops,
                          {k: costs[k].provenance for k in used})
