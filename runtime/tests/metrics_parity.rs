//! Every metric a Go operator's dashboards read, scraped from the manager's `/metrics`
//! over HTTP after real traffic (envtest requests through the instrumented client, a
//! reconcile, a webhook request, an elected leader), checked by name, type and label
//! set against controller-runtime's definitions (`pkg/internal/controller/metrics`,
//! `pkg/metrics/workqueue.go`, `pkg/metrics/client_go_adapter.go`,
//! `pkg/webhook/internal/metrics`, `pkg/webhook/conversion/metrics`,
//! `pkg/certwatcher/metrics`, `pkg/metrics/leaderelection.go`).

mod manager_common;
mod webhook_support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ctrl_runtime::controller::Options as ControllerOptions;
use ctrl_runtime::http::{handler_fn, text};
use ctrl_runtime::manager::{Manager, Options};
use ctrl_runtime::metrics::client::new_client;
use ctrl_runtime::reconcile::{self, Action, Request};
use http::StatusCode;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use manager_common::{add_configmap_controller, elected, env, get, run};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// controller-runtime's series: name, Prometheus type, label names (without `le`).
const GO_SERIES: &[(&str, &str, &[&str])] = &[
    (
        "controller_runtime_reconcile_total",
        "counter",
        &["controller", "result"],
    ),
    (
        "controller_runtime_reconcile_errors_total",
        "counter",
        &["controller"],
    ),
    (
        "controller_runtime_terminal_reconcile_errors_total",
        "counter",
        &["controller"],
    ),
    (
        "controller_runtime_reconcile_panics_total",
        "counter",
        &["controller"],
    ),
    (
        "controller_runtime_reconcile_timeouts_total",
        "counter",
        &["controller"],
    ),
    (
        "controller_runtime_reconcile_time_seconds",
        "histogram",
        &["controller"],
    ),
    (
        "controller_runtime_max_concurrent_reconciles",
        "gauge",
        &["controller"],
    ),
    (
        "controller_runtime_active_workers",
        "gauge",
        &["controller"],
    ),
    (
        "workqueue_depth",
        "gauge",
        &["controller", "name", "priority"],
    ),
    ("workqueue_adds_total", "counter", &["controller", "name"]),
    (
        "workqueue_queue_duration_seconds",
        "histogram",
        &["controller", "name"],
    ),
    (
        "workqueue_work_duration_seconds",
        "histogram",
        &["controller", "name"],
    ),
    (
        "workqueue_unfinished_work_seconds",
        "gauge",
        &["controller", "name"],
    ),
    (
        "workqueue_longest_running_processor_seconds",
        "gauge",
        &["controller", "name"],
    ),
    (
        "workqueue_retries_total",
        "counter",
        &["controller", "name"],
    ),
    (
        "rest_client_requests_total",
        "counter",
        &["code", "host", "method"],
    ),
    (
        "rest_client_request_duration_seconds",
        "histogram",
        &["host", "path", "verb"],
    ),
    (
        "controller_runtime_webhook_latency_seconds",
        "histogram",
        &["code", "webhook"],
    ),
    (
        "controller_runtime_webhook_requests_total",
        "counter",
        &["code", "webhook"],
    ),
    (
        "controller_runtime_webhook_requests_in_flight",
        "gauge",
        &["webhook"],
    ),
    ("controller_runtime_webhook_panics_total", "counter", &[]),
    (
        "controller_runtime_conversion_webhook_panics_total",
        "counter",
        &[],
    ),
    ("certwatcher_read_certificate_total", "counter", &[]),
    ("certwatcher_read_certificate_errors_total", "counter", &[]),
    ("leader_election_master_status", "gauge", &["name"]),
    ("process_cpu_seconds_total", "counter", &[]),
    ("process_resident_memory_bytes", "gauge", &[]),
    ("process_open_fds", "gauge", &[]),
    ("process_start_time_seconds", "gauge", &[]),
];

/// A scraped family: its type and the label-name sets of its samples.
#[derive(Debug, Default)]
struct Family {
    kind: String,
    label_sets: BTreeSet<Vec<String>>,
    samples: Vec<(BTreeMap<String, String>, String)>,
}

