//! Deterministic simulation: an operator, its API server and time under one seed.
//!
//! A [`Simulation`] runs ctrl-envtest, its controllers (GC, namespaces, kubelet, workloads)
//! and the operator's replicas on **one current-thread tokio runtime with a paused clock**,
//! with `ctrl-clock`'s fake wall clock following it. Time only moves when every task waits
//! (tokio's auto-advance), so a ten-hour resync or a 15 s lease expiry costs no wall time, and
//! what runs next is decided by the program, not by the machine's load. Each replica talks to
//! the server through the in-memory transport ([`Environment::in_memory_client`]) wrapped by
//! `transport`: the seed delays each request and each watch frame (interleavings, stale
//! caches), picks when each replica starts (who wins an election), and draws the fault
//! schedule (`schedule`: watch drops, 410 relists, 409 storms, 429s, 5xx, slow webhooks, leader
//! loss, replica crash and restart, a replica leaving and joining). A replica's webhook server
//! is called by the API server in memory too (`webhooks`, [`Replica::serve_webhooks`]): no
//! socket, the same review JSON, a seeded delay in virtual time. Every request, reconcile and fault goes into a trace (`trace`) whose
//! hash is printed; the checkers run at every step: no two workers hold one key, no write by a
//! replica that does not hold the named Lease, no write by a shard to an object of another
//! shard (`shards`), the user's invariants over the store, and
//! [`Simulation::run_until_steady`]'s deadline. A failing seed prints a one-line replay command
//! and the last steps of the trace.
//!
//! ```no_run
//! use ctrl_envtest::sim::{self, FaultPlan, Simulation};
//! # use std::time::Duration;
//! let result = sim::check(0..100, |seed| Simulation::builder(seed), |sim| async move {
//!     sim.add_replica("r1", |replica| async move {
//!         // build the operator's Manager on `replica.client` and run it until
//!         // `replica.shutdown` fires
//!     });
//!     sim.run_until_steady(Duration::from_secs(120)).await
//! });
//! if let Err(failure) = result { panic!("{failure}") }
//! ```
//!
//! What is not simulated: tokio's `select!` draws its branch order from a per-runtime random
//! seed (seeding it needs `tokio_unstable`), and `spawn_blocking` threads run outside the
//! virtual clock. So that the first matters as little as it can, each kind of seeded choice
//! draws from a stream of its own (`Shared::stream`): which of two tasks ready at one virtual
//! instant runs first does not change what either draws. The tests check that one seed gives
//! one trace; a scenario where the order still matters shows as two hashes for one seed.

mod replicas;
mod run;
mod schedule;
mod shards;
mod trace;
mod transport;
mod webhooks;

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use parking_lot::Mutex;
use rand::rngs::StdRng;
use tokio::time::Instant;

use crate::env::{Environment, EnvironmentBuilder};

pub use replicas::Replica;
use replicas::Slot;
pub use run::{
    CheckReport, Failure, LOG_VAR, Outcome, SEED_VAR, THREADS_VAR, TRACE_DIR_VAR, check,
};
pub use schedule::{FaultKind, FaultPlan, SLOW_WEBHOOK};

/// How far one [`Simulation::tick`] moves virtual time.
pub const STEP: Duration = Duration::from_millis(100);

/// How long nothing but leader election may happen before a run counts as steady.
pub const QUIET: Duration = Duration::from_secs(5);

/// Configures a [`Simulation`]: the seed, the environment, the faults and the delays.
pub struct SimulationBuilder {
    seed: u64,
    env: EnvironmentBuilder,
    faults: FaultPlan,
    request_delay: Duration,
    watch_delay: Duration,
    webhook_delay: Duration,
}

impl SimulationBuilder {
    /// Sets up the API server (CRDs, the simulated kubelet, ...); the default is
    /// `Environment::builder()`.
    pub fn environment(mut self, f: impl FnOnce(EnvironmentBuilder) -> EnvironmentBuilder) -> Self {
        self.env = f(self.env);
        self
    }

