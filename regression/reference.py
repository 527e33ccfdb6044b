"""Golden-model reference: stimulus and expected results for the benches, from ``golden_models``.

Everything expected here comes from :mod:`golden_models` (``IntegerLayer.run_events``,
``encode_events``, ``threshold_table``); nothing is recomputed by hand. The SRAM images are
packed from the layout written in ``docs/rtl_interfaces.md`` with widths read from the
manifest, independently of the generator's own packer, so a packing error on either side
shows up as a mismatch.

The expected values travel to the simulator as JSON, so the simulator process needs no torch.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import torch

from golden_models import (
    CodeSpace,
    IntegerLayer,
    Mask,
    encode_events,
    folded_init,
    threshold_table,
    transmitted,
    weight_range,
)

#: Activation distributions of the stimulus: ``"peaked"`` puts most codes on the silent code
#: (the paper's p(q=0) of 0.3..0.9 on the histogram mode), ``"zero"`` peaks at code 0 whatever
#: I_max is, ``"uniform"`` draws every level alike.
DISTRIBUTIONS = ("peaked", "zero", "uniform")


def random_codes(
    rng: random.Random, space: CodeSpace, n: int, dist: str, centre: int
) -> torch.Tensor:
    """``n`` integer codes of ``space`` drawn from distribution ``dist``.

    ``"peaked"``/``"zero"``: a two-sided geometric (discrete Laplace) around ``centre`` (the
    silent code ``mu``) or around 0, with a random peak mass, clipped to the levels.
    """
    if dist not in DISTRIBUTIONS:
        raise ValueError(f"dist must be one of {DISTRIBUTIONS}, not {dist!r}")
    if dist == "uniform":
        return torch.tensor([rng.randint(space.q_min, space.q_max) for _ in range(n)])
    peak = centre if dist == "peaked" else min(max(0, space.q_min), space.q_max)
    p0 = rng.uniform(0.3, 0.85)  # probability of the peak code itself
    out = []
    for _ in range(n):
        if rng.random() < p0:
            q = peak
        else:
            step = 1
            while rng.random() < 0.5:
                step += 1
            q = peak + (step if rng.random() < 0.5 else -step)
        out.append(min(max(q, space.q_min), space.q_max))
    return torch.tensor(out, dtype=torch.int64)


@dataclass(frozen=True)
class TileGeometry:
    """The parameters of one generated tile, read from its manifest."""

    T: int
    family: str
    n_in: int
    neurons: int
    lanes: int
    weight_bits: int
    acc_bound: int
    acc_width: int
    theta_width: int
    init_bound: int
    time_width: int

    @property
    def groups(self) -> int:
        return -(-self.neurons // self.lanes)

    @property
    def space(self) -> CodeSpace:
        return CodeSpace(self.T, self.family)

    @classmethod
    def from_manifest(cls, manifest: Mapping) -> TileGeometry:
        p, d = manifest["parameters"], manifest["derived"]
        return cls(
            T=int(p["T"]),
            family=str(p["family"]),
            n_in=int(p["n_in"]),
            neurons=int(p["tile_neurons"]),
            lanes=int(p["lanes"]),
            weight_bits=int(p["weight_bits"]),
            acc_bound=int(d["acc_bound"]),
            acc_width=int(d["acc_width"]),
            theta_width=int(d["theta_width"]),
            init_bound=int(d["init_bound"]),
            time_width=int(d["time_width"]),
        )


def _twos(value: int, width: int) -> int:
    lo, hi = -(1 << (width - 1)), (1 << (width - 1)) - 1
    if not lo <= value <= hi:
        raise ValueError(f"{value} does not fit a signed {width}-bit field")
    return value & ((1 << width) - 1)


def load_beats(geo: TileGeometry, layer: IntegerLayer) -> list[dict]:
    """Load-stream beats ``{target, addr, data}`` writing ``layer`` and its mask config.

    Layout from docs/rtl_interfaces.md ("SRAM images"): weights (target 0) one row per input
    address, neuron ``j`` at ``[j*wb, (j+1)*wb)`` (1-bit: 1 = +1); thresholds (target 1) row
    ``t*G + g``, lane ``l`` = neuron ``g*L + l``; init (target 2) row ``g``; config (target 3)
    ``i_max_in | i_max_out << tw | k << 2tw``.
    """
    wb, tw, L, G = geo.weight_bits, geo.time_width, geo.lanes, geo.groups
    beats = []
    w = layer.weights.tolist()
    for i in range(geo.n_in):
        row = 0
        for j in range(geo.neurons):
            v = (1 if w[i][j] > 0 else 0) if wb == 1 else _twos(w[i][j], wb)
            row |= v << (j * wb)
        beats.append({"target": 0, "addr": i, "data": row})
    theta = layer.theta.clamp(-geo.acc_bound, geo.acc_bound + 1).tolist()
    for t in range(geo.T - 1):
        for g in range(G):
            row = 0
            for lane in range(L):
                j = g * L + lane
                if j < geo.neurons:
                    row |= _twos(theta[j][t], geo.theta_width) << (lane * geo.theta_width)
            beats.append({"target": 1, "addr": t * G + g, "data": row})
    init = layer.init.tolist()
    for g in range(G):
        row = 0
        for lane in range(L):
            j = g * L + lane
            if j < geo.neurons:
                if abs(init[j]) > geo.init_bound:
                    raise ValueError(f"init B[{j}]={init[j]} exceeds init_bound {geo.init_bound}")
                row |= _twos(init[j], geo.acc_width) << (lane * geo.acc_width)
        beats.append({"target": 2, "addr": g, "data": row})
    cfg = layer.in_mask.i_max | (layer.out_mask.i_max << tw) | (layer.out_mask.k << (2 * tw))
    beats.append({"target": 3, "addr": 0, "data": cfg})
    return beats


def random_layer(
    rng: random.Random,
    geo: TileGeometry,
    *,
    i_max_in: int,
    i_max_out: int,
    k: int,
    dist: str,
) -> IntegerLayer:
    """A random layer for the tile: random weights, folded init, float-derived thresholds.

    The thresholds come from :func:`golden_models.threshold_table` of a random per-neuron
    affine map fitted to the membrane spread of this stimulus, so output times cover the whole
    window (and both rounding modes are used).
    """
    space = geo.space
    in_mask = Mask(space, i_max_in, k)
    out_mask = Mask(space, i_max_out, k)
    lo, hi = weight_range(geo.weight_bits)
    if geo.weight_bits == 1:
        w = [[rng.choice((-1, 1)) for _ in range(geo.neurons)] for _ in range(geo.n_in)]
    else:
        w = [[rng.randint(lo, hi) for _ in range(geo.neurons)] for _ in range(geo.n_in)]
    weights = torch.tensor(w, dtype=torch.int64)
    init = folded_init(weights, in_mask.mu)
    # membrane spread of this input distribution, from a few sample vectors
    probe = IntegerLayer(
        weights,
        geo.weight_bits,
        init,
        torch.zeros(geo.neurons, geo.T - 1, dtype=torch.int64),
        in_mask,
        out_mask,
    )
    vs = torch.stack(
        [
            probe.integrate(
                *encode_events(random_codes(rng, space, geo.n_in, dist, in_mask.mu), in_mask)
            )
            for _ in range(16)
        ]
    ).to(torch.float64)
    mean, std = vs.mean(0), vs.std(0).clamp(min=1.0)
    # a = scale * V + bias; code = level(a / alpha): centre the codes on a random level
    alpha = 1.0
    scale = torch.tensor([rng.uniform(0.6, 1.6) for _ in range(geo.neurons)], dtype=torch.float64)
    scale = scale * (geo.T / 4.0) / std
    # outputs peak at the produced position's silent code (as calibrated I_max would make
    # them) for about half of the neurons; the others spread over every level
    mu_out = out_mask.mu
    target = torch.tensor(
        [
            rng.uniform(mu_out - k - 0.5, mu_out + k + 0.5)
            if rng.random() < 0.5
            else rng.uniform(space.q_min, space.q_max)
            for _ in range(geo.neurons)
        ],
        dtype=torch.float64,
    )
    bias = target - scale * mean
    theta = threshold_table(
        scale,
        bias,
        alpha,
        space,
        rounding=rng.choice(("floor", "round")),
        v_range=(-geo.acc_bound, geo.acc_bound),
    )
    return IntegerLayer(weights, geo.weight_bits, init, theta, in_mask, out_mask)


def tile_window(layer: IntegerLayer, q: torch.Tensor) -> dict:
    """Input events, expected output events and counters of one window of ``layer``."""
    index, time = encode_events(q, layer.in_mask)
    res = layer.run_events(index, time)
    return {
        "in": [[int(a), int(t)] for a, t in zip(index.tolist(), time.tolist(), strict=True)],
        "out": [
            [int(a), int(t)]
            for a, t in zip(res.out_index.tolist(), res.out_time.tolist(), strict=True)
        ],
        "tau": [int(t) for t in res.tau.tolist()],
        "counters": res.counters.as_dict(),
    }


def dense_block(geo: TileGeometry, layer: IntegerLayer, windows: Sequence[torch.Tensor],
                pack: int) -> dict:
    """One block of a dense-tile run: the layer's SRAM images with the dense init
    ``D = B - mu_in * sum_i W`` (docs/rtl_dense.md), and per window the codes, the expected
    output beats ``[addr, codes]`` (``pack`` codes of ``time_width`` bits, neuron ``addr + p`` at
    bit ``p * time_width``) and the counters of :func:`golden_models.dense.run_dense`."""
    from dataclasses import replace

    from golden_models.dense import dense_init, run_dense

    tw = geo.time_width
    mask = (1 << tw) - 1
    out = []
    for q in windows:
        ref = run_dense(layer, q)
        codes = [int(c) & mask for c in ref.codes.tolist()]
        beats = [[a, sum(c << (p * tw) for p, c in enumerate(codes[a:a + pack]))]
                 for a in range(0, geo.neurons, pack)]
        out.append({"codes": [int(c) & mask for c in q.tolist()], "out": beats,
                    "counters": ref.counters.as_dict()})
    return {"load": load_beats(geo, replace(layer, init=dense_init(layer))), "windows": out}


def dense_blocks(geo: TileGeometry, seed: int, *, blocks: int, windows: int,
                 pack: int) -> list[dict]:
    """Stimulus for a dense-tile run: ``blocks`` random layers, ``windows`` code vectors each,
    the distributions cycling as for the spiking tile."""
    rng = random.Random(f"dense:{seed}")
    out = []
    for b in range(blocks):
        dist = DISTRIBUTIONS[b % len(DISTRIBUTIONS)]
        layer = random_layer(rng, geo, i_max_in=rng.randrange(geo.T),
                             i_max_out=rng.randrange(geo.T), k=0, dist=dist)
        qs = [random_codes(rng, geo.space, geo.n_in, dist, layer.in_mask.mu)
              for _ in range(windows)]
        out.append(dense_block(geo, layer, qs, pack))
    return out


def tile_blocks(
    geo: TileGeometry, seed: int, *, blocks: int, windows: int, ks=(0, 1, 2)
) -> list[dict]:
    """Stimulus for a tile run: ``blocks`` layers (one load each), ``windows`` windows each.

    Each block has its own ``k`` (cycled through ``ks``), ``I_max`` in and out (the output
    centres sweep the window so every time is masked in some block; ``blocks`` is raised to
    what that takes) and activation distribution.
    """
    rng = random.Random(f"tile:{seed}")
    T = geo.T
    # silent centres: sweep the window so every time is masked in some block, then random
    uncovered = set(range(T))
    out = []
    b = 0
    while b < blocks or uncovered:
        k = ks[b % len(ks)]
        b += 1
        if uncovered:
            i_max_out = min(min(uncovered) + k, T - 1)
            uncovered -= {t for t in range(T) if not transmitted(t, i_max_out, k)}
        else:
            i_max_out = rng.randrange(T)
        i_max_in = rng.randrange(T)
        dist = DISTRIBUTIONS[b % len(DISTRIBUTIONS)]
        layer = random_layer(rng, geo, i_max_in=i_max_in, i_max_out=i_max_out, k=k, dist=dist)
        qs = [
            random_codes(rng, geo.space, geo.n_in, dist, layer.in_mask.mu) for _ in range(windows)
        ]
        out.append(tile_block(geo, layer, qs, dist))
    return out


def tile_block(
    geo: TileGeometry, layer: IntegerLayer, windows: Sequence[torch.Tensor], dist: str
) -> dict:
    """One block of a tile run: load ``layer`` (its SRAM images and mask), then one window per
    input code vector of ``windows``; ``dist`` names where the codes come from (coverage)."""
    return {
        "k": layer.out_mask.k,
        "i_max_in": layer.in_mask.i_max,
        "i_max_out": layer.out_mask.i_max,
        "dist": dist,
        "load": load_beats(geo, layer),
        "windows": [tile_window(layer, q) for q in windows],
    }


def encoder_vectors(
    space: CodeSpace, n_in: int, i_max: int, k: int, seed: int, *, vectors: int
) -> list[dict]:
    """Code vectors for the encoder and their expected events and counters.

    Distributions cycle through :data:`DISTRIBUTIONS`; expected events are
    :func:`golden_models.encode_events` of each vector under ``Mask(space, i_max, k)``.
    """
    rng = random.Random(f"encoder:{seed}")
    mask = Mask(space, i_max, k)
    out = []
    for v in range(vectors):
        q = random_codes(rng, space, n_in, DISTRIBUTIONS[v % len(DISTRIBUTIONS)], mask.mu)
        index, time = encode_events(q, mask)
        sent = int(index.numel())
        out.append(
            {
                "codes": [int(x) for x in q.tolist()],
                "taus": [int(t) for t in (space.c - q).tolist()],
                "events": [
                    [int(a), int(t)] for a, t in zip(index.tolist(), time.tolist(), strict=True)
                ],
                "counters": {"events_out": sent, "events_suppressed": n_in - sent},
            }
        )
    return out
