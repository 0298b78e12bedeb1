"""The ~100 MB single-component benchmark model (`--large-out DIR`, never committed):
y = silu(x @ W1) @ W2, W1: 2560 -> 4864, W2: 4864 -> 2560, numpy float64 reference."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .dims import F32, S
from .golden import save_npz
from .graphs.builder import GraphBuilder, save_onnx
from .reference import f64, silu
from .weights import rng_for


def generate_large(out: Path) -> list:
    d_in, d_ff = 2560, 4864  # 2 * 2560 * 4864 * 4 B = 99.6 MB of weights
    r = rng_for("large")
    w1 = r.standard_normal((d_in, d_ff), dtype=np.float32) * np.float32(1.0 / math.sqrt(d_in))
    w2 = r.standard_normal((d_ff, d_in), dtype=np.float32) * np.float32(1.0 / math.sqrt(d_ff))
    x = r.standard_normal((1, S, d_in), dtype=np.float32)
    g = GraphBuilder("mlp")
    xi = g.input("x", [1, S, d_in])
    h = g.silu(g.op("MatMul", [xi, g.weight("mlp.w1", w1)]))
    g.op("MatMul", [h, g.weight("mlp.w2", w2)], out="y")
    g.output("y", [1, S, d_in])
    written = save_onnx(g.build(), out / "onnx" / "large" / "mlp.onnx", external=True)
    hx = f64(x) @ f64(w1)
    y = (silu(hx) @ f64(w2)).astype(F32)
    p = out / "golden" / "large" / "mlp_io.npz"
    save_npz(p, {"x": x, "y": y})
    written.append(p)
    return written
