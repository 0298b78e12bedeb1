"""The tiny MolmoAct2-shaped test models, their golden data and recipes.

Run it as `python3 xtask/scripts/gen_tiny_model.py [options]` (the thin entry point beside
this package). For a model it writes, under the project root `--root` (default: the
repository root):

  onnx/<model>/<component>.onnx         7 components, opset 20, ir_version 10,
                                        static shapes only
  onnx/<model>/llm_split{i}.onnx.data   external weights of the 4 LLM splits
  golden/<model>/<component>_io.npz     inputs + outputs of each component
  golden/<model>/trace.json, trace.npz  one full host-chain run
  recipes/<model>/model.toml, <component>.toml

The golden tensors are produced by an independent numpy reference implementation (float64
math on the float32 weights, stored as float32), never by onnxruntime. Output is
byte-for-byte deterministic (fixed seed, npz files written with fixed zip timestamps); see
golden/README.md for the file layout.

With ``--large-out DIR`` it instead writes a ~100 MB single-component benchmark model
(DIR/onnx/large/mlp.onnx + mlp.onnx.data and DIR/golden/large/mlp_io.npz), never committed.

With ``--full-width DIR`` it instead writes, into the project root DIR, a synthetic model at
the REAL widths of the bundle (~2 GB of float32 weights, never committed), every component with
external data, same schema and recipes as tiny. Widths: LLM hidden 2560, 32 q / 8 kv heads of
128, FFN 9728, one layer per split; ViT 1152 (16x72), MLP 4304, one layer, projector 1152 ->
9728 -> 2560; expert 768 (12x64), MLP 3072 (see variants.FULL_WIDTH). Takes ~45 s and ~3.3 GB
of RAM.

With ``--check`` it regenerates every committed model into a temporary folder and compares
byte for byte with the checkout (check.py).

Modules: dims (the shared I/O layout and `Dims`), variants (each model's widths and recipe
texts), weights (seeded weights), graphs/ (the ONNX builders, one module per component
family), reference (the float64 numpy forwards), inputs and chain (one host-chain run),
golden (npz and trace writing), toml_writer and recipes (recipes as data), host_keys (the
mirror of the Rust host trace-key list), model (one model's files), large (the benchmark
MLP), check (`--check`), cli (the options).

Dependencies: numpy and onnx, pinned in requirements.txt beside this file.
"""
