"""docs/design.md names what exists: its files, its Python names, its links and its commands.

A newcomer follows its "where changes go" lists to the files a change touches; a list that names
a file, a table or a field the code no longer has sends them astray. Each check below reads
every backticked name of the page (and the commands of its code blocks) and resolves it against
the working tree and the packages.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "design.md"
PACKAGES = ("toolkit_base", "golden_models", "networks", "energy_model", "rtl_gen",
            "regression", "synth_scripts", "formal", "cocotb_tests", "matterhorn")

#: The folders of the repository a code block's file may be in (``build/`` is written by a run).
TREE = (*PACKAGES, "tests", "benchmarks", "docs", "scripts")

_FENCE = re.compile(r"^```.*?^```", re.S | re.M)
_CODE = re.compile(r"`([^`\n]+)`")
_LINK = re.compile(r"\]\(([^)\s]+)\)")
_PATHLIKE = re.compile(r"^[\w.<>*-]+(/[\w.<>*-]*)+$")
_DOTTED = re.compile(r"^[a-z_]+(\.[A-Za-z_]\w*)+$")
_CLASS = re.compile(r"^[A-Z][a-z]+(?:[A-Z][a-z0-9]+)*$")
_CONSTANT = re.compile(r"^[A-Z][A-Z0-9_]{2,}$")
_FIELD = re.compile(r"^([a-z_]+)=$")
_LINT_CODE = re.compile(r"^[A-Z]+[0-9]+$")  # a ruff rule (`C901`)


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = _FENCE.sub("", page.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def _path_problem(token: str) -> str | None:
    """A repository path, a folder or a template (``tb_<name>.py``: some file must fit it)."""
    pattern = re.sub(r"<[^>]+>", "*", token).rstrip("/")
    if any(ch in pattern for ch in "*?"):
        return None if any(ROOT.glob(pattern)) else f"no file fits `{token}`"
    return None if (ROOT / pattern).exists() else f"`{token}` does not exist"


def _dotted_problem(token: str) -> str | None:
    """``package.module[.attribute...]`` of the project: import the module, get the rest."""
    parts = token.split(".")
    if parts[0] not in PACKAGES:
        return None
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            if not hasattr(obj, attr):
                return f"`{token}`: {'.'.join(parts[:cut])} has no {attr!r}"
            obj = getattr(obj, attr)
        return None
    return f"`{token}`: no such module"


@functools.cache
def _top_level_names() -> set[str]:
    """Every class, function and module-level name the project's packages define."""
    names: set[str] = set()
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    names.add(node.name)
                elif isinstance(node, ast.Assign | ast.AnnAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    names.update(t.id for t in targets if isinstance(t, ast.Name))
    return names


def _token_problem(token: str, fields: set[str], defined: set[str]) -> str | None:
    """A backticked name of the prose: a path, a dotted name, a ``Block`` field or a name."""
    if " " in token or token.startswith("matterhorn.") and "<" in token:
        return None  # a command line, or a template of an identifier (a schema id)
    if _PATHLIKE.match(token) and not token.startswith(("matterhorn.", "tcp:")):
        return _path_problem(token)
    if _DOTTED.match(token):
        return _dotted_problem(token)
    if m := _FIELD.match(token):
        return None if m.group(1) in fields else f"`{token}`: Block has no field {m.group(1)!r}"
    if (_CLASS.match(token) or _CONSTANT.match(token)) and not _LINT_CODE.match(token):
        return None if token in defined else f"`{token}`: defined nowhere in the packages"
    return None


def _link_problems(prose: str, here: Path) -> list[str]:
    out = []
    for target in dict.fromkeys(_LINK.findall(prose)):
        if "://" in target:
            continue
        file, _, anchor = target.partition("#")
        page = (here.parent / file).resolve() if file else here
        if not page.exists():
            out.append(f"link {target}: no file {file}")
        elif anchor and anchor not in _anchors(page):
            out.append(f"link {target}: no heading #{anchor} in {file or here.name}")
    return out


def _fenced_problems(fenced: str) -> list[str]:
    """Files, ``matterhorn`` commands and ``./run bench`` names of the code blocks."""
    from matterhorn.cli import COMMANDS

    out = []
    for word in dict.fromkeys(re.findall(r"(?<![\w/.-])[\w./-]+\.(?:py|md|json)\b", fenced)):
        if word.split("/")[0] in TREE and not (ROOT / word).exists():
            out.append(f"`{word}` (a code block) does not exist")
    for command in dict.fromkeys(re.findall(r"^\s*matterhorn\s+(\w+)", fenced, re.M)):
        if command not in COMMANDS:
            out.append(f"`matterhorn {command}`: not a command")
    for name in dict.fromkeys(re.findall(r"\./run bench (\w+)", fenced)):
        if not (ROOT / "benchmarks" / f"bench_{name}.py").exists():
            out.append(f"`./run bench {name}`: no benchmarks/bench_{name}.py")
    return out


def problems(text: str, here: Path = DOC) -> list[str]:
    """What ``text`` (a page in ``docs/``) names that does not exist."""
    from rtl_gen.registry import Block

    fields = {f.name for f in dataclasses.fields(Block)}
    defined = _top_level_names()
    fenced = "\n".join(m.group(0) for m in _FENCE.finditer(text))
    prose = _FENCE.sub("", text)
    out = [p for token in dict.fromkeys(_CODE.findall(prose))
           if (p := _token_problem(token, fields, defined))]
    return out + _link_problems(prose, here) + _fenced_problems(fenced)


def test_design_doc_names_what_exists():
    assert problems(DOC.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("text, found", [
    ("one module in `rtl_gen/` and `rtl_gen/no_such_block.py`", "`rtl_gen/no_such_block.py`"),
    ("its bench `cocotb_tests/tbx_<name>.py`", "no file fits"),
    ("entered in `regression.benches.BENCH_TABLES`", "has no 'BENCH_TABLES'"),
    ("a `widget=` if it is a widget", "Block has no field 'widget'"),
    ("one `BlockDescriptor` entry", "defined nowhere"),
    ("see [synth.md](synth.md#adding-a-cell-library)", "no heading #adding-a-cell-library"),
    ("see [gone.md](gone.md)", "no file gone.md"),
    ("```sh\n./run test tests/test_no_such.py\n```", "tests/test_no_such.py"),
    ("```sh\nmatterhorn frobnicate --out x\n```", "not a command"),
    ("```sh\n./run bench nothing\n```", "no benchmarks/bench_nothing.py"),
])
def test_a_stale_name_is_found(text, found):
    assert any(found in p for p in problems(text)), problems(text)


def test_names_that_exist_pass():
    text = ("`rtl_gen/registry.py`, `cocotb_tests/tb_<name>.py`, `rtl_gen.registry.BLOCKS`, "
            "`node=`, `Block`, [synth.md](synth.md#adding-a-pdk)\n"
            "```sh\nmatterhorn generate --T 16\n./run bench regress\n```\n")
    assert problems(text) == []
