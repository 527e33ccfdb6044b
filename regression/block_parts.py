"""What a block's runs share (:mod:`regression.block` in the Amaranth simulator,
:mod:`regression.block_fast` in the fast harness): a piece's run record, the tiles a linear
piece is split into and their configuration, the attention path's configuration, and the
add+LayerNorm rows in the Amaranth simulator."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field

import torch

__all__ = ["PieceRun", "attention_config", "made_by", "run_norm", "seq_max_of", "tile_config",
           "tile_slices"]


def seq_max_of(cfg) -> int:
    """The generated sequence length of a model's block (its key slots per head): the
    energy workload's sequence, the paper's 128 capped by the model's positions
    (:func:`networks.hf_folder.dims_of`)."""
    from networks.hf_folder import dims_of

    return dims_of(cfg)["seq"]


@dataclass
class PieceRun:
    """One piece over every sentence: values compared, mismatches, summed counters, clocks."""

    piece: str
    checked: int = 0
    mismatches: int = 0
    counters: Counter = field(default_factory=Counter)
    cycles: int = 0
    first_mismatch: str | None = None
    #: Tiles a linear piece is split into (each receives every input of the layer).
    tiles: int = 1

    def compare(self, what: str, got, want, *, events: bool = False) -> None:
        """Count ``got`` against ``want``: values position by position, or (``events``) the
        events missing or extra, plus one when the same events come in another order."""
        got, want = list(got), list(want)
        self.checked += max(len(got), len(want))
        if events:
            extra, missing = Counter(got) - Counter(want), Counter(want) - Counter(got)
            bad = sum(extra.values()) + sum(missing.values())
            bad = bad or int(got != want)
        else:
            bad = (sum(1 for a, b in zip(got, want, strict=False) if a != b)
                   + abs(len(got) - len(want)))
        if bad and self.first_mismatch is None:
            self.first_mismatch = f"{what}: got {got[:8]}..., want {want[:8]}..."
        self.mismatches += bad


def tile_config(layer, *, raw_sums: bool):
    """The configuration of a block's tile holding ``layer`` (its neurons; raw sums or codes):
    :func:`rtl_gen.mapper.config_for_chain` of the layer alone on a 1x1 mesh."""
    from rtl_gen.mapper import config_for_chain

    cfg = config_for_chain([layer], tile_neurons=layer.n_out, mesh_rows=1, mesh_cols=1)
    return dataclasses.replace(cfg, raw_sums=raw_sums)


def tile_slices(layer, tile_neurons: int) -> list[tuple[int, int, object]]:
    """``layer``'s output neurons in tiles of at most ``tile_neurons``: ``(lo, hi, layer of
    neurons lo..hi-1)`` (the mapper's partition, without the padding a mesh node needs)."""
    from golden_models import IntegerLayer

    out = []
    for lo in range(0, layer.n_out, tile_neurons):
        hi = min(lo + tile_neurons, layer.n_out)
        out.append((lo, hi, IntegerLayer(layer.weights[:, lo:hi].contiguous(), layer.weight_bits,
                                         layer.init[lo:hi].clone(), layer.theta[lo:hi].clone(),
                                         layer.in_mask, layer.out_mask)))
    return out


def attention_config(qnn, block: int = 0):
    """The attention path's :class:`rtl_gen.attn_params.AttentionConfig` of block ``block``:
    :func:`seq_max_of` key slots a head, the model's positions a softmax row."""
    from rtl_gen.attn_params import AttentionConfig

    layer = qnn.layers[block]
    return AttentionConfig(heads=layer.cfg.num_attention_heads, head_dim=layer.cfg.head_dim,
                           seq_max=seq_max_of(layer.cfg), T=layer.points["attn_prob"].space.T,
                           frac_bits=qnn.integer.exp_frac_bits,
                           row_max=layer.cfg.max_position_embeddings)


def run_norm(run: PieceRun, cfg, add, norm, thetas, r, sums, want_r, want_codes):
    """Rows ``(r, sums)`` through the residual-add + LayerNorm unit in the Amaranth simulator;
    checks the new stream and the codes it walks (``want_codes``: one ``[S, hidden]`` per
    table) and returns the stream ``[S, hidden]`` and those codes."""
    from rtl_gen.add_norm import load_beats
    from rtl_gen.simulation.units import simulate_add_norm

    rows = [(r[i].tolist(), sums[i].tolist()) for i in range(r.shape[0])]
    out = simulate_add_norm(cfg, rows, load_beats(cfg, add, norm, thetas))
    for i, row in enumerate(out):
        run.cycles += row.clocks
        run.compare(f"{run.piece} token {i} stream", row.r, want_r[i].tolist())
        for p, codes in enumerate(want_codes):
            run.compare(f"{run.piece} token {i} codes {p}", row.codes[p], codes[i].tolist())
    run.counters.update({"rows": len(out), "channels": len(out) * r.shape[1]})
    codes = [torch.tensor([row.codes[p] for row in out], dtype=torch.int64)
             for p in range(len(want_codes))]
    return torch.tensor([row.r for row in out], dtype=torch.int64), codes


def made_by(piece, values) -> dict:
    """What ``piece`` made, by output name, from its runner's ``values`` (by output, in
    order): an add+LayerNorm piece of a network's last block walks no codes and makes its
    stream alone (the last of its outputs)."""
    values = list(values)
    if len(values) == len(piece.outputs):
        return dict(zip(piece.outputs, values, strict=True))
    if len(values) == 1:
        return {piece.outputs[-1]: values[0]}
    raise ValueError(f"{piece.name}: {len(values)} values made for outputs "
                     f"{', '.join(piece.outputs)}")
