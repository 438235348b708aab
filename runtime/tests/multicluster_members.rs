//! One controller over a hub and three member clusters registered as kubeconfig
//! Secrets (multicluster-runtime's kubeconfig provider conventions), all in-process
//! ctrl-envtest servers reached over HTTP: the same `default/x` in two members is two
//! reconciles, each writing to its own member only; a member joins when its Secret
//! is created and leaves when it is deleted — after which no list or watch reaches
//! it, its queued requests end unreconciled and unretried, and no reconcile of it
//! starts; requests of a cluster nobody knows end the same way; an index registered
//! on the manager serves a member that joined later; reconciles are counted per
//! cluster when asked.

mod multicluster_support;

use std::sync::Arc;

use ctrl_envtest::{Environment, Verb};
use ctrl_runtime::cache::{ListOptions, Reader};
use ctrl_runtime::controller::{Controller, Options as ControllerOptions};
use ctrl_runtime::manager::{Manager, Options};
use ctrl_runtime::multicluster::{
    self, ClusterName, ClusterReconciler, ClusterRequest, KubeconfigSecretProvider,
};
use ctrl_runtime::source::BoxSource;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use multicluster_support::*;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

const INDEX: &str = "metadata.labels.ctrl.rs/multicluster";

/// List and watch requests `env` has answered so far.
fn list_watches(env: &Environment) -> usize {
    env.faults()
        .count_requests(|r| matches!(r.verb, Some(Verb::List | Verb::Watch)))
}

/// `multicluster_reconcile_total{cluster}`, over results.
fn cluster_reconciles(cluster: &str) -> f64 {
    let families = ctrl_runtime::metrics::registry().gather();
    let Some(mf) = families
        .iter()
        .find(|mf| mf.name() == "multicluster_reconcile_total")
    else {
        return 0.0;
    };
    mf.get_metric()
        .iter()
        .filter(|m| {
            m.get_label()
                .iter()
                .any(|l| l.name() == "cluster" && l.value() == cluster)
        })
        .map(|m| m.get_counter().get_value())
        .sum()
}

