#!/usr/bin/env python3
"""Per-tensor against per-channel MatMul weights on the emulated HTP: one real-width pair of
linear layers (1152x4304, ReLU, 4304x1152 over 729 tokens, the vision's MLP shape), weights
with per-column scales as trained layers have, quantized with ORT's QNN tooling per tensor
and with `crates/runtime/scripts/quantize/quantize.py`'s own per-channel MatMul overrides, each
run twice: the QDQ simulation on ORT's
CPU EP and the QNN EP's HTP (soc 77, v73; the x86 libraries emulate it). Prints the cosine of
each against the float graph. The figures in docs/quantization.md come from it:

    target/quant-venv/bin/python scripts/probe-matmul-per-channel.py \\
        --runtime target/qnn-runtime/ort-1.24.4-qnn-2.3.0 [--weights w8|w4] [--work DIR]

(`cargo xtask doctor --quantizer` makes the venv; any `cargo xtask` HTP command the runtime.)
About a minute per weight type on 2 cores. Writes only into --work (default target/probe-pcm).
"""
import argparse
import os
import sys
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import QuantType, quantize
from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "runtime", "scripts", "quantize"))
from quantize import matmul_weight_overrides  # noqa: E402  (the quantizer's own overrides)

K, N, T = 1152, 4304, 729


def float_model(path, rng):
    colscale = np.exp(rng.normal(0, 1.0, N)).astype(np.float32) * 0.02
    w1 = rng.normal(0, 1, (K, N)).astype(np.float32) * colscale
    w2 = rng.normal(0, 1, (N, K)).astype(np.float32) * 0.02
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, T, K])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, T, K])
    nodes = [
        helper.make_node("MatMul", ["x", "W1"], ["h"], name="mm1"),
        helper.make_node("Relu", ["h"], ["r"], name="relu"),
        helper.make_node("MatMul", ["r", "W2"], ["y"], name="mm2"),
    ]
    inits = [numpy_helper.from_array(w1, "W1"), numpy_helper.from_array(w2, "W2")]
    graph = helper.make_graph(nodes, "pair", [x], [y], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    onnx.save(model, path)


class Samples:
    def __init__(self, xs):
        self.xs, self.i = xs, 0

    def get_next(self):
        if self.i >= len(self.xs):
            return None
        self.i += 1
        return {"x": self.xs[self.i - 1]}

    def rewind(self):
        self.i = 0


def cosine(a, b):
    a, b = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runtime", required=True, help="the unpacked ORT + QNN runtime folder")
    ap.add_argument("--weights", choices=["w8", "w4"], default="w8")
    ap.add_argument("--work", default="target/probe-pcm")
    args = ap.parse_args()
    wtype = {"w8": QuantType.QUInt8, "w4": QuantType.QInt4}[args.weights]
    os.makedirs(args.work, exist_ok=True)
    rng = np.random.default_rng(0)
    src = os.path.join(args.work, "float.onnx")
    float_model(src, rng)
    calib = [rng.normal(0, 1, (1, T, K)).astype(np.float32) for _ in range(4)]
    x = rng.normal(0, 1, (1, T, K)).astype(np.float32)
    gold = ort.InferenceSession(src, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    # ORT resolves a relative library path against its own package folder: make it absolute.
    lib = os.path.abspath(os.path.join(args.runtime, "onnxruntime_qnn", "libonnxruntime_providers_qnn.so"))
    ort.register_execution_provider_library("QNNExecutionProvider", lib)
    devices = [d for d in ort.get_ep_devices() if d.ep_name == "QNNExecutionProvider"]
    per_tensor = {w: [{"quant_type": wtype, "symmetric": True}] for w in ("W1", "W2")}
    per_channel = matmul_weight_overrides(onnx.load(src), wtype)
    for label, overrides in [("per tensor", per_tensor), ("per channel", per_channel)]:
        config = get_qnn_qdq_config(
            src, Samples(calib), activation_type=QuantType.QUInt16, weight_type=wtype,
            per_channel=True, weight_symmetric=True, init_overrides=overrides,
        )
        qdq = os.path.join(args.work, f"{label.replace(' ', '-')}.qdq.onnx")
        quantize(src, qdq, config)
        sim = ort.InferenceSession(qdq, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        options = ort.SessionOptions()
        options.add_session_config_entry("session.disable_cpu_ep_fallback", "1")
        options.add_provider_for_devices(devices, {"backend_type": "htp", "soc_model": "77", "htp_arch": "73"})
        started = time.time()
        htp = ort.InferenceSession(qdq, options).run(None, {"x": x})[0]
        print(f"{args.weights}a16 {label}: QDQ simulation {cosine(sim, gold):.8f}, "
              f"emulated HTP {cosine(htp, gold):.8f} ({time.time() - started:.1f} s), "
              f"HTP vs simulation {cosine(htp, sim):.8f}", flush=True)


if __name__ == "__main__":
    main()
