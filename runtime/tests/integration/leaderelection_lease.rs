//! The Lease as another (say, client-go) holder sees it: a foreign holder that
//! keeps renewing is respected whatever its renewTime says, a stale one is taken
//! over after its lease duration, conflicts are retried, what ctrl writes has
//! client-go's fields, a release clears the holder; plus the options' errors, the
//! gating of runnables and caches, and the master-status gauge.

use crate::leaderelection_common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use ctrl_envtest::{Environment, FaultMatch, FaultStatus, Verb};
use ctrl_runtime::leaderelection::{self, master_status};
use ctrl_runtime::manager::{Error, Group, Manager, Options, RunnableFunc};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::Api;
use kube::api::{ObjectMeta, PostParams};
use leaderelection_common::{
    Audit, LEASE, MAX_RETRY, Replica, client, env, le_options, virtual_clock,
};
use tokio::time::Instant;

/// The current (fake) wall clock.
fn now() -> Timestamp {
    ctrl_runtime::clock::now()
}

fn foreign(name: &str, duration: i32, renew: Timestamp) -> Lease {
    Lease {
        metadata: ObjectMeta {
            name: Some(name.into()),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some("go-operator_1234".into()),
            lease_duration_seconds: Some(duration),
            acquire_time: Some(MicroTime(renew)),
            renew_time: Some(MicroTime(renew)),
            lease_transitions: Some(4),
            ..Default::default()
        }),
    }
}

fn leases(env: &Environment) -> Api<Lease> {
    Api::namespaced(client(env), "default")
}

#[tokio::test(start_paused = true)]
async fn a_renewing_foreign_holder_is_respected_then_taken_over_after_its_lease_duration() {
    let _clock = virtual_clock();
    let env = env().await;
    let api = leases(&env);
    let future = now() + SignedDuration::from_hours(1);
    api.create(&PostParams::default(), &foreign("foreign", 2, future))
        .await
        .expect("create");
    let audit = Audit::default();
    let r = Replica::start(&env, 0, le_options("foreign", false), &audit);
    // Act as the Go holder: renew every 300 ms for 3 s.
    let until = Instant::now() + Duration::from_secs(3);
    let mut last_renew = Instant::now();
    while Instant::now() < until {
        let mut l = api.get("foreign").await.expect("get");
        let spec = l.spec.get_or_insert_with(Default::default);
        spec.renew_time = Some(MicroTime(now() + SignedDuration::from_hours(1)));
        api.replace("foreign", &PostParams::default(), &l)
            .await
            .expect("renew");
        last_renew = Instant::now();
        assert_eq!(audit.current(), None, "took a lease its holder renews");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    // Stop renewing: taken over, but not before its 2 s lease duration passed, and at
    // the candidate's first attempt after it: the candidate saw the last renewal at its
    // next attempt (within a jittered retry period), and tries again within another.
    let started = audit.next_start(0, Duration::from_secs(10)).await;
    let after = started.at.duration_since(last_renew);
    let lease = Duration::from_secs(2);
    assert!(
        after >= lease,
        "taken over {after:?} after the last renewal"
    );
    assert!(
        after <= lease + 2 * MAX_RETRY,
        "taken over {after:?} after the last renewal"
    );
    let spec = api.get("foreign").await.expect("get").spec.expect("spec");
    assert_eq!(
        spec.holder_identity.as_deref(),
        r.mgr.leader_election_identity()
    );
    assert_eq!(spec.lease_transitions, Some(5));
    r.stop().await.expect("clean stop");
}

#[tokio::test(start_paused = true)]
async fn a_stale_foreign_lease_is_taken_over_and_written_as_client_go_does() {
    let _clock = virtual_clock();
    let env = env().await;
    let api = leases(&env);
    let past = now() - SignedDuration::from_hours(1);
    api.create(&PostParams::default(), &foreign("stale", 1, past))
        .await
        .expect("create");
    let audit = Audit::default();
    let opts = Options {
        leader_election_labels: BTreeMap::from([("app".into(), "bucket".into())]),
        ..le_options("stale", false)
    };
    let r = Replica::start(&env, 0, opts, &audit);
    audit.next_start(0, Duration::from_secs(10)).await;
    let lease = api.get("stale").await.expect("get");
    let labels = lease.metadata.labels.clone().unwrap_or_default();
    assert_eq!(labels.get("app").map(String::as_str), Some("bucket"));
    let spec = lease.spec.expect("spec");
    let id = r
        .mgr
        .leader_election_identity()
        .expect("identity")
        .to_string();
    assert_eq!(spec.holder_identity.as_deref(), Some(id.as_str()));
    assert!(id.contains('_'), "identity is hostname_uuid: {id}");
    assert_eq!(spec.lease_duration_seconds, Some(1));
    assert_eq!(spec.lease_transitions, Some(5));
    let acquired = spec.acquire_time.expect("acquireTime").0;
    assert!(acquired > past);
    assert!(spec.renew_time.expect("renewTime").0 >= acquired);
    r.stop().await.expect("clean stop");
    // Without release on cancel the holder stays.
    let spec = api.get("stale").await.expect("get").spec.expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some(id.as_str()));
}

