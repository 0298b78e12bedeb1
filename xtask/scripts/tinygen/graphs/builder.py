"""A small ONNX graph builder (opset 20, ir_version 10, float32 I/O, static shapes) and the
one way a model is saved: optional external data in one `<model>.onnx.data`, then the full
ONNX checker."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ..dims import IR_VERSION, LN_EPS, OPSET, RMS_EPS


class GraphBuilder:
    def __init__(self, name, sink=None):
        """`sink` (a `stream.ExternalData`): large initializers go straight to its data file
        as they are added, so a multi-GB graph is never held in memory."""
        self.name = name
        self.sink = sink
        self.nodes = []
        self.inits = []
        self.inputs = []
        self.outputs = []
        self.n = 0
        self._consts = {}

    def input(self, name, shape):
        self.inputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))
        return name

    def output(self, name, shape):
        self.outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, shape))

    def weight(self, name, arr):
        arr = np.ascontiguousarray(arr)
        assert arr.dtype in (np.float32, np.int64), (name, arr.dtype)
        if self.sink is not None and arr.nbytes >= 1024:
            self.inits.append(self.sink.tensor(name, arr))
        else:
            self.inits.append(numpy_helper.from_array(arr, name))
        return name

    def const(self, values, dtype=np.int64):
        arr = np.asarray(values, dtype=dtype)
        key = (arr.dtype.str, arr.shape, arr.tobytes())
        if key not in self._consts:
            self._consts[key] = self.weight(f"const_{len(self._consts)}", arr)
        return self._consts[key]

    def f32(self, value):
        """A float32 scalar constant (shared when the same value is asked for again)."""
        return self.const(np.float32(value), np.float32)

    def op(self, op_type, inputs, out=None, **attrs):
        self.n += 1
        out = out or f"{op_type.lower()}_{self.n}"
        self.nodes.append(helper.make_node(op_type, inputs, [out], name=f"{op_type}_{self.n}", **attrs))
        return out

    # helpers -------------------------------------------------------------
    def linear(self, x, w, b=None, out=None):
        y = self.op("MatMul", [x, w], out=None if b is not None else out)
        return self.op("Add", [y, b], out=out) if b is not None else y

    def silu(self, x, out=None):
        return self.op("Mul", [x, self.op("Sigmoid", [x])], out=out)

    def reshape(self, x, shape, out=None):
        return self.op("Reshape", [x, self.const(shape)], out=out)

    def transpose(self, x, perm, out=None):
        return self.op("Transpose", [x], out=out, perm=list(perm))

    def rmsnorm(self, x, w=None, out=None):
        sq = self.op("Mul", [x, x])
        ms = self.op("ReduceMean", [sq, self.const([-1])], keepdims=1)
        ms = self.op("Add", [ms, self.f32(RMS_EPS)])
        rs = self.op("Sqrt", [ms])
        y = self.op("Div", [x, rs], out=None if w is not None else out)
        return self.op("Mul", [y, w], out=out) if w is not None else y

    def layernorm(self, x, g, b):
        return self.op("LayerNormalization", [x, g, b], axis=-1, epsilon=LN_EPS)

    def swiglu(self, x, wg, wu, wd, out=None):
        g = self.silu(self.op("MatMul", [x, wg]))
        u = self.op("MatMul", [x, wu])
        return self.op("MatMul", [self.op("Mul", [g, u]), wd], out=out)

    def tanh_by_sigmoid(self, z):
        """tanh(z) built as 2 * Sigmoid(2z) - 1: the HTP fp16 Tanh kernel is a coarse
        approximation (~7e-3 abs error, measured); its Sigmoid is ~4x more accurate."""
        two = self.f32(2.0)
        sg = self.op("Sigmoid", [self.op("Mul", [z, two])])
        return self.op("Sub", [self.op("Mul", [sg, two]), self.f32(1.0)])

    def build(self):
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.inits)
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", OPSET)],
            producer_name="gen_tiny_model.py",
            producer_version="1",
        )
        model.ir_version = IR_VERSION
        return model


def save_onnx(model, path: Path, external: bool):
    """Writes `path` (and `path.data` when `external`), checks it; returns the files written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    data_name = path.name + ".data"
    data_path = path.parent / data_name
    if data_path.exists():
        data_path.unlink()  # onnx appends to existing external data files
    if external:
        onnx.save_model(
            model, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
            location=data_name, size_threshold=1024, convert_attribute=False,
        )
    else:
        onnx.save_model(model, str(path))
    onnx.checker.check_model(str(path), full_check=True)
    return [path] + ([data_path] if external else [])
