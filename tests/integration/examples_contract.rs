//! The contract every example keeps, checked on the built example binaries as a
//! person or a tool would drive them: `--print-crd` prints CRDs that parse; with no
//! cluster configured the example starts ctrl-envtest, installs its CRDs and prints a
//! line containing `--kubeconfig <path>` that kubectl can use; `--no-demo` creates
//! no sample objects; `--run-for` exits 0 after that long.
//!
//! The binaries are the real examples, built by `cargo build --examples` into
//! `target/<profile>/examples/` (the test runs that build first: `cargo test
//! --all-targets` compiles examples only as test harnesses).

use crate::common::kubectl;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use kubectl::Kubectl;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// One example: its name, the CRDs it installs, and the resources its demo would
/// create samples of.
struct Example {
    name: &'static str,
    crds: &'static [&'static str],
    samples: &'static [&'static str],
}

const EXAMPLES: &[Example] = &[
    Example {
        name: "storagebucket",
        crds: &["storagebuckets.storage.example.com"],
        samples: &["storagebuckets"],
    },
    Example {
        name: "appservice",
        crds: &["appservices.app.example.com"],
        samples: &["appservices", "pods"],
    },
    Example {
        name: "podlogger",
        crds: &[],
        samples: &["pods"],
    },
    Example {
        name: "createonly",
        crds: &["appservices.app.example.com"],
        samples: &["appservices"],
    },
    Example {
        name: "virtualmachine",
        crds: &["virtualmachines.cloudnative.tw"],
        samples: &["virtualmachines"],
    },
    Example {
        name: "ctrl-sharder",
        crds: &["controllerrings.sharding.timebertt.dev"],
        samples: &["controllerrings"],
    },
    Example {
        name: "fleet",
        crds: &["fleetconfigmaps.fleet.example.com"],
        samples: &["fleetconfigmaps"],
    },
    Example {
        name: "cronjob",
        crds: &["cronjobs.batch.tutorial.kubebuilder.io"],
        samples: &["cronjobs.batch.tutorial.kubebuilder.io", "jobs"],
    },
];

/// How long each example runs under `--run-for`.
const RUN_FOR: Duration = Duration::from_secs(8);

/// Example `name`'s binary, as `cargo build --examples` leaves it in
/// `target/<profile>/examples/`. `cargo test --all-targets` builds examples only as
/// test harnesses, so the first call builds the real ones with the cargo that runs
/// this test (once per test binary).
fn binary(name: &str) -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/<test> -> target/<profile>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    BUILT.call_once(|| build_examples(profile_dir));
    let bin = profile_dir.join("examples").join(name);
    assert!(bin.is_file(), "{} was not built", bin.display());
    bin
}

/// `cargo build --examples` into the target dir holding `profile_dir`; a loud
/// failure if it fails.
fn build_examples(profile_dir: &Path) {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "--examples", "--quiet"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if let Some(target) = profile_dir.parent() {
        cmd.env("CARGO_TARGET_DIR", target);
    }
    if profile_dir.file_name().is_some_and(|p| p == "release") {
        cmd.arg("--release");
    }
    let status = cmd.status().expect("run cargo build --examples");
    assert!(status.success(), "cargo build --examples failed: {status}");
}

/// `bin` with `args`, with no cluster configured (no `KUBECONFIG`), piped output.
fn spawn(bin: &Path, args: &[&str]) -> Child {
    Command::new(bin)
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {}: {e}", bin.display()))
}

/// The path after `--kubeconfig ` in the first output line (stdout or stderr: an
/// example logging like zap writes to stderr) that has one; the lines read so far
/// on failure. Both streams keep being drained, so the example never blocks on a
/// full pipe.
async fn kubeconfig_line(child: &mut Child) -> Result<PathBuf, String> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let stdout = child.stdout.take().expect("piped stdout");
    let stderr = child.stderr.take().expect("piped stderr");
    forward_lines(stdout, tx.clone());
    forward_lines(stderr, tx);
    let mut seen = String::new();
    let find = async {
        while let Some(line) = rx.recv().await {
            if let Some((_, rest)) = line.split_once("--kubeconfig ") {
                let path = rest.split_whitespace().next().unwrap_or_default();
                return Some(PathBuf::from(path));
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        None
    };
    match tokio::time::timeout(Duration::from_secs(30), find).await {
        Ok(Some(path)) => Ok(path),
        _ => Err(seen),
    }
}

/// Sends every line of `stream` to `tx` until it ends (lines nobody receives any
/// more are dropped).
fn forward_lines(
    stream: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    tx: tokio::sync::mpsc::UnboundedSender<String>,
) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = tx.send(line);
        }
    });
}

