//! The queue implementations the work-queue table compares, behind one small trait.
//!
//! kube-runtime's scheduler is a single-consumer stream with no get/done protocol, so its
//! scenarios are written separately in `workqueue.rs`.

use std::collections::{HashSet, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ctrl::workqueue::triggers::{Event, Kind, ObjectRef, Origin};
use ctrl::workqueue::{
    AddOpts, ItemExponentialFailureRateLimiter, PriorityQueue, Queue, QueueConfig,
    RateLimitingQueue, Trigger, prometheus_metrics_provider,
};
use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc};

/// What a scenario needs from a queue.
#[allow(clippy::ptr_arg)] // keys are owned Strings in every implementation
pub trait BenchQueue: Clone + Send + Sync + 'static {
    fn add(&self, k: String);
    /// Adds a borrowed key; implementations that dedup clone it only when they store it.
    fn add_ref(&self, k: &str);
    fn add_after(&self, k: String, d: Duration);
    /// A failed item: back off (per-item exponential 5 ms base) and add again.
    fn retry(&self, k: String);
    /// The item succeeded: forget its failures.
    fn forget(&self, k: &String);
    fn get(&self) -> impl Future<Output = Option<String>> + Send;
    fn done(&self, k: &String);
    fn shut_down(&self);
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

fn exp_limiter() -> Arc<ItemExponentialFailureRateLimiter<String>> {
    Arc::new(ItemExponentialFailureRateLimiter::new(
        Duration::from_millis(5),
        Duration::from_secs(1000),
    ))
}

/// ctrl's `RateLimitingQueue` (limiter: per-item exponential 5 ms, as S5 asks).
pub fn ctrl_queue(metrics: bool) -> RateLimitingQueue<String> {
    let mut cfg = QueueConfig::new(format!(
        "bench-rlq-{}",
        NEXT.fetch_add(1, Ordering::Relaxed)
    ))
    .with_rate_limiter(exp_limiter());
    if metrics {
        cfg = cfg.with_metrics(prometheus_metrics_provider());
    }
    RateLimitingQueue::new(cfg)
}

