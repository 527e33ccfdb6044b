"""``synth_report.json`` (schema in docs/synth.md), its Markdown table, and reading it back."""

from __future__ import annotations

import json
from pathlib import Path

from energy_model.unit_costs import paper_table
from synth_scripts import activity, scaling
from synth_scripts.entries import energy, power_entry, sig, synth_entry
from toolkit_base import toolchain
from toolkit_base.schemas import validate
from toolkit_base.tables import markdown_table

SCHEMA = "matterhorn.synth_report/2"
#: Operator keys in the paper's table order.
OPERATOR_KEYS = (
    "E_MAC4",
    "E_MAC4x4",
    "E_ACC1",
    "E_ACC2",
    "E_ACC4",
    "E_CMP",
    "E_SUB",
    "E_clamp4",
    "E_enc",
)
#: Our per-hop event cost from the router block (a key the paper does not have).
ROUTER_KEY = "E_move_event_router"
#: The paper's costs this flow cannot synthesize, and why; the report carries them from the
#: paper's table (:func:`energy_model.unit_costs.paper_table`, their one home).
NOT_SYNTHESIZED = {
    "E_weight": "an SRAM macro characterized by a memory compiler; open sky130 has no "
    "characterized macro in this flow (the SRAM interface logic is synthesized as a block, "
    "macros excluded)",
    "E_move_dense": "the paper's measurement of a circuit-switched 22 nm NoC (wires and links, "
    "which a gate-level netlist without placement does not model)",
    "E_move_event": "Loihi's published per-hop routing energy (14 nm), the paper's anchor; our "
    "own router figure is E_move_event_router",
}


def _bits(bits: list[activity.BitActivity]) -> dict:
    return {
        "mean_toggle_rate": sig(sum(b.activity for b in bits) / len(bits), 4),
        "bits": [[b.activity, b.duty] for b in bits],
    }


