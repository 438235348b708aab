//! Warm standby (Go's `EnableWarmup`): a controller with warmup starts its sources
//! on a standby replica, before it is elected, so its first reconcile after a
//! takeover needs no list; without warmup the new leader lists after the takeover.
//! The envtest request log shows the list requests.

use crate::leaderelection_common;
use crate::manager_common;

use std::time::Duration;

use ctrl_envtest::{Environment, RequestRecord};
use ctrl_runtime::controller::Options as ControllerOptions;
use ctrl_runtime::manager::{Group, Manager};
use ctrl_runtime::reconcile::{self, Action, Request};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use leaderelection_common::{Audit, Replica, client, env, le_options, virtual_clock};
use tokio::sync::mpsc;

fn configmap_lists(r: &RequestRecord) -> bool {
    r.is_list() && r.resource.as_deref() == Some("configmaps")
}

async fn create_configmaps(env: &Environment, n: usize) {
    let api: Api<ConfigMap> = Api::namespaced(client(env), "default");
    for i in 0..n {
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some(format!("cm-{i}")),
                ..Default::default()
            },
            ..Default::default()
        };
        api.create(&PostParams::default(), &cm)
            .await
            .expect("create");
    }
}

/// The standby: a manager whose ConfigMap controller reports its requests.
async fn standby(
    env: &Environment,
    lease: &str,
    warmup: bool,
    audit: &Audit,
) -> (Manager, mpsc::UnboundedReceiver<Request>) {
    let mgr = Replica::build(env, 1, le_options(lease, true), audit);
    let (tx, rx) = mpsc::unbounded_channel();
    let r = reconcile::func(move |_ctx, req: Request| {
        let _ = tx.send(req);
        async { Ok(Action::done()) }
    });
    let opts = ControllerOptions {
        enable_warmup: Some(warmup),
        skip_name_validation: Some(true),
        ..Default::default()
    };
    manager_common::add_configmap_controller(&mgr, "warmup-configmaps", r, opts).await;
    (mgr, rx)
}

/// Runs a leader, then a standby with or without warmup; clears the request log
/// once the standby is up (and, with warmup, has listed); hands over the lease and
/// returns how many ConfigMap lists the new leader made before its first reconcile.
async fn lists_after_takeover(lease: &str, warmup: bool) -> usize {
    let env = env().await;
    create_configmaps(&env, 5).await;
    let audit = Audit::default();
    let leader = Replica::start(&env, 0, le_options(lease, true), &audit);
    audit.next_start(0, Duration::from_secs(10)).await;
    let (mgr, mut rx) = standby(&env, lease, warmup, &audit).await;
    let standby = Replica::run(1, mgr);
    let up = async {
        while !standby.mgr.group_started(Group::Warmup) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        while warmup && env.faults().count_requests(configmap_lists) == 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), up)
        .await
        .expect("the standby is up (and, warm, has listed)");
    assert!(
        !standby.mgr.group_started(Group::LeaderElection),
        "the standby is not elected yet"
    );
    assert!(rx.try_recv().is_err(), "no reconcile before the takeover");
    env.faults().clear_requests();
    leader.stop().await.expect("the leader stops and releases");
    let first = tokio::time::timeout(Duration::from_secs(20), rx.recv())
        .await
        .expect("the new leader reconciles")
        .expect("reconciler alive");
    assert!(first.name.starts_with("cm-"), "{first:?}");
    let lists = env.faults().count_requests(configmap_lists);
    standby.stop().await.expect("clean stop");
    lists
}

#[tokio::test(start_paused = true)]
async fn a_warm_standby_lists_before_leadership_and_its_first_reconcile_needs_no_list() {
    let _clock = virtual_clock();
    assert_eq!(lists_after_takeover("warm", true).await, 0);
}

#[tokio::test(start_paused = true)]
async fn a_cold_standby_lists_only_after_it_is_elected() {
    let _clock = virtual_clock();
    assert!(lists_after_takeover("cold", false).await >= 1);
}
