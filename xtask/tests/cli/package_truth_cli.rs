//! `package` tells the truth about HTP parity: binaries it never measured (no report, or a
//! report about other binaries) are refused unless `--allow-unmeasured`, which warns on stderr
//! and says so in the card; `verify` reports the same.

use crate::common::Scratch;

const ONE: &str = "action_context";

fn package(p: &Scratch, out: &str, extra: &[&str]) -> crate::common::Run {
    let out = p.path(out);
    let mut args = vec!["package", "--soc", "77", "--only", ONE, "--out"];
    args.push(out.to_str().unwrap());
    args.extend_from_slice(extra);
    p.run(&args)
}

#[test]
fn unmeasured_binaries_are_refused_or_warned_about_and_verify_says_so() {
    let p = Scratch::tiny();
    p.run(&["build-ctx", "--soc", "77", "--only", ONE])
        .assert_code(0);

    // Never measured: refused, naming the component, the command that measures it, the flag.
    package(&p, "dist/a", &[])
        .assert_refused(2, "HTP parity was never measured")
        .assert_refused(2, "action_context: no HTP parity report")
        .assert_refused(2, "cargo xtask parity --backend htp")
        .assert_refused(2, "--allow-unmeasured");
    assert!(!p.path("dist/a").exists(), "nothing is packaged");

    // Allowed: a warning on stderr, and the card says which binaries were never measured.
    let run = package(&p, "dist/a", &["--allow-unmeasured"]);
    run.assert_code(0);
    assert!(
        run.stderr
            .contains("warning: packaging 1 binaries whose HTP parity was never measured"),
        "{}",
        run.all()
    );
    let card = std::fs::read_to_string(p.path("dist/a/README.md")).unwrap();
    assert!(
        card.contains("**Not measured** for these binaries."),
        "{card}"
    );
    assert!(
        card.contains("- action_context: no HTP parity report"),
        "{card}"
    );
    let dist = p.path("dist/a");
    let verify = p.run(&["verify", dist.to_str().unwrap()]);
    verify.assert_code(0);
    assert!(
        verify
            .stderr
            .contains("HTP parity was never measured on 1 of the bundle's binaries"),
        "{}",
        verify.all()
    );

    // Measured: HTP parity has nothing more to say; the chain (never run: one component is
    // built) still refuses the bundle without the flag, and only the chain is named with it.
    p.run(&["parity", "--backend", "htp", "--only", ONE])
        .assert_code(0);
    let refused = package(&p, "dist/b", &[]);
    refused.assert_refused(2, "no run of the whole chain on the HTP");
    assert!(
        !refused.stderr.contains("HTP parity was never measured"),
        "{}",
        refused.all()
    );
    let run = package(&p, "dist/b", &["--allow-unmeasured"]);
    run.assert_code(0);
    assert!(
        !run.stderr.contains("HTP parity was never measured"),
        "{}",
        run.all()
    );
    assert!(
        run.stderr.contains("chain was never measured on the HTP"),
        "{}",
        run.all()
    );
    let dist = p.path("dist/b");
    let verify = p.run(&["verify", dist.to_str().unwrap()]);
    verify.assert_code(0);
    assert!(
        !verify.stderr.contains("HTP parity was never measured"),
        "{}",
        verify.all()
    );
    assert!(
        verify.stdout.contains("verdict UNMEASURED"),
        "{}",
        verify.all()
    );

    // Rebuilt after it was measured: the report is about another binary.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    p.run(&["build-ctx", "--soc", "77", "--only", ONE, "--force"])
        .assert_code(0);
    package(&p, "dist/c", &[])
        .assert_refused(2, "action_context: measured before its binary was built");
}
