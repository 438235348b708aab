//! Issue 34's bar, as a person would check it by hand (docs/manager.md, "Tracing" lists the
//! same commands): the AppService example built with `--features otel` runs locally with
//! its spans written to a file (`OTEL_TRACES_EXPORTER=otlp_file`); kubectl creates an
//! AppService carrying a KEP-5915 `traceparent`; the trace file then holds a `reconcile`
//! span linked to that trace, the Pod the reconcile created is stamped with the context of
//! a reconcile span in the file, and the demo log's reconcile line names its triggers.
//!
//! `cargo test -p ctrl --features otel --test otel_example` (it builds the example with the
//! feature first: `cargo build --example appservice --features otel`).
#![cfg(feature = "otel")]

#[allow(dead_code)]
#[path = "common/kubectl.rs"]
mod kubectl;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use kubectl::Kubectl;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;
use tokio::sync::mpsc;

/// The trace the AppService is created in (an API server's or a client's request span).
const ORIGIN_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const ORIGIN_SPAN: &str = "00f067aa0ba902b7";

/// The AppService kubectl creates.
const MANIFEST: &str = "apiVersion: app.example.com/v1alpha1
kind: AppService
metadata:
  name: traced
  namespace: default
  annotations:
    tracing.k8s.io/traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01
spec:
  size: 1
";

/// The appservice example built with the `otel` feature, in the target dir of this test.
fn binary() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    // target/<profile>/deps/<test> -> target/<profile>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "--example", "appservice", "--features", "otel"])
        .arg("--quiet")
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if let Some(target) = profile_dir.parent() {
        cmd.env("CARGO_TARGET_DIR", target);
    }
    if profile_dir.file_name().is_some_and(|p| p == "release") {
        cmd.arg("--release");
    }
    let status = cmd.status().expect("run cargo build --example appservice");
    assert!(status.success(), "cargo build --example appservice failed");
    profile_dir.join("examples").join("appservice")
}

/// Sends every line of `stream` to `tx`.
fn forward_lines(
    stream: impl tokio::io::AsyncRead + Unpin + Send + 'static,
    tx: mpsc::UnboundedSender<String>,
) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = tx.send(line);
        }
    });
}

/// Every span in the OTLP/JSON lines of `text` (each line an `ExportTraceServiceRequest`).
fn spans(text: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let req: Value = serde_json::from_str(line).expect("an OTLP/JSON line");
        for rs in req["resourceSpans"].as_array().into_iter().flatten() {
            for ss in rs["scopeSpans"].as_array().into_iter().flatten() {
                out.extend(ss["spans"].as_array().into_iter().flatten().cloned());
            }
        }
    }
    out
}

/// Whether `span` has a link to the span `trace`/`span_id`.
fn links_to(span: &Value, trace: &str, span_id: &str) -> bool {
    span["links"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|l| l["traceId"] == trace && l["spanId"] == span_id)
}

/// Polls `check` every 200 ms for up to 30 s.
async fn eventually<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    for _ in 0..150 {
        if let Some(v) = check().await {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("{what}: not within 30 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_traced_create_links_the_reconcile_and_stamps_the_pod() {
    if !kubectl::found() {
        return;
    }
    let bin = binary();
    let dir = tempfile::tempdir().expect("tempdir");
    let (kc, traces, manifest) = (
        dir.path().join("kubeconfig"),
        dir.path().join("traces.jsonl"),
        dir.path().join("app.yaml"),
    );
    std::fs::write(&manifest, MANIFEST).expect("manifest");
    let mut child = Command::new(&bin)
        .args(["--no-demo", "--write-kubeconfig", kubectl::path_str(&kc)])
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .env("OTEL_TRACES_EXPORTER", "otlp_file")
        .env("OTEL_EXPORTER_OTLP_FILE_PATH", &traces)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn appservice");
    let (tx, mut lines) = mpsc::unbounded_channel();
    forward_lines(child.stdout.take().expect("stdout"), tx.clone());
    forward_lines(child.stderr.take().expect("stderr"), tx);

    let kubectl = Kubectl::at(&kc);
    eventually("the example's CRD", async || {
        let (ok, ..) = kubectl
            .run(&["get", "crd", "appservices.app.example.com"])
            .await;
        ok.then_some(())
    })
    .await;
    kubectl
        .ok(&["create", "-f", kubectl::path_str(&manifest)])
        .await;

    // The Pod the reconcile created carries its trace context.
    let stamp = eventually("the stamped Pod", async || {
        let (ok, out, _) = kubectl
            .run(&["get", "pod", "traced-pod-0", "-n", "default", "-o", "json"])
            .await;
        let pod: Value = serde_json::from_str(&out).ok().filter(|_| ok)?;
        let tp = pod["metadata"]["annotations"]["tracing.k8s.io/traceparent"].as_str()?;
        Some(tp.to_string())
    })
    .await;
    let parts: Vec<&str> = stamp.split('-').collect();
    assert_eq!(parts.len(), 4, "a W3C traceparent: {stamp}");
    let (stamp_trace, stamp_span) = (parts[1], parts[2]);

    // The trace file: a reconcile linked to the AppService's trace, and the reconcile span
    // the Pod names.
    let (linked, stamping) = eventually("the reconcile spans in the trace file", async || {
        let all = spans(&std::fs::read_to_string(&traces).ok()?);
        let reconciles = || all.iter().filter(|s| s["name"] == "reconcile");
        let linked = reconciles()
            .find(|s| links_to(s, ORIGIN_TRACE, ORIGIN_SPAN))?
            .clone();
        let stamping = reconciles()
            .find(|s| s["traceId"] == stamp_trace && s["spanId"] == stamp_span)?
            .clone();
        Some((linked, stamping))
    })
    .await;
    assert_ne!(linked["traceId"], ORIGIN_TRACE, "a reconcile is a new root");
    assert!(
        links_to(&stamping, ORIGIN_TRACE, ORIGIN_SPAN),
        "the reconcile that created the Pod was triggered by the traced create: {stamping}"
    );

    // The demo log's line in that reconcile names what triggered it.
    let wanted = "triggers=for:create AppService@";
    let mut seen = String::new();
    let found = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.recv().await {
            if line.contains("appservice=default/traced") && line.contains(wanted) {
                return true;
            }
            seen.push_str(&line);
            seen.push('\n');
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "no line with `{wanted}`:\n{seen}");
    child.kill().await.expect("stop the example");
}
