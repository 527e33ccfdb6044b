"""The main install holds every package the main job imports.

``./run flow`` installs the package without extras (``pip install -e .``), so every third-party
module that ``matterhorn flow`` can reach, and every cocotb bench its regression runs, must come
from ``[project.dependencies]``. The walk follows the project's imports (module level and lazy,
inside functions) from :mod:`matterhorn.flow`, from every module of ``cocotb_tests`` that is not
a pytest file and from the root ``conftest.py`` (pytest loads it around every bench), and maps
each third-party top-level module to the distribution that installs it in this environment (the
test environment has the extras too, so every import resolves).
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {p.parent.name for p in ROOT.glob("*/__init__.py")}

#: Third-party modules the flow may reach without the main install having them: each is
#: behind an extra that the toolkit probes before use (``networks.hf_folder.MODEL_PACKAGES``:
#: the flow leaves its real-model part out, with a note, and a command given a model folder
#: says how to install the extra). module -> its extra.
OPTIONAL = {"safetensors": "models", "tokenizers": "models"}


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(spec: str) -> str:
    return canonical(re.match(r"[A-Za-z0-9._-]+", spec.strip()).group(0))


def declared() -> tuple[set[str], dict[str, set[str]]]:
    """``(main dependencies, {extra: its dependencies})`` of pyproject.toml, canonical names."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    main = {requirement_name(s) for s in project["dependencies"]}
    extras = {e: {requirement_name(s) for s in specs}
              for e, specs in project.get("optional-dependencies", {}).items()}
    return main, extras


def module_file(module: str, root: Path) -> Path | None:
    base = root.joinpath(*module.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _guarded(tree: ast.AST) -> set[int]:
    """Ids of the import nodes inside a ``try`` that catches ``ImportError``: optional by
    construction (the module works without them)."""
    ids = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Try):
            continue
        caught = set()
        for handler in node.handlers:
            kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
            caught |= {k.id for k in kinds if isinstance(k, ast.Name)}
        if caught & {"ImportError", "ModuleNotFoundError"}:
            ids |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return ids


def imported_names(path: Path, module: str) -> list[str]:
    """Every module name ``path`` imports, unguarded, anywhere in the file; ``from a import b``
    gives both ``a`` and ``a.b`` (``b`` may be a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    guarded = _guarded(tree)
    names = []
    for node in ast.walk(tree):
        if id(node) in guarded:
            continue
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                parts = module.split(".")
                if path.name != "__init__.py":
                    parts = parts[:-1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            else:
                base = node.module
            names += [base] + [f"{base}.{a.name}" for a in node.names]
    return names


def reached_third_party(roots: list[str], root: Path = ROOT) -> dict[str, set[str]]:
    """Third-party top-level module -> the project modules that import it, over every project
    module reachable from ``roots``."""
    packages = {p.parent.name for p in root.glob("*/__init__.py")}
    seen, stack, third = set(), list(roots), {}
    while stack:
        module = stack.pop()
        path = module_file(module, root)
        if module in seen or path is None:
            continue
        seen.add(module)
        parts = module.split(".")
        stack += [".".join(parts[:i]) for i in range(1, len(parts))]
        for name in imported_names(path, module):
            top = name.split(".")[0]
            if top in packages:
                stack.append(name)
            elif top not in sys.stdlib_module_names and top != "__future__":
                third.setdefault(top, set()).add(module)
    return third


def flow_roots(root: Path = ROOT) -> list[str]:
    """The flow, its benches, and the conftest files pytest loads around a bench (cocotb's
    runner runs each bench under pytest from the repository, so the root ``conftest.py`` is
    imported in the flow's environment too)."""
    benches = sorted(p.stem for p in (root / "cocotb_tests").glob("*.py")
                     if not p.stem.startswith("test_"))
    conftests = ["conftest"] if (root / "conftest.py").is_file() else []
    return ["matterhorn.flow"] + [f"cocotb_tests.{b}" for b in benches] + conftests


def missing_from_main(third: dict[str, set[str]]) -> list[str]:
    """One line per reached module whose distribution is not a main dependency."""
    main, extras = declared()
    dists = importlib.metadata.packages_distributions()
    out = []
    for module, where in sorted(third.items()):
        owners = {canonical(d) for d in dists.get(module, ())}
        if not owners:
            out.append(f"{module} (imported by {', '.join(sorted(where))}) is installed by "
                       "no distribution here")
        elif not owners & main:
            extra = OPTIONAL.get(module)
            if extra is not None and owners & extras.get(extra, set()):
                continue
            out.append(f"{module} (imported by {', '.join(sorted(where))}) comes from "
                       f"{', '.join(sorted(owners))}, not a main dependency")
    return out


def test_the_flow_imports_only_main_dependencies():
    assert missing_from_main(reached_third_party(flow_roots())) == []


def test_the_walk_reaches_the_benches_and_lazy_imports():
    third = reached_third_party(flow_roots())
    # the AXI benches' bus models, the cocotb runner, a lazy import inside a function
    assert "cocotbext" in third and "cocotb_tools" in third and "scipy" in third


def test_a_module_the_main_install_lacks_is_found(tmp_path, monkeypatch):
    # a copy of the tree where one module the flow reaches imports a test-extra package
    for package in PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "matterhorn" / "flow.py").write_text(
        "def f():\n    from toolkit_base import extra\n")
    (tmp_path / "toolkit_base" / "extra.py").write_text("import hypothesis\nimport numpy\n")
    third = reached_third_party(["matterhorn.flow"], tmp_path)
    assert set(third) == {"hypothesis", "numpy"}
    lines = missing_from_main(third)
    assert len(lines) == 1 and lines[0].startswith("hypothesis (imported by toolkit_base.extra)")


def test_the_root_conftest_is_walked(tmp_path):
    # the benches run under pytest, which imports the root conftest.py in the flow's
    # environment: a test-extra import there stopped all 12 of the flow's jobs once
    (tmp_path / "matterhorn").mkdir()
    (tmp_path / "matterhorn" / "__init__.py").write_text("")
    (tmp_path / "matterhorn" / "flow.py").write_text("")
    (tmp_path / "cocotb_tests").mkdir()
    (tmp_path / "conftest.py").write_text("import hypothesis\n")
    third = reached_third_party(flow_roots(tmp_path), tmp_path)
    assert third == {"hypothesis": {"conftest"}}


def test_a_guarded_import_is_optional(tmp_path):
    (tmp_path / "matterhorn").mkdir()
    (tmp_path / "matterhorn" / "__init__.py").write_text("")
    (tmp_path / "matterhorn" / "flow.py").write_text(
        "try:\n    import hypothesis\nexcept ImportError:\n    hypothesis = None\n")
    assert reached_third_party(["matterhorn.flow"], tmp_path) == {}


def test_optional_modules_are_probed():
    """The optional modules are the ones the toolkit probes before reading a model, and the
    probes use that one list."""
    from networks import hf_folder

    assert set(OPTIONAL) == set(hf_folder.MODEL_PACKAGES)
    _, extras = declared()
    assert {canonical(m) for m in OPTIONAL} <= extras["models"]
    tree = ast.parse(module_file("networks.hf_folder", ROOT).read_text(encoding="utf-8"))
    for func in ("shipped_available", "require_model_packages"):
        body = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == func)
        assert "MODEL_PACKAGES" in ast.unparse(body), func