    /// The faults the seed schedules (none by default).
    pub fn faults(mut self, plan: FaultPlan) -> Self {
        self.faults = plan;
        self
    }

    /// The longest seeded delay before a request reaches the server (default 20 ms).
    pub fn request_delay(mut self, max: Duration) -> Self {
        self.request_delay = max;
        self
    }

    /// The longest seeded delay of a watch event on its way to a watcher (default 50 ms): how
    /// stale an informer's cache may be.
    pub fn watch_delay(mut self, max: Duration) -> Self {
        self.watch_delay = max;
        self
    }

    /// The longest seeded delay of a webhook call served in memory
    /// ([`Replica::serve_webhooks`]; default 10 ms). A [`FaultKind::SlowWebhook`] makes a few
    /// calls take up to [`SLOW_WEBHOOK`] instead.
    pub fn webhook_delay(mut self, max: Duration) -> Self {
        self.webhook_delay = max;
        self
    }

    /// Runs `scenario` under this seed, once: on a fresh current-thread runtime with a paused
    /// clock, the fake wall clock (seeded) current on this thread, and the trace's `tracing`
    /// layer as this thread's subscriber (so the scenario's own logs are not printed). Prints
    /// the seed and the trace hash; a failure carries the replay command and the last steps.
    pub fn run<F, Fut>(self, scenario: F) -> Result<Outcome, Failure>
    where
        F: FnOnce(Simulation) -> Fut,
        Fut: Future<Output = Result<(), String>>,
    {
        run::run(self, scenario)
    }
}

/// What the transport, the checkers and the steps share.
pub(crate) struct Shared {
    seed: u64,
    start: Instant,
    /// The seed's streams of choices, by key (`Shared::stream`).
    streams: Mutex<HashMap<String, StdRng>>,
    trace: trace::Trace,
    env: Environment,
    request_delay: Duration,
    watch_delay: Duration,
    webhook_delay: Duration,
    /// The webhook servers replicas serve in memory, current on the seed's thread: one
    /// router per `host:port` over its backends.
    endpoints: crate::webhook_client::Endpoints,
    backends: Mutex<HashMap<String, Vec<webhooks::Backend>>>,
    /// How many webhook calls are still to be slow ([`FaultKind::SlowWebhook`]).
    slow_webhooks: std::sync::atomic::AtomicUsize,
    /// The shard-ownership checker's configuration (`shards`).
    shards: Mutex<shards::ShardCheck>,
    /// The leader-election Lease whose holder alone may write, and the replica of each
    /// leader-election identity.
    lease: Mutex<Option<(String, String)>>,
    identities: Mutex<HashMap<String, replicas::Identity>>,
    /// The last write that was not leader election or an Event.
    last_write: Mutex<Instant>,
    /// How many such writes are in flight (sent, not answered): a slow webhook may hold one
    /// for longer than [`QUIET`].
    writes_in_flight: std::sync::atomic::AtomicUsize,
    /// The checked Lease's holder when steadiness was last asked about.
    last_leader: Mutex<Option<String>>,
    /// The store's revision when the invariants last ran.
    checked: AtomicU64,
    /// The last Lease holder read: (store revision, Lease), holder.
    holder_cache: Mutex<Option<HolderRead>>,
}

impl Shared {
    /// The replica holding Lease `ns/name` (see [`Simulation::lease_holder`]).
    fn holder(&self, ns: &str, name: &str) -> Option<String> {
        self.holder_identity(ns, name).map(|id| id.replica)
    }

    /// The incarnation holding Lease `ns/name`, by the identities replicas told.
    fn holder_identity(&self, ns: &str, name: &str) -> Option<replicas::Identity> {
        let holder = self.lease_holder(ns, name)?;
        self.identities.lock().get(&holder).cloned()
    }

