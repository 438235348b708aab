//! A leader that cannot renew (envtest fails every Lease update with 500) stops
//! leading after its renew deadline and before any standby may take the lease over,
//! and its manager stops with "leader election lost"; once updates work again a
//! standby takes over, with no moment of two leaders.

mod leaderelection_common;

use std::time::Duration;

use ctrl_envtest::{FaultMatch, FaultStatus, Verb};
use ctrl_runtime::manager::Error;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::jiff::Timestamp;
use kube::Api;
use leaderelection_common::{Audit, LEASE, RENEW, Replica, env, le_options};
use tokio::time::Instant;

/// The monotonic instant at which this process's wall clock read `ts`.
fn instant_of(ts: Timestamp) -> Instant {
    let (now, wall) = (Instant::now(), Timestamp::now());
    let ago = wall.duration_since(ts);
    if ago.is_negative() {
        now + ago.unsigned_abs()
    } else {
        now - ago.unsigned_abs()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_cannot_renew_stops_before_anyone_can_take_over() {
    let env = env().await;
    let audit = Audit::default();
    let mut replicas: Vec<Replica> = (0..3)
        .map(|i| Replica::start(&env, i, le_options("renew", false), &audit))
        .collect();
    audit.next_start(0, Duration::from_secs(10)).await;
    let leader = audit.current().expect("a leader");
    // Let a few renewals happen, then break every Lease update.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let leases: Api<Lease> = Api::namespaced(env.client(), "default");
    let renew_time = |l: &Lease| l.spec.as_ref().and_then(|s| s.renew_time.clone());
    let before = leases.get("renew").await.expect("lease");
    env.faults().fail_next(
        100_000,
        FaultMatch::any().verb(Verb::Update).resource("leases"),
        FaultStatus::internal_error(),
    );
    // The last renewal that got through: the first instant this test saw it (a
    // standby cannot have seen it any earlier, so cannot take over before
    // `seen + LEASE`).
    let mut last = renew_time(&before);
    let mut seen = Instant::now();
    let pos = replicas
        .iter()
        .position(|r| r.idx == leader)
        .expect("leader");
    let old = replicas.swap_remove(pos);
    let handle = &old.handle;
    while !handle.is_finished() {
        let now = leases.get("renew").await.expect("lease");
        if renew_time(&now) != last {
            last = renew_time(&now);
            seen = Instant::now();
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let err = old.finished().await.expect_err("leader election lost");
    assert!(matches!(err, Error::LeaderElectionLost), "{err}");
    assert_eq!(err.to_string(), "leader election lost");
    let stopped = audit.last_stop(leader).expect("the leader stopped").at;
    // The leader wrote its last renewTime (with this process's clock) when it began
    // that renewal; its failing attempts began a retry period after that renewal
    // succeeded, and it may give up only a renew deadline after they began. (When
    // the test first *saw* the renewal is no lower bound: the failing attempts may
    // have begun before the test's read.)
    let last_renew = last.as_ref().expect("the leader renewed").0;
    assert!(
        stopped >= instant_of(last_renew) + RENEW,
        "gave up before the renew deadline"
    );
    assert!(
        stopped < seen + LEASE,
        "still leading when a standby could take over"
    );
    assert_eq!(audit.current(), None, "nobody leads while updates fail");

    env.faults().clear();
    let seen_events = audit.events().len();
    let next = audit.next_start(seen_events, Duration::from_secs(10)).await;
    assert_ne!(next.replica, leader);
    assert_eq!(audit.max_concurrent(), 1, "{:?}", audit.events());
    let lease = leases.get("renew").await.expect("lease");
    let spec = lease.spec.expect("spec");
    assert_eq!(spec.lease_transitions, Some(1));
    for r in replicas {
        r.stop().await.expect("clean stop");
    }
}
