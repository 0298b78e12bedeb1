#!/usr/bin/env python3
"""Baseline: golden-vs-golden parity of every component output with numpy.

    python3 xtask/scripts/parity_numpy.py --root R --model M --out OUT.json

For each component of R/recipes/M (recipe order), the golden npz ([golden] file) is read
twice, as "expected" and as "actual" (two separate np.load reads, every array
materialised), and every declared output ([[outputs]] golden_key) is compared in
float64: cosine, max abs err and its flat index, mean abs err, relative L2 error,
count over tolerance (|a - e| > atol + rtol * |e|, atol 1e-4, rtol 1e-3), NaN/Inf
counts of both.  The whole read + compare is timed with perf_counter; peak memory is
ru_maxrss.  This is the numpy baseline of the Rust parity step (same work, same data).

Dependencies: numpy (Python 3.11+ for tomllib).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import time
import tomllib
from pathlib import Path

import numpy as np

ATOL = 1e-4
RTOL = 1e-3


def load_toml(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def read_npz(path: Path) -> dict:
    """One full read: every array decompressed and materialised."""
    with np.load(path, allow_pickle=False) as z:
        return {k: np.array(z[k]) for k in z.files}


def compare(expected: np.ndarray, actual: np.ndarray, atol=ATOL, rtol=RTOL) -> dict:
    if expected.shape != actual.shape:
        raise ValueError(f"shape mismatch {expected.shape} vs {actual.shape}")
    e = expected.astype(np.float64, copy=False).ravel()
    a = actual.astype(np.float64, copy=False).ravel()
    diff = np.abs(a - e)
    i = int(np.argmax(diff)) if diff.size else 0
    ne, na = float(np.linalg.norm(e)), float(np.linalg.norm(a))
    dot = float(np.dot(e, a))
    if ne == 0.0 and na == 0.0:
        cosine = 1.0
    elif ne == 0.0 or na == 0.0:
        cosine = 0.0
    else:
        cosine = dot / (ne * na)
    dn = float(np.linalg.norm(a - e))
    return {
        "cosine": cosine,
        "max_abs_err": float(diff[i]) if diff.size else 0.0,
        "max_abs_err_index": i,
        "mean_abs_err": float(diff.mean()) if diff.size else 0.0,
        "rel_l2_err": dn / ne if ne > 0 else (0.0 if dn == 0 else float("inf")),
        "over_tol": int(np.count_nonzero(diff > atol + rtol * np.abs(e))),
        "nan_expected": int(np.count_nonzero(np.isnan(e))),
        "nan_actual": int(np.count_nonzero(np.isnan(a))),
        "inf_expected": int(np.count_nonzero(np.isinf(e))),
        "inf_actual": int(np.count_nonzero(np.isinf(a))),
        "numel": int(e.size),
    }


def main():
    ap = argparse.ArgumentParser(description="golden-vs-golden numpy parity (benchmark baseline)")
    ap.add_argument("--root", type=Path, required=True, help="project root (holds recipes/, golden/)")
    ap.add_argument("--model", required=True, help="model name: recipes/<model>/model.toml")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    root = args.root.resolve()
    rdir = root / "recipes" / args.model
    t0 = time.perf_counter()
    components = load_toml(rdir / "model.toml")["model"]["components"]
    results = []
    for comp in components:
        rec = load_toml(rdir / f"{comp}.toml")
        gpath = root / rec["golden"]["file"]
        expected = read_npz(gpath)
        actual = read_npz(gpath)
        for o in rec["outputs"]:
            key = o["golden_key"]
            r = compare(expected[key], actual[key])
            results.append({"component": comp, "output": o["name"], **r})
        del expected, actual
    seconds = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    out = {
        "tool": "numpy",
        "numpy": np.__version__,
        "model": args.model,
        "atol": ATOL,
        "rtol": RTOL,
        "seconds": seconds,
        "peak_rss_mb": peak,
        "outputs": results,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    worst = min(results, key=lambda r: r["cosine"]) if results else None
    print(
        f"parity_numpy {args.model}: {len(results)} outputs of {len(components)} components in "
        f"{seconds:.3f} s, peak RSS {peak:.0f} MB, min cosine "
        f"{worst['cosine'] if worst else float('nan'):.9f}, numpy {np.__version__} -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