def build(*, T, k, clock_ns, lib, ops, block_specs, synth, acts, power, streams) -> dict:
    """The report document (a JSON-ready dict, deterministic for the same inputs)."""
    has_lib = lib is not None
    tools = {"yosys": toolchain.version("yosys")}
    if has_lib:
        tools["sta"] = "OpenSTA " + toolchain.version("sta")
    lay = activity.layer_streams(T, k, 3072, activity.P_ZERO)
    doc: dict = {
        "schema": SCHEMA,
        "parameters": {"T": T, "k": k, "clock_ns": clock_ns, "clock_MHz": sig(1e3 / clock_ns)},
        "tools": tools,
        "liberty": None,
        "activity": {
            "method": (
                "per-bit toggle rate (transitions per clock) and duty measured on golden-model "
                "operand streams, set with set_power_activity -input_ports on every input bit; "
                "OpenSTA propagates them through the logic and across flip-flops (D to Q), "
                "vectorless from there on. The registers' toggle rates measured on the reference "
                "model are listed for comparison"
            ),
            "p_zero": activity.P_ZERO,
            "p_zero_source": "mean p(q=0) of the six symmetric spike-encoded positions, SST-2 "
            "source QNN (paper, Table silent mass)",
            "stream_length": activity.STREAM_LENGTH,
            "seed": activity.SEED,
            "golden_layer": {
                "fan_in": 3072,
                "outputs": activity.LAYER_OUTPUTS,
                "compare_ops": lay.compare_ops,
                "events_in": lay.events_in,
                "output_transmitted_fraction": sig(lay.transmitted_fraction, 4),
            },
        },
        "operators": [],
        "blocks": [],
    }
    if has_lib:
        doc["liberty"] = {
            "file": lib.source_name,
            "sha256": lib.sha256,
            "library": lib.name,
            "nom_voltage_V": lib.nom_voltage,
            "time_unit": lib.time_unit,
            "dont_use_patterns": list(lib.pdk.dont_use),
            "dont_use_removed": len(lib.removed),
            "cells_kept": lib.cells,
        }
    raw: dict[str, dict] = {}
    for op in ops:
        generic, mapped = synth_entry(synth[op.top])
        entry = {
            "name": op.name,
            "key": op.key,
            "title": op.title,
            "top": op.top,
            "module": op.module,
            "params": op.params,
            "widths": op.widths,
            "operand_stream": op.stream,
            "generic": generic,
            "mapped": mapped,
            "power": None,
            "energy_pJ": None,
            "activity": None,
        }
        if has_lib:
            a = acts[op.top]
            entry["activity"] = {
                "ports": {p: _bits(b) for p, b in a["ports"].items()},
                "registers_measured_mean_toggle_rate": {
                    p: _bits(b)["mean_toggle_rate"] for p, b in a["registers"].items()
                },
            }
            entry["power"] = power_entry(power[op.top])
            entry["energy_pJ"] = energy(power[op.top]["power_W"], clock_ns)
            core = power[op.core_top]["power_W"]["total"]["total"] * clock_ns * 1e-9 * 1e12
            seq = power[op.top]["power_W"]["sequential"]["total"] * clock_ns * 1e-9 * 1e12
            entry["energy_pJ"]["cross_check_measured_registers"] = {
                "per_op": sig(seq + core),
                "logic": sig(core),
                "registers": sig(seq),
                "ratio_to_per_op": sig((seq + core) / entry["energy_pJ"]["per_op"], 4),
                "method": "the logic between the registers synthesized alone "
                f"({op.module}_core), every input carrying the toggle statistics measured on "
                "its register in the reference model, plus the sequential cells of the full "
                "operator",
            }
            if op.name == "enc":
                frac = float(
                    streams["enc"]["q"].size
                    and activity.encoder_outputs(streams["enc"]["q"], T, k)[1].mean()
                )
                entry["energy_pJ"]["transmitted_fraction"] = sig(frac, 4)
                entry["energy_pJ"]["per_transmitted_event"] = sig(
                    entry["energy_pJ"]["per_op"] / frac
                )
            raw[op.key] = entry["energy_pJ"]
        entry["provenance"] = f"operators.v:{op.module} with {op.params}; yosys synth -flatten" + (
            "; dfflibmap + abc -liberty; OpenSTA report_power" if has_lib else ""
        )
        doc["operators"].append(entry)
    router_pJ = router_idle_pJ = None
    for spec in block_specs:
        entry = spec.report_entry(synth[spec.top], power.get(spec.top, {}), clock_ns)
        doc["blocks"].append(entry)
        if spec.name == "router" and entry["energy_pJ"] is not None:
            router_pJ = entry["energy_pJ"]["per_op"]
            router_idle_pJ = entry["energy_pJ"].get("idle_per_clock")
    if has_lib:
        tech = scaling.technology_of(lib.name)
        rule = scaling.scaling_rule(lib.nom_voltage, tech)
        doc["scaling"] = rule
        doc["unit_costs_pJ"] = unit_costs(raw, router_pJ, rule["divide_by"], scaled=True,
                                          native=tech.label)
        doc["unit_costs_pJ_native"] = unit_costs(raw, router_pJ, 1.0, scaled=False,
                                                 native=tech.label)
        doc["comparison"] = comparison(raw, router_pJ, rule["divide_by"], router_idle_pJ)
    return doc


def unit_costs(
    raw: dict, router_pJ: float | None, divide_by: float, *, scaled: bool, native: str
) -> dict:
    """Unit-cost section in the shape of paper_tables.json ``unit_costs_pJ``."""
    node = f"{native} scaled to 22 nm / 0.8 V by Stillmaker & Baas (divide by {divide_by:g})"
    where = node if scaled else f"{native}, raw"
    paper = paper_table()["unit_costs_pJ"]
    out = {}
    for key in OPERATOR_KEYS:
        if key not in raw:
            continue
        out[key] = {
            "value": sig(raw[key]["per_op"] / divide_by),
            "unit": "pJ/op" if key != "E_enc" else "pJ/event",
            "note": paper[key]["note"]
            + (" (energy of one code conversion)" if key == "E_enc" else ""),
            "provenance": f"synthesized here: Yosys + OpenSTA, golden-model activity; {where}",
        }
    for key, why in NOT_SYNTHESIZED.items():
        out[key] = {
            "value": paper[key]["value"],
            "unit": paper[key]["unit"],
            "note": paper[key]["note"],
            "provenance": f"carried from the paper (22 nm), not synthesizable here: {why}",
        }
    if router_pJ is not None:
        out[ROUTER_KEY] = {
            "value": sig(router_pJ / divide_by),
            "unit": "pJ/event/hop",
            "note": "one event (flit) moved one hop through the generated XY router, logic only "
            "(no link wires)",
            "provenance": f"synthesized here: mttfs_router, Yosys + OpenSTA; {where}",
        }
    return out


