//! The `otel` feature is off by default and then compiles no OpenTelemetry crate (issue
//! 34): `cargo tree -e features` of ctrl and of ctrl-runtime names none, and names them
//! with `--features otel` (so the check can fail).

use std::process::Command;

/// `cargo tree -e features -p <package> <extra>` of this workspace, as text.
fn tree(package: &str, extra: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../Cargo.toml");
    let out = Command::new(cargo)
        .args([
            "tree",
            "-e",
            "features",
            "--manifest-path",
            manifest,
            "-p",
            package,
        ])
        .args(extra)
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn no_opentelemetry_crate_is_compiled_without_the_feature() {
    for package in ["ctrl", "ctrl-runtime"] {
        let off = tree(package, &[]);
        assert!(
            !off.contains("opentelemetry"),
            "{package} without otel:\n{off}"
        );
    }
    let on = tree("ctrl-runtime", &["--features", "otel"]);
    assert!(on.contains("opentelemetry_sdk"), "with otel:\n{on}");
    assert!(on.contains("tracing-opentelemetry"), "with otel:\n{on}");
}
