"""Elaborate the top-level blocks to Verilog and describe them in ``manifest.json``.

One Verilog file per registered block (:data:`rtl_gen.registry.BLOCKS`: ``mttfs_encoder``,
``mttfs_sram``, ``mttfs_tile``, ``mttfs_router``, ``mttfs_system``, the dense INT4 baseline
``dense_tile``), converted with
``emit_src=False`` so the text carries no paths, and a manifest that lists every port, every
stream payload field with its offset, the derived widths with the accumulator bound, the
counters, the SRAM image layout, the load protocol and the sha256 of each file
(docs/rtl_interfaces.md, docs/cmd_generate.md).

Everything is elaborated in memory first and written to a temporary directory next to the
output; only then are the files moved into place, so a failed elaboration leaves no partial
output and files of other tools in the output directory are never touched.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path

import amaranth
from amaranth.hdl import Shape
from amaranth.lib import data, stream, wiring

from golden_models.counters import COUNTER_DEFINITIONS
from rtl_gen import registry
from rtl_gen.layouts import TARGETS
from rtl_gen.params import RTLConfig, check_config
from rtl_gen.registry import BLOCKS
from rtl_gen.sram import MACRO_MODEL, MACRO_NAME
from rtl_gen.verilog_text import to_verilog
from toolkit_base.checks import check_out_writable
from toolkit_base.files import staging_dir

__all__ = [
    "LINT_FLAGS",
    "LINT_WAIVERS",
    "MACRO_MODEL",
    "MANIFEST",
    "MODULES",
    "SCHEMA",
    "build_manifest",
    "check_prefix",
    "components",
    "elaborate",
    "generate",
    "lint",
    "manifest_name",
    "port_list",
    "prefix_modules",
    "with_prefix",
]

SCHEMA = "matterhorn.rtl_manifest/1"
MANIFEST = "manifest.json"
#: Top-level modules in the order they are generated (:data:`rtl_gen.registry.BLOCKS`).
MODULES = tuple(b.module for b in BLOCKS)

#: Verilator ``-Wall`` warnings waived for the generated files, with the reason. Every one is
#: a property of how Amaranth's Verilog backend writes code, not of the design; the function
#: is fixed by Amaranth's IR, which the simulator tests check against the golden model.
LINT_WAIVERS = (
    {
        "warning": "WIDTHEXPAND",
        "reason": "Amaranth writes operands at their own widths and relies on Verilog's "
        "context-determined extension (sign-extension for signed operands); the IR widths are "
        "exact and the accumulator width is derived so nothing can overflow.",
    },
    {
        "warning": "WIDTHTRUNC",
        "reason": "Amaranth writes boolean tests of multi-bit values as '!x' / 'x ? :' and "
        "assigns wider intermediates to narrower targets where the IR truncates on purpose "
        "(e.g. event address from lane index).",
    },
    {
        "warning": "CASEINCOMPLETE",
        "reason": "Amaranth emits casez statements without a default arm after assigning "
        "every target its default value first, so no latch or unassigned path exists.",
    },
    {
        "warning": "PROCASSINIT",
        "reason": "Amaranth declares registers with their reset value as an initial value "
        "(simulation power-up) and assigns them in always blocks; the synchronous reset "
        "loads the same value.",
    },
    {
        "warning": "UNUSEDSIGNAL",
        "reason": "Amaranth keeps every declared signal, including unused stream payload "
        "bits (e.g. addr/tau of a marker beat) and internal aliases; synthesis removes them.",
    },
    {
        "warning": "DECLFILENAME",
        "reason": "Amaranth names submodules '<top>.<sub>' in the same file as the top "
        "module; the file is named after the top module.",
    },
    {
        "warning": "ALWNEVER",
        "reason": "Amaranth writes a signal driven by a constant as an 'always @*' block "
        "that reads nothing; it holds its initial value, which is the constant.",
    },
    {
        "warning": "CMPCONST",
        "reason": "Amaranth does not fold comparisons against elaboration constants (e.g. a "
        "1-bit mesh coordinate compared with the router's fixed position); synthesis does.",
    },
    {
        "warning": "UNSIGNED",
        "reason": "same as CMPCONST for 'x < 0' on unsigned values, which Amaranth emits for "
        "a position 0 or a lower bound of 0.",
    },
    {
        "warning": "ASCRANGE",
        "reason": "a one-row memory (e.g. the init SRAM with a single comparator group) has "
        "a zero-width address, which Amaranth writes as an unused [-1:0] range.",
    },
)

#: Verilator flags of the lint check: all warnings on, the waivers above off.
LINT_FLAGS = ("--lint-only", "-Wall", *(f"-Wno-{w['warning']}" for w in LINT_WAIVERS))


def components(config: RTLConfig, modules=None) -> dict[str, wiring.Component]:
    """Module name -> component to elaborate, in :data:`MODULES` order (every registered block;
    a missing module or factory is an error, not a skipped file).

    ``modules`` (module names) keeps those and the modules their Verilog needs beside it (an
    AXI wrapper's block: its manifest entry's ``depends``); ``ValueError`` names an unknown one.
    """
    comps = registry.components(config, modules)
    while modules is not None:
        needed = set(comps)
        for name, comp in comps.items():
            b = registry.by_module(name)
            if b.manifest is not None:
                depends = b.manifest(config, comp).get("depends", ())
                needed |= {f.removesuffix(".v") for f in depends}
        if needed <= set(comps):
            break
        comps |= registry.components(config, needed - set(comps))
        comps = {m: comps[m] for m in MODULES if m in comps}
    return comps


def _width(shape) -> int:
    return Shape.cast(shape).width


def port_list(component: wiring.Component) -> list[dict[str, object]]:
    """Verilog ports of ``component``: ``clk``, ``rst``, then its signature members in order."""
    ports = [
        {"name": "clk", "dir": "in", "width": 1},
        {"name": "rst", "dir": "in", "width": 1},
    ]
    for path, member in component.signature.members.flatten():
        if not member.is_port:
            continue
        ports.append({
            "name": "__".join(str(p) for p in path),
            "dir": "in" if member.flow == wiring.In else "out",
            "width": _width(member.shape),
        })
    return ports


def _fields(shape) -> list[dict[str, object]]:
    if not isinstance(shape, data.StructLayout):
        s = Shape.cast(shape)
        return [{"name": "", "offset": 0, "width": s.width, "signed": s.signed}]
    fields = []
    for name, field in shape:
        s = Shape.cast(field.shape)
        entry = {"name": name, "offset": field.offset, "width": field.width,
                 "signed": s.signed}
        if isinstance(field.shape, data.StructLayout):
            entry["fields"] = _fields(field.shape)
        fields.append(entry)
    return fields


def stream_ports(component: wiring.Component) -> dict[str, dict[str, object]]:
    """Every stream interface of ``component``: direction, payload width and fields."""
    found = {}

    def walk(members, prefix, flipped):
        for name, member in members.items():
            if not member.is_signature:
                continue
            sig = member.signature
            flow_in = (member.flow == wiring.In) != flipped
            plain = sig.flip() if isinstance(sig, wiring.FlippedSignature) else sig
            path = (*prefix, str(name))
            if isinstance(plain, stream.Signature):
                payload = plain.members["payload"].shape
                found["__".join(path)] = {
                    "direction": "in" if flow_in else "out",
                    "payload_width": _width(payload),
                    "fields": _fields(payload),
                }
            else:
                walk(sig.members, path, not flow_in if member.flow == wiring.In else flipped)

    walk(component.signature.members, (), False)
    return found


def _sram_images(config: RTLConfig) -> dict[str, object]:
    N, L, G = config.tile_neurons, config.lanes, config.groups
    return {
        "weights": {
            "target": TARGETS["weights"], "depth": config.n_in,
            "width": config.weight_row_width, "addr": "input address i (0..n_in-1)",
            "word": f"neuron j at bits [j*{config.weight_bits}, (j+1)*{config.weight_bits}); "
            + ("1 = +1, 0 = -1" if config.weight_bits == 1 else "two's complement"),
            "element_width": config.weight_bits, "elements": N,
        },
        "thresholds": {
            "target": TARGETS["thresholds"], "depth": config.theta_depth,
            "width": config.theta_row_width, "addr": f"t*{G} + g (t in 0..T-2, g in 0..{G - 1})",
            "word": f"lane l = neuron g*{L}+l at bits [l*{config.theta_width}, "
            f"(l+1)*{config.theta_width}), two's complement, clamped to "
            f"[-acc_bound, acc_bound+1]; lanes past N-1 are 0",
            "element_width": config.theta_width, "elements": L,
        },
        "init": {
            "target": TARGETS["init"], "depth": G, "width": config.init_row_width,
            "addr": f"group g (0..{G - 1})",
            "word": f"lane l = folded init B[g*{L}+l] at bits [l*{config.acc_width}, "
            f"(l+1)*{config.acc_width}), two's complement, |B| <= init_bound",
            "element_width": config.acc_width, "elements": L,
        },
        "config": {
            "target": TARGETS["config"], "depth": 1, "width": config.config_width,
            "addr": "ignored",
            "word": f"i_max_in at [0, {config.time_width}), i_max_out at "
            f"[{config.time_width}, {2 * config.time_width}), k at "
            f"[{2 * config.time_width}, {3 * config.time_width})",
            "element_width": config.time_width, "elements": 3,
            "reset": {"i_max_in": config.i_max_in, "i_max_out": config.i_max_out,
                      "k": config.k},
        },
    }


def _protocols(config: RTLConfig) -> tuple[dict[str, object], dict[str, object]]:
    load = {
        "port": "load",
        "targets": dict(TARGETS),
        "beat": "one row per accepted beat (target, addr, data); data in the LSBs",
        "accepted": "only while busy = 0 (idle); SRAM contents survive rst, config "
        "registers reset to the parameters",
        "packer": "rtl_gen.tile.load_beats(config, golden_models.IntegerLayer)",
    }
    window = {
        "input": "i: events {addr, tau, last=0}, then one marker beat {last=1} (no event)",
        "start": "i.valid while idle (and no load beat offered) starts a window: counters "
        f"clear, {config.groups} init rows load the membranes ({config.groups + 1} clocks, "
        "i.ready low)",
        "integrate": "i.ready high every clock; V[j] += W[addr][j] * (i_max_in - tau)",
        "fire": "t = 0..T-1 outer, group g inner, one (t, g) per clock; V >= theta[j][t] "
        "fires (t <= T-2), t = T-1 fires the rest; |t - i_max_out| > k are emitted on o, "
        "the others counted as suppressed; several firings of one (t, g) or o.ready low "
        "stall the walk",
        "output": "o: events {addr, t, last=0} in time order, ascending addr within a step, "
        "then one marker beat {addr=0, t=0, last=1}",
        "end": "busy falls when the output marker is taken; cnt_* hold until the next "
        "window starts",
        "reset": "rst returns to idle; membranes are re-initialised by the next window",
    }
    return load, window


def _counters(widths: dict[str, int], definitions=COUNTER_DEFINITIONS) -> list[dict[str, object]]:
    return [{"name": n, "port": f"cnt_{n}", "width": w, "counts": definitions[n]}
            for n, w in widths.items()]


def build_manifest(config: RTLConfig, comps: dict[str, wiring.Component],
                   texts: dict[str, str]) -> dict[str, object]:
    """The manifest of ``config``, its components and their Verilog texts."""
    load, window = _protocols(config)
    modules: dict[str, object] = {}
    for name, comp in comps.items():
        entry = {
            "file": f"{name}.v",
            "sha256": hashlib.sha256(texts[name].encode()).hexdigest(),
            "ports": port_list(comp),
            "streams": stream_ports(comp),
        }
        block = registry.by_module(name)
        if block.counters is not None:
            entry["counters"] = _counters(block.counters(config), block.meanings(config))
        if block.manifest is not None:
            entry.update(block.manifest(config, comp))
        if block.lint_waivers:
            entry["lint_waivers"] = list(block.lint_waivers)
        modules[name] = entry
    manifest = {
        "schema": SCHEMA,
        "generator": {"amaranth": amaranth.__version__, "emit_src": False},
        "parameters": config.as_dict(),
        "derived": config.derived(),
        "counters": _counters(config.tile_counters),
        "sram_images": _sram_images(config),
        "load_protocol": load,
        "window_protocol": window,
        "modules": modules,
        "lint": {
            "tool": "verilator",
            "flags": list(LINT_FLAGS),
            "waivers": list(LINT_WAIVERS),
        },
    }
    if config.sram_macro:
        manifest["sram_macro_model"] = {
            "file": f"{MACRO_NAME}.v",
            "sha256": hashlib.sha256(MACRO_MODEL.encode()).hexdigest(),
            "note": "behavioural stand-in; replace with the memory compiler's model",
        }
    return manifest

def elaborate(config: RTLConfig, modules=None) -> tuple[dict[str, str], dict[str, object]]:
    """Verilog text of every top-level module (of ``modules`` and what they need, when given:
    :func:`components`), and the manifest (nothing is written)."""
    comps = components(config, modules)
    texts = {name: to_verilog(comp, name) for name, comp in comps.items()}
    return texts, build_manifest(config, comps, texts)


#: A module prefix: the start of a Verilog and of a C identifier.
_PREFIX = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: A module declaration of Yosys's Verilog: ``module name(`` or ``module \\top.sub (``.
_MODULE = re.compile(r"^module (\\\S+|[A-Za-z_][\w$]*)", re.MULTILINE)


def check_prefix(prefix: object) -> str:
    """``prefix`` if it can start every module, file and C name of a generated set: empty, or
    letters, digits and ``_`` not starting with a digit; else ``TypeError``/``ValueError``."""
    if not isinstance(prefix, str):
        raise TypeError(f"prefix must be a string, not {prefix!r}")
    if prefix and not _PREFIX.fullmatch(prefix):
        raise ValueError(f"prefix must be letters, digits and _ not starting with a digit (a "
                         f"Verilog and C identifier's start), not {prefix!r}")
    return prefix


def manifest_name(prefix: str = "") -> str:
    """The manifest's file name: ``manifest.json``, or ``<prefix>manifest.json``."""
    return f"{check_prefix(prefix)}{MANIFEST}"


