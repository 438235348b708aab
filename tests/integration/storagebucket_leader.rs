//! Issue 8 in the StorageBucket example: two replicas of the operator, wired as
//! `main` wires them with `--leader-elect` (the example's `LeaderElectionFlags` and
//! `setup::manager`), run in process against one ctrl-envtest with short lease
//! settings (3 s / 2 s / 0.2 s). Exactly one leads — it holds the Lease and its
//! controller probes the buckets — and when it stops, the other takes over and
//! carries on; a leader that cannot renew stops with an error.

use crate::common;
use crate::examples_storagebucket as operator;

use std::time::Duration;

use common::{WAIT, available, buckets_api, create_bucket, wait_until};
use ctrl::cli::LeaderElectionFlags;
use ctrl::manager::{Error as ManagerError, Manager, Options};
use ctrl_envtest::wait::Wait;
use ctrl_envtest::{Environment, FaultMatch, FaultStatus, Verb};
use futures::FutureExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use operator::LEASE_NAME as DEFAULT_LEASE_NAME;
use operator::controller::Config;
use operator::store::ObjectStore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const RETRY: Duration = Duration::from_millis(200);

struct Replica {
    mgr: Manager,
    stop: CancellationToken,
    running: JoinHandle<Result<(), ManagerError>>,
}

impl Replica {
    fn identity(&self) -> String {
        self.mgr
            .leader_election_identity()
            .expect("leader election is on")
            .to_string()
    }
}

/// One replica as `storagebucket --leader-elect` builds it, with short durations.
async fn replica(env: &Environment, name: &str) -> Replica {
    let flags = LeaderElectionFlags::default();
    let opts = flags.apply(
        DEFAULT_LEASE_NAME,
        Options {
            metrics_bind_address: "0".into(),
            leader_election: true,
            // Short, but with room for a loaded CI machine: a leader that misses renewals
            // for 2 s would (rightly) lose the Lease and fail the test.
            lease_duration: Duration::from_secs(3),
            renew_deadline: Duration::from_secs(2),
            retry_period: RETRY,
            ..Default::default()
        },
    );
    assert_eq!(opts.leader_election_namespace.as_deref(), Some("default"));
    assert!(opts.leader_election_release_on_cancel);
    let cfg = Config {
        name: name.into(),
        probe_interval: Duration::from_millis(200),
    };
    let mgr = operator::setup::manager(env.client(), opts, &cfg, false).expect("manager");
    let stop = CancellationToken::new();
    let running = {
        let (mgr, stop) = (mgr.clone(), stop.clone());
        tokio::spawn(async move { mgr.start(stop).await })
    };
    Replica { mgr, stop, running }
}

/// The Lease's holder and transitions, once it has a holder.
async fn holder(leases: &Api<Lease>, not: Option<&str>) -> (String, i32) {
    let probe = || async {
        let lease = leases.get_opt(DEFAULT_LEASE_NAME).await.expect("get lease");
        let spec = lease.and_then(|l| l.spec)?;
        let who = spec
            .holder_identity
            .filter(|w| !w.is_empty() && Some(w.as_str()) != not)?;
        Some((who, spec.lease_transitions.unwrap_or(0)))
    };
    Wait::new()
        .timeout(WAIT)
        .eventually("a new Lease holder", probe)
        .await
}

