//! Event fan-out from one informer (`super::informer`) to its registered handlers, each
//! through its own bounded buffer and delivery task (client-go's
//! `sharedIndexInformer` processor listeners).
//!
//! Events for one handler are delivered in the order the informer saw them. A slow
//! handler never stalls the informer or other handlers: each [`Sink`] buffers up to
//! `capacity` events. **On overflow** further events are not dropped and do not block:
//! they are *coalesced per object* in an overflow map until the handler has drained its
//! buffer, then delivered as one event per object that summarises what the handler
//! missed: `Create` for an object it had not seen, `Update(first old, newest)` for one
//! it had, `Delete` (keeping `delete_state_unknown`) for one that is gone, and
//! `Delete` then `Create` for one deleted and re-created. Memory is thus bounded by the
//! buffer plus one entry per object, and the handler ends with the same view of the
//! world as the store — what a level-based controller needs — though intermediate
//! versions of an object are skipped. [`HandlerRegistration::coalesced`] counts them.

use std::collections::{HashMap, VecDeque};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use tokio::sync::{Notify, watch};
use tokio_util::sync::CancellationToken;

use crate::event::{CreateEvent, DeleteEvent, UpdateEvent};

/// One informer event for a handler.
#[derive(Debug)]
pub enum Notification<K> {
    /// An object appeared (initial list, watch, or late-handler replay).
    Create(CreateEvent<K>),
    /// An object changed, or was resynced (then old and new are the same object).
    Update(UpdateEvent<K>),
    /// An object went away.
    Delete(DeleteEvent<K>),
}

impl<K> Clone for Notification<K> {
    fn clone(&self) -> Self {
        match self {
            Self::Create(e) => Self::Create(e.clone()),
            Self::Update(e) => Self::Update(e.clone()),
            Self::Delete(e) => Self::Delete(e.clone()),
        }
    }
}

/// Receives an informer's events (client-go's `ResourceEventHandler`). Runs on the
/// handler's own delivery task; should be quick and must not block for long.
pub trait InformerHandler<K>: Send + Sync + 'static {
    /// Handles one event.
    fn on_event(&self, event: Notification<K>);
}

impl<K, F> InformerHandler<K> for F
where
    F: Fn(Notification<K>) + Send + Sync + 'static,
{
    fn on_event(&self, event: Notification<K>) {
        self(event)
    }
}

enum Item<K> {
    Event(Notification<K>),
    /// Everything the informer had at sync time has been queued before this.
    Synced,
}

/// What one object went through while the handler's buffer was full.
struct Pending<K> {
    /// The state the handler last saw (`None`: it never saw the object).
    before: Option<Arc<K>>,
    /// The deletion seen meanwhile, if any, with its `delete_state_unknown`.
    deleted: Option<(Arc<K>, bool)>,
    /// The state now (`None`: gone).
    current: Option<Arc<K>>,
    initial: bool,
}

impl<K> Pending<K> {
    fn new(n: Notification<K>) -> Self {
        match n {
            Notification::Create(e) => Self {
                before: None,
                deleted: None,
                current: Some(e.object),
                initial: e.is_in_initial_list,
            },
            Notification::Update(e) => Self {
                before: Some(e.object_old),
                deleted: None,
                current: Some(e.object_new),
                initial: false,
            },
            Notification::Delete(e) => Self {
                before: Some(e.object.clone()),
                deleted: Some((e.object, e.delete_state_unknown)),
                current: None,
                initial: false,
            },
        }
    }

    fn merge(&mut self, n: Notification<K>) {
        match n {
            Notification::Create(e) => self.current = Some(e.object),
            Notification::Update(e) => self.current = Some(e.object_new),
            Notification::Delete(e) => {
                self.deleted = Some((e.object, e.delete_state_unknown));
                self.current = None;
            }
        }
    }

    fn flush(self, out: &mut Vec<Item<K>>) {
        let delete = |(object, unknown): (Arc<K>, bool)| {
            Item::Event(Notification::Delete(DeleteEvent {
                object,
                delete_state_unknown: unknown,
            }))
        };
        let create = |object, initial| {
            Item::Event(Notification::Create(CreateEvent {
                object,
                is_in_initial_list: initial,
            }))
        };
        match (self.before, self.deleted, self.current) {
            (Some(_), Some(d), Some(c)) => {
                out.push(delete(d));
                out.push(create(c, false));
            }
            (Some(b), None, Some(c)) => {
                out.push(Item::Event(Notification::Update(UpdateEvent::new(b, c))))
            }
            (None, _, Some(c)) => out.push(create(c, self.initial)),
            (_, Some(d), None) => out.push(delete(d)),
            (_, None, None) => {}
        }
    }
}

