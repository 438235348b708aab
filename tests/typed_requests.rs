//! Typed requests end to end on ctrl-envtest (Go's `TypedReconciler[request]`,
//! `TypedControllerManagedBy`, `TypedEnqueueRequestsFromMapFunc`, `TypedKind`,
//! `TypedChannel`): one controller over `ClusterRequest` (a cluster name and a
//! namespace/name) is fed by ConfigMaps of two API servers — cluster "a" through the
//! builder's `watches` on the manager's cache, cluster "b" through a `Kind` source on a
//! second cache — and by a `Channel` source. The reconciler writes into the cluster its
//! request names. The queue deduplicates by request value (the same namespace/name in
//! two clusters is two requests, one request added many times while in flight is
//! reconciled once more), rate-limits each value on its own, and the metrics carry the
//! controller's name. On virtual time (tokio's paused clock, every client on the
//! servers' in-memory transport): each retry comes exactly at its backoff.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ctrl::event::GenericEvent;
use ctrl::handler::EnqueueRequestsFromMapFunc;
use ctrl::prelude::*;
use ctrl::source::{Channel, Kind};
use ctrl::workqueue::ItemExponentialFailureRateLimiter;
use ctrl_envtest::Environment;
use ctrl_envtest::wait::Wait;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

const NAME: &str = "multicluster";
const LABEL: &str = "ctrl.rs/typed";
const ANNOTATION: &str = "ctrl.rs/reconciled-in";
const WAIT: Duration = Duration::from_secs(30);
const BASE_DELAY: Duration = Duration::from_millis(20);

/// A request that names the cluster the object lives in.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct ClusterRequest {
    cluster: String,
    key: Request,
}

impl ClusterRequest {
    fn new(cluster: &str, name: &str) -> Self {
        Self {
            cluster: cluster.into(),
            key: Request::new("default", name),
        }
    }
}

/// Every reconcile, in the order they started.
type Log = Arc<Mutex<Vec<(ClusterRequest, Instant)>>>;

/// Reconciles ConfigMaps of clusters "a" and "b" by annotating them with the cluster's
/// name, through that cluster's client; requests of cluster "channel" have no object:
/// `gate` waits for the test the first time, `flaky` fails three times.
struct MultiCluster {
    clients: HashMap<String, kube::Client>,
    log: Log,
    gate: Arc<Semaphore>,
    gated: AtomicUsize,
    flaky_failures: AtomicUsize,
}

#[async_trait]
impl Reconciler<ClusterRequest> for MultiCluster {
    async fn reconcile(
        &self,
        _ctx: CancellationToken,
        req: ClusterRequest,
    ) -> Result<Action, reconcile::Error> {
        self.log.lock().push((req.clone(), Instant::now()));
        match (req.cluster.as_str(), req.key.name.as_str()) {
            ("channel", "gate") => {
                if self.gated.fetch_add(1, Ordering::SeqCst) == 0 {
                    self.gate.acquire().await?.forget();
                }
                Ok(Action::done())
            }
            ("channel", "flaky") => {
                if self.flaky_failures.fetch_add(1, Ordering::SeqCst) < 3 {
                    return Err(reconcile::Error::new(std::io::Error::other("not yet")));
                }
                Ok(Action::done())
            }
            ("channel", _) => Ok(Action::done()),
            (cluster, _) => self.annotate(cluster, &req.key).await,
        }
    }
}

impl MultiCluster {
    /// Marks the ConfigMap `key` of `cluster` as reconciled there (once).
    async fn annotate(&self, cluster: &str, key: &Request) -> Result<Action, reconcile::Error> {
        let Some(client) = self.clients.get(cluster) else {
            return Err(reconcile::Error::terminal(std::io::Error::other(format!(
                "unknown cluster {cluster}"
            ))));
        };
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &key.namespace);
        let Some(cm) = api.get_opt(&key.name).await? else {
            return Ok(Action::done());
        };
        if annotation(&cm).as_deref() != Some(cluster) {
            let patch = json!({ "metadata": { "annotations": { ANNOTATION: cluster } } });
            api.patch(&key.name, &PatchParams::default(), &Patch::Merge(patch))
                .await?;
        }
        Ok(Action::done())
    }
}

