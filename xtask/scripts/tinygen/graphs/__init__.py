"""The ONNX graphs of the components, one module per component family, on one small
`GraphBuilder` (builder.py)."""
