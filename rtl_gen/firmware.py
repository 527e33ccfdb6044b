"""The C driver of the AXI tile: firmware that loads a layer, streams a window, reads counters.

:func:`tile_driver` writes ``<prefix>mttfs_axi_tile_driver.h`` and ``..._driver.c`` beside the
register header (``<prefix>mttfs_axi_tile.h``, :func:`rtl_gen.regmap.c_header`) for one
configuration (docs/firmware.md). The driver is C99 (and C11, C++): no allocation, no library
call but ``<stdint.h>``/``<stddef.h>``, every register reached through two functions the
platform gives (``read32``/``write32``: plain memory-mapped I/O, :c:func:`..._mmio_read32`, or
a bus model) and the two streams through two more (``send`` a beat to ``s_axis``, ``receive``
one from ``m_axis``: a DMA, a FIFO, or a simulator).

What it does is the Python model's, written once more in C and checked against it:

- ``..._load_layer``: a layer's images packed into load beats exactly as
  :func:`rtl_gen.tile.load_beats` packs them (weight rows, threshold rows with the thresholds
  clamped to ``[-acc_bound, acc_bound + 1]``, init rows, the config word), each beat sent as
  :func:`rtl_gen.axi_sim.load_writes` sends it (``LOAD_DATA`` words, then ``LOAD_CMD``);
- ``..._window``: input events ``{addr, tau}`` as TDATA words, the TLAST marker, then the
  output events until the output's TLAST;
- ``..._read_counters``: the counter snapshot, read between two equal ``DONE`` values so every
  counter belongs to one window (docs/rtl_axi.md, "Counters").

``tests/test_firmware.py`` compiles the driver in C99, C11 and C++ with ``-Werror`` and runs
it on the Verilator model of the generated ``mttfs_axi_tile`` against the golden layer.
"""

from __future__ import annotations

from rtl_gen.layouts import TARGETS
from rtl_gen.params import RTLConfig, check_config

__all__ = ["DRIVER_FILES", "tile_driver"]

#: The driver's files of wrapper ``name``.
DRIVER_FILES = ("{name}_driver.h", "{name}_driver.c")

_HEADER = """\
/* {name}_driver.h: the C driver of {name} (written by matterhorn generate, docs/firmware.md).
 * C99, C11 and C++. The configuration it was generated for is below; {name}_check() compares
 * it with the tile's INFO registers. */
#ifndef {NAME}_DRIVER_H
#define {NAME}_DRIVER_H

#include <stddef.h>
#include <stdint.h>

#include "{name}.h"

#ifdef __cplusplus
extern "C" {{
#endif

/* -- the configuration ------------------------------------------------------------------- */
{constants}
/* -- results ----------------------------------------------------------------------------- */
#define {NAME}_OK 0
#define {NAME}_E_ID (-1)       /* ID or INFO registers are not this configuration's */
#define {NAME}_E_RANGE (-2)    /* a weight, threshold, init or config value does not fit */
#define {NAME}_E_STREAM (-3)   /* send or receive failed (no beat came) */
#define {NAME}_E_OVERFLOW (-4) /* more output events than the caller's buffer holds */
#define {NAME}_E_BUSY (-5)     /* DONE kept changing while the counters were read */

/* How the driver reaches the tile: registers by byte offset from the slave's base, the
 * streams one beat at a time. send() and receive() return 1 on success, 0 on failure. */
typedef struct {name}_io {{
    uint32_t (*read32)(void *ctx, uint32_t offset);
    void (*write32)(void *ctx, uint32_t offset, uint32_t value);
    int (*send)(void *ctx, uint64_t tdata, int tlast);
    int (*receive)(void *ctx, uint64_t *tdata, int *tlast);
    void *ctx;
}} {name}_io_t;

/* Memory-mapped registers: ctx is the AXI4-Lite slave's base address. */
uint32_t {name}_mmio_read32(void *ctx, uint32_t offset);
void {name}_mmio_write32(void *ctx, uint32_t offset, uint32_t value);

/* An event: an input address and its code time tau, or an output neuron and its time t. */
typedef struct {{
    uint32_t addr;
    uint32_t time;
}} {name}_event_t;

/* A layer of the integer QNN, as rtl_gen.tile.load_beats takes it (golden_models.IntegerLayer):
 * weights[i * {NAME}_NEURONS + j] (rows 0..rows-1, rows <= {NAME}_N_IN),
 * theta[j * ({NAME}_T - 1) + t], init[j]; i_max_in, i_max_out and k of its masks. */
typedef struct {{
    const int8_t *weights;
    const int32_t *theta;
    const int32_t *init;
    uint32_t rows;
    uint32_t i_max_in;
    uint32_t i_max_out;
    uint32_t k;
}} {name}_layer_t;

/* The activity counters of one window (docs/rtl_interfaces.md, Counters). */
typedef struct {{
{counter_fields}
}} {name}_counters_t;

/* ID and INFO0..2 are this configuration's: {NAME}_OK or {NAME}_E_ID. */
int {name}_check(const {name}_io_t *io);
/* One load beat: data[0..{NAME}_LOAD_WORDS-1] into LOAD_DATA, then LOAD_CMD sends it. */
void {name}_load_beat(const {name}_io_t *io, uint32_t target, uint32_t addr,
                      const uint32_t *data);
/* Every image of a layer: weight rows, threshold rows, init rows, the config word. */
int {name}_load_layer(const {name}_io_t *io, const {name}_layer_t *layer);
/* One window: n_events input events and the end marker in, the output events out (in the
 * tile's order) until the output's end marker; *n_out says how many. */
int {name}_window(const {name}_io_t *io, const {name}_event_t *events, size_t n_events,
                  {name}_event_t *out, size_t max_out, size_t *n_out);
/* The counters of the last completed window; *done is DONE, the windows completed so far
 * (the counters are all 0 before the first). */
int {name}_read_counters(const {name}_io_t *io, {name}_counters_t *counters, uint32_t *done);

#ifdef __cplusplus
}}
#endif

#endif /* {NAME}_DRIVER_H */
"""