struct Buffer<K> {
    queue: VecDeque<Item<K>>,
    /// Hashed with foldhash, as the store is (`super::store`): keys the API server validated;
    /// `order` keeps the delivery order, so the hasher's seed shows nowhere.
    overflow: HashMap<Arc<str>, Pending<K>, foldhash::fast::FixedState>,
    order: Vec<Arc<str>>,
    synced_after_overflow: bool,
    closed: bool,
}

/// The buffered end of one handler registration.
pub(crate) struct Sink<K> {
    buf: Mutex<Buffer<K>>,
    notify: Notify,
    /// Events were queued by [`Sink::push_quiet`] and the delivery task not yet woken.
    unwoken: AtomicBool,
    capacity: usize,
    /// Flips to true once the handler was given the informer's initial state; a
    /// watch channel so that [`HandlerRegistration::wait_synced`] needs no polling.
    synced: watch::Sender<bool>,
    coalesced: AtomicU64,
    pub(crate) id: u64,
    /// The handler never blocks: its batches run without handing the worker off.
    quick: bool,
}

impl<K: Send + Sync + 'static> Sink<K> {
    pub(crate) fn new(id: u64, capacity: usize, quick: bool) -> Arc<Self> {
        Arc::new(Self {
            buf: Mutex::new(Buffer {
                queue: VecDeque::new(),
                overflow: HashMap::default(),
                order: Vec::new(),
                synced_after_overflow: false,
                closed: false,
            }),
            notify: Notify::new(),
            unwoken: AtomicBool::new(false),
            capacity: capacity.max(1),
            synced: watch::channel(false).0,
            coalesced: AtomicU64::new(0),
            id,
            quick,
        })
    }

    /// Queues an event for the object stored under `key` and wakes the delivery task; never
    /// blocks.
    pub(crate) fn push(&self, key: &Arc<str>, n: Notification<K>) {
        self.push_quiet(key, n);
        self.wake_pending();
    }

    /// Queues an event without waking the delivery task: the informer queues a burst (a list
    /// page's objects) this way and calls [`Sink::wake_pending`] once at its end, so the
    /// delivery task is woken once per burst instead of once per object (each wake of a parked
    /// worker thread is a system call on the informer's path).
    pub(crate) fn push_quiet(&self, key: &Arc<str>, n: Notification<K>) {
        self.queue(key, n);
        self.unwoken.store(true, Ordering::Release);
    }

    /// Wakes the delivery task if events were queued quietly since the last wake.
    pub(crate) fn wake_pending(&self) {
        if self.unwoken.swap(false, Ordering::AcqRel) {
            self.notify.notify_one();
        }
    }

    fn queue(&self, key: &Arc<str>, n: Notification<K>) {
        let mut b = self.buf.lock();
        if b.closed {
            return;
        }
        if b.overflow.is_empty() && b.queue.len() < self.capacity {
            b.queue.push_back(Item::Event(n));
        } else {
            if b.overflow.is_empty() {
                tracing::warn!(
                    handler = self.id,
                    capacity = self.capacity,
                    "event handler buffer full; coalescing events per object until it drains"
                );
            }
            self.coalesced.fetch_add(1, Ordering::Relaxed);
            match b.overflow.get_mut(key) {
                Some(p) => p.merge(n),
                None => {
                    b.order.push(key.clone());
                    b.overflow.insert(key.clone(), Pending::new(n));
                }
            }
        }
    }

    /// Marks the point after which the handler has seen the informer's initial state.
    pub(crate) fn push_synced(&self) {
        let mut b = self.buf.lock();
        if b.overflow.is_empty() {
            b.queue.push_back(Item::Synced);
        } else {
            b.synced_after_overflow = true;
        }
        drop(b);
        self.notify.notify_one();
    }

    /// Stops delivery; queued events are dropped.
    pub(crate) fn close(&self) {
        let mut b = self.buf.lock();
        b.closed = true;
        b.queue.clear();
        b.overflow.clear();
        b.order.clear();
        drop(b);
        self.notify.notify_one();
    }

    /// The next batch to deliver, or `None` when closed.
    fn take(&self) -> Option<Vec<Item<K>>> {
        let mut b = self.buf.lock();
        if b.closed {
            return None;
        }
        let n = b.queue.len().min(64);
        let mut out: Vec<Item<K>> = b.queue.drain(..n).collect();
        if out.is_empty() && !b.overflow.is_empty() {
            let order = std::mem::take(&mut b.order);
            let mut overflow = std::mem::take(&mut b.overflow);
            for k in order {
                if let Some(p) = overflow.remove(&k) {
                    p.flush(&mut out);
                }
            }
            if std::mem::take(&mut b.synced_after_overflow) {
                out.push(Item::Synced);
            }
        }
        Some(out)
    }

    /// Delivers events to `handler` until the sink is closed or `ctx` is cancelled.
    pub(crate) async fn run(
        self: Arc<Self>,
        handler: Arc<dyn InformerHandler<K>>,
        ctx: CancellationToken,
    ) {
        let hand_off = !self.quick
            && tokio::runtime::Handle::try_current()
                .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
        loop {
            let notified = self.notify.notified();
            let Some(batch) = self.take() else { return };
            if batch.is_empty() {
                tokio::select! {
                    _ = notified => continue,
                    _ = ctx.cancelled() => return,
                }
            }
            let deliver = || {
                for item in batch {
                    match item {
                        Item::Synced => {
                            self.synced.send_replace(true);
                        }
                        Item::Event(n) => {
                            let h = handler.clone();
                            if std::panic::catch_unwind(AssertUnwindSafe(move || h.on_event(n)))
                                .is_err()
                            {
                                tracing::error!(
                                    handler = self.id,
                                    "event handler panicked; event dropped"
                                );
                            }
                        }
                    }
                }
            };
            // A handler that blocks would also hold the tasks queued on its worker
            // thread (tokio's LIFO slot cannot be stolen); on a multi-threaded runtime
            // hand the worker's queue to another thread while handlers run, unless the
            // handler was registered as quick.
            if hand_off {
                tokio::task::block_in_place(deliver);
            } else {
                deliver();
            }
            tokio::task::yield_now().await;
        }
    }
}

