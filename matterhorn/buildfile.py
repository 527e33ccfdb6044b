"""The build file: a whole flow run's settings in one TOML file (``matterhorn flow --config
FILE``, docs/buildfile.md).

```toml
schema = "matterhorn.build/1"   # optional
[flow]
T = 8
k = 2
sim = ["icarus", "verilator"]
out = "build/t8k2"              # paths are relative to the file's folder
model = "none"                  # or "minilm", or a model folder
skip = ["stats"]
```

:func:`read_build_file` parses it (``tomllib``, the standard library), validates it against
``toolkit_base/schemas/build.json`` (an unknown key or a value of the wrong type is one line
naming the field) and makes its paths relative to the file. :func:`apply` puts the file's
settings into the parsed command line where no flag gave another value: a flag wins over
the file, the file over the defaults.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

__all__ = ["FLOW_KEYS", "PATH_KEYS", "SCHEMA", "apply", "read_build_file"]

#: The schema id of a build file.
SCHEMA = "matterhorn.build/1"
#: The ``[flow]`` keys -> the ``matterhorn flow`` option's destination.
FLOW_KEYS = {"T": "T", "k": "k", "out": "out", "sim": "sim", "seed": "seed",
             "liberty": "liberty", "clock_ns": "clock_ns", "rates_file": "rates_file",
             "model": "model", "skip": "skip"}
#: Keys whose values are paths (relative to the build file's folder).
PATH_KEYS = ("out", "liberty", "rates_file")


def read_build_file(path: str | os.PathLike) -> dict:
    """The settings of the build file at ``path``: ``{"flow": {...}}`` with paths made
    relative to the file's folder.

    Raises
    ------
    OSError
        The file cannot be read.
    ValueError
        Not TOML (the parser's message with its line), or a field the schema refuses.
    """
    import tomllib

    from toolkit_base.schemas import validate

    path = Path(path)
    if path.is_dir():
        raise ValueError(f"--config {str(path)!r} is a folder; give the build file (TOML)")
    try:
        with path.open("rb") as f:
            doc = tomllib.load(f)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{path.name} is not TOML: {exc}") from None
    validate(doc, "build", path.name)
    flow = dict(doc.get("flow", {}))
    base = path.parent
    for key in PATH_KEYS:
        if key in flow:
            flow[key] = str(base / flow[key])
    if "model" in flow and flow["model"] not in ("minilm", "none"):
        flow["model"] = str(base / flow["model"])
    return {"flow": flow}


def apply(args: argparse.Namespace, settings: dict) -> None:
    """Set every option of ``args`` that no flag gave (``None``) to the build file's value
    (``settings["flow"]``)."""
    for key, value in settings.get("flow", {}).items():
        dest = FLOW_KEYS[key]
        if getattr(args, dest) is None:
            setattr(args, dest, list(value) if isinstance(value, list) else value)
