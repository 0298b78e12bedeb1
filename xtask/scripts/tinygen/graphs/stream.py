"""Streaming external data: each large initializer is appended to `<model>.onnx.data` the
moment the graph builder meets it, and the graph keeps only a reference (location, offset,
length). A real-size LLM split (3.6 GB of float32 weights, over protobuf's 2 GiB limit) is
then written while holding one layer's weights, never the whole graph; `onnx.save_model` of
the remaining proto is small. Tensors of 1 MiB or more start at a 64 KiB boundary, as
`onnx.external_data_helper` aligns them, so runtimes may memory-map them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

ALIGN_THRESHOLD = 1 << 20
ALIGNMENT = 1 << 16


class ExternalData:
    def __init__(self, data_path: Path):
        self.path = data_path
        data_path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(data_path, "wb")
        self.offset = 0

    def tensor(self, name: str, arr: np.ndarray) -> TensorProto:
        if arr.nbytes >= ALIGN_THRESHOLD and self.offset % ALIGNMENT:
            pad = ALIGNMENT - self.offset % ALIGNMENT
            self.file.write(b"\0" * pad)
            self.offset += pad
        t = TensorProto()
        t.name = name
        t.data_type = helper.np_dtype_to_tensor_dtype(arr.dtype)
        t.dims.extend(arr.shape)
        t.data_location = TensorProto.EXTERNAL
        for key, value in (("location", self.path.name), ("offset", str(self.offset)),
                           ("length", str(arr.nbytes))):
            entry = t.external_data.add()
            entry.key, entry.value = key, value
        self.file.write(memoryview(np.ascontiguousarray(arr)).cast("B"))
        self.offset += arr.nbytes
        return t

    def close(self):
        self.file.close()


def save_streamed(build, path: Path) -> list:
    """Builds the graph with `build(sink)` (weights streamed to `path.data`), saves the
    graph, runs the full ONNX checker on the path; returns the files written."""
    data_path = path.parent / (path.name + ".data")
    sink = ExternalData(data_path)
    try:
        model = build(sink)
    finally:
        sink.close()
    onnx.save_model(model, str(path))
    onnx.checker.check_model(str(path), full_check=True)
    return [path, data_path]
