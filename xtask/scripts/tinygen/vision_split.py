"""The vision split probe (`--vision-split DIR --vision-layers N`): the real-width vision
graph with N ViT layers (the weights of `realsize-vit<N>`, from the same seeded streams) cut
into contexts, as the model `vsplit<N>` under the project root DIR, so that `build-ctx` shows
what each cut costs to compile and `parity --backend htp` what it costs in accuracy.

The slow HTP compile stage (O3, "Parallelization Optimization") turns superlinear where a
LayerNorm is fed by an MLP block's residual add (notes/vision-compile.md), which a ViT has at
every layer boundary and before the sampler. Each cut below ends a context at a residual add,
so that the LayerNorm after it starts the next context, fed by a graph input:

- `vision_l0` (pixel_values -> patch and position embedding, layer 0 -> `vit_x1`),
  `vision_l<i>` (`vit_x<i>` -> layer i -> `vit_x<i+1>`): one context per ViT layer;
- `vision_tail` (`vit_x<N>` -> final LayerNorm, grid sampler, projector -> `image_embeds`);
- `vision_body` (N >= 2: pixel_values -> every layer -> `vit_x<N>`): with the tail, the two
  contexts of a cut at the junction only; at one layer it is `vision_l0`.

Each piece's golden comes from the float64 reference run on exactly its golden input (the
float32 tensor the previous piece's golden holds), so every piece is judged on its own.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np

from . import reference as ref
from .dims import CAMS, F32, NPATCH, PDIM, TOK_PER_CAM
from .golden import save_npz
from .graphs import vision
from .graphs.builder import GraphBuilder
from .graphs.stream import save_streamed
from .inputs import make_images, patchify
from .probe_recipes import ProbeComponent, write_probe_recipes
from .realsize import REAL_SIZE, real_weights


def generate_vision_split(root: Path, n: int) -> list:
    """Writes the model `vsplit<n>` under `root`; returns the files written."""
    d = dataclasses.replace(REAL_SIZE, name=f"realsize-vit{n}", VLAYERS=n)
    w = real_weights(d).vision
    model = f"vsplit{n}"
    px = np.stack([patchify(im) for im in make_images()])[None].astype(F32)
    hidden = [CAMS, NPATCH, d.DV]
    embeds = [CAMS * TOK_PER_CAM, d.H]
    pieces = []  # (ProbeComponent, graph builder, golden)

    x_in = px  # the float32 input of piece i
    for i in range(n):
        inp, out = ("pixel_values", "vit_x1") if i == 0 else (f"vit_x{i}", f"vit_x{i + 1}")
        h = ref.vision_embed(w, px) if i == 0 else ref.f64(x_in)
        x_out = ref.vit_layer(d, w["layers"][i], h).astype(F32)

        def build(sink, i=i, inp=inp, out=out):
            g = GraphBuilder(f"vision_l{i}", sink)
            if i == 0:
                h = vision.embed(g, d, w, g.input(inp, [1, CAMS, NPATCH, PDIM]))
            else:
                h = g.input(inp, hidden)
            vision.vit_layer(g, d, i, w["layers"][i], h, out=out)
            g.output(out, hidden)
            return g.build()

        what = "patch and position embedding, ViT layer 0" if i == 0 else f"ViT layer {i}"
        shape_in = [1, CAMS, NPATCH, PDIM] if i == 0 else hidden
        golden = {inp: x_in, out: x_out}
        pieces.append((ProbeComponent(f"vision_l{i}", f"vision split probe: {what}", {inp: shape_in},
                                      {out: hidden}), build, golden))
        x_in = x_out

    last, x_last = f"vit_x{n}", x_in

    def build_tail(sink):
        g = GraphBuilder("vision_tail", sink)
        vision.tail(g, d, w, g.input(last, hidden))
        return g.build()

    tail_golden = {last: x_last, "image_embeds": ref.vision_tail(d, w, ref.f64(x_last)).astype(F32)}
    pieces.append((ProbeComponent("vision_tail", "vision split probe: final LayerNorm, grid sampler, projector",
                                  {last: hidden}, {"image_embeds": embeds}), build_tail, tail_golden))

    if n > 1:
        def build_body(sink):
            g = GraphBuilder("vision_body", sink)
            h = vision.embed(g, d, w, g.input("pixel_values", [1, CAMS, NPATCH, PDIM]))
            for i in range(n):
                h = vision.vit_layer(g, d, i, w["layers"][i], h, out=last if i == n - 1 else None)
            g.output(last, hidden)
            return g.build()

        body = ref.vision_embed(w, px)
        for i in range(n):
            body = ref.vit_layer(d, w["layers"][i], body)
        pieces.append((ProbeComponent("vision_body", f"vision split probe: embedding and ViT layers 0..{n - 1}",
                                      {"pixel_values": [1, CAMS, NPATCH, PDIM]}, {last: hidden}),
                       build_body, {"pixel_values": px, last: body.astype(F32)}))

    written = []
    for comp, build, golden in pieces:
        written += save_streamed(build, root / "onnx" / model / f"{comp.name}.onnx")
        p = root / "golden" / model / f"{comp.name}_io.npz"
        save_npz(p, golden)
        written.append(p)
    written += write_probe_recipes(
        root, model, f"vision split probe: the {n}-layer real-width vision cut into contexts",
        f"generate it with `python3 xtask/scripts/gen_tiny_model.py --vision-split DIR --vision-layers {n}`",
        [f"The real-width vision with {n} ViT layer(s) (the weights of realsize-vit{n}) cut into contexts",
         "at the residual adds, one context per layer, the tail, and the body (never committed)."],
        [c for c, _, _ in pieces])
    return written
