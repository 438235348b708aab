//! Ownership across replicas: replicas of one multi-cluster operator, each in its own
//! tokio runtime (so that killing one drops every task it had, as a crash does), share
//! four member clusters registered as kubeconfig Secrets on a hub through the sharded
//! coordinator's peer and fence Leases. Over 20 crashes and joins, every member is
//! worked on by exactly one live replica once things settle, the reconciles of one
//! member never overlap across replicas (audited from the reconcile intervals), each
//! member's new objects are written by its owner, `cluster()` on a non-owner fails,
//! and a killed replica's members move to the survivors once its fences expire.

use crate::multicluster_support;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ctrl_envtest::Environment;
use ctrl_runtime::controller::{Controller, Options as ControllerOptions};
use ctrl_runtime::manager::{Manager, Options};
use ctrl_runtime::multicluster::{
    self, ClusterName, ClusterReconciler, ClusterRequest, Coordinator, CoordinatorConfig,
    KubeconfigSecretProvider, Peer, rendezvous_owner,
};
use ctrl_runtime::reconcile::{self, Action, Reconciler};
use ctrl_runtime::source::BoxSource;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams};
use multicluster_support::*;
use parking_lot::Mutex;
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const MEMBERS: usize = 4;

/// One reconcile: which replica, which request, when it started and ended.
type Audit = Arc<Mutex<Vec<(String, ClusterRequest, Instant, Instant)>>>;

/// Writes its replica's identity on each ConfigMap and records the reconcile.
struct Owner {
    id: String,
    mgr: multicluster::Manager,
    audit: Audit,
}

#[async_trait]
impl Reconciler<ClusterRequest> for Owner {
    async fn reconcile(
        &self,
        _ctx: CancellationToken,
        req: ClusterRequest,
    ) -> Result<Action, reconcile::Error> {
        let start = Instant::now();
        let kube = self.mgr.cluster(&req.cluster)?.kube_client();
        let api: Api<ConfigMap> = Api::namespaced(kube, &req.namespace);
        let patch = json!({ "metadata": { "annotations": { ANNOTATION: self.id } } });
        let res = api
            .patch(&req.name, &PatchParams::default(), &Patch::Merge(patch))
            .await;
        self.audit
            .lock()
            .push((self.id.clone(), req, start, Instant::now()));
        match res {
            Err(kube::Error::Api(e)) if e.code == 404 => Ok(Action::done()),
            other => other.map(|_| Action::done()).map_err(Into::into),
        }
    }
}

/// A replica running in a runtime of its own; dropping the runtime kills it.
struct Replica {
    id: String,
    mgr: multicluster::Manager,
    runtime: tokio::runtime::Runtime,
}

async fn start_replica(hub: &Environment, n: usize, audit: &Audit) -> Replica {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let id = format!("replica-{n}");
    let cfg = CoordinatorConfig {
        namespace: "default".into(),
        identity: id.clone(),
        lease_duration: Duration::from_secs(2),
        peer_ttl: Duration::from_secs(2),
        probe: Duration::from_millis(200),
        ..Default::default()
    };
    let (hub_client, audit, me) = (hub.client(), audit.clone(), id.clone());
    let setup = runtime.spawn(async move {
        let opts = Options {
            metrics_bind_address: "0".into(),
            ..Default::default()
        };
        let local = Manager::new(hub_client.clone(), opts).expect("manager");
        let mgr = Coordinator::manager(local.clone(), cfg).expect("coordinated manager");
        mgr.add_provider(KubeconfigSecretProvider::new(hub_client, "default"))
            .expect("provider");
        let owner = Owner {
            id: me.clone(),
            mgr: mgr.clone(),
            audit,
        };
        let controller = Controller::<ClusterRequest>::with_sources(
            "replicas",
            ClusterReconciler::new(&mgr, owner),
            ControllerOptions {
                skip_name_validation: Some(true),
                ..Default::default()
            },
            vec![Arc::new(config_maps(&mgr)) as BoxSource<ClusterRequest>],
        )
        .expect("controller");
        local.add(controller).expect("add controller");
        tokio::spawn(async move { local.start(CancellationToken::new()).await });
        mgr
    });
    let mgr = setup.await.expect("replica set up");
    Replica { id, mgr, runtime }
}

