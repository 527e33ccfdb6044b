"""The dense INT4 baseline tile: every code of a window read, every output code sent, no events.

The hardware form of :func:`golden_models.dense.run_dense` for ``N`` output neurons, built from
the same parameters, SRAMs and load format as :class:`rtl_gen.tile.NeuronTile`, so that the two
designs differ only in what the paper compares (docs/rtl_dense.md):

- integrate: one input code per clock, in address order (the address is a counter: a dense
  stream carries no addresses); the weight row of that address is read and ``W[i, j] * q`` is
  added to every membrane (add/subtract for 1-bit weights, a multiply-accumulate otherwise);
  the membranes start at the dense init ``D`` (the integer bias);
- quantize: the threshold walk of the spiking tile (``t = 0..T-2`` outer, comparator groups
  inner, one threshold row read per step, a neuron compared until it crosses), giving each
  neuron its code ``q = c - t``; bit-exact to the QNN's output quantizer;
- send: the ``N`` codes leave as ``ceil(N / P)`` packed beats of ``P`` codes each (``P`` =
  :func:`dense_pack`), the dense flit payload, in address order; no mask.
"""

from __future__ import annotations

from amaranth.hdl import Array, Cat, Const, Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from golden_models.counters import DENSE_COUNTER_NAMES
from golden_models.dense import dense_init
from golden_models.integer_layer import IntegerLayer
from rtl_gen.layouts import (
    PACK_BITS,
    dense_codes_layout,
    dense_in_layout,
    dense_out_layout,
    dense_pack,
    load_layout,
    sum_out_layout,
    unpack,
)
from rtl_gen.params import ConfigComponent, RTLConfig, bits_for, counter_ports
from rtl_gen.tile import load_beats
from rtl_gen.tile_parts import counters, raw_sum_stage, send_sums, tile_core, write_rows

__all__ = [
    "PACK_BITS",
    "DenseTile",
    "dense_counters",
    "dense_in_layout",
    "dense_load_beats",
    "dense_out_layout",
    "dense_pack",
    "unpack_codes",
]

def dense_counters(config: RTLConfig) -> dict[str, int]:
    """Counter name -> width, in the order of :data:`golden_models.counters.DENSE_COUNTER_NAMES`."""
    n, e = config.tile_neurons, config.n_in
    compares = bits_for(n * (config.T - 1))
    widths = {"codes_in": bits_for(e), "weight_row_reads": bits_for(e),
              "mac_ops": bits_for(e * n), "compare_ops": compares, "threshold_reads": compares,
              "codes_out": bits_for(n)}
    return {name: widths[name] for name in DENSE_COUNTER_NAMES}


