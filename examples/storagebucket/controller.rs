//! The StorageBucket controller: a reconciler that probes each bucket's endpoint,
//! writes what it saw to `status`, records an Event when availability changes and
//! keeps a finalizer on the bucket; a ticker that re-probes every bucket on a
//! period; and [`setup`], which wires both into a manager.
//!
//! Why a ticker: the bucket lives outside the cluster, so no watch event says when
//! it goes down. The ticker (a leader-election [`Runnable`]) sends a Generic event
//! into a `Channel` source every `probe_interval`; `EnqueueRequestsFromMapFunc`
//! turns each tick into one request per StorageBucket in the cache. Status writes
//! do not trigger reconciles of their own: the `for_` watch passes only changes of
//! `metadata.generation` (spec edits, deletion), so the ticker sets the pace.

use std::sync::Arc;
use std::time::Duration;

use ctrl::CancellationToken;
use ctrl::ControllerBuilder;
use ctrl::async_trait;
use ctrl::client::{Client, ObjectWriter};
use ctrl::controllerutil;
use ctrl::event::GenericEvent;
use ctrl::handler::EnqueueRequestsFromMapFunc;
use ctrl::manager::{BoxError, Manager, Runnable};
use ctrl::predicate::GenerationChanged;
use ctrl::rbac;
use ctrl::reconcile::{self, Action, Reconciler, Request};
use ctrl::recorder::{EventType, Recorder};
use ctrl::source::Channel;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::Resource;
use kube::api::{Patch, PatchParams};
use serde_json::json;
use tokio::sync::mpsc;

use super::crd::{
    CONDITION_AVAILABLE, FINALIZER, StorageBucket, StorageBucketSpec, StorageBucketStatus,
};
use super::probe::{Outcome, probe};

/// How the controller is set up.
#[derive(Clone, Debug)]
pub struct Config {
    /// The controller's name (metrics, logs, the Events' reporting controller).
    pub name: String,
    /// How often every bucket is probed.
    pub probe_interval: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            name: "storagebucket".into(),
            probe_interval: Duration::from_secs(5),
        }
    }
}

/// Adds the StorageBucket controller and its probe ticker to `mgr`.
pub fn setup(mgr: &Manager, cfg: &Config) -> Result<(), BoxError> {
    let (tx, rx) = mpsc::channel(1);
    mgr.add(ProbeTicker {
        interval: cfg.probe_interval,
        tx,
    })?;

    // Every tick means "probe them all": map it to every bucket the cache holds.
    let buckets = mgr.cache().get_informer::<StorageBucket>();
    let every_bucket = EnqueueRequestsFromMapFunc::new(move |_tick: &Arc<StorageBucket>| {
        let all = buckets.store().list();
        all.iter().map(|b| Request::from_obj(b.as_ref())).collect()
    });

    ControllerBuilder::new(mgr)
        .for_::<StorageBucket>()
        .watches_raw_source(Channel::new(rx, every_bucket))
        .with_event_filter(GenerationChanged)
        // +kubebuilder:rbac markers: the finalizer is added and removed by update,
        // the status written by a merge patch (watching buckets the manager infers).
        .permissions([
            rbac::rule()
                .groups([StorageBucket::group(&())])
                .resources(["storagebuckets"])
                .verbs(["update"]),
            rbac::rule()
                .groups([StorageBucket::group(&())])
                .resources(["storagebuckets/status"])
                .verbs(["patch"]),
        ])
        .named(cfg.name.clone())
        .complete(BucketReconciler {
            client: mgr.client(),
            recorder: mgr.event_recorder(cfg.name.clone()),
        })?;
    Ok(())
}

/// Sends a Generic event into the controller's `Channel` source every `interval`.
/// Runs only on the leader: followers do not probe.
pub struct ProbeTicker {
    interval: Duration,
    tx: mpsc::Sender<GenericEvent<StorageBucket>>,
}