_SOURCE = """\
/* {name}_driver.c: the C driver of {name} (written by matterhorn generate, docs/firmware.md). */
#include "{name}_driver.h"

#define REG(member) ((uint32_t)offsetof({name}_t, member))

uint32_t {name}_mmio_read32(void *ctx, uint32_t offset)
{{
    return *(volatile uint32_t *)((uintptr_t)ctx + offset);
}}

void {name}_mmio_write32(void *ctx, uint32_t offset, uint32_t value)
{{
    *(volatile uint32_t *)((uintptr_t)ctx + offset) = value;
}}

/* value's low width bits (two's complement for a negative value) at bit lsb of words */
static void put_bits(uint32_t *words, uint32_t lsb, uint32_t width, int64_t value)
{{
    uint64_t bits = (uint64_t)value;
    uint32_t i;
    for (i = 0; i < width; i++) {{
        if ((bits >> i) & 1u) {{
            words[(lsb + i) / 32u] |= (uint32_t)1u << ((lsb + i) % 32u);
        }}
    }}
}}

#if {NAME}_WEIGHT_BITS != 1
static int fits_signed(int64_t value, uint32_t width)
{{
    int64_t half = (int64_t)1 << (width - 1u);
    return value >= -half && value < half;
}}
#endif

static void clear(uint32_t *words)
{{
    uint32_t i;
    for (i = 0; i < {NAME}_LOAD_WORDS; i++) {{
        words[i] = 0;
    }}
}}

int {name}_check(const {name}_io_t *io)
{{
    if (io->read32(io->ctx, REG(ID)) != {NAME}_ID_VALUE
        || io->read32(io->ctx, REG(INFO0)) != {NAME}_INFO0_VALUE
        || io->read32(io->ctx, REG(INFO1)) != {NAME}_INFO1_VALUE
        || io->read32(io->ctx, REG(INFO2)) != {NAME}_INFO2_VALUE) {{
        return {NAME}_E_ID;
    }}
    return {NAME}_OK;
}}

void {name}_load_beat(const {name}_io_t *io, uint32_t target, uint32_t addr,
                      const uint32_t *data)
{{
    uint32_t i;
    for (i = 0; i < {NAME}_LOAD_WORDS; i++) {{
        io->write32(io->ctx, REG(LOAD_DATA) + 4u * i, data[i]);
    }}
    /* the tile takes the beat when idle; the next register write waits for it meanwhile */
    io->write32(io->ctx, REG(LOAD_CMD),
                ((addr << {NAME}__LOAD_CMD__ADDR_bp) & {NAME}__LOAD_CMD__ADDR_bm)
                | ((target << {NAME}__LOAD_CMD__TARGET_bp) & {NAME}__LOAD_CMD__TARGET_bm));
}}

int {name}_load_layer(const {name}_io_t *io, const {name}_layer_t *layer)
{{
    uint32_t words[{NAME}_LOAD_WORDS];
    uint32_t i, j, t, g, lane;
    if (layer->rows > {NAME}_N_IN || layer->i_max_in >= (1u << {NAME}_TIME_BITS)
        || layer->i_max_out >= (1u << {NAME}_TIME_BITS) || layer->k >= (1u << {NAME}_TIME_BITS)) {{
        return {NAME}_E_RANGE;
    }}
    for (i = 0; i < layer->rows; i++) {{
        clear(words);
        for (j = 0; j < {NAME}_NEURONS; j++) {{
            int64_t w = layer->weights[i * {NAME}_NEURONS + j];
#if {NAME}_WEIGHT_BITS == 1
            w = w > 0 ? 1 : 0; /* 1 = +1, 0 = -1 */
#else
            if (!fits_signed(w, {NAME}_WEIGHT_BITS)) {{
                return {NAME}_E_RANGE;
            }}
#endif
            put_bits(words, j * {NAME}_WEIGHT_BITS, {NAME}_WEIGHT_BITS, w);
        }}
        {name}_load_beat(io, {NAME}_TARGET_WEIGHTS, i, words);
    }}
    for (t = 0; t + 1u < {NAME}_T; t++) {{
        for (g = 0; g < {NAME}_GROUPS; g++) {{
            clear(words);
            for (lane = 0; lane < {NAME}_LANES; lane++) {{
                int64_t theta;
                j = g * {NAME}_LANES + lane;
                if (j >= {NAME}_NEURONS) {{
                    break; /* lanes past the last neuron stay 0 */
                }}
                theta = layer->theta[j * ({NAME}_T - 1u) + t];
                /* no comparison changes outside [-acc_bound, acc_bound + 1] */
                if (theta < -(int64_t){NAME}_ACC_BOUND) {{
                    theta = -(int64_t){NAME}_ACC_BOUND;
                }}
                if (theta > (int64_t){NAME}_ACC_BOUND + 1) {{
                    theta = (int64_t){NAME}_ACC_BOUND + 1;
                }}
                put_bits(words, lane * {NAME}_THETA_BITS, {NAME}_THETA_BITS, theta);
            }}
            {name}_load_beat(io, {NAME}_TARGET_THRESHOLDS, t * {NAME}_GROUPS + g, words);
        }}
    }}
    for (g = 0; g < {NAME}_GROUPS; g++) {{
        clear(words);
        for (lane = 0; lane < {NAME}_LANES; lane++) {{
            int64_t b;
            j = g * {NAME}_LANES + lane;
            if (j >= {NAME}_NEURONS) {{
                break;
            }}
            b = layer->init[j];
            if (b > (int64_t){NAME}_INIT_BOUND || b < -(int64_t){NAME}_INIT_BOUND) {{
                return {NAME}_E_RANGE;
            }}
            put_bits(words, lane * {NAME}_ACC_BITS, {NAME}_ACC_BITS, b);
        }}
        {name}_load_beat(io, {NAME}_TARGET_INIT, g, words);
    }}
    clear(words);
    put_bits(words, 0, {NAME}_TIME_BITS, layer->i_max_in);
    put_bits(words, {NAME}_TIME_BITS, {NAME}_TIME_BITS, layer->i_max_out);
    put_bits(words, 2u * {NAME}_TIME_BITS, {NAME}_TIME_BITS, layer->k);
    {name}_load_beat(io, {NAME}_TARGET_CONFIG, 0, words);
    return {NAME}_OK;
}}

int {name}_window(const {name}_io_t *io, const {name}_event_t *events, size_t n_events,
                  {name}_event_t *out, size_t max_out, size_t *n_out)
{{
    const uint64_t addr_mask = ((uint64_t)1 << {NAME}_OUT_ADDR_BITS) - 1u;
    const uint64_t time_mask = ((uint64_t)1 << {NAME}_TIME_BITS) - 1u;
    size_t i, n = 0;
    int result = {NAME}_OK;
    for (i = 0; i < n_events; i++) {{
        uint64_t tdata = (uint64_t)events[i].addr
                         | ((uint64_t)events[i].time << {NAME}_IN_ADDR_BITS);
        if (events[i].addr >= {NAME}_N_IN || events[i].time >= {NAME}_T) {{
            return {NAME}_E_RANGE;
        }}
        if (!io->send(io->ctx, tdata, 0)) {{
            return {NAME}_E_STREAM;
        }}
    }}
    if (!io->send(io->ctx, 0, 1)) {{ /* the window's end marker */
        return {NAME}_E_STREAM;
    }}
    for (;;) {{
        uint64_t tdata;
        int tlast;
        if (!io->receive(io->ctx, &tdata, &tlast)) {{
            result = {NAME}_E_STREAM;
            break;
        }}
        if (tlast) {{
            break;
        }}
        if (n < max_out) {{
            out[n].addr = (uint32_t)(tdata & addr_mask);
            out[n].time = (uint32_t)((tdata >> {NAME}_OUT_ADDR_BITS) & time_mask);
        }} else {{
            result = {NAME}_E_OVERFLOW;
        }}
        n++;
    }}
    *n_out = n < max_out ? n : max_out;
    return result;
}}

int {name}_read_counters(const {name}_io_t *io, {name}_counters_t *counters, uint32_t *done)
{{
    int tries;
    for (tries = 0; tries < 16; tries++) {{
        uint32_t before = io->read32(io->ctx, REG(DONE));
{counter_reads}
        if (io->read32(io->ctx, REG(DONE)) == before) {{
            *done = before;
            return {NAME}_OK;
        }}
    }}
    return {NAME}_E_BUSY;
}}
"""


