"""Technology scaling of energy per operation: Stillmaker & Baas (2017).

A. Stillmaker and B. Baas, "Scaling equations for the accurate prediction of CMOS device
performance from 180 nm to 7 nm", Integration, the VLSI Journal 58 (2017) 74-81,
doi:10.1016/j.vlsi.2017.02.002. Their energy model per node is a fitted polynomial of the
supply voltage, ``EnergyFactor(V) = a*V**2 + b*V + c`` (coefficients of their Table 5, as used
in the published corrigendum's worked example, e.g. 65 nm: 3.755, -4.398, 1.975; HP 32 nm:
0.8367, -0.4341, 0.1701); the energy of a circuit at node y is its energy at node x times
``EnergyFactor_y(V_y) / EnergyFactor_x(V_x)``.

The rule used here (stated in the report):

- source: the liberty's node (its PDK table's ``scaling`` entry, :mod:`synth_scripts.gatelevel.pdk`,
  found by the library's name) at the liberty's nominal voltage. The tables say: sky130 HD is
  their 130 nm node (1.8 V for the typical corner; the polynomial is fitted up to the 130 nm
  nominal 1.3 V, so 1.8 V extrapolates it), NanGate 45 nm (FreePDK45) their 45 nm
  high-performance node (1.1 V; their 45 nm nominal is 1.0 V). The report also gives
  the factor with the voltage part taken as CV^2 from the fitted nominal point, and the other
  model of the same node;
- destination: the paper's commercial 22 nm at 0.8 V. 22 nm is not a node of their tables; the
  nearest tabulated node is their 20 nm high-performance (HP) model, used as primary; the 20 nm
  low-power (LP) model is given beside it.
"""

from __future__ import annotations

from dataclasses import dataclass

from synth_scripts.gatelevel import pdk

#: Energy-factor polynomial coefficients (a, b, c) of Stillmaker & Baas, Table 5.
ENERGY_COEFFS = {
    "130": (7.171, -6.709, 2.904),
    "90": (4.762, -4.781, 2.092),
    "65": (3.755, -4.398, 1.975),
    "HP45": (1.018, -0.3107, 0.1539),
    "LP45": (1.103, -0.362, 0.2767),
    "HP32": (0.8367, -0.4341, 0.1701),
    "LP32": (0.9559, -0.7823, 0.471),
    "HP20": (0.373, -0.1582, 0.04104),
    "LP20": (0.2632, -0.14, 0.06841),
}
#: Nominal supply of their 130 nm model (V), the top of its fitted range.
NOMINAL_130 = 1.3


@dataclass(frozen=True)
class Technology:
    """A cell library's node in Stillmaker & Baas' terms (from its PDK table)."""

    key: str  # the PDK table's name, used in reports ("sky130hd", "nangate45")
    label: str  # for tables
    node: str  # their model (ENERGY_COEFFS key)
    feature_nm: int
    fit_nominal_V: float  # their nominal supply of that node
    other_model: str  # the alternative model of the node (LP/HP), reported beside
    source: str  # why this model: the table's scaling.source


def technology(table: pdk.Pdk) -> Technology:
    """The :class:`Technology` of a PDK table, or ``ValueError`` if it has no scaling."""
    if table.scaling is None or table.node_nm is None:
        known = ", ".join(f"{t.name} ({'|'.join(t.patterns)})" for t in pdk.tables().values())
        raise ValueError(
            f"no technology scaling is known for {table.label} ({table.source}); known PDK "
            f"tables: {known}; add one (docs/synth.md, 'Adding a PDK')")
    sc = table.scaling
    return Technology(table.name, table.label, sc["model"], table.node_nm, sc["fit_nominal_V"],
                      sc["other_model"], sc["source"])


def technology_of(library_name: str) -> Technology:
    """The :class:`Technology` of a liberty's library name, or ``ValueError`` naming it."""
    table = pdk.match(str(library_name))
    if table.generic:
        known = ", ".join(f"{t.name} ({'|'.join(t.patterns)})" for t in pdk.tables().values())
        raise ValueError(
            f"no technology scaling is known for liberty library {library_name!r}: no PDK "
            f"table matches it (known: {known}); add one (docs/synth.md, 'Adding a PDK')")
    return technology(table)


def sram_bit_pJ(lib) -> float:
    """The per-bit SRAM read energy of ``lib``'s PDK table (a prepared
    :class:`synth_scripts.gatelevel.liberty.Liberty`), scaled from the figure's node and supply to
    the liberty's node and nominal supply (Stillmaker & Baas).

    Raises
    ------
    ValueError
        The library has no PDK table, or its table no scaling.
    """
    tech = technology_of(lib.name)
    bit = lib.pdk.sram_bit
    return bit["pJ_per_bit"] * (energy_factor(tech.node, lib.nom_voltage)
                                / energy_factor(bit["node"], bit["vdd_V"]))


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


def scaling_rule(source_vdd: float, tech: Technology) -> dict:
    """The factor that divides an energy of ``tech`` at ``source_vdd`` into a 22 nm / 0.8 V one,
    with alternatives."""
    src = energy_factor(tech.node, source_vdd)
    src_cv2 = energy_factor(tech.node, tech.fit_nominal_V) * (source_vdd / tech.fit_nominal_V) ** 2
    dst = energy_factor(TARGET_NODE, TARGET_VDD)
    dst_lp = energy_factor("LP20", TARGET_VDD)
    alternatives = {
        "to_LP20_at_0.8V": round(src / dst_lp, 4),
        f"voltage_by_CV2_from_{tech.fit_nominal_V:g}V": round(src_cv2 / dst, 4),
        "classical_L_V2": round((tech.feature_nm / 22) * (source_vdd / TARGET_VDD) ** 2, 4),
    }
    if tech.other_model != tech.node:
        alternatives[f"from_{tech.other_model}"] = round(
            energy_factor(tech.other_model, source_vdd) / dst, 4)
    return {
        "method": "Stillmaker & Baas 2017 energy polynomials",
        "citation": CITATION,
        "technology": tech.key,
        "technology_label": tech.label,
        "source": {"node": tech.node, "vdd_V": source_vdd, "energy_factor": round(src, 6)},
        "target": {
            "node": TARGET_NODE,
            "stands_for": TARGET_LABEL,
            "vdd_V": TARGET_VDD,
            "energy_factor": round(dst, 6),
        },
        "divide_by": round(src / dst, 4),
        "alternatives": alternatives,
        "why": (
            f"{tech.label} is their {tech.node} model at its liberty's nominal supply "
            f"({source_vdd:g} V; the fit's nominal is {tech.fit_nominal_V:g} V, the CV^2 "
            "alternative shows the spread); the paper's library is 22 nm at 0.8 V; 22 nm is not "
            "tabulated, the nearest node (20 nm HP) is used"
        ),
    }
