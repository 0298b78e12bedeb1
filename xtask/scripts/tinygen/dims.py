"""The fixed I/O layout every generated model shares, and `Dims`: the widths of one model.

The layout (sequence, cameras, patches, action horizon) is the real bundle's, so every model
this generator writes has the bundle's tensor names and ranks; only the widths differ, and
they live in one `Dims` per model (see `variants`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SEED = 20240611
OPSET = 20
IR_VERSION = 10

F32 = np.float32

NSPLITS = 4  # LLM splits (contexts)
S = 130  # sequence length
VALID_LEN = 124

PATCH = 14
IMG = 378
GRID = IMG // PATCH  # 27
NPATCH = GRID * GRID  # 729
PDIM = PATCH * PATCH * 3  # 588
CAMS = 2
TOK_PER_CAM = 16

HORIZON = 10
ADIM = 32
ADIM_USED = 7
GRIPPER_DIM = 6
DT = 0.5
TIMESTEPS = [0.0, 0.5]
OUT_GAIN = 0.5  # gain of action_step's final Linear (E -> 32), see weights.make_action_step
# Gain of action_step's residual-branch output Linears (attention wo, MLP w_down).
# Like a trained expert, each layer only nudges the residual stream, so the fp16
# rounding of the 8 layers does not compound (HTP fp16 chain: actions max abs err
# ~2.4e-3 at 0.1 vs ~1.3e-2 at 0.5); cross-attention still moves the actions by
# 0.2-0.7 when k_ctx / v_ctx are wired wrongly.
RES_GAIN = 0.1
ADALN_GAIN = 0.3  # gain of action_step's AdaLN scale / shift Linears

RMS_EPS = 1e-6
LN_EPS = 1e-6
ATTN_MASK_VALUE = -65504.0  # fp16 most negative finite value
ACTION_MASK_SCALE = 30000.0

CAM_POS_START = [3, 22]
IMAGE_TOKEN_POSITIONS = np.concatenate(
    [np.arange(s, s + TOK_PER_CAM) for s in CAM_POS_START]
).astype(np.int64)

COMPONENTS = [
    "vision",
    "llm_split0",
    "llm_split1",
    "llm_split2",
    "llm_split3",
    "action_context",
    "action_step",
]

# (inputs, outputs) of each component, in graph order
IO_NAMES = {
    "vision": (["pixel_values"], ["image_embeds"]),
    **{
        f"llm_split{i}": (["hidden_states", "attention_bias"], ["hidden_out", "keys", "values"])
        for i in range(NSPLITS)
    },
    "action_context": (["keys", "values"], ["k_ctx", "v_ctx"]),
    "action_step": (
        ["trajectory", "timestep", "k_ctx", "v_ctx", "encoder_attention_mask", "action_dim_is_pad"],
        ["next_trajectory"],
    ),
}


@dataclass(frozen=True)
class Dims:
    """Widths of one generated model; every builder / reference takes one."""

    name: str  # onnx/<name>/, golden/<name>/
    H: int  # LLM hidden
    NQ: int  # query heads
    NKV: int  # kv heads
    HD: int  # head dim
    FFN: int
    SPLIT_LAYERS: tuple  # LLM layers of each split, in order (they may differ)
    DV: int  # ViT width
    VHEADS: int
    VHD: int
    VMLP: int
    VLAYERS: int
    PROJ_HIDDEN: int
    E: int  # expert width
    EHEADS: int
    EHD: int
    EMLP: int
    TDIM: int  # sinusoidal time-embedding width
    external: tuple  # components whose weights go to <component>.onnx.data
    # Flow matching: one Euler step per timestep, dt applied inside action_step.
    TIMESTEPS: tuple = tuple(TIMESTEPS)
    DT: float = DT
    # Range of action_step's x-prediction D = D_SCALE * tanh(z). Above 1 the final
    # trajectory leaves [-1, 1], so whether a dimension is clipped shows in the actions.
    D_SCALE: float = 1.0
    # Per used action dim: "clip+denorm", "clip", "denorm" or "pass" (recipe [host.denorm]);
    # None = every dim clipped and de-normalised except GRIPPER_DIM, which passes
    # (recipe `gripper_dim`).
    DENORM: tuple | None = None
    # (ours, theirs): trace.npz keys written under another exporter's names; the recipe maps
    # them back with [host.trace_keys]. `{i}` in a step key stands for the step.
    TRACE_KEYS: tuple = ()
    # action_context with ONE key and ONE value projection shared by every layer (the real
    # bundle's 4 MB context) instead of a projection per layer.
    CTX_SHARED: bool = False
    # Width of action_context's k_ctx / v_ctx (0: the expert width E). Narrower than E, the
    # expert's per-layer K/V projections map it up to E.
    CTXW: int = 0

    NSPLITS = NSPLITS

    def __post_init__(self):
        assert len(self.SPLIT_LAYERS) == NSPLITS, self.SPLIT_LAYERS

    @property
    def KVW(self):
        return self.NKV * self.HD

    @property
    def CW(self):
        """The context width action_context writes and action_step reads."""
        return self.CTXW or self.E

    @property
    def NLAYERS(self):
        return sum(self.SPLIT_LAYERS)

    def first_layer(self, split):
        """Global index of the first LLM layer of `split`."""
        return sum(self.SPLIT_LAYERS[:split])

    def denorm_modes(self):
        if self.DENORM is not None:
            assert len(self.DENORM) == ADIM_USED, self.DENORM
            return list(self.DENORM)
        return ["pass" if k == GRIPPER_DIM else "clip+denorm" for k in range(ADIM_USED)]

    def trace_key(self, ours, step=None):
        theirs = dict(self.TRACE_KEYS).get(ours, ours)
        return theirs if step is None else theirs.replace("{i}", str(step))
