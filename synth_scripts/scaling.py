"""Technology scaling of energy per operation: Stillmaker & Baas (2017).

A. Stillmaker and B. Baas, "Scaling equations for the accurate prediction of CMOS device
performance from 180 nm to 7 nm", Integration, the VLSI Journal 58 (2017) 74-81,
doi:10.1016/j.vlsi.2017.02.002. Their energy model per node is a fitted polynomial of the
supply voltage, ``EnergyFactor(V) = a*V**2 + b*V + c`` (coefficients of their Table 5, as used
in the published corrigendum's worked example, e.g. 65 nm: 3.755, -4.398, 1.975; HP 32 nm:
0.8367, -0.4341, 0.1701); the energy of a circuit at node y is its energy at node x times
``EnergyFactor_y(V_y) / EnergyFactor_x(V_x)``.

The rule used here (stated in the report):

- source: sky130, a 130 nm-class node, at the liberty's nominal voltage (1.8 V for the HD
  typical corner). Their 130 nm polynomial is fitted up to the 130 nm nominal 1.3 V; 1.8 V is an
  extrapolation of the fit, so the report also gives the factor with the voltage part taken as
  ``(1.8/1.3)**2`` (CV^2) from the fitted nominal point;
- destination: the paper's commercial 22 nm at 0.8 V. 22 nm is not a node of their tables; the
  nearest tabulated node is their 20 nm high-performance (HP) model, used as primary; the 20 nm
  low-power (LP) model is given beside it.
"""

from __future__ import annotations

#: Energy-factor polynomial coefficients (a, b, c) of Stillmaker & Baas, Table 5.
ENERGY_COEFFS = {
    "130": (7.171, -6.709, 2.904),
    "90": (4.762, -4.781, 2.092),
    "65": (3.755, -4.398, 1.975),
    "HP32": (0.8367, -0.4341, 0.1701),
    "LP32": (0.9559, -0.7823, 0.471),
    "HP20": (0.373, -0.1582, 0.04104),
    "LP20": (0.2632, -0.14, 0.06841),
}
#: Nominal supply of their 130 nm model (V), the top of its fitted range.
NOMINAL_130 = 1.3
CITATION = (
    "A. Stillmaker and B. Baas, 'Scaling equations for the accurate prediction of CMOS device "
    "performance from 180 nm to 7 nm', Integration, the VLSI Journal 58 (2017) 74-81, "
    "doi:10.1016/j.vlsi.2017.02.002 (energy polynomials of Table 5)"
)
#: The paper's node and supply (Appendix "Energy Model and Unit Costs": TT, 0.80 V, 25 C).
TARGET_NODE, TARGET_LABEL, TARGET_VDD = "HP20", "22 nm", 0.8


def energy_factor(node: str, vdd: float) -> float:
    """Stillmaker & Baas energy factor of ``node`` at supply ``vdd`` (V)."""
    if node not in ENERGY_COEFFS:
        raise ValueError(f"node must be one of {sorted(ENERGY_COEFFS)}, not {node!r}")
    if not 0.3 <= vdd <= 2.5:
        raise ValueError(f"vdd must be a supply voltage in 0.3..2.5 V, not {vdd!r}")
    a, b, c = ENERGY_COEFFS[node]
    return a * vdd * vdd + b * vdd + c


def scaling_rule(source_vdd: float) -> dict:
    """The factor that divides a sky130 energy into a 22 nm / 0.8 V energy, with alternatives."""
    src = energy_factor("130", source_vdd)
    src_cv2 = energy_factor("130", NOMINAL_130) * (source_vdd / NOMINAL_130) ** 2
    dst = energy_factor(TARGET_NODE, TARGET_VDD)
    dst_lp = energy_factor("LP20", TARGET_VDD)
    return {
        "method": "Stillmaker & Baas 2017 energy polynomials",
        "citation": CITATION,
        "source": {"node": "130", "vdd_V": source_vdd, "energy_factor": round(src, 6)},
        "target": {
            "node": TARGET_NODE,
            "stands_for": TARGET_LABEL,
            "vdd_V": TARGET_VDD,
            "energy_factor": round(dst, 6),
        },
        "divide_by": round(src / dst, 4),
        "alternatives": {
            "to_LP20_at_0.8V": round(src / dst_lp, 4),
            "voltage_by_CV2_from_1.3V": round(src_cv2 / dst, 4),
            "classical_L_V2": round((130 / 22) * (source_vdd / TARGET_VDD) ** 2, 4),
        },
        "why": (
            "sky130 is a 130 nm-class node at its liberty's nominal supply; the paper's library is "
            "22 nm at 0.8 V; 22 nm is not tabulated, the nearest node (20 nm HP) is used; the "
            "130 nm fit ends at 1.3 V, so 1.8 V extrapolates it (the CV^2 alternative shows the "
            "spread)"
        ),
    }
