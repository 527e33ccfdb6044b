"""The list of properties ``matterhorn prove`` checks, each with its planted bug.

A :class:`Property` names the registered block (:mod:`rtl_gen.registry`; and the instance inside
it when the property is about a sub-component), its parameters, how it is checked (``prove``:
k-induction, unbounded; ``bmc``: every trace of ``depth`` clocks from reset) and how its
harness is built; each :class:`Mutant` is a one-line edit of the generator's source
(:func:`formal.harness.mutant_module`) that the same check must reject with a counterexample.
docs/formal.md states every property and mutant in words. Every registered block has
properties here or an entry in :data:`UNPROVEN` saying why not (``tests/test_registry.py``).
"""

from __future__ import annotations

from formal.axi import axi_properties
from formal.harness import Mutant, Property
from rtl_gen import registry

__all__ = ["PROPERTIES", "UNPROVEN", "select"]


def _encoder_cfg(T, n_in=4):
    from rtl_gen.params import RTLConfig

    return RTLConfig(T=T, k=1, n_in=n_in)


def _tile_cfg(T, weight_bits=1):
    from rtl_gen.params import RTLConfig

    return RTLConfig(T=T, k=1, n_in=3, tile_neurons=2, lanes=1, weight_bits=weight_bits)


def _encoder_stream(T):
    def build(module=None):
        from formal.encoder import EncoderStream

        return EncoderStream(_encoder_cfg(T), module)
    return build


def _encoder_events(T, n_in=4):
    def build(module=None):
        from formal.encoder import EncoderEvents

        return EncoderEvents(_encoder_cfg(T, n_in), module)
    return build


def _tile(kind, T, weight_bits=1):
    def build(module=None):
        from formal import tile

        return getattr(tile, kind)(_tile_cfg(T, weight_bits), module)
    return build


def _part(kind, config):
    def build(module=None):
        from formal import parts

        return getattr(parts, kind)(config, module)
    return build


def _dense_cfg():
    from rtl_gen.params import RTLConfig

    return RTLConfig(T=4, k=1, n_in=3, tile_neurons=2, lanes=1, weight_bits=4)


def _injector_cfg():
    from rtl_gen.params import RTLConfig

    return RTLConfig(T=4, k=1, n_in=4, tile_neurons=2, mesh_rows=2, mesh_cols=2)


def _unit_cfg():
    from rtl_gen.params import RTLConfig

    return RTLConfig(T=4, seq_len=2, head_dim=1, exp_frac_bits=1, hidden=2, ffn_dim=2,
                     residual_bits=4, guard_bits=0)


def _unit(kind):
    def build(module=None):
        from formal import units

        return getattr(units, kind)(_unit_cfg(), module)
    return build


def _router(kind):
    def build(module=None):
        from formal import router

        return getattr(router, kind)(module=module)
    return build


ENC = "rtl_gen.encoder"
TILE = "rtl_gen.tile"
#: The sub-components of both tiles (a mutant there is checked on the tile built over it).
TILE_PARTS = "rtl_gen.tile_parts"
ROUTER = "rtl_gen.router"

ENC_STREAM_MUTANT = Mutant(
    "encoder_step_ignores_ready", ENC, "(self.o.ready & (ptr == tail_rd.data))",
    "(ptr == tail_rd.data)",
    "the emit walk leaves a step at its tail without waiting for ready", "o: stream rule")
ENC_MASK_MUTANT = Mutant(
    "encoder_mask_off_by_one", ENC, "kept = transmitted(tau, cfg.i_max_in, cfg.k)",
    "kept = transmitted(tau, cfg.i_max_in, cfg.k + 1)",
    "the input mask drops |tau - I_max| = k + 1 too", "a kept address never left")
ENC_ONCE_MUTANT = Mutant(
    "encoder_walk_stays_at_head", ENC, "m.d.sync += first.eq(0)", "m.d.sync += []",
    "after sending a step's head the walk stays at the head, so the head is sent again",
    "(time, address) order")