fn annotation(cm: &ConfigMap) -> Option<String> {
    cm.metadata.annotations.as_ref()?.get(ANNOTATION).cloned()
}

/// The handler that turns labelled ConfigMaps of `cluster` into its requests.
fn to_cluster(cluster: &'static str) -> EnqueueRequestsFromMapFunc<ConfigMap, ClusterRequest> {
    EnqueueRequestsFromMapFunc::new(move |cm: &Arc<ConfigMap>| {
        let labelled = cm
            .metadata
            .labels
            .as_ref()
            .is_some_and(|l| l.contains_key(LABEL));
        if !labelled {
            return Vec::new();
        }
        vec![ClusterRequest {
            cluster: cluster.to_string(),
            key: Request::from_obj(cm.as_ref()),
        }]
    })
}

fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            labels: Some([(LABEL.to_string(), "yes".to_string())].into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Polls `cond` until it holds; panics after [`WAIT`] (ctrl-envtest's poll, every 10 ms).
async fn eventually<F: std::future::Future<Output = bool>>(what: &str, cond: impl Fn() -> F) {
    Wait::new()
        .timeout(WAIT)
        .interval(Duration::from_millis(10))
        .until(what, cond, |held| *held)
        .await;
}

/// When each reconcile of `req` started.
fn starts(log: &Log, req: &ClusterRequest) -> Vec<Instant> {
    log.lock()
        .iter()
        .filter(|(r, _)| r == req)
        .map(|(_, t)| *t)
        .collect()
}

/// Waits until `req` has been reconciled `n` times.
async fn reconciled(log: &Log, req: &ClusterRequest, n: usize) {
    eventually(&format!("{n} reconciles of {req:?}"), || async {
        starts(log, req).len() >= n
    })
    .await;
}

/// The `controller_runtime_reconcile_total{controller=NAME, result}` counter.
fn reconcile_total(result: &str) -> f64 {
    counter(
        "controller_runtime_reconcile_total",
        "controller",
        Some(result),
    )
}

fn counter(family: &str, label: &str, result: Option<&str>) -> f64 {
    let families = ctrl::metrics::registry().gather();
    let Some(mf) = families.iter().find(|mf| mf.name() == family) else {
        return 0.0;
    };
    mf.get_metric()
        .iter()
        .filter(|m| {
            let has = |k: &str, v: &str| {
                m.get_label()
                    .iter()
                    .any(|l| l.name() == k && l.value() == v)
            };
            has(label, NAME) && result.is_none_or(|r| has("result", r))
        })
        .map(|m| m.get_counter().get_value())
        .sum()
}

#[tokio::test(start_paused = true)]
async fn a_controller_of_cluster_requests_from_two_api_servers_and_a_channel() {
    let env_a = Environment::start().await.expect("envtest a");
    let env_b = Environment::start().await.expect("envtest b");
    let opts = ctrl::Options {
        metrics_bind_address: "0".into(),
        health_probe_bind_address: "0".into(),
        ..Default::default()
    };
    let mgr = Manager::new(env_a.in_memory_client(), opts).expect("manager");
    let cache_b = Cache::new(env_b.in_memory_client(), Default::default());
    mgr.add(cache_b.clone()).expect("add cache b");

    let log = Log::default();
    let gate = Arc::new(Semaphore::new(0));
    let reconciler = MultiCluster {
        clients: HashMap::from([
            ("a".into(), env_a.in_memory_client()),
            ("b".into(), env_b.in_memory_client()),
        ]),
        log: log.clone(),
        gate: gate.clone(),
        gated: AtomicUsize::new(0),
        flaky_failures: AtomicUsize::new(0),
    };
    let (tx, rx) = mpsc::channel::<GenericEvent<ConfigMap>>(64);
    let controller = ControllerBuilder::<ClusterRequest>::typed(&mgr)
        .named(NAME)
        .watches::<ConfigMap>(to_cluster("a"))
        .watches_raw_source(Kind::<ConfigMap, ClusterRequest>::new(
            &cache_b,
            to_cluster("b"),
        ))
        .watches_raw_source(Channel::new(rx, to_cluster("channel")))
        .with_options(ctrl::controller::Options {
            max_concurrent_reconciles: 2,
            rate_limiter: Some(Arc::new(ItemExponentialFailureRateLimiter::new(
                BASE_DELAY,
                Duration::from_secs(10),
            ))),
            ..Default::default()
        })
        .build(reconciler)
        .expect("build");
    mgr.add(controller.clone()).expect("add controller");
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (mgr, stop) = (mgr.clone(), stop.clone());
        async move { mgr.start(stop).await }
    });

    // The same namespace/name in two clusters: two requests, each reconciled through
    // its own cluster's client.
    for env in [&env_a, &env_b] {
        let api: Api<ConfigMap> = Api::namespaced(env.in_memory_client(), "default");
        api.create(&PostParams::default(), &config_map("shared"))
            .await
            .expect("create");
    }
    for (cluster, env) in [("a", &env_a), ("b", &env_b)] {
        let api: Api<ConfigMap> = Api::namespaced(env.in_memory_client(), "default");
        eventually(
            &format!("the ConfigMap of cluster {cluster} annotated"),
            || {
                let api = api.clone();
                async move {
                    let cm = api.get("shared").await.expect("get");
                    annotation(&cm).as_deref() == Some(cluster)
                }
            },
        )
        .await;
        assert!(!starts(&log, &ClusterRequest::new(cluster, "shared")).is_empty());
    }

    // One request added many times while it is being reconciled is reconciled once
    // more, not once per add.
    let send = |name: &str| {
        let tx = tx.clone();
        let event = GenericEvent {
            object: Arc::new(config_map(name)),
        };
        async move { tx.send(event).await.expect("send") }
    };
    let gate_req = ClusterRequest::new("channel", "gate");
    send("gate").await;
    reconciled(&log, &gate_req, 1).await;
    for _ in 0..10 {
        send("gate").await;
    }
    send("sentinel-1").await;
    reconciled(&log, &ClusterRequest::new("channel", "sentinel-1"), 1).await;
    assert_eq!(starts(&log, &gate_req).len(), 1, "the gate is in flight");
    gate.add_permits(1);
    reconciled(&log, &gate_req, 2).await;
    send("sentinel-2").await;
    reconciled(&log, &ClusterRequest::new("channel", "sentinel-2"), 1).await;
    assert_eq!(
        starts(&log, &gate_req).len(),
        2,
        "eleven adds, two reconciles"
    );

    // A failing request is retried with its own exponential backoff, exactly, then
    // forgotten.
    let flaky = ClusterRequest::new("channel", "flaky");
    send("flaky").await;
    reconciled(&log, &flaky, 4).await;
    let attempts = starts(&log, &flaky);
    for (i, pair) in attempts.windows(2).enumerate() {
        let want = BASE_DELAY * 2u32.pow(i as u32);
        let gap = pair[1] - pair[0];
        assert_eq!(
            gap, want,
            "retry {i} came at another instant than its backoff"
        );
    }
    let queue = controller
        .queue()
        .await
        .expect("started controller has a queue");
    eventually("the flaky request forgotten", || async {
        queue.num_requeues(&flaky) == 0
    })
    .await;
    assert_eq!(queue.num_requeues(&gate_req), 0);

    // The controller's series carry its name; only the flaky attempts failed.
    assert_eq!(reconcile_total("error"), 3.0);
    assert!(
        reconcile_total("success") >= 6.0,
        "{}",
        reconcile_total("success")
    );
    assert!(counter("workqueue_retries_total", "name", None) >= 3.0);
    assert!(counter("workqueue_adds_total", "name", None) >= 6.0);

    stop.cancel();
    running.await.expect("join").expect("manager stops cleanly");
}
