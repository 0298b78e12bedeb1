"""One LLM split: RMSNorm, GQA attention with the additive `attention_bias` input, SwiGLU;
each layer's K/V projections concatenated as outputs (for action_context)."""

from __future__ import annotations

import math

import numpy as np

from ..dims import S
from .builder import GraphBuilder


def build(d, split, layers, sink=None):
    g = GraphBuilder(f"llm_split{split}", sink)
    x = g.input("hidden_states", [1, S, d.H])
    ab = g.input("attention_bias", [1, 1, S, S])
    scale = g.const(np.float32(1.0 / math.sqrt(d.HD)), np.float32)
    rep_idx = g.const(np.repeat(np.arange(d.NKV), d.NQ // d.NKV))  # [0,0,1,1]
    ks, vs = [], []
    for i, L in enumerate(layers):
        li = d.first_layer(split) + i
        p = f"model.layers.{li}."
        W = lambda k: g.weight(p + k, L[k])  # noqa: E731
        h = g.rmsnorm(x, W("in_norm"))
        q = g.transpose(g.reshape(g.op("MatMul", [h, W("wq")]), [1, S, d.NQ, d.HD]), [0, 2, 1, 3])
        kp = g.op("MatMul", [h, W("wk")])  # [1,S,32]
        vp = g.op("MatMul", [h, W("wv")])
        ks.append(g.reshape(kp, [1, 1, S, d.KVW]))
        vs.append(g.reshape(vp, [1, 1, S, d.KVW]))
        # GQA: repeat kv heads with a constant-index Gather (all tensors stay 4-D)
        kt = g.transpose(g.reshape(kp, [1, S, d.NKV, d.HD]), [0, 2, 3, 1])  # [1,2,16,S]
        kt = g.op("Gather", [kt, rep_idx], axis=1)  # [1,4,16,S]
        v = g.transpose(g.reshape(vp, [1, S, d.NKV, d.HD]), [0, 2, 1, 3])  # [1,2,S,16]
        v = g.op("Gather", [v, rep_idx], axis=1)  # [1,4,S,16]
        sc = g.op("Add", [g.op("Mul", [g.op("MatMul", [q, kt]), scale]), ab])
        a = g.op("MatMul", [g.op("Softmax", [sc], axis=-1), v])  # [1,4,S,16]
        a = g.reshape(g.transpose(a, [0, 2, 1, 3]), [1, S, d.NQ * d.HD])
        x = g.op("Add", [x, g.op("MatMul", [a, W("wo")])])
        h = g.rmsnorm(x, W("post_norm"))
        last = i == len(layers) - 1
        x = g.op("Add", [x, g.swiglu(h, W("w_gate"), W("w_up"), W("w_down"))], out="hidden_out" if last else None)
    g.op("Concat", ks, out="keys", axis=0)
    g.op("Concat", vs, out="values", axis=0)
    g.output("hidden_out", [1, S, d.H])
    g.output("keys", [len(layers), 1, S, d.KVW])
    g.output("values", [len(layers), 1, S, d.KVW])
    return g.build()