class DenseTile(ConfigComponent):
    """``N`` dense INT4 neurons with weight, threshold and init SRAMs.

    Parameters
    ----------
    config : RTLConfig
        Uses ``T``, ``family``, ``weight_bits``, ``n_in``, ``tile_neurons``, ``lanes`` and the
        derived widths (the same as :class:`rtl_gen.tile.NeuronTile`); ``k`` and the silent
        centres are not used.

    Members
    -------
    load : In(stream.Signature(load_layout(config)))
        SRAM rows, as for the spiking tile (:func:`dense_load_beats`); config beats are ignored.
    i : In(stream.Signature(dense_in_layout(config)))
        The window's codes in address order, ended by a ``last`` marker beat.
    o : Out(stream.Signature(dense_out_layout(config)))
        The output codes, packed, then a ``last`` marker beat. With ``raw_sums``:
        ``sum_out_layout(config)``, the ``N`` membranes in neuron order, then the marker.
    busy : Out(1)
    cnt_<name> : Out(width)
        :func:`dense_counters` of the last window.
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        return {
            "load": In(stream.Signature(load_layout(config))),
            "i": In(stream.Signature(dense_in_layout(config))),
            "o": Out(stream.Signature(sum_out_layout(config) if config.raw_sums
                                      else dense_out_layout(config))),
            "busy": Out(1),
            **counter_ports(dense_counters(config)),
        }

    def elaborate(self, platform):
        cfg = self._config
        m = Module()
        N = cfg.tile_neurons
        core = tile_core(m, cfg)
        walk, compare = core.walk, core.compare
        sums = raw_sum_stage(m, cfg, core) if cfg.raw_sums else None
        addr = Signal(range(max(cfg.n_in + 1, 2)))  # the input code's address: a counter

        count, clear_counters = counters(m, self, dense_counters(cfg))

        m.d.comb += self.busy.eq(1)
        with m.FSM(name="phase"):
            with m.State("IDLE"):
                m.d.comb += [self.busy.eq(0), self.load.ready.eq(1)]
                with m.If(self.load.valid):
                    write_rows(m, self.load, core)
                with m.Elif(self.i.valid):
                    m.d.sync += [*clear_counters, addr.eq(0)]
                    m.d.comb += compare.clear.eq(1)
                    m.next = "INIT"

            with m.State("INIT"):
                m.d.comb += core.loader.en.eq(1)
                with m.If(core.loader.done):
                    m.next = "INTEGRATE"

            with m.State("INTEGRATE"):
                m.d.comb += self.i.ready.eq(1)
                with m.If(self.i.valid):
                    with m.If(self.i.payload.last):
                        if cfg.raw_sums:
                            m.d.comb += sums.start.eq(1)
                            m.next = "SUMS"
                        else:
                            m.d.comb += walk.start.eq(1)
                            m.next = "QUANTIZE"
                    with m.Else():
                        code = self.i.payload.code
                        q = code.as_signed() if cfg.family == "sym" else Cat(code, Const(0, 1))
                        m.d.comb += [core.weights.bus.addr.eq(addr), core.weights.bus.ren.eq(1),
                                     core.membranes.valid.eq(1), core.membranes.operand.eq(q)]
                        m.d.sync += addr.eq(addr + 1)
                        count("codes_in", 1)
                        count("weight_row_reads", 1)
                        count("mac_ops", N)

            if cfg.raw_sums:
                with m.State("SUMS"):
                    send_sums(m, self, sums, lambda: count("codes_out", 1))
            else:
                self._quantize_and_send(m, core, count)

            with m.State("END"):
                m.d.comb += [self.o.valid.eq(1), self.o.payload.last.eq(1)]
                with m.If(self.o.ready):
                    m.next = "IDLE"

        return m

    def _quantize_and_send(self, m, core, count) -> None:
        """The codes' phases: the threshold walk gives each neuron its code, then the packed
        code beats."""
        cfg = self._config
        N, L, G, tw, P = cfg.tile_neurons, cfg.lanes, cfg.groups, cfg.time_width, dense_pack(cfg)
        beats = -(-N // P)
        walk, step, compare = core.walk, core.walk.step, core.compare
        codes = [Signal(tw, name=f"q{j}") for j in range(N)]
        codes_pad = codes + [Const(0, tw)] * (beats * P - N)
        beat = Signal(range(max(beats, 2)))
        with m.State("QUANTIZE"):
            # a neuron's code is c - t for the step t it crosses at
            m.d.comb += walk.advance.eq(1)
            with m.If(step.valid):
                for j in range(N):
                    with m.If((step.g == j // L) & compare.cross[j % L]):
                        m.d.sync += codes[j].eq(cfg.c - step.t)
                with m.If(~step.last):
                    count("compare_ops", compare.n_active)
                    count("threshold_reads", compare.n_active)
            with m.If(~walk.issuing & step.valid & step.last & (step.g == G - 1)):
                m.d.sync += beat.eq(0)
                m.next = "SEND"

        with m.State("SEND"):
            m.d.comb += [
                self.o.valid.eq(1),
                self.o.payload.addr.eq(beat * P),
                self.o.payload.codes.eq(Array([Cat(*codes_pad[b * P:(b + 1) * P])
                                               for b in range(beats)])[beat]),
            ]
            with m.If(self.o.ready):
                count("codes_out", Mux(beat == beats - 1, N - (beats - 1) * P, P))
                m.d.sync += beat.eq(beat + 1)
                with m.If(beat == beats - 1):
                    m.next = "END"


def dense_load_beats(config: RTLConfig, layer: IntegerLayer) -> list[tuple[int, int, int]]:
    """The ``load`` beats that program a :class:`DenseTile` with ``layer``.

    The spiking tile's image (:func:`rtl_gen.tile.load_beats`, which checks that the layer
    fits) with the dense init ``D`` in the init rows.
    """
    dense = IntegerLayer(layer.weights, layer.weight_bits, dense_init(layer), layer.theta,
                         layer.in_mask, layer.out_mask)
    return load_beats(config, dense)


def unpack_codes(config: RTLConfig, addr: int, word: int, n_out: int) -> list[tuple[int, int]]:
    """``(neuron, code)`` pairs of one dense beat (codes past ``n_out`` are padding)."""
    codes = unpack(dense_codes_layout(config), word)
    return [(addr + p, q) for p, q in enumerate(codes) if addr + p < n_out]




