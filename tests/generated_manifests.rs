//! Manifests from the running code (`ctrl::manifests`, `--print-manifests`), on the
//! StorageBucket operator: its manager is built as deployed on a client that is never
//! dialled, and what it says it watches and serves becomes the kustomize layout
//! `config/` and one YAML stream. The real `kubectl apply --dry-run=server -k
//! config/default` against ctrl-envtest accepts the layout (kustomize's namespace and
//! name prefix over the bases), the real `kubectl apply -f` of the stream creates every
//! object, and the webhook configurations name exactly the paths the manager serves:
//! an AdmissionReview POSTed to each path is answered.

mod common;
#[allow(dead_code)]
#[path = "../examples/storagebucket/mod.rs"]
mod operator;
#[path = "tls_support/mod.rs"]
mod tls_support;

use std::path::Path;

use common::kubectl::{self, Kubectl, path_str};
use ctrl::manager::{Args, Options};
use ctrl::manifests::Manifests;
use ctrl_envtest::Environment;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The StorageBucket operator's manifests, from its manager as `--print-manifests`
/// builds it.
fn manifests() -> Manifests {
    let args = Args::default();
    let opts = ctrl::cli::print::deployed_options(
        "storagebucket",
        Options {
            leader_election_id: operator::LEASE_NAME.into(),
            controller: unchecked_names(),
            ..args.options()
        },
    );
    let client = ctrl::cli::print::offline_client().expect("offline client");
    let cfg = operator::controller::Config::default();
    let mgr = operator::setup::manager(client, opts, &cfg, true).expect("the operator's manager");
    Manifests::new("storagebucket", &mgr, &args, vec![operator::crd::crd()])
}

/// Controller names unchecked: each test builds the operator's manager (controller
/// `storagebucket`) once more in this process.
fn unchecked_names() -> ctrl::config::Controller {
    ctrl::config::Controller {
        skip_name_validation: Some(true),
        ..Default::default()
    }
}

/// Writes `files` under `dir`.
fn write(dir: &Path, files: &[(String, String)]) {
    for (path, text) in files {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, text).expect("write");
    }
}

/// Every YAML document of `text`, each a Kubernetes object (apiVersion, kind, name).
fn objects(text: &str) -> Vec<Value> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).expect("YAML documents");
    for d in &docs {
        for field in ["apiVersion", "kind"] {
            assert!(d[field].is_string(), "no {field}: {d}");
        }
        assert!(d["metadata"]["name"].is_string(), "no name: {d}");
    }
    docs
}

