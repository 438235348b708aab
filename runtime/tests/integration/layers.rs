//! The layering rule of `runtime/src` (issue 28), checked from the source text by the checker
//! ctrl-envtest's `tests/integration/layers.rs` uses too (`envtest/tests/layers/check.rs`): the
//! top-level modules in the order [`LAYERS`] declares, every reference between them pointing down,
//! no circle between files, no function over 80 lines, and the layer diagram of `src/lib.rs` naming
//! exactly these modules in this order. One rule more than envtest's: a `crate::` path in a doc
//! comment points down too (a module names the modules above it in prose), so that not even the
//! docs tie the layers into a knot. Run with `--nocapture` for the report.

use crate::check;

use std::path::{Path, PathBuf};

/// ctrl-runtime's top-level modules, highest layer first (the order of the diagram in
/// `src/lib.rs`).
const LAYERS: &[&str] = &[
    "multicluster",
    "sharding",
    "certrotator",
    "manager",
    "rbac",
    "metricsserver",
    "webhook",
    "leaderelection",
    "recorder",
    "conditions",
    "controllerutil",
    "controller",
    "config",
    "source",
    "client",
    "cache",
    "handler",
    "predicate",
    "event",
    "reconcile",
    "workqueue",
    "log",
    "otel",
    "pprof",
    "healthz",
    "http",
    "tls",
    "certwatcher",
    "metrics",
    "task",
    "error",
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn report() -> check::Report {
    check::check(&src(), LAYERS)
}

check::layer_tests!(report());

#[test]
fn the_layer_diagram_names_the_real_modules_in_order() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    assert_eq!(
        check::diagram(&lib, "# The layers"),
        report().declared(),
        "src/lib.rs"
    );
}

/// The top-level modules a doc comment line names by a `crate::` path.
fn doc_paths(line: &str) -> Vec<&str> {
    let doc = line.trim_start();
    if !(doc.starts_with("///") || doc.starts_with("//!")) {
        return Vec::new();
    }
    doc.match_indices("crate::")
        .map(|(at, _)| {
            let rest = &doc[at + "crate::".len()..];
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .collect()
}

#[test]
fn doc_comments_point_down_the_layers_too() {
    let report = report();
    let mut up = Vec::new();
    for module in report.files.keys() {
        let (dir, file) = (
            src().join(module.join("/")),
            src().join(module.join("/") + ".rs"),
        );
        let path = if file.exists() {
            file
        } else {
            dir.join("mod.rs")
        };
        let text = std::fs::read_to_string(&path).expect("readable source");
        let from = report.layer_of(&module[0]);
        for (n, line) in text.lines().enumerate() {
            for to in doc_paths(line) {
                let lower = report.layer_of(to).zip(from).is_none_or(|(t, f)| t > f);
                if to != module[0] && !lower {
                    up.push(format!("{}:{}: {to}", path.display(), n + 1));
                }
            }
        }
    }
    assert!(up.is_empty(), "doc comments naming a higher layer: {up:#?}");
    assert_eq!(
        doc_paths("/// see [`crate::cache::Cache`], `crate::x`"),
        ["cache", "x"]
    );
    assert!(doc_paths("let p = \"crate::manager\";").is_empty());
}