def comparison(
    raw: dict, router_pJ: float | None, divide_by: float, router_idle_pJ: float | None = None
) -> dict:
    """Our figures beside the paper's, ratios, operator ranking and the event-hop ratio."""
    paper = {key: c["value"] for key, c in paper_table()["unit_costs_pJ"].items()}
    rows = []
    for key in OPERATOR_KEYS:
        if key not in raw:
            continue
        ours = raw[key]["per_op"]
        ref = paper[key]
        rows.append(
            {
                "key": key,
                "native_pJ": ours,
                "scaled_22nm_pJ": sig(ours / divide_by),
                "paper_22nm_pJ": ref,
                "ratio_raw": sig(ours / ref, 4),
                "ratio_scaled": sig(ours / divide_by / ref, 4),
            }
        )
    ours_rank = [r["key"] for r in sorted(rows, key=lambda r: (r["native_pJ"], r["key"]))]
    paper_rank = [r["key"] for r in sorted(rows, key=lambda r: (r["paper_22nm_pJ"], r["key"]))]
    out = {
        "rows": rows,
        "ranking": {
            "ours_cheapest_first": ours_rank,
            "paper_cheapest_first": paper_rank,
            "note": "the paper gives E_ACC4, E_CMP, E_SUB and E_clamp4 one shared value (0.05021), "
            "so its order among them is a tie broken by name",
        },
    }
    if router_pJ is not None:
        scaled = router_pJ / divide_by
        mac = raw.get("E_MAC4", {}).get("per_op")
        out["event_hop"] = {
            "native_pJ": sig(router_pJ),
            "scaled_22nm_pJ": sig(scaled),
            "paper_event_pJ": paper["E_move_event"],
            "paper_dense_bit_pJ": paper["E_move_dense"],
            "ratio_to_paper_dense_bit": sig(scaled / paper["E_move_dense"], 4),
            "paper_ratio_event_to_dense_bit": 12.0,
            "ratio_to_paper_event": sig(scaled / paper["E_move_event"], 4),
            "ratio_to_our_MAC4": sig(router_pJ / mac, 4) if mac else None,
            "above_idle_native_pJ": (
                sig(router_pJ - router_idle_pJ) if router_idle_pJ is not None else None
            ),
        }
    return out


def write(doc: dict, json_path: Path, md_path: Path) -> None:
    """Write the JSON (stable key order as built, 1-space indent) and the Markdown table."""
    json_path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    md_path.write_text(markdown(doc), encoding="utf-8")


def _fmt(x, spec="{:.4g}") -> str:
    return "-" if x is None else spec.format(x)


