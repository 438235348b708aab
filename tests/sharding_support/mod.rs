//! A sharded fleet on one ctrl-envtest for the sharding tests: a sharder, shards that
//! reconcile ConfigMaps of one namespace and record every reconcile's start and stop
//! (the audit), and helpers to crash, stop and add shards.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use ctrl::leaderelection::ElectorConfig;
use ctrl::manager::{Manager, Options};
use ctrl::prelude::*;
use ctrl::sharding::{
    ControllerRing, GroupResource, HashRing, RingResource, Shard, Sharder, SharderOptions,
    key_for_object, label_drain, label_shard,
};
use ctrl_envtest::wait::Wait;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, ListParams, PostParams};
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The ring every test uses.
pub const RING: &str = "test";
/// The namespace of the sharded ConfigMaps and of the shard leases.
pub const NS: &str = "sharded";
/// The shards' lease duration (short, so crashes are noticed quickly).
pub const LEASE: Duration = Duration::from_secs(2);
/// The sharder's full-sync period.
pub const SYNC: Duration = Duration::from_secs(3);

/// One reconcile: which shard ran it on which object, from when to when.
#[derive(Clone, Debug)]
pub struct Run {
    pub object: String,
    pub shard: String,
    pub start: Instant,
    pub end: Instant,
}

/// Every reconcile of every shard.
pub type Audit = Arc<Mutex<Vec<Run>>>;

