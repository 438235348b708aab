//! The operator's replicas in a simulation: each a [`Replica`] (its own client through the
//! simulated transport, its shutdown token) started from a factory, so that a crash (its memory
//! gone, its client dead, the store kept) and a restart are a new incarnation; a replica whose
//! run returns by itself (its manager lost its Lease) is restarted, as the kubelet restarts an
//! exited container.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use super::{STEP, Shared, Simulation, transport};

/// A replica of the operator as the simulation starts it: its own client (through the
/// simulated transport) and its shutdown token. Build the Manager on `client` and run it
/// until `shutdown` fires.
#[derive(Clone)]
pub struct Replica {
    /// The replica's name (`r1`, ...), as the trace shows it.
    pub name: String,
    /// A `kube::Client` for this incarnation of the replica; it goes dead when it crashes.
    pub client: kube::Client,
    /// Cancelled when the simulation stops the replica.
    pub shutdown: CancellationToken,
    pub(super) shared: Arc<Shared>,
    /// False once this incarnation's run returned.
    pub(super) running: Arc<AtomicBool>,
    /// False once this incarnation crashed.
    pub(super) alive: Arc<AtomicBool>,
}

/// A leader-election identity: the replica and the incarnation that told it.
#[derive(Clone)]
pub(super) struct Identity {
    pub replica: String,
    running: Arc<AtomicBool>,
    shutdown: CancellationToken,
}

impl Identity {
    /// Whether its incarnation still runs: not returned, not stopped by the simulation.
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire) && !self.shutdown.is_cancelled()
    }
}

impl Replica {
    /// Tells the lease checker that `identity` (e.g. `Manager::leader_election_identity`) is
    /// this replica.
    pub fn leader_identity(&self, identity: &str) {
        let id = Identity {
            replica: self.name.clone(),
            running: self.running.clone(),
            shutdown: self.shutdown.clone(),
        };
        self.shared
            .identities
            .lock()
            .insert(identity.to_string(), id);
    }

    /// Adds a line to the trace (e.g. why the replica's manager stopped).
    pub fn note(&self, what: impl std::fmt::Display) {
        self.shared.trace(format_args!("{} {what}", self.name));
    }
}

pub(super) type Factory =
    Arc<dyn Fn(Replica) -> futures::future::BoxFuture<'static, ()> + Send + Sync>;

/// A replica slot: how to start it, and its running incarnation.
pub(super) struct Slot {
    pub name: String,
    pub factory: Factory,
    pub alive: Arc<AtomicBool>,
    pub shutdown: CancellationToken,
    pub task: Option<tokio::task::JoinHandle<()>>,
}