#[test]
fn print_crd_prints_parseable_crds() {
    for ex in EXAMPLES {
        let out = std::process::Command::new(binary(ex.name))
            .arg("--print-crd")
            .output()
            .expect("run --print-crd");
        assert!(out.status.success(), "{} --print-crd failed", ex.name);
        let text = String::from_utf8(out.stdout).expect("utf-8 YAML");
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).expect("YAML documents");
        let names: Vec<&str> = docs
            .iter()
            .filter_map(|d| d["metadata"]["name"].as_str())
            .collect();
        assert_eq!(names, ex.crds, "{} --print-crd", ex.name);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_demo_serves_kubectl_and_run_for_exits_zero() {
    if !kubectl::found() {
        return;
    }
    let runs = EXAMPLES.iter().map(check_no_demo);
    futures::future::join_all(runs).await;
}

/// Runs `ex` with `--no-demo --run-for`, then drives it with kubectl: its CRDs are
/// there, no sample objects are; then it exits 0 on time.
async fn check_no_demo(ex: &Example) {
    let dir = tempfile::tempdir().expect("tempdir");
    let kc = dir.path().join("kubeconfig");
    let run_for = format!("{}s", RUN_FOR.as_secs());
    let mut child = spawn(
        &binary(ex.name),
        &[
            "--no-demo",
            "--run-for",
            &run_for,
            "--write-kubeconfig",
            kubectl::path_str(&kc),
        ],
    );
    let path = match kubeconfig_line(&mut child).await {
        Ok(path) => path,
        Err(seen) => panic!(
            "{}: no `--kubeconfig <path>` line; output:\n{seen}",
            ex.name
        ),
    };
    assert_eq!(path, kc, "{}: the printed kubeconfig", ex.name);
    let kubectl = Kubectl::at(&path);
    for crd in ex.crds {
        kubectl.ok(&["get", "crd", crd, "-o", "name"]).await;
    }
    // Give a demo that ignored --no-demo time to create its samples.
    tokio::time::sleep(Duration::from_secs(2)).await;
    for resource in ex.samples {
        let listed = kubectl.ok(&["get", resource, "-A", "-o", "name"]).await;
        assert!(
            listed.trim().is_empty(),
            "{} --no-demo created {resource}: {listed}",
            ex.name
        );
    }
    let status = tokio::time::timeout(RUN_FOR + Duration::from_secs(20), child.wait())
        .await
        .unwrap_or_else(|_| panic!("{}: still running long after --run-for {run_for}", ex.name))
        .expect("wait");
    assert!(
        status.success(),
        "{}: --run-for exited with {status}",
        ex.name
    );
}

/// Every line of `name`'s demo (`--run-for run_for`) containing one of `about`, or
/// a failure saying which of them never showed up; the whole output on failure.
async fn demo_lines(name: &str, run_for: &str, about: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let kc = dir.path().join("kubeconfig");
    let args = [
        "--run-for",
        run_for,
        "--write-kubeconfig",
        kubectl::path_str(&kc),
    ];
    let child = spawn(&binary(name), &args);
    let out = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{name}: still running long after --run-for {run_for}"))
        .expect("wait");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{name} exited with {}:\n{text}",
        out.status
    );
    for needle in about {
        assert!(text.contains(needle), "{name}: no {needle:?} line:\n{text}");
    }
    text.lines()
        .filter(|l| about.iter().any(|n| l.contains(n)))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_logs_name_the_object_they_are_about() {
    // createonly: the event handler's lines and the reconciler's, as its README shows.
    let about = [
        "CreateFunc: enqueued",
        "Reconciler is called",
        "UpdateFunc:",
    ];
    let lines = demo_lines("createonly", "7s", &about).await;
    for line in &lines {
        assert!(
            line.contains("appservice=default/example-appservice"),
            "createonly: a line that does not name its AppService: {line}"
        );
    }
    // appservice: the reconciler's lines name the AppService from the reconcile span.
    let about = ["added finalizer", "created Pod"];
    let lines = demo_lines("appservice", "4s", &about).await;
    for line in &lines {
        assert!(
            line.contains("appservice=default/example-appservice"),
            "appservice: a line that does not name its AppService: {line}"
        );
    }
}
