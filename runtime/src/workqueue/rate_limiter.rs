//! Rate limiters: how long an item waits before it is retried (client-go's
//! `default_rate_limiters.go`).
//!
//! A [`RateLimiter`] is asked [`RateLimiter::when`] each time an item fails; the queue
//! ([`super::RateLimitingQueue::add_rate_limited`], [`super::PriorityQueue`]) then adds the
//! item after that delay. The numbers are client-go's exactly:
//!
//! | client-go | ctrl |
//! |---|---|
//! | `NewTypedItemExponentialFailureRateLimiter(base, max)` | [`ItemExponentialFailureRateLimiter::new`] |
//! | `TypedBucketRateLimiter{rate.NewLimiter(qps, burst)}` | [`BucketRateLimiter::new`] |
//! | `NewTypedItemFastSlowRateLimiter(fast, slow, n)` | [`ItemFastSlowRateLimiter::new`] |
//! | `NewTypedMaxOfRateLimiter(a, b, ...)` | [`MaxOfRateLimiter::new`] |
//! | `NewTypedWithMaxWaitRateLimiter(l, max)` | [`WithMaxWaitRateLimiter::new`] |
//! | `DefaultTypedControllerRateLimiter()` | [`default_controller_rate_limiter`] |
//!
//! The token bucket reads time from `tokio::time::Instant`, so tests under
//! `tokio::time::pause` see exact delays; outside a runtime it reads the system clock.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

use super::{QueueKey, RateLimiter};

/// The largest delay a limiter can express (Go's `time.Duration` is an `int64` of ns).
const MAX_GO_DURATION: Duration = Duration::from_nanos(i64::MAX as u64);

/// The controller default: the max of a per-item exponential backoff (5 ms .. 1000 s) and
/// an overall token bucket of 10 qps with a burst of 100 (client-go's
/// `DefaultTypedControllerRateLimiter`).
pub fn default_controller_rate_limiter<T: QueueKey>() -> Arc<dyn RateLimiter<T>> {
    Arc::new(MaxOfRateLimiter::new(vec![
        Arc::new(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        )),
        Arc::new(BucketRateLimiter::new(10.0, 100)),
    ]))
}

/// The per-item default of controller-runtime's priority queue: exponential backoff from
/// 5 ms up to 1000 s.
pub fn default_item_rate_limiter<T: QueueKey>() -> Arc<dyn RateLimiter<T>> {
    Arc::new(ItemExponentialFailureRateLimiter::new(
        Duration::from_millis(5),
        Duration::from_secs(1000),
    ))
}

/// Drops `item`'s failure count. Every successful reconcile forgets its request, and almost
/// none has failed: an empty map is left without hashing the key.
fn forget<T: Hash + Eq>(failures: &Mutex<HashMap<T, u32>>, item: &T) {
    let mut f = failures.lock();
    if !f.is_empty() {
        f.remove(item);
    }
}

/// Waits `base * 2^failures` for an item, capped at `max` (client-go's
/// `ItemExponentialFailureRateLimiter`).
pub struct ItemExponentialFailureRateLimiter<T> {
    failures: Mutex<HashMap<T, u32>>,
    base: Duration,
    max: Duration,
}

impl<T: QueueKey> ItemExponentialFailureRateLimiter<T> {
    /// A limiter starting at `base` and doubling per failure up to `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            failures: Mutex::new(HashMap::new()),
            base,
            max,
        }
    }
}

impl<T: QueueKey> RateLimiter<T> for ItemExponentialFailureRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let exp = {
            let mut failures = self.failures.lock();
            match failures.get_mut(item) {
                Some(n) => {
                    let exp = *n;
                    *n = n.saturating_add(1);
                    exp
                }
                None => {
                    failures.insert(item.clone(), 1);
                    0
                }
            }
        };
        // The same float arithmetic as client-go, so the overflow point matches.
        let backoff = self.base.as_nanos() as f64 * 2f64.powi(exp.min(i32::MAX as u32) as i32);
        if backoff > i64::MAX as f64 {
            return self.max;
        }
        let calculated = Duration::from_nanos(backoff as u64);
        calculated.min(self.max)
    }

    fn forget(&self, item: &T) {
        forget(&self.failures, item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.failures.lock().get(item).map_or(0, |n| *n as usize)
    }
}

