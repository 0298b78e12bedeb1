"""The recipes of a probe model (the action_context size probe, the vision split probe): a
model of one or more components, each with its own ONNX and golden file, compiled as the
card's recipes say (float DLC, fp16, O3, soc 77) and judged on the HTP at the card's gate.
Never committed; `build-ctx` and `parity` take them as any model."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .dims import S
from .recipes import HTP_GATE_REASON, TARGET
from .toml_writer import Table, render


@dataclass
class ProbeComponent:
    name: str
    description: str
    inputs: dict  # tensor name -> shape (the golden key is the name)
    outputs: dict
    context: dict | None = None  # [context] keys beyond the card's (e.g. vtcm_mb)


def component_tables(model: str, c: ProbeComponent) -> list:
    ios = [Table(kind, {"name": n, "shape": list(shape), "dtype": "f32", "golden_key": n}, array=True)
           for kind, tensors in (("inputs", c.inputs), ("outputs", c.outputs)) for n, shape in tensors.items()]
    context = {"graph_name": c.name, "optimization_level": 3, "fp16": True, "vtcm_mb": 0, **(c.context or {})}
    return [
        Table("component", {"name": c.name, "description": c.description,
                            "onnx": f"onnx/{model}/{c.name}.onnx"}),
        Table("golden", {"file": f"golden/{model}/{c.name}_io.npz"}),
        *ios,
        Table("convert", {"float_bitwidth": 32, "preserve_io_datatype": True}),
        Table("context", context),
        Table("parity", {"min_cosine": 0.9999, "atol": 1e-4, "rtol": 1e-3}),
    ]


def write_probe_recipes(root: Path, model: str, description: str, obtain: str, header: list,
                        components: list) -> list:
    """recipes/<model>/: model.toml and one recipe per `ProbeComponent`; the files written."""
    model_toml = [
        Table("model", {"name": model, "family": "molmoact2", "description": description,
                        "components": [c.name for c in components], "seq_len": S, "obtain": obtain},
              comment=header),
        Table("target", dict(TARGET)),
        Table("parity"),
        Table("parity.override", {"backend": "htp", "min_cosine": 0.999, "reason": HTP_GATE_REASON}, array=True),
    ]
    recipes = root / "recipes" / model
    recipes.mkdir(parents=True, exist_ok=True)
    written = [recipes / "model.toml"]
    written[0].write_text(render(model_toml))
    for c in components:
        p = recipes / f"{c.name}.toml"
        p.write_text(render(component_tables(model, c)))
        written.append(p)
    return written
