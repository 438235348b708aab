//! The work queue of a multi-cluster controller: the priority queue, fair across
//! (cluster, namespace) ([`crate::workqueue::FairnessFn`], controller-runtime PR
//! #3261), so that a cluster with 10,000 queued objects does not starve a cluster
//! with one. The multi-cluster builder uses it unless told otherwise.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use super::ClusterRequest;
use crate::controller::NewQueueFn;
use crate::workqueue::{PriorityQueue, QueueConfig, prometheus_metrics_provider};

/// The fairness key of a request: its cluster and namespace.
pub fn fairness_key(req: &ClusterRequest) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    req.cluster.hash(&mut h);
    req.namespace.hash(&mut h);
    h.finish()
}

/// Builds a controller's queue (`controller::Options::new_queue`): a priority queue
/// with the controller's name and rate limiter and controller-runtime's queue metrics,
/// fair across [`fairness_key`].
pub fn fair_queue() -> NewQueueFn<ClusterRequest> {
    Arc::new(|name, limiter| {
        let cfg = QueueConfig {
            name: name.to_string(),
            rate_limiter: Some(limiter),
            metrics: Some(prometheus_metrics_provider()),
        };
        Arc::new(PriorityQueue::with_fairness(cfg, Arc::new(fairness_key)))
    })
}
