//! [`ClusterReconciler`]: what every multi-cluster controller runs around its
//! reconciler: requests of clusters no longer engaged (or owned by another replica)
//! end here, and each reconcile runs in a span carrying its `cluster`.

use async_trait::async_trait;
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
}

impl<Rec> ClusterReconciler<Rec> {
    /// `inner`, over the clusters of `mgr`.
    pub fn new(mgr: &Manager, inner: Rec) -> Self {
        Self {
            mgr: mgr.clone(),
            inner,
        }
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
        self.inner.reconcile(ctx, req).instrument(span).await
    }
}
