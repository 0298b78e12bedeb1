"""The independent numpy reference of every component: float64 arithmetic on the float32
weights (the caller casts results to float32). The golden tensors come from here, never
from onnxruntime, so they also catch export bugs in the graphs."""

from __future__ import annotations

import math

import numpy as np

from .dims import ACTION_MASK_SCALE, CAMS, F32, GRID, HORIZON, LN_EPS, NPATCH, PDIM, RMS_EPS, S, TOK_PER_CAM


def f64(a):
    return np.asarray(a, dtype=np.float64)


def silu(x):
    return x / (1.0 + np.exp(-x))


def softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=axis, keepdims=True)


def rmsnorm(x, w=None):
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + RMS_EPS)
    return y if w is None else y * f64(w)


def layernorm(x, g, b):
    mu = x.mean(axis=-1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=-1, keepdims=True)
    return (x - mu) / np.sqrt(var + LN_EPS) * f64(g) + f64(b)


def grid_sample(feat, grid):
    """GridSample mode=bilinear/linear, padding_mode=zeros, align_corners=0.
    feat [N,C,Hin,Win], grid [N,Ho,Wo,2] (x = width coord, y = height coord)."""
    n, c, hin, win = feat.shape
    _, ho, wo, _ = grid.shape
    out = np.zeros((n, c, ho, wo))
    for b in range(n):
        for i in range(ho):
            for j in range(wo):
                gx, gy = grid[b, i, j]
                ix = ((gx + 1.0) * win - 1.0) / 2.0
                iy = ((gy + 1.0) * hin - 1.0) / 2.0
                x0, y0 = math.floor(ix), math.floor(iy)
                wx1, wy1 = ix - x0, iy - y0
                acc = np.zeros(c)
                for yy, wy in ((y0, 1.0 - wy1), (y0 + 1, wy1)):
                    for xx, wx in ((x0, 1.0 - wx1), (x0 + 1, wx1)):
                        if 0 <= yy < hin and 0 <= xx < win:
                            acc += wy * wx * feat[b, :, yy, xx]
                out[b, :, i, j] = acc
    return out


def vision(d, w, pixel_values):
    x = vision_embed(w, pixel_values)
    for L in w["layers"]:
        x = vit_layer(d, L, x)
    return vision_tail(d, w, x)  # [32,64]


def vision_embed(w, pixel_values):
    x = f64(pixel_values).reshape(CAMS, NPATCH, PDIM)
    return x @ f64(w["patch_w"]) + f64(w["patch_b"]) + f64(w["pos"])


def vit_layer(d, L, x):
    h = layernorm(x, L["ln1_g"], L["ln1_b"])
    q = (h @ f64(L["wq"]) + f64(L["bq"])).reshape(CAMS, NPATCH, d.VHEADS, d.VHD).transpose(0, 2, 1, 3)
    k = (h @ f64(L["wk"]) + f64(L["bk"])).reshape(CAMS, NPATCH, d.VHEADS, d.VHD).transpose(0, 2, 1, 3)
    v = (h @ f64(L["wv"]) + f64(L["bv"])).reshape(CAMS, NPATCH, d.VHEADS, d.VHD).transpose(0, 2, 1, 3)
    a = softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(d.VHD)) @ v
    a = a.transpose(0, 2, 1, 3).reshape(CAMS, NPATCH, d.DV)
    x = x + a @ f64(L["wo"]) + f64(L["bo"])
    h = layernorm(x, L["ln2_g"], L["ln2_b"])
    return x + silu(h @ f64(L["w1"]) + f64(L["b1"])) @ f64(L["w2"]) + f64(L["b2"])


def vision_tail(d, w, x):
    x = layernorm(x, w["lnf_g"], w["lnf_b"])  # [2,729,48]
    pooled = x.mean(axis=1)  # [2,48]
    grid = np.tanh(pooled @ f64(w["grid_w"]) + f64(w["grid_b"])).reshape(CAMS, TOK_PER_CAM, 1, 2)
    fmap = x.transpose(0, 2, 1).reshape(CAMS, d.DV, GRID, GRID)
    s = grid_sample(fmap, grid)  # [2,48,16,1]
    t = s.reshape(CAMS, d.DV, TOK_PER_CAM).transpose(0, 2, 1).reshape(CAMS * TOK_PER_CAM, d.DV)
    return (silu(t @ f64(w["proj_w1"])) * (t @ f64(w["proj_w2"]))) @ f64(w["proj_w3"])


