"""recipes/<model>/: model.toml (with the full [host] table) and one recipe per component,
built as data and rendered by `toml_writer`. The comments are the recipes' documentation for
whoever copies them to add a model (README, "A new model by recipe")."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .dims import ADIM_USED, COMPONENTS, GRIPPER_DIM, IO_NAMES, S
from .host_keys import HOST_READ_KEYS
from .toml_writer import Table, render

COMPONENT_DESCRIPTIONS = {
    "vision": "ViT + grid token sampler (GridSample bilinear, align_corners=0), 16 tokens per camera",
    "llm_split": "RMSNorm, GQA attention with additive attention_bias, SwiGLU; K/V as outputs",
    "action_context": "per-layer K/V projections of the action expert (computed once per decision)",
    "action_step": "one flow-matching Euler step (dt = {dt}) of the action expert",
}

TARGET = {"qairt": "2.47.0", "soc": 77, "htp_arch": 73}
HTP_GATE_REASON = (
    "The HTP runs fp16 weights and activations (enable_htp_fp16_precision=1, soc 77): fp16 rounding "
    "puts cosines near 0.9999x, so the HTP gate is 0.999."
)


def component_description(d, comp: str) -> str:
    if comp.startswith("llm_split"):
        i = int(comp[len("llm_split"):])
        lo = d.first_layer(i)
        hi = lo + d.SPLIT_LAYERS[i] - 1
        layers = f"layer {lo}" if lo == hi else f"layers {lo}..{hi}"
        return f"LLM {layers}: {COMPONENT_DESCRIPTIONS['llm_split']}"
    return COMPONENT_DESCRIPTIONS[comp].format(dt=f"{d.DT:.6g}")


def component_recipe(d, comp: str, shapes: dict) -> list:
    """<component>.toml: the component, its golden file, its I/O, how to convert and compile
    it, and its parity gate."""
    desc = component_description(d, comp)
    tables = [
        Table("component", {
            "name": comp,
            "description": desc,
            "onnx": f"onnx/{d.name}/{comp}.onnx",
        }, comment=[desc]),
        Table("golden", {"file": f"golden/{d.name}/{comp}_io.npz"}),
    ]
    ins, outs = IO_NAMES[comp]
    for kind, names in (("inputs", ins), ("outputs", outs)):
        for n in names:
            io = {"name": n, "shape": list(shapes[n]), "dtype": "f32", "golden_key": n}
            if n == "attention_bias":
                io["mask"] = True
            tables.append(Table(kind, io, array=True))
    tables += [
        Table("convert", {"float_bitwidth": 32, "preserve_io_datatype": True},
              comment=["ONNX -> DLC: a float DLC (no quantization), I/O kept as f32."]),
        Table("context", {
            "graph_name": comp,
            "optimization_level": 3,
            "fp16": True,
            "vtcm_mb": 0,
        }, comment=["HTP context binary: soc/arch come from model.toml [target]; fp16 weights, O3."]),
        Table("parity", {"min_cosine": 0.9999, "atol": 1e-4, "rtol": 1e-3},
              comment=["Gate: cosine >= min_cosine on every output; atol/rtol only feed the "
                       "informational within_tol."]),
    ]
    return tables


def float32_decimal(t: float) -> float:
    """The shortest decimal that reads back as the float32 `t` (0.33333334, not
    0.3333333432674408): what a person would write for a float32 timestep."""
    return float(str(np.float32(t)))


def host_tables(d) -> list:
    """The [host] table of model.toml: roles, steps, de-normalisation, trace key names."""
    host = {
        "trace": f"golden/{d.name}/trace.json",
        "vision": "vision",
        "llm_splits": [f"llm_split{i}" for i in range(d.NSPLITS)],
        "action_context": "action_context",
        "action_step": "action_step",
        "timesteps": [float32_decimal(t) for t in d.TIMESTEPS],
        "action_dim_used": ADIM_USED,
    }
    if d.DENORM is None:
        host["gripper_dim"] = GRIPPER_DIM
    host["norm_mode"] = "q01_q99"
    tables = [Table("host", host, comment=[
        "Host pipeline of `cargo xtask run`: vision -> scatter -> LLM splits -> action_context ->",
        "Euler steps with action_step -> de-normalize. Sizes come from the component recipes.",
    ])]
    if d.DENORM is not None:
        dims = {str(k): m for k, m in enumerate(d.DENORM) if m != "clip+denorm"}
        tables.append(Table("host.denorm", {"default": "clip+denorm", "dims": dims}, comment=[
            "Per action dim: clip to [-1, 1] and/or de-normalise with q01/q99 (norm_mode).",
        ]))
    if d.TRACE_KEYS:
        mapped = {ours: theirs for ours, theirs in d.TRACE_KEYS if ours in HOST_READ_KEYS}
        tables.append(Table("host.trace_keys", mapped, comment=[
            "The trace was written by another exporter: our name = the trace's name.",
        ]))
    tables.append(Table("host.gate", {
        "min_cosine": 0.999,
        "actions_max_abs": {"ort": 1e-4, "cpu": 1e-4, "htp": 1e-2},
    }, comment=["Chain gates: every boundary tensor's cosine, and the actions' max abs error per backend."]))
    return tables


def model_recipe(variant, components=COMPONENTS) -> list:
    """model.toml: the model, its target, the [host] pipeline (for the whole chain only) and
    the model-level parity override of the HTP gate (with its reason)."""
    d = variant.dims
    return [
        Table("model", {
            "name": d.name,
            "family": "molmoact2",
            "description": variant.description,
            "components": list(components),
            "seq_len": S,
            "obtain": variant.obtain,
        }, comment=variant.header(d)),
        Table("target", dict(TARGET)),
        *(host_tables(d) if list(components) == list(COMPONENTS) else []),
        Table("parity"),
        Table("parity.override", {
            "backend": "htp",
            "min_cosine": 0.999,
            "reason": HTP_GATE_REASON,
        }, array=True),
    ]


def write_recipes(variant, root: Path, components=COMPONENTS, shapes=None) -> list:
    """Writes recipes/<model>/ and returns the files written. Tensor shapes come from
    `shapes` (component -> name -> shape) or else golden/<model>/trace.json, written before."""
    d = variant.dims
    if shapes is None:
        meta = json.loads((root / "golden" / d.name / "trace.json").read_text())
        shapes = {c: {**meta["components"][c]["inputs"], **meta["components"][c]["outputs"]}
                  for c in components}
    rdir = root / "recipes" / d.name
    rdir.mkdir(parents=True, exist_ok=True)
    written = []
    p = rdir / "model.toml"
    p.write_text(render(model_recipe(variant, components)))
    written.append(p)
    for comp in components:
        p = rdir / f"{comp}.toml"
        p.write_text(render(component_recipe(d, comp, shapes[comp])))
        written.append(p)
    return written
