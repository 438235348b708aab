//! Building a controller's work queue from its [`Options`] (Go's `NewQueue` default).
//!
//! With no rate limiter set, each queue takes controller-runtime's default for it: the
//! priority queue an item-exponential limiter (5 ms .. 1000 s), the rate-limiting queue
//! `default_controller_rate_limiter` (that plus 10 qps / burst 100).

use std::sync::Arc;

use super::Options;
use crate::reconcile::TypedRequest;
use crate::workqueue::{
    PriorityQueue, Queue, QueueConfig, RateLimitingQueue, Triggered,
    default_controller_rate_limiter, default_item_rate_limiter, prometheus_metrics_provider,
};

/// The queue `opts` asks for, named after the controller (its metrics' label), keeping
/// triggers unless `record_triggers` is off.
pub(crate) fn new_queue<R: TypedRequest>(name: &str, opts: &Options<R>) -> Arc<dyn Queue<R>> {
    let queue = base_queue(name, opts);
    if opts.records_triggers() {
        Arc::new(Triggered::new(queue))
    } else {
        queue
    }
}

/// The queue itself: `new_queue`'s, or the priority or rate-limiting queue.
fn base_queue<R: TypedRequest>(name: &str, opts: &Options<R>) -> Arc<dyn Queue<R>> {
    if let Some(f) = &opts.new_queue {
        let limiter = opts.rate_limiter.clone().unwrap_or_else(|| {
            if opts.uses_priority_queue() {
                default_item_rate_limiter()
            } else {
                default_controller_rate_limiter()
            }
        });
        return f(name, limiter);
    }
    let cfg = QueueConfig {
        name: name.to_string(),
        rate_limiter: opts.rate_limiter.clone(),
        metrics: Some(prometheus_metrics_provider()),
    };
    if opts.uses_priority_queue() {
        Arc::new(PriorityQueue::new(cfg))
    } else {
        Arc::new(RateLimitingQueue::new(cfg))
    }
}
