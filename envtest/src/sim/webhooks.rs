//! Webhooks in a simulation: the replicas' webhook servers, called by the API server in memory.
//!
//! Under the simulation nothing opens a socket: the replicas reach the API server through the
//! in-memory transport (`transport`), and the API server reaches the replicas' admission and
//! conversion webhooks through [`Replica::serve_webhooks`] — the webhook configurations still
//! name an `https://host:port/path` URL (or a Service), and a call to that `host:port` is handed
//! to a webhook server's handler directly (`webhook_client`'s in-memory table, current on the
//! seed's thread) with the same review JSON. So a webhook-using operator runs on the virtual
//! clock and its calls are ordered by the seed. Several replicas may serve one `host:port`
//! (the pods behind one Service); each call
//!
//! * goes to one of those still running, picked by the seed (none: the call is refused, as a
//!   connection to a Service with no ready endpoint is);
//! * waits a seeded delay (up to [`SimulationBuilder::webhook_delay`](super::SimulationBuilder::webhook_delay),
//!   or up to [`SLOW_WEBHOOK`](super::SLOW_WEBHOOK) under [`FaultKind::SlowWebhook`](super::FaultKind::SlowWebhook):
//!   past the webhook's `timeoutSeconds` the API server gives up and its `failurePolicy`
//!   decides), and is refused if its replica crashed or stopped meanwhile;
//! * goes into the trace (`r1 WEBHOOK /path -> 200`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt;
use tokio_util::sync::CancellationToken;

use super::{Replica, Shared};
use crate::webhook_client::{BoxError, WebhookService};

/// One replica incarnation serving a `host:port`.
#[derive(Clone)]
pub(super) struct Backend {
    replica: String,
    alive: Arc<AtomicBool>,
    shutdown: CancellationToken,
    service: WebhookService,
}

impl Backend {
    fn is_up(&self) -> bool {
        self.alive.load(Ordering::Acquire) && !self.shutdown.is_cancelled()
    }
}

impl Replica {
    /// Serves the webhook URLs at `authority` (`host:port`, port 443 when a URL names none;
    /// for a Service `<name>.<namespace>.svc:<port>`) with `service`, the webhook server's
    /// handler (ctrl's `webhook::Server::service()`), for as long as this incarnation runs.
    /// A new incarnation replaces the old one; other replicas serving the same authority
    /// share its calls.
    pub fn serve_webhooks<S, B>(&self, authority: &str, service: S)
    where
        S: tower::Service<http::Request<Bytes>, Response = http::Response<B>>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Error: Into<BoxError>,
        S::Future: Send + 'static,
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let service = tower::service_fn(move |req: http::Request<Bytes>| {
            let mut service = service.clone();
            async move {
                use tower::ServiceExt;
                let ready = service.ready().await.map_err(Into::into)?;
                let (parts, body) = ready.call(req).await.map_err(Into::into)?.into_parts();
                let body = body.collect().await.map_err(Into::into)?.to_bytes();
                Ok::<_, BoxError>(http::Response::from_parts(parts, body))
            }
        });
        let backend = Backend {
            replica: self.name.clone(),
            alive: self.alive.clone(),
            shutdown: self.shutdown.clone(),
            service: WebhookService::new(service),
        };
        let mut backends = self.shared.backends.lock();
        let first = !backends.contains_key(authority);
        let list = backends.entry(authority.to_string()).or_default();
        list.retain(|b| b.replica != self.name);
        list.push(backend);
        drop(backends);
        if first {
            let (shared, at): (Arc<Shared>, Arc<str>) = (self.shared.clone(), authority.into());
            let router = tower::service_fn(move |req: http::Request<Bytes>| {
                let (shared, at) = (shared.clone(), at.clone());
                async move { shared.answer(&at, req).await }
            });
            (self.shared.endpoints).insert(authority, WebhookService::new(router));
        }
    }
}

impl Shared {
    /// One call to `authority`: a live backend picked by the seed, the seeded delay, then its
    /// handler, unless it went down meanwhile.
    async fn answer(
        &self,
        authority: &str,
        req: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, BoxError> {
        use tower::ServiceExt;
        let path = req.uri().path().to_string();
        let refused =
            || -> BoxError { format!("dial tcp {authority}: connect: connection refused").into() };
        let Some(backend) = self.pick(authority, &path) else {
            self.trace(format_args!("WEBHOOK {path} -> refused (no server)"));
            return Err(refused());
        };
        let name = &backend.replica;
        let delay = self.webhook_delay(name, &path);
        self.trace(format_args!("{name} WEBHOOK {path} after {delay:?}"));
        tokio::time::sleep(delay).await;
        if !backend.is_up() {
            self.trace(format_args!("{name} WEBHOOK {path} -> refused"));
            return Err(refused());
        }
        let resp = backend.service.oneshot(req).await?;
        let status = resp.status().as_u16();
        self.trace(format_args!("{name} WEBHOOK {path} -> {status}"));
        Ok(resp)
    }

    /// A running backend of `authority`, picked by the seed (streams are keyed by path, not
    /// authority: a server's port may be the operating system's pick).
    fn pick(&self, authority: &str, path: &str) -> Option<Backend> {
        use rand::Rng;
        let backends = self.backends.lock();
        let up: Vec<&Backend> = (backends.get(authority)?.iter())
            .filter(|b| b.is_up())
            .collect();
        if up.is_empty() {
            return None;
        }
        let key = format!("webhook backend {path}");
        let i = self.stream(&key, |rng| rng.random_range(0..up.len()));
        Some(up[i].clone())
    }

    /// How long the next webhook call takes: a slow one while a
    /// [`SlowWebhook`](super::FaultKind::SlowWebhook) fault lasts, else up to the builder's
    /// webhook delay.
    fn webhook_delay(&self, replica: &str, path: &str) -> Duration {
        let slow = self
            .slow_webhooks
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        let key = format!("webhook {replica} {path}");
        self.draw(
            &key,
            if slow {
                super::SLOW_WEBHOOK
            } else {
                self.webhook_delay
            },
        )
    }

    /// Forgets the webhook servers at the end of a run (they hold clients that hold this).
    pub(super) fn forget_webhooks(&self) {
        self.backends.lock().clear();
        self.endpoints.clear();
    }
}