def prefix_modules(texts: dict[str, str], prefix: str) -> dict[str, str]:
    """The Verilog ``texts`` (file -> text) with every module they declare renamed
    ``<prefix><name>`` (``\\<prefix><top>.<sub>`` for Amaranth's submodules), at its
    declaration and at every instance of it in any of the texts, so two configurations'
    files can be read in one tool run. Nothing else changes."""
    check_prefix(prefix)
    names = {m[1] for text in texts.values() for m in _MODULE.finditer(text)}
    if not prefix or not names:
        return dict(texts)
    alt = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    # a declaration, or an instance: a line that starts with the module's name
    use = re.compile(rf"^(module |[ \t]+)({alt})(?=[\s(])", re.MULTILINE)

    def rename(m: re.Match) -> str:
        name = m[2]
        return m[1] + (f"\\{prefix}{name[1:]}" if name.startswith("\\") else prefix + name)

    return {f: use.sub(rename, text) for f, text in texts.items()}


def with_prefix(manifest: dict[str, object], prefix: str,
                texts: dict[str, str]) -> dict[str, object]:
    """The manifest of a set whose modules and files carry ``prefix``: module keys, files,
    ``depends`` and the AXI files renamed, each file's sha256 of its renamed text (``texts``:
    file -> text after :func:`prefix_modules`), and ``prefix`` recorded."""
    out = dict(manifest)
    modules = {}
    for name, entry in manifest["modules"].items():
        entry = dict(entry)
        if "file" in entry:
            entry["file"] = prefix + entry["file"]
            entry["sha256"] = hashlib.sha256(texts[entry["file"]].encode()).hexdigest()
        if "depends" in entry:
            entry["depends"] = [prefix + f for f in entry["depends"]]
        if "axi" in entry:
            axi = dict(entry["axi"])
            lite = dict(axi["s_axil"])
            lite["register_map"] = prefix + lite["register_map"]
            lite["files"] = [f if f.endswith(".rdl") else prefix + f for f in lite["files"]]
            axi["s_axil"] = lite
            entry["axi"] = axi
        modules[prefix + name] = entry
    out["modules"] = modules
    if "sram_macro_model" in manifest:
        macro = dict(manifest["sram_macro_model"])
        macro["file"] = prefix + macro["file"]
        macro["sha256"] = hashlib.sha256(texts[macro["file"]].encode()).hexdigest()
        out["sram_macro_model"] = macro
    out["prefix"] = prefix
    return out


