"""PyTorch golden QNN and M-TTFS reference model (the specification the RTL must equal)."""

from golden_models.codespace import FAMILIES, CodeSpace, check_i_max, check_k, check_T
from golden_models.integer_layer import (
    Counters,
    IntegerLayer,
    LayerResult,
    accumulator_bound,
    fire,
    signed_width,
    threshold_table,
    weight_range,
)
from golden_models.mttfs import (
    Mask,
    code_of_time,
    decode_dense,
    decode_events,
    encode_dense,
    encode_events,
    event_time,
    folded_init,
    transmitted_count,
    ttfs_mask,
)
from golden_models.quantizer import ROUNDINGS, quantize

__all__ = [
    "FAMILIES",
    "ROUNDINGS",
    "CodeSpace",
    "Counters",
    "IntegerLayer",
    "LayerResult",
    "Mask",
    "accumulator_bound",
    "check_T",
    "check_i_max",
    "check_k",
    "code_of_time",
    "decode_dense",
    "decode_events",
    "encode_dense",
    "encode_events",
    "event_time",
    "fire",
    "folded_init",
    "quantize",
    "signed_width",
    "threshold_table",
    "transmitted_count",
    "ttfs_mask",
    "weight_range",
]