/// Waits `fast` for the first `max_fast_attempts` failures of an item, `slow` after
/// (client-go's `ItemFastSlowRateLimiter`).
pub struct ItemFastSlowRateLimiter<T> {
    failures: Mutex<HashMap<T, u32>>,
    fast: Duration,
    slow: Duration,
    max_fast_attempts: u32,
}

impl<T: QueueKey> ItemFastSlowRateLimiter<T> {
    /// A limiter that waits `fast` up to `max_fast_attempts` times, then `slow`.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: u32) -> Self {
        Self {
            failures: Mutex::new(HashMap::new()),
            fast,
            slow,
            max_fast_attempts,
        }
    }
}

impl<T: QueueKey> RateLimiter<T> for ItemFastSlowRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        let n = {
            let mut failures = self.failures.lock();
            let n = failures.entry(item.clone()).or_insert(0);
            *n = n.saturating_add(1);
            *n
        };
        if n <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }

    fn forget(&self, item: &T) {
        forget(&self.failures, item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.failures.lock().get(item).map_or(0, |n| *n as usize)
    }
}

/// An overall token bucket shared by all items: `qps` tokens per second, at most `burst`
/// saved up (client-go's `BucketRateLimiter` over `golang.org/x/time/rate`). It does not
/// track items: `forget` does nothing and `num_requeues` is 0.
pub struct BucketRateLimiter {
    state: Mutex<Bucket>,
    qps: f64,
    burst: f64,
}

struct Bucket {
    tokens: f64,
    last: Option<Instant>,
}

impl BucketRateLimiter {
    /// A bucket refilled at `qps` tokens per second holding at most `burst` tokens; it
    /// starts full.
    pub fn new(qps: f64, burst: u32) -> Self {
        Self {
            state: Mutex::new(Bucket {
                tokens: f64::from(burst),
                last: None,
            }),
            qps,
            burst: f64::from(burst),
        }
    }

    /// Reserves one token now and returns how long to wait for it (`Reserve().Delay()`).
    fn reserve(&self) -> Duration {
        if self.qps.is_infinite() && self.qps > 0.0 {
            return Duration::ZERO;
        }
        let now = Instant::now();
        let mut b = self.state.lock();
        // advance: refill for the time since the last reservation, capped at burst.
        let last = match b.last {
            Some(last) if last <= now => last,
            _ => now,
        };
        let elapsed = now.saturating_duration_since(last).as_secs_f64();
        let tokens = (b.tokens + elapsed * self.qps).min(self.burst) - 1.0;
        if self.burst < 1.0 {
            // x/time/rate refuses the reservation; client-go then waits "forever".
            return MAX_GO_DURATION;
        }
        let wait = if tokens < 0.0 {
            if self.qps <= 0.0 {
                return MAX_GO_DURATION;
            }
            let secs = -tokens / self.qps;
            if secs * 1e9 >= i64::MAX as f64 {
                MAX_GO_DURATION
            } else {
                Duration::from_nanos((secs * 1e9) as u64)
            }
        } else {
            Duration::ZERO
        };
        b.tokens = tokens;
        b.last = Some(now);
        wait
    }
}

impl<T: QueueKey> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.reserve()
    }
    fn forget(&self, _item: &T) {}
    fn num_requeues(&self, _item: &T) -> usize {
        0
    }
}

/// The worst (longest) of several limiters (client-go's `MaxOfRateLimiter`): every
/// limiter is asked, the longest delay wins, `num_requeues` is the max, `forget`
/// forgets in all.
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Arc<dyn RateLimiter<T>>>,
}

