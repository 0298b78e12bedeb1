"""The action expert: `action_context` (per-layer K/V projections of the LLM's K/V, once per
decision) and `action_step` (one x-prediction flow-matching Euler step, dt in-graph)."""

from __future__ import annotations

import math

import numpy as np

from ..dims import ACTION_MASK_SCALE, ADIM, F32, HORIZON, S
from ..reference import time_freqs
from .builder import GraphBuilder


def build_context(d, w, sink=None):
    g = GraphBuilder("action_context", sink)
    k = g.input("keys", [d.NLAYERS, 1, S, d.KVW])
    v = g.input("values", [d.NLAYERS, 1, S, d.KVW])
    if d.CTX_SHARED:
        pk = g.weight("context_proj.k.weight", w["wk"])
        pv = g.weight("context_proj.v.weight", w["wv"])
    else:
        pk = pv = g.weight("context_proj.weight", w["w"])
    nw = g.weight("context_norm.weight", w["norm"])
    if d.CTX_SHARED:
        # One [tokens, KVW] x [KVW, E] product per tensor (2-D, as a Linear exports): the
        # HTP stores a 2-D MatMul's weights in fp16, a 4-D batched one's in float32
        # (measured at the real size: 9.30 MB against 4.2 MB of fp16 weights).
        def project(x, p):
            flat = g.reshape(x, [d.NLAYERS * S, d.KVW])
            return g.reshape(g.op("MatMul", [flat, p]), [d.NLAYERS, 1, S, d.CW])

        g.rmsnorm(project(k, pk), nw, out="k_ctx")
        g.rmsnorm(project(v, pv), nw, out="v_ctx")
    else:
        g.rmsnorm(g.op("MatMul", [k, pk]), nw, out="k_ctx")
        g.rmsnorm(g.op("MatMul", [v, pv]), nw, out="v_ctx")
    g.output("k_ctx", [d.NLAYERS, 1, S, d.CW])
    g.output("v_ctx", [d.NLAYERS, 1, S, d.CW])
    return g.build()


def build_step(d, w, sink=None):
    g = GraphBuilder("action_step", sink)
    traj = g.input("trajectory", [1, HORIZON, ADIM])
    ts = g.input("timestep", [1])
    kc = g.input("k_ctx", [d.NLAYERS, 1, S, d.CW])
    vc = g.input("v_ctx", [d.NLAYERS, 1, S, d.CW])
    em = g.input("encoder_attention_mask", [1, S])
    pad = g.input("action_dim_is_pad", [1, ADIM])
    # sinusoidal time embedding
    arg = g.op("Mul", [g.reshape(ts, [1, 1]), g.const(time_freqs(d).astype(F32).reshape(1, -1), np.float32)])
    temb = g.op("Concat", [g.op("Sin", [arg]), g.op("Cos", [arg])], axis=-1)  # [1,32]
    temb = g.reshape(temb, [1, 1, d.TDIM])
    temb = g.linear(g.silu(g.linear(temb, g.weight("time_mlp.w1", w["t_w1"]), g.weight("time_mlp.b1", w["t_b1"]))),
                    g.weight("time_mlp.w2", w["t_w2"]), g.weight("time_mlp.b2", w["t_b2"]))  # [1,1,E]
    x = g.linear(traj, g.weight("action_in.weight", w["in_w"]), g.weight("action_in.bias", w["in_b"]))
    mb = g.op("Mul", [g.op("Sub", [em, g.f32(1.0)]), g.f32(ACTION_MASK_SCALE)])
    mb = g.reshape(mb, [1, 1, 1, S])
    scale = g.f32(1.0 / math.sqrt(d.EHD))
    one = g.f32(1.0)
    for l, L in enumerate(w["layers"]):
        p = f"expert.layers.{l}."
        W = lambda k: g.weight(p + k, L[k])  # noqa: E731
        sc_ = g.linear(temb, W("scale_w"), W("scale_b"))
        sh_ = g.linear(temb, W("shift_w"), W("shift_b"))
        h = g.op("Add", [g.op("Mul", [g.rmsnorm(x), g.op("Add", [sc_, one])]), sh_])
        q = g.transpose(g.reshape(g.op("MatMul", [h, W("wq")]), [1, HORIZON, d.EHEADS, d.EHD]), [0, 2, 1, 3])
        idx = g.const(np.int64(l))
        kl = g.op("Gather", [kc, idx], axis=0)  # [1,S,CW]
        vl = g.op("Gather", [vc, idx], axis=0)
        kt = g.transpose(g.reshape(g.op("MatMul", [kl, W("wk")]), [1, S, d.EHEADS, d.EHD]), [0, 2, 3, 1])
        v = g.transpose(g.reshape(g.op("MatMul", [vl, W("wv")]), [1, S, d.EHEADS, d.EHD]), [0, 2, 1, 3])
        s = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, kt]), scale]), mb])
        a = g.op("MatMul", [g.op("Softmax", [s], axis=-1), v])
        a = g.reshape(g.transpose(a, [0, 2, 1, 3]), [1, HORIZON, d.E])
        x = g.op("Add", [x, g.op("MatMul", [a, W("wo")])])
        h = g.rmsnorm(x, W("mlp_norm"))
        x = g.op("Add", [x, g.swiglu(h, W("w_gate"), W("w_up"), W("w_down"))])
    z = g.linear(g.rmsnorm(x, g.weight("final_norm.weight", w["final_norm"])),
                 g.weight("action_out.weight", w["out_w"]), g.weight("action_out.bias", w["out_b"]))
    # x-prediction: denoised = tanh(z) (by Sigmoid, see GraphBuilder.tanh_by_sigmoid);
    # velocity = (denoised - trajectory) / (1 - timestep).
    den = g.tanh_by_sigmoid(z)
    if d.D_SCALE != 1.0:
        den = g.op("Mul", [den, g.f32(d.D_SCALE)])
    inv = g.op("Reciprocal", [g.op("Sub", [one, ts])])  # [1], broadcast over [1,10,32]
    vel = g.op("Mul", [g.op("Sub", [den, traj]), inv])
    y = g.op("Add", [traj, g.op("Mul", [vel, g.f32(d.DT)])])
    keep = g.op("Sub", [one, pad])
    g.op("Mul", [y, keep], out="next_trajectory")
    g.output("next_trajectory", [1, HORIZON, ADIM])
    return g.build()