    /// The `holderIdentity` of Lease `ns/name`, decoded again only when the store changed
    /// (every step asks; decoding is most of a debug build's cost).
    fn lease_holder(&self, ns: &str, name: &str) -> Option<String> {
        let revision = self.env.store_revision();
        let key = (revision, format!("{ns}/{name}"));
        if let Some((at, holder)) = &*self.holder_cache.lock()
            && *at == key
        {
            return holder.clone();
        }
        let leases = self.env.stored::<Lease>();
        let holder = (leases.iter())
            .find(|l| {
                l.metadata.namespace.as_deref() == Some(ns)
                    && l.metadata.name.as_deref() == Some(name)
            })
            .and_then(|l| l.spec.as_ref()?.holder_identity.clone());
        *self.holder_cache.lock() = Some((key, holder.clone()));
        holder
    }

    /// Whether the checked Lease (if one is named) is held by a running incarnation: not one
    /// that crashed, left or exited, whose Lease the others wait out.
    ///
    /// A change of holder counts as a write: a new leader's controllers start, sync and
    /// reconcile after it acquired the Lease, so the run is quiet only [`QUIET`] after that.
    fn led(&self) -> bool {
        let Some((ns, name)) = self.lease.lock().clone() else {
            return true;
        };
        let holder = self.lease_holder(&ns, &name);
        {
            let mut last = self.last_leader.lock();
            if *last != holder {
                *last = holder;
                *self.last_write.lock() = Instant::now();
            }
        }
        self.holder_identity(&ns, &name)
            .is_some_and(|id| id.is_running())
    }

    /// Runs `f` on the seed's stream of choices named `key`. Each kind of choice (a replica's
    /// requests to one path, the faults, a webhook's calls, ...) draws from a stream of its
    /// own, seeded from the seed and the key: what one draws does not depend on how two tasks
    /// ready at one virtual instant were ordered (tokio's `select!` is not seeded), only on
    /// how many choices of that kind came before.
    pub(super) fn stream<T>(&self, key: &str, f: impl FnOnce(&mut StdRng) -> T) -> T {
        use rand::SeedableRng;
        use std::hash::{Hash, Hasher};
        let mut streams = self.streams.lock();
        let rng = streams.entry(key.to_string()).or_insert_with(|| {
            let mut h = std::collections::hash_map::DefaultHasher::new();
            (self.seed, key).hash(&mut h);
            StdRng::seed_from_u64(h.finish())
        });
        f(rng)
    }

    /// A delay of up to `max` from stream `key`.
    fn draw(&self, key: &str, max: Duration) -> Duration {
        use rand::Rng;
        transport::millis(max, |m| self.stream(key, |r| r.random_range(0..=m)))
    }

    fn request_delay(&self, replica: &str, method: &http::Method, path: &str) -> Duration {
        self.draw(
            &format!("request {replica} {method} {path}"),
            self.request_delay,
        )
    }

    fn trace(&self, what: impl std::fmt::Display) {
        self.trace.push(self.start, what);
    }

    /// Records a write by `replica`, and a violation when a Lease is named and another
    /// replica holds it (the test's own writes are not checked).
    fn note_write(&self, replica: &str, method: &http::Method, path: &str) {
        *self.last_write.lock() = Instant::now();
        if replica == transport::TEST {
            return;
        }
        let Some((ns, name)) = self.lease.lock().clone() else {
            return;
        };
        let owner = self.holder(&ns, &name);
        if let Some(owner) = owner.filter(|o| o != replica) {
            self.trace.violation(format!(
                "{replica} wrote ({method} {path}) while {owner} held Lease {ns}/{name}"
            ));
        }
    }
}

/// A Lease holder as read: (store revision, `ns/name`) and the holder.
type HolderRead = ((u64, String), Option<String>);

/// An invariant over the store, checked at every step.
type Invariant = Box<dyn Fn(&Environment) -> Result<(), String> + Send + Sync>;