impl<T: QueueKey> MaxOfRateLimiter<T> {
    /// Combines `limiters`; with none, every delay is zero.
    pub fn new(limiters: Vec<Arc<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }
}

impl<T: QueueKey> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiters
            .iter()
            .map(|l| l.when(item))
            .max()
            .unwrap_or(Duration::ZERO)
    }
    fn forget(&self, item: &T) {
        for l in &self.limiters {
            l.forget(item);
        }
    }
    fn num_requeues(&self, item: &T) -> usize {
        self.limiters
            .iter()
            .map(|l| l.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

/// Caps another limiter's delay at `max_delay` (client-go's `WithMaxWaitRateLimiter`).
pub struct WithMaxWaitRateLimiter<T> {
    limiter: Arc<dyn RateLimiter<T>>,
    max_delay: Duration,
}

impl<T: QueueKey> WithMaxWaitRateLimiter<T> {
    /// Wraps `limiter` so that no delay exceeds `max_delay`.
    pub fn new(limiter: Arc<dyn RateLimiter<T>>, max_delay: Duration) -> Self {
        Self { limiter, max_delay }
    }
}

impl<T: QueueKey> RateLimiter<T> for WithMaxWaitRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        self.limiter.when(item).min(self.max_delay)
    }
    fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }
    fn num_requeues(&self, item: &T) -> usize {
        self.limiter.num_requeues(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn exponential_sequence_and_forget() {
        let l = ItemExponentialFailureRateLimiter::new(ms(1), Duration::from_secs(1));
        let got: Vec<_> = (0..5).map(|_| l.when(&"one")).collect();
        assert_eq!(got, vec![ms(1), ms(2), ms(4), ms(8), ms(16)]);
        assert_eq!(l.num_requeues(&"one"), 5);
        assert_eq!(l.when(&"two"), ms(1));
        assert_eq!(l.when(&"two"), ms(2));
        assert_eq!(l.num_requeues(&"two"), 2);
        l.forget(&"one");
        assert_eq!(l.num_requeues(&"one"), 0);
        assert_eq!(l.when(&"one"), ms(1));
    }

    #[test]
    fn exponential_controller_default_sequence() {
        let l = ItemExponentialFailureRateLimiter::new(ms(5), Duration::from_secs(1000));
        let got: Vec<_> = (0..20).map(|_| l.when(&"k")).collect();
        let mut want: Vec<_> = (0..18).map(|i| ms(5) * 2u32.pow(i)).collect();
        // 5ms * 2^18 = 1310.72s > 1000s: capped from there on.
        want.push(Duration::from_secs(1000));
        want.push(Duration::from_secs(1000));
        assert_eq!(got, want);
    }

    #[test]
    fn exponential_overflow() {
        let l = ItemExponentialFailureRateLimiter::new(
            Duration::from_nanos(1),
            Duration::from_secs(1000),
        );
        for _ in 0..5 {
            l.when(&"one");
        }
        assert_eq!(l.when(&"one"), Duration::from_nanos(32));
        for _ in 0..1000 {
            l.when(&"overflow1");
        }
        assert_eq!(l.when(&"overflow1"), Duration::from_secs(1000));

        let hour = Duration::from_secs(3600);
        let l = ItemExponentialFailureRateLimiter::new(Duration::from_secs(60), hour * 1000);
        for _ in 0..2 {
            l.when(&"two");
        }
        assert_eq!(l.when(&"two"), Duration::from_secs(240));
        for _ in 0..1000 {
            l.when(&"overflow2");
        }
        assert_eq!(l.when(&"overflow2"), hour * 1000);
    }

    #[test]
    fn fast_slow_sequence() {
        let l = ItemFastSlowRateLimiter::new(ms(5), Duration::from_secs(10), 3);
        let got: Vec<_> = (0..5).map(|_| l.when(&"one")).collect();
        assert_eq!(
            got,
            vec![
                ms(5),
                ms(5),
                ms(5),
                Duration::from_secs(10),
                Duration::from_secs(10)
            ]
        );
        assert_eq!(l.num_requeues(&"one"), 5);
        assert_eq!(l.when(&"two"), ms(5));
        assert_eq!(l.when(&"two"), ms(5));
        assert_eq!(l.num_requeues(&"two"), 2);
        l.forget(&"one");
        assert_eq!(l.num_requeues(&"one"), 0);
        assert_eq!(l.when(&"one"), ms(5));
    }

    #[test]
    fn max_of_sequence() {
        let l = MaxOfRateLimiter::<&str>::new(vec![
            Arc::new(ItemFastSlowRateLimiter::new(
                ms(5),
                Duration::from_secs(3),
                3,
            )),
            Arc::new(ItemExponentialFailureRateLimiter::new(
                ms(1),
                Duration::from_secs(1),
            )),
        ]);
        let got: Vec<_> = (0..5).map(|_| l.when(&"one")).collect();
        assert_eq!(
            got,
            vec![
                ms(5),
                ms(5),
                ms(5),
                Duration::from_secs(3),
                Duration::from_secs(3)
            ]
        );
        assert_eq!(l.num_requeues(&"one"), 5);
        assert_eq!(l.when(&"two"), ms(5));
        assert_eq!(l.when(&"two"), ms(5));
        assert_eq!(l.num_requeues(&"two"), 2);
        l.forget(&"one");
        assert_eq!(l.num_requeues(&"one"), 0);
        assert_eq!(l.when(&"one"), ms(5));
    }

    #[test]
    fn with_max_wait_caps() {
        let inner: Arc<dyn RateLimiter<&str>> = Arc::new(ItemExponentialFailureRateLimiter::new(
            ms(100),
            Duration::from_secs(100),
        ));
        let l = WithMaxWaitRateLimiter::new(inner, ms(300));
        let got: Vec<_> = (0..4).map(|_| l.when(&"a")).collect();
        assert_eq!(got, vec![ms(100), ms(200), ms(300), ms(300)]);
        assert_eq!(l.num_requeues(&"a"), 4);
        l.forget(&"a");
        assert_eq!(l.num_requeues(&"a"), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_burst_then_qps() {
        let l = BucketRateLimiter::new(10.0, 100);
        for i in 0..100 {
            assert_eq!(
                RateLimiter::<u32>::when(&l, &i),
                Duration::ZERO,
                "call {i} is within the burst"
            );
        }
        assert_eq!(RateLimiter::<u32>::when(&l, &100), ms(100));
        assert_eq!(RateLimiter::<u32>::when(&l, &101), ms(200));
        assert_eq!(RateLimiter::<u32>::when(&l, &102), ms(300));
        assert_eq!(RateLimiter::<u32>::num_requeues(&l, &100), 0);
        // After one second, 10 tokens came back: the debt of 3 is paid, 7 remain.
        tokio::time::advance(Duration::from_secs(1)).await;
        for i in 0..7 {
            assert_eq!(RateLimiter::<u32>::when(&l, &i), Duration::ZERO);
        }
        assert_eq!(RateLimiter::<u32>::when(&l, &7), ms(100));
    }

    #[tokio::test(start_paused = true)]
    async fn default_controller_limiter_is_max_of_both() {
        let l = default_controller_rate_limiter::<String>();
        let k = "default/a".to_string();
        // Within the burst the per-item backoff wins: 5ms, 10ms, 20ms, ...
        assert_eq!(l.when(&k), ms(5));
        assert_eq!(l.when(&k), ms(10));
        assert_eq!(l.when(&k), ms(20));
        assert_eq!(l.num_requeues(&k), 3);
        // Exhaust the burst of 100 (3 used) with other keys.
        for i in 0..97 {
            assert_eq!(l.when(&format!("other/{i}")), ms(5));
        }
        // Now the bucket wins for a fresh key: 100ms for the first token in debt.
        assert_eq!(l.when(&"fresh".to_string()), ms(100));
        l.forget(&k);
        assert_eq!(l.num_requeues(&k), 0);
    }
}
