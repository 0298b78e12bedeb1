"""One model's files under a project root: onnx/<model>/ (graphs from the seeded weights),
golden/<model>/ (one numpy-reference chain run) and recipes/<model>/."""

from __future__ import annotations

import hashlib
from pathlib import Path

from .chain import run_chain
from .dims import COMPONENTS
from .golden import write_golden
from .graphs import action, llm, vision
from .graphs.builder import save_onnx
from .recipes import write_recipes
from .weights import Weights


def write_onnx(d, w: Weights, onnx_dir: Path) -> list:
    graphs = {
        "vision": lambda: vision.build(d, w.vision),
        **{f"llm_split{i}": (lambda i=i: llm.build(d, i, w.llm[i])) for i in range(d.NSPLITS)},
        "action_context": lambda: action.build_context(d, w.action_context),
        "action_step": lambda: action.build_step(d, w.action_step),
    }
    written = []
    for comp in COMPONENTS:
        written += save_onnx(graphs[comp](), onnx_dir / f"{comp}.onnx", external=comp in d.external)
    return written


def generate(variant, root: Path) -> list:
    """Writes every file of `variant` under `root` and returns them, in writing order."""
    d = variant.dims
    w = Weights(d)
    written = write_onnx(d, w, root / "onnx" / d.name)
    written += write_golden(d, run_chain(d, w), root / "golden" / d.name)
    written += write_recipes(variant, root)
    return written


def human(n):
    return f"{n / 1024:.1f} KiB" if n < 1 << 20 else f"{n / (1 << 20):.2f} MiB"


def report(paths, root):
    total = 0
    for p in paths:
        sz = p.stat().st_size
        total += sz
        h = hashlib.sha256()
        with open(p, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 24), b""):
                h.update(chunk)
        digest = h.hexdigest()[:16]
        print(f"  wrote {p.relative_to(root)}  {human(sz)}  sha256:{digest}")
    print(f"  total {human(total)} ({total} bytes) in {len(paths)} files")
