//! The bisect report's two tables (the ranked operators, every tensor along the graph), shared
//! by its Markdown and its HTML page.

use super::rank::Ranked;
use super::tensor_point::TensorPoint;
use xtask_runtime::report::{fmt_cosine, md_table};

/// The ranked operators as a table, largest error introduced first.
pub(super) fn ranked_table(ranked: &[Ranked]) -> String {
    md_table(
        &[
            "rank",
            "op",
            "node",
            "output",
            "introduced",
            "rel L2",
            "cosine",
            "worst input",
            "its rel L2",
        ],
        ranked.iter().enumerate().map(|(i, x)| {
            vec![
                (i + 1).to_string(),
                x.op_type.clone(),
                format!("`{}`", x.node),
                format!("`{}`", x.tensor),
                format!("{:.3e}", x.introduced),
                format!("{:.3e}", x.rel_l2_err),
                fmt_cosine(x.cosine),
                x.worst_input
                    .as_deref()
                    .map_or("-".into(), |w| format!("`{w}`")),
                format!("{:.3e}", x.worst_input_rel_l2),
            ]
        }),
    )
}

/// Every tensor compared, in topological order.
pub(super) fn points_table(points: &[TensorPoint]) -> String {
    md_table(
        &[
            "#",
            "node",
            "op",
            "tensor",
            "cosine",
            "max abs err",
            "rel L2",
        ],
        points.iter().map(|p| {
            vec![
                p.index.to_string(),
                format!("`{}`", p.node),
                p.op_type.clone(),
                format!("`{}`", p.tensor),
                fmt_cosine(p.cosine),
                format!("{:.3e}", p.max_abs_err),
                format!("{:.3e}", p.rel_l2_err),
            ]
        }),
    )
}