/// ctrl's `PriorityQueue` (its default limiter is the per-item exponential 5 ms one).
pub fn ctrl_priority(metrics: bool) -> PriorityQueue<String> {
    let mut cfg = QueueConfig::new(format!("bench-pq-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
    if metrics {
        cfg = cfg.with_metrics(prometheus_metrics_provider());
    }
    PriorityQueue::new(cfg)
}

impl BenchQueue for RateLimitingQueue<String> {
    fn add(&self, k: String) {
        RateLimitingQueue::add(self, k)
    }
    fn add_ref(&self, k: &str) {
        RateLimitingQueue::add_ref(self, k)
    }
    fn add_after(&self, k: String, d: Duration) {
        RateLimitingQueue::add_after(self, k, d)
    }
    fn retry(&self, k: String) {
        self.add_rate_limited(k)
    }
    fn forget(&self, k: &String) {
        RateLimitingQueue::forget(self, k)
    }
    fn get(&self) -> impl Future<Output = Option<String>> + Send {
        RateLimitingQueue::get(self)
    }
    fn done(&self, k: &String) {
        RateLimitingQueue::done(self, k)
    }
    fn shut_down(&self) {
        RateLimitingQueue::shut_down(self)
    }
}

impl BenchQueue for PriorityQueue<String> {
    fn add(&self, k: String) {
        PriorityQueue::add(self, k)
    }
    fn add_ref(&self, k: &str) {
        PriorityQueue::add_ref(self, k)
    }
    fn add_after(&self, k: String, d: Duration) {
        PriorityQueue::add_after(self, k, d)
    }
    fn retry(&self, k: String) {
        self.add_rate_limited(k)
    }
    fn forget(&self, k: &String) {
        PriorityQueue::forget(self, k)
    }
    fn get(&self) -> impl Future<Output = Option<String>> + Send {
        PriorityQueue::get(self)
    }
    fn done(&self, k: &String) {
        PriorityQueue::done(self, k)
    }
    fn shut_down(&self) {
        PriorityQueue::shut_down(self)
    }
}

/// How many distinct triggers [`WithTriggers`] stamps (a power of two), picked by the key.
const TRIGGER_POOL: usize = 4096;

/// ctrl's `PriorityQueue` keeping triggers, as a controller's queue does by default (the
/// handle `Triggered::new` picks for a priority queue): every add carries what a `Kind`
/// source stamps for `For` on an update (origin, event, the object's kind and
/// resourceVersion; its namespace and name are the key's), and every `get` takes the key's
/// trigger set (`get_triggered`, what a controller's worker calls through
/// `Queue::get_triggered_boxed`). Adds go through the `Queue` trait as a controller's do,
/// lending the trigger (`add_triggered_ref`, what a source's `Stamped` view passes for each
/// add of its event); `add_ref` and `get` are inherent calls as in the plain `PriorityQueue`
/// row, so the two rows differ by the triggers alone. (An `Owns` or `Watches` trigger also
/// shares the other object's name behind one reference count; this row does not measure it.)
///
/// The triggers are built before the clock starts, as the keys are (a source builds one per
/// event, before it adds: `benches/controller.rs` times a whole controller). Key
/// `default/obj-{i}` carries trigger `i % 4096` of a pool: one resourceVersion per event, as
/// a source's are.
#[derive(Clone)]
pub struct WithTriggers {
    q: PriorityQueue<String>,
    pool: Arc<[Trigger]>,
}

impl WithTriggers {
    /// With metrics on or off (a controller's queue has them: the `+metrics +triggers` row).
    pub fn new(metrics: bool) -> Self {
        Self::with_pool(TRIGGER_POOL, metrics)
    }

    /// With `size` distinct triggers (the memory column: one per key, as a controller's
    /// queue holds one object per queued key).
    pub fn with_pool(size: usize, metrics: bool) -> Self {
        let kind = Kind::intern("ConfigMap");
        let pool = (0..size.max(1))
            .map(|i| {
                let object = ObjectRef::reconciled(kind, &(12_345 + i).to_string());
                Trigger::new(Origin::For, Event::Update).with_object(object)
            })
            .collect();
        Self {
            q: ctrl_priority(metrics).keeping_triggers(),
            pool,
        }
    }

    /// The trigger of key `k`: one of the pool's, picked from the key's last eight bytes
    /// read as one word, mixed by one multiply and masked to the pool's size (the timed
    /// rows' pool is a power of two: no division), so the row pays next to nothing for the
    /// pick and consecutive keys `default/obj-{i}` get distinct ones.
    fn trigger(&self, k: &str) -> &Trigger {
        let b = k.as_bytes();
        let tail = b.len().checked_sub(8).and_then(|at| b.get(at..));
        let word = tail
            .and_then(|t| <[u8; 8]>::try_from(t).ok())
            .map_or(0, u64::from_le_bytes);
        let mixed = word.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        let (i, len) = (mixed as usize, self.pool.len());
        let i = if len.is_power_of_two() {
            i & (len - 1)
        } else {
            i % len
        };
        &self.pool[i]
    }

    fn add_opts(&self, opts: AddOpts, k: String) {
        let t = self.trigger(&k);
        Queue::add_triggered_ref(&self.q, opts, k, t)
    }
}

impl BenchQueue for WithTriggers {
    fn add(&self, k: String) {
        self.add_opts(AddOpts::default(), k)
    }
    fn add_ref(&self, k: &str) {
        self.q.add_ref_triggered(k, self.trigger(k))
    }
    fn add_after(&self, k: String, d: Duration) {
        let opts = AddOpts {
            after: Some(d),
            ..AddOpts::default()
        };
        self.add_opts(opts, k)
    }
    fn retry(&self, k: String) {
        let opts = AddOpts {
            rate_limited: true,
            ..AddOpts::default()
        };
        self.add_opts(opts, k)
    }
    fn forget(&self, k: &String) {
        self.q.forget(k)
    }
    async fn get(&self) -> Option<String> {
        let (k, _, triggers) = self.q.get_triggered().await?;
        std::hint::black_box(triggers);
        Some(k)
    }
    fn done(&self, k: &String) {
        self.q.done(k)
    }
    fn shut_down(&self) {
        self.q.shut_down()
    }
}

/// The bare baseline: `Mutex<(VecDeque, HashSet)>` + `Notify`; dedup only, no processing
/// set; delays are one sleeping task per item.
#[derive(Clone)]
pub struct Bare {
    inner: Arc<BareInner>,
}

struct BareInner {
    state: Mutex<(VecDeque<String>, HashSet<String>, bool)>,
    notify: Notify,
    limiter: Arc<ItemExponentialFailureRateLimiter<String>>,
}

impl Bare {
    pub fn new() -> Self {
        Self {
            inner: Arc::new(BareInner {
                state: Mutex::new((VecDeque::new(), HashSet::new(), false)),
                notify: Notify::new(),
                limiter: exp_limiter(),
            }),
        }
    }
}

impl BenchQueue for Bare {
    fn add(&self, k: String) {
        let mut s = self.inner.state.lock();
        if s.2 || s.1.contains(&k) {
            return;
        }
        s.1.insert(k.clone());
        s.0.push_back(k);
        drop(s);
        self.inner.notify.notify_one();
    }
    fn add_ref(&self, k: &str) {
        let mut s = self.inner.state.lock();
        if s.2 || s.1.contains(k) {
            return;
        }
        let k = k.to_owned();
        s.1.insert(k.clone());
        s.0.push_back(k);
        drop(s);
        self.inner.notify.notify_one();
    }
    fn add_after(&self, k: String, d: Duration) {
        let q = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(d).await;
            q.add(k);
        });
    }
    fn retry(&self, k: String) {
        use ctrl::workqueue::RateLimiter;
        let d = self.inner.limiter.when(&k);
        self.add_after(k, d);
    }
    fn forget(&self, k: &String) {
        use ctrl::workqueue::RateLimiter;
        self.inner.limiter.forget(k);
    }
    async fn get(&self) -> Option<String> {
        let try_take = || {
            let mut s = self.inner.state.lock();
            if let Some(k) = s.0.pop_front() {
                s.1.remove(&k);
                return Some(Some(k));
            }
            if s.2 { Some(None) } else { None }
        };
        if let Some(r) = try_take() {
            return r;
        }
        loop {
            let notified = self.inner.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if let Some(r) = try_take() {
                return r;
            }
            notified.await;
        }
    }
    fn done(&self, _k: &String) {}
    fn shut_down(&self) {
        self.inner.state.lock().2 = true;
        self.inner.notify.notify_waiters();
    }
}

