"""The paper's 22 nm unit costs (Appendix "Energy Model and Unit Costs", Table of digital unit
costs), as data with provenance: the reference the synthesized figures are compared with, and the
source of the costs that are not synthesizable here (SRAM macro, NoC movement)."""

from __future__ import annotations

SOURCE = (
    "Matterhorn paper, Appendix 'Energy Model and Unit Costs', Table 'Digital unit costs of the "
    "22 nm analytical model' (commercial 22 nm, Design Compiler, TT 0.80 V 25 C, 1 GHz, "
    "vectorless activity)"
)

#: key -> (value, unit, note)
UNIT_COSTS = {
    "E_MAC4": (0.06634, "pJ/op", "INT4 MAC, 1-bit W x 4-bit A"),
    "E_MAC4x4": (0.0848, "pJ/op", "4-bit x 4-bit MAC (QNN attention)"),
    "E_ACC1": (0.04292, "pJ/op", "ACC, 1-bit"),
    "E_ACC2": (0.0477, "pJ/op", "ACC, 2-bit"),
    "E_ACC4": (0.05021, "pJ/op", "ACC, 4-bit"),
    "E_CMP": (0.05021, "pJ/op", "Comparator"),
    "E_SUB": (0.05021, "pJ/op", "Membrane subtraction"),
    "E_clamp4": (0.05021, "pJ/op", "INT4 clamp"),
    "E_weight": (0.09845, "pJ/bit", "SRAM read or write"),
    "E_move_dense": (0.25, "pJ/bit/hop", "Dense routed transfer"),
    "E_move_event": (3.0, "pJ/event/hop", "Loihi per-hop routing energy"),
    "E_enc": (0.0163, "pJ/event", "digital TTFS encoding"),
}

#: Costs this flow cannot synthesize, and why.
NOT_SYNTHESIZED = {
    "E_weight": "an SRAM macro characterized by a memory compiler; open sky130 has no "
    "characterized macro in this flow (the SRAM interface logic is synthesized as a block, "
    "macros excluded)",
    "E_move_dense": "the paper's measurement of a circuit-switched 22 nm NoC (wires and links, "
    "which a gate-level netlist without placement does not model)",
    "E_move_event": "Loihi's published per-hop routing energy (14 nm), the paper's anchor; our "
    "own router figure is E_move_event_router",
}
