#!/usr/bin/env python3
"""Quantizes one component's float ONNX into a QDQ ONNX for QNN, with ONNX Runtime's QNN
quantization tooling (`onnxruntime.quantization.execution_providers.qnn`), and writes the
encodings the QAIRT SDK's `--quantization_overrides` reads. Run by `cargo xtask build-ctx`'s
quantize step in the pinned environment `target/quant-venv` (onnxruntime 1.24.4, the version
whose libraries the tool loads); not meant to be run by hand, though it can be:

    quantize.py --onnx onnx/tiny/action_step.onnx --samples calib.json --precision w8a16 \
        --out-dir STAGING --stem action_step

`--samples` names a JSON list of `.npz` files, one calibration sample each, keyed by the
graph's input names (the tool writes them from the golden, the chain trace or a folder).

Precisions and their ORT types (notes/quantization.md):
  w8a16: weights QUInt8 (symmetric), activations QUInt16
  w8a8:  weights QUInt8 (symmetric), activations QUInt8
  w4a16: weights QInt4 (symmetric: an asymmetric int4 zero-point of -1 runs wrongly on the
         emulated HTP), activations QUInt16; LayerNormalization weights stay 8-bit (the HTP
         refuses LayerNormalization with int4 weights, backendValidateOpConfig 3110)

--per-channel quantizes every weight per output channel, MatMul's included: ORT's QNN config
keeps a MatMul's weight per tensor unless an override names its axis, so the script names it
(axis 1 of a [K, N] weight, the output channels). The QNN EP lowers such a MatMul to a
FullyConnected with per-axis weights; measured on the emulated HTP (soc 77, one real-width
1152x4304 + 4304x1152 pair with per-column weight scales): w8a16 cosine 0.99769 per tensor,
0.99993 per channel; w4a16 0.822 and 0.981; the HTP's output within cosine 0.999998 of the
QDQ simulation's (scripts/probe-matmul-per-channel.py).

Writes into --out-dir: <stem>.qdq.onnx (external data <stem>.qdq.onnx.data when the model is
large), <stem>.encodings.json (AIMET format), and prints one JSON line with what it did.
Exit codes: 0 done, 2 bad input (named), 1 the quantizer failed.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from pathlib import Path

PRECISIONS = {
    # precision: (weight type, activation type)
    "w8a16": ("QUInt8", "QUInt16"),
    "w8a8": ("QUInt8", "QUInt8"),
    "w4a16": ("QInt4", "QUInt16"),
}
METHODS = {"minmax": "MinMax", "entropy": "Entropy", "percentile": "Percentile"}
# Above this many bytes of initializers the QDQ model is written with external data (protobuf
# cannot hold 2 GB in one message).
EXTERNAL_DATA_BYTES = 1 << 30


def bad_input(msg: str) -> None:
    print(f"quantize.py: {msg}", file=sys.stderr)
    sys.exit(2)


class NpzReader:
    """One calibration sample per .npz, each holding every graph input by name."""

    def __init__(self, files, input_names):
        import numpy as np

        self.samples = []
        for f in files:
            with np.load(f) as z:
                missing = [n for n in input_names if n not in z.files]
                if missing:
                    bad_input(f"calibration sample {f} has no {missing} (has {z.files})")
                self.samples.append({n: z[n] for n in input_names})
        self.i = 0

    def get_next(self):
        if self.i >= len(self.samples):
            return None
        self.i += 1
        return self.samples[self.i - 1]

    def rewind(self):
        self.i = 0


def layernorm_weight_overrides(model, weight_type):
    """8-bit overrides for LayerNormalization's scale and bias under int4 weights."""
    from onnxruntime.quantization import QuantType

    if weight_type != QuantType.QInt4:
        return {}
    inits = {i.name for i in model.graph.initializer}
    out = {}
    for node in model.graph.node:
        if node.op_type == "LayerNormalization":
            for name in node.input[1:]:
                if name in inits:
                    out[name] = [{"quant_type": QuantType.QUInt8, "symmetric": True}]
    return out


