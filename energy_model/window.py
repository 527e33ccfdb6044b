"""The model on one tile window's counted operations, for the comparison in gates.

:func:`energy_model.compute` derives a position's operation counts from its dimensions and
spike rates. A tile simulated on a workload counts them instead (the counters of
:mod:`golden_models.counters`, which the RTL reproduces exactly); :func:`window_ops` feeds those
counts to the same formulas (:func:`energy_model.model.layer_ops`) with the same operator rule
(:func:`energy_model.mac_key`, :func:`energy_model.model.event_op`), so ``matterhorn compare``
prices its model column with no formula of its own (docs/compare.md, docs/energy.md).

What the counts change against the rate-driven formulas of one linear layer: the deliveries
are the membrane updates counted (``mac_ops``, ``accumulate_ops``: ``D`` and ``s*D``), the
compares and threshold reads are those made (a neuron stops once it fires), not ``T*N``, and no
``E_enc`` is charged (the tile receives its input already as events). Movement is the router's:
each input flit moved ``hops`` hops at ``E_move_event_router`` (one flit moved one hop by our
synthesized router), for events and for packed dense flits alike.
"""

from __future__ import annotations

from collections.abc import Mapping

from energy_model.model import Options, event_op, layer_ops, mac_key

__all__ = ["HOP_KEY", "WINDOW_ENCODINGS", "window_ops"]

#: The unit cost of one flit moved one hop in :func:`window_ops`.
HOP_KEY = "E_move_event_router"
#: Encodings of a tile window: the dense INT4 tile and the (M-)TTFS tile.
WINDOW_ENCODINGS = ("dense", "ttfs")


def window_ops(
    encoding: str,
    counters: Mapping[str, float],
    *,
    weight_bits: int,
    flit_hops: float,
    options: Options | None = None,
) -> dict[str, dict[str, float]]:
    """Operation counts of one tile window, per component and unit cost.

    Parameters
    ----------
    encoding : {"dense", "ttfs"}
        The dense INT4 tile (counters of :class:`golden_models.counters.DenseCounters`) or the
        M-TTFS tile (:class:`golden_models.counters.Counters`).
    counters : mapping
        One window's counters (or their mean over windows).
    weight_bits : int
        The layer's weight width ``w``: ``w`` bits read per delivery; the MAC of a ``w``-bit
        weight (:func:`energy_model.mac_key`, ``E_MAC<w>x4`` beyond 1 and 4 bits).
    flit_hops : float
        Input flits times the mean hops each travels.
    options : Options, optional
        ``threshold_bits`` (bits per threshold read) and ``event_accumulate`` (the operator of
        a delivered event); default the paper's.

    Returns
    -------
    dict
        ``{"move": {HOP_KEY: n}, "wread": {"E_weight": bits}, "kvwrite": {}, "compute": {key:
        n}}`` (a tile's weights are loaded, not written at run time); price it
        with :func:`energy_model.model.price`.
    """
    options = Options() if options is None else options
    if encoding == "dense":
        core = layer_ops("dense", deliveries=counters["mac_ops"], outputs=counters["codes_out"],
                         read_bits=weight_bits, op=mac_key(weight_bits))
    elif encoding == "ttfs":
        core = layer_ops(
            "ttfs",
            deliveries=counters["accumulate_ops"],
            read_bits=weight_bits,
            op=event_op("ttfs", weight_bits, options),
            compares=counters["compare_ops"],
            threshold_reads=counters["threshold_reads"],
            threshold_bits=options.threshold_bits,
        )
    else:
        raise ValueError(f"encoding must be one of {WINDOW_ENCODINGS}, not {encoding!r}")
    return {"move": {HOP_KEY: flit_hops}, "wread": core["wread"], "kvwrite": {},
            "compute": core["compute"]}
