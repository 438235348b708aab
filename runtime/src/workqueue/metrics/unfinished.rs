//! The process-wide thread that refreshes every queue's unfinished-work gauges every
//! 500 ms and hands batched updates over (no tokio runtime needed).

use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Something whose unfinished-work gauges need refreshing every 500 ms.
pub(crate) trait UnfinishedWork: Send + Sync {
    /// Recomputes and sets the unfinished-work and longest-running gauges.
    fn update_unfinished_work(&self, now: Instant);
    /// Hands batched metric updates to their handles.
    fn flush_metrics(&self);
}

/// The queues the updater thread refreshes.
type Registered = Arc<Mutex<Vec<Weak<dyn UnfinishedWork>>>>;

/// Every queue with metrics, weakly.
static QUEUES: OnceLock<Registered> = OnceLock::new();

/// Hands every live queue's batched metric updates to their handles.
pub(super) fn flush_all() {
    let Some(queues) = QUEUES.get() else { return };
    let live: Vec<Arc<dyn UnfinishedWork>> =
        queues.lock().iter().filter_map(Weak::upgrade).collect();
    for q in live {
        q.flush_metrics();
    }
}

/// Registers `q` with the process-wide updater thread (started on first use). The thread
/// holds only a weak reference: dropped queues are forgotten on the next tick.
pub(crate) fn register_unfinished_work(q: Weak<dyn UnfinishedWork>) {
    let queues = QUEUES.get_or_init(|| {
        let queues: Registered = Arc::default();
        let for_thread = Arc::clone(&queues);
        let spawned = std::thread::Builder::new()
            .name("ctrl-workqueue-metrics".into())
            .spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_millis(500));
                    let live: Vec<Arc<dyn UnfinishedWork>> = {
                        let mut qs = for_thread.lock();
                        qs.retain(|w| w.strong_count() > 0);
                        qs.iter().filter_map(Weak::upgrade).collect()
                    };
                    let now = Instant::now();
                    for q in live {
                        q.flush_metrics();
                        q.update_unfinished_work(now);
                    }
                }
            });
        if let Err(err) = spawned {
            tracing::error!(%err, "starting the workqueue metrics thread failed");
        }
        queues
    });
    queues.lock().push(q);
}