def generate(config: RTLConfig, out_dir: str | os.PathLike, modules=None, *,
             prefix: str = "") -> dict[str, object]:
    """Write ``<module>.v`` for each top-level block and ``manifest.json`` into ``out_dir``.

    Parameters
    ----------
    config : RTLConfig
    out_dir : path
        Created if missing. Only the generator's own files are replaced (and its own files
        of blocks no longer generated removed); other files stay.
    modules : iterable of str, optional
        Only these top-level modules and the ones their Verilog needs (:func:`components`);
        the manifest lists what was generated. Every registered block by default.
    prefix : str
        Put before every module name and every file name (``manifest.json`` too), so sets of
        several configurations live in one design and one folder (:func:`prefix_modules`);
        empty by default: the registry's names.

    Returns
    -------
    dict
        The manifest.

    Raises
    ------
    TypeError, ValueError
        Bad arguments, before anything is written.
    """
    from rtl_gen.amba import amba_files
    from rtl_gen.axi import companion_files
    from rtl_gen.fusesoc import core_files, owned_files, version

    check_config(config)
    check_prefix(prefix)
    name = manifest_name(prefix)
    mods = [prefix + m for m in MODULES]
    own = {f"{m}.v" for m in mods} | {f"{prefix}{MACRO_NAME}.v", name} | owned_files(mods)
    # before the elaboration: a folder where a file goes would fail its move, after the work
    out = Path(check_out_writable(out_dir, files=sorted(own)))
    texts, manifest = elaborate(config, modules)
    files = {f"{name}.v": text for name, text in texts.items()}
    if config.sram_macro:
        files[f"{MACRO_NAME}.v"] = MACRO_MODEL
    files = {prefix + f: text for f, text in prefix_modules(files, prefix).items()}
    manifest = with_prefix(manifest, prefix, files)
    if any("axi" in entry for entry in manifest["modules"].values()):  # the AXI wrappers'
        files.update(companion_files(config, prefix))
        files.update(amba_files(config, manifest, version()))
    files.update(core_files(config, manifest))
    files[name] = json.dumps(manifest, indent=2, sort_keys=False) + "\n"

    with staging_dir(out, prefix=".rtl_gen-") as tmp:
        for fname, text in files.items():
            (tmp / fname).write_text(text, encoding="utf-8", newline="\n")
        for fname in sorted(own - set(files)):
            stale = out / fname
            if stale.is_file():
                stale.unlink()
        # the manifest goes last: its presence says the Verilog next to it is complete
        for fname in sorted(files, key=lambda f: f == name):
            os.replace(tmp / fname, out / fname)
    return manifest


