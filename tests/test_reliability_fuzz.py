"""Fuzzed document readers (docs/reliability.md, "Fuzzed readers").

Every document the toolkit reads is fuzzed with hypothesis from a valid one: truncated text,
values of the wrong type, NaN, Infinity, negative and huge numbers, keys removed and added,
other encodings (UTF-16, Latin-1, gzip), random bytes. Every case must end in a refusal (a
``ValueError``, ``TypeError`` or ``OSError`` whose message is one line naming the file) or in
a correct result (finite values in range, and an energy report of finite numbers where the
document feeds one); never another exception. Through the command line (``energy
--rates-file/--synth/--unit-costs``) a refused case also leaves the earlier report as it was.

Cases per reader: :data:`EXAMPLES` (``MATTERHORN_FUZZ_EXAMPLES`` to change it; the command
line cases are a quarter of it). ``benchmarks/bench_fuzz.py`` runs them at a larger count.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import math
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import energy_model as em
from golden_models.codespace import CodeSpace
from golden_models.positions import LABEL_OF_KEY, POSITION_FAMILY, POSITION_KEYS
from matterhorn.cli import main

#: Generated cases per reader.
EXAMPLES = int(os.environ.get("MATTERHORN_FUZZ_EXAMPLES", "60"))
#: Cases per reader through the command line (each one runs the energy model).
CLI_EXAMPLES = max(EXAMPLES // 4, 5)
#: Generated cases per reader of this run, for the report (printed at the end).
COUNTS: dict[str, int] = {}

REFUSED = (ValueError, TypeError, OSError)

_settings = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                     suppress_health_check=list(HealthCheck))

# ---------------------------------------------------------------------------------------------
# mutations

JUNK = st.one_of(
    st.none(), st.booleans(), st.text(max_size=6),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([-1, -1e-9, 0, 0.5, 1e308, -1e308, 10**20, 2**63, [], {}, [1, 2], {"x": 1}]),
)
#: Number tokens JSON does not have; Python's reader takes them (1e400 becomes infinity).
NON_NUMBERS = ["NaN", "Infinity", "-Infinity", "1e400", "-1e400"]


def _paths(doc, prefix=()) -> list[tuple]:
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += _paths(v, (*prefix, i))
    return out


def _get(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def _mutate(doc, data) -> object:
    """``doc`` with one structural change: a value replaced, a key removed or added."""
    doc = json.loads(json.dumps(doc))
    paths = _paths(doc)
    path = data.draw(st.sampled_from(paths), label="path")
    op = data.draw(st.sampled_from(["set", "set", "delete", "add"]), label="op")
    if not path:
        return data.draw(JUNK) if op == "set" else doc
    parent, key = _get(doc, path[:-1]), path[-1]
    if op == "set":
        parent[key] = data.draw(JUNK, label="value")
    elif op == "delete":
        del parent[key]
    elif isinstance(parent, dict):
        parent[data.draw(st.text(min_size=1, max_size=8), label="key")] = data.draw(JUNK)
    else:
        parent.append(data.draw(JUNK, label="item"))
    return doc


def _encode(doc, data) -> bytes:
    """The document as bytes, perhaps with a number JSON does not have, truncated, or in
    another encoding."""
    text = json.dumps(doc, indent=1)
    numbers = [m.span() for m in re.finditer(r"(?<![\w\"])-?\d+(\.\d+)?([eE][-+]?\d+)?", text)]
    if numbers and data.draw(st.booleans(), label="non-number"):
        a, b = data.draw(st.sampled_from(numbers))
        text = text[:a] + data.draw(st.sampled_from(NON_NUMBERS)) + text[b:]
    how = data.draw(st.sampled_from(["utf-8"] * 5 + ["truncate", "utf-16", "latin-1", "gzip",
                                                     "bytes", "empty"]), label="encoding")
    if how == "truncate":
        return text[: data.draw(st.integers(0, max(len(text) - 1, 0)))].encode()
    if how == "utf-16":
        return text.encode("utf-16")
    if how == "latin-1":
        return ("\xe9" + text).encode("latin-1", "replace")
    if how == "gzip":
        return gzip.compress(text.encode())
    if how == "bytes":
        return data.draw(st.binary(max_size=64))
    if how == "empty":
        return b""
    return text.encode()


def _document(seed, data) -> bytes:
    doc = seed
    for _ in range(data.draw(st.integers(1, 3), label="mutations")):
        doc = _mutate(doc, data)
    return _encode(doc, data)


def _refusal(exc: BaseException, name: str) -> None:
    message = str(exc)
    assert "\n" not in message, f"a message of several lines: {message!r}"
    assert name in message, f"the message does not name {name!r}: {message!r}"


def _fuzz(key: str, seed, read: Callable[[Path], object], check: Callable[[object], None],
          folder: Path, name: str, n: int = EXAMPLES) -> int:
    """Run ``n`` generated documents through ``read``; return how many ran."""
    count = 0

    @settings(_settings, max_examples=n)
    @given(data=st.data())
    def run(data):
        nonlocal count
        count += 1
        path = folder / name
        path.write_bytes(_document(seed, data) if not callable(seed) else seed(data))
        try:
            result = read(path)
        except REFUSED as exc:
            _refusal(exc, name)
            return
        check(result)

    run()
    COUNTS[key] = COUNTS.get(key, 0) + count
    return count


# ---------------------------------------------------------------------------------------------
# what a correct result is


def _finite_tree(x, where="report") -> None:
    if isinstance(x, float):
        assert math.isfinite(x), f"{where} holds {x}"
    elif isinstance(x, dict):
        for k, v in x.items():
            _finite_tree(v, f"{where}.{k}")
    elif isinstance(x, list | tuple):
        for i, v in enumerate(x):
            _finite_tree(v, f"{where}[{i}]")


def _check_costs(costs) -> None:
    for key, cost in costs.items():
        assert 0 <= cost.joules <= em.unit_costs.MAX_PJ * 1e-12, key
    table = em.paper_unit_costs().overlay(costs)
    report = em.compute("bert-base", em.Rates.paper(), table)
    _finite_tree(report.to_json())


def _check_rates(rates) -> None:
    for rate in [rates.ttfs, *rates.mttfs.values()]:
        if rate is None:
            continue
        values = rate.value.values() if rate.per_position else [rate.value]
        assert all(0 <= v <= 1 for v in values)
    for bits in rates.bit_serial.values():
        values = bits.value.values() if isinstance(bits.value, dict) else [bits.value]
        assert all(math.isfinite(v) and v >= 0 for v in values)
    report = em.compute(em.preset("minilm-l6"), rates, em.paper_unit_costs())
    _finite_tree(report.to_json())


# ---------------------------------------------------------------------------------------------
# valid seeds, each made by the toolkit's own writer or in its documented shape


def synth_seed() -> dict:
    return {"schema": em.unit_costs.SYNTH_SCHEMA, "unit_costs_pJ": {
        "E_ACC4": {"value": 0.0213, "unit": "pJ/op", "provenance": "mh_acc4"},
        "E_CMP": {"value": 0.0101, "unit": "pJ/op", "provenance": "mh_cmp"},
        "E_move_event_router": {"value": 0.41, "unit": "pJ/event/hop", "provenance": "router"},
    }}


def unit_costs_seed() -> dict:
    from importlib import resources

    return json.loads(resources.files("energy_model").joinpath(
        "data/paper_unit_costs.json").read_text())


def _tau_hist(rng: torch.Generator, T: int) -> list[int]:
    return [int(v) for v in torch.randint(0, 50, (T,), generator=rng)]


def minilm_stats_seed(T: int = 16, blocks: int = 2, ks=(0, 1, 2)) -> dict:
    """A statistics document of ``matterhorn stats`` (schema ``matterhorn.minilm_stats/1``)
    with every rate the writer puts in it (network, blocks, positions)."""
    from energy_model.histogram import Histogram, mttfs_rate, ttfs_rate

    rng = torch.Generator().manual_seed(0)
    records = {}  # (block, key) -> (tau histogram, i_max)
    for b in range(blocks):
        for key in POSITION_KEYS:
            records[(b, key)] = (_tau_hist(rng, T), 7 + b % 2)

    def hist(key, tau):
        space = CodeSpace(T, POSITION_FAMILY[LABEL_OF_KEY[key]])
        return Histogram(space, {space.c - t: n for t, n in enumerate(tau) if n})

    def rates_of(keys) -> dict:
        total = sum(sum(records[k][0]) for k in keys)
        out = {"TTFS": round(sum(ttfs_rate(hist(k[1], records[k][0])) * sum(records[k][0])
                                 for k in keys) / total, 6)}
        for kk in ks:
            out[f"k={kk}"] = round(sum(
                mttfs_rate(h := hist(k[1], records[k][0]), kk,
                           h.space.c - records[k][1]) * sum(records[k][0]) for k in keys)
                / total, 6)
        return out

    doc = {"schema": em.rates.MINILM_SCHEMA, "T": T, "k_max": max(ks),
           "rates": rates_of(list(records)), "positions": [], "blocks": []}
    for key in POSITION_KEYS:
        keys = [(b, key) for b in range(blocks)]
        pooled = [sum(records[k][0][t] for k in keys) for t in range(T)]
        doc["positions"].append({"position": key, "histogram_tau": pooled,
                                 "rates": rates_of(keys)})
    for b in range(blocks):
        doc["blocks"].append({"block": b, "rates": rates_of([(b, k) for k in POSITION_KEYS]),
                              "positions": {
            key: {"histogram_tau": records[(b, key)][0], "i_max": records[(b, key)][1],
                  "histogram_tau_k": {f"k={kk}": records[(b, key)][0] for kk in ks}}
            for key in POSITION_KEYS}})
    return doc


def golden_stats_seed() -> dict:
    from golden_models.statistics import PositionStats, stats_document

    rng = torch.Generator().manual_seed(1)
    records = []
    for key in POSITION_KEYS:
        label = LABEL_OF_KEY[key]
        space = CodeSpace(16, POSITION_FAMILY[label])
        counts = torch.randint(1, 40, (16,), generator=rng)
        records.append(PositionStats.from_counts(label, counts, space, i_max=space.c))
    return stats_document(records)


def rate_table_seed() -> dict:
    return {"T": 16, "spike_rate_percent": {
        "TTFS": 3.74, "M-TTFS k=0": 2.6,
        "M-TTFS k=1": {LABEL_OF_KEY[k]: 1.0 + i / 10 for i, k in enumerate(POSITION_KEYS)}},
        "bit_events_per_delivery": {"k=0": 1.08, "k=1": 0.64}}


def slice_seed() -> dict:
    from golden_models.qnn import random_qnn
    from networks.rtl_slice import LayerSlice, slice_document

    chain = random_qnn((12, 4), T=16, k=1, weight_bits=4, seed=3)
    layer = chain.integer_layers()[0]
    q_in = chain.random_input(3, seed=4)
    q_out = torch.stack([layer.out_mask.space.c - layer.run_codes(q).tau for q in q_in])
    return slice_document(LayerSlice(layer, q_in, q_out, {"model": "random", "k": 1}))


def finetune_seed() -> dict:
    from toolkit_base.schemas import validate

    quality = {"cos_float": {"mean": 0.9, "min": 0.8}, "retrieval_agreement": 0.9,
               "bit_exact_qnn": None,
               "rates": {"network": 0.01, "positions": {k: 0.01 for k in POSITION_KEYS}}}
    doc = {"schema": "matterhorn.finetune/1", "model": "all-MiniLM-L6-v2", "model_key": "minilm",
           "T": 16, "weight_bits": 4, "act_bits": 4, "rounding": "round",
           "corpus": {"name": "pydoc-topics", "source": "x", "calibration_sentences": 4,
                      "evaluation_sentences": 2},
           "recipe": {}, "runs": [{
               "k": 1, "config": {"steps": 2, "batch": 2, "lr": 0.002, "warmup": 0,
                                  "weight_decay": 0.0, "seed": 0, "threads": 1,
                                  "init": "conversion"},
               "training": {"corpora": [], "sentences": 4, "loss_first": 1.0,
                            "loss_last": 0.5, "train_seconds": 1.0, "wall_seconds": 1.0},
               "before": quality, "after": quality}]}
    return validate(doc, "finetune", "finetune.json")


@pytest.fixture(scope="module")
def manifest_seed() -> dict:
    from rtl_gen.generate import elaborate
    from rtl_gen.params import RTLConfig

    return elaborate(RTLConfig(T=4, k=1, n_in=4, tile_neurons=2, mesh_rows=1, mesh_cols=2))[1]


# ---------------------------------------------------------------------------------------------
# the readers


def test_fuzz_synth_report(tmp_path):
    assert _fuzz("synth_report.json (load_synth_report)", synth_seed(),
                 em.load_synth_report, _check_costs, tmp_path, "synth_report.json") >= EXAMPLES


def test_fuzz_unit_costs(tmp_path):
    assert _fuzz("unit costs (load_unit_costs)", unit_costs_seed(), em.load_unit_costs,
                 _check_costs, tmp_path, "costs.json") >= EXAMPLES


@pytest.mark.parametrize("kind", ["minilm", "golden", "rate-table", "rates.json"])
def test_fuzz_statistics(kind, tmp_path):
    seed = {"minilm": minilm_stats_seed, "golden": golden_stats_seed,
            "rate-table": rate_table_seed,
            "rates.json": lambda: {"schema": em.rates.MINILM_RATES_SCHEMA, "T": 16,
                                   "network": {"TTFS": 0.03}, "positions": {}}}[kind]()
    if kind != "rates.json":
        _check_rates(em.load_stats(_seeded(tmp_path, seed)))  # the seed itself is read
    assert _fuzz(f"statistics, {kind} (load_stats)", seed, em.load_stats, _check_rates,
                 tmp_path, "stats.json") >= EXAMPLES


def _seeded(folder: Path, doc) -> Path:
    path = folder / "seed.json"
    path.write_text(json.dumps(doc))
    return path


def test_fuzz_slice(tmp_path):
    from networks.rtl_slice import read_slice

    seed = slice_seed()
    read_slice(_seeded(tmp_path, seed))

    def check(sl) -> None:
        assert sl.q_in.shape == (sl.q_out.shape[0], sl.layer.n_in)
        assert sl.q_out.shape[1] == sl.layer.n_out

    assert _fuzz("slice (networks.rtl_slice.read_slice)", seed, read_slice, check, tmp_path,
                 "slice.json") >= EXAMPLES


def test_fuzz_checkpoint(tmp_path):
    from safetensors.torch import save_file

    from networks import checkpoint

    folder = tmp_path / "k1"
    folder.mkdir()
    save_file({"a.alpha": torch.ones(1, dtype=torch.float64)}, str(folder / checkpoint.TENSORS))
    tensors = (folder / checkpoint.TENSORS).read_bytes()
    seed = finetune_seed()
    (folder / checkpoint.DOCUMENT).write_text(json.dumps(seed))
    checkpoint.check(folder)

    def check(doc) -> None:
        assert doc["runs"][0]["k"] >= 0

    # the document, then the tensor file (truncated, bytes changed, replaced)
    assert _fuzz("checkpoint finetune.json (networks.checkpoint.check)", seed,
                 lambda p: checkpoint.check(p.parent), check, folder, checkpoint.DOCUMENT) \
        >= EXAMPLES
    (folder / checkpoint.DOCUMENT).write_text(json.dumps(seed))

    def tensor_bytes(data) -> bytes:
        how = data.draw(st.sampled_from(["truncate", "flip", "random"]))
        if how == "truncate":
            return tensors[: data.draw(st.integers(0, len(tensors) - 1))]
        if how == "flip":
            i = data.draw(st.integers(0, len(tensors) - 1))
            return tensors[:i] + bytes([tensors[i] ^ data.draw(st.integers(1, 255))]) \
                + tensors[i + 1:]
        return data.draw(st.binary(max_size=128))

    assert _fuzz("checkpoint tensors (networks.checkpoint.check)", tensor_bytes,
                 lambda p: checkpoint.check(p.parent), lambda doc: None, folder,
                 checkpoint.TENSORS) >= EXAMPLES


def test_fuzz_manifest(tmp_path, manifest_seed):
    from regression.cache import read_manifest

    def check(doc) -> None:
        assert isinstance(doc["modules"], dict)

    assert _fuzz("manifest.json (regression.cache.read_manifest)", manifest_seed,
                 read_manifest, check, tmp_path, "manifest.json") >= EXAMPLES


def test_fuzz_corpus(tmp_path):
    from networks.corpus import check_corpus, load_corpus

    lines = ["This sentence is long enough to be kept as prose here.",
             f"Another sentence number {7} of the small corpus is here too."]
    lines += [f"Sentence number {i} of a small corpus is written here." for i in range(30)]

    def text(data) -> bytes:
        body = data.draw(st.lists(st.one_of(st.sampled_from(lines), st.text(max_size=60)),
                                  max_size=40))
        raw = "\n".join(body)
        how = data.draw(st.sampled_from(["utf-8"] * 4 + ["latin-1", "utf-16", "nul", "bytes"]))
        if how == "latin-1":
            return ("Caf\xe9 " + raw).encode("latin-1", "replace")
        if how == "utf-16":
            return raw.encode("utf-16")
        if how == "nul":
            return raw.encode() + b"\0"
        if how == "bytes":
            return data.draw(st.binary(max_size=200))
        return raw.encode("utf-8", "surrogatepass")

    def read(path):
        check_corpus(str(path))
        return load_corpus(str(path))

    def check(corpus) -> None:
        assert corpus.calibration and corpus.evaluation
        assert all(isinstance(s, str) and s for s in corpus.calibration + corpus.evaluation)

    assert _fuzz("corpus text file (networks.corpus.load_corpus)", text, read, check, tmp_path,
                 "corpus.txt") >= EXAMPLES


# ---------------------------------------------------------------------------------------------
# through the command line: never a traceback, never a replaced earlier report


def _tree(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("option", ["--rates-file", "--synth", "--unit-costs"])
def test_fuzz_energy_command(option, tmp_path):
    seed = {"--rates-file": minilm_stats_seed(), "--synth": synth_seed(),
            "--unit-costs": unit_costs_seed()}[option]
    out = tmp_path / "out"
    extra = ["--preset", "minilm-l6"] + ([] if option == "--rates-file" else ["--rate", "1.5"])
    with contextlib.redirect_stdout(io.StringIO()):  # the earlier report, from the seed
        assert main(["energy", *extra, option, str(_seeded(tmp_path, seed)), "--no-plots",
                     "--out", str(out)]) == 0
    name = {"--rates-file": "stats.json", "--synth": "synth_report.json",
            "--unit-costs": "costs.json"}[option]

    def read(path: Path):
        before = _tree(out)
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(["energy", *extra, option, str(path), "--no-plots", "--out", str(out)])
        assert code in (0, 2), err.getvalue()
        if code == 2:
            lines = err.getvalue().splitlines()
            assert len(lines) == 1 and lines[0].startswith("matterhorn energy: error: "), lines
            assert name in lines[0], lines[0]
            assert _tree(out) == before  # the earlier report stays
            return None
        return json.loads((out / "energy_report.json").read_text())

    def check(report) -> None:
        if report is not None:
            _finite_tree(report)

    assert _fuzz(f"energy {option} (command line)", seed, read, check, tmp_path, name,
                 n=CLI_EXAMPLES) >= CLI_EXAMPLES


def test_zz_report_counts(capsys):
    # the figures of docs/reliability.md: cases per reader of this run
    with capsys.disabled():
        for key, n in sorted(COUNTS.items()):
            print(f"\nfuzz cases: {n:5d}  {key}", end="")
        print()
