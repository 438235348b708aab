//! [`Provider`]: the queue and the background writer behind every [`Recorder`]
//! (client-go's event broadcaster plus controller-runtime's lazy `recorder.Provider`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::{Event, Recorder as KubeRecorder, Reporter};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::Recorder;

/// How many Events may wait to be written before new ones are dropped (client-go's
/// `maxQueuedEvents`).
pub const DEFAULT_QUEUE_LENGTH: usize = 1000;

struct Item {
    reporter: Arc<Reporter>,
    event: Event,
    regarding: ObjectReference,
}

enum State {
    /// No Event yet: nothing runs.
    Idle,
    /// The writer task runs and reads `tx`'s other end.
    Running {
        tx: mpsc::Sender<Item>,
        task: JoinHandle<()>,
    },
    /// Stopped: Events are dropped.
    Stopped,
}

struct Inner {
    client: kube::Client,
    queue_length: usize,
    state: Mutex<State>,
    dropped: AtomicU64,
}

/// Hands out [`Recorder`]s that share one bounded queue and one writer task (Go's
/// `recorder.Provider`). The manager owns one; cheap to clone.
#[derive(Clone)]
pub struct Provider {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match &*self.inner.state.lock() {
            State::Idle => "idle",
            State::Running { .. } => "running",
            State::Stopped => "stopped",
        };
        f.debug_struct("Provider")
            .field("state", &state)
            .field("queue_length", &self.inner.queue_length)
            .field("dropped", &self.dropped())
            .finish()
    }
}

impl Provider {
    /// A provider writing through `client`, queueing up to [`DEFAULT_QUEUE_LENGTH`]
    /// Events. Starts nothing until the first Event.
    pub fn new(client: kube::Client) -> Self {
        Self::with_queue_length(client, DEFAULT_QUEUE_LENGTH)
    }

    /// A provider whose queue holds `len` Events (at least 1).
    pub fn with_queue_length(client: kube::Client, len: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                client,
                queue_length: len.max(1),
                state: Mutex::new(State::Idle),
                dropped: AtomicU64::new(0),
            }),
        }
    }

    /// A recorder whose Events name `name` as their `reportingController` and
    /// `<name>-<hostname>` as their `reportingInstance`.
    pub fn event_recorder(&self, name: impl Into<String>) -> Recorder {
        let controller = name.into();
        let instance = match hostname() {
            Some(host) => format!("{controller}-{host}"),
            None => controller.clone(),
        };
        Recorder::new(
            self.clone(),
            Reporter {
                controller,
                instance: Some(instance),
            },
        )
    }

    /// How many Events were dropped: queue full, no tokio runtime, or recorded after
    /// [`Provider::stop`].
    pub fn dropped(&self) -> u64 {
        self.inner.dropped.load(Ordering::Relaxed)
    }

    /// Whether the writer task has been started (it starts on the first Event).
    pub fn is_started(&self) -> bool {
        matches!(&*self.inner.state.lock(), State::Running { .. })
    }

    pub(super) fn enqueue(
        &self,
        reporter: Arc<Reporter>,
        event: Event,
        regarding: ObjectReference,
    ) {
        let item = Item {
            reporter,
            event,
            regarding,
        };
        let mut state = self.inner.state.lock();
        if matches!(&*state, State::Idle) {
            match tokio::runtime::Handle::try_current() {
                Ok(handle) => {
                    let (tx, rx) = mpsc::channel(self.inner.queue_length);
                    let task = handle.spawn(write_events(self.inner.client.clone(), rx));
                    tracing::debug!("Starting the event recorder");
                    *state = State::Running { tx, task };
                }
                Err(_) => return self.drop_event(&item, "no tokio runtime to write it from"),
            }
        }
        let State::Running { tx, .. } = &*state else {
            return self.drop_event(&item, "the recorder has been stopped");
        };
        match tx.try_send(item) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(item)) => {
                self.drop_event(&item, "the event queue is full")
            }
            Err(mpsc::error::TrySendError::Closed(item)) => {
                self.drop_event(&item, "the event writer has stopped")
            }
        }
    }

    fn drop_event(&self, item: &Item, why: &'static str) {
        let n = self.inner.dropped.fetch_add(1, Ordering::Relaxed) + 1;
        // One line per power of two keeps a flood from flooding the log too.
        if n.is_power_of_two() {
            tracing::warn!(
                reason = %item.event.reason,
                namespace = item.regarding.namespace.as_deref().unwrap_or(""),
                name = item.regarding.name.as_deref().unwrap_or(""),
                dropped_total = n,
                "Event dropped: {why}"
            );
        }
    }

    /// Stops taking Events and writes those still queued, waiting at most `timeout`
    /// (then the rest are abandoned). Idempotent; the manager calls it after its
    /// runnables have stopped.
    pub async fn stop(&self, timeout: Duration) {
        let previous = std::mem::replace(&mut *self.inner.state.lock(), State::Stopped);
        let State::Running { tx, mut task } = previous else {
            return;
        };
        let queued = self.inner.queue_length - tx.capacity();
        drop(tx);
        tracing::debug!(
            queued,
            "Stopping the event recorder, flushing queued events"
        );
        if tokio::time::timeout(timeout, &mut task).await.is_err() {
            task.abort();
            tracing::warn!(
                ?timeout,
                "Event recorder did not flush its queue in time; remaining events dropped"
            );
        }
    }
}

/// The writer: one kube `Recorder` per reporter (each keeps its own series cache).
async fn write_events(client: kube::Client, mut rx: mpsc::Receiver<Item>) {
    let mut recorders: HashMap<Arc<Reporter>, KubeRecorder> = HashMap::new();
    while let Some(item) = rx.recv().await {
        let recorder = recorders
            .entry(item.reporter.clone())
            .or_insert_with(|| KubeRecorder::new(client.clone(), (*item.reporter).clone()));
        if let Err(error) = recorder.publish(&item.event, &item.regarding).await {
            tracing::warn!(
                %error,
                controller = %item.reporter.controller,
                namespace = item.regarding.namespace.as_deref().unwrap_or(""),
                name = item.regarding.name.as_deref().unwrap_or(""),
                reason = %item.event.reason,
                "Server rejected event (will not retry!)"
            );
        }
    }
}

/// The host name (`$HOSTNAME`, else the kernel's), if any: the recorder's
/// `reportingInstance` and the multi-cluster coordinator's default identity use it.
pub(crate) fn hostname() -> Option<String> {
    let from_env = std::env::var("HOSTNAME").ok();
    let name = from_env.or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())?;
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}