impl Simulation {
    /// Starts a replica: `start` is called with a fresh [`Replica`] now (after a seeded delay
    /// of up to a second, so the seed picks who wins an election) and again each time it
    /// restarts after a crash.
    pub fn add_replica<F, Fut>(&self, name: &str, start: F)
    where
        F: Fn(Replica) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let factory: Factory = Arc::new(move |r| Box::pin(start(r)));
        let slot = Slot {
            name: name.to_string(),
            factory,
            alive: Arc::new(AtomicBool::new(false)),
            shutdown: CancellationToken::new(),
            task: None,
        };
        self.state.lock().replicas.push(slot);
        let delay = (self.shared).draw(&format!("start {name}"), Duration::from_secs(1));
        self.launch(name, delay);
    }

    /// Starts a new incarnation of replica `name` after `delay`.
    fn launch(&self, name: &str, delay: Duration) {
        let mut state = self.state.lock();
        let Some(slot) = state.replicas.iter_mut().find(|s| s.name == name) else {
            return;
        };
        slot.alive = Arc::new(AtomicBool::new(true));
        slot.shutdown = CancellationToken::new();
        let layer = transport::SimLayer {
            shared: self.shared.clone(),
            replica: name.into(),
            alive: slot.alive.clone(),
        };
        let replica = Replica {
            name: name.to_string(),
            client: self.shared.env.in_memory_client_with(layer),
            shutdown: slot.shutdown.clone(),
            shared: self.shared.clone(),
            running: Arc::new(AtomicBool::new(true)),
            alive: slot.alive.clone(),
        };
        let running = replica.running.clone();
        let run = (slot.factory)(replica);
        let (sim, name2) = (self.clone(), name.to_string());
        let stopped = slot.shutdown.clone();
        // A replica is one pod name (a StatefulSet's): its next incarnation starts once the
        // last one, which may still be winding down after a leave, has ended. Two processes
        // never share its identity (a shard's id is its name; two holders of one shard Lease
        // would both think they hold it).
        let previous = slot.task.take();
        slot.task = Some(crate::task::spawn(async move {
            if let Some(previous) = previous {
                let _ = previous.await;
            }
            tokio::time::sleep(delay).await;
            run.await;
            running.store(false, Ordering::Release);
            // An incarnation the simulation stopped (a crash, a leave, the end) winding down is
            // not an exit: its restart, if any, is scheduled.
            if !stopped.is_cancelled() {
                sim.exited(&name2);
            }
        }));
        self.shared.trace(format_args!("start {name}"));
    }

    /// Crashes replica `name`: its memory is gone. Its client goes dead at once (every
    /// request fails, every watch ends: nothing it does reaches the server any more), its
    /// task is aborted — dropping `Manager::start`'s future aborts every runnable the manager
    /// started, so no reconcile of it runs on, holding a key, against a cache nobody keeps —
    /// and its token is cancelled, for what it spawned outside the manager. The store keeps
    /// what it wrote; nothing is released (the Lease runs out).
    pub fn crash(&self, name: &str) {
        let mut state = self.state.lock();
        let Some(slot) = state.replicas.iter_mut().find(|s| s.name == name) else {
            return;
        };
        slot.alive.store(false, Ordering::Release);
        slot.shutdown.cancel();
        if let Some(task) = slot.task.take() {
            task.abort();
        }
        drop(state);
        self.shared.trace(format_args!("crash {name}"));
    }

    /// Stops replica `name` gracefully: its token is cancelled while its client keeps
    /// working, so that its manager stops its controllers and releases its Leases (what a
    /// rolling update's old pod, or a shard leaving its ring, does). The old incarnation winds
    /// down in its task; a [`restart`](Self::restart) starts the next one once it has ended,
    /// as a StatefulSet recreates a pod only after the old one is gone.
    pub fn leave(&self, name: &str) {
        let mut state = self.state.lock();
        let Some(slot) = state.replicas.iter_mut().find(|s| s.name == name) else {
            return;
        };
        slot.shutdown.cancel();
        // Not running any more (no fault picks it), while the old incarnation's own flag
        // stays up: its client works until it has wound down.
        slot.alive = Arc::new(AtomicBool::new(false));
        drop(state);
        self.shared.trace(format_args!("leave {name}"));
    }

    /// A replica's run returned by itself (its manager stopped, e.g. on losing its Lease): as
    /// the kubelet restarts an exited container, it starts again a little later.
    fn exited(&self, name: &str) {
        self.shared.trace(format_args!("exit {name}"));
        self.schedule_restart(name);
    }

    /// Restarts replica `name` after a seeded pause of one to five seconds, unless a restart
    /// is already due (two would start two incarnations, the first running on unseen).
    pub(super) fn schedule_restart(&self, name: &str) {
        let pause = (self.shared).draw(&format!("restart {name}"), STEP * 40);
        let back = self.elapsed() + Duration::from_secs(1) + pause;
        let mut state = self.state.lock();
        if !state.restarts.iter().any(|(_, n)| n == name) {
            state.restarts.push((back, name.to_string()));
        }
    }

    /// Starts replica `name` again (a new incarnation, with nothing in memory).
    pub fn restart(&self, name: &str) {
        self.launch(name, Duration::ZERO);
    }
}
