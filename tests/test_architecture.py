"""The package graph of docs/architecture.md: import rules, and the imports that load no torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Package -> the project packages it may import (besides itself); docs/architecture.md.
ALLOWED = {
    "toolkit_base": set(),
    "golden_models": {"toolkit_base"},
    "networks": {"toolkit_base", "golden_models"},
    "energy_model": {"toolkit_base", "golden_models"},
    "rtl_gen": {"toolkit_base", "golden_models"},
    "synth_scripts": {"toolkit_base", "golden_models", "energy_model", "rtl_gen"},
    "regression": {"toolkit_base", "golden_models", "networks", "rtl_gen"},
    "formal": {"toolkit_base", "golden_models", "rtl_gen"},
    "cocotb_tests": {"toolkit_base", "golden_models", "networks", "rtl_gen", "regression"},
    "matterhorn": {
        "toolkit_base", "golden_models", "networks", "energy_model", "rtl_gen", "synth_scripts",
        "regression", "formal",
    },
}
#: The test package's pytest files may drive the CLI end to end (they test it).
TEST_FILES_MAY_IMPORT = {"matterhorn"}


def project_imports(path: Path) -> set[str]:
    """Top-level project packages that ``path`` imports (anywhere in the file, lazy or not)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        found.update(n.split(".")[0] for n in names if n.split(".")[0] in ALLOWED)
    return found


def violations(package: str) -> list[str]:
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        allowed = ALLOWED[package] | {package}
        if package == "cocotb_tests" and path.name.startswith("test_"):
            allowed |= TEST_FILES_MAY_IMPORT
        for imported in sorted(project_imports(path) - allowed):
            out.append(f"{path.relative_to(ROOT)} imports {imported}")
    return out


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_import_rules(package):
    assert violations(package) == []


def test_import_rules_can_fail(tmp_path, monkeypatch):
    pkg = tmp_path / "golden_models"
    pkg.mkdir()
    (pkg / "bad.py").write_text("def f():\n    from rtl_gen.params import RTLConfig\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert violations("golden_models") == ["golden_models/bad.py imports rtl_gen"]


def loads_torch(module: str) -> bool:
    code = f"import sys, {module}; print('torch' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    return out.stdout.strip() == "True"


@pytest.mark.parametrize(
    "module",
    [
        "toolkit_base.toolchain",
        "golden_models",
        "golden_models.mask",
        "energy_model",
        "rtl_gen",
        "rtl_gen.params",
        "synth_scripts.parse",
    ],
)
def test_import_loads_no_torch(module):
    assert not loads_torch(module)


def test_torch_check_can_fail():
    assert loads_torch("golden_models.integer_layer")


def test_code_and_docs_cite_the_repository():
    """Code and docs cite docs/ pages: a user's clone has no design file outside the repository.
    (The sky130 test liberty beside the repository is looked for by tests/conftest.py alone.)"""
    cited = []
    for path in sorted(ROOT.rglob("*")):
        if (path.suffix not in (".py", ".md") or any(p in path.parts for p in (".venv", "build"))
                or path.name == "conftest.py"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if "DESIGN" + ".md" in text:  # spelled apart so this file does not cite it
            cited.append(str(path.relative_to(ROOT)))
    assert cited == []
