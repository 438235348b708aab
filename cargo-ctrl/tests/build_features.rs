//! A generated project compiles what it uses (issue 32, build time): `cargo tree` of a project
//! from `init` + `create api --image` + `create webhook` (ctrl by path: this checkout) names none of the crates
//! that ctrl's optional parts, its own tests and benches, or ctrl-envtest's own checks pull in,
//! neither in the default build (what `cargo build` / `cargo run` compile) nor in the test build;
//! compiles ctrl-runtime without the built-in apply configurations (a feature, not a crate);
//! and names each of them once the project turns its feature on (so the check can fail).
//! Webhooks are a feature too: a project before `create webhook` compiles no webhook server, cert
//! rotator or X.509 parser, and `create webhook` turns ctrl's `webhook` feature on.

use std::path::Path;
use std::process::Command;

mod support;
use support::{scaffold, scaffold_api, workspace};

/// Crates no generated project's build compiles unless it asks for them: the CPU profiler
/// and its symbolizer (`ctrl/pprof`), OpenTelemetry (`ctrl/otel`), the protobuf crates that
/// only ctrl-envtest's tests use (`k8s-pb`) or that compiled its descriptors (`protox`),
/// ctrl-envtest's CronJob schedules (`ctrl/envtest-cronjob`) and CEL (`ctrl/envtest-cel`: cel-rust,
/// its ANTLR runtime and time zones), HTTP/2 (`ctrl/http2`: h2, for `--enable-http2` and the
/// in-process API server's Go clients), the shard ring's hash (`ctrl/sharding`: xxhash-rust), the
/// TSC clock the work queue's metrics once read (quanta), and ctrl's bench and test crates.
const LEFT_OUT: &[&str] = &[
    "pprof",
    "findshlibs",
    "opentelemetry",
    "opentelemetry_sdk",
    "k8s-pb",
    "protox",
    "croner",
    "cel",
    "antlr4rust",
    "chrono-tz",
    "h2",
    "xxhash-rust",
    "quanta",
    "raw-cpuid",
    "criterion",
    "plotters",
    "cap",
];

/// The project (`init` + `create api --image`, then, with `webhooks`, `create webhook`)
/// in a temp dir, ctrl by path, with this checkout's lock file (so that the versions are the
/// ones ctrl is tested with and no index is needed).
fn project(webhooks: bool) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    match webhooks {
        true => scaffold(dir.path(), Some(&workspace())),
        false => scaffold_api(dir.path(), Some(&workspace())),
    }
    std::fs::copy(
        workspace().join("Cargo.lock"),
        dir.path().join("Cargo.lock"),
    )
    .expect("copy Cargo.lock");
    dir
}

/// The packages `cargo tree` lists for the project in `dir` with `args`, each with the
/// features it is compiled with.
fn tree(dir: &Path, args: &[&str]) -> Vec<(String, Vec<String>)> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--prefix", "none", "--format", "{p}|{f}"])
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
    let mut packages: Vec<(String, Vec<String>)> = text
        .lines()
        .filter_map(|l| {
            let (p, f) = l.split_once('|')?;
            let name = p.split_whitespace().next()?.to_string();
            Some((name, f.split(',').map(str::to_string).collect()))
        })
        .collect();
    packages.sort();
    packages.dedup();
    packages
}

/// The package names `cargo tree` lists for the project in `dir` with `args`.
fn packages(dir: &Path, args: &[&str]) -> Vec<String> {
    let mut names: Vec<String> = tree(dir, args).into_iter().map(|(n, _)| n).collect();
    names.dedup();
    names
}

/// Whether ctrl-runtime is compiled with `feature` in the project's build with `args`.
fn runtime_has(dir: &Path, args: &[&str], feature: &str) -> bool {
    tree(dir, args)
        .iter()
        .any(|(n, f)| n == "ctrl-runtime" && f.iter().any(|f| f == feature))
}

#[test]
fn a_generated_project_compiles_none_of_what_it_does_not_use() {
    let dir = project(true);
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
    for (what, args) in &builds {
        assert!(
            !runtime_has(dir.path(), args, "apply-configurations"),
            "{what} compiles the built-in apply configurations"
        );
    }
    let with_apply = [
        "-e",
        "normal,build",
        "--features",
        "ctrl/apply-configurations",
    ];
    assert!(runtime_has(dir.path(), &with_apply, "apply-configurations"));
    for (feature, package) in [
        ("ctrl/envtest-cronjob", "croner"),
        ("ctrl/envtest-cel", "cel"),
        ("ctrl/pprof", "pprof"),
        ("ctrl/http2", "h2"),
        ("ctrl/sharding", "xxhash-rust"),
    ] {
        let with = packages(dir.path(), &["-e", "normal,build", "--features", feature]);
        assert!(
            with.iter().any(|n| n == package),
            "with {feature}: {with:?}"
        );
    }
}

/// What only webhooks need: the X.509 parser (the cert rotator reads its Secret back with it;
/// ctrl-envtest's `x509` checks a serving certificate that is its own caBundle) and its ASN.1
/// crates.
const WEBHOOK_ONLY: &[&str] = &["x509-parser", "asn1-rs", "der-parser"];

#[test]
fn webhooks_are_compiled_once_a_webhook_is_created() {
    let builds = [
        ("default build", vec!["-e", "normal,build"]),
        ("test build", vec!["-e", "normal,build,dev"]),
    ];
    let before = project(false);
    for (what, args) in &builds {
        let names = packages(before.path(), args);
        for crate_ in WEBHOOK_ONLY {
            assert!(
                !names.iter().any(|n| n == crate_),
                "{what} before `create webhook` compiles {crate_}: {names:?}"
            );
        }
        assert!(
            !runtime_has(before.path(), args, "webhook"),
            "{what} before `create webhook` compiles ctrl-runtime's webhooks"
        );
    }
    let after = project(true);
    for (what, args) in &builds {
        let names = packages(after.path(), args);
        assert!(
            names.iter().any(|n| n == "x509-parser"),
            "{what} after `create webhook`: {names:?}"
        );
        assert!(
            runtime_has(after.path(), args, "webhook"),
            "{what} after `create webhook` compiles ctrl-runtime without webhooks"
        );
    }
}
