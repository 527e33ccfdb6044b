"""Proof harness of the run-time weight memory (``rtl_gen.kv_tiles.RuntimeWeights``): no read
returns a code of an earlier sequence.

Beside the memory the harness keeps a shadow of what the current sequence wrote, from the
beats the memory takes and its own reading of the rule (a beat of a slot below ``length`` whose
(slot, group) is not yet written writes its codes; ``start`` forgets everything). After every
read, each lane of ``rdata`` must be the shadow's code where the shadow says written, and 0
where it does not: a lane of the previous sequence never reaches a membrane. ``complete`` must
say exactly that every slot below ``length`` is written.

Assumed, as the tiles guarantee: ``w`` obeys the stream rule; ``start`` never comes with a
taken write beat (both arrive on the one ``load`` stream); a read is issued only while no
``"columns"`` beat is being written and writes are not accepted (a tile reads in a window,
which starts only then, and takes no write during one).
"""

from __future__ import annotations

from amaranth.hdl import Array, Assert, Assume, Cat, Mux, Signal, signed

from formal.harness import Harness, block_module, drive_input

__all__ = ["KvNoStaleRead"]


class KvNoStaleRead(Harness):
    """No read of the run-time weight memory returns a code not written in this sequence."""

    def __init__(self, config, orientation: str, module=None):
        super().__init__()
        self.config = config
        self.orientation = orientation
        self.module = block_module(module, "rtl_gen.kv_tiles", "RuntimeWeights")
        self.dut = self.module.RuntimeWeights(config, orientation, acc_width=8)

    def check(self, m):
        cfg, dut = self.config, self.dut
        m.submodules.dut = dut
        bits, P, G, S = cfg.code_bits, cfg.kv_pack, cfg.kv_groups, cfg.seq_max
        rows, lanes = dut.rows, dut.lanes
        drive_input(self, m, dut.w, "w")
        for name in ("accept", "start", "length", "mu", "addr", "ren"):
            port = getattr(dut, name)
            m.d.comb += port.eq(self.free(port.shape(), name))
        take = dut.w.valid & dut.w.ready
        m.d.comb += [Assume(~(dut.start & take)), Assume(~(dut.ren & dut.writing)),
                     Assume(~(dut.ren & dut.accept)), Assume(dut.addr < rows)]
        # the shadow: written (slot, group) flags and the codes of every (row, lane)
        done = Signal(S * G, name="sh_written")
        valid = Array(Signal(lanes, name=f"sh_valid{r}") for r in range(rows))
        data = Array(Array(Signal(signed(bits), name=f"sh_code{r}_{j}") for j in range(lanes))
                     for r in range(rows))
        p = dut.w.payload
        fresh = take & (p.slot < dut.length) & ~done.bit_select(p.slot * G + p.group, 1)
        with m.If(dut.start):
            m.d.sync += [done.eq(0), *(v.eq(0) for v in valid)]
        with m.Elif(fresh):
            m.d.sync += done.bit_select(p.slot * G + p.group, 1).eq(1)
            for q in range(P):
                if self.orientation == "columns":  # code q: row g*P + q, lane = slot
                    row, lane = p.group * P + q, p.slot
                else:  # row = slot, lane g*P + q
                    row, lane = p.slot, p.group * P + q
                m.d.sync += [valid[row].bit_select(lane, 1).eq(1),
                             data[row][lane].eq(p.codes[q])]
        # the row a read shows, one clock later
        shown, row_read = Signal(name="sh_shown"), Signal(range(max(rows, 2)), name="sh_row")
        m.d.sync += [shown.eq(dut.ren), row_read.eq(dut.addr)]
        with m.If(shown):
            for j in range(lanes):
                lane = dut.rdata[j * bits:(j + 1) * bits].as_signed()
                want = Cat(data[row_read][j]).as_signed()
                m.d.comb += Assert(Mux(valid[row_read][j], lane == want, lane == 0),
                                   "kv: a read returned a code not written in this sequence")
        full = Cat(*(done[s * G:(s + 1) * G].all() | (s >= dut.length) for s in range(S)))
        m.d.comb += Assert(dut.complete == (full.all() & (dut.length != 0)),
                           "kv: complete differs from every slot of this sequence written")

