//! What a worker does with one request: controller-runtime's `reconcileHandler` and
//! `Controller.Reconcile` (panic recovery, reconciliation timeout), exactly.
//!
//! | reconcile returned | queue | `controller_runtime_reconcile_total{result}` |
//! |---|---|---|
//! | error | rate-limited re-add, no forget | `error` (+ `reconcile_errors_total`) |
//! | error that is a 409 Conflict | the same; logged at INFO as one line, not as an error | the same |
//! | terminal error | nothing | `error` (+ errors and `terminal_reconcile_errors_total`) |
//! | `requeue_after(d)` | forget, re-add after `d` | `requeue_after` |
//! | `requeue()` | rate-limited re-add | `requeue` |
//! | `done()` | forget | `success` |
//! | panic | as an error when `recover_panic`, else re-raised | `reconcile_panics_total` always |
//! | dropped at `reconciliation_timeout` | as an error | `error` (+ errors and `reconcile_timeouts_total`) |
//!
//! Each re-add carries its cause as a trigger (`requeue:error_backoff`,
//! `requeue:requeue_after`, `requeue:rate_limited`; see `crate::workqueue::triggers`), and
//! the triggers a reconcile was queued for are its span's `triggers` field, the
//! `Reconciling` debug line's, `reconcile::triggers()` inside it, and
//! `controller_runtime_reconcile_triggers_total{controller, source, event}` (one per
//! distinct trigger per reconcile).

use std::any::Any;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, Span};

use super::{Inner, Options};
use crate::error::panic_message;
use crate::reconcile::{Action, Error, Request, TypedRequest, with_reconcile_id};
use crate::workqueue::triggers::Event;
use crate::workqueue::{AddOpts, Queue, Trigger, Triggers};

type Panic = Box<dyn Any + Send + 'static>;

/// The reconcile's span: a [`Request`]'s namespace and name as fields of their own,
/// any other request type's `Debug` form as `request`; the triggers when kept.
fn reconcile_span<R: TypedRequest>(
    name: &str,
    opts: &Options<R>,
    req: &R,
    id: uuid::Uuid,
    triggers: Option<&Triggers>,
) -> Span {
    let plain = (req as &dyn Any).downcast_ref::<Request>();
    let typed = plain.is_none().then(|| tracing::field::debug(req));
    tracing::info_span!(
        "reconcile",
        controller = %name,
        controllerGroup = %opts.group,
        controllerKind = %opts.kind,
        namespace = plain.map(|r| r.namespace.as_str()),
        name = plain.map(|r| r.name.as_str()),
        request = typed,
        reconcileID = %id,
        triggers = triggers.map(tracing::field::display),
        queue_wait_seconds = triggers.and_then(Triggers::waited).map(|d| d.as_secs_f64()),
    )
}

/// The write that lost a race on `resourceVersion`, when `err` is (or wraps) a 409
/// Conflict: the client's "verb kind key", or the Status's "resource[.group] name". Such a
/// reconcile read a stale object; it is retried through the rate limiter like any error,
/// but logged as one short line instead of an error with the Status dump (knative's
/// `handleErr` does the same; controller-runtime's `reconcileHandler` logs every error).
fn conflict(err: &Error) -> Option<String> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(err.inner());
    while let Some(e) = cause {
        if let Some(c) = e.downcast_ref::<crate::client::Error>() {
            return c
                .is_conflict()
                .then(|| format!("{} {} {}", c.verb, c.kind, c.key));
        }
        if let Some(kube::Error::Api(s)) = e.downcast_ref::<kube::Error>() {
            let d = s.details.as_ref();
            let what = d.map(|d| match d.group.is_empty() {
                true => format!("{} {}", d.kind, d.name),
                false => format!("{}.{} {}", d.kind, d.group, d.name),
            });
            return s
                .is_conflict()
                .then(|| what.unwrap_or_else(|| s.message.clone()));
        }
        cause = e.source();
    }
    None
}

/// A requeue's options: after `after`, or through the rate limiter, at `priority`.
fn requeue_opts(after: Option<Duration>, priority: i32) -> AddOpts {
    AddOpts {
        after,
        rate_limited: after.is_none(),
        priority: Some(priority),
    }
}

impl<R: TypedRequest> Inner<R> {
    /// Reconciles `req` (queued for `triggers`, when the queue keeps them) and re-queues
    /// it per the result. Returns the panic payload when a panic is to propagate
    /// (`recover_panic = false`).
    pub(super) async fn reconcile_handler(
        &self,
        ctx: &CancellationToken,
        queue: &dyn Queue<R>,
        req: &R,
        priority: i32,
        triggers: Option<Triggers>,
    ) -> Option<Panic> {
        let start = Instant::now();
        let id =
            uuid::Builder::from_random_bytes(ctrl_clock::random_u128().to_le_bytes()).into_uuid();
        let span = reconcile_span(&self.name, &self.opts, req, id, triggers.as_ref());
        if let Some(t) = &triggers {
            #[cfg(feature = "otel")]
            crate::otel::link(&span, t.traceparents());
            self.metrics.count_triggers(t);
            span.in_scope(|| tracing::debug!(triggers = %t, "Reconciling"));
        }
        let triggers = Arc::new(triggers.unwrap_or_default());
        let outcome = with_reconcile_id(id, triggers, self.reconcile(ctx, req.clone()))
            .instrument(span.clone())
            .await;
        self.metrics.time.observe(start.elapsed().as_secs_f64());
        let result = match outcome {
            Ok(result) => result,
            Err(payload) => return Some(payload),
        };
        let _entered = span.enter();
        self.requeue(queue, req, result, priority);
        None
    }