ENC_ORDER_MUTANT = Mutant(
    "encoder_link_backwards", ENC, "bus.addr.eq(tail_rd.data), bus.wdata.eq(addr)",
    "bus.addr.eq(addr), bus.wdata.eq(tail_rd.data)",
    "an append links the new address back to the old tail (the list runs backwards), so the "
    "walk follows a link not written in this window", "(time, address) order")
ENC_HEAD_MUTANT = Mutant(
    "encoder_walk_starts_at_tail", ENC, "ptr.eq(Mux(first, head_rd.data, bus.rdata))",
    "ptr.eq(Mux(first, tail_rd.data, bus.rdata))",
    "the walk starts a step at its tail instead of its head (head and tail swapped), so only "
    "the last address of a step leaves", "a kept address never left")
TILE_STREAM_MUTANT = Mutant(
    "tile_marker_ignores_ready", TILE,
    "                with m.If(self.o.ready):\n                    m.next = \"IDLE\"",
    "                m.next = \"IDLE\"",
    "the output marker is dropped after one clock even when not taken", "o: stream rule")
TILE_MASK_MUTANT = Mutant(
    "tile_mask_off_by_one", TILE, "tx.eq(transmitted(step.t, conf.i_max_out, conf.k))",
    "tx.eq(transmitted(step.t, conf.i_max_out, conf.k - 1))",
    "the output mask lets |t - I_max| = k through", "inside the dead zone")
TILE_ONCE_MUTANT = Mutant(
    "tile_fired_not_set", TILE_PARTS, "group.eq(group | self.cross)", "group.eq(group)",
    "a neuron that fired is not marked fired", "fired twice")
TILE_ACC_MUTANT = Mutant(
    "tile_accumulator_one_bit_short", TILE_PARTS,
    "Signal(signed(cfg.acc_width), name=f\"v{j}\")",
    "Signal(signed(cfg.acc_width - 1), name=f\"v{j}\")",
    "the membranes are one bit narrower than the derived accumulator width", "changed by more than")
ROUTER_STREAM_MUTANT = Mutant(
    "router_grant_not_held", ROUTER, "            with m.If(locked):\n"
    "                m.d.comb += sel.eq(held)\n", "",
    "a stalled output is re-arbitrated instead of holding its grant", "stream rule")
ROUTER_XY_MUTANT = Mutant(
    "router_y_before_x", ROUTER, "go_x = f.dst_x != x", "go_x = Const(0, 1)",
    "a flit may turn to its Y port before reaching its column", "for another port")
ROUTER_HOPS_MUTANT = Mutant(
    "router_no_hop_on_west", ROUTER, "if o != _L:", "if o not in (_L, _W):",
    "a flit leaving west keeps its hop count", "hops not one higher")
ROUTER_DUP_MUTANT = Mutant(
    "router_pop_without_take", ROUTER, "pops[i].append(take & (sel == i))",
    "pops[i].append(out.valid & (sel == i))",
    "an input FIFO is popped while its output is stalled (a flit is lost)", "stream rule")

ROUTER_LOCAL_DUP_MUTANT = Mutant(
    "router_local_not_popped", ROUTER, "pops[i].append(take & (sel == i))",
    "pops[i].append(take & (sel == i) & Const(int(o != _L), 1))",
    "a flit ejected on the local port stays in its FIFO and leaves again (duplicated)",
    "left twice")

DENSE = "rtl_gen.dense"
DENSE_STREAM_MUTANT = Mutant(
    "dense_beat_ignores_ready", DENSE,
    "            with m.If(self.o.ready):\n                count(\"codes_out\"",
    "            with m.If(1):\n                count(\"codes_out\"",
    "the next code beat is put up while the current one is not taken", "o: stream rule")
PARTS = "rtl_gen.system_parts"
INJECTOR_STREAM_MUTANT = Mutant(
    "injector_walk_ignores_ready", PARTS,
    "                with m.If(self.o.ready):\n"
    "                    with m.If(idx == self.n_dst - 1):",
    "                with m.If(1):\n                    with m.If(idx == self.n_dst - 1):",
    "the walk moves to the next destination while the flit is not taken", "o: stream rule")

KV = "rtl_gen.kv_tiles"
KV_MASK_MUTANT = Mutant(
    "kv_read_unmasked", KV, "Mux(k, rd.data[lane * bits:(lane + 1) * bits], 0)",
    "rd.data[lane * bits:(lane + 1) * bits]",
    "a row read returns every lane as the memory holds it, written in this sequence or not",
    "not written in this sequence")
