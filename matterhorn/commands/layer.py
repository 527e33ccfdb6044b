"""``matterhorn layer``: a whole real layer partitioned over the mesh, against the golden QNN."""

from __future__ import annotations

import argparse

from matterhorn.commands import mesh_arg

HELP = ("run a whole real layer (MiniLM's block-0 Q projection, 384 x 384) partitioned over "
        "the tiles of mttfs_system, every event and counter against the golden QNN")

#: The layers the command runs, and their output neurons (all-MiniLM-L6-v2's hidden size),
#: known before the model is loaded so the mesh is checked first.
LAYERS = {"minilm-q": 384}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--layer", default="minilm-q",
                        help=f"the layer: {', '.join(LAYERS)} (MiniLM block 0, Q projection) "
                        "[minilm-q]")
    parser.add_argument("--windows", type=int, default=64,
                        help="real token windows (inferences) [64]")
    parser.add_argument("--k", type=int, default=1, help="dead-zone radius [1]")
    parser.add_argument("--calibration", type=int, default=6,
                        help="calibration sentences of the post-training conversion [6]")
    # defaults: regression.layer.DEFAULT_TILE_NEURONS and DEFAULT_MESH (not imported here, so
    # that building the parser stays light)
    parser.add_argument("--tile-neurons", type=int, default=None,
                        help="output neurons per tile [48]")
    parser.add_argument("--mesh", type=mesh_arg, default=None, metavar="RxC",
                        help="the mesh; it must have a node per tile [3x3]")
    parser.add_argument("--sim", action="append", choices=("icarus", "verilator"),
                        help="simulator (repeatable) [icarus and verilator]")
    parser.add_argument("--out", default="build/layer",
                        help="folder of the generated Verilog, builds and runs [build/layer]")


def run(args: argparse.Namespace) -> int:
    from golden_models.codespace import check_k
    from networks.corpus import load_corpus
    from regression import sim
    from regression.execute import OWN_DIRS
    from regression.layer import (
        DEFAULT_MESH,
        DEFAULT_TILE_NEURONS,
        MAX_WINDOWS,
        check_layer_fits,
        minilm_q_projection,
        minilm_T,
        run_layer,
    )
    from toolkit_base.checks import check_int, check_out_writable, unique

    if args.tile_neurons is None:
        args.tile_neurons = DEFAULT_TILE_NEURONS
    if args.mesh is None:
        args.mesh = DEFAULT_MESH
    if args.layer not in LAYERS:
        raise ValueError(f"--layer must be one of {tuple(LAYERS)}, not {args.layer!r}")
    check_out_writable(args.out, subdirs=OWN_DIRS)
    check_int("windows", args.windows, 1, MAX_WINDOWS)
    check_int("calibration", args.calibration, 1, len(load_corpus("pydoc-topics").calibration))
    sims = unique(args.sim or ("icarus", "verilator"))
    # everything that can be checked before MiniLM is converted and any Verilog generated
    check_layer_fits(LAYERS[args.layer], tile_neurons=args.tile_neurons, mesh=args.mesh)
    check_k(args.k, minilm_T())
    for name in sims:
        sim.ensure_simulator(name)
    import torch

    torch.set_num_threads(1)
    sl = minilm_q_projection(args.windows, k=args.k, calibration=args.calibration)
    if sl.layer.n_out != LAYERS[args.layer]:
        raise ValueError(f"the installed MiniLM has {sl.layer.n_out} hidden units, not "
                         f"{LAYERS[args.layer]}")
    rows, cols = args.mesh
    print(f"MiniLM block-0 Q projection {sl.layer.n_in}x{sl.layer.n_out}, k={args.k}, "
          f"{args.windows} token windows, tiles of {args.tile_neurons} on {rows}x{cols}")
    ok = True
    for name in sims:
        r = run_layer(sl.layer, list(sl.q_in), name, tile_neurons=args.tile_neurons,
                      mesh=args.mesh, out_dir=args.out, name=args.layer)
        f = r.figures
        if r.result.failed_in:  # a tool or a file failed: no verdict, no figures to show
            print(f"{name}: FAIL in {r.result.failed_in}, before the bench's verdict: {r.error}")
            ok = False
            continue
        status = "PASS" if r.passed else f"FAIL: {r.error}"
        print(f"{name}: {status}; {r.tiles} tiles, {f['windows']} windows, "
              f"{f['encoder_events']} encoder events, {f['events_out']} output events, "
              f"{f['cycles']} cycles, {f['mismatches']} mismatches, build "
              f"{f['build_seconds']:.1f} s, run {f['run_seconds']:.1f} s")
        ok = ok and r.passed
    return 0 if ok else 1
