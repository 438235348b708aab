//! [`ClusterReconciler`]: what every multi-cluster controller runs around its
//! reconciler: requests of clusters no longer engaged (or owned by another replica)
//! end here, and each reconcile runs in a span carrying its `cluster`.

use std::sync::LazyLock;

use async_trait::async_trait;
use prometheus::{IntCounterVec, Opts};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{ClusterRequest, Manager};
use crate::reconcile::{Action, Error, Reconciler};

/// Wraps a reconciler of [`ClusterRequest`]s: a request whose cluster is not engaged
/// here (disengaged while it was queued, never known, or owned by another replica)
/// is done at once — not reconciled, not retried — which is how a disengaged
/// cluster's queued requests drain away (multicluster-runtime leaves this to the
/// reconciler, whose `GetCluster` fails and retries). Everything else is reconciled in
/// a `cluster` span, holding the cluster's in-flight guard, so that the coordinator
/// hands a cluster over only once its reconciles here have ended.
pub struct ClusterReconciler<Rec> {
    mgr: Manager,
    inner: Rec,
    metrics: bool,
}

/// `multicluster_reconcile_total{cluster, result}`: reconciles per cluster and result
/// (`success`, `requeue`, `error`), counted only by reconcilers built
/// [`with_cluster_metrics`](ClusterReconciler::with_cluster_metrics): one series per
/// cluster, so a fleet of thousands turns it on knowingly.
static RECONCILES: LazyLock<IntCounterVec> = LazyLock::new(|| {
    let c = IntCounterVec::new(
        Opts::new(
            "multicluster_reconcile_total",
            "Total number of reconciliations per cluster",
        ),
        &["cluster", "result"],
    )
    .expect("valid metric");
    crate::metrics::registry()
        .register(Box::new(c.clone()))
        .ok();
    c
});

impl<Rec> ClusterReconciler<Rec> {
    /// `inner`, over the clusters of `mgr`.
    pub fn new(mgr: &Manager, inner: Rec) -> Self {
        Self {
            mgr: mgr.clone(),
            inner,
            metrics: false,
        }
    }

    /// Also counts reconciles per cluster in `multicluster_reconcile_total{cluster,
    /// result}` (off by default: a label per cluster).
    pub fn with_cluster_metrics(mut self) -> Self {
        self.metrics = true;
        self
    }
}

/// The `result` label of a reconcile's outcome.
fn result_label(res: &Result<Action, Error>) -> &'static str {
    match res {
        Err(_) => "error",
        Ok(a) if a.is_requeue() || a.requeue_delay().is_some() => "requeue",
        Ok(_) => "success",
    }
}

#[async_trait]
impl<Rec: Reconciler<ClusterRequest>> Reconciler<ClusterRequest> for ClusterReconciler<Rec> {
    async fn reconcile(
        &self,
        ctx: CancellationToken,
        req: ClusterRequest,
    ) -> Result<Action, Error> {
        let Some(_guard) = self.mgr.reconcile_guard(&req.cluster).await else {
            tracing::debug!(cluster = %req.cluster, request = %req, "cluster not engaged here, dropping the request");
            return Ok(Action::done());
        };
        let span = tracing::info_span!("cluster", cluster = %req.cluster);
        let cluster = self.metrics.then(|| req.cluster.clone());
        let res = self.inner.reconcile(ctx, req).instrument(span).await;
        if let Some(cluster) = cluster {
            RECONCILES
                .with_label_values(&[cluster.as_str(), result_label(&res)])
                .inc();
        }
        res
    }
}
