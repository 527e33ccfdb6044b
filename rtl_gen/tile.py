"""The M-TTFS neuron tile: integrate one event per clock, then fire with a dynamic threshold.

The tile is the hardware form of :meth:`golden_models.IntegerLayer.run_events` for ``N`` output
neurons (docs/design.md, "The hardware"; docs/rtl_tile.md):

- membranes start at the folded init values ``B`` read from the init SRAM;
- integrate: each input event ``(addr, tau)`` reads weight row ``addr`` and adds
  ``W[addr, j] * d`` with ``d = i_max_in - tau`` (= ``c - tau - mu_in``) to every membrane,
  one event per clock (add/subtract for 1-bit weights, multiply-accumulate otherwise);
- fire: for ``t = 0..T-1`` and each group of ``L`` comparator lanes, a not-yet-fired neuron
  fires when ``V >= theta[j][t]`` (threshold row read from SRAM), or unconditionally at
  ``t = T-1``; it is emitted as ``(j, t)`` unless ``t`` is in the output dead zone.

Walking ``t`` in the outer loop and the groups in the inner loop makes the output stream come
out in time order with ascending addresses within a step, the order of
:func:`golden_models.encode_events`, without any sorting buffer.
"""

from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import stream
from amaranth.lib.wiring import In, Out

from golden_models import IntegerLayer
from rtl_gen.layouts import (
    TARGETS,
    in_event_layout,
    init_row_layout,
    load_layout,
    out_event_layout,
    pack,
    sum_out_layout,
    theta_row_layout,
    tile_config_layout,
    weight_row_layout,
)
from rtl_gen.mask import transmitted
from rtl_gen.params import ConfigComponent, RTLConfig, check_config, counter_ports
from rtl_gen.tile_parts import (
    EventEmitter,
    counters,
    raw_sum_stage,
    send_sums,
    tile_core,
    write_rows,
)

__all__ = [
    "NeuronTile",
    "load_beats",
]


class NeuronTile(ConfigComponent):
    """``N`` M-TTFS neurons with weight, threshold and init SRAMs.

    Parameters
    ----------
    config : RTLConfig
        Uses ``T``, ``k``, ``i_max_in``, ``i_max_out`` (config register reset values),
        ``weight_bits``, ``n_in``, ``tile_neurons``, ``lanes`` and the derived widths.

    Members
    -------
    load : In(stream.Signature(load_layout(config)))
        SRAM rows and config registers; accepted only while idle.
    i : In(stream.Signature(in_event_layout(config)))
        Input events of a window, ended by a ``last`` marker beat.
    o : Out(stream.Signature(out_event_layout(config)))
        Output events in time order, then a ``last`` marker beat. With ``raw_sums``:
        ``sum_out_layout(config)``, the ``N`` membranes after integration in neuron order
        (:class:`rtl_gen.tile_parts.SumEmitter`), then the marker.
    busy : Out(1)
        A window is in progress.
    cnt_<name> : Out(width)
        Activity counters of the last window, ``config.tile_counters``.

    Raises
    ------
    TypeError
        ``config`` is not an :class:`RTLConfig`.
    """

    def _members(self, config: RTLConfig) -> dict[str, object]:
        return {
            "load": In(stream.Signature(load_layout(config))),
            "i": In(stream.Signature(in_event_layout(config))),
            "o": Out(stream.Signature(sum_out_layout(config) if config.raw_sums
                                      else out_event_layout(config))),
            "busy": Out(1),
            **counter_ports(config.tile_counters),
        }

    def elaborate(self, platform):  # noqa: PLR0915 -- one FSM, its states read top to bottom
        cfg = self._config
        m = Module()
        core = tile_core(m, cfg)
        walk, step, compare = core.walk, core.walk.step, core.compare
        m.submodules.emit = emit = EventEmitter(cfg)
        sums = raw_sum_stage(m, cfg, core) if cfg.raw_sums else None
        # the config word: reset to the elaboration values, rewritable through `load`
        conf = Signal(tile_config_layout(cfg), name="config",
                      init={"i_max_in": cfg.i_max_in, "i_max_out": cfg.i_max_out, "k": cfg.k})
        count, clear_counters = counters(m, self, cfg.tile_counters)

        # B -> C: a step handed on gives its crossing lanes to C, unless t is in the dead zone
        tx = Signal()
        m.d.comb += [
            tx.eq(transmitted(step.t, conf.i_max_out, conf.k)),
            emit.push.eq(compare.commit),
            emit.lanes.eq(Mux(tx, compare.cross, 0)),
            emit.t.eq(step.t),
            emit.g.eq(step.g),
        ]
        with m.If(compare.commit):
            with m.If(~step.last):
                count("compare_ops", compare.n_active)
                count("threshold_reads", compare.n_active)
            with m.If(tx):
                count("events_out", compare.n_cross)
            with m.Else():
                count("events_suppressed", compare.n_cross)

        m.d.comb += self.busy.eq(1)
        with m.FSM(name="phase"):
            with m.State("IDLE"):
                m.d.comb += [self.busy.eq(0), self.load.ready.eq(1)]
                ld = self.load.payload
                with m.If(self.load.valid):
                    write_rows(m, self.load, core)
                    with m.If(ld.target == TARGETS["config"]):
                        m.d.sync += conf.eq(ld.data[:cfg.config_width])
                with m.Elif(self.i.valid):
                    m.d.sync += clear_counters
                    m.d.comb += compare.clear.eq(1)
                    m.next = "INIT"

            with m.State("INIT"):
                m.d.comb += core.loader.en.eq(1)
                with m.If(core.loader.done):
                    m.next = "INTEGRATE"

            with m.State("INTEGRATE"):
                m.d.comb += self.i.ready.eq(1)
                ev = self.i.payload
                with m.If(self.i.valid):
                    with m.If(ev.last):
                        if cfg.raw_sums:
                            m.d.comb += sums.start.eq(1)
                            m.next = "SUMS"
                        else:
                            m.d.comb += walk.start.eq(1)
                            m.next = "FIRE"
                    with m.Else():
                        m.d.comb += [core.weights.bus.addr.eq(ev.addr), core.weights.bus.ren.eq(1),
                                     core.membranes.valid.eq(1),
                                     core.membranes.operand.eq(conf.i_max_in - ev.tau)]
                        count("events_in", 1)
                        count("weight_row_reads", 1)
                        count("accumulate_ops", cfg.tile_neurons)

            with m.State("FIRE"):
                # C emits; B moves on unless C still holds more than the event leaving now
                if not cfg.raw_sums:
                    m.d.comb += [self.o.valid.eq(emit.o.valid),
                                 self.o.payload.eq(emit.o.payload),
                                 emit.o.ready.eq(self.o.ready)]
                m.d.comb += walk.advance.eq(~step.valid | emit.free)
                with m.If(~walk.issuing & ~step.valid & emit.free):
                    m.next = "END"

            with m.State("END"):
                m.d.comb += [
                    self.o.valid.eq(1),
                    self.o.payload.last.eq(1),
                ]
                with m.If(self.o.ready):
                    m.next = "IDLE"

            if cfg.raw_sums:
                with m.State("SUMS"):
                    send_sums(m, self, sums, lambda: count("events_out", 1))

        return m