/// A handler's registration on an informer (client-go's
/// `ResourceEventHandlerRegistration`).
pub struct HandlerRegistration<K> {
    pub(crate) sink: Arc<Sink<K>>,
}

impl<K> Clone for HandlerRegistration<K> {
    fn clone(&self) -> Self {
        Self {
            sink: self.sink.clone(),
        }
    }
}

impl<K> std::fmt::Debug for HandlerRegistration<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerRegistration")
            .field("id", &self.sink.id)
            .finish()
    }
}

impl<K> HandlerRegistration<K> {
    /// True once the handler has been given every object of the informer's initial
    /// list (or, for a late handler, every object present when it registered).
    pub fn has_synced(&self) -> bool {
        *self.sink.synced.borrow()
    }

    /// Resolves once [`has_synced`](Self::has_synced) is true: woken by the delivery
    /// task right after it handed the handler the last initial-list event (no
    /// polling). Never resolves for a registration removed before it synced, so
    /// callers bound it with their own cancellation.
    pub async fn wait_synced(&self) {
        let mut rx = self.sink.synced.subscribe();
        // The sender lives in the sink, which `self` keeps alive: `wait_for` can only
        // end by seeing `true`.
        let _ = rx.wait_for(|s| *s).await;
    }

    /// How many events were coalesced because this handler's buffer was full.
    pub fn coalesced(&self) -> u64 {
        self.sink.coalesced.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> Arc<str> {
        Arc::from(s)
    }

    #[test]
    fn overflow_coalesces_per_object() {
        let s = Sink::<u32>::new(1, 1, false);
        let (a, b) = (key("a"), key("b"));
        s.push(&a, Notification::Create(CreateEvent::new(Arc::new(1))));
        // Buffer full: b is created then updated twice, a is updated then deleted.
        s.push(&b, Notification::Create(CreateEvent::new(Arc::new(10))));
        s.push(
            &b,
            Notification::Update(UpdateEvent::new(Arc::new(10), Arc::new(11))),
        );
        s.push(
            &a,
            Notification::Update(UpdateEvent::new(Arc::new(1), Arc::new(2))),
        );
        s.push(&a, Notification::Delete(DeleteEvent::new(Arc::new(2))));
        s.push_synced();
        assert_eq!(s.coalesced.load(Ordering::Relaxed), 4);
        let first = s.take().unwrap_or_default();
        assert_eq!(first.len(), 1);
        let rest = s.take().unwrap_or_default();
        let got: Vec<String> = rest
            .iter()
            .map(|i| match i {
                Item::Synced => "synced".to_string(),
                Item::Event(Notification::Create(e)) => format!("create {}", e.object),
                Item::Event(Notification::Update(e)) => {
                    format!("update {}->{}", e.object_old, e.object_new)
                }
                Item::Event(Notification::Delete(e)) => format!("delete {}", e.object),
            })
            .collect();
        assert_eq!(got, ["create 11", "delete 2", "synced"]);
    }
}
