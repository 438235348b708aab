//! Manifests from the running code (`ctrl::manifests`, `--print-manifests`), on the
//! StorageBucket operator: its manager is built as deployed on a client that is never
//! dialled, and what it says it watches and serves becomes the kustomize layout
//! `config/` and one YAML stream. The real `kubectl apply --dry-run=server -k
//! config/default` against ctrl-envtest accepts the layout (kustomize's namespace and
//! name prefix over the bases), the real `kubectl apply -f` of the stream creates every
//! object, and the webhook configurations name exactly the paths the manager serves:
//! an AdmissionReview POSTed to each path is answered. By default the operator makes its
//! own certificates: its cert rotator fills the shipped Secret and injects the CA into the
//! generated configurations; the cert-manager overlay, once uncommented, applies too.

use crate::common;
use crate::examples_storagebucket as operator;
use crate::tls_support;

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
        "config/webhook/secret.yaml",
        "config/prometheus/monitor.yaml",
        "config/certmanager/kustomization.yaml",
        "config/certmanager/certificate.yaml",
        "config/certmanager/kustomizeconfig.yaml",
        "config/default/cert_manager_deployment_patch.yaml",
        "config/default/cert_manager_cainjection_patch.yaml",
    ] {
        assert!(paths.contains(&want), "no {want} in {paths:?}");
    }
    for (path, text) in &files {
        // kustomize's own files: a transformer configuration, a JSON patch.
        if path.ends_with("kustomizeconfig.yaml") || path.ends_with("deployment_patch.yaml") {
            continue;
        }
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
        "secret/storagebucket-webhook-server-cert",
        "role.rbac.authorization.k8s.io/storagebucket-manager-role",
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
    // By default the operator rotates its own certificates: no --webhook-cert-path, a
    // writable emptyDir for the files, and RBAC on its Secret and configurations.
    let deployment = kind(&docs, "Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    let args = pod["containers"][0]["args"].to_string();
    assert!(!args.contains("--webhook-cert-path"), "{args}");
    assert!(pod["volumes"][0]["emptyDir"].is_object(), "{pod}");
    let role = docs
        .iter()
        .find(|d| d["kind"] == "Role" && d["metadata"]["name"] == "storagebucket-manager-role")
        .expect("the rotator's Role");
    assert_eq!(role["metadata"]["namespace"], "storagebucket-system");
    assert_eq!(
        role["rules"][0]["resourceNames"],
        json!(["storagebucket-webhook-server-cert"]),
        "{role}"
    );
    let cluster_role = kind(&docs, "ClusterRole").to_string();
    for name in [
        "storagebucket-mutating-webhook-configuration",
        "storagebucket-validating-webhook-configuration",
    ] {
        assert!(cluster_role.contains(name), "{cluster_role}");
    }

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

/// The first object of `kind` in `docs`.
fn kind<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind}"))
}

