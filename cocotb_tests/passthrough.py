"""A tiny Amaranth stream buffer that proves the bench infrastructure on both simulators.

It stands in for no project block: it lets the runner, the stream driver and monitor, the
scoreboard and the self-checks be exercised on a design whose behaviour is obvious (every
beat comes out unchanged, in order).
"""

from __future__ import annotations

import json
from pathlib import Path

#: Payload of the smoke-test stream: two fields, LSB first.
FIELDS = {"addr": 7, "t": 4}


def passthrough_verilog(out_dir: Path | str) -> tuple[Path, dict]:
    """Elaborate the buffer to ``out_dir/mttfs_passthrough.v``; return the path and a manifest
    entry (ports with payload fields) in the shape the generator's manifest uses."""
    from amaranth.back import verilog
    from amaranth.hdl import Module, Signal
    from amaranth.lib import data, stream, wiring
    from amaranth.lib.wiring import In, Out

    layout = data.StructLayout(FIELDS)

    class Passthrough(wiring.Component):
        def __init__(self):
            # ports passed explicitly: this module uses postponed annotations
            super().__init__(
                {"i": In(stream.Signature(layout)), "o": Out(stream.Signature(layout))}
            )

        def elaborate(self, platform):
            m = Module()
            full = Signal()
            buf = Signal(layout)
            m.d.comb += [
                self.i.ready.eq(~full | self.o.ready),
                self.o.valid.eq(full),
                self.o.payload.eq(buf),
            ]
            with m.If(self.i.valid & self.i.ready):
                m.d.sync += [buf.eq(self.i.payload), full.eq(1)]
            with m.Elif(self.o.ready):
                m.d.sync += full.eq(0)
            return m

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    text = verilog.convert(Passthrough(), name="mttfs_passthrough", emit_src=False)
    path = out_dir / "mttfs_passthrough.v"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)
    fields, off = [], 0
    for name, width in FIELDS.items():
        fields.append({"name": name, "offset": off, "width": width})
        off += width
    entry = {"streams": {"i": {"fields": fields}, "o": {"fields": fields}}}
    (out_dir / "passthrough.json").write_text(json.dumps(entry, sort_keys=True) + "\n")
    return path, entry
