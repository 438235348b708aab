//! A leader that cannot renew (envtest fails every Lease update with 500) stops
//! leading after its renew deadline and before any standby may take the lease over,
//! and its manager stops with "leader election lost"; once updates work again a
//! standby takes over, with no moment of two leaders. On virtual time: the leader gives
//! up at the exact instant its renew deadline passes.

use crate::leaderelection_common;

use std::time::Duration;

use ctrl_envtest::{FaultMatch, FaultStatus, Verb};
use ctrl_runtime::manager::Error;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use leaderelection_common::{
    Audit, LEASE, RENEW, RETRY, Replica, client, env, instant_of, le_options, virtual_clock,
};
use tokio::time::Instant;

/// The renewTime of Lease `default/renew`.
async fn renew_time(leases: &Api<Lease>) -> Option<Timestamp> {
    let lease = leases.get("renew").await.expect("lease");
    Some(lease.spec?.renew_time?.0)
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_cannot_renew_stops_before_anyone_can_take_over() {
    let _clock = virtual_clock();
    let env = env().await;
    let audit = Audit::default();
    let mut replicas: Vec<Replica> = (0..3)
        .map(|i| Replica::start(&env, i, le_options("renew", false), &audit))
        .collect();
    audit.next_start(0, Duration::from_secs(10)).await;
    let leader = audit.current().expect("a leader");
    // Let a few renewals happen, then break every Lease update.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let leases: Api<Lease> = Api::namespaced(client(&env), "default");
    env.faults().fail_next(
        100_000,
        FaultMatch::any().verb(Verb::Update).resource("leases"),
        FaultStatus::internal_error(),
    );
    // The last renewal that got through, and the first instant this test saw it (a
    // standby cannot have seen it any earlier, so cannot take over before
    // `seen + LEASE`).
    let mut last = renew_time(&leases).await;
    let mut seen = Instant::now();
    let pos = replicas
        .iter()
        .position(|r| r.idx == leader)
        .expect("leader");
    let mut handle = replicas.swap_remove(pos).handle;
    let ended = loop {
        tokio::select! {
            biased;
            ended = &mut handle => break ended.expect("manager task"),
            _ = tokio::time::sleep(Duration::from_millis(5)) => {}
        }
        let now = renew_time(&leases).await;
        if now != last {
            last = now;
            seen = Instant::now();
        }
    };
    let stopped = Instant::now();
    let err = ended.expect_err("leader election lost");
    assert!(matches!(err, Error::LeaderElectionLost), "{err}");
    assert_eq!(err.to_string(), "leader election lost");
    // With no grace period: its runnables are aborted as `start` returns.
    audit.aborted(leader);
    // The leader wrote its last renewTime when it began that renewal (no request takes
    // virtual time); it slept a retry period, then tried for a renew deadline (at +0,
    // +200 and +400 ms, each failing) and gave up when the deadline passed: exactly then.
    let last_renew = instant_of(last.expect("the leader renewed"));
    assert_eq!(
        stopped.duration_since(last_renew),
        RETRY + RENEW,
        "gave up at another instant than its renew deadline"
    );
    assert!(
        stopped < seen + LEASE,
        "still leading when a standby could take over"
    );
    let starts = audit.events().iter().filter(|e| e.started).count();
    assert_eq!(starts, 1, "nobody else leads while updates fail");

    env.faults().clear();
    let seen_events = audit.events().len();
    let next = audit.next_start(seen_events, Duration::from_secs(10)).await;
    assert_ne!(next.replica, leader);
    // A standby takes over once the lease it last saw renewed has expired: never sooner.
    assert!(
        next.at >= last_renew + LEASE,
        "taken over {:?} after the last renewal",
        next.at.duration_since(last_renew)
    );
    assert_eq!(audit.max_concurrent(), 1, "{:?}", audit.events());
    let lease = leases.get("renew").await.expect("lease");
    let spec = lease.spec.expect("spec");
    assert_eq!(spec.lease_transitions, Some(1));
    for r in replicas {
        r.stop().await.expect("clean stop");
    }
}