/// Parses the text exposition format into families (histogram samples folded into
/// their family, `le` dropped).
fn parse(body: &str) -> BTreeMap<String, Family> {
    let mut families: BTreeMap<String, Family> = BTreeMap::new();
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut it = rest.split_whitespace();
            if let (Some(name), Some(kind)) = (it.next(), it.next()) {
                families.entry(name.to_string()).or_default().kind = kind.to_string();
            }
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
        let (name, labels) = match series.split_once('{') {
            Some((n, l)) => (n, l.trim_end_matches('}')),
            None => (series, ""),
        };
        let base = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .filter(|b| families.get(*b).is_some_and(|f| f.kind == "histogram"))
            .unwrap_or(name);
        let labels: BTreeMap<String, String> = labels
            .split("\",")
            .filter(|p| !p.is_empty())
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
            .filter(|(k, _)| k != "le")
            .collect();
        let fam = families.entry(base.to_string()).or_default();
        fam.label_sets.insert(labels.keys().cloned().collect());
        fam.samples.push((labels, value.to_string()));
    }
    families
}

/// A manager on `env` whose client counts its requests, with metrics on a free
/// port and leader election on Lease `default/parity`.
fn instrumented_manager(env: &ctrl_envtest::Environment) -> Manager {
    let client = new_client(env.config(), true).expect("instrumented client");
    let opts = Options {
        metrics_bind_address: "127.0.0.1:0".into(),
        leader_election: true,
        leader_election_id: "parity".into(),
        leader_election_namespace: Some("default".into()),
        ..Default::default()
    };
    Manager::new(client, opts).expect("manager")
}

async fn reconcile_once(env: &ctrl_envtest::Environment, mgr: &Manager) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let r = reconcile::func(move |_ctx, req: Request| {
        let _ = tx.send(req);
        async { Ok(Action::done()) }
    });
    add_configmap_controller(mgr, "parity", r, ControllerOptions::default()).await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let cm = ConfigMap {
        metadata: ObjectMeta {
            name: Some("parity".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    api.create(&PostParams::default(), &cm)
        .await
        .expect("create");
    tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("a reconcile")
        .expect("reconciler alive");
}

#[tokio::test]
async fn every_series_has_controller_runtimes_name_type_and_labels() {
    let env = env().await;
    let mgr = instrumented_manager(&env);
    let ctx = CancellationToken::new();
    let h = run(&mgr, &ctx);
    elected(&mgr).await;
    reconcile_once(&env, &mgr).await;
    let hook = webhook_support::start(|s| {
        s.register("/validate", handler_fn(|_req| text(StatusCode::OK, "ok")))
            .expect("register");
        s.register("/mutate", handler_fn(|_req| text(StatusCode::OK, "ok")))
            .expect("register");
        s.conversion().expect("conversion");
    })
    .await;
    let (code, _) = webhook_support::post(&hook, "/validate", "application/json", b"{}").await;
    assert_eq!(code, 200);

    let addr = mgr.metrics_addr().expect("metrics on");
    let scraped = parse(&get(addr, "/metrics").await.body);
    for (name, kind, labels) in GO_SERIES {
        let fam = scraped
            .get(*name)
            .unwrap_or_else(|| panic!("{name} missing from the scrape"));
        assert_eq!(fam.kind, *kind, "{name}'s type");
        let want: Vec<String> = labels.iter().map(|l| l.to_string()).collect();
        assert_eq!(
            fam.label_sets,
            BTreeSet::from([want]),
            "{name}'s label names"
        );
    }

    // The client's host label is the API server's host:port, the codes are HTTP's.
    let host = ctrl_runtime::metrics::client::host_of(&env.config());
    let rest = &scraped["rest_client_requests_total"];
    assert!(
        rest.samples
            .iter()
            .any(|(l, _)| { l["host"] == host && l["method"] == "GET" && l["code"] == "200" })
    );
    // A registered path has its 200 and 500 counters before any request (Go's
    // InstrumentedHook); /mutate got none.
    let total = &scraped["controller_runtime_webhook_requests_total"];
    for code in ["200", "500"] {
        assert!(
            total
                .samples
                .iter()
                .any(|(l, v)| l["webhook"] == "/mutate" && l["code"] == code && v == "0"),
            "/mutate code {code} at 0: {:?}",
            total.samples
        );
    }
    ctx.cancel();
    manager_common::finished(h).await.expect("clean stop");
}
