//! A generated project compiles what it uses (issue 32, build time): `cargo tree` of a project
//! from `init` + `create api --image` + `create webhook` (ctrl by path: this checkout) names none of the crates
//! that ctrl's optional parts, its own tests and benches, or ctrl-envtest's own checks pull in,
//! neither in the default build (what `cargo build` / `cargo run` compile) nor in the test build;
//! and names the profiler once the project turns on `ctrl/pprof` (so the check can fail).

use std::path::Path;
use std::process::Command;

mod support;
use support::{scaffold, workspace};

/// Crates no generated project's build compiles unless it asks for them: the CPU profiler
/// and its symbolizer (`ctrl/pprof`), OpenTelemetry (`ctrl/otel`), the protobuf crates that
/// only ctrl-envtest's tests use (`k8s-pb`) or that compiled its descriptors (`protox`), and
/// ctrl's bench and test crates.
const LEFT_OUT: &[&str] = &[
    "pprof",
    "findshlibs",
    "opentelemetry",
    "opentelemetry_sdk",
    "k8s-pb",
    "protox",
    "criterion",
    "plotters",
    "cap",
];

/// The project (`init` + `create api --image` + `create webhook`) in a temp dir, ctrl by
/// path, with this checkout's lock file (so that the versions are the ones ctrl is tested with
/// and no index is needed).
fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    scaffold(dir.path(), Some(&workspace()));
    std::fs::copy(
        workspace().join("Cargo.lock"),
        dir.path().join("Cargo.lock"),
    )
    .expect("copy Cargo.lock");
    dir
}

/// The package names `cargo tree` lists for the project in `dir` with `args`.
fn packages(dir: &Path, args: &[&str]) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--prefix", "none", "--format", "{p}"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn a_generated_project_compiles_none_of_what_it_does_not_use() {
    let dir = project();
    let builds = [
        ("default build", vec!["-e", "normal,build"]),
        ("test build", vec!["-e", "normal,build,dev"]),
    ];
    for (what, args) in &builds {
        let names = packages(dir.path(), args);
        assert!(
            names.iter().any(|n| n == "ctrl-runtime"),
            "{what}: {names:?}"
        );
        for left_out in LEFT_OUT {
            assert!(
                !names.iter().any(|n| n == left_out),
                "{what} compiles {left_out}: {names:?}"
            );
        }
    }
    let with_pprof = packages(
        dir.path(),
        &["-e", "normal,build", "--features", "ctrl/pprof"],
    );
    assert!(
        with_pprof.iter().any(|n| n == "pprof"),
        "with ctrl/pprof: {with_pprof:?}"
    );
}
