"""Seeded random weights of each component: one independent, stable generator per named
weight group, so changing one component's widths never reshuffles another's weights."""

from __future__ import annotations

import hashlib
import math

import numpy as np

from .dims import ADALN_GAIN, ADIM, F32, GRID, NPATCH, OUT_GAIN, PDIM, RES_GAIN, SEED, TOK_PER_CAM


def rng_for(name: str) -> np.random.Generator:
    """Independent, stable generator per named weight group."""
    h = int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "little")
    return np.random.default_rng([SEED, h])


def linear_w(rng, fan_in, fan_out, gain=1.0):
    return (rng.standard_normal((fan_in, fan_out)) * (gain / math.sqrt(fan_in))).astype(F32)


def linear_w32(rng, fan_in, fan_out, gain=1.0):
    """`linear_w` drawn directly in float32: half the memory and time, for the real-size
    model's billions of weights (other values than `linear_w`, so never for committed models)."""
    w = rng.standard_normal((fan_in, fan_out), dtype=np.float32)
    w *= np.float32(gain / math.sqrt(fan_in))
    return w


def bias(rng, n, scale=0.02):
    return (rng.standard_normal(n) * scale).astype(F32)


def norm_w(rng, shape):
    return (1.0 + 0.1 * rng.standard_normal(shape)).astype(F32)


def smooth_pos_embed(d, r):
    """Low-frequency 2-D sinusoids per channel: a smooth position embedding
    (like a trained ViT's) keeps the 27x27 feature map smooth, so the bilinear
    GridSample is not overly sensitive to fp16 error in the sample points."""
    yy, xx = np.mgrid[0:GRID, 0:GRID].astype(np.float64) / GRID
    f = r.uniform(-1.5, 1.5, (2, d.DV, 2))
    ph = r.uniform(0, 2 * np.pi, (2, d.DV))
    pos = np.zeros((GRID, GRID, d.DV))
    for k in range(2):
        for c in range(d.DV):
            pos[..., c] += 0.2 * np.sin(2 * np.pi * (f[k, c, 0] * xx + f[k, c, 1] * yy) + ph[k, c])
    return pos.reshape(NPATCH, d.DV).astype(F32)


def vision_layer(d, r, lin=linear_w):
    """One ViT layer's weights, drawn from `r` in a fixed order."""
    return {
        "ln1_g": norm_w(r, d.DV), "ln1_b": bias(r, d.DV),
        "wq": lin(r, d.DV, d.DV), "bq": bias(r, d.DV),
        "wk": lin(r, d.DV, d.DV), "bk": bias(r, d.DV),
        "wv": lin(r, d.DV, d.DV), "bv": bias(r, d.DV),
        "wo": lin(r, d.DV, d.DV, 0.5), "bo": bias(r, d.DV),
        "ln2_g": norm_w(r, d.DV), "ln2_b": bias(r, d.DV),
        "w1": lin(r, d.DV, d.VMLP), "b1": bias(r, d.VMLP),
        "w2": lin(r, d.VMLP, d.DV, 0.5), "b2": bias(r, d.DV),
    }


def make_vision(d):
    r = rng_for("vision")
    w = {
        "patch_w": linear_w(r, PDIM, d.DV),
        "patch_b": bias(r, d.DV),
        "pos": smooth_pos_embed(d, r),
        "layers": [],
    }
    for _ in range(d.VLAYERS):
        w["layers"].append(vision_layer(d, r))
    w["lnf_g"] = norm_w(r, d.DV)
    w["lnf_b"] = bias(r, d.DV)
    # Grid sampler: mostly driven by the bias so that the 16 points per camera
    # are spread over the 27x27 map; the pooled features perturb them per camera.
    # (Small gain: on HTP fp16 the pooled mean carries ~2e-3 rounding error and
    # GridSample amplifies coordinate error by the feature-map gradient.)
    w["grid_w"] = linear_w(r, d.DV, TOK_PER_CAM * 2, 0.5)
    w["grid_b"] = r.uniform(-1.3, 1.3, TOK_PER_CAM * 2).astype(F32)
    w["proj_w1"] = linear_w(r, d.DV, d.PROJ_HIDDEN)
    w["proj_w2"] = linear_w(r, d.DV, d.PROJ_HIDDEN)
    w["proj_w3"] = linear_w(r, d.PROJ_HIDDEN, d.H)
    return w


def llm_layer(d, r, lin=linear_w):
    """One LLM decoder layer's weights, drawn from `r` in a fixed order."""
    return {
        "in_norm": norm_w(r, d.H),
        "wq": lin(r, d.H, d.NQ * d.HD),
        "wk": lin(r, d.H, d.KVW),
        "wv": lin(r, d.H, d.KVW),
        "wo": lin(r, d.NQ * d.HD, d.H, 0.5),
        "post_norm": norm_w(r, d.H),
        "w_gate": lin(r, d.H, d.FFN),
        "w_up": lin(r, d.H, d.FFN),
        "w_down": lin(r, d.FFN, d.H, 0.5),
    }


def make_llm(d, split):
    r = rng_for(f"llm_split{split}")
    layers = []
    for _ in range(d.SPLIT_LAYERS[split]):
        layers.append(llm_layer(d, r))
    return layers


def make_action_context(d):
    r = rng_for("action_context")
    return {
        "w": (r.standard_normal((d.NLAYERS, 1, d.KVW, d.E)) / math.sqrt(d.KVW)).astype(F32),
        "norm": norm_w(r, (d.NLAYERS, 1, 1, d.E)),
    }


def action_layer(d, r, lin=linear_w):
    """One action-expert layer's weights (AdaLN, cross-attention, SwiGLU), drawn from `r`."""
    return {
        "scale_w": lin(r, d.E, d.E, ADALN_GAIN), "scale_b": bias(r, d.E),
        "shift_w": lin(r, d.E, d.E, ADALN_GAIN), "shift_b": bias(r, d.E),
        "wq": lin(r, d.E, d.E), "wk": lin(r, d.CW, d.E),
        "wv": lin(r, d.CW, d.E), "wo": lin(r, d.E, d.E, RES_GAIN),
        "mlp_norm": norm_w(r, d.E),
        "w_gate": lin(r, d.E, d.EMLP), "w_up": lin(r, d.E, d.EMLP),
        "w_down": lin(r, d.EMLP, d.E, RES_GAIN),
    }


def make_action_step(d):
    r = rng_for("action_step")
    w = {
        "t_w1": linear_w(r, d.TDIM, d.E), "t_b1": bias(r, d.E),
        "t_w2": linear_w(r, d.E, d.E), "t_b2": bias(r, d.E),
        "in_w": linear_w(r, ADIM, d.E), "in_b": bias(r, d.E),
        "layers": [],
    }
    for _ in range(d.NLAYERS):
        w["layers"].append(action_layer(d, r))
    w["final_norm"] = norm_w(r, d.E)
    # Gain 0.5 keeps the pre-activation z of the bounded x-prediction head
    # D = tanh(z) mostly inside |z| < ~1.5, so D spreads over about [-0.9, 0.9]
    # instead of saturating at +-1 (see reference.action_step).
    w["out_w"] = linear_w(r, d.E, ADIM, OUT_GAIN)
    w["out_b"] = bias(r, ADIM)
    return w


class Weights:
    """Every component's weights of one model, drawn once (the graphs and the reference
    share them)."""

    def __init__(self, d):
        self.vision = make_vision(d)
        self.llm = [make_llm(d, i) for i in range(d.NSPLITS)]
        self.action_context = make_action_context(d)
        self.action_step = make_action_step(d)
