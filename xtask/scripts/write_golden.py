#!/usr/bin/env python3
"""Writes golden files in exactly the format `cargo xtask` reads, from your own export.

  component  golden/<model>/<component>_io.npz: the graph's inputs and outputs under the ONNX
             graph's names (inputs first, in graph order). The inputs come from an npz you saved
             (e.g. `np.savez("in.npz", pixel_values=t.numpy())` beside your PyTorch forward);
             the outputs are your reference's (`--outputs ref.npz`, the better choice: parity
             then also catches export bugs) or, without it, what onnxruntime computes on the
             graph. `--recipe` prints the `[golden]`, `[[inputs]]` and `[[outputs]]` sections of
             the component's recipe to paste into recipes/<model>/<component>.toml.
  trace      golden/<model>/trace.json + trace.npz: one reference run of the whole chain. The
             tensors come from an npz under our names (see golden/README.md; another exporter's
             names are mapped in model.toml [host.trace_keys] and checked by the tool instead).

Every name, shape and dtype is checked against the graph before anything is written; a float64
array is refused rather than silently cast (cast it yourself: `.astype(np.float32)`). Exit codes:
0 written, 2 bad input. Needs numpy, and onnxruntime for `component` (pinned in
xtask/scripts/tinygen/requirements.txt, the same onnxruntime version the tool loads).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

# What the chain reads from the trace, by our name (xtask/src/recipe/host.rs).
HOST_INPUTS = ["prompt_embeds", "image_token_positions", "attention_bias", "encoder_attention_mask",
               "action_dim_is_pad", "initial_noise", "q01", "q99"]
REFERENCES = ["hidden_states", "keys", "values", "actions"]
# ONNX tensor(...) type → numpy dtype and the recipe's dtype word.
ONNX_TYPES = {"tensor(float)": (np.float32, "f32"), "tensor(float16)": (np.float16, "f16"),
              "tensor(int64)": (np.int64, "i64"), "tensor(bool)": (np.bool_, "bool")}


class BadInput(Exception):
    pass


def load_npz(path: str) -> dict:
    try:
        with np.load(path, allow_pickle=False) as z:
            return {k: z[k] for k in z.files}
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file")
    except Exception as e:  # a corrupt or non-npz file
        raise BadInput(f"{path}: not a readable npz ({e})")


def save_npz(path: Path, arrays: dict) -> None:
    """np.savez_compressed, written beside and renamed into place (never a half-written file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "wb") as f:
        np.savez_compressed(f, **{k: np.ascontiguousarray(v) for k, v in arrays.items()})
    tmp.replace(path)


def graph_io(onnx_path: str):
    """The graph's inputs and outputs as onnxruntime sees them: [(name, shape, ort type)]."""
    try:
        import onnxruntime as ort
    except ImportError:
        raise BadInput("onnxruntime is not installed: python3 -m venv target/tinygen-venv && "
                       "target/tinygen-venv/bin/python -m pip install -r "
                       "xtask/scripts/tinygen/requirements.txt")
    if not Path(onnx_path).is_file():
        raise BadInput(f"{onnx_path}: no such file")
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(onnx_path, opts, providers=["CPUExecutionProvider"])
    io = lambda xs: [(x.name, x.shape, x.type) for x in xs]
    return sess, io(sess.get_inputs()), io(sess.get_outputs())


def check_against(what: str, arrays: dict, specs, source: str) -> dict:
    """`arrays` must hold exactly the graph's `specs` with their static shapes and dtypes."""
    names = [n for n, _, _ in specs]
    missing = [n for n in names if n not in arrays]
    extra = sorted(set(arrays) - set(names))
    if missing or extra:
        raise BadInput(f"{source}: the graph's {what} are {names}; missing {missing}, "
                       f"not in the graph {extra}")
    out = {}
    for name, shape, typ in specs:
        a = arrays[name]
        if typ not in ONNX_TYPES:
            raise BadInput(f"{what} {name}: graph type {typ} is not one the tool reads "
                           f"({', '.join(ONNX_TYPES)})")
        want = ONNX_TYPES[typ][0]
        if a.dtype != want:
            raise BadInput(f"{source}: {name} is {a.dtype}, the graph takes {np.dtype(want)}; "
                           f"cast it yourself (.astype(np.{np.dtype(want)}))")
        if any(not isinstance(d, int) for d in shape):
            raise BadInput(f"{what} {name}: the graph's shape {shape} is not static; export "
                           "with fixed shapes (the HTP compiles static shapes only)")
        if list(a.shape) != list(shape):
            raise BadInput(f"{source}: {name} has shape {list(a.shape)}, the graph "
                           f"{list(shape)}")
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise BadInput(f"{source}: {name} holds NaN or Inf")
        out[name] = a
    return out


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    den = np.linalg.norm(a) * np.linalg.norm(b)
    return float(a @ b / den) if den > 0 else float(np.array_equal(a, b))