async fn elected(r: &Replica) {
    tokio::time::timeout(WAIT, r.mgr.elected())
        .await
        .expect("elected in time");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_replica_leads_and_the_other_takes_over_when_it_stops() {
    let env = common::env().await;
    let store_stop = CancellationToken::new();
    let store = ObjectStore::start(store_stop.clone()).await.expect("store");
    let replicas = [
        replica(&env, "replica-a").await,
        replica(&env, "replica-b").await,
    ];
    let leases: Api<Lease> = Api::namespaced(env.client(), "default");

    // Exactly one leads: the Lease names it, it is elected, the other is not.
    let (first, transitions) = holder(&leases, None).await;
    let (leader, standby) = match replicas.iter().position(|r| r.identity() == first) {
        Some(0) => (&replicas[0], &replicas[1]),
        Some(_) => (&replicas[1], &replicas[0]),
        None => panic!("the Lease holder {first} is neither replica"),
    };
    elected(leader).await;
    // Several retry periods later the standby still waits.
    tokio::time::sleep(RETRY * 5).await;
    assert!(
        standby.mgr.elected().now_or_never().is_none(),
        "both replicas lead"
    );
    assert_eq!(holder(&leases, None).await.0, first);

    // The leader's controller works the buckets.
    let api = buckets_api(env.client());
    create_bucket(&api, "photos", &store.bucket_url("photos")).await;
    wait_until(&api, "photos", "available", |o| available(o) == Some(true)).await;

    // The leader stops (Ctrl-C): it releases the Lease and the standby takes over.
    leader.stop.cancel();
    let (second, after) = holder(&leases, Some(&first)).await;
    assert_eq!(second, standby.identity());
    assert_eq!(after, transitions + 1, "one more leader transition");
    elected(standby).await;

    // ... and carries on: a new bucket, and a store outage, are seen by the new leader.
    create_bucket(&api, "backups", &store.bucket_url("backups")).await;
    wait_until(&api, "backups", "available", |o| available(o) == Some(true)).await;
    store.set_healthy(false);
    wait_until(&api, "photos", "unavailable", |o| {
        available(o) == Some(false)
    })
    .await;

    standby.stop.cancel();
    for r in replicas {
        let stopped = tokio::time::timeout(WAIT, r.running)
            .await
            .expect("stopped in time")
            .expect("manager task");
        assert!(
            stopped.is_ok(),
            "a graceful stop is not an error: {stopped:?}"
        );
    }
    store_stop.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_loses_the_lease_stops_with_an_error() {
    let env = common::env().await;
    let only = replica(&env, "replica-only").await;
    elected(&only).await;
    // The API server refuses every Lease update: the leader cannot renew.
    env.faults().fail_next(
        100_000,
        FaultMatch::any().verb(Verb::Update).resource("leases"),
        FaultStatus::internal_error(),
    );
    let stopped = tokio::time::timeout(WAIT, only.running)
        .await
        .expect("stopped in time")
        .expect("manager task");
    // `main` turns this error into a non-zero exit, so Kubernetes restarts the pod.
    assert!(
        matches!(stopped, Err(ManagerError::LeaderElectionLost)),
        "{stopped:?}"
    );
    env.faults().clear();
}

#[test]
fn the_lease_comes_from_the_flags_then_the_pod_then_the_defaults() {
    use clap::Parser;
    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        manager: ctrl::manager::Args,
        #[command(flatten)]
        leader: LeaderElectionFlags,
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("namespace");

    let cli = Cli::parse_from(["storagebucket", "--leader-elect"]);
    assert!(cli.manager.leader_elect);
    let defaults = cli.leader.apply(DEFAULT_LEASE_NAME, cli.manager.options());
    assert_eq!(defaults.leader_election_id, DEFAULT_LEASE_NAME);
    // Out of cluster (no namespace file): `default`.
    assert_eq!(cli.leader.namespace(&file), "default");
    // In a pod: the service account's namespace.
    std::fs::write(&file, "storagebucket-system\n").expect("write");
    assert_eq!(cli.leader.namespace(&file), "storagebucket-system");
    // The flags win.
    let cli = Cli::parse_from([
        "storagebucket",
        "--leader-elect",
        "--leader-election-id",
        "other-lease",
        "--leader-election-namespace",
        "ops",
    ]);
    assert_eq!(cli.leader.namespace(&file), "ops");
    let opts = cli.leader.apply(DEFAULT_LEASE_NAME, cli.manager.options());
    assert!(opts.leader_election && opts.leader_election_release_on_cancel);
    assert_eq!(opts.leader_election_id, "other-lease");
    assert_eq!(opts.leader_election_namespace.as_deref(), Some("ops"));
}