KV_START_MUTANT = Mutant(
    "kv_written_kept_across_sequences", KV, "m.d.sync += [written.eq(0), ", "m.d.sync += [",
    "a sequence's start keeps the written bits of the previous one", "this sequence")


def _kv(orientation):
    def build(module=None):
        from formal.attention import KvNoStaleRead
        from rtl_gen.attn_params import AttentionConfig

        cfg = AttentionConfig(heads=1, head_dim=2, seq_max=2, T=4, kv_pack=1)
        return KvNoStaleRead(cfg, orientation, module)
    return build

SOFTMAX = "rtl_gen.softmax"
SOFTMAX_STREAM_MUTANT = Mutant(
    "softmax_marker_ignores_ready", SOFTMAX,
    "                with m.If(self.o.ready):\n                    m.next = \"IDLE\"",
    "                m.next = \"IDLE\"",
    "the row's marker is dropped after one clock even when not taken", "o: stream rule")
ADD_NORM = "rtl_gen.add_norm"
ADD_NORM_STREAM_MUTANT = Mutant(
    "add_norm_valid_from_load", ADD_NORM, "self.o.valid.eq(o_valid)",
    "self.o.valid.eq(o_valid | self.load.valid)",
    "a load beat raises the output's valid, which falls with it, not taken",
    "o: stream rule")
UNIT_PARAMS = {"T": 4, "seq_len": 2, "head_dim": 1, "exp_frac_bits": 1, "hidden": 2, "ffn_dim": 2,
               "residual_bits": 4, "guard_bits": 0}

