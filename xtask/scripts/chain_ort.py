#!/usr/bin/env python3
"""Baseline: the MolmoAct2 host chain in plain Python + onnxruntime (CPU EP).

    python3 xtask/scripts/chain_ort.py --root R --model M --iters N --warmup K --out OUT.json

Reads R/recipes/M/model.toml ([model] components, [host] table) and the component
recipes (R/recipes/M/<component>.toml: [component] onnx, [golden] file), loads every
component once with onnxruntime (CPUExecutionProvider, intra_op_num_threads=2), then
runs K untimed and N timed chains exactly as golden/README.md "The host chain" says:

  vision -> scatter-add at image_token_positions -> llm_split0..3 (K/V concat on axis 0)
  -> action_context -> Euler loop over timesteps (x0 = initial_noise * (1 - pad))
  -> de-normalise per dim ([host.denorm]: clip to [-1, 1] and/or q01/q99; with
     `gripper_dim` instead, that dim passes and every other is clipped and de-normalised).

Writes OUT.json with per-iteration end-to-end / host / per-call timings, load times,
the max abs error of the actions against the trace's expected `actions`, and peak RSS.

[host] keys used (those missing fall back to trace.json / the component list):
trace, vision, llm_splits, action_context, action_step, timesteps, action_dim_used,
gripper_dim, norm_mode, denorm (default, dims), trace_keys (our name = the trace's name).

Dependencies: numpy, onnxruntime (Python 3.11+ for tomllib).
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
import onnxruntime as ort


def load_toml(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def load_npz(path: Path) -> dict:
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


class Chain:
    def __init__(self, root: Path, model: str, threads: int, spinning: bool = True):
        self.root = root
        rdir = root / "recipes" / model
        mt = load_toml(rdir / "model.toml")
        self.components = list(mt["model"]["components"])
        host = mt.get("host", {})
        trace_path = root / host["trace"]
        self.trace = json.loads(trace_path.read_text())
        self.recipes = {c: load_toml(rdir / f"{c}.toml") for c in self.components}

        comps = self.components
        self.vision = host.get("vision", "vision")
        self.llm_splits = list(host.get("llm_splits", [c for c in comps if c.startswith("llm_split")]))
        self.action_context = host.get("action_context", "action_context")
        self.action_step = host.get("action_step", "action_step")
        self.timesteps = [float(t) for t in host.get("timesteps", self.trace["timesteps"])]
        self.action_dim_used = int(host.get("action_dim_used", self.trace["action_dim_used"]))
        self.gripper_dim = host.get("gripper_dim", self.trace.get("gripper_dim"))
        self.norm_mode = host.get("norm_mode", self.trace.get("norm_mode", "q01_q99"))
        if self.norm_mode != "q01_q99":
            raise SystemExit(f"unsupported norm_mode {self.norm_mode!r}")
        if "denorm" in host:
            spec = host["denorm"]
            self.denorm = [spec.get("default", "clip+denorm")] * self.action_dim_used
            for k, mode in spec.get("dims", {}).items():
                self.denorm[int(k)] = mode
        else:
            self.denorm = ["pass" if d == self.gripper_dim else "clip+denorm" for d in range(self.action_dim_used)]
        trace_keys = host.get("trace_keys", {})
        for c in [self.vision, *self.llm_splits, self.action_context, self.action_step]:
            if c not in self.recipes:
                raise SystemExit(f"[host] names component {c!r}, not in [model] components {comps}")

        # host tensors (trace npz) and the vision input (vision golden npz)
        z = load_npz(trace_path.parent / self.trace.get("npz", "trace.npz"))
        t = {ours: z[trace_keys.get(ours, ours)] for ours in (
            "prompt_embeds", "image_token_positions", "attention_bias", "encoder_attention_mask",
            "action_dim_is_pad", "initial_noise", "q01", "q99", "actions")}
        self.prompt_embeds = t["prompt_embeds"].astype(np.float32)
        self.image_token_positions = t["image_token_positions"].astype(np.int64)
        self.attention_bias = t["attention_bias"].astype(np.float32)
        self.encoder_attention_mask = t["encoder_attention_mask"].astype(np.float32)
        self.action_dim_is_pad = t["action_dim_is_pad"].astype(np.float32)
        self.initial_noise = t["initial_noise"].astype(np.float32)
        self.q01 = t["q01"].astype(np.float32)
        self.q99 = t["q99"].astype(np.float32)
        # Which dims are clipped / de-normalised, worked out once (not inside the timed chain).
        self.clip_dims = [d for d, m in enumerate(self.denorm) if m in ("clip+denorm", "clip")]
        self.denorm_dims = [d for d, m in enumerate(self.denorm) if m in ("clip+denorm", "denorm")]
        self.denorm_low = self.q01[self.denorm_dims]
        self.denorm_span = self.q99[self.denorm_dims] - self.q01[self.denorm_dims]
        self.expected_actions = t["actions"].astype(np.float32)
        vg = self.recipes[self.vision]["golden"]["file"]
        with np.load(root / vg, allow_pickle=False) as z:
            self.pixel_values = np.ascontiguousarray(z["pixel_values"], dtype=np.float32)

        # sessions, loaded once (timed)
        self.sessions: dict[str, ort.InferenceSession] = {}
        self.load_ms: dict[str, float] = {}
        for c in comps:
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            if not spinning:
                # idle intra-op threads otherwise spin and steal the cores of the running session
                so.add_session_config_entry("session.intra_op.allow_spinning", "0")
                so.add_session_config_entry("session.inter_op.allow_spinning", "0")
            onnx_path = root / self.recipes[c]["component"]["onnx"]
            t0 = time.perf_counter()
            self.sessions[c] = ort.InferenceSession(str(onnx_path), so, providers=["CPUExecutionProvider"])
            self.load_ms[c] = (time.perf_counter() - t0) * 1e3
        self.calls: dict[str, list[float]] = {c: [] for c in comps}
        self._session_ms = 0.0

    def run(self, comp: str, feeds: dict) -> list[np.ndarray]:
        sess = self.sessions[comp]
        t0 = time.perf_counter()
        out = sess.run(None, feeds)
        ms = (time.perf_counter() - t0) * 1e3
        self.calls[comp].append(ms)
        self._session_ms += ms
        return out

    def chain(self) -> np.ndarray:
        # 1. vision
        (image_embeds,) = self.run(self.vision, {"pixel_values": self.pixel_values})
        # 2. scatter (float32 add at the image token positions)
        h = self.prompt_embeds.copy()
        h[0, self.image_token_positions] += image_embeds
        # 3. LLM splits; K/V concatenated on axis 0 (layer-major)
        ks, vs = [], []
        for c in self.llm_splits:
            outs = dict(zip((o.name for o in self.sessions[c].get_outputs()),
                            self.run(c, {"hidden_states": h, "attention_bias": self.attention_bias})))
            h = outs["hidden_out"]
            ks.append(outs["keys"])
            vs.append(outs["values"])
        keys = np.concatenate(ks, axis=0)
        values = np.concatenate(vs, axis=0)
        # 4. action context
        ac = dict(zip((o.name for o in self.sessions[self.action_context].get_outputs()),
                      self.run(self.action_context, {"keys": keys, "values": values})))
        k_ctx, v_ctx = ac["k_ctx"], ac["v_ctx"]
        # 5. Euler loop
        x = (self.initial_noise * (np.float32(1.0) - self.action_dim_is_pad)).astype(np.float32)
        for t in self.timesteps:
            (x,) = self.run(self.action_step, {
                "trajectory": x,
                "timestep": np.array([t], dtype=np.float32),
                "k_ctx": k_ctx,
                "v_ctx": v_ctx,
                "encoder_attention_mask": self.encoder_attention_mask,
                "action_dim_is_pad": self.action_dim_is_pad,
            })
        # 6. de-normalise (float32), each dim as its mode says
        a = x[:, :, : self.action_dim_used].copy()
        c, n = self.clip_dims, self.denorm_dims
        a[..., c] = np.clip(a[..., c], -1.0, 1.0)
        a[..., n] = (a[..., n] + np.float32(1.0)) * self.denorm_span / np.float32(2.0) + self.denorm_low
        return a

    def timed_chain(self):
        self._session_ms = 0.0
        t0 = time.perf_counter()
        actions = self.chain()
        total = (time.perf_counter() - t0) * 1e3
        return actions, total, total - self._session_ms


def stats(xs):
    if not xs:
        return "n/a"
    a = np.asarray(xs)
    return f"median {np.median(a):.2f} ms (min {a.min():.2f}, max {a.max():.2f})"


def main():
    ap = argparse.ArgumentParser(description="MolmoAct2 host chain on onnxruntime CPU (benchmark baseline)")
    ap.add_argument("--root", type=Path, required=True, help="project root (holds recipes/, onnx/, golden/)")
    ap.add_argument("--model", required=True, help="model name: recipes/<model>/model.toml")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2, help="intra_op_num_threads (default 2)")
    ap.add_argument("--no-spinning", action="store_true", help="disable ORT's idle-thread spinning (as the Rust tool does)")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()

    root = args.root.resolve()
    chain = Chain(root, args.model, args.threads, spinning=not args.no_spinning)

    actions = None
    for _ in range(args.warmup):
        actions = chain.chain()
    chain.calls = {c: [] for c in chain.components}  # only timed iterations are reported
    chain_ms, host_ms = [], []
    for _ in range(args.iters):
        actions, total, host = chain.timed_chain()
        chain_ms.append(total)
        host_ms.append(host)
    if actions is None:
        actions = chain.chain()
    err = float(np.max(np.abs(actions.astype(np.float64) - chain.expected_actions.astype(np.float64))))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0

    out = {
        "tool": "python-onnxruntime",
        "onnxruntime": ort.__version__,
        "model": args.model,
        "threads": args.threads,
        "spinning": not args.no_spinning,
        "warmup": args.warmup,
        "iters": args.iters,
        "chain_ms": chain_ms,
        "host_ms": host_ms,
        "components_ms": chain.calls,
        "load_ms": chain.load_ms,
        "actions_max_abs_err": err,
        "peak_rss_mb": peak,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    print(
        f"chain_ort {args.model}: {args.iters} iters, chain {stats(chain_ms)}, "
        f"host median {np.median(host_ms) if host_ms else float('nan'):.3f} ms, "
        f"load {sum(chain.load_ms.values()):.0f} ms, actions max abs err {err:.3e}, "
        f"peak RSS {peak:.0f} MB, ort {ort.__version__} -> {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
