"""The code passes the project's ruff rule set (pyproject.toml [tool.ruff])."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ruff_clean():
    out = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr


# -- function size (docs/design.md, the contributor loop) ----------------------------------------

SIZE_RULES = ("C901", "PLR0915")
_NOQA = re.compile(r"#\s*noqa:\s*(?P<codes>[A-Z0-9, ]+?)(?:\s+--\s*(?P<why>\S.*))?$")


def unjustified(text: str) -> list[int]:
    """Line numbers of ``text`` whose ``# noqa`` waives a size rule without a reason."""
    bad = []
    for n, line in enumerate(text.splitlines(), 1):
        m = _NOQA.search(line)
        if m and any(rule in m["codes"] for rule in SIZE_RULES) and not m["why"]:
            bad.append(n)
    return bad


def test_size_rules_are_on():
    lint = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert set(SIZE_RULES) <= set(lint["select"])
    assert lint["mccabe"]["max-complexity"] <= 12
    assert lint["pylint"]["max-statements"] <= 60


def test_unjustified_waiver_is_found():
    text = ("def a():  # noqa: C901 -- one FSM, read top to bottom\n"
            "def b():  # noqa: PLR0915\n"
            "def c():  # noqa: E501\n")
    assert unjustified(text) == [2]


def test_every_size_waiver_has_a_reason():
    files = subprocess.run(["git", "ls-files", "*.py"], cwd=ROOT, capture_output=True,
                           text=True, check=True).stdout.split()
    bad = [f"{f}:{n}" for f in files if (ROOT / f).is_file()
           for n in unjustified((ROOT / f).read_text())]
    assert not bad, f"a '# noqa: C901/PLR0915' without ' -- reason': {bad}"


# -- function length (docs/design.md, the contributor loop) -------------------------------------

#: The most lines of code a function may have: its body after the docstring, the signature and
#: the docstring not counted. Ruff has no rule for a function's lines (PLR0915 counts
#: statements: 60); a statement here spans about 1.3 lines (calls wrapped at 100 columns), so
#: 80 lines is the statement cap in lines, and it also catches a function of few long
#: statements (a table, a report, a generated text) that PLR0915 lets through. A docstring that
#: documents every parameter is not a reason to split a function.
MAX_FUNCTION_LINES = 80
#: Functions allowed more, each with its reason (``module.qualified_name``). A function that
#: no longer needs its waiver fails the test too, so the list stays true.
LONG_FUNCTIONS = {
    "networks.finetune_report.finetune_minilm":
        "the fine-tuning run: set-up, epochs, checkpoints and report in one sequence",
    "networks.report.summary_markdown":
        "one Markdown document, its sections in the order they are read",
    "rtl_gen.amba.ipxact": "one IP-XACT document, as text, its elements in the schema's order",
    "rtl_gen.axi_lite.RegisterFile.elaborate": "a branch per register-field kind",
    "rtl_gen.axi_sim.simulate_axi_system": "one bench: load, then windows",
    "rtl_gen.encoder.Encoder.elaborate": "one FSM, its states read top to bottom",
    "rtl_gen.tile.NeuronTile.elaborate": "one FSM, its states read top to bottom",
    "synth_scripts.gatelevel.netlist._map_locked":
        "the Yosys mapping steps in order, under the netlist folder's one lock",
    "synth_scripts.gatelevel.toggles._testbench": "one generated Verilog testbench, as text",
    "synth_scripts.operators.operators": "the table of operators, in the report's order",
    "synth_scripts.report.build": "one report document, its sections in the schema's order",
    "synth_scripts.run.synthesize_into":
        "the synthesis steps in order, each optional by its options",
    "synth_scripts.unit_gates.measure":
        "map, replay the load and the rows, price: in order, every figure bit-exact",
    "matterhorn.commands.energy.add_arguments": "the command's option table",
}
#: Library code under the cap (the cocotb benches are one coroutine each, as pyproject's
#: per-file ignores say).
CAPPED = ("toolkit_base", "golden_models", "networks", "energy_model", "rtl_gen",
          "synth_scripts", "regression", "formal", "cocotb_tests", "matterhorn")


def code_lines(node) -> int:
    """Lines of a function's body after its docstring."""
    body = node.body
    if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)):
        body = body[1:]
    return body[-1].end_lineno - body[0].lineno + 1 if body else 0


def long_functions(root: Path = ROOT) -> dict[str, int]:
    """``module.qualified_name`` -> code lines of every capped function over the cap."""
    out = {}
    for folder in CAPPED:
        for path in sorted((root / folder).rglob("*.py")):
            if folder == "cocotb_tests" and path.name.startswith("tb_"):
                continue
            module = ".".join(path.relative_to(root).with_suffix("").parts)
            out.update(_long_in(ast.parse(path.read_text(encoding="utf-8")), module))
    return out


def _long_in(tree, prefix: str) -> dict[str, int]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            out.update(_long_in(node, f"{prefix}.{node.name}"))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = f"{prefix}.{node.name}"
            if code_lines(node) > MAX_FUNCTION_LINES:
                out[name] = code_lines(node)
            out.update(_long_in(node, name))
    return out


def test_functions_fit_the_line_cap():
    over = long_functions()
    unwaived = {f: n for f, n in over.items() if f not in LONG_FUNCTIONS}
    assert not unwaived, f"over {MAX_FUNCTION_LINES} lines of code, split or waive: {unwaived}"
    stale = sorted(set(LONG_FUNCTIONS) - set(over))
    assert not stale, f"waived but within the cap (drop the waiver): {stale}"
    assert all(len(why) > 20 for why in LONG_FUNCTIONS.values())


def test_the_line_cap_can_fail(tmp_path, monkeypatch):
    pkg = tmp_path / "rtl_gen"
    pkg.mkdir()
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES + 1))
    method = body.replace("    ", "        ")
    (pkg / "a.py").write_text(f'def f():\n    """Doc\n    string."""\n{body}\n'
                              f"class C:\n    def g(self):\n{method}")
    monkeypatch.setattr(sys.modules[__name__], "CAPPED", ("rtl_gen",))
    assert long_functions(tmp_path) == {"rtl_gen.a.f": 81, "rtl_gen.a.C.g": 81}
