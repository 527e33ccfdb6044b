"""PyTorch golden QNN and M-TTFS reference model (the specification the RTL must equal)."""

from golden_models.calibration import (
    HistogramAccumulator,
    calibrate,
    event_histogram,
    probabilities,
    select_i_max,
)
from golden_models.codespace import FAMILIES, CodeSpace, check_i_max, check_k, check_T
from golden_models.encoder import QNNEncoderBlock
from golden_models.export import read_layers, write_layers
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
from golden_models.positions import POSITION_FAMILY, POSITIONS
from golden_models.qnn import QNNChain, QNNLinear, quantize_weights, random_codes, random_qnn
from golden_models.quantizer import (
    ROUNDINGS,
    ActivationQuantizer,
    MaskedSTE,
    quantize,
    unsaturated,
)
from golden_models.statistics import (
    PositionStats,
    events_per_activation,
    read_stats,
    spike_rate,
    transmitted_events,
    write_stats,
)

__all__ = [
    "POSITIONS",
    "POSITION_FAMILY",
    "ActivationQuantizer",
    "HistogramAccumulator",
    "MaskedSTE",
    "PositionStats",
    "QNNChain",
    "QNNEncoderBlock",
    "QNNLinear",
    "calibrate",
    "event_histogram",
    "events_per_activation",
    "probabilities",
    "quantize_weights",
    "random_codes",
    "random_qnn",
    "read_layers",
    "read_stats",
    "select_i_max",
    "spike_rate",
    "transmitted_events",
    "unsaturated",
    "write_layers",
    "write_stats",
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
