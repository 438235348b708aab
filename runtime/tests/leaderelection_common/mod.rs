//! Helpers shared by the leader-election tests: short-lease manager replicas on one
//! envtest, and an audit log of when each replica's leader-only runnable ran.
//!
//! The tests run on virtual time (`#[tokio::test(start_paused = true)]` with
//! [`virtual_clock`] entered): the elector reads tokio's clock for its deadlines and
//! `ctrl::clock` for the times it writes, the replicas and the test talk to the server
//! through its in-memory transport (no socket: a request in flight on a socket would let
//! the paused clock jump past it), so a lease duration costs no wall time and each test
//! asserts the instant a leader gave up or took over, not "after long enough".
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use ctrl_envtest::Environment;
use ctrl_envtest::wait::Wait;
use ctrl_runtime::clock::{Clock, ClockGuard};
use ctrl_runtime::manager::{Error, Manager, Options, RunnableFunc};
use k8s_openapi::jiff::Timestamp;
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The short settings of the issue: lease 1 s, renew 0.6 s, retry 0.2 s.
pub const LEASE: Duration = Duration::from_secs(1);
/// Renew deadline.
pub const RENEW: Duration = Duration::from_millis(600);
/// Retry period.
pub const RETRY: Duration = Duration::from_millis(200);
/// The longest a candidate waits between two attempts: the retry period jittered by
/// client-go's factor 1.2 (`RETRY * 2.2`).
pub const MAX_RETRY: Duration = Duration::from_millis(440);

/// A fresh embedded API server.
pub async fn env() -> Environment {
    Environment::builder().start().await.expect("start envtest")
}

/// The wall time a virtual-time test starts at: whole seconds, so a `MicroTime` written
/// from the fake clock converts back to the exact tokio instant ([`instant_of`]).
pub const START: i64 = 1_800_000_000;

/// Makes a fake wall clock starting at [`START`] current on this thread: it follows
/// tokio's (paused) clock. Keep the guard for the whole test.
pub fn virtual_clock() -> ClockGuard {
    let start = Timestamp::from_second(START).expect("a valid timestamp");
    Clock::fake(start).enter()
}

/// The tokio instant at which the current clock read `ts` (exact on the fake clock).
pub fn instant_of(ts: Timestamp) -> Instant {
    let (now, wall) = (Instant::now(), ctrl_runtime::clock::now());
    let ago = wall.duration_since(ts);
    if ago.is_negative() {
        now + ago.unsigned_abs()
    } else {
        now - ago.unsigned_abs()
    }
}

/// The client the tests and the replicas use: the server's in-memory transport.
pub fn client(env: &Environment) -> kube::Client {
    env.in_memory_client()
}

/// Manager options with leader election on Lease `default/<lease>`, short timings.
pub fn le_options(lease: &str, release_on_cancel: bool) -> Options {
    Options {
        metrics_bind_address: "0".into(),
        leader_election: true,
        leader_election_id: lease.into(),
        leader_election_namespace: Some("default".into()),
        leader_election_release_on_cancel: release_on_cancel,
        lease_duration: LEASE,
        renew_deadline: RENEW,
        retry_period: RETRY,
        ..Default::default()
    }
}

/// One audited event: when, which replica, started (true) or stopped (false).
#[derive(Clone, Copy, Debug)]
pub struct Event {
    pub at: Instant,
    pub replica: usize,
    pub started: bool,
}

/// When each replica's leader-election runnable started and stopped.
#[derive(Clone, Default)]
pub struct Audit {
    events: Arc<Mutex<Vec<Event>>>,
}

impl Audit {
    /// A leader-election runnable for `replica` that logs its start and its stop.
    pub fn runnable(&self, replica: usize) -> RunnableFunc {
        let audit = self.clone();
        RunnableFunc::new(move |ctx| {
            let audit = audit.clone();
            async move {
                audit.push(replica, true);
                ctx.cancelled().await;
                audit.push(replica, false);
                Ok(())
            }
        })
        .named(format!("leader-only-{replica}"))
    }

