//! The StorageBucket operator as its own ServiceAccount (a token from the TokenRequest
//! API) with exactly the RBAC its code generates (`--print-rbac`, what
//! `examples/manifests/02-rbac.yaml` holds), on ctrl-envtest with RBAC on: it elects
//! itself, reconciles buckets without a single error (so without a Forbidden), and its
//! secure metrics endpoint answers 401 / 403 / 200. With one verb taken away (`update`
//! on storagebuckets: the finalizer cannot be added) every reconcile fails with
//! Forbidden and `controller_runtime_reconcile_errors_total` rises.

mod common;
#[allow(dead_code)]
#[path = "../examples/storagebucket/mod.rs"]
mod operator;
mod support;
mod tls_support;

use std::net::SocketAddr;
use std::time::Duration;

use common::{available, buckets_api, create_bucket, status, wait_until};
use ctrl::manager::{Args, Options};
use ctrl::rbac::{Object, Rules};
use ctrl_envtest::Environment;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use kube::api::{Api, PostParams};
use operator::store::ObjectStore;
use tls_support::{sa_token, scrape_secure};
use tokio_util::sync::CancellationToken;

const NS: &str = "storagebucket-system";
const SA: &str = "storagebucket-controller-manager";

/// The operator's options as deployed: leader election in its namespace, secure metrics.
fn deployed() -> Options {
    ctrl::cli::print::deployed_options(
        "storagebucket",
        Options {
            leader_election_id: operator::LEASE_NAME.into(),
            ..Args::default().options()
        },
    )
}

/// The rules `storagebucket --print-rbac` prints (the controller named `name`: names
/// are unique in a process, and the rules do not depend on it).
async fn generated_rules(name: &str) -> Rules {
    let client = ctrl::cli::print::offline_client().expect("offline client");
    let cfg = operator::controller::Config {
        name: name.into(),
        ..Default::default()
    };
    let mgr =
        operator::setup::manager(client, deployed(), &cfg, true).expect("the operator's manager");
    mgr.rbac_rules()
}

/// Creates every object of the manifest for `rules` (as `kubectl apply` would).
async fn install(admin: &kube::Client, rules: &Rules) {
    let pp = PostParams::default();
    let ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": NS}})).expect("namespace");
    Api::<Namespace>::all(admin.clone())
        .create(&pp, &ns)
        .await
        .expect("namespace");
    for o in ctrl::cli::print::manifest("storagebucket").objects(rules) {
        let created = match o {
            Object::ServiceAccount(x) => Api::<ServiceAccount>::namespaced(admin.clone(), NS)
                .create(&pp, &x)
                .await
                .map(drop),
            Object::ClusterRole(x) => Api::<ClusterRole>::all(admin.clone())
                .create(&pp, &x)
                .await
                .map(drop),
            Object::ClusterRoleBinding(x) => Api::<ClusterRoleBinding>::all(admin.clone())
                .create(&pp, &x)
                .await
                .map(drop),
            Object::Role(x) => Api::<Role>::namespaced(admin.clone(), NS)
                .create(&pp, &x)
                .await
                .map(drop),
            Object::RoleBinding(x) => Api::<RoleBinding>::namespaced(admin.clone(), NS)
                .create(&pp, &x)
                .await
                .map(drop),
        };
        created.expect("create an RBAC object");
    }
}

/// The operator running as its ServiceAccount; returns its metrics address.
async fn run_as_sa(env: &Environment, name: &str, stop: &CancellationToken) -> SocketAddr {
    let token = sa_token(&env.client(), NS, SA).await;
    let mut cfg = env.config();
    cfg.auth_info.token = Some(token.into());
    let client = kube::Client::try_from(cfg).expect("ServiceAccount client");
    let cfg = operator::controller::Config {
        name: name.into(),
        probe_interval: Duration::from_millis(200),
    };
    let mgr = operator::setup::manager(client, deployed(), &cfg, false).expect("manager");
    let addr = mgr.metrics_addr().expect("metrics bound");
    let (m, s) = (mgr.clone(), stop.clone());
    tokio::spawn(async move { m.start(s).await });
    tokio::time::timeout(common::WAIT, mgr.elected())
        .await
        .expect("elected with the generated Lease rules");
    addr
}

