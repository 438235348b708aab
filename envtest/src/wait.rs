//! Waiting in tests: poll a probe every few milliseconds until it holds, and fail clearly —
//! saying what was awaited and the last value observed — when it does not within a timeout.
//! Gomega's `Eventually(f).Should(..)` and apimachinery's `wait.PollUntilContextTimeout`
//! (`k8s.io/apimachinery/pkg/util/wait/poll.go`), for the tests that drive an
//! [`Environment`](crate::Environment) (or anything else that converges).
//!
//! A leaf: it knows nothing of the server's layers, only of time (tokio's, so a test with a
//! paused clock waits in virtual time).
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() {
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU32, Ordering};
//! use std::time::Duration;
//! use ctrl_envtest::wait::{Wait, eventually, wait_until};
//!
//! let count = Arc::new(AtomicU32::new(0));
//! let counter = count.clone();
//! tokio::spawn(async move {
//!     for _ in 0..3 {
//!         tokio::time::sleep(Duration::from_millis(5)).await;
//!         counter.fetch_add(1, Ordering::SeqCst);
//!     }
//! });
//! // Poll a value until a condition holds on it; the value is returned.
//! let n = wait_until("three ticks", || async { count.load(Ordering::SeqCst) }, |n| *n >= 3).await;
//! assert_eq!(n, 3);
//! // Or poll a probe until it answers `Some`.
//! let odd = eventually("an odd count", || async {
//!     let n = count.load(Ordering::SeqCst);
//!     (n % 2 == 1).then_some(n)
//! })
//! .await;
//! assert_eq!(odd, 3);
//! // Without a panic, with a timeout of your own: the error has the last value seen.
//! let err = Wait::new()
//!     .timeout(Duration::from_millis(30))
//!     .try_until(|| async { count.load(Ordering::SeqCst) }, |n| *n > 10)
//!     .await
//!     .unwrap_err();
//! assert_eq!(err.last, 3);
//! assert!(err.to_string().contains("last observed: 3"), "{err}");
//! # }
//! ```

use std::fmt::Debug;
use std::future::Future;
use std::time::Duration;

use tokio::time::Instant;

/// How long [`eventually`] and [`wait_until`] wait before they fail: long enough for a
/// loaded CI machine, short enough that a test that cannot pass fails in reasonable time.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How often a probe is asked again: short, since an in-process server answers in well
/// under a millisecond.
pub const DEFAULT_INTERVAL: Duration = Duration::from_millis(20);

/// A condition that did not hold within the timeout, with the last value observed.
#[derive(Debug, thiserror::Error)]
#[error("not within {after:?}; last observed: {last:?}")]
pub struct TimedOut<T: Debug> {
    /// How long was waited.
    pub after: Duration,
    /// The value the probe returned last.
    pub last: T,
}

/// A poll: how long to wait at most ([`DEFAULT_TIMEOUT`] unless set) and how often to
/// probe ([`DEFAULT_INTERVAL`] unless set).
#[derive(Clone, Copy, Debug)]
pub struct Wait {
    timeout: Duration,
    interval: Duration,
}

impl Default for Wait {
    fn default() -> Self {
        Self::new()
    }
}

impl Wait {
    /// A poll with the default timeout and interval.
    pub const fn new() -> Self {
        Self {
            timeout: DEFAULT_TIMEOUT,
            interval: DEFAULT_INTERVAL,
        }
    }

    /// Waits at most `timeout`.
    pub const fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Probes every `interval`.
    pub const fn interval(mut self, interval: Duration) -> Self {
        self.interval = interval;
        self
    }

    /// Calls `get` until `ok` holds on its value, which it returns; [`TimedOut`] with the
    /// last value once the timeout has passed (the probe runs at least once).
    pub async fn try_until<T, F, Fut>(
        &self,
        mut get: F,
        mut ok: impl FnMut(&T) -> bool,
    ) -> Result<T, TimedOut<T>>
    where
        T: Debug,
        F: FnMut() -> Fut,
        Fut: Future<Output = T>,
    {
        let start = Instant::now();
        loop {
            let last = get().await;
            if ok(&last) {
                return Ok(last);
            }
            let after = start.elapsed();
            if after >= self.timeout {
                return Err(TimedOut { after, last });
            }
            tokio::time::sleep(self.interval.min(self.timeout - after)).await;
        }
    }

    /// [`try_until`](Self::try_until) that panics on timeout, naming `what` and the last
    /// value observed.
    pub async fn until<T, F, Fut>(&self, what: &str, get: F, ok: impl FnMut(&T) -> bool) -> T
    where
        T: Debug,
        F: FnMut() -> Fut,
        Fut: Future<Output = T>,
    {
        match self.try_until(get, ok).await {
            Ok(v) => v,
            Err(e) => panic!("waiting for {what}: {e}"),
        }
    }

    /// Calls `probe` until it returns `Some`, and returns what it holds; panics on
    /// timeout, naming `what`.
    pub async fn eventually<T, F, Fut>(&self, what: &str, mut probe: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Option<T>>,
    {
        let answer = || {
            let next = probe();
            async move { Answer(next.await) }
        };
        match self.try_until(answer, |a| a.0.is_some()).await {
            Ok(Answer(Some(v))) => v,
            Ok(Answer(None)) => unreachable!("try_until returns only a value that passed"),
            Err(e) => panic!("waiting for {what}: not within {:?}", e.after),
        }
    }
}

/// A probe's answer, shown without its value (which need not be `Debug`).
struct Answer<T>(Option<T>);

impl<T> Debug for Answer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}

/// [`Wait::until`] with the default timeout and interval: polls `get` until `ok` holds on
/// its value, which it returns; panics with `what` and the last value after
/// [`DEFAULT_TIMEOUT`].
pub async fn wait_until<T, F, Fut>(what: &str, get: F, ok: impl FnMut(&T) -> bool) -> T
where
    T: Debug,
    F: FnMut() -> Fut,
    Fut: Future<Output = T>,
{
    Wait::new().until(what, get, ok).await
}

/// [`Wait::eventually`] with the default timeout and interval: polls `probe` until it
/// returns `Some`; panics with `what` after [`DEFAULT_TIMEOUT`].
pub async fn eventually<T, F, Fut>(what: &str, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    Wait::new().eventually(what, probe).await
}
