"""golden/<model>/: each component's `<component>_io.npz`, the chain's `trace.npz` (under the
exporter's names where the model says so) and `trace.json` (its metadata; schema in
golden/README.md). npz files are written with fixed zip metadata, so they are byte-identical
from run to run."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np

from .chain import ChainRun
from .dims import (
    ACTION_MASK_SCALE, ADIM, ADIM_USED, ATTN_MASK_VALUE, CAMS, COMPONENTS, GRIPPER_DIM, HORIZON, IMG,
    IO_NAMES, PATCH, S, SEED, TOK_PER_CAM, VALID_LEN,
)

GENERATOR = "xtask/scripts/gen_tiny_model.py"


def save_npz(path: Path, arrays: dict) -> None:
    """Equivalent of np.savez_compressed, but with fixed zip metadata so the
    file is byte-identical across runs."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key, arr in arrays.items():
            buf = io.BytesIO()
            np.lib.format.write_array(buf, np.ascontiguousarray(arr), allow_pickle=False)
            zi = zipfile.ZipInfo(key + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            zi.external_attr = 0o644 << 16
            zf.writestr(zi, buf.getvalue(), compresslevel=9)


def trace_under_their_names(d, run: ChainRun) -> dict:
    """The trace tensors under the exporter's names where d.TRACE_KEYS says so."""
    trace = {}
    for key, arr in run.trace.items():
        if key in run.steps:
            step = int(key[len("trajectory_step"):-len("_out")])
            trace[d.trace_key("trajectory_step{i}_out", step)] = arr
        else:
            trace[d.trace_key(key)] = arr
    return trace


def write_golden(d, run: ChainRun, gold_dir: Path) -> list:
    """Writes golden/<model>/ and returns the files written."""
    written = []
    for comp in COMPONENTS:
        assert list(run.golden[comp]) == IO_NAMES[comp][0] + IO_NAMES[comp][1], comp
        p = gold_dir / f"{comp}_io.npz"
        save_npz(p, run.golden[comp])
        written.append(p)

    trace = trace_under_their_names(d, run)
    p = gold_dir / "trace.npz"
    save_npz(p, trace)
    written.append(p)

    p = gold_dir / "trace.json"
    p.write_text(json.dumps(trace_meta(d, run, trace), indent=2) + "\n")
    written.append(p)
    return written


def trace_meta(d, run: ChainRun, trace: dict) -> dict:
    golden = run.golden
    return {
        "format": "molmoact2-trace.v1",
        "model": d.name,
        "seq_len": S,
        "valid_len": VALID_LEN,
        "hidden_size": d.H,
        "num_layers": d.NLAYERS,
        "num_llm_splits": d.NSPLITS,
        **({"llm_split_layers": list(d.SPLIT_LAYERS)} if len(set(d.SPLIT_LAYERS)) > 1 else {}),
        "image_tokens_per_camera": TOK_PER_CAM,
        "cameras": CAMS,
        "image_size": IMG,
        "patch_size": PATCH,
        "pixel_layout": "patch index p = row*27+col; within patch (dy, dx, c); value = u8/255*2-1",
        "num_flow_steps": len(d.TIMESTEPS),
        "dt": d.DT,
        "timesteps": list(d.TIMESTEPS),
        "action_horizon": HORIZON,
        "action_dim": ADIM,
        "action_dim_used": ADIM_USED,
        **({
            "gripper_dim": GRIPPER_DIM,
            "norm_mode": "q01_q99",
            "norm_formula": "dims != gripper_dim: (clip(a,-1,1)+1)*(q99-q01)/2+q01; gripper_dim passes through",
        } if d.DENORM is None else {
            "denorm": list(d.DENORM),
            "norm_mode": "q01_q99",
            "norm_formula": "per dim: 'clip' = clip(a,-1,1); 'denorm' = (a+1)*(q99-q01)/2+q01; "
                            "'clip+denorm' = both, in that order; 'pass' = unchanged",
        }),
        **({"trace_keys": dict(d.TRACE_KEYS)} if d.TRACE_KEYS else {}),
        "attention_mask_value": ATTN_MASK_VALUE,
        "attention_mask_value_note": (
            "Blocked entries of attention_bias are -65504.0, the most negative finite fp16 value. "
            "The PyTorch default, torch.finfo(torch.float32).min (-3.4e38), is not representable "
            "in fp16: on the HTP fp16 path it goes out of range and the mask is effectively "
            "inverted (blocked positions get attended), so masks must be clamped to -65504.0."
        ),
        "encoder_mask_note": "action_step builds its cross-attention bias as (encoder_attention_mask - 1) * 30000 in-graph",
        "encoder_mask_scale": ACTION_MASK_SCALE,
        "components": {
            comp: {
                "onnx": f"onnx/{d.name}/{comp}.onnx",
                "external_data": f"onnx/{d.name}/{comp}.onnx.data" if comp in d.external else None,
                "golden": f"golden/{d.name}/{comp}_io.npz",
                "inputs": {k: list(golden[comp][k].shape) for k in IO_NAMES[comp][0]},
                "outputs": {k: list(golden[comp][k].shape) for k in IO_NAMES[comp][1]},
            }
            for comp in COMPONENTS
        },
        "action_step_golden": "action_step_io.npz holds the first Euler step (timestep 0.0)",
        "npz": "trace.npz",
        "arrays": {
            k: {"shape": list(v.shape), "dtype": str(v.dtype)} for k, v in trace.items()
        },
        "generator": GENERATOR,
        "seed": SEED,
    }
