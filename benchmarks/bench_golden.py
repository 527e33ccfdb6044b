"""Throughput of the golden model's encode + mask + histogram on CPU, with bounded memory.

Streams at least 1e8 int8 activation codes through the golden model in chunks and prints
activations per second and peak memory. Codes are generated per chunk outside the timed
region (fresh data, no cache reuse), so the figure is the golden model's own cost.

Two paths are timed on the same codes:

- ``histogram``: :func:`golden_models.event_histogram` (one bincount over the uint8 view of
  the int8 codes; the bijection ``tau = c - q`` and the range check act on the 256-bin byte
  histogram), then the transmitted events of TTFS and of M-TTFS ``k = 0..K`` by mask
  arithmetic on the histogram (:func:`golden_models.transmitted_events`, Eq. dz_event_count);
- ``element-wise`` (on the first few chunks): ``tau = c - q`` materialised per activation, the mask
  ``|tau - I_max| > k`` per activation and its sum, and a bincount of ``tau``: what a
  straightforward implementation does. Both must give the same counts.

Run: ``.venv/bin/python benchmarks/bench_golden.py [--activations N] [--chunk N]``.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

import torch

from golden_models import (
    CodeSpace,
    Mask,
    event_histogram,
    random_codes,
    select_i_max,
    transmitted_events,
    ttfs_mask,
)


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--activations", type=float, default=1.25e8, help="total codes (>= 1e8)")
    p.add_argument("--chunk", type=int, default=1 << 22, help="codes per chunk (default 4 Mi)")
    p.add_argument("--T", type=int, default=16)
    p.add_argument("--family", default="sym", choices=["sym", "asym"])
    p.add_argument("--k", type=int, default=4, help="largest dead-zone radius counted")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--distribution", default="peaked", choices=["peaked", "uniform"])
    p.add_argument("--elementwise-chunks", type=int, default=4,
                   help="chunks also run through the element-wise path (default 4; 0 skips)")
    args = p.parse_args(argv)

    torch.set_num_threads(args.threads)
    space = CodeSpace(args.T, args.family)
    total = int(args.activations)
    n_chunks = -(-total // args.chunk)
    total = n_chunks * args.chunk
    g = torch.Generator().manual_seed(0)
    ks = [k for k in range(args.k + 1) if k < space.T]

    rss_start = peak_rss_mib()
    counts = torch.zeros(space.T, dtype=torch.int64)
    t_hist = t_elem = 0.0
    elem_counts = torch.zeros(space.T, dtype=torch.int64)
    elem_tx = dict.fromkeys(ks, 0)
    mask0 = {k: Mask.at_zero(space, k) for k in ks}
    n_elem = min(max(args.elementwise_chunks, 0), n_chunks)
    for i in range(n_chunks):
        q = random_codes((args.chunk,), space, distribution=args.distribution,
                         generator=g).to(torch.int8 if space.T <= 128 else torch.int16)
        t0 = time.perf_counter()
        c = event_histogram(q, space, chunk=args.chunk)
        tx = [transmitted_events(c, ttfs_mask(space))]
        tx += [transmitted_events(c, mask0[k]) for k in ks]
        counts += c
        if i + 1 == n_elem:
            first = counts.clone()
        t_hist += time.perf_counter() - t0
        if i < n_elem:
            t0 = time.perf_counter()
            tau = space.c - q  # encode: event times, same dtype
            for k in ks:
                elem_tx[k] += int(((tau - mask0[k].i_max).abs() > k).sum())  # mask
            elem_counts += torch.bincount(tau.to(torch.int64), minlength=space.T)
            t_elem += time.perf_counter() - t0
        del q
    rss_end = peak_rss_mib()

    i_max = select_i_max(counts, space)
    print(f"golden encode + mask + histogram: {total:.3e} activations ({n_chunks} chunks of "
          f"{args.chunk}), T={space.T} {space.family}, {args.distribution} codes, int8, "
          f"{torch.get_num_threads()} threads")
    print(f"  histogram path   : {total / t_hist:.3e} activations/s ({t_hist:.2f} s)")
    if n_elem:
        agree = torch.equal(elem_counts, first) and all(
            elem_tx[k] == transmitted_events(first, mask0[k]) for k in ks)
        n = n_elem * args.chunk
        print(f"  element-wise path: {n / t_elem:.3e} activations/s ({t_elem:.2f} s over the "
              f"first {n_elem} chunks), counts agree: {'yes' if agree else 'NO'}")
    print(f"  peak RSS: {rss_end:.0f} MiB (at start {rss_start:.0f} MiB; chunk buffer "
          f"{args.chunk / 2**20:.0f} MiB)")
    print(f"  calibrated I_max={i_max} (code {space.c - i_max}); events per activation: TTFS "
          f"{transmitted_events(counts, ttfs_mask(space)) / total:.4f}, " + ", ".join(
              f"k={k} {transmitted_events(counts, Mask(space, i_max, k)) / total:.4f}"
              for k in ks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