def recipe_sections(golden: Path, inputs, outputs) -> str:
    lines = ["[golden]", f'file = "{golden.as_posix()}"']
    for kind, specs in (("inputs", inputs), ("outputs", outputs)):
        for name, shape, typ in specs:
            lines += ["", f"[[{kind}]]", f'name = "{name}"', f"shape = {list(shape)}",
                      f'dtype = "{ONNX_TYPES[typ][1]}"', f'golden_key = "{name}"']
    return "\n".join(lines)


def cmd_component(args) -> None:
    sess, in_specs, out_specs = graph_io(args.onnx)
    inputs = check_against("inputs", load_npz(args.inputs), in_specs, args.inputs)
    computed = dict(zip([n for n, _, _ in out_specs], sess.run(None, inputs)))
    if args.outputs:
        outputs = check_against("outputs", load_npz(args.outputs), out_specs, args.outputs)
        for name in outputs:
            print(f"  {name}: onnxruntime vs your reference, cosine "
                  f"{cosine(computed[name], outputs[name]):.8f}")
    else:
        outputs = check_against("outputs", computed, out_specs, "onnxruntime")
        print("  outputs computed by onnxruntime (CPU EP) on the graph: `parity --backend ort` "
              "then measures ORT against itself; pass --outputs for an independent reference")
    out = Path(args.out)
    save_npz(out, {**inputs, **outputs})
    print(f"wrote {out} ({len(inputs)} inputs, {len(outputs)} outputs)")
    if args.recipe:
        print(recipe_sections(out, in_specs, out_specs))


def cmd_trace(args) -> None:
    tensors = load_npz(args.tensors)
    missing = [k for k in HOST_INPUTS if k not in tensors]
    if missing and not args.mapped:
        raise BadInput(f"{args.tensors}: the chain's host inputs {missing} are missing (under "
                       "another exporter's names? map them in model.toml [host.trace_keys] "
                       "and pass --mapped)")
    for k, a in tensors.items():
        if a.dtype.kind == "f" and not np.isfinite(a).all():
            raise BadInput(f"{args.tensors}: {k} holds NaN or Inf")
    meta = {}
    for kv in args.meta:
        key, sep, value = kv.partition("=")
        if not sep:
            raise BadInput(f"--meta {kv!r}: expected KEY=VALUE")
        try:
            meta[key] = json.loads(value)
        except json.JSONDecodeError:
            meta[key] = value
    out = Path(args.out)
    npz = out.with_suffix(".npz")
    save_npz(npz, tensors)
    doc = {"format": "molmoact2-trace.v1", **meta, "npz": npz.name,
           "arrays": {k: {"shape": list(a.shape), "dtype": str(a.dtype)}
                      for k, a in tensors.items()}}
    tmp = out.with_name(out.name + ".part")
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    tmp.replace(out)
    refs = [k for k in REFERENCES if k in tensors]
    steps = sorted(k for k in tensors if k.startswith("trajectory_step") and k.endswith("_out"))
    print(f"wrote {out} and {npz} ({len(tensors)} tensors; references: "
          f"{', '.join(refs + steps) or 'none: every chain boundary will be UNGATED'})")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("component", help="write <component>_io.npz from an ONNX graph")
    c.add_argument("--onnx", required=True, help="the component's ONNX graph")
    c.add_argument("--inputs", required=True, help="npz of the graph's inputs, by input name")
    c.add_argument("--outputs", help="npz of your reference outputs, by output name "
                   "(default: onnxruntime's)")
    c.add_argument("--out", required=True, help="golden/<model>/<component>_io.npz")
    c.add_argument("--recipe", action="store_true", help="print the recipe's I/O sections")
    t = sub.add_parser("trace", help="write trace.json + trace.npz of one chain run")
    t.add_argument("--tensors", required=True, help="npz of the chain's tensors (our names)")
    t.add_argument("--out", required=True, help="golden/<model>/trace.json")
    t.add_argument("--meta", action="append", default=[], help="KEY=VALUE (JSON or text) "
                   "recorded in trace.json, e.g. --meta model=mine --meta seq_len=130")
    t.add_argument("--mapped", action="store_true", help="names follow [host.trace_keys]: "
                   "skip the check for our host-input names")
    args = p.parse_args(argv)
    try:
        (cmd_component if args.cmd == "component" else cmd_trace)(args)
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