def llm_split(d, layers, hidden, attn_bias):
    x = f64(hidden)  # [1,S,H]
    bias_ = f64(attn_bias)  # [1,1,S,S]
    keys, values = [], []
    for L in layers:
        h = rmsnorm(x, L["in_norm"])
        q = (h @ f64(L["wq"])).reshape(1, S, d.NQ, d.HD).transpose(0, 2, 1, 3)
        kp = h @ f64(L["wk"])  # [1,S,32]
        vp = h @ f64(L["wv"])
        keys.append(kp)
        values.append(vp)
        k = kp.reshape(1, S, d.NKV, d.HD).transpose(0, 2, 1, 3)
        v = vp.reshape(1, S, d.NKV, d.HD).transpose(0, 2, 1, 3)
        rep = d.NQ // d.NKV
        k = np.repeat(k, rep, axis=1)  # query head h uses kv head h // rep
        v = np.repeat(v, rep, axis=1)
        sc = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d.HD) + bias_
        a = (softmax(sc) @ v).transpose(0, 2, 1, 3).reshape(1, S, d.NQ * d.HD)
        x = x + a @ f64(L["wo"])
        h = rmsnorm(x, L["post_norm"])
        x = x + (silu(h @ f64(L["w_gate"])) * (h @ f64(L["w_up"]))) @ f64(L["w_down"])
    return x, np.stack(keys), np.stack(values)


def action_context(w, keys, values):
    wk, wv = (w["wk"], w["wv"]) if "wk" in w else (w["w"], w["w"])
    k = rmsnorm(f64(keys) @ f64(wk), w["norm"])
    v = rmsnorm(f64(values) @ f64(wv), w["norm"])
    return k, v


def time_freqs(d):
    half = d.TDIM // 2
    return np.exp(-math.log(10000.0) * np.arange(half, dtype=np.float64) / half)


def action_step(d, w, traj, timestep, k_ctx, v_ctx, enc_mask, pad):
    traj = f64(traj)
    arg = f64(timestep).reshape(1, 1) * time_freqs(d).reshape(1, -1)
    temb = np.concatenate([np.sin(arg), np.cos(arg)], axis=-1)  # [1,32]
    temb = silu(temb @ f64(w["t_w1"]) + f64(w["t_b1"])) @ f64(w["t_w2"]) + f64(w["t_b2"])
    temb = temb.reshape(1, 1, d.E)
    x = traj @ f64(w["in_w"]) + f64(w["in_b"])  # [1,10,E]
    mbias = ((f64(enc_mask) - 1.0) * ACTION_MASK_SCALE).reshape(1, 1, 1, S)
    for l, L in enumerate(w["layers"]):
        scale = temb @ f64(L["scale_w"]) + f64(L["scale_b"])
        shift = temb @ f64(L["shift_w"]) + f64(L["shift_b"])
        h = rmsnorm(x) * (1.0 + scale) + shift
        q = (h @ f64(L["wq"])).reshape(1, HORIZON, d.EHEADS, d.EHD).transpose(0, 2, 1, 3)
        k = (f64(k_ctx[l]) @ f64(L["wk"])).reshape(1, S, d.EHEADS, d.EHD).transpose(0, 2, 1, 3)
        v = (f64(v_ctx[l]) @ f64(L["wv"])).reshape(1, S, d.EHEADS, d.EHD).transpose(0, 2, 1, 3)
        sc = q @ k.transpose(0, 1, 3, 2) / math.sqrt(d.EHD) + mbias
        a = (softmax(sc) @ v).transpose(0, 2, 1, 3).reshape(1, HORIZON, d.E)
        x = x + a @ f64(L["wo"])
        h = rmsnorm(x, L["mlp_norm"])
        x = x + (silu(h @ f64(L["w_gate"])) * (h @ f64(L["w_up"]))) @ f64(L["w_down"])
    # x-prediction flow matching: the network predicts the clean actions
    # D = tanh(z) = 2*sigmoid(2z) - 1 (bounded to [-1, 1], times D_SCALE); the velocity
    # towards them is v = (D - x_t) / (1 - t).  With timesteps [0, 0.5] and dt = 0.5 (or
    # [0, 1/3, 2/3] and dt = 1/3) the last Euler step lands on D, so the trajectory
    # stays within D's range.  dt is the float32 constant the graph holds.
    z = rmsnorm(x, w["final_norm"]) @ f64(w["out_w"]) + f64(w["out_b"])
    denoised = d.D_SCALE * (2.0 / (1.0 + np.exp(-2.0 * z)) - 1.0)
    vel = (denoised - traj) / (1.0 - f64(timestep).reshape(1, 1, 1))
    return (traj + float(F32(d.DT)) * vel) * (1.0 - f64(pad))