def tile_driver(config: RTLConfig, prefix: str = "") -> dict[str, str]:
    """File name -> text of the C driver of ``config``'s ``<prefix>mttfs_axi_tile`` (its
    register header is :func:`rtl_gen.regmap.c_header` with the same ``prefix``)."""
    from rtl_gen.regmap import register_map

    check_config(config)
    name = f"{prefix}mttfs_axi_tile"
    NAME = name.upper()
    rm = register_map("tile", config)
    values = {
        "T": config.T, "K": config.k, "N_IN": config.n_in, "NEURONS": config.tile_neurons,
        "LANES": config.lanes, "GROUPS": config.groups, "WEIGHT_BITS": config.weight_bits,
        "THETA_BITS": config.theta_width, "ACC_BITS": config.acc_width,
        "ACC_BOUND": config.acc_bound, "INIT_BOUND": config.init_bound,
        "TIME_BITS": config.time_width, "IN_ADDR_BITS": config.in_addr_width,
        "OUT_ADDR_BITS": config.out_addr_width,
        "LOAD_WORDS": sum(r.name.startswith("LOAD_DATA[") for r in rm.registers),
        "AXIS_BITS": config.axis_width,
        **{f"TARGET_{t.upper()}": v for t, v in TARGETS.items()},
    }
    constants = "".join(f"#define {NAME}_{k} {v}u\n" for k, v in values.items())
    constants += "".join(f"#define {NAME}_{r}_VALUE {rm[r].reset:#010x}u\n"
                         for r in ("ID", "INFO0", "INFO1", "INFO2"))
    counters = list(config.tile_counters)
    fields = "\n".join(f"    uint32_t {c};" for c in counters)
    reads = "\n".join(f"        counters->{c} = io->read32(io->ctx, REG(COUNTERS.{c}));"
                      for c in counters)
    h, c = (f.format(name=name) for f in DRIVER_FILES)
    return {
        h: _HEADER.format(name=name, NAME=NAME, constants=constants, counter_fields=fields),
        c: _SOURCE.format(name=name, NAME=NAME, counter_reads=reads),
    }