/// A running manager and how to stop it.
pub struct Running {
    pub id: String,
    pub mgr: Manager,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl Running {
    /// Whether the manager is still running (a shard that lost its lease stops).
    pub fn is_running(&self) -> bool {
        !self.task.is_finished()
    }

    /// Stops the manager and waits until it has stopped.
    pub async fn stop(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }
}

/// A fresh envtest with the ControllerRing CRD, the namespace and the ring.
pub async fn env() -> ctrl_envtest::Environment {
    let env = ctrl_envtest::Environment::builder()
        .crd(ctrl::sharding::controllerring_crd())
        .start()
        .await
        .expect("envtest");
    let client = env.client();
    let ns = Namespace {
        metadata: kube::api::ObjectMeta {
            name: Some(NS.into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .expect("namespace");
    let ring = ControllerRing::with_resources(
        RING,
        vec![RingResource {
            group_resource: GroupResource::new("", "configmaps"),
            controlled_resources: vec![],
        }],
    );
    Api::<ControllerRing>::all(client)
        .create(&PostParams::default(), &ring)
        .await
        .expect("ring");
    env
}

fn options() -> Options {
    Options {
        metrics_bind_address: "0".into(),
        graceful_shutdown_timeout: Duration::from_secs(10),
        ..Default::default()
    }
}

fn run(id: String, mgr: Manager) -> Running {
    let stop = CancellationToken::new();
    let token = stop.clone();
    let running = mgr.clone();
    let task = tokio::spawn(async move {
        if let Err(error) = mgr.start(token).await {
            tracing::warn!(%error, "manager stopped with an error");
        }
    });
    Running {
        id,
        mgr: running,
        stop,
        task,
    }
}

/// Starts the sharder of [`RING`] (its own manager, no leader election).
pub fn start_sharder(client: kube::Client) -> Running {
    start_sharder_with(client, SYNC, false)
}

/// Starts the sharder of [`RING`] with its webhook served on a loopback port with a
/// self-signed certificate and registered with the API server, as `appservice
/// --sharded` runs it.
pub fn start_sharder_with_webhook(client: kube::Client) -> Running {
    start_sharder_with(client, SYNC, true)
}

/// Starts the sharder of [`RING`] with full syncs every `sync_period`, and with
/// `webhook` its webhook (see [`start_sharder_with_webhook`]).
pub fn start_sharder_with(client: kube::Client, sync_period: Duration, webhook: bool) -> Running {
    let mut sopts = SharderOptions::new(RING, NS);
    sopts.sync_period = sync_period;
    sopts.lease_poll = Duration::from_millis(300);
    start_sharder_opts(client, sopts, webhook)
}

/// Starts a sharder with `sopts`, and with `webhook` its webhook (see
/// [`start_sharder_with_webhook`]).
pub fn start_sharder_opts(client: kube::Client, sopts: SharderOptions, webhook: bool) -> Running {
    use ctrl::webhook::{self, Server, certs};
    let mut opts = options();
    let mut sharder = Sharder::new(client.clone(), sopts);
    let mut ca = None;
    if webhook {
        let dir = certs::temp_cert_dir().expect("cert dir");
        let generated = certs::generate_self_signed(&dir, &[]).expect("certificate");
        let server = Server::new(webhook::Options {
            host: "127.0.0.1".into(),
            port: 0,
            cert_dir: dir,
            ..Default::default()
        });
        let addr = server.bind().expect("bind webhook server");
        opts.webhook_server = Some(server);
        ca = Some((addr, generated.ca_pem));
    }
    let mgr = Manager::new(client, opts).expect("manager");
    if let Some((addr, ca_pem)) = ca {
        sharder = sharder.with_webhook_registration(format!("https://{addr}"), ca_pem);
        // The manager serves its webhook server once asked for it (Go's GetWebhookServer).
        sharder
            .register_webhook(&mgr.webhook_server())
            .expect("register webhook");
    }
    mgr.add(sharder).expect("add sharder");
    run("sharder".into(), mgr)
}

/// The lease timings of test shards; `release` false makes a stop look like a crash.
pub fn lease_config(release: bool) -> ElectorConfig {
    ElectorConfig {
        lease_duration: LEASE,
        renew_deadline: Duration::from_millis(1500),
        retry_period: Duration::from_millis(300),
        release_on_cancel: release,
        name: String::new(),
    }
}

/// Starts shard `id`: a manager whose ConfigMap cache selects the shard's label, the
/// shard lease, and a sharded controller whose reconciles (`work` long, requeued
/// after `requeue` if set) go into `audit`.
pub async fn start_shard(
    client: kube::Client,
    id: &str,
    release: bool,
    audit: Audit,
    work: Duration,
    requeue: Option<Duration>,
) -> Running {
    let shard = Shard::new(RING, id, NS).with_lease_config(lease_config(release));
    start_shard_as(client, shard, audit, work, requeue).await
}

/// Starts `shard` of [`RING`] as [`start_shard`] does, with its own lease timings.
pub async fn start_shard_as(
    client: kube::Client,
    shard: Shard,
    audit: Audit,
    work: Duration,
    requeue: Option<Duration>,
) -> Running {
    let id = shard.id().to_string();
    let mut opts = options();
    opts.cache = shard.select::<ConfigMap>(opts.cache);
    let mgr = Manager::new(client.clone(), opts).expect("manager");
    mgr.add(shard.lease(client).expect("lease"))
        .expect("add lease");
    let me = id.clone();
    ControllerBuilder::new(&mgr)
        .for_::<ConfigMap>()
        .sharded(shard)
        .named(format!("configmap-{id}"))
        .with_options(ctrl::controller::Options {
            skip_name_validation: Some(true),
            ..Default::default()
        })
        .complete(ctrl::reconcile::func(move |_ctx, req: Request| {
            let (audit, me) = (audit.clone(), me.clone());
            async move {
                let start = Instant::now();
                // A zero-length sleep still waits for the timer wheel's next tick (about a
                // millisecond): a reconcile that does no work must not sleep at all.
                if !work.is_zero() {
                    tokio::time::sleep(work).await;
                }
                audit.lock().push(Run {
                    object: req.name.clone(),
                    shard: me,
                    start,
                    end: Instant::now(),
                });
                Ok(requeue.map_or_else(Action::done, Action::requeue_after))
            }
        }))
        .expect("controller");
    run(id, mgr)
}

/// An empty ConfigMap `name` (its namespace comes from the API it is created through).
pub fn config_map(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// Creates `n` ConfigMaps `cm-0..n` in [`NS`].
pub async fn create_objects(client: &kube::Client, n: usize) {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    for i in 0..n {
        api.create(&PostParams::default(), &config_map(&format!("cm-{i}")))
            .await
            .expect("create");
    }
}

/// Object name -> its shard label (empty if none), as stored now.
pub async fn assignments(client: &kube::Client) -> BTreeMap<String, String> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let list = api.list(&ListParams::default()).await.expect("list");
    list.items
        .into_iter()
        .map(|cm| {
            let shard = cm
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(&label_shard(RING)).cloned())
                .unwrap_or_default();
            (cm.metadata.name.unwrap_or_default(), shard)
        })
        .collect()
}

/// Polls `check` until it holds or `timeout` passes; returns whether it held.
pub async fn eventually<F, Fut>(timeout: Duration, check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let wait = Wait::new().timeout(timeout);
    wait.try_until(check, |held| *held).await.is_ok()
}

/// Waits until every object is assigned to one of `live` and `n` objects exist.
pub async fn all_assigned_to(
    client: &kube::Client,
    live: &[String],
    n: usize,
    timeout: Duration,
) -> bool {
    eventually(timeout, || async {
        let a = assignments(client).await;
        a.len() == n && a.values().all(|s| live.contains(s))
    })
    .await
}

/// How many objects each of `shards` holds now (by its shard label), in that order.
pub async fn spread(client: &kube::Client, shards: &[String]) -> Vec<usize> {
    let a = assignments(client).await;
    shards
        .iter()
        .map(|id| a.values().filter(|s| *s == id).count())
        .collect()
}

/// Whether `n` objects exist and each is on the shard the hash ring of `live` picks
/// for it, with no drain pending: a join or departure has fully settled.
pub async fn settled_on(client: &kube::Client, live: &[String], n: usize) -> bool {
    let ring = HashRing::new(live.iter().map(String::as_str));
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let Ok(list) = api.list(&ListParams::default()).await else {
        return false;
    };
    list.items.len() == n
        && list.items.iter().all(|cm| {
            let labels = cm.metadata.labels.clone().unwrap_or_default();
            let key = key_for_object("", "ConfigMap", &cm.metadata).ok();
            let want = key.as_deref().and_then(|k| ring.shard_for(k));
            want.is_some()
                && labels.get(&label_shard(RING)).map(String::as_str) == want
                && !labels.contains_key(&label_drain(RING))
        })
}

/// Waits until [`settled_on`] holds.
pub async fn wait_settled(
    client: &kube::Client,
    live: &[String],
    n: usize,
    timeout: Duration,
) -> bool {
    eventually(timeout, || settled_on(client, live, n)).await
}

/// Pairs of reconciles of one object by two shards whose intervals overlap.
pub fn overlaps(audit: &[Run]) -> Vec<(Run, Run)> {
    let mut by_object: BTreeMap<&str, Vec<&Run>> = BTreeMap::new();
    for r in audit {
        by_object.entry(&r.object).or_default().push(r);
    }
    let mut out = Vec::new();
    for runs in by_object.values() {
        for (i, a) in runs.iter().enumerate() {
            for b in &runs[i + 1..] {
                if a.shard != b.shard && a.start < b.end && b.start < a.end {
                    out.push(((*a).clone(), (*b).clone()));
                }
            }
        }
    }
    out
}

/// Whether an object has been reconciled by `shard` since `since`.
pub fn reconciled_by(audit: &Audit, object: &str, shard: &str, since: Instant) -> bool {
    audit
        .lock()
        .iter()
        .any(|r| r.object == object && r.shard == shard && r.start >= since)
}

/// Waits until shards `ids` all hold their leases.
pub async fn leases_held(client: &kube::Client, ids: &[&str]) -> bool {
    let api: Api<k8s_openapi::api::coordination::v1::Lease> = Api::namespaced(client.clone(), NS);
    eventually(Duration::from_secs(10), || async {
        let list = api.list(&ListParams::default()).await.expect("leases");
        ids.iter().all(|id| {
            list.items.iter().any(|l| {
                let holder = l.spec.as_ref().and_then(|s| s.holder_identity.as_deref());
                l.metadata.name.as_deref() == Some(*id) && holder == Some(*id)
            })
        })
    })
    .await
}
