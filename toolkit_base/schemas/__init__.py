"""JSON schemas of the documents the toolkit writes and reads, and the one validator.

Each ``<name>.json`` beside this file is a JSON Schema (draft 2020-12) of one document:

- ``rtl_manifest``: ``manifest.json`` of ``matterhorn generate``;
- ``synth_report``: ``synth_report.json`` of ``matterhorn synth``;
- ``system_area``: ``system_area.json`` of ``matterhorn synth --system``;
- ``synth_sweep``: ``synth_sweep.json`` of ``matterhorn synth`` over several ``T``/``k``;
- ``golden_stats``: the golden model's statistics file;
- ``golden_layers``: integer layers exported by ``golden_models.export``;
- ``regress_summary``: ``regress_summary.json`` of ``matterhorn regress``;
- ``flow``: ``flow.json`` of ``matterhorn flow``;
- ``energy_report``: ``energy_report.json`` of ``matterhorn energy``;
- ``prove_summary``: ``prove_summary.json`` of ``matterhorn prove``.
- ``finetune``: ``finetune.json`` of ``matterhorn finetune`` (and of each checkpoint folder).
- ``pdk``: a PDK table, ``synth_scripts/gatelevel/pdks/<name>.json``.
- ``block``: ``block.json`` of ``matterhorn block``.
- ``sram_macros``: the SRAM macro table, ``synth_scripts/sram/freepdk45_macros.json``
  (``matterhorn sram``).
- ``block_placement``: a whole encoder block placed on one mesh
  (``rtl_gen.block_map.BlockPlacement.document``, ``block.json``'s ``mesh``).
- ``network``: ``network.json`` of ``matterhorn network``.

Readers call :func:`validate`; a malformed document raises ``ValueError`` with one line that
names the document and the failing field, e.g.
``synth_report.json: field 'unit_costs_pJ.E_ACC4.value': 'x' is not of type 'number'``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from importlib import resources

__all__ = ["SCHEMAS", "field_path", "schema", "validate"]

#: The schema names (files ``<name>.json`` in this package).
SCHEMAS = (
    "attention",
    "block",
    "block_placement",
    "build",
    "compare",
    "energy_report",
    "energy_sensitivity",
    "finetune",
    "flow",
    "golden_layers",
    "golden_stats",
    "layer_slice",
    "minilm_rates",
    "minilm_stats",
    "network",
    "pdk",
    "prove_summary",
    "qonnx_export",
    "regress_summary",
    "rtl_manifest",
    "sram_macros",
    "synth_report",
    "synth_sweep",
    "system_area",
)


@functools.cache
def schema(name: str) -> dict:
    """The schema ``name`` (one of :data:`SCHEMAS`), parsed."""
    if name not in SCHEMAS:
        raise ValueError(f"schema must be one of {SCHEMAS}, not {name!r}")
    return json.loads(resources.files(__package__).joinpath(f"{name}.json").read_text("utf-8"))


@functools.cache
def _validator(name: str):
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema(name))


def field_path(parts: Iterable[object]) -> str:
    """``("jobs", 0, "sim")`` -> ``"jobs[0].sim"``; the empty path is ``"(document)"``."""
    out = ""
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else str(p))
    return out or "(document)"


def validate(doc: object, name: str, source: str) -> dict:
    """Return ``doc`` if it matches schema ``name``, else raise ``ValueError`` naming the field.

    Parameters
    ----------
    doc : object
        The parsed document.
    name : str
        One of :data:`SCHEMAS`.
    source : str
        What to call the document in the message (usually its file name).

    Raises
    ------
    ValueError
        ``"<source>: field '<path>' is missing"`` for a missing required field, else
        ``"<source>: field '<path>': <what is wrong>"``; the deepest, most relevant error.
    """
    from jsonschema.exceptions import best_match

    error = best_match(_validator(name).iter_errors(doc))
    if error is None:
        return doc  # type: ignore[return-value]
    path = list(error.absolute_path)
    if error.validator == "required":
        missing = next(f for f in error.validator_value if f not in error.instance)
        raise ValueError(f"{source}: field '{field_path([*path, missing])}' is missing")
    raise ValueError(f"{source}: field '{field_path(path)}': {error.message}")