/// cert-manager's Issuer and Certificate kinds, schemaless: enough for a server-side
/// dry run of the overlay without cert-manager.
fn cert_manager_crds() -> String {
    ["Issuer", "Certificate"]
        .map(|k| {
            let plural = format!("{}s", k.to_lowercase());
            format!(
                "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
                 metadata:\n  name: {plural}.cert-manager.io\nspec:\n  group: cert-manager.io\n\
                 \x20 names:\n    kind: {k}\n    plural: {plural}\n  scope: Namespaced\n  versions:\n\
                 \x20 - name: v1\n    served: true\n    storage: true\n    schema:\n\
                 \x20     openAPIV3Schema:\n        type: object\n\
                 \x20       x-kubernetes-preserve-unknown-fields: true\n"
            )
        })
        .join("---\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cert_manager_overlay_applies_once_uncommented() {
    if !kubectl::found() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), &manifests().files().expect("files"));
    // Enable it as a user does: uncomment the lines that start with '#' and no space.
    let default = dir.path().join("config/default");
    let k_path = default.join("kustomization.yaml");
    let text = std::fs::read_to_string(&k_path).expect("read");
    let enabled: String = text
        .lines()
        .map(|l| match l.strip_prefix('#') {
            Some(rest) if rest.starts_with('-') || rest == "patches:" => rest,
            _ => l,
        })
        .map(|l| format!("{l}\n"))
        .collect();
    assert_ne!(enabled, text, "nothing to uncomment:\n{text}");
    std::fs::write(&k_path, enabled).expect("write");

    let env = Environment::builder().start().await.expect("envtest");
    let k = Kubectl::new(&env);
    let built = k.ok(&["kustomize", path_str(&default)]).await;
    let docs = objects(&built);
    // The manager is pointed at the mounted Secret, which cert-manager writes.
    let pod = &kind(&docs, "Deployment")["spec"]["template"]["spec"];
    let args = pod["containers"][0]["args"].to_string();
    assert!(
        args.contains("--webhook-cert-path=/tmp/k8s-webhook-server/serving-certs"),
        "{args}"
    );
    assert_eq!(
        pod["volumes"][0]["secret"]["secretName"], "storagebucket-webhook-server-cert",
        "{pod}"
    );
    assert!(pod["volumes"][0].get("emptyDir").is_none(), "{pod}");
    let cert = &kind(&docs, "Certificate")["spec"];
    assert_eq!(cert["secretName"], "storagebucket-webhook-server-cert");
    assert_eq!(cert["issuerRef"]["name"], "storagebucket-selfsigned-issuer");
    assert_eq!(
        cert["dnsNames"][0],
        "storagebucket-webhook-service.storagebucket-system.svc"
    );
    for config in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        let inject =
            &kind(&docs, config)["metadata"]["annotations"]["cert-manager.io/inject-ca-from"];
        assert_eq!(
            inject, "storagebucket-system/storagebucket-serving-cert",
            "{config}"
        );
    }
    // With cert-manager's kinds served, the server accepts the overlay.
    let crds = dir.path().join("cert-manager-crds.yaml");
    std::fs::write(&crds, cert_manager_crds()).expect("write");
    k.ok(&["apply", "-f", path_str(&crds)]).await;
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/certificates.cert-manager.io",
        "crd/issuers.cert-manager.io",
    ])
    .await;
    k.ok(&["create", "namespace", "storagebucket-system"]).await;
    let out = k
        .ok(&["apply", "--dry-run=server", "-k", path_str(&default)])
        .await;
    for want in [
        "issuer.cert-manager.io/storagebucket-selfsigned-issuer",
        "certificate.cert-manager.io/storagebucket-serving-cert",
        "deployment.apps/storagebucket-controller-manager",
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(&format!("{want} "))),
            "kubectl did not apply {want}:\n{out}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rotator_fills_the_shipped_secret_and_injects_the_generated_configurations() {
    use k8s_openapi::api::core::v1::Secret;
    use kube::api::Api;
    use kube::runtime::wait::await_condition;

    if !kubectl::found() {
        return;
    }
    let m = manifests();
    let dir = tempfile::tempdir().expect("tempdir");
    let stream = dir.path().join("all.yaml");
    std::fs::write(&stream, m.yaml().expect("yaml")).expect("write");
    let env = Environment::builder().start().await.expect("envtest");
    Kubectl::new(&env)
        .ok(&["apply", "-f", path_str(&stream)])
        .await;

    // The operator as `ctrl::cli` runs it on a cluster without --webhook-cert-path (its
    // files in a directory of this test's own).
    let server = ctrl::webhook::Server::new(ctrl::webhook::Options {
        host: "127.0.0.1".into(),
        port: 0,
        cert_dir: dir.path().join("certs"),
        ..Default::default()
    });
    let opts = Options {
        metrics_bind_address: "0".into(),
        webhook_server: Some(server),
        controller: unchecked_names(),
        ..Default::default()
    };
    let cfg = operator::controller::Config::default();
    let mgr = operator::setup::manager(env.client(), opts, &cfg, true).expect("manager");
    let rotator =
        ctrl::cli::certs::add_rotator("storagebucket", env.client(), &mgr, &Args::default())
            .expect("rotator")
            .expect("it rotates: webhooks and no --webhook-cert-path");
    assert_eq!(rotator.options().secret_namespace, "storagebucket-system");
    let stop = CancellationToken::new();
    let running = {
        let (mgr, stop) = (mgr.clone(), stop.clone());
        tokio::spawn(async move { mgr.start(stop).await })
    };

    // The shipped Secret gets the CA; both generated configurations get it as caBundle.
    let secrets: Api<Secret> = Api::namespaced(env.client(), "storagebucket-system");
    let has_ca = |s: Option<&Secret>| {
        s.and_then(|s| s.data.as_ref())
            .is_some_and(|d| d.contains_key("ca.crt"))
    };
    let secret = await_condition(secrets, "storagebucket-webhook-server-cert", has_ca)
        .await
        .expect("watch")
        .expect("secret");
    let ca = secret.data.expect("data")["ca.crt"].0.clone();
    for kind in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        let name = format!(
            "storagebucket-{}",
            kind.replace("WebhookConfiguration", "").to_lowercase()
        );
        carries_ca(&env, kind, &format!("{name}-webhook-configuration"), &ca).await;
    }
    // The rotator marks itself injected after its writes return (the watch above may see
    // them first) and writes the files next, before the webhook server (a later group)
    // starts: once the manager is elected, both are done.
    mgr.elected().await;
    assert!(rotator.is_injected());
    assert!(dir.path().join("certs/tls.crt").exists());
    stop.cancel();
    running.await.expect("task").expect("manager");
}

/// Waits (on its watch) until every webhook of configuration `kind/name` has `ca` (PEM)
/// as its `caBundle`.
async fn carries_ca(env: &Environment, kind: &str, name: &str, ca: &[u8]) {
    use base64::Engine;
    use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind};
    let gvk = GroupVersionKind::gvk("admissionregistration.k8s.io", "v1", kind);
    let api: Api<DynamicObject> = Api::all_with(env.client(), &ApiResource::from_gvk(&gvk));
    let want = serde_json::json!(base64::engine::general_purpose::STANDARD.encode(ca));
    let cond = move |c: Option<&DynamicObject>| {
        let hooks = c
            .and_then(|c| c.data["webhooks"].as_array().cloned())
            .unwrap_or_default();
        !hooks.is_empty() && hooks.iter().all(|w| w["clientConfig"]["caBundle"] == want)
    };
    kube::runtime::wait::await_condition(api, name, cond)
        .await
        .expect("watch");
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