/// One run under one seed; see the module doc. Cheap to clone.
#[derive(Clone)]
pub struct Simulation {
    shared: Arc<Shared>,
    state: Arc<Mutex<State>>,
    invariants: Arc<Mutex<Vec<(String, Invariant)>>>,
    test_client: kube::Client,
}

/// The simulation's own moving parts: replicas and the fault schedule.
struct State {
    replicas: Vec<Slot>,
    /// Faults still to play, soonest last.
    schedule: Vec<(Duration, FaultKind)>,
    /// Crashed replicas and when they restart.
    restarts: Vec<(Duration, String)>,
}

impl Simulation {
    /// A builder for the run of `seed`: no faults, 20 ms request, 50 ms watch and 10 ms
    /// webhook delays.
    pub fn builder(seed: u64) -> SimulationBuilder {
        SimulationBuilder {
            seed,
            env: Environment::builder(),
            faults: FaultPlan::default(),
            request_delay: Duration::from_millis(20),
            watch_delay: Duration::from_millis(50),
            webhook_delay: Duration::from_millis(10),
        }
    }

    /// The seed of this run.
    pub fn seed(&self) -> u64 {
        self.shared.seed
    }

    /// The API server.
    pub fn env(&self) -> &Environment {
        &self.shared.env
    }

    /// A client for the test itself (traced as `test`; never crashes).
    pub fn client(&self) -> kube::Client {
        self.test_client.clone()
    }

    /// Virtual time since the simulation started.
    pub fn elapsed(&self) -> Duration {
        self.shared.start.elapsed()
    }

    /// Adds a line of the test's own to the trace (what it is waiting for, and why).
    pub fn note(&self, what: impl std::fmt::Display) {
        self.shared.trace(format_args!("test {what}"));
    }

    /// The hash of the trace so far.
    pub fn trace_hash(&self) -> u64 {
        self.shared.trace.hash()
    }

    /// Names the leader-election Lease: from now on, a write (other than to Leases and Events)
    /// by a replica while another replica holds it is a failure. Replicas say which identity
    /// is theirs with [`Replica::leader_identity`].
    pub fn check_lease(&self, namespace: &str, name: &str) {
        *self.shared.lease.lock() = Some((namespace.into(), name.into()));
    }

    /// Adds an invariant over the store, checked at every step that changed the store
    /// ([`Environment::stored`] reads it without requests). It must be a function of the
    /// store alone: a step that wrote nothing does not run it again.
    pub fn invariant(
        &self,
        name: &str,
        check: impl Fn(&Environment) -> Result<(), String> + Send + Sync + 'static,
    ) {
        let mut invariants = self.invariants.lock();
        invariants.push((name.to_string(), Box::new(check)));
    }

    /// Moves virtual time by [`STEP`] (everything due by then runs), plays the faults and
    /// restarts that are due, and runs the checkers.
    pub async fn tick(&self) -> Result<(), String> {
        tokio::time::sleep(STEP).await;
        self.play_due();
        self.check()
    }

    /// Lets `d` of virtual time pass: everything due in it runs, the faults and restarts due
    /// in it are played at their time, and the checkers run after each of them and at the
    /// end. Between two of those, time jumps from timer to timer, so ten virtual hours of an
    /// idle operator cost what its few timers cost.
    pub async fn advance(&self, d: Duration) -> Result<(), String> {
        let until = self.elapsed() + d;
        loop {
            let now = self.elapsed();
            let next = self.next_due().map_or(until, |t| t.min(until));
            tokio::time::sleep(next.saturating_sub(now)).await;
            self.play_due();
            self.check()?;
            if self.elapsed() >= until {
                return Ok(());
            }
        }
    }

    /// When the next fault or restart is due.
    fn next_due(&self) -> Option<Duration> {
        let state = self.state.lock();
        let fault = state.schedule.last().map(|(at, _)| *at);
        let restart = state.restarts.iter().map(|(at, _)| *at).min();
        fault.into_iter().chain(restart).min()
    }