    /// Acts on a reconcile's result: re-adds `req` (with the requeue's trigger) or forgets
    /// it, and counts the result.
    fn requeue(
        &self,
        queue: &dyn Queue<R>,
        req: &R,
        result: Result<Action, Error>,
        mut priority: i32,
    ) {
        let m = &self.metrics;
        let action = match result {
            Err(err) => {
                if err.is_terminal() {
                    m.terminal_errors.inc();
                } else {
                    let t = Trigger::requeue(Event::ErrorBackoff);
                    queue.add_triggered(requeue_opts(None, priority), req.clone(), t);
                }
                m.errors.inc();
                m.error.inc();
                match conflict(&err).filter(|_| !err.is_terminal()) {
                    Some(write) => tracing::info!(%write, "Reconcile conflict, requeued"),
                    None => tracing::error!(error = %err, "Reconciler error"),
                }
                return;
            }
            Ok(action) => action,
        };
        if let Some(p) = action.priority() {
            priority = p;
        }
        if let Some(after) = action.requeue_delay() {
            tracing::debug!(?after, "Reconcile done, requeueing after");
            queue.forget(req);
            let t = Trigger::requeue(Event::RequeueAfter);
            queue.add_triggered(requeue_opts(Some(after), priority), req.clone(), t);
            m.requeue_after.inc();
        } else if action.is_requeue() {
            tracing::debug!("Reconcile done, requeueing");
            let t = Trigger::requeue(Event::RateLimited);
            queue.add_triggered(requeue_opts(None, priority), req.clone(), t);
            m.requeue.inc();
        } else {
            tracing::debug!("Reconcile successful");
            queue.forget(req);
            m.success.inc();
        }
    }

    /// Runs the reconciler with panic recovery and the optional reconciliation timeout
    /// (Go's `Controller.Reconcile`). `Err` carries a panic that must propagate.
    async fn reconcile(
        &self,
        ctx: &CancellationToken,
        req: R,
    ) -> Result<Result<Action, Error>, Panic> {
        let res = match self.opts.reconciliation_timeout {
            None => {
                AssertUnwindSafe(self.reconciler.reconcile(ctx.clone(), req))
                    .catch_unwind()
                    .await
            }
            Some(timeout) => match self.reconcile_until(ctx, req, timeout).await {
                Some(res) => res,
                None => return Ok(Err(Error::new(timed_out(timeout)))),
            },
        };
        match res {
            Ok(result) => Ok(result),
            Err(payload) => {
                self.metrics.panics.inc();
                let msg = panic_message(&*payload).to_string();
                if self.opts.recovers_panic() {
                    tracing::error!(panic = %msg, "Observed a panic in reconciler");
                    Ok(Err(Error::new(format!("panic: {msg} [recovered]"))))
                } else {
                    tracing::info!(panic = %msg, "Observed a panic in reconciler");
                    Err(payload)
                }
            }
        }
    }
}

impl<R: TypedRequest> Inner<R> {
    /// Runs the reconcile until it returns or `timeout` passes. At the deadline the
    /// reconcile's token is cancelled and its future dropped at once (with any API
    /// call it awaits), which is how a Go context deadline aborts a reconcile's
    /// requests; `None` then. Only our own deadline is counted in
    /// `reconcile_timeouts_total`, not the parent token's cancellation (as Go).
    async fn reconcile_until(
        &self,
        ctx: &CancellationToken,
        req: R,
        timeout: Duration,
    ) -> Option<Result<Result<Action, Error>, Panic>> {
        let child = ctx.child_token();
        let mut fut = Box::pin(
            AssertUnwindSafe(self.reconciler.reconcile(child.clone(), req)).catch_unwind(),
        );
        tokio::select! {
            res = &mut fut => return Some(res),
            _ = tokio::time::sleep(timeout) => {}
        }
        if !ctx.is_cancelled() {
            self.metrics.timeouts.inc();
        }
        tracing::warn!(?timeout, "Reconcile dropped at its reconciliation timeout");
        child.cancel();
        drop(fut);
        None
    }
}

/// The error a reconcile dropped at its deadline returns (retried with backoff).
fn timed_out(timeout: Duration) -> String {
    format!(
        "reconcile dropped after the reconciliation timeout of {timeout:?}: context deadline exceeded"
    )
}
