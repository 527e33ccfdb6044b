"""``matterhorn block`` end to end on the small random block: block.json valid and
deterministic in what it claims, block.md leading with the verdict, the plot written; the
designs chosen by --design and --k."""

from __future__ import annotations

import json

from matterhorn.cli import main
from toolkit_base.schemas import validate


def test_block_command(tmp_path, capsys):
    out = tmp_path / "b"
    code = main(["block", "--sentences", "1", "--design", "dense", "--design", "mttfs",
                 "--k", "1", "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    doc = validate(json.loads((out / "block.json").read_text()), "block", "block.json")
    assert [d["design"] for d in doc["designs"]] == ["dense", "mttfs-k1"]
    assert all(d["mismatches"] == 0 and d["checked"] > 0 for d in doc["designs"])
    assert doc["k"] == [1] and doc["sentences"] == 1 and doc["tokens"] >= 3
    assert doc["mesh"]["schema"] == "matterhorn.block_placement/1"
    dense, k1 = doc["designs"]
    assert k1["traffic"]["flits"] < dense["traffic"]["flits"]
    assert dense["events"]["ffn_contract_in"] == 2 * dense["events"]["ffn_expand_in"]
    md = (out / "block.md").read_text()
    assert md.splitlines()[2].startswith("**random block 0, 1 sentence (")
    assert "0 mismatches" in printed.splitlines()[0]
    assert (out / "block.png").stat().st_size > 1000
    assert not list(tmp_path.glob(".block-*"))
    assert str(tmp_path) not in (out / "block.json").read_text()  # no absolute path


def test_designs_in_worker_processes_make_the_same_document(tmp_path):
    """``--jobs 2`` runs each design in a worker process of a local cluster: the document is
    the one a run in this process writes, and the workers' steps reach the run's console."""
    from matterhorn import block

    class Heard:  # the run's console
        def __init__(self):
            self.lines = []

        def set_total(self, n):
            pass

        def start(self, line):
            self.lines.append(line)

        advance = say = start

    st = block.setup("random", 1)
    one = block.run(st, ["dense", "mttfs-k1"])
    heard = Heard()
    two = block.run(st, ["dense", "mttfs-k1"], jobs=2, steps=heard, keep=tmp_path / "kept")
    assert two == one
    # each worker kept its design as it ended
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == ["dense.json",
                                                                      "mttfs-k1.json"]
    # each worker's steps reach the run's console while the design runs
    told = [line for line in heard.lines if line.startswith("  ")]
    for d in ("dense", "mttfs-k1"):
        assert any(line.startswith(f"  {d}: 1 sentence through") for line in told), heard.lines


def test_each_design_is_kept_as_it_ends_and_a_later_run_takes_it(tmp_path, monkeypatch, capsys):
    """A design's result is kept in ``DIR/designs`` as it ends: when the next design fails the
    run still leaves it, the command says so, and the same command takes it instead of
    running it again and gives the document of a run from scratch. A result of another
    network, sentences or sources is not taken."""
    from matterhorn import block
    from regression.block import BlockRun

    st = block.setup("random", 1)
    fresh = block.run(st, ["dense", "mttfs-k1"])
    real = block._measure

    def fail_k1(st, d, *args, **kw):
        if d == "mttfs-k1":
            raise RuntimeError("mttfs-k1 failed")
        return real(st, d, *args, **kw)

    out = tmp_path / "b"
    argv = ["block", "--sentences", "1", "--design", "dense", "--design", "mttfs", "--k", "1",
            "--out", str(out)]
    monkeypatch.setattr(block, "_measure", fail_k1)
    assert main(argv) != 0
    assert f"kept in {out / 'designs'}: dense" in capsys.readouterr().err
    assert sorted(p.name for p in (out / "designs").iterdir()) == ["dense.json"]
    assert not (out / "block.json").exists()
    kept = json.loads((out / "designs" / "dense.json").read_text())
    assert kept["schema"] == block.KEPT_SCHEMA
    assert BlockRun.load(json.loads(json.dumps(kept["run"]))) == BlockRun.load(kept["run"])

    taken = []
    monkeypatch.setattr(block, "_measure",
                        lambda st, d, *a, **kw: taken.append(d) or real(st, d, *a, **kw))
    assert main(argv) == 0
    assert taken == ["mttfs-k1"]  # dense was taken from the earlier run
    assert "dense: taken from" in capsys.readouterr().err
    assert json.loads((out / "block.json").read_text()) == json.loads(json.dumps(fresh))

    key = block.design_key(st, "dense", block=0, tile_neurons=48, gates=None)
    assert block.kept(out / "designs", key) is not None
    for other in ({"sentences": ["Another sentence."]}, {"network": "random block, seed 1"},
                  {"code": {**key["code"], "rtl_gen": "0" * 64}}):
        assert block.kept(out / "designs", {**key, **other}) is None


def test_the_pieces_on_icarus_give_the_amaranth_runs_answer(tmp_path, capsys):
    """``--rtl icarus``: the generated Verilog in the fast harness (builds in DIR/fast); the
    same checks, deliveries and energy as the Amaranth simulator's run, only the clocks
    (the harness counts the loads too) and the simulator named differ."""
    docs = {}
    for rtl in ("amaranth", "icarus"):
        out = tmp_path / rtl
        code = main(["block", "--sentences", "1", "--design", "dense", "--design", "mttfs",
                     "--k", "1", "--rtl", rtl, "--out", str(out)])
        printed = capsys.readouterr().out
        assert code == 0, printed
        docs[rtl] = validate(json.loads((out / "block.json").read_text()), "block", "block.json")
    assert "Icarus, fast harness" in printed.splitlines()[0]
    assert docs["icarus"]["rtl_sim"] == "icarus" and docs["amaranth"]["rtl_sim"] == "amaranth"
    assert (tmp_path / "icarus" / "fast" / "sim" / "icarus").is_dir()
    for a, b in zip(docs["amaranth"]["designs"], docs["icarus"]["designs"], strict=True):
        assert b["mismatches"] == 0
        for key in ("checked", "events", "rates_percent", "traffic", "energy_pJ"):
            assert a[key] == b[key], (a["design"], key)
        assert b["cycles"] > a["cycles"]
