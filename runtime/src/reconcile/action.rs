//! [`Action`]: what a successful reconcile asks of the controller next
//! (controller-runtime's `reconcile.Result`).

use std::time::Duration;

/// What the controller does with a request after a successful reconcile.
///
/// | ctrl | controller-runtime | controller does |
/// |---|---|---|
/// | [`Action::done`] | `Result{}` | forgets the request's failures; waits for the next event |
/// | [`Action::requeue`] | `Result{Requeue: true}` | re-adds it through the rate limiter (backoff grows) |
/// | [`Action::requeue_after`] | `Result{RequeueAfter: d}` | forgets its failures, re-adds it after `d` |
///
/// A zero `requeue_after` is treated as not set, as in Go. [`Action::with_priority`]
/// sets the priority the request is re-added with on a priority queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Action {
    requeue: bool,
    requeue_after: Option<Duration>,
    priority: Option<i32>,
}

impl Action {
    /// Reconciled; nothing more to do until something changes.
    pub fn done() -> Self {
        Self::default()
    }

    /// Reconcile again, after the rate limiter's (growing) delay.
    pub fn requeue() -> Self {
        Self {
            requeue: true,
            ..Self::default()
        }
    }

    /// Reconcile again after `after`; resets the request's backoff.
    pub fn requeue_after(after: Duration) -> Self {
        Self {
            requeue_after: Some(after),
            ..Self::default()
        }
    }

    /// Re-add with this priority (higher goes first) instead of the one it had.
    pub fn with_priority(mut self, priority: i32) -> Self {
        self.priority = Some(priority);
        self
    }

    /// Whether the request is to be re-added through the rate limiter.
    pub fn is_requeue(&self) -> bool {
        self.requeue
    }

    /// The delay before the request is re-added, if one was asked for (never zero).
    pub fn requeue_delay(&self) -> Option<Duration> {
        self.requeue_after.filter(|d| !d.is_zero())
    }

    /// The priority to re-add with, if set.
    pub fn priority(&self) -> Option<i32> {
        self.priority
    }

    /// Whether this is [`Action::done`] (Go's `Result.IsZero`).
    pub fn is_done(&self) -> bool {
        !self.requeue && self.requeue_delay().is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constructors() {
        assert!(Action::done().is_done());
        assert!(Action::requeue().is_requeue());
        assert_eq!(
            Action::requeue_after(Duration::from_secs(3)).requeue_delay(),
            Some(Duration::from_secs(3))
        );
        assert!(Action::requeue_after(Duration::ZERO).is_done());
        assert_eq!(Action::done().with_priority(7).priority(), Some(7));
    }
}