/// The floor: an unbounded tokio mpsc channel (no dedup at all). An empty string is the
/// stop signal; consumers share the receiver through an async mutex.
#[derive(Clone)]
pub struct Chan {
    tx: mpsc::UnboundedSender<String>,
    rx: Arc<tokio::sync::Mutex<mpsc::UnboundedReceiver<String>>>,
    limiter: Arc<ItemExponentialFailureRateLimiter<String>>,
}

impl Chan {
    pub fn new() -> Self {
        let (tx, rx) = mpsc::unbounded_channel();
        Self {
            tx,
            rx: Arc::new(tokio::sync::Mutex::new(rx)),
            limiter: exp_limiter(),
        }
    }
}

impl BenchQueue for Chan {
    fn add(&self, k: String) {
        let _ = self.tx.send(k);
    }
    fn add_ref(&self, k: &str) {
        let _ = self.tx.send(k.to_owned());
    }
    fn add_after(&self, k: String, d: Duration) {
        let tx = self.tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(d).await;
            let _ = tx.send(k);
        });
    }
    fn retry(&self, k: String) {
        use ctrl::workqueue::RateLimiter;
        let d = self.limiter.when(&k);
        self.add_after(k, d);
    }
    fn forget(&self, k: &String) {
        use ctrl::workqueue::RateLimiter;
        self.limiter.forget(k);
    }
    async fn get(&self) -> Option<String> {
        let mut rx = self.rx.lock().await;
        match rx.recv().await {
            Some(k) if !k.is_empty() => Some(k),
            _ => None,
        }
    }
    fn done(&self, _k: &String) {}
    fn shut_down(&self) {
        for _ in 0..64 {
            let _ = self.tx.send(String::new());
        }
    }
}
