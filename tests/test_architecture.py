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


# -- inside a package: no import circle, no private name of another module ----------------------

#: The folders whose modules are library code (benchmarks use the library like a user).
LIBRARY = (*sorted(ALLOWED), "benchmarks")


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _modules(root: Path) -> dict[str, Path]:
    return {_module_name(root, p): p for folder in LIBRARY for p in sorted((root / folder)
                                                                          .rglob("*.py"))}


def _run_time_nodes(tree: ast.AST):
    """Every node of ``tree`` but those under ``if TYPE_CHECKING:`` (never run: names for
    annotations)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if (isinstance(child, ast.If) and isinstance(child.test, ast.Name)
                    and child.test.id == "TYPE_CHECKING"):
                stack.extend(child.orelse)
                continue
            stack.append(child)


def _imports(name: str, path: Path, modules: dict[str, Path]):
    """``(module, imported name or None)`` for every import of ``path`` that runs (at the top
    or inside a function), resolved to the project module it loads."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in _run_time_nodes(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([node.module] if node.module else [])])
            targets = [(f"{base}.{a.name}", None) if f"{base}.{a.name}" in modules
                       else (base, a.name) for a in node.names]
        else:
            continue
        for module, imported in targets:
            while module and module not in modules:
                module = module.rpartition(".")[0]
            if module and module != name:
                yield module, imported


def import_circles(root: Path = ROOT) -> list[list[str]]:
    """The import circles inside a package: each group of two or more of its modules that
    import each other (directly or round a loop), lazy imports inside functions included
    (they run at the first call and close the same loop), ``if TYPE_CHECKING:`` left out."""
    modules = _modules(root)
    graph = {n: {m for m, _ in _imports(n, p, modules) if m.split(".")[0] == n.split(".")[0]}
             for n, p in modules.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(out)


def private_imports(root: Path = ROOT) -> list[str]:
    """``module imports other.module._name`` for every private name (one leading underscore)
    a library module imports from another module of the project (tests may call a module's
    private helpers; library code keeps to its public names)."""
    modules = _modules(root)
    return [f"{n} imports {m}.{imported}" for n, p in modules.items()
            for m, imported in _imports(n, p, modules)
            if imported and imported.startswith("_") and not imported.startswith("__")]


def test_no_import_circle_inside_a_package():
    assert import_circles() == []


def test_import_circles_can_fail(tmp_path, monkeypatch):
    """A circle closed by a lazy import is found; one through ``if TYPE_CHECKING:`` is not."""
    pkg = tmp_path / "networks"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from networks.b import g\n\ndef f():\n    return g()\n")
    (pkg / "b.py").write_text("def g():\n    from networks import a\n    return a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from networks.d import x\n")
    (pkg / "d.py").write_text("from networks.c import TYPE_CHECKING\n")
    monkeypatch.setattr(sys.modules[__name__], "LIBRARY", ("networks",))
    assert import_circles(tmp_path) == [["networks.a", "networks.b"]]


def test_no_private_name_imported_across_modules():
    assert private_imports() == []


def test_private_imports_can_fail(tmp_path, monkeypatch):
    pkg = tmp_path / "rtl_gen"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def _helper():\n    pass\n")
    (pkg / "b.py").write_text("def f():\n    from rtl_gen.a import _helper\n    return _helper\n")
    (pkg / "c.py").write_text("from . import a\nfrom .a import __doc__\n")
    monkeypatch.setattr(sys.modules[__name__], "LIBRARY", ("rtl_gen",))
    assert private_imports(tmp_path) == ["rtl_gen.b imports rtl_gen.a._helper"]