    /// Records `replica`'s runnable as stopped now: its manager returned and aborted it
    /// (a lost election stops with no grace period, so the runnable may not have run
    /// again to log its own stop).
    pub fn aborted(&self, replica: usize) {
        self.push(replica, false);
    }

    fn push(&self, replica: usize, started: bool) {
        self.events.lock().push(Event {
            at: Instant::now(),
            replica,
            started,
        });
    }

    /// All events so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.events.lock().clone()
    }

    /// The most leader-only runnables ever running at once (must be at most 1).
    pub fn max_concurrent(&self) -> usize {
        let mut running = 0usize;
        let mut max = 0;
        for e in self.events() {
            if e.started {
                running += 1;
            } else {
                running = running.saturating_sub(1);
            }
            max = max.max(running);
        }
        max
    }

    /// The replica whose runnable is running now, if any.
    pub fn current(&self) -> Option<usize> {
        let mut running = std::collections::BTreeSet::new();
        for e in self.events() {
            if e.started {
                running.insert(e.replica);
            } else {
                running.remove(&e.replica);
            }
        }
        running.into_iter().next()
    }

    /// Waits (up to `limit`) for a start event after the first `seen` events.
    pub async fn next_start(&self, seen: usize, limit: Duration) -> Event {
        let start = || async { self.events().into_iter().skip(seen).find(|e| e.started) };
        Wait::new()
            .timeout(limit)
            .interval(Duration::from_millis(5))
            .eventually("a leader", start)
            .await
    }

    /// The last stop event of `replica`.
    pub fn last_stop(&self, replica: usize) -> Option<Event> {
        self.events()
            .into_iter()
            .rev()
            .find(|e| e.replica == replica && !e.started)
    }
}

/// A running manager replica.
pub struct Replica {
    pub idx: usize,
    pub mgr: Manager,
    pub ctx: CancellationToken,
    pub handle: JoinHandle<Result<(), Error>>,
}

impl Replica {
    /// Starts replica `idx` with `opts`, its leader-only runnable logging to `audit`.
    pub fn start(env: &Environment, idx: usize, opts: Options, audit: &Audit) -> Replica {
        Replica::run(idx, Replica::build(env, idx, opts, audit))
    }

    /// Builds replica `idx`'s manager (with its audited leader-only runnable) without
    /// starting it. Building a leader elector sets the process-wide
    /// `leader_election_master_status{name}` gauge to 0, as client-go's
    /// `NewLeaderElector` does: a test that reads the gauge builds every replica
    /// before it starts any, or a replica built late hides the leader.
    pub fn build(env: &Environment, idx: usize, opts: Options, audit: &Audit) -> Manager {
        let mgr = Manager::new(client(env), opts).expect("manager");
        mgr.add(audit.runnable(idx)).expect("add");
        mgr
    }

    /// Starts replica `idx` from its built manager.
    pub fn run(idx: usize, mgr: Manager) -> Replica {
        let ctx = CancellationToken::new();
        let handle = {
            let (mgr, ctx) = (mgr.clone(), ctx.clone());
            tokio::spawn(async move { mgr.start(ctx).await })
        };
        Replica {
            idx,
            mgr,
            ctx,
            handle,
        }
    }

    /// Stops it gracefully and returns what `start` returned.
    pub async fn stop(self) -> Result<(), Error> {
        self.ctx.cancel();
        self.finished().await
    }

    /// Waits (up to 10 s) for `start` to return on its own.
    pub async fn finished(self) -> Result<(), Error> {
        tokio::time::timeout(Duration::from_secs(10), self.handle)
            .await
            .expect("manager stopped in time")
            .expect("manager task")
    }
}

/// Percentile `p` (0..=100) of sorted `v`.
pub fn percentile(v: &[Duration], p: usize) -> Duration {
    if v.is_empty() {
        return Duration::ZERO;
    }
    v[(v.len() - 1) * p / 100]
}
