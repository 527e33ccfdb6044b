"""PyTorch golden QNN and M-TTFS reference model (the specification the RTL must equal).

The names below load their submodule on first use (PEP 562), so ``import golden_models`` and the
torch-free submodules (:mod:`~golden_models.codespace`, :mod:`~golden_models.bounds`,
:mod:`~golden_models.counters`, :mod:`~golden_models.positions`) load no torch: the RTL generator,
the energy model and the synthesis parser import them without paying for torch.
"""

from __future__ import annotations

import importlib

#: Public name -> the submodule that defines it.
_HOME = {
    "accumulator_bound": "golden_models.bounds",
    "score_bits": "golden_models.bounds",
    "signed_width": "golden_models.bounds",
    "weight_range": "golden_models.bounds",
    "HistogramAccumulator": "golden_models.calibration",
    "calibrate": "golden_models.calibration",
    "event_histogram": "golden_models.calibration",
    "probabilities": "golden_models.calibration",
    "select_i_max": "golden_models.calibration",
    "CodeSpace": "golden_models.codespace",
    "FAMILIES": "golden_models.codespace",
    "check_T": "golden_models.codespace",
    "check_i_max": "golden_models.codespace",
    "check_integer": "golden_models.codespace",
    "check_k": "golden_models.codespace",
    "transmitted": "golden_models.mask",
    "COUNTER_NAMES": "golden_models.counters",
    "Counters": "golden_models.counters",
    "QNNEncoderBlock": "golden_models.encoder",
    "read_layers": "golden_models.export",
    "write_layers": "golden_models.export",
    "IntegerLayer": "golden_models.integer_layer",
    "LayerResult": "golden_models.integer_layer",
    "fire": "golden_models.integer_layer",
    "threshold_table": "golden_models.integer_layer",
    "Mask": "golden_models.mask",
    "code_of_time": "golden_models.mttfs",
    "decode_dense": "golden_models.mttfs",
    "decode_events": "golden_models.mttfs",
    "encode_dense": "golden_models.mttfs",
    "encode_events": "golden_models.mttfs",
    "event_time": "golden_models.mttfs",
    "folded_init": "golden_models.mttfs",
    "transmitted_count": "golden_models.mttfs",
    "ttfs_mask": "golden_models.mask",
    "POSITIONS": "golden_models.positions",
    "POSITION_FAMILY": "golden_models.positions",
    "QNNChain": "golden_models.qnn",
    "QNNLinear": "golden_models.qnn",
    "quantize_weights": "golden_models.qnn",
    "random_codes": "golden_models.qnn",
    "random_qnn": "golden_models.qnn",
    "ActivationQuantizer": "golden_models.quantizer",
    "MaskedSTE": "golden_models.quantizer",
    "ROUNDINGS": "golden_models.quantizer",
    "quantize": "golden_models.quantizer",
    "unsaturated": "golden_models.quantizer",
    "PositionStats": "golden_models.statistics",
    "events_per_activation": "golden_models.statistics",
    "read_stats": "golden_models.statistics",
    "spike_rate": "golden_models.statistics",
    "transmitted_events": "golden_models.statistics",
    "write_stats": "golden_models.statistics",
}

__all__ = sorted(_HOME)


def __getattr__(name: str):
    try:
        module = _HOME[name]
    except KeyError:
        raise AttributeError(f"module 'golden_models' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOME})