#[tokio::test]
async fn the_layout_is_kubebuilders_and_every_file_parses() {
    let files = manifests().files().expect("files");
    let paths: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
    for want in [
        "config/default/kustomization.yaml",
        "config/default/metrics_service.yaml",
        "config/crd/kustomization.yaml",
        "config/crd/bases/storage.example.com_storagebuckets.yaml",
        "config/rbac/kustomization.yaml",
        "config/rbac/service_account.yaml",
        "config/rbac/manager_role.yaml",
        "config/rbac/leader_election_role.yaml",
        "config/manager/manager.yaml",
        "config/webhook/manifests.yaml",
        "config/webhook/service.yaml",
        "config/prometheus/monitor.yaml",
    ] {
        assert!(paths.contains(&want), "no {want} in {paths:?}");
    }
    for (path, text) in &files {
        if path.ends_with("kustomization.yaml") {
            let k: Value = serde_saphyr::from_str(text).expect("kustomization");
            assert_eq!(k["kind"], "Kustomization", "{path}");
            continue;
        }
        objects(text);
    }
    let default = &files
        .iter()
        .find(|(p, _)| p == "config/default/kustomization.yaml")
        .expect("default")
        .1;
    assert!(
        default.contains("namespace: storagebucket-system\n"),
        "{default}"
    );
    assert!(
        default.contains("namePrefix: storagebucket-\n"),
        "{default}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_accepts_the_layout_and_the_stream() {
    if !kubectl::found() {
        return;
    }
    let m = manifests();
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), &m.files().expect("files"));
    let env = Environment::builder().start().await.expect("envtest");
    let k = Kubectl::new(&env);

    // The kustomize layout, dry-run on the server: every object accepted. (A dry run
    // creates no namespace, and kube-apiserver's NamespaceLifecycle admission refuses
    // objects in one that does not exist, dry run or not: the namespace is made first.)
    k.ok(&["create", "namespace", "storagebucket-system"]).await;
    let default = dir.path().join("config/default");
    let out = k
        .ok(&["apply", "--dry-run=server", "-k", path_str(&default)])
        .await;
    for want in [
        "namespace/storagebucket-system",
        "customresourcedefinition.apiextensions.k8s.io/storagebuckets.storage.example.com",
        "serviceaccount/storagebucket-controller-manager",
        "clusterrole.rbac.authorization.k8s.io/storagebucket-manager-role",
        "role.rbac.authorization.k8s.io/storagebucket-leader-election-role",
        "service/storagebucket-webhook-service",
        "service/storagebucket-controller-manager-metrics-service",
        "deployment.apps/storagebucket-controller-manager",
        "mutatingwebhookconfiguration.admissionregistration.k8s.io/storagebucket-mutating-webhook-configuration",
        "validatingwebhookconfiguration.admissionregistration.k8s.io/storagebucket-validating-webhook-configuration",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("{want} "))),
            "kubectl did not apply {want}:\n{out}"
        );
    }
    // kustomize rewrote the references: the webhooks call the prefixed Service in the
    // operator's namespace.
    let built = k.ok(&["kustomize", path_str(&default)]).await;
    let docs = objects(&built);
    let mutating = docs
        .iter()
        .find(|d| d["kind"] == "MutatingWebhookConfiguration")
        .expect("mutating configuration");
    let service = &mutating["webhooks"][0]["clientConfig"]["service"];
    assert_eq!(service["name"], "storagebucket-webhook-service");
    assert_eq!(service["namespace"], "storagebucket-system");

    // The stream of --print-manifests, applied for real: the namespace exists already,
    // everything else is created.
    let stream = dir.path().join("all.yaml");
    let yaml = m.yaml().expect("yaml");
    let count = objects(&yaml).len();
    std::fs::write(&stream, &yaml).expect("write");
    let out = k.ok(&["apply", "-f", path_str(&stream)]).await;
    assert_eq!(out.lines().count(), count, "{out}");
    let created = out.lines().filter(|l| l.ends_with(" created")).count();
    assert_eq!(created, count - 1, "{out}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configurations_name_the_served_paths() {
    let m = manifests();
    let yaml = m.yaml().expect("yaml");
    let configured: Vec<String> = objects(&yaml)
        .iter()
        .filter(|d| {
            d["kind"]
                .as_str()
                .is_some_and(|k| k.ends_with("WebhookConfiguration"))
        })
        .flat_map(|d| d["webhooks"].as_array().cloned().unwrap_or_default())
        .map(|w| {
            w["clientConfig"]["service"]["path"]
                .as_str()
                .expect("path")
                .to_string()
        })
        .collect();
    assert_eq!(configured.len(), 2, "{configured:?}");

    // The operator's manager, serving its webhooks on a local server.
    let env = common::env().await;
    let (server, ca_pem) = common::webhook_server();
    let opts = Options {
        metrics_bind_address: "0".into(),
        webhook_server: Some(server.clone()),
        controller: unchecked_names(),
        ..Default::default()
    };
    let cfg = operator::controller::Config::default();
    let mgr = operator::setup::manager(env.client(), opts, &cfg, true).expect("manager");
    let stop = CancellationToken::new();
    let running = {
        let (mgr, stop) = (mgr.clone(), stop.clone());
        tokio::spawn(async move { mgr.start(stop).await })
    };
    mgr.elected().await;
    let addr = server.local_addr().expect("bound");
    for path in &configured {
        let uid = format!("review-{}", path.len());
        let review = admission_review(&uid);
        let (status, body) = post(addr, &ca_pem, path, &review).await;
        assert_eq!(status, 200, "{path}: {body}");
        let answer: Value = serde_json::from_str(&body).expect("AdmissionReview");
        assert_eq!(answer["response"]["uid"], uid.as_str(), "{path}: {body}");
    }
    stop.cancel();
    running.await.expect("task").expect("manager");
}

/// An AdmissionReview of a StorageBucket create.
fn admission_review(uid: &str) -> Value {
    let bucket = json!({
        "apiVersion": "storage.example.com/v1",
        "kind": "StorageBucket",
        "metadata": {"name": "b", "namespace": "default"},
        "spec": {"endpoint": "https://objects.example.com/b"},
    });
    json!({
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "storage.example.com", "version": "v1", "kind": "StorageBucket"},
            "resource": {"group": "storage.example.com", "version": "v1", "resource": "storagebuckets"},
            "operation": "CREATE",
            "namespace": "default",
            "name": "b",
            "userInfo": {"username": "test"},
            "object": bucket,
        },
    })
}

/// POSTs `body` as JSON to `path` on the TLS server at `addr` (trusting `ca_pem`):
/// status and response body.
async fn post(addr: std::net::SocketAddr, ca_pem: &str, path: &str, body: &Value) -> (u16, String) {
    let cfg = tls_support::ca_client(ca_pem, tls_support::Versions::Any);
    let tls = tls_support::connect(addr, cfg).await.expect("TLS");
    let body = body.to_string();
    let req = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    tls_support::exchange(tls, &req).await
}
