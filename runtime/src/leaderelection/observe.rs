//! What a candidate last saw of the lock: the record and the *local* instant it was
//! first seen (client-go's `observedRecord` / `observedTime`), plus a Lease watch
//! that keeps them current between polls.
//!
//! Expiry is judged only from these: a holder's lease has expired once the record
//! has not changed for `leaseDurationSeconds` of this process's clock, whatever the
//! record's `renewTime` says, so clock skew between nodes does not matter. The
//! watch only makes observation timelier (a change is seen when it happens, not at
//! the next poll; a release wakes the candidate at once). It never makes takeover
//! less safe: a change is always observed at or after it was written. If the watch
//! fails (no RBAC for `watch`, say), polling alone still works.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::LeaderElectionRecord;

/// The record last observed and when it was first observed.
#[derive(Clone, Debug)]
pub(crate) struct Observation {
    pub(crate) record: LeaderElectionRecord,
    pub(crate) time: Instant,
}

impl Observation {
    /// When a holder that stops renewing loses the lease in this observer's eyes.
    pub(crate) fn expiry(&self) -> Instant {
        let secs = u64::try_from(self.record.lease_duration_seconds).unwrap_or(0);
        self.time + Duration::from_secs(secs)
    }
}

/// The observation shared between the elector and its watch task.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    last: Mutex<Option<Observation>>,
    released: Notify,
}

impl Observed {
    /// Records `record` as observed now if it differs from the last one; wakes a
    /// waiting candidate when the lease is free.
    pub(crate) fn observe(&self, record: LeaderElectionRecord) {
        let free = record.holder_identity.is_empty();
        {
            let mut last = self.last.lock();
            if last.as_ref().is_some_and(|o| o.record == record) {
                return;
            }
            *last = Some(Observation {
                record,
                time: Instant::now(),
            });
        }
        if free {
            self.released.notify_one();
        }
    }

    /// Sets the observation to `record`, now (after this candidate wrote it).
    pub(crate) fn set(&self, record: LeaderElectionRecord) {
        *self.last.lock() = Some(Observation {
            record,
            time: Instant::now(),
        });
    }

    /// The last observation, if any.
    pub(crate) fn get(&self) -> Option<Observation> {
        self.last.lock().clone()
    }

    /// Resolves when a free (released or deleted) lease is observed.
    pub(crate) async fn released(&self) {
        self.released.notified().await
    }

    fn deleted(&self) {
        self.released.notify_one();
    }
}

/// Watches Lease `name` through `api`, feeding `observed`, until the task is aborted.
pub(crate) fn spawn_watch(
    api: Api<Lease>,
    name: String,
    observed: Arc<Observed>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let mut events = watcher(api, cfg).default_backoff().boxed();
        while let Some(ev) = events.next().await {
            match ev {
                Ok(watcher::Event::Apply(l) | watcher::Event::InitApply(l)) => {
                    observed.observe(LeaderElectionRecord::from_spec(l.spec.as_ref()));
                }
                Ok(watcher::Event::Delete(_)) => observed.deleted(),
                Ok(_) => {}
                Err(error) => {
                    tracing::debug!(lease = %name, %error, "watching the leader election lease failed; polling only");
                }
            }
        }
    })
}