PROPERTIES: tuple[Property, ...] = (
    Property("encoder_stream_T4", "encoder", {"T": 4, "k": 1, "n_in": 4}, "prove", 10,
             "o obeys the stream rule", _encoder_stream(4), (ENC_STREAM_MUTANT,)),
    Property("encoder_stream_T8", "encoder", {"T": 8, "k": 1, "n_in": 4}, "prove", 10,
             "o obeys the stream rule", _encoder_stream(8), (ENC_STREAM_MUTANT,)),
    Property("encoder_events_T4", "encoder", {"T": 4, "k": 1, "n_in": 4}, "bmc", 24,
             "an event leaves iff |tau - I_max| > k, once per window, in (time, address) order",
             _encoder_events(4),
             (ENC_MASK_MUTANT, ENC_ONCE_MUTANT, ENC_ORDER_MUTANT, ENC_HEAD_MUTANT), syn=True),
    Property("encoder_events_T8", "encoder", {"T": 8, "k": 1, "n_in": 2}, "bmc", 24,
             "an event leaves iff |tau - I_max| > k, once per window, in (time, address) order",
             _encoder_events(8, 2), (ENC_MASK_MUTANT,), syn=True),
    Property("tile_stream_T4", "tile",
             {"T": 4, "k": 1, "n_in": 3, "tile_neurons": 2, "lanes": 1}, "prove", 20,
             "o obeys the stream rule", _tile("TileStream", 4), (TILE_STREAM_MUTANT,)),
    Property("tile_outputs_T4", "tile",
             {"T": 4, "k": 1, "n_in": 3, "tile_neurons": 2, "lanes": 1}, "bmc", 24,
             "at most one event per neuron and window, none in the dead zone, "
             "(time, address) order", _tile("TileOutputs", 4),
             (TILE_MASK_MUTANT, TILE_ONCE_MUTANT), syn=True),
    Property("tile_membrane_T4", "tile",
             {"T": 4, "k": 1, "n_in": 3, "tile_neurons": 2, "lanes": 1}, "bmc", 16,
             "membranes within acc_bound and never wrapping, for loads within the packer's "
             "bounds", _tile("TileMembrane", 4), (TILE_ACC_MUTANT,)),
    Property("dense_tile_stream_T4", "dense_tile",
             {"T": 4, "k": 1, "n_in": 3, "tile_neurons": 2, "lanes": 1, "weight_bits": 4},
             "prove", 20, "o obeys the stream rule", _part("DenseTileStream", _dense_cfg()),
             (DENSE_STREAM_MUTANT,)),
    Property("injector_stream", "system",
             {"T": 4, "n_in": 4, "mesh": "2x2"}, "prove", 10,
             "o obeys the stream rule while the destination range holds still",
             _part("InjectorStream", _injector_cfg()), (INJECTOR_STREAM_MUTANT,),
             instance="inject_x<x>_y<y>"),
    Property("router_stream", "router",
             {"mesh": "3x3", "x": 1, "y": 1, "addr_width": 1, "time_width": 2}, "bmc", 12,
             "every output obeys the stream rule", _router("RouterStream"),
             (ROUTER_STREAM_MUTANT,), syn=True),
    Property("router_flow", "router",
             {"mesh": "3x3", "x": 1, "y": 1, "addr_width": 1, "time_width": 2}, "bmc", 8,
             "XY port; any flit leaves exactly once, while busy is high, with dst and t "
             "unchanged and hops + 1 per hop", _router("RouterFlow"),
             (ROUTER_XY_MUTANT, ROUTER_HOPS_MUTANT, ROUTER_DUP_MUTANT, ROUTER_LOCAL_DUP_MUTANT)),
    Property("kv_no_stale_read_keys", "attention",
             {"T": 4, "head_dim": 2, "seq_max": 2, "kv_pack": 1, "orientation": "columns"},
             "bmc", 8, "a key-memory read returns the codes of this sequence and 0 in every "
             "lane not written in it; complete iff every slot is written", _kv("columns"),
             (KV_MASK_MUTANT, KV_START_MUTANT), instance="qk.weights"),
    Property("kv_no_stale_read_values", "attention",
             {"T": 4, "head_dim": 2, "seq_max": 2, "kv_pack": 1, "orientation": "rows"},
             "bmc", 8, "a value-memory read returns the codes of this sequence and 0 in every "
             "lane not written in it; complete iff every slot is written", _kv("rows"),
             (KV_MASK_MUTANT, KV_START_MUTANT), instance="pv.weights"),
    Property("softmax_stream", "softmax", UNIT_PARAMS, "prove", 36, "o obeys the stream rule",
             _unit("SoftmaxStream"), (SOFTMAX_STREAM_MUTANT,)),
    Property("add_norm_stream", "add_norm", UNIT_PARAMS, "prove", 10,
             "o obeys the stream rule", _unit("AddNormStream"), (ADD_NORM_STREAM_MUTANT,)),
)

# the AXI wrapper's proof lives beside its harness (formal/axi.py)
PROPERTIES += axi_properties()


#: Registered blocks without a proof harness, and why.
UNPROVEN = {
    "attn_softmax": "arithmetic (a maximum, a product and shift, a table, a division and a walk "
    "per row) checked bit-exact against golden_models.int_softmax.IntSoftmax on random rows "
    "in the Amaranth simulator (tests/test_rtl_attention_parts.py) and by its fast bench on "
    "both simulators (docs/rtl_attention.md)",
    "sram": "a behavioural memory behind the project's SRAM bus (or a macro wrapper that passes "
    "the bus through); the SRAM bench checks every row read after its write and the read "
    "counter on every clock (docs/regress.md)",
}


def by_block() -> dict[str, tuple[Property, ...]]:
    """Registered block name -> its properties, in :data:`rtl_gen.registry.BLOCKS` order
    (a block of :data:`UNPROVEN` has none)."""
    return {b.name: tuple(p for p in PROPERTIES if p.block == b.name)
            for b in registry.BLOCKS}


def select(only: list[str] | None = None) -> tuple[Property, ...]:
    """The properties named in ``only`` (all when empty), block by block in registry order;
    ``ValueError`` on an unknown name."""
    ordered = tuple(p for props in by_block().values() for p in props)
    if not only:
        return ordered
    names = {p.name for p in PROPERTIES}
    unknown = [n for n in only if n not in names]
    if unknown:
        raise ValueError(f"unknown property {unknown[0]!r}; known: {', '.join(sorted(names))}")
    wanted = set(only)
    return tuple(p for p in ordered if p.name in wanted)
