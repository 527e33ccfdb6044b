"""``matterhorn layer``: a whole real layer partitioned over the mesh, against the golden QNN."""

from __future__ import annotations

import argparse

from matterhorn.commands import mesh_arg

HELP = ("run a whole real layer (block 0's Q projection of MiniLM or of a model folder, "
        "hidden x hidden) partitioned over the tiles of mttfs_system, every event and counter "
        "against the golden QNN")

#: The layers the command runs: block 0's Q projection (its outputs: the model's hidden size,
#: read from its configuration before the model is loaded, so the mesh is checked first).
LAYERS = ("minilm-q",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", default="minilm", metavar="minilm|FOLDER",
                        help="the shipped all-MiniLM-L6-v2, or a local Hugging Face folder of a "
                        "BERT-family encoder")
    parser.add_argument("--layer", default="minilm-q",
                        help=f"the layer: {', '.join(LAYERS)} (block 0, Q projection)")
    parser.add_argument("--windows", type=int, default=64,
                        help="real token windows (inferences)")
    parser.add_argument("--k", type=int, default=1, help="dead-zone radius")
    parser.add_argument("--calibration", type=int, default=6,
                        help="calibration sentences of the post-training conversion")
    # defaults: golden_models.block_pieces.TILE_NEURONS and regression.layer.DEFAULT_MESH (not
    # imported here, so
    # that building the parser stays light)
    parser.add_argument("--tile-neurons", type=int, default=None,
                        help="output neurons per tile (default: 48)")
    parser.add_argument("--mesh", type=mesh_arg, default=None, metavar="RxC",
                        help="the mesh; it must have a node per tile (default: 3x3)")
    parser.add_argument("--sim", action="append", choices=("icarus", "verilator"),
                        help="simulator, repeatable (default: icarus and verilator)")
    parser.add_argument("--out", default="build/layer", metavar="DIR",
                        help="folder of the generated Verilog, builds and runs")


def run(args: argparse.Namespace) -> int:
    from golden_models.codespace import check_k
    from networks.corpus import load_corpus
    from networks.hf_folder import resolve_model
    from regression import sim
    from regression.execute import OWN_DIRS
    from regression.layer import (
        DEFAULT_MESH,
        MAX_WINDOWS,
        check_layer_fits,
        minilm_q_projection,
        minilm_T,
        run_layer,
    )
    from toolkit_base import console
    from toolkit_base.checks import check_int, check_out_writable, unique

    if args.tile_neurons is None:
        from golden_models.block_pieces import TILE_NEURONS

        args.tile_neurons = TILE_NEURONS
    if args.mesh is None:
        args.mesh = DEFAULT_MESH
    if args.layer not in LAYERS:
        raise ValueError(f"--layer must be one of {LAYERS}, not {args.layer!r}")
    source = resolve_model(args.model)
    check_out_writable(args.out, subdirs=OWN_DIRS)
    check_int("--windows", args.windows, 1, MAX_WINDOWS)
    check_int("--calibration", args.calibration, 1, len(load_corpus("pydoc-topics").calibration))
    sims = unique(args.sim or ("icarus", "verilator"))
    # everything that can be checked before the model is converted and any Verilog generated
    hidden = source.config.hidden_size
    check_layer_fits(hidden, tile_neurons=args.tile_neurons, mesh=args.mesh)
    check_k(args.k, minilm_T())
    for name in sims:
        sim.ensure_simulator(name)
    import torch

    torch.set_num_threads(1)
    rows, cols = args.mesh
    with console.steps("layer", 1 + len(sims)) as bar:
        bar.start(f"converting {source.name} and capturing {args.windows} token windows")
        sl = minilm_q_projection(args.windows, k=args.k, calibration=args.calibration,
                                 model=args.model)
        bar.advance(f"{sl.layer.n_in}x{sl.layer.n_out} layer ready")
        console.out(f"{source.name} block-0 Q projection {sl.layer.n_in}x{sl.layer.n_out}, "
                    f"k={args.k}, {args.windows} token windows, tiles of {args.tile_neurons} on "
                    f"{rows}x{cols}")
        ok = True
        for name in sims:
            bar.start(f"generate, build and run on {name}")
            r = run_layer(sl.layer, list(sl.q_in), name, tile_neurons=args.tile_neurons,
                          mesh=args.mesh, out_dir=args.out, name=args.layer)
            bar.advance(f"{name} done")
            f = r.figures
            if r.result.failed_in:  # a tool or a file failed: no verdict, no figures to show
                console.out(f"{name}: FAIL in {r.result.failed_in}, before the bench's verdict: "
                            f"{r.error}")
                ok = False
                continue
            status = "PASS" if r.passed else f"FAIL: {r.error}"
            console.out(f"{name}: {status}; {r.tiles} tiles, {f['windows']} windows, "
                        f"{f['encoder_events']} encoder events, {f['events_out']} output events, "
                        f"{f['cycles']} cycles, {f['mismatches']} mismatches, build "
                        f"{f['build_seconds']:.1f} s, run {f['run_seconds']:.1f} s")
            ok = ok and r.passed
    return 0 if ok else 1
