//! What a candidate last saw of the lock: the record and the *local* instant it was
//! first seen (client-go's `observedRecord` / `observedTime`), plus a Lease watch
//! that wakes a waiting candidate as soon as the lease is freed.
//!
//! Expiry is judged only from these: a holder's lease has expired once the record
//! has not changed for `leaseDurationSeconds` of this process's clock, whatever the
//! record's `renewTime` says, so clock skew between nodes does not matter.
//!
//! **Only the elector's own reads and writes set the observation**, as in client-go.
//! The watch never does: its events can arrive late (a loaded machine, or a watch
//! task still running for a moment after `acquire` aborted it), and a late event
//! would replace a newer record — for instance the previous leader's release
//! arriving after this candidate took the lease, so that the new leader believed the
//! lease free and skipped its own release (standbys then waited out the lease). The
//! watch only *wakes* the candidate when it sees the lease freed or deleted; the
//! candidate then reads the lease itself. A late or stale wake-up costs one extra
//! read. If the watch fails (no RBAC for `watch`, say), polling alone still works.

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
use crate::cache::WatchBackoff;

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
    /// Records `record`, just read from the server, as observed now if it differs
    /// from the last one (an unchanged record keeps the instant it was first seen).
    pub(crate) fn observe(&self, record: LeaderElectionRecord) {
        let mut last = self.last.lock();
        if last.as_ref().is_some_and(|o| o.record == record) {
            return;
        }
        *last = Some(Observation {
            record,
            time: Instant::now(),
        });
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

    /// Resolves once the watch has seen the lease freed (released or deleted) since
    /// the last call; a wake-up seen while nobody waited is kept for the next one.
    pub(crate) async fn released(&self) {
        self.released.notified().await
    }

    /// Wakes the candidate: the watch saw the lease freed.
    fn wake(&self) {
        self.released.notify_one();
    }
}

/// Watches Lease `name` through `api`, waking `observed`'s candidate whenever the
/// lease is freed, until the task is aborted.
pub(crate) fn spawn_watch(
    api: Api<Lease>,
    name: String,
    observed: Arc<Observed>,
) -> tokio::task::JoinHandle<()> {
    crate::task::spawn(async move {
        let cfg = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let mut events = watcher(api, cfg).backoff(WatchBackoff::default()).boxed();
        while let Some(ev) = events.next().await {
            match ev {
                Ok(ev) => on_event(&observed, &ev),
                Err(error) => {
                    tracing::debug!(lease = %name, %error, "watching the leader election lease failed; polling only");
                }
            }
        }
    })
}

/// What one watch event does: wakes the candidate if the lease is free or gone.
/// Never touches the observation (see the module doc).
fn on_event(observed: &Observed, ev: &watcher::Event<Lease>) {
    let freed = match ev {
        watcher::Event::Apply(l) | watcher::Event::InitApply(l) => {
            LeaderElectionRecord::from_spec(l.spec.as_ref())
                .holder_identity
                .is_empty()
        }
        watcher::Event::Delete(_) => true,
        watcher::Event::Init | watcher::Event::InitDone => false,
    };
    if freed {
        observed.wake();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::LeaseSpec;

    fn lease(holder: &str, transitions: i32) -> Lease {
        Lease {
            spec: Some(LeaseSpec {
                holder_identity: Some(holder.into()),
                lease_duration_seconds: Some(1),
                lease_transitions: Some(transitions),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[tokio::test]
    async fn a_late_watch_event_wakes_but_never_overrides_what_the_elector_read() {
        let observed = Observed::default();
        let mine = LeaderElectionRecord::from_spec(lease("me", 7).spec.as_ref());
        observed.set(mine.clone());
        // The previous holder's release, delivered after this candidate took over.
        on_event(&observed, &watcher::Event::Apply(lease("", 6)));
        assert_eq!(observed.get().map(|o| o.record), Some(mine.clone()));
        // The wake-up is kept for the next wait, which returns at once.
        observed.released().await;
        // A held lease wakes nobody.
        on_event(&observed, &watcher::Event::Apply(lease("other", 8)));
        assert_eq!(observed.get().map(|o| o.record), Some(mine));
        let woken = futures::FutureExt::now_or_never(observed.released());
        assert!(woken.is_none(), "woken by a held lease");
    }
}
