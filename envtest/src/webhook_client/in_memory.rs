//! Webhooks served in memory: a table from a URL's `host:port` to a `tower::Service` that is
//! the webhook server's handler, called directly — no socket, no TLS handshake — with the same
//! AdmissionReview / ConversionReview JSON a real call POSTs. The deterministic simulation
//! (`sim`) makes its table current on the thread that runs a seed ([`Endpoints::enter`], as
//! `ctrl_clock`'s fake clock is entered), so each seed's webhooks are its own even when seeds
//! run side by side; [`super::call`] looks a URL up here before it dials.
//!
//! What in memory does not do: verify the serving certificate against `caBundle` (there is
//! none; the bundle must still parse, as a real call needs it to).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

/// The error a service answers with when the call does not reach the handler (a server that
/// is down: "connection refused").
pub(crate) type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A webhook server as a service: the POST the API server makes (path, headers, JSON body)
/// to the response it reads back.
pub(crate) type WebhookService =
    tower::util::BoxCloneSyncService<http::Request<Bytes>, http::Response<Bytes>, BoxError>;

/// Webhook servers by the `host:port` their URLs name (port 443 when a URL has none).
#[derive(Clone, Default)]
pub(crate) struct Endpoints(Arc<Mutex<HashMap<String, WebhookService>>>);

thread_local! {
    static CURRENT: RefCell<Option<Endpoints>> = const { RefCell::new(None) };
}

/// Keeps an [`Endpoints`] current on this thread until dropped ([`Endpoints::enter`]).
pub(crate) struct EnterGuard(Option<Endpoints>);

impl Drop for EnterGuard {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|c| *c.borrow_mut() = previous);
    }
}

impl Endpoints {
    /// Serves webhook URLs at `authority` (`host:port`) with `service`, replacing what
    /// served them before.
    pub(crate) fn insert(&self, authority: &str, service: WebhookService) {
        self.0.lock().insert(authority.to_string(), service);
    }

    /// Forgets every service (they may hold what holds this table: a run's end breaks the
    /// cycle).
    pub(crate) fn clear(&self) {
        self.0.lock().clear();
    }

    /// Makes this table the one webhook calls on this thread look in, until the guard drops.
    pub(crate) fn enter(&self) -> EnterGuard {
        let previous = CURRENT.with(|c| c.borrow_mut().replace(self.clone()));
        EnterGuard(previous)
    }
}

/// The service serving `uri`'s `host:port` in the table current on this thread, if any.
pub(crate) fn lookup(uri: &http::Uri) -> Option<WebhookService> {
    let host = uri.host()?;
    let authority = format!("{host}:{}", uri.port_u16().unwrap_or(443));
    CURRENT.with(|c| Some(c.borrow().as_ref()?.0.lock().get(&authority)?.clone()))
}

/// POSTs `body` to `uri` through `service`: the status and body of its answer.
pub(crate) async fn post(
    service: WebhookService,
    uri: &http::Uri,
    body: Bytes,
) -> Result<(http::StatusCode, Bytes), String> {
    use tower::ServiceExt;
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let req = super::request(uri, path, body)?;
    let resp = service.oneshot(req).await.map_err(|e| e.to_string())?;
    Ok((resp.status(), resp.into_body()))
}
