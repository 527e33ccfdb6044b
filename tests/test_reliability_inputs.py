"""Validation before work, over every subcommand (docs/reliability.md, "Validation before work").

Every input of a command (files, folders, numbers, names) is checked before its first
expensive step and before anything in ``--out`` is touched. Each case below runs
``matterhorn.cli.main`` in a folder that holds an earlier run's files in ``o/``, the bad input,
and "tripwires" on the expensive steps of the toolkit: a tool process starting, MiniLM being
loaded, a corpus of the standard library being built, Verilog being elaborated, a cluster or
an executor opening, the energy model running, the flow writing its running marker. A case
passes when the command exits 2 with one line ``matterhorn COMMAND: error: ...`` naming the
value, no tripwire was crossed, and not one byte in the folder changed.

``test_every_input_is_covered`` walks the parser: every subcommand needs a case, every
command with ``--out`` an unwritable one, every command with numbers a bad number, and every
free-form option (a file, a folder, a name) must be listed in :data:`FILE_OPTIONS` or
:data:`NAME_OPTIONS` with a case of its own. A new command or option fails it until covered.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from matterhorn.cli import COMMANDS, build_parser, main
from matterhorn.commands import mesh_arg

#: Options that name a file or folder the command reads: each needs a malformed-file case.
FILE_OPTIONS = {
    "synth": {"liberty"},
    "energy": {"rates_file", "unit_costs", "synth"},
    "stats": {"corpus", "synth", "checkpoint", "model"},
    "compare": {"liberty", "slice", "model"},
    "flow": {"liberty", "rates_file", "model", "config"},
    "finetune": {"corpus", "extra", "model"},
    "layer": {"model"},
    "qonnx": {"model"},
    "block": {"model", "checkpoint", "liberty"},
    "network": {"model", "checkpoints", "liberty"},
}
#: Free-form options that name something (a model, a preset, an address): each needs a case.
NAME_OPTIONS = {
    "generate": {"prefix"},
    "regress": {"scheduler"},
    "synth": {"scheduler", "system"},
    "energy": {"preset", "task", "event_cost"},
    "prove": {"only"},
    "sram": {"shapes"},
    "finetune": {"start"},
    "layer": {"layer"},
    "block": {"scheduler"},
    "network": {"sentence"},
}


class Tripwire(BaseException):
    """An expensive step started before the bad input was refused (a BaseException, so that
    no ``except Exception`` of the command swallows it)."""


@dataclass(frozen=True)
class Case:
    """One bad input: ``argv`` (``o`` is a folder of earlier outputs), the kind of input
    (``out``, ``number``, ``file:<dest>`` or ``name:<dest>``), a substring of the message,
    and what to put in the folder first."""

    argv: str
    kind: str
    message: str
    setup: Callable[[Path], None] | None = None

    @property
    def command(self) -> str:
        return self.argv.split()[0]


def _write(rel: str, data: bytes | str) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data.encode() if isinstance(data, str) else data)
    return setup


def _both(*setups) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        for s in setups:
            s(root)
    return setup


def _float_checkpoint(rel: str) -> Callable[[Path], None]:
    """A checkpoint folder fine-tuned with float non-linearities (no ``integer`` in its
    document), with a tensor file whose header reads."""
    def setup(root: Path) -> None:
        import torch
        from safetensors.torch import save

        from tests.test_reliability_fuzz import finetune_seed

        _write(f"{rel}/finetune.json", json.dumps(finetune_seed()))(root)
        _write(f"{rel}/checkpoint.safetensors", save({"a.alpha": torch.ones(1)}))(root)
    return setup


MALFORMED_SYNTH = json.dumps({"schema": "matterhorn.synth_report/2",
                              "unit_costs_pJ": {"E_ACC4": {"value": "x", "unit": "pJ/op"}}})
NAN_RATES = '{"T": 16, "spike_rate_percent": {"M-TTFS k=1": NaN}}'
#: A model folder of a decoder (outside the BERT family the toolkit converts).
DECODER = json.dumps({"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]})
#: A BERT configuration with another activation.
RELU = json.dumps({"model_type": "bert", "hidden_act": "relu", "hidden_size": 8,
                   "num_attention_heads": 2, "num_hidden_layers": 1, "intermediate_size": 8,
                   "vocab_size": 8})
RO = "ro"  # an earlier output folder, made read-only by the test


def _checkpoint(folder: str, k: int, *, model_key: str = "minilm", integer: bool = True,
                residual_bits: int = 16) -> Callable[[Path], None]:
    """A checkpoint folder that passes every check made before the model is loaded (its
    document valid, its tensor file a safetensors header), fine-tuned at ``k`` for
    ``model_key``, in integer mode or not."""
    import struct

    from golden_models.positions import POSITION_KEYS

    quality = {"cos_float": {"mean": 0.9, "min": 0.8}, "retrieval_agreement": 0.9,
               "bit_exact_qnn": None,
               "rates": {"network": 0.01, "positions": dict.fromkeys(POSITION_KEYS, 0.01)}}
    doc = {"schema": "matterhorn.finetune/1", "model": "all-MiniLM-L6-v2", "model_key": model_key,
           "T": 16, "weight_bits": 4, "act_bits": 4, "rounding": "round",
           "corpus": {"name": "pydoc-topics", "source": "x", "calibration_sentences": 4,
                      "evaluation_sentences": 2},
           "recipe": {}, "runs": [{
               "k": k, "config": {"steps": 2, "batch": 2, "lr": 0.002, "warmup": 0,
                                  "weight_decay": 0.0, "seed": 0, "threads": 1,
                                  "init": "conversion"},
               "training": {"corpora": [], "sentences": 4, "loss_first": 1.0,
                            "loss_last": 0.5, "train_seconds": 1.0, "wall_seconds": 1.0},
               "before": quality, "after": quality}]}
    if integer:
        doc["integer"] = {"residual_bits": residual_bits, "guard_bits": 5, "exp_frac_bits": 6}
    header = b'{"x":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}}'
    tensors = struct.pack("<Q", len(header)) + header + b"\0" * 8
    return _both(_write(f"{folder}/finetune.json", json.dumps(doc)),
                 _write(f"{folder}/checkpoint.safetensors", tensors))

CASES = [
    Case("demo --batch 0", "number", "batch must be in 1..4096, not 0"),
    Case("demo --n-in 1.5", "number", "--n-in must be an integer, not '1.5'"),
    Case(f"generate --out {RO}", "out", f"output folder '{RO}' cannot be written"),
    Case("generate --out file.txt/o", "out", "'file.txt' is a file, not a folder"),
    Case("generate --out o --lanes 9", "number", "lanes must be in 1..8, not 9"),
    # before: the move out of the staging folder failed after the elaboration, naming
    # '.rtl_gen-*/mttfs_tile.v'
    Case("generate --out o", "out", "output folder 'o' holds a folder 'mttfs_tile.v' where the "
         "command writes a file", _write("o/mttfs_tile.v/notes.txt", "the user's")),
    Case(f"regress --T 4 --out {RO}", "out", f"output folder '{RO}' cannot be written"),
    Case("regress --T 4 --out o", "out", "output folder 'o' holds a file 'sim' where",
         _write("o/sim", "a file of the user's")),
    Case("regress --T 4 --workers 2.5 --out o", "number",
         "-j/--jobs/--workers must be an integer, not '2.5'"),
    Case("regress --T 4 --scheduler nowhere --out o", "name:scheduler",
         "scheduler address 'nowhere' is malformed"),
    Case(f"synth --T 4 --out {RO}", "out", f"output folder '{RO}' cannot be written"),
    Case("synth --T 4 --clock-ns 0 --out o", "number", "clock_ns must be in 0.1..1000 ns"),
    Case("synth --T 4 --liberty bad.lib --out o", "file:liberty",
         "'bad.lib' is not a Liberty file", _write("bad.lib", "not a liberty\n")),
    Case("synth --T 4 --scheduler tcp://x --out o", "name:scheduler",
         "scheduler address 'tcp://x' is malformed"),
    Case("synth --system 2x2 --scheduler tcp://127.0.0.1:9 --out o", "name:system",
         "--system synthesizes one configuration in this process: it cannot go with "
         "--scheduler"),
    Case(f"energy --out {RO}", "out", f"output folder '{RO}' cannot be written"),
    Case("energy --hidden 0 --out o", "number", "hidden must be >= 1, not 0"),
    Case("energy --rates-file nan.json --out o", "file:rates_file",
         "statistics file nan.json is not valid JSON: NaN is not a JSON number",
         _write("nan.json", NAN_RATES)),
    Case("energy --rates-file rates.json --out o", "file:rates_file",
         "is the rates summary of matterhorn stats",
         _write("rates.json", '{"schema": "matterhorn.minilm_rates/1", "positions": {}}')),
    Case("energy --unit-costs costs.json --out o", "file:unit_costs",
         "unit-cost file costs.json is missing 'E_MAC4'",
         _write("costs.json", '{"unit_costs_pJ": {}}')),
    Case("energy --synth bad.json --out o", "file:synth",
         "unit cost 'E_ACC4' in bad.json must be a number >= 0, not 'x'",
         _write("bad.json", MALFORMED_SYNTH)),
    Case("energy --synth huge.json --out o", "file:synth",
         "unit cost 'E_ACC4' in huge.json must be at most 1e+06 pJ",
         _write("huge.json", MALFORMED_SYNTH.replace('"x"', "1e308"))),
    Case("energy --preset nope --out o", "name:preset", "unknown preset 'nope'"),
    Case("energy --task nope --out o", "name:task", "unknown task 'nope'"),
    Case("energy --event-cost 1e308 --out o", "name:event_cost",
         "event cost must be a number of pJ in 0..1e+06, not 1e+308"),
    Case(f"stats --model minilm --out {RO}", "out", f"output folder '{RO}' cannot be written"),
    Case("stats --model minilm --synth bad.json --out o", "file:synth",
         "unit cost 'E_ACC4' in bad.json must be a number >= 0, not 'x'",
         _write("bad.json", MALFORMED_SYNTH)),
    Case("stats --model minilm --corpus latin1.txt --out o", "file:corpus",
         "corpus file 'latin1.txt' is not UTF-8 text (byte 0xe9 at offset 3)",
         _write("latin1.txt", "Caf\xe9 is a word of French origin here.\n".encode("latin-1"))),
    Case("stats --model minilm --checkpoint ckpt --out o", "file:checkpoint",
         "checkpoint document finetune.json is not valid JSON",
         _both(_write("ckpt/finetune.json", "{not json"),
               _write("ckpt/checkpoint.safetensors", b"\0" * 16))),
    Case("stats --model minilm --checkpoint file.txt --out o", "file:checkpoint",
         "checkpoint folder 'file.txt' is a file, not a folder"),
    Case("stats --model minilm --integer --checkpoint k1 --out o", "file:checkpoint",
         "checkpoint 'k1' was fine-tuned with float non-linearities; it cannot be measured in "
         "integer mode (fine-tune with --integer for that)", _float_checkpoint("k1")),
    Case("stats --model minilm --threads 0 --out o", "number", "threads must be at least 1"),
    Case("stats --model gpt --out o", "file:model",
         "--model 'gpt' is neither the shipped model 'minilm' nor an existing model folder"),
    Case("stats --model gpt2 --out o", "file:model", "model folder 'gpt2' is a decoder",
         _write("gpt2/config.json", DECODER)),
    Case(f"compare --out {RO}", "out", f"output folder '{RO}' cannot be written"),
    Case(f"compare --out {RO}/new", "out", f"output folder '{RO}/new' cannot be written: no "
         f"entry can be made in '{RO}'"),
    Case("compare --k -1 --out o", "number", "k must be 0, 1 or 2 (the compared radii), not -1"),
    Case("compare --liberty lib.d --out o", "file:liberty",
         "liberty file 'lib.d' is a folder, not a file", _write("lib.d/x.lib", "")),
    Case("compare --liberty bad.lib --out o", "file:liberty", "liberty 'bad.lib' defines no cells",
         _write("bad.lib", "library (x) {\n")),
    Case("compare --slice slice.json --out o", "file:slice",
         "slice.json: field 'n_in' is missing",
         _write("slice.json", '{"schema": "matterhorn.layer_slice/1"}')),
    Case("compare --model relu --out o", "file:model",
         "model folder 'relu' has hidden_act 'relu', not 'gelu'", _write("relu/config.json", RELU)),
    Case(f"flow --T 4 --out {RO}", "out", f"output folder '{RO}' cannot be written"),
    Case("flow --T 4 --out o", "out", "output folder 'o' holds a file 'synth' where",
         _write("o/synth", "a file of the user's")),
    Case("flow --T 4 --clock-ns 0 --out o", "number", "clock_ns must be in 0.1..1000 ns"),
    Case("flow --T 4 --liberty bad.lib --out o", "file:liberty",
         "'bad.lib' is not a Liberty file", _write("bad.lib", "not a liberty\n")),
    Case("flow --T 4 --rates-file nan.json --out o", "file:rates_file",
         "statistics file nan.json is not valid JSON", _write("nan.json", NAN_RATES)),
    Case("flow --T 4 --model relu --out o", "file:model",
         "model folder 'relu' has hidden_act 'relu', not 'gelu'", _write("relu/config.json", RELU)),
    Case(f"prove --out {RO}", "out", f"output folder '{RO}' cannot be written"),
    Case("prove --out file.txt", "out", "output folder 'file.txt' exists and is not a directory"),
    Case("prove --out o", "out", "output folder 'o' holds a file 'jobs' where",
         _write("o/jobs", "a file of the user's")),
    Case("prove --only nope --out o", "name:only", "unknown property 'nope'"),
    Case("finetune --model minilm --k 1 --out file.txt/x", "out",
         "output folder 'file.txt/x' cannot be created: 'file.txt' is a file"),
    Case(f"finetune --model minilm --k 1 --out {RO}", "out",
         f"output folder '{RO}' cannot be written"),
    Case("finetune --model minilm --k 1 --corpus binary.txt --out o", "file:corpus",
         "corpus file 'binary.txt' is not UTF-8 text",
         _write("binary.txt", bytes(range(256)) * 4)),
    Case("finetune --model minilm --k 1 --extra latin1.txt --out o", "file:extra",
         "corpus file 'latin1.txt' is not UTF-8 text",
         _write("latin1.txt", "Caf\xe9 is a word of French origin here.\n".encode("latin-1"))),
    Case("finetune --model minilm --k 1 --batch 0 --out o", "number",
         "batch must be in 1..4096, not 0"),
    Case("finetune --model gpt2 --k 1 --out o", "file:model", "model folder 'gpt2' is a decoder",
         _write("gpt2/config.json", DECODER)),
    Case("finetune --model minilm --k 1 --start k1 --out o", "name:start",
         "--start must be one of ('k0', 'conversion'), not 'k1'"),
    Case(f"layer --out {RO}", "out", f"output folder '{RO}' cannot be written"),
    Case("layer --out o", "out", "output folder 'o' holds a file 'runs' where",
         _write("o/runs", "a file of the user's")),
    Case("layer --windows 1.5 --out o", "number", "--windows must be an integer, not '1.5'"),
    Case("layer --layer nope --out o", "name:layer", "--layer must be one of ('minilm-q',)"),
    Case("layer --model gpt2 --out o", "file:model", "model folder 'gpt2' is a decoder",
         _write("gpt2/config.json", DECODER)),
    Case(f"attention --out {RO}", "out", f"output folder '{RO}' cannot be written"),
    Case("attention --sentences 0 --out o", "number", "--sentences must be in 1..4096, not 0"),
    Case("attention --longest 65 --out o", "number",
         "--longest 65 exceeds --seq-max 64: a sequence longer than the design's seq_max=64"),
    Case("attention --heads 8 --out o", "number", "--heads 8 does not match MiniLM's 12 heads"),
    Case("attention --head-dim 64 --out o", "number",
         "--head-dim 64 does not match MiniLM's head dimension 32"),
    Case(f"block --out {RO}", "out", f"output folder '{RO}' cannot be written"),
    Case("block --sentences 0 --out o", "number", "--sentences must be in 1..4096, not 0"),
    Case("block --k 3 --out o", "number", "--k must be 0, 1 or 2 (the compared radii), not 3"),
    Case("block --tile-neurons 300 --out o", "number", "--tile-neurons must be in 1..256, not 300"),
    Case("block --workers 0 --out o", "number", "--jobs must be in 1..64, not 0"),
    Case("block --model gpt2 --out o", "file:model", "model folder 'gpt2' is a decoder",
         _write("gpt2/config.json", DECODER)),
    Case("block --model minilm --checkpoint ckpt --out o", "file:checkpoint",
         "checkpoint document finetune.json is not valid JSON",
         _both(_write("ckpt/finetune.json", "{not json"),
               _write("ckpt/checkpoint.safetensors", b"\0" * 16))),
    Case("block --checkpoint ckpt --out o", "file:checkpoint",
         "--checkpoint needs the model it was fine-tuned from (--model minilm or a model "
         "folder), not the random block"),
    Case("block --gates --liberty bad.lib --out o", "file:liberty",
         "liberty 'bad.lib' defines no cells", _write("bad.lib", "library (x) {\n")),
    Case("block --liberty any.lib --out o", "file:liberty",
         "--liberty 'any.lib' prices in gates: add --gates"),
    Case("block --k -1 --out o", "number", "--k must be 0, 1 or 2 (the compared radii), not -1"),
    Case("block --model foo --out o", "file:model",
         "--model 'foo' is neither 'random', the shipped model 'minilm' nor an existing model "
         "folder"),
    Case("block --gates --gate-sentences 1 --out o", "number",
         "--gate-sentences must be 0 (every sentence replayed) or 2 or more"),
    Case("block --out o", "out", "output folder 'o' holds a file 'gates' where the command keeps "
         "its gates/ folder", _write("o/gates", "a file\n")),
    Case("block --out o", "out", "output folder 'o' holds a folder 'block.md' where the command "
         "writes a file", _write("o/block.md/x", "a file\n")),
    Case("network --out o", "out", "output folder 'o' holds a file 'designs' where the command "
         "keeps its designs/ folder", _write("o/designs", "a file\n")),
    Case("block --gates --sentences 3 --gate-sentences 4 --out o", "number",
         "--gate-sentences must be in 0..3, not 4"),
    Case("block --gate-sentences 2 --out o", "number",
         "--gate-sentences 2 prices in gates: add --gates"),
    Case(f"qonnx --out {RO}", "out", f"output folder '{RO}' cannot be written"),
    Case("qonnx --calibration 0 --out o", "number", "calibration must be in 1..100000, not 0"),
    Case("qonnx --model gpt2 --out o", "file:model", "model folder 'gpt2' is a decoder",
         _write("gpt2/config.json", DECODER)),
    Case("generate --out o --prefix 9x", "name:prefix",
         "prefix must be letters, digits and _ not starting with a digit"),
    Case("flow --config bad.toml --out o", "file:config",
         "bad.toml: field '(document)': Additional properties are not allowed",
         _write("bad.toml", 'T = "x"\n')),
    Case("sram --shapes 12x32 --out o", "name:shapes",
         "macro words must be a power of two >= 16 (OpenRAM's smallest array), not 12"),
    Case(f"sram --out {RO}", "out", f"output folder '{RO}' cannot be written"),
    Case("sram --period 0 --out o", "number", "--period must be positive, not 0.0"),
    Case("sram --out o", "out", "freepdk45_macros.json: field 'technology' is missing",
         _write("o/freepdk45_macros.json", '{"schema": "matterhorn.sram_macros/1"}')),
    Case("block --gate-tiles 2 --out o", "number", "--gate-tiles 2 prices in gates: add --gates"),
    Case("block --gates --gate-windows -1 --out o", "number",
         "--gate-windows must be in 0..1048576, not -1"),
    Case("block --scheduler tcp://x --out o", "name:scheduler",
         "scheduler address 'tcp://x' is malformed"),
    Case(f"network --out {RO}", "out", f"output folder '{RO}' cannot be written"),
    Case("network --sentences 0 --out o", "number", "--sentences must be in 1..4096, not 0"),
    Case("network --k 3 --out o", "number", "--k must be 0, 1 or 2 (the compared radii), not 3"),
    Case("network --gates --gate-block 2 --out o", "number",
         "--gate-block must be in 0..1, not 2"),
    Case("network --validate-block 1 --out o", "number",
         "--validate-block 1 prices in gates: add --gates"),
    Case("network --gate-heads 3 --out o", "number", "--gate-heads 3 prices in gates: add --gates"),
    Case("network --gates --gate-tiles -2 --out o", "number",
         "--gate-tiles must be in 0..4096, not -2"),
    Case("network --model gpt2 --out o", "file:model", "model folder 'gpt2' is a decoder",
         _write("gpt2/config.json", DECODER)),
    Case("network --gates --liberty bad.lib --out o", "file:liberty",
         "liberty 'bad.lib' defines no cells", _write("bad.lib", "library (x) {\n")),
    Case("network --checkpoints ck --out o", "file:checkpoints",
         "--checkpoints needs the model they were fine-tuned from (--model minilm or a model "
         "folder), not the random network"),
    Case("network --model minilm --out o", "file:checkpoints",
         "--checkpoints DIR is needed: the networks fine-tuned in integer mode that the designs "
         "run (DIR/k0, DIR/k1, DIR/k2); train them with `matterhorn finetune --model minilm "
         "--k 0 1 2 --integer --out DIR` (about an hour and a quarter on 2 cores"),
    Case("network --model minilm --checkpoints ck --design dense --design mttfs --k 1 --out o",
         "file:checkpoints", "--checkpoints 'ck' has no k1 (the network fine-tuned at k = 1, "
         "which mttfs-k1 runs); train them with", _checkpoint("ck/k0", 0)),
    Case("network --model minilm --checkpoints ck --design dense --out o", "file:checkpoints",
         "checkpoint 'ck/k0' is of model 'bert-base', not 'minilm'",
         _checkpoint("ck/k0", 0, model_key="bert-base")),
    Case("network --model minilm --checkpoints ck --design mttfs --k 2 --out o",
         "file:checkpoints", "checkpoint 'ck/k2' was fine-tuned at k=1, not k=2",
         _checkpoint("ck/k2", 1)),
    Case("network --model minilm --checkpoints ck --design ttfs --out o", "file:checkpoints",
         "checkpoint 'ck/k0' was fine-tuned with float non-linearities, not in integer mode",
         _checkpoint("ck/k0", 0, integer=False)),
    Case("network --model minilm --checkpoints ck --design dense --design mttfs --k 1 --out o",
         "file:checkpoints", "checkpoint 'ck/k1' has another configuration than k0's (integer "
         "{'residual_bits': 12",
         _both(_checkpoint("ck/k0", 0), _checkpoint("ck/k1", 1, residual_bits=12))),
    Case("network --sentence 'one two three four five six seven' --out o", "name:sentence",
         "--sentence 'one two three four five six seven' is 9 tokens; the generated hardware "
         "takes at most 8"),
]


# ---------------------------------------------------------------------------------------------
# the folder, read-only folders and the tripwires


def _read_only(folder: Path) -> None:
    """Make ``folder`` refuse new entries: mode 555, and for root (who ignores modes) the
    immutable attribute. Skips the test where neither works."""
    folder.chmod(0o555)
    probe = folder / ".probe"
    try:
        probe.mkdir()
    except OSError:
        return
    probe.rmdir()
    done = subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False)
    if done.returncode != 0:
        folder.chmod(0o755)
        pytest.skip("cannot make a read-only folder here (root without chattr +i)")


def _writable_again(folder: Path) -> None:
    if folder.exists():
        subprocess.run(["chattr", "-i", str(folder)], capture_output=True, check=False)
        folder.chmod(0o755)


def _tree(root: Path) -> dict[str, str]:
    """Every entry below ``root``: folders as ``/``, files by the hash of their bytes."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for d in dirs:
            out[os.path.relpath(os.path.join(folder, d), root)] = "/"
        for f in files:
            path = os.path.join(folder, f)
            out[os.path.relpath(path, root)] = hashlib.sha256(
                Path(path).read_bytes()).hexdigest()
    return out


