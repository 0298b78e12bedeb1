"""The vision component: ViT, grid token sampler (GridSample bilinear, align_corners=0),
SwiGLU projector to the LLM width."""

from __future__ import annotations

import math

import numpy as np

from ..dims import CAMS, GRID, NPATCH, PDIM, TOK_PER_CAM
from .builder import GraphBuilder


def build(d, w, sink=None):
    g = GraphBuilder("vision", sink)
    px = g.input("pixel_values", [1, CAMS, NPATCH, PDIM])
    x = embed(g, d, w, px)
    for i, L in enumerate(w["layers"]):
        x = vit_layer(g, d, i, L, x)
    tail(g, d, w, x)
    return g.build()


def embed(g, d, w, px):
    """Patch embedding + position embedding: `[1, CAMS, NPATCH, PDIM]` -> `[CAMS, NPATCH, DV]`."""
    x = g.reshape(px, [CAMS, NPATCH, PDIM])
    x = g.linear(x, g.weight("patch_embed.weight", w["patch_w"]), g.weight("patch_embed.bias", w["patch_b"]))
    return g.op("Add", [x, g.weight("pos_embed", w["pos"])])


def vit_layer(g, d, i, L, x, out=None):
    """ViT layer `i` (pre-LN attention and SiLU MLP, each with its residual add); `out` names
    the last residual add (a split piece's output)."""
    scale = g.const(np.float32(1.0 / math.sqrt(d.VHD)), np.float32)
    p = f"vit.{i}."
    W = lambda k: g.weight(p + k, L[k])  # noqa: E731
    h = g.layernorm(x, W("ln1_g"), W("ln1_b"))

    def heads(wk, bk, perm):
        t = g.linear(h, W(wk), W(bk))
        return g.transpose(g.reshape(t, [CAMS, NPATCH, d.VHEADS, d.VHD]), perm)

    q = heads("wq", "bq", [0, 2, 1, 3])  # [2,3,729,16]
    kt = heads("wk", "bk", [0, 2, 3, 1])  # [2,3,16,729]
    v = heads("wv", "bv", [0, 2, 1, 3])
    sc = g.op("Mul", [g.op("MatMul", [q, kt]), scale])
    a = g.op("MatMul", [g.op("Softmax", [sc], axis=-1), v])
    a = g.reshape(g.transpose(a, [0, 2, 1, 3]), [CAMS, NPATCH, d.DV])
    x = g.op("Add", [x, g.linear(a, W("wo"), W("bo"))])
    h = g.layernorm(x, W("ln2_g"), W("ln2_b"))
    m = g.linear(g.silu(g.linear(h, W("w1"), W("b1"))), W("w2"), W("b2"))
    return g.op("Add", [x, m], out=out)


def tail(g, d, w, x):
    """The final LayerNorm, the grid token sampler and the projector: `[CAMS, NPATCH, DV]` ->
    the output `image_embeds`."""
    x = g.layernorm(x, g.weight("vit.final_ln.weight", w["lnf_g"]), g.weight("vit.final_ln.bias", w["lnf_b"]))
    # grid token sampler
    pooled = g.op("ReduceMean", [x, g.const([1])], keepdims=0)  # [2,48]
    z = g.linear(pooled, g.weight("sampler.weight", w["grid_w"]), g.weight("sampler.bias", w["grid_b"]))
    # tanh(z) by Sigmoid: GridSample amplifies coordinate error by ~13.5 px per unit, and the
    # HTP fp16 Tanh kernel is the coarser of the two (see GraphBuilder.tanh_by_sigmoid).
    grid = g.reshape(g.tanh_by_sigmoid(z), [CAMS, TOK_PER_CAM, 1, 2])
    fmap = g.reshape(g.transpose(x, [0, 2, 1]), [CAMS, d.DV, GRID, GRID])
    s = g.op("GridSample", [fmap, grid], mode="linear", padding_mode="zeros", align_corners=0)
    t = g.reshape(g.transpose(g.reshape(s, [CAMS, d.DV, TOK_PER_CAM]), [0, 2, 1]), [CAMS * TOK_PER_CAM, d.DV])
    g.swiglu(
        t,
        g.weight("projector.w1", w["proj_w1"]),
        g.weight("projector.w2", w["proj_w2"]),
        g.weight("projector.w3", w["proj_w3"]),
        out="image_embeds",
    )
    g.output("image_embeds", [CAMS * TOK_PER_CAM, d.H])