# -- SRAM images -------------------------------------------------------------------------------


def _fits(value: int, width: int, what: str) -> int:
    """``value`` if it fits ``width`` signed bits, else ``ValueError`` naming ``what``."""
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    if not lo <= value <= hi:
        raise ValueError(f"{what} = {value} does not fit {width} signed bits ({lo}..{hi})")
    return value


def _check_fits(config: RTLConfig, layer: IntegerLayer) -> None:
    """``TypeError``/``ValueError`` naming the quantity when ``layer`` does not fit the tile."""
    check_config(config)
    if not isinstance(layer, IntegerLayer):
        raise TypeError(f"layer must be a golden_models.IntegerLayer, not {layer!r}")
    N, T = config.tile_neurons, config.T
    if layer.n_out != N:
        raise ValueError(f"layer has {layer.n_out} outputs, the tile has {N} neurons")
    if layer.n_in > config.n_in:
        raise ValueError(f"layer has {layer.n_in} inputs, the tile has {config.n_in} rows")
    if layer.weight_bits != config.weight_bits:
        raise ValueError(
            f"layer has {layer.weight_bits}-bit weights, the tile {config.weight_bits}-bit")
    for name, mask in (("in_mask", layer.in_mask), ("out_mask", layer.out_mask)):
        if mask.T != T:
            raise ValueError(f"layer {name} has T={mask.T}, the tile T={T}")


def load_beats(config: RTLConfig, layer: IntegerLayer) -> list[tuple[int, int, int]]:
    """The ``load`` stream beats ``(target, addr, data)`` that program a tile with ``layer``.

    Parameters
    ----------
    config : RTLConfig
    layer : golden_models.IntegerLayer
        ``n_out == config.tile_neurons``, ``n_in <= config.n_in``, ``weight_bits`` and ``T`` of
        both masks equal to the config's.

    Returns
    -------
    list of (int, int, int)
        Weight rows (one per input address), threshold rows (``t*G + g``), init rows (``g``),
        then one config beat (``i_max_in``, ``i_max_out``, ``k`` from the layer's masks).

    Raises
    ------
    TypeError, ValueError
        When the layer does not fit the tile; the message names the quantity.
    """
    _check_fits(config, layer)
    N, L, G, T = config.tile_neurons, config.lanes, config.groups, config.T
    wb, tw, aw = config.weight_bits, config.theta_width, config.acc_width
    weight_row, theta_row = weight_row_layout(config), theta_row_layout(config)
    init_row = init_row_layout(config)
    beats = []
    weights = layer.weights.tolist()
    for i, row in enumerate(weights):
        values = [(1 if w > 0 else 0) if wb == 1 else _fits(int(w), wb, f"W[{i}][{j}]")
                  for j, w in enumerate(row)]
        beats.append((TARGETS["weights"], i, pack(weight_row, values)))
    bound = config.acc_bound
    theta = layer.theta.clamp(-bound, bound + 1).tolist()
    for t in range(T - 1):
        for g in range(G):
            # lanes past neuron N-1 stay 0
            values = [_fits(int(theta[j][t]), tw, f"theta[{j}][{t}]")
                      for j in range(g * L, min((g + 1) * L, N))]
            beats.append((TARGETS["thresholds"], t * G + g, pack(theta_row, values)))
    init = layer.init.tolist()
    for j, b in enumerate(init):
        if abs(b) > config.init_bound:
            raise ValueError(
                f"init B[{j}] = {b} exceeds init_bound {config.init_bound} "
                f"(n_in * w_max * max|q|), which keeps the accumulator from overflowing")
    for g in range(G):
        values = [_fits(int(init[j]), aw, f"B[{j}]") for j in range(g * L, min((g + 1) * L, N))]
        beats.append((TARGETS["init"], g, pack(init_row, values)))
    cfg_word = pack(tile_config_layout(config), {"i_max_in": layer.in_mask.i_max,
                                                 "i_max_out": layer.out_mask.i_max,
                                                 "k": layer.out_mask.k})
    beats.append((TARGETS["config"], 0, cfg_word))
    return beats


# -- simulation driver -------------------------------------------------------------------------