#[async_trait]
impl Runnable for ProbeTicker {
    async fn start(&self, ctx: CancellationToken) -> Result<(), BoxError> {
        // The object only carries the tick; the map function ignores it.
        let tick = Arc::new(StorageBucket::new("probe-tick", StorageBucketSpec::new("")));
        let mut ticks = tokio::time::interval(self.interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticks.tick().await; // the first tick is immediate; creates already reconcile
        loop {
            tokio::select! {
                _ = ctx.cancelled() => return Ok(()),
                _ = ticks.tick() => {}
            }
            // A full channel means a tick is already pending: this one adds nothing.
            let _ = self.tx.try_send(GenericEvent::new(tick.clone()));
        }
    }

    fn need_leader_election(&self) -> bool {
        true
    }

    fn name(&self) -> String {
        "storagebucket probe ticker".into()
    }
}

/// Probes a bucket, records the outcome in its status, and owns its finalizer.
pub struct BucketReconciler {
    client: Client,
    recorder: Recorder,
}

#[async_trait]
impl Reconciler<Arc<StorageBucket>> for BucketReconciler {
    async fn reconcile(
        &self,
        _ctx: CancellationToken,
        bucket: Arc<StorageBucket>,
    ) -> Result<Action, reconcile::Error> {
        if bucket.meta().deletion_timestamp.is_some() {
            return self.finalize(&bucket).await;
        }
        // Go's AddFinalizer + Update: the update carries the resourceVersion, so a
        // stale cached copy gets a conflict (and a retry), never a lost write.
        let mut with_finalizer = StorageBucket::clone(&bucket);
        if controllerutil::add_finalizer(&mut with_finalizer, FINALIZER) {
            self.client.update(&with_finalizer).await?;
            tracing::info!(target: "storagebucket::finalizer", "added finalizer {FINALIZER}");
        }

        let outcome = probe(&bucket.spec.probe_url()).await;
        let before = bucket.status.as_ref().and_then(|s| s.available);
        let status = next_status(&bucket, &outcome);
        self.client
            .status()
            .patch(
                bucket.as_ref(),
                &Patch::Merge(json!({ "status": status })),
                PatchParams::default(),
            )
            .await?;
        tracing::info!(
            target: "storagebucket::reconcile",
            available = outcome.available,
            "probed in {:.0?}: {} -> {}",
            outcome.took,
            outcome.message,
            word(Some(outcome.available)),
        );
        if before != Some(outcome.available) {
            tracing::info!(
                target: "storagebucket::status",
                "{} -> {} ({}: {})",
                word(before),
                word(Some(outcome.available)),
                outcome.reason,
                outcome.message,
            );
            let (type_, reason) = if outcome.available {
                (EventType::Normal, "Available")
            } else {
                (EventType::Warning, "Unavailable")
            };
            self.recorder.event(
                bucket.as_ref(),
                type_,
                reason,
                "Probe",
                outcome.message.clone(),
            );
        }
        Ok(Action::done())
    }
}

impl BucketReconciler {
    /// The bucket is being deleted: release it, then let the deletion finish.
    async fn finalize(&self, bucket: &StorageBucket) -> Result<Action, reconcile::Error> {
        if !controllerutil::contains_finalizer(bucket, FINALIZER) {
            return Ok(Action::done());
        }
        // A real operator would delete or detach the external bucket here.
        self.recorder.event(
            bucket,
            EventType::Normal,
            "Released",
            "Finalize",
            format!("released bucket at {}", bucket.spec.endpoint),
        );
        let mut released = bucket.clone();
        controllerutil::remove_finalizer(&mut released, FINALIZER);
        self.client.update(&released).await?;
        tracing::info!(target: "storagebucket::finalizer", "finalizer removed, the object goes away");
        Ok(Action::done())
    }
}

/// The status after `outcome`: `lastTransitionTime` moves only when availability does.
/// Times come from the reconciler's clock (`ctrl::clock`: the system clock in production, the
/// simulation's virtual one under `ctrl_envtest::sim`).
fn next_status(bucket: &StorageBucket, outcome: &Outcome) -> StorageBucketStatus {
    let now = Time(ctrl::clock::now());
    let status = if outcome.available { "True" } else { "False" };
    let last_transition_time = match bucket.available_condition() {
        Some(c) if c.status == status => c.last_transition_time.clone(),
        _ => now.clone(),
    };
    StorageBucketStatus {
        available: Some(outcome.available),
        last_probe_time: Some(now),
        observed_generation: bucket.meta().generation,
        conditions: vec![Condition {
            type_: CONDITION_AVAILABLE.into(),
            status: status.into(),
            reason: outcome.reason.into(),
            message: outcome.message.clone(),
            last_transition_time,
            observed_generation: bucket.meta().generation,
        }],
    }
}

fn word(available: Option<bool>) -> &'static str {
    match available {
        None => "Unknown",
        Some(true) => "Available",
        Some(false) => "Unavailable",
    }
}
