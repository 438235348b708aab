//! `Manager::start`: start the groups in order, run until cancelled or a runnable
//! fails, then stop the groups in order within the grace period
//! (controller-runtime's `controllerManager.Start` and `engageStopProcedure`).

use std::net::TcpListener as StdListener;
use std::sync::Arc;

use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::{Error, Group, Inner, Manager, leader};
use crate::http::{Router, Server};
use crate::metricsserver::{self as metrics_server, ExtraHandlers};

impl Manager {
    /// Runs the manager until `ctx` is cancelled (then returns `Ok`) or a runnable
    /// fails (then returns its error), stopping everything before it returns. With
    /// leader election, losing the lease stops it at once, with no grace period, and
    /// returns [`Error::LeaderElectionLost`].
    ///
    /// The groups start in [`Group::START_ORDER`], each once the one before is ready
    /// (the caches: synced), the last — the leader-election runnables — once elected,
    /// after which [`Manager::elected`] resolves. They stop in [`Group::STOP_ORDER`],
    /// each group cancelled and awaited in turn within `graceful_shutdown_timeout`; runnables still running then are aborted (their
    /// futures dropped) and named in the error. Calling `start` twice is an error.
    ///
    /// Dropping the returned future before it finished (an aborted task, a lost
    /// `select!`) stops everything at once, as a process exit does: every runnable is
    /// aborted where it stands, nothing is waited for and the Lease is not released.
    pub async fn start(&self, ctx: CancellationToken) -> Result<(), Error> {
        let inner = &self.inner;
        let mut errors = {
            let mut st = inner.state.lock();
            if st.started {
                return Err(Error::AlreadyStarted);
            }
            st.started = true;
            inner.errors_rx.lock().take().ok_or(Error::AlreadyStarted)?
        };
        // Dropped before the stop sequence ends (the caller's future dropped, as a crashed
        // process ends): what the run started is aborted, nothing left running on.
        let mut guard = AbortOnDrop(Some(inner));
        let run = async {
            self.add_internal_runnables()?;
            let (elected, before) = Group::START_ORDER
                .split_last()
                .expect("START_ORDER is not empty");
            for g in before {
                inner.group(*g).start().await?;
            }
            leader::campaign(&inner.leader, inner.group(*elected), &inner.elected).await?;
            tracing::info!("Manager started");
            futures::future::pending::<Result<(), Error>>().await
        };
        let result = tokio::select! {
            biased;
            _ = ctx.cancelled() => Ok(()),
            Some(err) = errors.recv() => Err(err),
            r = run => r,
        };
        if let Err(error) = &result {
            tracing::error!(%error, "Manager stopping because of an error");
        }
        // Losing the lease skips the grace period: another replica may lead already.
        let grace = match &result {
            Err(Error::LeaderElectionLost) => std::time::Duration::ZERO,
            _ => inner.opts.graceful_shutdown_timeout,
        };
        let stopped = inner.stop(grace).await;
        // Only now, with the leader-election runnables stopped, does the elector stop
        // renewing (and release the lease if so configured).
        inner.leader.stop(stopped.is_ok()).await;
        // Events recorded during the stop are still written (Go stops the recorder
        // provider last, too).
        inner.recorder.stop(grace).await;
        while let Ok(error) = errors.try_recv() {
            tracing::error!(%error, "error received after stop sequence was engaged");
        }
        guard.0 = None;
        Error::join(result, stopped)
    }

    /// Adds the cache and the metrics, health probe and pprof servers (Go adds them
    /// in `Start`).
    fn add_internal_runnables(&self) -> Result<(), Error> {
        let inner = &self.inner;
        self.add(inner.cache.clone())?;
        let (metrics, probe, pprof, extra, healthz, readyz) = {
            let mut st = inner.state.lock();
            (
                st.metrics_listener.take(),
                st.probe_listener.take(),
                st.pprof_listener.take(),
                st.metrics_extra.clone(),
                st.healthz.clone(),
                st.readyz.clone(),
            )
        };
        if let Some(l) = metrics {
            self.add_metrics_server(l, &extra)?;
        }
        if let Some(l) = probe {
            let mut router = Router::new();
            if !readyz.is_empty() {
                router.mount(&inner.opts.readiness_endpoint_name, readyz);
            }
            if !healthz.is_empty() {
                router.mount(&inner.opts.liveness_endpoint_name, healthz);
            }
            self.add_server("health probe", l, router)?;
        }
        if let Some(l) = pprof {
            self.add_server("pprof", l, crate::pprof::router())?;
        }
        Ok(())
    }

    /// The metrics server: its handlers behind the configured filter, over TLS when
    /// `metrics.secure_serving`.
    fn add_metrics_server(&self, l: StdListener, extra: &ExtraHandlers) -> Result<(), Error> {
        let o = &self.inner.opts.metrics;
        let filter = o.filter(&self.inner.kube).map_err(Error::MetricsServer)?;
        let tls = o.tls_serving().map_err(Error::MetricsServer)?;
        let router = metrics_server::filtered_router(extra, filter.as_ref());
        let server = self.server("metrics", l, router)?;
        self.add(match tls {
            Some(t) => server.with_tls(t),
            None => server,
        })
    }

    fn add_server(&self, kind: &'static str, l: StdListener, router: Router) -> Result<(), Error> {
        let server = self.server(kind, l, router)?;
        self.add(server)
    }

    fn server(&self, kind: &'static str, l: StdListener, router: Router) -> Result<Server, Error> {
        let addr = l.local_addr().map(|a| a.to_string()).unwrap_or_default();
        Server::new(kind, l, router, self.inner.opts.server.clone()).map_err(|source| Error::Bind {
            kind,
            addr,
            source,
        })
    }
}

/// Aborts every group and the elector when [`Manager::start`]'s future is dropped before
/// its stop sequence finished: nothing is waited for and nothing released, as when the
/// process dies (a dropped future cannot wait; tasks it spawned would otherwise run on,
/// reconciling against a cache nobody keeps).
struct AbortOnDrop<'a>(Option<&'a Inner>);

impl Drop for AbortOnDrop<'_> {
    fn drop(&mut self) {
        let Some(inner) = self.0 else { return };
        for group in &inner.groups {
            group.abort();
        }
        inner.leader.abort();
    }
}

impl Inner {
    /// Stops the groups in order; each gets what is left of the grace period. Once
    /// it has run out, what still runs is aborted, the remaining groups are cancelled
    /// and aborted without waiting, and the error names the runnables of the group
    /// that overran it.
    async fn stop(&self, timeout: std::time::Duration) -> Result<(), Error> {
        let deadline = Instant::now().checked_add(timeout);
        let mut pending: Option<Vec<String>> = None;
        for g in Group::STOP_ORDER {
            tracing::info!(
                group = g.as_str(),
                "Stopping and waiting for {}",
                g.as_str()
            );
            let group = self.group(g);
            if pending.is_some() {
                group.stop_and_wait(Some(Instant::now())).await;
            } else if !group.stop_and_wait(deadline).await {
                pending = Some(group.running());
            }
        }
        match pending {
            Some(pending) if !timeout.is_zero() && !pending.is_empty() => {
                Err(Error::GracefulShutdownTimeout { timeout, pending })
            }
            _ => {
                tracing::info!("Wait completed, proceeding to shutdown the manager");
                Ok(())
            }
        }
    }

    pub(super) fn group(&self, g: Group) -> &Arc<super::group::RunnableGroup> {
        &self.groups[g.start_index()]
    }
}
