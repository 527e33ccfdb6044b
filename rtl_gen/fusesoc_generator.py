"""The FuseSoC generator ``mttfs`` (fusesoc_cores/matterhorn.core, docs/fusesoc.md): FuseSoC's
input file in, ``matterhorn generate``'s files and their core out. Apart from ``rtl_gen.fusesoc``
(the cores' text and names), which ``rtl_gen.generate`` uses, so the two stay free of a circle."""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from rtl_gen.fusesoc import GENERATED_DIR, GENERATOR_PARAMETERS, generated_core
from rtl_gen.generate import generate
from rtl_gen.params import RTLConfig

__all__ = ["run_generator"]


def run_generator(input_file: str) -> int:
    """The generator ``mttfs``: read FuseSoC's input file (``gapi``, ``vlnv``,
    ``parameters``), run ``generate`` into ``GENERATED_DIR`` of the working folder and write
    the core of what it wrote. A bad parameter is one line on stderr and exit status 2."""
    try:
        with open(input_file, encoding="utf-8") as f:
            doc = yaml.safe_load(f)
        params = dict(doc.get("parameters") or {})
        unknown = sorted(set(params) - set(GENERATOR_PARAMETERS))
        if unknown:
            raise ValueError(f"unknown parameter {unknown[0]!r}; the generator takes "
                             f"{', '.join(GENERATOR_PARAMETERS)}")
        modules = params.pop("modules", None)
        if isinstance(modules, str):
            modules = [modules]
        prefix = params.pop("prefix", "")
        out = Path.cwd() / GENERATED_DIR
        manifest = generate(RTLConfig(**params), out, modules, prefix=str(prefix))
    except (TypeError, ValueError, OSError) as exc:
        print(f"mttfs generator: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    name = str(doc["vlnv"]).split(":")[2]
    Path(f"{name}.core").write_text(generated_core(doc["vlnv"], manifest), encoding="utf-8")
    return 0