    /// The replica holding Lease `namespace/name`, by the identities replicas told
    /// ([`Replica::leader_identity`]); `None` when it is unheld or held by someone else.
    pub fn lease_holder(&self, namespace: &str, name: &str) -> Option<String> {
        self.shared.holder(namespace, name)
    }

    /// Ticks until the run is steady — no fault or restart left to play, no reconcile
    /// running, the checked Lease ([`check_lease`](Self::check_lease)) held by a running
    /// replica, and no write but leader election and Events in flight or for [`QUIET`] — and fails when it
    /// is not by `deadline` (virtual time since the start): the operator did not converge.
    pub async fn run_until_steady(&self, deadline: Duration) -> Result<(), String> {
        loop {
            self.tick().await?;
            if self.is_steady() {
                return Ok(());
            }
            if self.elapsed() > deadline {
                return Err(format!("not steady within {deadline:?} of virtual time"));
            }
        }
    }

    fn is_steady(&self) -> bool {
        // First: a change of leader counts as a write.
        let led = self.shared.led();
        let state = self.state.lock();
        led && state.schedule.is_empty()
            && state.restarts.is_empty()
            && self.shared.trace.reconciling() == 0
            && self.shared.writes_in_flight.load(Ordering::Acquire) == 0
            && self.shared.last_write.lock().elapsed() >= QUIET
    }

    /// The checkers: what the trace found, then the user's invariants — these only when the
    /// store changed since they last ran (they are over the store, so they would find what
    /// they found then; most steps of an idle operator change nothing).
    fn check(&self) -> Result<(), String> {
        if let Some(v) = self.shared.trace.violations().into_iter().next() {
            return Err(v);
        }
        let revision = self.shared.env.store_revision();
        if self.shared.checked.swap(revision, Ordering::AcqRel) == revision {
            return Ok(());
        }
        for (name, check) in self.invariants.lock().iter() {
            check(&self.shared.env).map_err(|e| format!("invariant {name:?}: {e}"))?;
        }
        Ok(())
    }

    /// Plays the faults and restarts whose time has come.
    fn play_due(&self) {
        let now = self.elapsed();
        loop {
            let mut state = self.state.lock();
            if let Some(i) = state.restarts.iter().position(|(at, _)| *at <= now) {
                let (_, name) = state.restarts.remove(i);
                drop(state);
                self.restart(&name);
                continue;
            }
            if state.schedule.last().is_none_or(|(at, _)| *at > now) {
                return;
            }
            let Some((_, kind)) = state.schedule.pop() else {
                return;
            };
            drop(state);
            self.play(kind);
        }
    }

    /// Plays one fault now.
    fn play(&self, kind: FaultKind) {
        use rand::Rng;
        let (n, five_hundred) = (self.shared).stream("faults", |rng| {
            (rng.random_range(1..=5), rng.random_bool(0.5))
        });
        self.shared.trace(format_args!("fault {kind:?} x{n}"));
        if kind == FaultKind::SlowWebhook {
            self.shared.slow_webhooks.fetch_add(n, Ordering::AcqRel);
            return;
        }
        if schedule::inject(&self.shared.env.faults(), kind, n, five_hundred) {
            return;
        }
        let victim = {
            let state = self.state.lock();
            let alive: Vec<String> = (state.replicas.iter())
                .filter(|s| s.alive.load(Ordering::Acquire))
                .map(|s| s.name.clone())
                .collect();
            if alive.is_empty() {
                return;
            }
            let i = (self.shared).stream("victims", |rng| rng.random_range(0..alive.len()));
            alive[i].clone()
        };
        if kind == FaultKind::Leave {
            self.leave(&victim);
        } else {
            self.crash(&victim);
        }
        self.schedule_restart(&victim);
    }
}