def markdown(doc: dict) -> str:
    """The readable form of the report: operators, blocks, comparison with the paper."""
    p = doc["parameters"]
    lines = [
        f"# Synthesis report (T={p['T']}, k={p['k']}, clock {p['clock_ns']:g} ns)",
        "",
        "Tools: " + ", ".join(f"{k} `{v}`" for k, v in doc["tools"].items()) + ".",
    ]
    lib = doc["liberty"]
    if lib:
        lines.append(
            f"Liberty: `{lib['file']}` ({lib['library']}, {lib['nom_voltage_V']:g} V), "
            f"{lib['dont_use_removed']} dont-use cells removed."
        )
    else:
        lines.append("No liberty: generic flow only (no area, power or energy).")
    native = doc.get("scaling", {}).get("technology_label", "liberty")
    lines += [
        "",
        "## Operators",
        "",
    ]

    def operator_row(e: dict) -> list:
        m, en, pw = e["mapped"], e["energy_pJ"], e["power"]
        return [
            e["key"],
            e["widths"],
            e["generic"]["cells"],
            e["generic"]["transistors"],
            e["generic"]["logic_depth"],
            _fmt(m and m["area_um2"], "{:.1f}"),
            _fmt(en and en["per_op"]),
            _fmt(en and en["cross_check_measured_registers"]["per_op"]),
            _fmt(en and en["leakage_share"], "{:.1e}"),
            _fmt(en and en["sequential_share"], "{:.0%}"),
            _fmt(pw and pw["worst_slack_ns"], "{:.2f}"),
        ]

    lines += markdown_table(
        [
            "key", "widths", "cells", "transistors", "depth", "area um^2", f"E/op pJ ({native})",
            "cross-check pJ", "leakage", "sequential", "slack ns",
        ],
        map(operator_row, doc["operators"]),
        align="llrrrrrrrrr",
    )
    if doc["blocks"]:
        lines += [
            "",
            "## Blocks",
            "",
        ]

        def block_row(b: dict) -> list:
            m, en = b["mapped"], b.get("energy_pJ")
            return [
                b["name"],
                b["what"],
                b["generic"]["cells"],
                b["generic"]["transistors"],
                b["generic"]["logic_depth"],
                _fmt(m and m["area_um2"], "{:.1f}"),
                _fmt(en and en["per_op"]),
                b.get("per", "-"),
                _fmt(en and en["leakage_share"], "{:.1e}"),
            ]

        lines += markdown_table(
            [
                "block", "what", "cells", "transistors", "depth", "area um^2", "energy pJ", "per",
                "leakage",
            ],
            map(block_row, doc["blocks"]),
            align="llrrrrrlr",
        )
    from synth_scripts.axi_cost import markdown as wrappers_markdown

    lines += wrappers_markdown(doc)
    if "comparison" in doc:
        lines += ["", comparison_text(doc)]
    return "\n".join(lines) + "\n"


def comparison_text(doc: dict) -> str:
    """The comparison with the paper as Markdown (printed by ``matterhorn synth``)."""
    c, s = doc["comparison"], doc["scaling"]
    native = s["technology_label"]
    lines = [
        "## Comparison with the paper (22 nm, 0.8 V)",
        "",
        f"Scaling rule: {s['method']}: {native} energy / {s['divide_by']:g} "
        f"({s['source']['node']} at {s['source']['vdd_V']:g} V -> {s['target']['node']} "
        "standing for "
        f"{s['target']['stands_for']} at {s['target']['vdd_V']:g} V; alternatives: "
        + ", ".join(f"{k} /{v:g}" for k, v in s["alternatives"].items())
        + ").",
        "",
        *markdown_table(
            ["key", f"{native} pJ", "scaled 22 nm pJ", "paper 22 nm pJ", "ratio raw",
             "ratio scaled"],
            (
                [
                    r["key"],
                    f"{r['native_pJ']:.4g}",
                    f"{r['scaled_22nm_pJ']:.4g}",
                    f"{r['paper_22nm_pJ']:.4g}",
                    f"{r['ratio_raw']:.3g}",
                    f"{r['ratio_scaled']:.3g}",
                ]
                for r in c["rows"]
            ),
            align="lrrrrr",
        ),
    ]
    lines += [
        "",
        "Ranking, cheapest first: ours "
        + " < ".join(c["ranking"]["ours_cheapest_first"])
        + "; paper "
        + " < ".join(c["ranking"]["paper_cheapest_first"])
        + " (paper ties "
        "E_ACC4 = E_CMP = E_SUB = E_clamp4).",
    ]
    eh = c.get("event_hop")
    if eh:
        lines += [
            "",
            (
                f"Event hop (router, one flit per clock): {eh['native_pJ']:.4g} pJ {native}, "
                f"{eh['scaled_22nm_pJ']:.4g} pJ scaled = "
                f"{eh['ratio_to_paper_dense_bit']:.3g} x the paper's dense bit "
                f"({eh['paper_dense_bit_pJ']:g} pJ; the paper's event is 12 x) and "
                f"{eh['ratio_to_paper_event']:.3g} x the paper's Loihi event "
                f"({eh['paper_event_pJ']:g} pJ); above the idle router "
                f"{eh['above_idle_native_pJ']:.4g} pJ {native}."
            ),
        ]
    return "\n".join(lines)


def load(path: str | Path) -> dict:
    """Read a ``synth_report.json`` back, checked against its schema (toolkit_base/schemas)."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path.name}: not valid JSON ({exc.msg} at line {exc.lineno})") from exc
    return validate(doc, "synth_report", path.name)
