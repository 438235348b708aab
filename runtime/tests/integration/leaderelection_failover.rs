//! Three managers on one envtest competing for one Lease (lease 1 s, renew 0.6 s,
//! retry 0.2 s): an audit log of when each one's leader-only runnable ran shows
//! that exactly one runs at any instant over 30 forced failovers, and how long each
//! takeover took — after a crash-like stop (no release) and after a release. On
//! virtual time, so the bounds on each takeover are the elector's own, with no slack.

use crate::leaderelection_common;

use std::time::Duration;

use leaderelection_common::{
    Audit, LEASE, MAX_RETRY, RETRY, Replica, env, le_options, percentile, virtual_clock,
};

/// Stops the leader `failovers` times (replacing it with a fresh replica, so three
/// always compete) and returns each takeover: from the old leader's runnable
/// stopping to the new leader's starting.
async fn failovers(lease: &str, release: bool, failovers: usize) -> (Audit, Vec<Duration>) {
    let env = env().await;
    let audit = Audit::default();
    let mut replicas: Vec<Replica> = (0..3)
        .map(|i| Replica::start(&env, i, le_options(lease, release), &audit))
        .collect();
    let mut next = replicas.len();
    audit.next_start(0, Duration::from_secs(10)).await;
    let mut takeovers = Vec::new();
    for _ in 0..failovers {
        let leader = audit.current().expect("a leader is running");
        let pos = replicas
            .iter()
            .position(|r| r.idx == leader)
            .expect("the leader is a live replica");
        let seen = audit.events().len();
        replicas.swap_remove(pos).stop().await.expect("clean stop");
        let stopped = audit.last_stop(leader).expect("the leader stopped").at;
        let started = audit.next_start(seen, Duration::from_secs(10)).await;
        assert_ne!(started.replica, leader);
        takeovers.push(started.at.duration_since(stopped));
        replicas.push(Replica::start(
            &env,
            next,
            le_options(lease, release),
            &audit,
        ));
        next += 1;
    }
    for r in replicas {
        r.stop().await.expect("clean stop");
    }
    takeovers.sort();
    (audit, takeovers)
}

fn report(what: &str, takeovers: &[Duration]) {
    println!(
        "{what}: {} takeovers, median {:?}, p99 {:?}, max {:?}",
        takeovers.len(),
        percentile(takeovers, 50),
        percentile(takeovers, 99),
        takeovers.last().copied().unwrap_or_default()
    );
}

#[tokio::test(start_paused = true)]
async fn exactly_one_leader_over_30_crash_like_failovers() {
    let _clock = virtual_clock();
    let (audit, takeovers) = failovers("crash", false, 30).await;
    report("crash-like stop", &takeovers);
    assert_eq!(
        audit.max_concurrent(),
        1,
        "two leaders at once: {:?}",
        audit.events()
    );
    // Standbys wait a full lease after the last renewal they saw, which came at most a
    // retry period before the stop: never sooner than that. They saw it at their next
    // attempt and try again within a jittered retry period of its expiry.
    let (min, max) = (takeovers[0], *takeovers.last().expect("takeovers"));
    assert!(min >= LEASE - RETRY, "early takeover: {min:?}");
    assert!(max <= LEASE + 2 * MAX_RETRY, "slow takeover: {max:?}");
}

#[tokio::test(start_paused = true)]
async fn a_released_lease_is_taken_over_well_before_it_would_expire() {
    let _clock = virtual_clock();
    let (audit, takeovers) = failovers("release", true, 8).await;
    report("release on cancel", &takeovers);
    assert_eq!(
        audit.max_concurrent(),
        1,
        "two leaders at once: {:?}",
        audit.events()
    );
    // At a standby's next attempt: within one jittered retry period, not a lease.
    let max = *takeovers.last().expect("takeovers");
    assert!(
        max <= MAX_RETRY,
        "a release did not hand over at once: {max:?}"
    );
}
