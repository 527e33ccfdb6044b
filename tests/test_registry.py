# amaranth: UnusedElaboratable=no
"""The block registry (rtl_gen/registry.py): every registered block reaches every part of the
toolkit that enumerates blocks, and a block missing from one of them fails here."""

from __future__ import annotations

import dataclasses
import importlib.util
from pathlib import Path

import pytest
from amaranth.lib import wiring

from energy_model.unit_costs import OPTIONAL, REQUIRED
from formal.properties import PROPERTIES, UNPROVEN
from regression.benches import BENCH_KINDS
from regression.planner import regression_jobs
from rtl_gen import generate, registry
from rtl_gen.params import RTLConfig
from rtl_gen.registry import BLOCKS, Block, Node, Ref
from synth_scripts import report
from synth_scripts.blocks import SYNTHESIS, Elsewhere, prepare
from synth_scripts.system_area import KINDS, group

ROOT = Path(__file__).resolve().parent.parent
CFG = RTLConfig(T=4, k=1, n_in=4, tile_neurons=2, mesh_rows=1, mesh_cols=2)


def missing_parts(blocks=None) -> list[str]:
    """``"<block>: <what>"`` for every part a registered block lacks (empty when complete)."""
    blocks = BLOCKS if blocks is None else blocks
    names = {b.name for b in blocks}
    benched = {k.block for k in BENCH_KINDS.values()}
    planned = {BENCH_KINDS[j.bench].block for j in regression_jobs((4,), (1,), ("icarus",))}
    proven = {p.block for p in PROPERTIES}
    produced = set(report.OPERATOR_KEYS) | {report.ROUTER_KEY}
    out = []
    for b in blocks:
        if b.name not in benched:
            out.append(f"{b.name}: no bench kind in regression.benches.BENCH_KINDS")
        elif b.name not in planned:
            out.append(f"{b.name}: no job in the default regression (its bench's plan)")
        if b.name not in SYNTHESIS:
            out.append(f"{b.name}: no entry in synth_scripts.blocks.SYNTHESIS")
        if (b.name in proven) == (b.name in UNPROVEN):
            out.append(f"{b.name}: needs properties in formal.properties.PROPERTIES or a reason "
                       "in UNPROVEN (not both)")
        for key in b.unit_costs:
            if key not in produced or key not in {**REQUIRED, **OPTIONAL}:
                out.append(f"{b.name}: unit cost {key!r} is not produced by synth or not known "
                           "to energy_model")
        page = ROOT / b.doc
        if not page.is_file() or b.module not in page.read_text(encoding="utf-8"):
            out.append(f"{b.name}: doc page {b.doc} missing or not naming {b.module}")
    for table, keys in (("BENCH_KINDS", benched), ("SYNTHESIS", set(SYNTHESIS)),
                        ("PROPERTIES", proven), ("UNPROVEN", set(UNPROVEN))):
        for name in sorted(keys - names):
            out.append(f"{name}: in {table} but not registered")
    return out


def test_every_registered_block_has_every_part():
    assert missing_parts() == []


def test_a_new_block_without_its_parts_is_reported():
    widget = Block("widget", "mttfs_widget", Ref("rtl_gen.tile:NeuronTile"), "docs/nowhere.md",
                   "a block registered without its parts")
    found = missing_parts((*BLOCKS, widget))
    assert [m for m in found if m.startswith("widget:")] == [
        "widget: no bench kind in regression.benches.BENCH_KINDS",
        "widget: no entry in synth_scripts.blocks.SYNTHESIS",
        ("widget: needs properties in formal.properties.PROPERTIES or a reason in UNPROVEN "
         "(not both)"),
        "widget: doc page docs/nowhere.md missing or not naming mttfs_widget",
    ]
    # and a part of a block that is no longer registered
    assert "router: in SYNTHESIS but not registered" in missing_parts(
        tuple(b for b in BLOCKS if b.name != "router"))


def test_names_modules_and_factories():
    assert len({b.name for b in BLOCKS}) == len({b.module for b in BLOCKS}) == len(BLOCKS)
    assert generate.MODULES == tuple(b.module for b in BLOCKS)
    comps = registry.components(CFG)
    assert list(comps) == list(generate.MODULES)
    for b in BLOCKS:
        assert isinstance(comps[b.module], wiring.Component), b.name
        assert registry.block(b.name) is b and registry.by_module(b.module) is b
        if b.counters is not None:
            widths = b.counters(CFG)
            assert list(widths) == list(b.meanings(CFG)), b.name
            ports = {"__".join(map(str, p)) for p, _ in comps[b.module].signature.members
                     .flatten()}
            assert {f"cnt_{n}" for n in widths} <= ports, b.name


def test_every_bench_kind_has_its_cocotb_module():
    for name, kind in BENCH_KINDS.items():
        assert importlib.util.find_spec(kind.testbench) is not None, name
        assert kind.top == registry.block(kind.block).module


def test_every_bench_kind_can_be_named_on_the_command_line():
    from matterhorn.cli import build_parser
    from regression.benches import ALL_BENCHES

    commands = next(a for a in build_parser()._actions if a.dest == "command").choices
    bench = next(a for a in commands["regress"]._actions if a.dest == "bench")
    assert tuple(bench.choices) == ALL_BENCHES


def test_synthesis_entries_build_their_block():
    specs = {s.top: s for s in prepare(4, 1, ROOT)}
    want = {b.module for b in BLOCKS if not isinstance(SYNTHESIS[b.name], Elsewhere)}
    assert set(specs) == want
    assert isinstance(SYNTHESIS["system"], Elsewhere)


def test_node_blocks_and_tiles():
    assert [b.name for b in registry.node_blocks()] == ["tile", "dense_tile"]
    assert {b.name: b.design for b in registry.tiles()} == {"tile": "spiking",
                                                            "dense_tile": "dense"}
    tile, dense = registry.block("tile").node, registry.block("dense_tile").node
    assert (tile.i, tile.o, dense.i, dense.o) == ("events", "events", "codes", "codes")
    for b in registry.node_blocks():
        b.node.image.resolve()
        b.node.run.resolve()


def test_every_node_block_is_an_instance_kind_of_the_system_area():
    import json

    schema = json.loads((ROOT / "toolkit_base/schemas/system_area.json").read_text())
    assert set(schema["$defs"]["kinds"]["propertyNames"]["enum"]) == set(KINDS)
    for b in registry.node_blocks():
        assert group(f"mttfs_system.{b.name}_x1_y0.sub") == (b.name, f"{b.name}_x1_y0")


def test_lookups_and_refs_refuse_bad_input():
    with pytest.raises(ValueError, match=r"block must be one of \('encoder', .*not 'nope'"):
        registry.block("nope")
    with pytest.raises(ValueError, match="module must be one of .* not 'mttfs_nope'"):
        registry.by_module("mttfs_nope")
    # a descriptor names rtl_gen only: a part above it would be an import upwards
    with pytest.raises(ValueError, match=r"rtl_gen.<module>:<attribute>', not 'regression"):
        Ref("regression.benches:BENCH_KINDS")
    with pytest.raises(ValueError, match="i must be one of"):
        Node("spikes", "events", Ref("rtl_gen.tile:load_beats"), Ref("rtl_gen.tile:load_beats"))
    with pytest.raises(TypeError, match="factory of block 'x' must be a Ref"):
        Block("x", "x", "rtl_gen.tile:NeuronTile", "docs/x.md", "x")
    with pytest.raises(ValueError, match="design must be one of"):
        dataclasses.replace(registry.block("tile"), design="analog")