def lint(out_dir: str | os.PathLike, manifest: dict[str, object] | None = None) -> dict[str, str]:
    """Run Verilator's lint (:data:`LINT_FLAGS`) on every generated module in ``out_dir``.

    Returns module name -> Verilator's output; raises :class:`RuntimeError` naming the module
    and showing the output when one fails, and
    :class:`toolkit_base.toolchain.ToolNotFoundError` when Verilator is missing.
    """
    from toolkit_base.toolchain import require

    out = Path(out_dir)
    if manifest is None:
        manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    exe = require("verilator")
    extra = []
    if "sram_macro_model" in manifest:
        extra.append(str(out / manifest["sram_macro_model"]["file"]))
    report = {}
    for name, entry in manifest["modules"].items():
        flags = [*LINT_FLAGS, *(f"-Wno-{w['warning']}" for w in entry.get("lint_waivers", ()))]
        depends = [str(out / f) for f in entry.get("depends", ())]
        cmd = [exe, *flags, "--top-module", name, str(out / entry["file"]), *depends, *extra]
        proc = subprocess.run(cmd, capture_output=True, text=True, stdin=subprocess.DEVNULL,
                              check=False)
        text = (proc.stdout + proc.stderr).strip()
        if proc.returncode != 0:
            raise RuntimeError(f"verilator lint of {name} failed:\n{text}")
        report[name] = text
    return report