/// Who works on each member (comma-joined replica ids, empty if nobody).
fn owners(replicas: &[Replica]) -> Vec<String> {
    (1..=MEMBERS)
        .map(|i| {
            let name = ClusterName::new(format!("member-{i}"));
            let working: Vec<&str> = replicas
                .iter()
                .filter(|r| r.mgr.work_state().iter().any(|(n, w)| *n == name && *w))
                .map(|r| r.id.as_str())
                .collect();
            working.join(",")
        })
        .collect()
}

/// Who works on each member, once each is worked on by the one live replica the
/// rendezvous hash over the live replicas names (and by no other).
async fn settled(replicas: &[Replica]) -> Vec<String> {
    let peers: Vec<Peer> = replicas
        .iter()
        .map(|r| Peer {
            id: r.id.clone(),
            weight: 1,
        })
        .collect();
    let want: Vec<String> = (1..=MEMBERS)
        .map(|i| {
            rendezvous_owner(&format!("member-{i}"), &peers)
                .expect("a peer")
                .id
                .clone()
        })
        .collect();
    eventually("every member worked on by its one owner", || async {
        owners(replicas) == want
    })
    .await;
    want
}

/// No two replicas' reconciles of one member overlap in time.
fn audit_no_overlap(audit: &Audit) {
    let log = audit.lock();
    for (i, (ra, qa, sa, ea)) in log.iter().enumerate() {
        for (rb, qb, sb, eb) in &log[i + 1..] {
            if ra != rb && qa.cluster == qb.cluster {
                assert!(
                    ea <= sb || eb <= sa,
                    "{ra} and {rb} reconciled {} at once",
                    qa.cluster
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_member_is_reconciled_by_exactly_one_replica() {
    let hub = Environment::start().await.expect("hub");
    let mut members = Vec::new();
    for i in 1..=MEMBERS {
        let env = Environment::start().await.expect("member");
        register(&hub, &format!("member-{i}"), &env).await;
        members.push(env);
    }
    let audit = Audit::default();
    let mut replicas = vec![
        start_replica(&hub, 0, &audit).await,
        start_replica(&hub, 1, &audit).await,
    ];
    let mut next = 2;
    for event in 0..20 {
        let owners = settled(&replicas).await;
        // A non-owner may not have the cluster.
        let m1 = ClusterName::new("member-1");
        for r in replicas.iter().filter(|r| r.id != owners[0]) {
            assert!(
                matches!(
                    r.mgr.cluster(&m1),
                    Err(multicluster::Error::NotOwner { .. })
                ),
                "{} handed out member-1 it does not own",
                r.id
            );
        }
        // Each member's new object is written by its owner.
        for (i, env) in members.iter().enumerate() {
            let name = format!("probe-{event}");
            create(env, &name).await;
            eventually(&format!("{name} in member-{}", i + 1), || async {
                reconciled_in(env, &name).await.is_some()
            })
            .await;
            assert_eq!(
                reconciled_in(env, &name).await.as_deref(),
                Some(owners[i].as_str())
            );
        }
        // Alternate: kill the oldest replica (no release: its fences must expire), or
        // start a new one.
        if event % 2 == 0 && replicas.len() > 1 {
            let dead = replicas.remove(0);
            dead.runtime.shutdown_background();
        } else {
            replicas.push(start_replica(&hub, next, &audit).await);
            next += 1;
        }
    }
    settled(&replicas).await;
    audit_no_overlap(&audit);
    for r in replicas {
        r.runtime.shutdown_background();
    }
}