def _tripwires(monkeypatch) -> None:
    """Every expensive step of the toolkit raises :class:`Tripwire`."""
    import energy_model
    import networks.bert
    import networks.corpus
    import networks.finetune_report
    import networks.hf_folder
    import networks.report
    import rtl_gen.generate
    from golden_models import demo
    from matterhorn import report
    from toolkit_base import cluster, toolchain

    for key in ("iverilog", "vvp", "yosys", "sta", "verilator", "make", "c++"):
        try:  # the version probes run before the tripwires (they are checks, and cached)
            toolchain.version(key)
        except Exception:  # noqa: BLE001 - a missing tool is the command's to report
            pass

    def wire(what: str):
        def tripped(*args, **kwargs):
            raise Tripwire(f"{what} started before the bad input was refused")
        return tripped

    monkeypatch.setattr(subprocess.Popen, "__init__", wire("a tool process"))
    for module in (networks.bert, networks.report, networks.finetune_report):
        if hasattr(module, "load_minilm"):
            monkeypatch.setattr(module, "load_minilm", wire("loading MiniLM"))
    for module in (networks.hf_folder, networks.report):
        monkeypatch.setattr(module, "load_model", wire("loading a model"))
    monkeypatch.setattr(networks.corpus, "_stdlib_docstrings", wire("building a corpus"))
    monkeypatch.setattr(rtl_gen.generate, "elaborate", wire("elaborating Verilog"))
    monkeypatch.setattr(cluster, "executor", wire("opening the executor of the jobs"))
    monkeypatch.setattr(energy_model, "compute", wire("the energy model"))
    monkeypatch.setattr(demo, "random_qnn", wire("the demo's network"))
    monkeypatch.setattr(report, "write_running", wire("the flow's first write"))


