use super::*;
use crate::info::tests::{component, info, versions};

/// The card names the tool identity a build record holds, whatever this build's own is: a
/// binary built by another xtask shows that xtask.
#[test]
fn a_record_of_another_xtask_identity_is_shown_as_that_identity() {
    let other = "0.0.9+src.0123456789abcdef";
    assert_ne!(other, xtask_base::identity::xtask_id());
    let card = render(
        &info(vec![component(
            "vision",
            versions("v2.47.0.250908123456", other),
        )]),
        None,
        None,
    );
    assert!(
        card.contains(&format!(
            "- Built by xtask `{other}` (the tool identity its build records name)"
        )),
        "{card}"
    );
    assert!(!card.contains(xtask_base::identity::xtask_id()), "{card}");
    assert!(
        card.contains("(Hexagon v73, soc_id 77)**, QAIRT **2.47.0**."),
        "{card}"
    );
    assert!(
        card.contains("QAIRT 2.47.0 (QNN build `v2.47.0.250908123456`), ONNX Runtime 1.23.2"),
        "{card}"
    );
}

#[test]
fn components_built_by_different_qnn_builds_are_each_named() {
    let card = render(
        &info(vec![
            component(
                "vision",
                versions("v2.47.0.1", "0.1.0+src.aaaaaaaaaaaaaaaa"),
            ),
            component("llm", versions("v2.46.0.2", "0.1.0+src.bbbbbbbbbbbbbbbb")),
        ]),
        None,
        None,
    );
    assert!(
        card.contains("QAIRT **differs between components: 2.46.0 (llm); 2.47.0 (vision)**"),
        "{card}"
    );
    assert!(
        card.contains(
            "(QNN build differs between components: `v2.46.0.2` (llm); `v2.47.0.1` (vision))"
        ),
        "{card}"
    );
    assert!(
        card.contains("- Built by xtask differs between components: `0.1.0+src.aaaaaaaaaaaaaaaa` (vision); `0.1.0+src.bbbbbbbbbbbbbbbb` (llm)"),
        "{card}"
    );
}
