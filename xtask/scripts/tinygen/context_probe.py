"""The action_context size probe (`--context-probes DIR`): the real-size action_context cut
down to its parts, each a one-component model `ctxp-<variant>` under the project root DIR, so
that `build-ctx` shows what its context binary holds (docs/real-size.md: the binary grows with
every operation over the 36 x 130-token activations, not only with the weights).

Every variant takes the real-size I/O (`keys`/`values` of `[36, 1, 130, 1024]`), projects them
as the real-size graph does (a 2-D MatMul over the 4,680 tokens with a matrix shared by every
layer) to `width`, and optionally applies the per-layer RMSNorm; goldens come from the float64
reference. Small (a few MB of weights each): every variant builds in seconds.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx

from . import reference as ref
from .dims import F32, S
from .golden import save_npz
from .graphs.builder import GraphBuilder
from .probe_recipes import ProbeComponent, write_probe_recipes
from .weights import linear_w32, norm_w, rng_for

LAYERS, KVW = 36, 1024  # the real-size LLM: 36 layers, 8 KV heads of 128

# (name, projected tensors, output width, per-layer RMSNorm)
VARIANTS = [
    ("ctxp-k1024", ("keys",), 1024, False),
    ("ctxp-kv1024", ("keys", "values"), 1024, False),
    ("ctxp-k1024-norm", ("keys",), 1024, True),
    ("ctxp-kv1024-norm", ("keys", "values"), 1024, True),
    ("ctxp-kv768-norm", ("keys", "values"), 768, True),
    ("ctxp-kv512", ("keys", "values"), 512, False),
    ("ctxp-kv512-norm", ("keys", "values"), 512, True),
]
OUT = {"keys": "k_ctx", "values": "v_ctx"}


def generate_context_probes(root: Path) -> list:
    """Writes every variant's ONNX, golden and recipes under `root`; returns the files."""
    r = rng_for("ctxprobe.inputs")
    inputs = {n: r.standard_normal((LAYERS, 1, S, KVW), dtype=np.float32) for n in OUT}
    written = []
    for name, tensors, width, norm in VARIANTS:
        r = rng_for(f"ctxprobe.{name}")
        proj = {n: linear_w32(r, KVW, width) for n in tensors}
        nw = norm_w(r, (LAYERS, 1, 1, width)) if norm else None
        g = GraphBuilder("action_context")
        golden = {}
        for n in tensors:
            x = g.input(n, [LAYERS, 1, S, KVW])
            flat = g.reshape(x, [LAYERS * S, KVW])
            y = g.op("MatMul", [flat, g.weight(f"proj.{n}", proj[n])])
            y = g.reshape(y, [LAYERS, 1, S, width], out=None if norm else OUT[n])
            if norm:
                g.rmsnorm(y, g.weight(f"norm.{n}", nw), out=OUT[n])
            g.output(OUT[n], [LAYERS, 1, S, width])
            y64 = ref.f64(inputs[n]) @ ref.f64(proj[n])
            golden[n] = inputs[n]
            golden[OUT[n]] = (ref.rmsnorm(y64, nw) if norm else y64).astype(F32)
        model = g.build()
        written += _write(root, name, model, golden, tensors, width)
    return written


def _write(root: Path, name: str, model, golden: dict, tensors, width: int) -> list:
    """The variant's ONNX, golden and recipes (model.toml, action_context.toml)."""
    onnx_path = root / "onnx" / name / "action_context.onnx"
    onnx_path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save_model(model, str(onnx_path))
    golden_path = root / "golden" / name / "action_context_io.npz"
    save_npz(golden_path, golden)
    what = f"{' and '.join(tensors)} projected to {width}" + (", per-layer RMSNorm" if name.endswith("-norm") else "")
    component = ProbeComponent(
        "action_context", f"size probe: {what}",
        inputs={n: [LAYERS, 1, S, KVW] for n in tensors},
        outputs={OUT[n]: [LAYERS, 1, S, width] for n in tensors},
    )
    recipes = write_probe_recipes(
        root, name, f"action_context size probe: {what}",
        "generate it with `python3 xtask/scripts/gen_tiny_model.py --context-probes DIR`",
        ["The real-size action_context cut down to its parts (never committed)."], [component])
    return [onnx_path, golden_path, *recipes]