/// Everything logged in this test process (a `tracing` subscriber writing here).
fn logs() -> &'static std::sync::Mutex<Vec<u8>> {
    static LOGS: std::sync::OnceLock<std::sync::Mutex<Vec<u8>>> = std::sync::OnceLock::new();
    LOGS.get_or_init(|| {
        let _ = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(|| LogWriter)
            .try_init();
        std::sync::Mutex::new(Vec::new())
    })
}

struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Ok(mut l) = logs().lock() {
            l.extend_from_slice(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// `controller_runtime_reconcile_errors_total` of `controller`, scraped with the admin.
async fn reconcile_errors(env: &Environment, addr: SocketAddr, controller: &str) -> f64 {
    let (code, body) = scrape_secure(addr, Some(env.admin_token())).await;
    assert_eq!(code, 200, "{body}");
    support::sample_sum(
        &body,
        "controller_runtime_reconcile_errors_total",
        &[("controller", controller)],
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_exactly_the_generated_rbac_it_reconciles_without_a_forbidden() {
    let stop = CancellationToken::new();
    let env = common::env().await;
    let store = ObjectStore::start(stop.clone()).await.expect("store");
    install(&env.client(), &generated_rules("generated-1").await).await;
    let name = "storagebucket-as-sa";
    let addr = run_as_sa(&env, name, &stop).await;

    let api = buckets_api(env.client());
    create_bucket(&api, "photos", &store.bucket_url("photos")).await;
    let got = wait_until(&api, "photos", "available", |o| available(o) == Some(true)).await;
    assert_eq!(status(got.as_ref())["conditions"][0]["reason"], "Reachable");
    store.set_healthy(false);
    wait_until(&api, "photos", "unavailable", |o| {
        available(o) == Some(false)
    })
    .await;
    // No request of the operator was refused. (A reconcile may still fail on a 409 when the
    // cache lags its own write, so the errors metric is no measure of RBAC.)
    let refused: Vec<_> = (env.faults().requests().into_iter())
        .filter(|r| r.status == 403)
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(refused.is_empty(), "refused: {refused:?}");

    // Its metrics: 401 without a token, 403 for its own ServiceAccount (not a reader).
    assert_eq!(scrape_secure(addr, None).await.0, 401);
    let own = sa_token(&env.client(), NS, SA).await;
    let (code, body) = scrape_secure(addr, Some(&own)).await;
    assert_eq!(code, 403, "{body}");
    stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_one_verb_removed_reconciles_fail_forbidden() {
    logs();
    let stop = CancellationToken::new();
    let env = common::env().await;
    let store = ObjectStore::start(stop.clone()).await.expect("store");
    let mut rules = generated_rules("generated-2").await;
    let buckets = rules
        .cluster
        .iter_mut()
        .find(|r| r.resources.as_deref() == Some(&["storagebuckets".to_string()][..]))
        .expect("the storagebuckets rule");
    buckets.verbs.retain(|v| v != "update");
    install(&env.client(), &rules).await;
    let name = "storagebucket-no-update";
    let addr = run_as_sa(&env, name, &stop).await;

    let api = buckets_api(env.client());
    create_bucket(&api, "photos", &store.bucket_url("photos")).await;
    // Adding the finalizer is an update: Forbidden, so the reconcile fails (and retries).
    let deadline = tokio::time::Instant::now() + common::WAIT;
    while reconcile_errors(&env, addr, name).await < 2.0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "reconcile errors did not rise"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let got = api.get("photos").await.expect("bucket");
    assert!(status(Some(&got)).is_null(), "never reconciled: {got:?}");
    // ... and the error logged is the API server's Forbidden.
    let text = String::from_utf8_lossy(&logs().lock().expect("logs")).to_string();
    let forbidden = text
        .lines()
        .find(|l| l.contains(name) && l.contains("Forbidden"));
    assert!(
        forbidden.is_some_and(|l| l.contains("cannot update resource \"storagebuckets\"")),
        "no Forbidden reconcile error logged:\n{text}"
    );
    stop.cancel();
}