def matmul_weight_overrides(model, weight_type):
    """Per-output-channel overrides for every MatMul's rank-2 weight (input 1, [K, N]: axis 1).
    Without them ORT's QNN config quantizes MatMul weights per tensor, and one scale over a
    whole linear layer loses what its quietest columns carry."""
    inits = {i.name: i for i in model.graph.initializer}
    out = {}
    for node in model.graph.node:
        if node.op_type != "MatMul" or len(node.input) < 2:
            continue
        weight = inits.get(node.input[1])
        if weight is not None and len(weight.dims) == 2 and weight.dims[1] > 1:
            out[weight.name] = [{"quant_type": weight_type, "symmetric": True, "axis": 1}]
    return out


def excluded_nodes(model, exclude):
    """Node names to keep in float: every node whose name or op type is in `exclude`."""
    wanted = set(exclude)
    names = [n.name for n in model.graph.node if n.name in wanted or n.op_type in wanted]
    known = {n.name for n in model.graph.node} | {n.op_type for n in model.graph.node}
    unknown = sorted(wanted - known)
    if unknown:
        bad_input(f"exclude names {unknown}: neither a node name nor an operator type of the graph")
    return names


def encodings(qdq_model):
    """AIMET-format encodings of every quantized tensor: what --quantization_overrides reads.
    A tensor's encoding comes from the QuantizeLinear/DequantizeLinear that quantizes it."""
    import numpy as np
    from onnx import numpy_helper

    inits = {i.name: i for i in qdq_model.graph.initializer}
    consts = {}
    for n in qdq_model.graph.node:
        if n.op_type == "Constant":
            for a in n.attribute:
                if a.name == "value":
                    consts[n.output[0]] = a.t

    def array(name):
        t = inits.get(name) or consts.get(name)
        return None if t is None else numpy_helper.to_array(t)

    bits = {
        np.dtype("uint8"): (8, False), np.dtype("int8"): (8, True),
        np.dtype("uint16"): (16, False), np.dtype("int16"): (16, True),
    }
    act, param = {}, {}
    for n in qdq_model.graph.node:
        if n.op_type != "DequantizeLinear":
            continue
        scale = array(n.input[1])
        zp = array(n.input[2]) if len(n.input) > 2 and n.input[2] else None
        if scale is None:
            continue
        source = n.input[0]
        raw = array(source)
        if zp is not None and zp.dtype in bits:
            bw, signed = bits[zp.dtype]
        elif raw is not None and raw.dtype in bits:
            bw, signed = bits[raw.dtype]
        else:
            # int4 tensors come out of numpy_helper as int8/uint8 with 4-bit values.
            bw, signed = 4, True
        scales = np.atleast_1d(scale).astype(np.float64)
        zps = np.atleast_1d(zp if zp is not None else np.zeros_like(scales)).astype(np.float64)
        qmin = -(2 ** (bw - 1)) if signed else 0
        qmax = (2 ** (bw - 1)) - 1 if signed else 2**bw - 1
        entries = []
        for s, z in zip(scales, np.broadcast_to(zps, scales.shape)):
            entries.append({
                "bitwidth": bw,
                "dtype": "int",
                "is_symmetric": str(bool(signed and z == 0)),
                "min": float((qmin - z) * s),
                "max": float((qmax - z) * s),
                "offset": int(qmin - z),
                "scale": float(s),
            })
        # A weight's DequantizeLinear reads a quantized initializer named after the weight.
        if raw is not None:
            name = source[: -len("_quantized")] if source.endswith("_quantized") else source
            param[name] = entries
        else:
            q = next((m for m in qdq_model.graph.node
                      if m.op_type == "QuantizeLinear" and m.output[0] == source), None)
            act[q.input[0] if q is not None else source] = entries
    return {"version": "0.6.1", "activation_encodings": act, "param_encodings": param}


