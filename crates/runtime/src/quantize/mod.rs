//! Quantized components: the pinned Python environment ONNX Runtime's QNN quantizer runs in
//! (`env`), the calibration samples it is fed (`calibration`), and the step that turns a
//! component's float ONNX into a QDQ ONNX plus AIMET encodings (`step`). The precision is a
//! recipe value (`recipe::quantize`); the steps after quantize compile and prove the QDQ graph
//! (`ctx_build`), always against the float golden.

pub mod calibration;
pub mod env;
