"""The paper's eight spike-encoded positions of an encoder block and their quantizer families.

One home for the names: the golden encoder block (:mod:`golden_models.encoder`), the MiniLM
model (:mod:`networks.bert`) and the energy model all import them from here.

==================  ================  ======
position (label)    key (MiniLM)      family
==================  ================  ======
Q-proj. input       q_proj_in         sym
K-proj. input       k_proj_in         sym
V-proj. input       v_proj_in         sym
Query activation    query             sym
Attn. probability   attn_prob         asym
Attn.-out. input    attn_out_in       sym
FFN-expand input    ffn_expand_in     sym
FFN-contract input  ffn_contract_in   asym
==================  ================  ======

The labels are the paper's (Table "Proportion of the most frequent quantized value", and the
keys of ``paper_tables.json``); the keys are the identifier-style names the MiniLM statistics
documents use.
"""

from __future__ import annotations

#: Quantizer family of each position, keyed by the paper's label, in data-flow order.
POSITION_FAMILY = {
    "Q-proj. input": "sym",
    "K-proj. input": "sym",
    "V-proj. input": "sym",
    "Query activation": "sym",
    "Attn. probability": "asym",
    "Attn.-out. input": "sym",
    "FFN-expand input": "sym",
    "FFN-contract input": "asym",
}
#: The eight positions (the paper's labels), in data-flow order.
POSITIONS = tuple(POSITION_FAMILY)
#: Identifier-style key of each position (same order as :data:`POSITIONS`).
POSITION_KEYS = (
    "q_proj_in",
    "k_proj_in",
    "v_proj_in",
    "query",
    "attn_prob",
    "attn_out_in",
    "ffn_expand_in",
    "ffn_contract_in",
)
#: Paper label of each identifier-style key.
LABEL_OF_KEY = dict(zip(POSITION_KEYS, POSITIONS, strict=True))

__all__ = ["LABEL_OF_KEY", "POSITIONS", "POSITION_FAMILY", "POSITION_KEYS"]
