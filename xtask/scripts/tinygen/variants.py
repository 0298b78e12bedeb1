"""The models this generator writes: their widths (`Dims`) and what their recipes say about
them (the comment at the top of model.toml, `description`, `obtain`).

`COMMITTED` lists the models whose files are in the repository; `--check` regenerates exactly
those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from .dims import NSPLITS, Dims

# The committed tiny model: LLM hidden 64, 4 q / 2 kv heads of 16 (KV 32), FFN 128,
# 8 layers in 4 splits of 2; ViT 48 (3x16), MLP 96, 2 layers; expert 32 (2x16).
TINY = Dims(
    name="tiny", H=64, NQ=4, NKV=2, HD=16, FFN=128, SPLIT_LAYERS=(2, 2, 2, 2),
    DV=48, VHEADS=3, VHD=16, VMLP=96, VLAYERS=2, PROJ_HIDDEN=128,
    E=32, EHEADS=2, EHD=16, EMLP=64, TDIM=32,
    external=tuple(f"llm_split{i}" for i in range(NSPLITS)),
)

# The real bundle's widths (not committed, ~2 GB of float32 weights): LLM hidden 2560,
# 32 q / 8 kv heads of 128 (KV 1024), FFN 9728, ONE layer per split (4 layers);
# ViT 1152 (16x72), MLP 4304, 1 layer, projector 1152 -> 9728 -> 2560;
# expert 768 (12x64), MLP 3072, 4 layers.
FULL_WIDTH = Dims(
    name="fullwidth", H=2560, NQ=32, NKV=8, HD=128, FFN=9728, SPLIT_LAYERS=(1, 1, 1, 1),
    DV=1152, VHEADS=16, VHD=72, VMLP=4304, VLAYERS=1, PROJ_HIDDEN=9728,
    E=768, EHEADS=12, EHD=64, EMLP=3072, TDIM=256,
    external=("vision", *(f"llm_split{i}" for i in range(NSPLITS)), "action_context", "action_step"),
)

# The second committed test model (`--variant uneven`): LLM splits of 1, 3, 2 and 2 layers,
# three Euler steps, per-dim de-normalisation and a trace under another exporter's names, at
# smaller widths: LLM hidden 32, 2 q / 1 kv head of 16, FFN 64; ViT 32 (2x16), 1 layer;
# expert 16 (1x16), MLP 32.
UNEVEN = Dims(
    name="tiny-uneven", H=32, NQ=2, NKV=1, HD=16, FFN=64, SPLIT_LAYERS=(1, 3, 2, 2),
    DV=32, VHEADS=2, VHD=16, VMLP=64, VLAYERS=1, PROJ_HIDDEN=64,
    E=16, EHEADS=1, EHD=16, EMLP=32, TDIM=16,
    external=tuple(f"llm_split{i}" for i in range(NSPLITS)),
    TIMESTEPS=tuple(float(np.float32(t)) for t in (0.0, 1.0 / 3.0, 2.0 / 3.0)),
    DT=float(np.float32(1.0 / 3.0)),
    D_SCALE=2.0,
    DENORM=("clip+denorm",) * 4 + ("denorm", "clip", "pass"),
    TRACE_KEYS=(
        ("prompt_embeds", "text_embeddings"),
        ("image_token_positions", "image_slot_index"),
        ("attention_bias", "llm_mask_bias"),
        ("encoder_attention_mask", "context_mask"),
        ("action_dim_is_pad", "action_pad_mask"),
        ("initial_noise", "x0_noise"),
        ("q01", "norm_low"),
        ("q99", "norm_high"),
        ("image_embeds", "vision_features"),
        ("hidden_states", "llm_inputs_embeds"),
        ("llm_hidden_out", "llm_last_hidden"),
        ("keys", "past_keys"),
        ("values", "past_values"),
        ("k_ctx", "expert_k"),
        ("v_ctx", "expert_v"),
        ("trajectory_step0_in", "flow_step_0_input"),
        ("trajectory_step{i}_out", "flow_step_{i}_output"),
        ("actions", "robot_actions"),
    ),
)


@dataclass(frozen=True)
class Variant:
    """One model with its recipes: `header` is the comment above model.toml's [model]
    (documentation for whoever opens the recipe), one line per item, without `# `."""

    dims: Dims
    header: Callable[[Dims], list]
    description: str
    obtain: str


def _tiny_header(d: Dims) -> list:
    return [
        "The embedded test model: a small model of the MolmoAct2 family with the real bundle's seven",
        "components, tensor names and ranks, seq 130, 2 cameras x 16 tokens, pixel_values [1,2,729,588],",
        f"action [1,10,32], and the LLM split into {d.NSPLITS} contexts ({d.SPLIT_LAYERS[0]} layers each, "
        f"{d.NLAYERS} in all) whose K/V",
        f"concatenate for action_context. Widths are small: LLM hidden {d.H}, KV {d.KVW}, expert {d.E}.",
        "Generated (with its golden tensors, by an independent numpy reference) by",
        "xtask/scripts/gen_tiny_model.py; regenerate with `python3 xtask/scripts/gen_tiny_model.py`.",
    ]


def _uneven_header(d: Dims) -> list:
    return [
        "A second committed test model, made by recipe alone: the tiny model's family and I/O names",
        f"at smaller widths (LLM hidden {d.H}, {d.NQ} query / {d.NKV} KV head(s) of {d.HD}, expert {d.E}) with",
        f"- LLM splits of UNEVEN depth: {' + '.join(map(str, d.SPLIT_LAYERS))} = {d.NLAYERS} layers,",
        f"- {len(d.TIMESTEPS)} Euler steps (dt = 1/3; the x-prediction head spans [-{d.D_SCALE}, {d.D_SCALE}], "
        "so the final",
        "  trajectory leaves [-1, 1] and clipping matters),",
        "- per-dimension de-normalisation: dim 4 de-normalised but not clipped, dim 5 clipped but not",
        "  de-normalised (a gripper in [-1, 1]), dim 6 passed through untouched,",
        "- a trace written under another exporter's tensor names, mapped back in [host.trace_keys].",
        "Generated (with its golden tensors, by the independent numpy reference) by",
        "`python3 xtask/scripts/gen_tiny_model.py --variant uneven`.",
    ]


def _full_width_header(d: Dims) -> list:
    return [
        "A synthetic model of the MolmoAct2 family at the REAL bundle's widths (never committed):",
        "the seven components, tensor names and ranks of the bundle, seq 130, 2 cameras x 16 tokens,",
        f"pixel_values [1,2,729,588], action [1,10,32]; LLM hidden {d.H}, {d.NQ} query / {d.NKV} KV heads of {d.HD}",
        f"(KV {d.KVW}), FFN {d.FFN}, {d.NSPLITS} splits of {'+'.join(map(str, d.SPLIT_LAYERS))} layer(s); "
        f"ViT {d.DV}, expert {d.E}.",
        "Random weights, golden tensors from the same numpy reference as the tiny model.",
        "Generated by `python3 xtask/scripts/gen_tiny_model.py --full-width DIR`.",
    ]


TINY_VARIANT = Variant(
    TINY,
    _tiny_header,
    "Embedded MolmoAct2-shaped test model (committed, a few MB)",
    "the tiny model is committed; regenerate it with `python3 xtask/scripts/gen_tiny_model.py` "
    "(needs numpy and onnx)",
)

UNEVEN_VARIANT = Variant(
    UNEVEN,
    _uneven_header,
    "Committed test model: uneven LLM splits, three Euler steps, per-dim de-normalisation, renamed trace keys",
    "the model is committed; regenerate it with `python3 xtask/scripts/gen_tiny_model.py --variant uneven` "
    "(needs numpy and onnx)",
)

FULL_WIDTH_VARIANT = Variant(
    FULL_WIDTH,
    _full_width_header,
    "Synthetic MolmoAct2-shaped model at the real bundle's widths (generated, ~2 GB, not committed)",
    "generate it with `python3 xtask/scripts/gen_tiny_model.py --full-width DIR` (needs numpy and onnx) "
    "and use DIR as the project root",
)

# The models whose files are committed (onnx/, golden/ and recipes/ of each), by name.
COMMITTED = {v.dims.name: v for v in (TINY_VARIANT, UNEVEN_VARIANT)}
