//! What a bisect concludes, in one of three sentences, with the command to run next. A ranking
//! alone reads as "these operators are wrong" even when every cosine is 1.0; the verdict says
//! first whether anything deviates beyond rounding at all. The verdict itself is part of the
//! report's record (`bisect_report::Verdict`); this module decides it from the report.

use super::bisect_report::{BisectReport, Verdict, VerdictKind};

/// rel-L2 an output may reach from rounding alone: the conformance bounds (fp32 backends 1e-5,
/// the fp16 HTP 1e-2).
fn rounding_bound(fp16: bool) -> f64 {
    if fp16 { 1e-2 } else { 1e-5 }
}

/// An operator is "the culprit" when it introduces at least this many times the error of the
/// next one in the ranking…
const DOMINANT: f64 = 4.0;
/// …and at least this many times its worst input's (floored) error: a few units of roundoff
/// are what one fp32 MatMul or Softmax adds by itself (measured on the tiny vision graph on
/// the QNN CPU backend: at most 3.7).
const MIN_CULPRIT: f64 = 16.0;

pub fn judge(r: &BisectReport) -> Verdict {
    // The ranking floors exact inputs at fp16's unit roundoff on an fp16 HTP.
    let fp16 = r.exact_floor > 1e-6;
    let bound = rounding_bound(fp16);
    let worst = r.points.iter().map(|p| p.rel_l2_err).fold(0.0f64, |a, b| {
        if b.is_nan() { f64::INFINITY } else { a.max(b) }
    });
    let (c, b, m) = (&r.component, &r.backend, &r.model);
    let second = r.ranked.get(1).map_or(0.0, |x| x.introduced);
    let culprit = culprit_of(r, second);
    // A QDQ bisect measures quantization, not a backend: its next steps are the recipe's
    // quantize table and the CPU stage (the QDQ simulation) it is judged by.
    if r.qdq {
        return judge_qdq(r, worst, second, culprit);
    }
    if culprit.is_none() && worst <= bound {
        return Verdict {
            kind: VerdictKind::Rounding,
            sentence: format!(
                "nothing deviates beyond rounding: the worst of {} tensors has rel-L2 {worst:.1e} (≤ {bound:.0e}{}); no operator is at fault",
                r.points.len(),
                if fp16 { ", fp16" } else { ", fp32" }
            ),
            next: format!("cargo xtask parity --backend {b} --model {m} --only {c}"),
        };
    }
    match culprit {
        Some(top) => Verdict {
            kind: VerdictKind::OneCulprit,
            sentence: format!(
                "one culprit: {} `{}` multiplies its inputs' error by {:.3e} (the next operator by {second:.3e}; its output rel-L2 {:.1e}, cosine {})",
                top.op_type,
                top.node,
                top.introduced,
                top.rel_l2_err,
                xtask_runtime::report::fmt_cosine(top.cosine)
            ),
            next: format!(
                "cargo xtask conformance --model {m} --only {c} --op {} --backend {b}",
                top.op_type
            ),
        },
        _ => Verdict {
            kind: VerdictKind::Spread,
            sentence: if fp16 {
                format!(
                    "error spread evenly (fp16): no operator stands out; the worst tensor's rel-L2 {worst:.1e} is fp16 rounding accumulated over the graph"
                )
            } else {
                format!(
                    "error spread evenly: no operator stands out; the worst tensor's rel-L2 is {worst:.1e}"
                )
            },
            next: format!(
                "cargo xtask run --backend {b} --model {m} --iters 1 --warmup 0 --attribute"
            ),
        },
    }
}

/// The top of the ranking when it stands out: at least `MIN_CULPRIT` times its inputs' error
/// and `DOMINANT` times the next operator's.
fn culprit_of(r: &BisectReport, second: f64) -> Option<&super::rank::Ranked> {
    r.ranked
        .first()
        .filter(|top| top.introduced >= MIN_CULPRIT && top.introduced >= DOMINANT * second)
}

/// The verdict of a QDQ bisect (`--qdq`): where quantization loses, and the recipe lines
/// that change it. Every next command runs as printed.
fn judge_qdq(
    r: &BisectReport,
    worst: f64,
    second: f64,
    culprit: Option<&super::rank::Ranked>,
) -> Verdict {
    let (c, m) = (&r.component, &r.model);
    let rebuild = format!("cargo xtask build-ctx --model {m} --only {c}");
    match culprit {
        Some(top) => Verdict {
            kind: VerdictKind::OneCulprit,
            sentence: format!(
                "one culprit: quantization loses most at {} `{}` (it multiplies its inputs' error by {:.3e}, the next operator by {second:.3e}; its output rel-L2 {:.1e}): keep that node in float with `exclude = [\"{}\"]` in the recipe's [quantize] (`[\"{}\"]` would keep every {} in float), then rebuild",
                top.op_type,
                top.node,
                top.introduced,
                top.rel_l2_err,
                top.node,
                top.op_type,
                top.op_type
            ),
            next: rebuild,
        },
        None if worst <= 1e-5 => Verdict {
            kind: VerdictKind::Rounding,
            sentence: format!(
                "the QDQ graph matches the float graph to rel-L2 {worst:.1e}: quantization loses nothing measurable on the golden inputs"
            ),
            next: format!("cargo xtask parity --backend cpu --model {m} --only {c}"),
        },
        None => Verdict {
            kind: VerdictKind::Spread,
            sentence: format!(
                "the loss is spread over the graph (worst tensor rel-L2 {worst:.1e}): no one operator to exclude; quantize {c} less (another precision, or no [quantize] for fp16), or accept the measured figures as its gate ([quantize.gates.<precision>], with the reason), then rebuild"
            ),
            next: rebuild,
        },
    }
}