#[tokio::test(start_paused = true)]
async fn conflicts_are_retried_and_a_release_clears_the_holder() {
    let _clock = virtual_clock();
    let env = env().await;
    let api = leases(&env);
    let past = now() - SignedDuration::from_hours(1);
    api.create(&PostParams::default(), &foreign("conflict", 1, past))
        .await
        .expect("create");
    let updates = FaultMatch::any().verb(Verb::Update).resource("leases");
    env.faults()
        .fail_next(3, updates.clone(), FaultStatus::conflict());
    let audit = Audit::default();
    // A renew deadline with room for three renewal attempts (two conflicts, then a
    // success, a retry period apart) on a loaded machine.
    let opts = Options {
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        ..le_options("conflict", true)
    };
    let r = Replica::start(&env, 0, opts, &audit);
    audit.next_start(0, Duration::from_secs(10)).await;
    // Conflicts while renewing are retried too; the manager keeps running.
    env.faults()
        .fail_next(2, updates.clone(), FaultStatus::conflict());
    let injected = || {
        env.faults()
            .count_requests(|q| q.injected && q.resource.as_deref() == Some("leases"))
    };
    let renew_time = || async {
        let lease = api.get("conflict").await.expect("get");
        lease.spec.and_then(|s| s.renew_time)
    };
    let renewed_after_the_conflicts = async {
        while injected() < 5 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let before = renew_time().await;
        while renew_time().await == before {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), renewed_after_the_conflicts)
        .await
        .expect("a renewal succeeded after the two conflicts");
    assert!(!r.handle.is_finished(), "a 409 stopped the leader");
    assert_eq!(audit.current(), Some(0));
    assert_eq!(injected(), 5);
    r.stop().await.expect("clean stop");
    let spec = api.get("conflict").await.expect("get").spec.expect("spec");
    assert_eq!(spec.holder_identity.as_deref(), Some(""));
    assert_eq!(spec.lease_duration_seconds, Some(1));
    assert_eq!(spec.lease_transitions, Some(5));
}

#[tokio::test]
async fn options_are_checked_when_the_manager_is_built() {
    let env = env().await;
    let no_id = Options {
        leader_election_id: String::new(),
        ..le_options("x", false)
    };
    let err = Manager::new(env.client(), no_id).expect_err("id required");
    assert!(err.to_string().contains("LeaderElectionID"), "{err}");
    let no_ns = Options {
        leader_election_namespace: None,
        ..le_options("x", false)
    };
    if !std::path::Path::new(leaderelection::IN_CLUSTER_NAMESPACE_PATH).exists() {
        let err = Manager::new(env.client(), no_ns).expect_err("namespace required");
        assert!(
            err.to_string().contains("leader_election_namespace"),
            "{err}"
        );
    }
    let bad = Options {
        renew_deadline: LEASE,
        ..le_options("x", false)
    };
    let err = Manager::new(env.client(), bad).expect_err("bad timings");
    assert!(matches!(err, Error::LeaderElection(_)), "{err}");
    let off = Manager::new(
        env.client(),
        Options {
            metrics_bind_address: "0".into(),
            ..Default::default()
        },
    )
    .expect("leader election off needs nothing");
    assert_eq!(off.leader_election_identity(), None);
    assert_eq!(
        leaderelection::call_timeout(Duration::from_secs(10)),
        Duration::from_secs(5)
    );
    assert_eq!(
        leaderelection::call_timeout(Duration::from_millis(600)),
        Duration::from_secs(1)
    );
}

#[tokio::test(start_paused = true)]
async fn caches_and_other_runnables_run_everywhere_and_only_the_leader_is_elected() {
    let _clock = virtual_clock();
    let env = env().await;
    let audit = Audit::default();
    let mut managers = Vec::new();
    let mut others = Vec::new();
    // Every manager is built before any starts (see `Replica::build`).
    for i in 0..2 {
        let mgr = Replica::build(&env, i, le_options("gating", false), &audit);
        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        mgr.add(
            RunnableFunc::new(move |ctx| {
                let flag = flag.clone();
                async move {
                    flag.store(true, Ordering::SeqCst);
                    ctx.cancelled().await;
                    Ok(())
                }
            })
            .with_leader_election(false),
        )
        .expect("add");
        others.push(ran);
        managers.push(mgr);
    }
    let replicas: Vec<Replica> = managers
        .into_iter()
        .enumerate()
        .map(|(i, mgr)| Replica::run(i, mgr))
        .collect();
    audit.next_start(0, Duration::from_secs(10)).await;
    let leader = audit.current().expect("leader");
    let standby = 1 - leader;
    tokio::time::timeout(Duration::from_secs(5), replicas[leader].mgr.elected())
        .await
        .expect("the leader is elected");
    tokio::time::sleep(Duration::from_millis(300)).await;
    for (i, r) in replicas.iter().enumerate() {
        assert!(
            others[i].load(Ordering::SeqCst),
            "non-leader runnable ran on {i}"
        );
        assert!(r.mgr.group_started(Group::Caches));
        assert!(r.mgr.cache().has_synced());
    }
    assert!(!replicas[standby].mgr.group_started(Group::LeaderElection));
    let standby_elected =
        tokio::time::timeout(Duration::from_millis(500), replicas[standby].mgr.elected()).await;
    assert!(standby_elected.is_err(), "a standby's elected() resolved");
    assert_eq!(master_status("gating"), 1);
    for r in replicas {
        r.stop().await.expect("clean stop");
    }
    assert_eq!(master_status("gating"), 0);
}
