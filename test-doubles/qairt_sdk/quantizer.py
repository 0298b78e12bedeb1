"""TEST DOUBLE helper of `qairt-quantizer` (see quantizer.rs): turns the float graph a DLC of
the double carries into the QDQ graph the quantized DLC carries, with ONNX Runtime's QNN
quantization tooling standing in for Qualcomm's quantizer. Not Qualcomm's algorithm: only its
inputs and settings are the real tool's.

    quantizer.py JOB.json

JOB.json: {"graph", "out", "samples": [{input: [raw path, numpy dtype, shape]}],
"weights_bitwidth", "act_bitwidth", "per_channel", "calibration", "overrides"}.
`overrides` is the AIMET encodings file given to qairt-converter (or null): an activation's
encoding fixes its range (rmin/rmax), a parameter's encoding its bit width; every other tensor
is calibrated on the samples ("fill in the gaps", the qairt-quantizer docs).
"""
import json
import sys


def main():
    job = json.load(open(sys.argv[1]))
    import numpy as np
    import onnx
    from onnxruntime.quantization import CalibrationMethod, QuantType, quantize
    from onnxruntime.quantization.execution_providers.qnn import get_qnn_qdq_config

    graph = onnx.load(job["graph"], load_external_data=False)
    types = {i.name: onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type)
             for i in graph.graph.input}
    samples = []
    for s in job["samples"]:
        samples.append({n: np.fromfile(p, dtype=d).reshape(shape).astype(types[n])
                        for n, (p, d, shape) in s.items()})

    class Reader:
        def __init__(self):
            self.i = 0

        def get_next(self):
            if self.i >= len(samples):
                return None
            self.i += 1
            return samples[self.i - 1]

        def rewind(self):
            self.i = 0

    weight_types = {8: QuantType.QUInt8, 4: QuantType.QInt4}
    act_types = {8: QuantType.QUInt8, 16: QuantType.QUInt16}
    wtype = weight_types[job["weights_bitwidth"]]
    atype = act_types[job["act_bitwidth"]]
    overrides = {}
    symmetric = False
    enc = job.get("overrides")
    if enc:
        inits = {i.name for i in graph.graph.initializer}
        for name, entries in enc.get("activation_encodings", {}).items():
            if name in inits:
                continue
            overrides[name] = [{"rmin": np.float32(entries[0]["min"]),
                               "rmax": np.float32(entries[0]["max"])}]
        params = enc.get("param_encodings", {})
        symmetric = bool(params) and all(
            str(e[0].get("is_symmetric", "False")) == "True" for e in params.values()
        )
        for name, entries in params.items():
            bw = int(entries[0]["bitwidth"])
            if name in inits and bw != job["weights_bitwidth"] and bw in weight_types:
                overrides[name] = [{"quant_type": QuantType.QUInt8 if bw == 8 else QuantType.QInt4,
                                    "symmetric": True}]
    methods = {"min-max": CalibrationMethod.MinMax, "entropy": CalibrationMethod.Entropy,
               "percentile": CalibrationMethod.Percentile}
    config = get_qnn_qdq_config(
        job["graph"],
        Reader(),
        calibrate_method=methods[job["calibration"]],
        activation_type=atype,
        weight_type=wtype,
        per_channel=job["per_channel"],
        weight_symmetric=symmetric or wtype == QuantType.QInt4,
        init_overrides=overrides or None,
    )
    quantize(job["graph"], job["out"], config)


if __name__ == "__main__":
    main()