@pytest.mark.parametrize("case", CASES, ids=[c.argv for c in CASES])
def test_validation_before_work(case, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file.txt").write_text("a file, not a folder\n")
    out = tmp_path / "o"
    out.mkdir()
    for name in ("stats.json", "summary.md", "energy_report.json", "synth_report.json",
                 "regress_summary.json", "prove_summary.json", "compare.md", "flow.json"):
        (out / name).write_text("an earlier run's\n")
    if case.setup is not None:
        case.setup(tmp_path)
    ro = tmp_path / RO
    if f"--out {RO}" in case.argv:
        ro.mkdir()
        (ro / "earlier.txt").write_text("an earlier run's\n")
        _read_only(ro)
    before = _tree(tmp_path)
    argv = shlex.split(case.argv)
    try:
        with pytest.MonkeyPatch.context() as wires:
            _tripwires(wires)
            code = main(argv)
        err = capsys.readouterr().err
    finally:
        _writable_again(ro)
    assert code == 2, err
    prefix = f"matterhorn {argv[0]}: error: "
    assert err.startswith(prefix) and err.count("\n") == 1, err
    assert case.message in err, err
    for staging in (".energy-", ".synth-", ".compare-", ".stats-", ".matterhorn-probe-"):
        assert staging not in err  # no internal staging path in the message
    assert _tree(tmp_path) == before  # nothing written, replaced or removed


# ---------------------------------------------------------------------------------------------
# every subcommand, every input


def _inputs(parser: argparse.ArgumentParser) -> dict[str, set[str]]:
    """The inputs of a subcommand that need a check of their own, by kind."""
    kinds: dict[str, set[str]] = {"number": set(), "free": set(), "out": set()}
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.nargs == 0 or action.choices:
            continue  # flags, and choices argparse itself refuses in one line
        if action.dest == "out":
            kinds["out"].add("out")
        elif action.type in (int, float, mesh_arg):
            kinds["number"].add(action.dest)
        else:
            kinds["free"].add(action.dest)
    return kinds


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(sub.choices)


def test_every_input_is_covered():
    parsers = _subparsers()
    assert set(parsers) == set(COMMANDS)
    kinds = {(c.command, c.kind) for c in CASES}
    missing = []
    for name, parser in parsers.items():
        inputs = _inputs(parser)
        if inputs["out"] and (name, "out") not in kinds:
            missing.append(f"{name}: an --out it cannot write")
        if inputs["number"] and (name, "number") not in kinds:
            missing.append(f"{name}: a bad number")
        listed = FILE_OPTIONS.get(name, set()) | NAME_OPTIONS.get(name, set())
        for dest in sorted(inputs["free"] - listed):
            missing.append(f"{name}: --{dest.replace('_', '-')} is in neither FILE_OPTIONS "
                           "nor NAME_OPTIONS")
        for dest in sorted(FILE_OPTIONS.get(name, set())):
            if (name, f"file:{dest}") not in kinds:
                missing.append(f"{name}: a malformed --{dest.replace('_', '-')}")
        for dest in sorted(NAME_OPTIONS.get(name, set())):
            if (name, f"name:{dest}") not in kinds:
                missing.append(f"{name}: a bad --{dest.replace('_', '-')}")
    assert not missing, "inputs without a validation-before-work case:\n" + "\n".join(missing)


def test_commands_covered_count():
    # the figure docs/reliability.md gives
    assert len({c.command for c in CASES}) == len(COMMANDS) == 16