def unlinked_source(src, dst_dir):
    """The float graph read from a private copy when one of its external-data files has other
    hard links (a packaged bundle, a bisect's working copy link the project's files): the onnx
    checker refuses such a file as a possible hardlink attack. None when every file has one
    link (the graph is then read where it is)."""
    import onnx

    model = onnx.load(str(src), load_external_data=False)
    locations = sorted({
        e.value
        for t in model.graph.initializer
        if t.data_location == onnx.TensorProto.EXTERNAL
        for e in t.external_data
        if e.key == "location"
    })
    linked = [loc for loc in locations if os.stat(src.parent / loc).st_nlink > 1]
    if not linked:
        return None
    print(f"quantize.py: {', '.join(linked)} has other hard links; the onnx checker refuses "
          f"such a file, so the graph is read from a private copy in {dst_dir}", file=sys.stderr)
    if dst_dir.exists():
        shutil.rmtree(dst_dir)
    dst_dir.mkdir(parents=True)
    shutil.copyfile(src, dst_dir / src.name)
    for loc in locations:
        shutil.copyfile(src.parent / loc, dst_dir / loc)
    return dst_dir / src.name


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--samples", required=True, help="JSON list of calibration .npz files")
    ap.add_argument("--precision", required=True, choices=sorted(PRECISIONS))
    ap.add_argument("--method", default="minmax", choices=sorted(METHODS))
    ap.add_argument("--per-channel", action="store_true")
    ap.add_argument("--exclude", action="append", default=[])
    ap.add_argument("--out-dir", required=True)
    ap.add_argument("--stem", required=True)
    args = ap.parse_args()

    import onnx
    from onnxruntime.quantization import CalibrationMethod, QuantType, quantize
    from onnxruntime.quantization.execution_providers.qnn import (
        get_qnn_qdq_config,
        qnn_preprocess_model,
    )

    src = Path(args.onnx)
    if not src.is_file():
        bad_input(f"{src} does not exist")
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    private = unlinked_source(src, out_dir / f"{args.stem}.float")
    src = private or src
    files = json.loads(Path(args.samples).read_text())
    if not files:
        bad_input("no calibration samples")
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    started = time.time()

    # The QNN EP's fusions first (returns False when it changed nothing: then use the source).
    pre = out / f"{args.stem}.pre.onnx"
    model_path = src
    if qnn_preprocess_model(str(src), str(pre), save_as_external_data=True,
                            all_tensors_to_one_file=True,
                            external_data_location=f"{args.stem}.pre.onnx.data"):
        model_path = pre
    model = onnx.load(str(model_path), load_external_data=False)
    inputs = [i.name for i in model.graph.input
              if i.name not in {t.name for t in model.graph.initializer}]
    reader = NpzReader(files, inputs)

    wtype, atype = (getattr(QuantType, t) for t in PRECISIONS[args.precision])
    model_full = onnx.load(str(model_path))
    overrides = layernorm_weight_overrides(model_full, wtype)
    if args.per_channel:
        overrides.update(matmul_weight_overrides(model_full, wtype))
    config = get_qnn_qdq_config(
        str(model_path),
        reader,
        calibrate_method=getattr(CalibrationMethod, METHODS[args.method]),
        activation_type=atype,
        weight_type=wtype,
        per_channel=args.per_channel,
        weight_symmetric=True,
        init_overrides=overrides or None,
        nodes_to_exclude=excluded_nodes(model_full, args.exclude) or None,
    )
    weight_bytes = sum(len(t.raw_data) for t in model_full.graph.initializer)
    config.use_external_data_format = weight_bytes > EXTERNAL_DATA_BYTES
    qdq = out / f"{args.stem}.qdq.onnx"
    quantize(str(model_path), str(qdq), config)
    for left in (pre, out / f"{args.stem}.pre.onnx.data"):
        if left.exists():
            left.unlink()
    if private is not None:
        shutil.rmtree(private.parent)
    qdq_model = onnx.load(str(qdq), load_external_data=True)
    enc = encodings(qdq_model)
    (out / f"{args.stem}.encodings.json").write_text(json.dumps(enc, indent=1, sort_keys=True))
    ops = {}
    for n in qdq_model.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    print(json.dumps({
        "samples": len(reader.samples),
        "preprocessed": model_path == pre,
        "seconds": round(time.time() - started, 3),
        "quantize_linear": ops.get("QuantizeLinear", 0),
        "dequantize_linear": ops.get("DequantizeLinear", 0),
        "activation_encodings": len(enc["activation_encodings"]),
        "param_encodings": len(enc["param_encodings"]),
        "external_data": config.use_external_data_format,
        "onnxruntime": __import__("onnxruntime").__version__,
    }))


if __name__ == "__main__":
    try:
        main()
    except SystemExit:
        raise
    except Exception as e:  # the quantizer's own failure: say what, exit 1
        print(f"quantize.py: the quantizer failed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
