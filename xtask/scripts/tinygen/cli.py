"""The generator's options: the committed `tiny` (default) or `--variant uneven`, the
full-width, real-size and large benchmark models, the action_context size probe, the vision
split probe, and `--check`."""

from __future__ import annotations

import argparse
from pathlib import Path

from .check import check
from .context_probe import generate_context_probes
from .dims import SEED
from .large import generate_large
from .model import generate, report
from .realsize import generate_real_size
from .variants import FULL_WIDTH_VARIANT, TINY_VARIANT, UNEVEN_VARIANT
from .vision_split import generate_vision_split

REPO_ROOT = Path(__file__).resolve().parents[3]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="gen_tiny_model.py",
        description="Generate the tiny MolmoAct2-shaped test models, their golden data and recipes.",
    )
    ap.add_argument("--root", type=Path, default=REPO_ROOT,
                    help="project root to write onnx/<model>, golden/<model> and recipes/<model> into "
                         "(with --check: the checkout to compare with); default: this repository")
    ap.add_argument("--variant", choices=["uneven"], default=None,
                    help="write the second committed test model instead: tiny-uneven "
                         "(uneven splits, 3 Euler steps)")
    ap.add_argument("--check", action="store_true",
                    help="regenerate every committed model (tiny, tiny-uneven) into a temporary folder and "
                         "compare byte for byte with --root; writes nothing there; exit 1 on a difference")
    ap.add_argument("--large-out", type=Path, default=None, metavar="DIR",
                    help="write the ~100 MB benchmark model into DIR instead")
    ap.add_argument("--full-width", type=Path, default=None, metavar="DIR",
                    help="write the synthetic model at the real bundle's widths (~2 GB) into the "
                         "project root DIR instead: onnx/fullwidth, golden/fullwidth, recipes/fullwidth")
    ap.add_argument("--real-size", type=Path, default=None, metavar="DIR",
                    help="write the model at the real bundle's size (~19 GB; weights streamed to external "
                         "data, about one layer in memory) into the project root DIR: onnx/realsize, "
                         "golden/realsize, recipes/realsize")
    ap.add_argument("--context-probes", type=Path, default=None, metavar="DIR",
                    help="write the action_context size probe into the project root DIR instead: the "
                         "real-size action_context cut down to its parts, one model ctxp-<variant> each")
    ap.add_argument("--vision-split", type=Path, default=None, metavar="DIR",
                    help="with --vision-layers N: write the vision split probe into the project root DIR "
                         "instead: the N-layer real-width vision (realsize-vit<N>'s weights) cut into "
                         "contexts at its residual adds, as the model vsplit<N>")
    ap.add_argument("--vision-layers", type=int, default=None, metavar="N",
                    help="with --real-size: only the vision component with N ViT layers, as the model "
                         "realsize-vit<N> (the compile-time scaling study); with --vision-split: its layers")
    args = ap.parse_args(argv)
    modes = [args.check, args.large_out is not None, args.full_width is not None, args.variant is not None,
             args.real_size is not None, args.context_probes is not None, args.vision_split is not None]
    if sum(modes) > 1:
        ap.error("give at most one of --check, --large-out, --full-width, --variant, --real-size, --context-probes, "
                 "--vision-split")
    if args.vision_layers is not None and (
            (args.real_size is None and args.vision_split is None) or args.vision_layers < 1):
        ap.error("--vision-layers N (N >= 1) goes with --real-size or --vision-split")
    if args.vision_split is not None and args.vision_layers is None:
        ap.error("--vision-split DIR needs --vision-layers N")
    if args.real_size is not None:
        root = args.real_size.resolve()
        written = generate_real_size(root, args.vision_layers)
        print(f"real-size model (seed {SEED}) -> {root}")
        report(written, root)
        return 0
    if args.context_probes is not None:
        root = args.context_probes.resolve()
        written = generate_context_probes(root)
        print(f"action_context size probe (seed {SEED}) -> {root}")
        report(written, root)
        return 0
    if args.vision_split is not None:
        root = args.vision_split.resolve()
        written = generate_vision_split(root, args.vision_layers)
        print(f"vision split probe, {args.vision_layers} layer(s) (seed {SEED}) -> {root}")
        report(written, root)
        return 0
    if args.check:
        return check(args.root.resolve())
    if args.large_out is not None:
        out = args.large_out.resolve()
        print(f"large benchmark model -> {out}")
        report(generate_large(out), out)
        return 0
    if args.full_width is not None:
        variant, root = FULL_WIDTH_VARIANT, args.full_width.resolve()
    else:
        variant = UNEVEN_VARIANT if args.variant == "uneven" else TINY_VARIANT
        root = args.root.resolve()
    written = generate(variant, root)
    print(f"{variant.dims.name} model (seed {SEED}) -> {root}")
    report(written, root)
    return 0
