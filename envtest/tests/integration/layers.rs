//! The layering rule of `envtest/src`, checked from the source text by the shared checker
//! (`layers/check.rs`, which ctrl-runtime's `tests/integration/layers.rs` includes too): the
//! top-level modules in the order [`LAYERS`] declares, every reference between them pointing down,
//! no circle between files, no function over 80 lines, and the layer diagrams of `src/lib.rs` and
//! `docs/envtest.md` naming exactly these modules in this order. Run with `--nocapture` for the
//! report.

use crate::check;

use std::path::{Path, PathBuf};

/// envtest's top-level modules, highest layer first (the order of the diagram in `src/lib.rs`).
const LAYERS: &[&str] = &[
    "cli",
    "sim",
    "env",
    "controllers",
    "server",
    "endpoints",
    "admission",
    "registry",
    "auth",
    "storage",
    "cel",
    "webhook_client",
    "tls",
    "api",
    "faults",
    "task",
    "wait",
];

fn crate_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn report() -> check::Report {
    check::check(&crate_dir().join("src"), LAYERS)
}

check::layer_tests!(report());

#[test]
fn layer_diagrams_name_the_real_modules_in_order() {
    let declared = report().declared();
    let lib = std::fs::read_to_string(crate_dir().join("src/lib.rs")).expect("lib.rs");
    assert_eq!(
        check::diagram(&lib, "# Inside: the layers"),
        declared,
        "src/lib.rs"
    );
    let docs = crate_dir().join("../docs/envtest.md");
    let docs = std::fs::read_to_string(docs).expect("docs/envtest.md");
    assert_eq!(
        check::diagram(&docs, "## Inside"),
        declared,
        "docs/envtest.md"
    );
}