fn reconciles_of(log: &Log, cluster: &str) -> Vec<ClusterRequest> {
    log.lock()
        .iter()
        .filter(|r| r.cluster.as_str() == cluster)
        .cloned()
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_controller_over_a_hub_and_three_members() {
    let hub = Environment::start().await.expect("hub");
    let members = [
        Environment::start().await.expect("member-1"),
        Environment::start().await.expect("member-2"),
        Environment::start().await.expect("member-3"),
    ];
    register(&hub, "member-1", &members[0]).await;
    register(&hub, "member-2", &members[1]).await;

    let opts = Options {
        metrics_bind_address: "0".into(),
        ..Default::default()
    };
    let local = Manager::new(hub.client(), opts).expect("manager");
    let mgr = multicluster::Manager::new(local.clone());
    mgr.add_provider(KubeconfigSecretProvider::new(hub.client(), "default"))
        .expect("provider");
    mgr.index_field::<ConfigMap>(INDEX, |cm| {
        cm.metadata
            .labels
            .iter()
            .flatten()
            .filter(|(k, _)| *k == LABEL)
            .map(|(_, v)| v.clone())
            .collect()
    })
    .expect("index");
    let (log, gate) = (Log::default(), Arc::new(Semaphore::new(0)));
    let reconciler = Annotate {
        mgr: mgr.clone(),
        log: log.clone(),
        gate: gate.clone(),
    };
    let controller = Controller::<ClusterRequest>::with_sources(
        "multicluster-members",
        ClusterReconciler::new(&mgr, reconciler).with_cluster_metrics(),
        ControllerOptions {
            max_concurrent_reconciles: 1,
            ..Default::default()
        },
        vec![Arc::new(config_maps(&mgr)) as BoxSource<ClusterRequest>],
    )
    .expect("controller");
    local.add(controller.clone()).expect("add controller");
    let stop = CancellationToken::new();
    let running = tokio::spawn({
        let (local, stop) = (local.clone(), stop.clone());
        async move { local.start(stop).await }
    });

    // The same default/x in two members: two reconciles, each written to its member.
    create(&members[0], "x").await;
    create(&members[1], "x").await;
    for (i, env) in members[..2].iter().enumerate() {
        let want = format!("member-{}", i + 1);
        eventually(&format!("x annotated in {want}"), || async {
            reconciled_in(env, "x").await.as_deref() == Some(want.as_str())
        })
        .await;
    }
    let hub_cms: Api<ConfigMap> = Api::namespaced(hub.client(), "default");
    assert!(
        hub_cms.get_opt("x").await.expect("get").is_none(),
        "nothing written to the hub"
    );
    for member in ["member-1", "member-2"] {
        let seen = reconciles_of(&log, member);
        let x = ClusterRequest::new(member, "default", "x");
        assert!(
            !seen.is_empty() && seen.iter().all(|r| *r == x),
            "{member}: {seen:?}"
        );
    }

    // member-3 joins when its Secret is created; the index registered before serves it.
    create(&members[2], "y").await;
    register(&hub, "member-3", &members[2]).await;
    eventually("y annotated in member-3", || async {
        reconciled_in(&members[2], "y").await.as_deref() == Some("member-3")
    })
    .await;
    let m3 = mgr
        .cluster(&ClusterName::new("member-3"))
        .expect("member-3 engaged");
    let indexed = m3
        .cache()
        .list::<ConfigMap>(&ListOptions::new().matching_field(INDEX, "yes"))
        .await
        .expect("indexed list");
    assert_eq!(
        indexed.len(),
        1,
        "the index applies to a cluster engaged later"
    );

    // member-3 leaves with requests queued behind a reconcile of member-1 held at a gate.
    let queue = controller.queue().await.expect("queue");
    create(&members[0], "gate").await;
    eventually("the gate reconciling", || async {
        log.lock().iter().any(|r| r.name == "gate")
    })
    .await;
    for i in 0..20 {
        create(&members[2], &format!("queued-{i}")).await;
    }
    eventually("member-3's requests queued", || async { queue.len() >= 20 }).await;
    let before = reconciles_of(&log, "member-3").len();
    unregister(&hub, "member-3").await;
    let gone = ClusterName::new("member-3");
    eventually("member-3 disengaged", || async {
        !mgr.clusters().contains(&gone)
    })
    .await;
    assert!(matches!(
        mgr.cluster(&gone),
        Err(multicluster::Error::ClusterNotFound(_))
    ));
    let seen = list_watches(&members[2]);

    // A request for a cluster nobody knows, and member-3's, end without a reconcile.
    let unknown = ClusterRequest::new("nowhere", "default", "z");
    queue.add(unknown.clone());
    gate.add_permits(1);
    members[2].faults().close_watches();
    create(&members[2], "late").await;
    create(&members[0], "sentinel").await;
    eventually("sentinel annotated in member-1", || async {
        reconciled_in(&members[0], "sentinel").await.as_deref() == Some("member-1")
    })
    .await;
    eventually("the queue drained", || async { queue.is_empty() }).await;
    assert_eq!(
        reconciles_of(&log, "member-3").len(),
        before,
        "no reconcile of member-3 after it left"
    );
    assert!(reconciles_of(&log, "nowhere").is_empty());
    assert_eq!(queue.num_requeues(&unknown), 0, "not retried");
    let queued = ClusterRequest::new("member-3", "default", "queued-0");
    assert_eq!(queue.num_requeues(&queued), 0, "not retried");
    assert_eq!(
        list_watches(&members[2]),
        seen,
        "no list or watch reached member-3 after it left"
    );
    assert!(reconciled_in(&members[2], "late").await.is_none());

    // Per-cluster reconcile counts: member-1's are there, the unknown cluster's not.
    assert!(cluster_reconciles("member-1") >= 1.0);
    assert_eq!(cluster_reconciles("nowhere"), 0.0);

    stop.cancel();
    running
        .await
        .expect("join")
        .expect("manager stopped cleanly");
    assert!(
        mgr.clusters().is_empty(),
        "every cluster disengaged at stop"
    );
}
