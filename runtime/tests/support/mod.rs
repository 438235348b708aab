//! How the runtime's tests wait: one poll, shared, instead of a copy per file.
//!
//! A test that waits for the API server or a cache to catch up polls a condition with
//! [`eventually`] (state in this process: a handler's log, a counter) or [`until`] (an
//! async probe: a cache read, a request), both on [`ctrl_envtest::wait`] — tokio's clock,
//! so a test on a paused clock (`#[tokio::test(start_paused = true)]`) waits in virtual
//! time. A test of timing (a backoff, a lease, a resync) does not poll wall time at all: it
//! runs on the paused clock, with the API server's in-memory client
//! ([`Environment::in_memory_client`](ctrl_envtest::Environment::in_memory_client): no
//! socket, so no request is in flight while the clock jumps), and asserts the instant.
#![allow(dead_code)]

use std::future::Future;
use std::time::Duration;

use ctrl_envtest::wait::Wait;

/// How long a condition may take before the test fails: a loaded CI machine's worst
/// case for an in-process server (virtual time on a paused clock).
pub const TIMEOUT: Duration = Duration::from_secs(10);

/// How often a condition is looked at: it reads memory or an in-process server.
pub const INTERVAL: Duration = Duration::from_millis(10);

/// The poll [`eventually`] and [`until`] use.
pub const fn poll() -> Wait {
    Wait::new().timeout(TIMEOUT).interval(INTERVAL)
}

/// Polls `cond` until it holds; panics naming `what` after [`TIMEOUT`].
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    poll()
        .until(what, || std::future::ready(cond()), |held| *held)
        .await;
}

/// Polls the async condition `cond` until it holds; panics naming `what` after
/// [`TIMEOUT`].
pub async fn until<F, Fut>(what: &str, cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    poll().until(what, cond, |held| *held).await;
}
