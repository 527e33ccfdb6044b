"""The RTL and build cache: generated Verilog per parameter set, one build per simulator.

Verilog comes from :func:`rtl_gen.generate.generate` (the API behind ``matterhorn generate``)
under ``root/rtl/<key>``, where the key hashes the parameters and the generator's sources; one
build directory per (simulator, module, parameters, waves) under ``root/sim``, reused by every
job on it (:func:`regression.sim.build` skips the build when its stamp matches).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from regression import sim
from toolkit_base.files import staging_dir
from toolkit_base.jsonfile import read_json
from toolkit_base.schemas import validate

__all__ = [
    "build_module",
    "generate_rtl",
    "module_entry",
    "params_key",
    "read_manifest",
    "verilator_waivers",
]


def _generator_digest() -> str:
    """Digest of the generator's sources, so cached Verilog is regenerated when they change."""
    import rtl_gen
    from toolkit_base.files import folder_digest

    # the register map's SystemRDL (rtl_gen/regmap) shapes the AXI wrappers' Verilog too
    return folder_digest(Path(rtl_gen.__file__).parent, (".py", ".rdl"))


def params_key(params: Mapping) -> str:
    """Cache key of a parameter set (and of the generator that turns it into Verilog)."""
    text = json.dumps({"p": dict(params), "gen": _generator_digest()}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def generate_rtl(params: Mapping, root: Path, modules=None) -> tuple[Path, dict]:
    """Verilog and manifest of ``RTLConfig(**params)`` under ``root/rtl/<key>`` (cached): every
    module, or ``modules`` and what they need (:func:`rtl_gen.generate.components`; a job's
    bench needs its own module only, a fifth to a fortieth of the whole set's time).

    Written to a temporary directory first and moved into place, so an interrupted run never
    leaves a half-written set behind.
    """
    from rtl_gen.params import RTLConfig

    config = RTLConfig(**params)
    key = params_key(params if modules is None
                     else {"params": dict(params), "modules": sorted(modules)})
    out = Path(root) / "rtl" / key
    manifest_path = out / "manifest.json"
    if manifest_path.is_file():
        return out, read_manifest(manifest_path)
    with staging_dir(out.parent, prefix=".gen-") as tmp:
        _generate_stoppable(config, tmp, modules)
        if not out.exists():
            try:
                os.replace(tmp, out)
            except OSError:
                if not manifest_path.is_file():  # not a concurrent writer of the same set
                    raise
    return out, read_manifest(manifest_path)


def _generate_stoppable(config, out: Path, modules=None) -> None:
    """:func:`rtl_gen.generate.generate`, stopped by an interrupt without noise: the components
    of a generation cut short are never elaborated, and Amaranth warns about each of them
    (``UnusedElaboratable``) as they are collected, after the command's last line."""
    import warnings

    from rtl_gen.generate import generate

    try:
        generate(config, out, modules)
    except KeyboardInterrupt:
        from amaranth.hdl import UnusedElaboratable

        warnings.filterwarnings("ignore", category=UnusedElaboratable)
        raise


def read_manifest(path: Path) -> dict:
    """A ``manifest.json``, checked against its schema (toolkit_base/schemas); a malformed one
    is a ValueError naming the file."""
    path = Path(path)
    return validate(read_json(path, "manifest"), "rtl_manifest", path.name)


def module_entry(manifest: Mapping, module: str) -> dict:
    """The manifest record of ``module``; a clear error if the generator skipped it."""
    mods = manifest.get("modules", {})
    if module not in mods:
        raise ValueError(f"manifest has no module {module!r}; modules: {sorted(mods)}")
    entry = mods[module]
    if "skipped" in entry:
        raise ValueError(f"the generator skipped {module!r}: {entry['skipped']}")
    return entry


def verilator_waivers(manifest: Mapping) -> list[str]:
    """``-Wno-<warning>`` flags for the lint waivers the generator lists."""
    out = []
    for w in manifest.get("lint", {}).get("waivers", []) or []:
        name = w.get("warning") if isinstance(w, Mapping) else w
        if name and str(name).isidentifier():
            out.append(f"-Wno-{name}")
    return sorted(set(out))


def build_module(
    sim_name: str, rtl_dir: Path, manifest: Mapping, module: str, root: Path, waves: bool
) -> sim.Build:
    """Build ``module`` of the generated set ``rtl_dir`` on ``sim_name`` (cached)."""
    entry = module_entry(manifest, module)
    sources = [rtl_dir / entry["file"]]
    extra = [rtl_dir / f for f in entry.get("depends", [])]
    key = params_key({"p": manifest.get("parameters"), "m": module, "w": waves})
    build_dir = Path(root) / "sim" / sim_name / f"{module}-{key}"
    return sim.build(
        sim_name,
        [*extra, *sources],
        module,
        build_dir,
        waves=waves,
        extra_args=verilator_waivers(manifest),
        # the generated Verilog starts up under the runner's -g2012 (docs/regress.md)
        icarus_args=sim.ICARUS_RUNNER_DEFAULTS,
    )
