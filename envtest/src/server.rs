//! Layer 5, the server (kube-apiserver's `pkg/server` filters): a hyper 1 server on 127.0.0.1,
//! one task per connection, with the transport limits of `ctrl_net` (listen backlog, accept
//! back-off, keepalive, head/idle timeout, HTTP/2 stream limits) that ctrl's other servers
//! share. HTTPS on the same port (`tls`: a connection that starts with a handshake), HTTP/2
//! there when the client picks `h2` in ALPN (the `http2` feature), else HTTP/1.1; the body limit, authentication and
//! every filter below are the same for both. Each request is authenticated and
//! authorized first (`auth`: client certificates, bearer tokens, impersonation, RBAC; health and version are public, as
//! upstream), checked against injected faults (`faults`), its body read with the 3 MiB limit (413
//! with `Connection: close`, without buffering more), recorded in the request log, routed
//! ([`endpoints::router`]) and handed to [`endpoints::serve`] (resource handlers, discovery,
//! OpenAPI, health). Every failure is answered with a `Status` body
//! ([`api::status`](crate::api::status)); warnings raised while serving become `Warning` headers.
//! It calls `endpoints`, `auth`, `tls`, `registry` (the shared state), `faults` and `api`; only
//! `env` is above it.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, header};
use http_body_util::{BodyExt, Limited};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::either::Either;

use crate::api::status::ApiError;
use crate::auth::UserInfo;
use crate::endpoints::State;
use crate::endpoints::router::{self, Query, Route};
use crate::endpoints::{self, Body, Req, Warnings, error, json};
use crate::faults::{RequestFacts, RequestRecord, Verb};
use crate::registry::Snapshot;
use crate::tls::Tls;

use crate::api::status::BODY_LIMIT;

/// Accepts connections until `state.shutdown` fires. The transport limits are `ctrl_net`'s,
/// shared with every server ctrl runs: back-off when `accept` fails (out of file
/// descriptors), TCP keepalive, and the request-head / idle timeout
/// (`Settings::header_read_timeout`, upstream's 32 s by default).
pub(crate) async fn serve(listener: TcpListener, state: Arc<State>, tls: Arc<Tls>) {
    let mut acceptor = ctrl_net::Acceptor::new(listener, "envtest");
    loop {
        let (stream, _) = tokio::select! {
            _ = state.shutdown.cancelled() => return,
            c = acceptor.accept() => c,
        };
        crate::task::spawn(connection(stream, state.clone(), tls.clone()));
    }
}

/// Serves one connection, over TLS when it starts with a handshake (`tls`), until it closes
/// or the server stops. A connection silent for the head timeout is closed either way.
async fn connection(stream: TcpStream, state: Arc<State>, tls: Arc<Tls>) {
    let stop = state.shutdown.clone();
    let head_timeout = state.settings.header_read_timeout;
    let svc = |cert_user: Option<Arc<UserInfo>>| {
        let state = state.clone();
        service_fn(move |req| {
            let (st, cu) = (state.clone(), cert_user.clone());
            async move { Ok::<_, Infallible>(handle(st, req, cu).await) }
        })
    };
    let served = async {
        let Ok(is_tls) = tokio::time::timeout(head_timeout, crate::tls::starts_tls(&stream)).await
        else {
            return;
        };
        // Plain and TLS streams are one type to HTTP/1.1 (`Either`), so hyper's HTTP/1.1
        // connection and this service are compiled once, not once per stream type.
        let (io, cert_user) = if is_tls {
            let Ok(Ok(s)) = tokio::time::timeout(head_timeout, tls.acceptor.accept(stream)).await
            else {
                return;
            };
            let cert_user = client_certificate_user(&s, &tls);
            #[cfg(feature = "http2")]
            if crate::tls::negotiated_h2(&s) {
                let r = ctrl_net::http2(head_timeout)
                    .serve_connection(TokioIo::new(s), svc(cert_user))
                    .await;
                return ended(r);
            }
            (Either::Right(s), cert_user)
        } else {
            (Either::Left(stream), None)
        };
        let r = ctrl_net::http1(head_timeout)
            .serve_connection(TokioIo::new(io), svc(cert_user))
            .await;
        ended(r);
    };
    tokio::select! {
        biased;
        _ = served => {}
        _ = stop.cancelled() => {}
    }
}

/// Logs how a connection ended, if with an error.
fn ended(r: Result<(), hyper::Error>) {
    if let Err(e) = r {
        tracing::debug!("connection error: {e}");
    }
}

/// The in-memory transport: a `tower::Service` that hands each request straight to the
/// handler a connection would (authentication, faults, the request log, routing and the same
/// codecs), with no socket, TLS or HTTP framing between. `Environment::in_memory_client`
/// builds a `kube::Client` on it; the simulation (`sim`) drives a whole operator through it.
/// Requests carry their credentials as headers (no client certificate).
#[derive(Clone)]
pub(crate) struct InMemory {
    state: Arc<State>,
}

impl InMemory {
    /// The transport into `state`'s handler.
    pub(crate) fn new(state: Arc<State>) -> InMemory {
        InMemory { state }
    }
}

impl<B> tower::Service<Request<B>> for InMemory
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BodyError>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<Response<Body>, Infallible>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Infallible>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let state = self.state.clone();
        Box::pin(async move { Ok(handle(state, req, None).await) })
    }
}

/// The user of the client certificate a TLS connection presented (verified against the CA
/// in the handshake, `tls`, which knows the subject of each certificate it issued), as
/// `auth::x509` makes it.
fn client_certificate_user(
    s: &tokio_rustls::server::TlsStream<TcpStream>,
    tls: &Tls,
) -> Option<Arc<UserInfo>> {
    let der = s.get_ref().1.peer_certificates()?.first()?;
    let (name, organizations) = tls.client_subject(der)?;
    crate::auth::x509::user_of(name, organizations).map(Arc::new)
}

/// The error of a request body: any body the server is handed (hyper's over a connection,
/// the client's own in memory) converts into it.
pub(crate) type BodyError = Box<dyn std::error::Error + Send + Sync>;

/// The W3C trace context header a request may carry (the request log keeps it).
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");

/// Serves one request, whatever carried it: a connection (`connection`) or a direct call
/// ([`in_memory`]).
async fn handle<B>(
    state: Arc<State>,
    req: Request<B>,
    cert_user: Option<Arc<UserInfo>>,
) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BodyError>,
{
    let (parts, body) = req.into_parts();
    let path = parts.uri.path().to_string();
    let raw_query = parts.uri.query().unwrap_or("").to_string();
    let query = Query::parse(parts.uri.query());
    let snap = state.registry.snapshot();
    let route = router::route(&path, &snap);
    let (verb, resource) = classify(&parts.method, &query, route.as_ref().ok());
    let traceparent = parts
        .headers
        .get(&TRACEPARENT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let resp = 'resp: {
        let user = match authorize(&state, &parts, &query, route.as_ref().ok(), cert_user) {
            Ok(u) => u,
            Err(e) => break 'resp error(&e),
        };
        let facts = facts_of(parts.method.as_str(), &path, verb, route.as_ref().ok());
        if let Some(r) = injected(&state, &facts).await {
            record(
                &state,
                &parts.method,
                path,
                raw_query,
                r.status().as_u16(),
                (verb, resource),
                true,
                traceparent,
            );
            return r;
        }
        match route {
            Ok(route) => {
                serve_routed(
                    &state,
                    user,
                    route,
                    &snap,
                    parts.method.clone(),
                    parts.headers,
                    query,
                    body,
                )
                .await
            }
            Err(e) => error(&e),
        }
    };
    record(
        &state,
        &parts.method,
        path,
        raw_query,
        resp.status().as_u16(),
        (verb, resource),
        false,
        traceparent,
    );
    resp
}

/// What faults match on: the request's method, path, verb and (for resource requests) what
/// it routes to.
fn facts_of<'a>(
    method: &'a str,
    path: &'a str,
    verb: Option<Verb>,
    route: Option<&'a Route>,
) -> RequestFacts<'a> {
    let rr = match route {
        Some(Route::Resource(r)) => Some(r),
        _ => None,
    };
    RequestFacts {
        method,
        path,
        verb,
        resource: rr.map(|r| r.rt.plural.as_str()),
        subresource: rr.and_then(|r| r.sub.as_deref()),
        name: rr.and_then(|r| r.name.as_deref()),
        namespace: rr.and_then(|r| r.namespace.as_deref()),
    }
}

/// Who the request is from, and whether they may do it (`auth`: authentication,
/// impersonation, RBAC), before anything else happens: a 401 or 403 Status otherwise. Health
/// and version are public, as upstream's `system:public-info-viewer` allows.
fn authorize(
    state: &State,
    parts: &http::request::Parts,
    query: &Query,
    route: Option<&Route>,
    cert_user: Option<Arc<UserInfo>>,
) -> Result<Arc<UserInfo>, ApiError> {
    let public = matches!(route, Some(Route::Health | Route::Version));
    let path = parts.uri.path();
    state.auth.filter(
        parts.method.as_str(),
        path,
        |k| query.get(k),
        &parts.headers,
        public,
        cert_user,
    )
}

/// The answer of an injected fault matching the request, if any.
async fn injected(state: &State, facts: &RequestFacts<'_>) -> Option<Response<Body>> {
    let inj = state.faults.intercept(facts).await?;
    let mut r = json(inj.code, &inj.body);
    if let Some(s) = inj
        .retry_after_seconds
        .and_then(|s| HeaderValue::from_str(&s.to_string()).ok())
    {
        r.headers_mut().insert(header::RETRY_AFTER, s);
    }
    Some(r)
}

/// Reads the body of a routed request (within the limit) and dispatches it; the warnings
/// raised while serving become `Warning` headers.
#[allow(clippy::too_many_arguments)]
async fn serve_routed<B>(
    state: &Arc<State>,
    user: Arc<UserInfo>,
    route: Route,
    snap: &Snapshot,
    method: Method,
    headers: HeaderMap,
    query: Query,
    body: B,
) -> Response<Body>
where
    B: http_body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BodyError>,
{
    let reads_body = matches!(
        method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    );
    let body = if reads_body {
        match read_body(body, &headers).await {
            Ok(b) => b,
            Err(e) => {
                // The rest of a too-large body is not read: the connection cannot be
                // reused, and says so, so a pooled client does not send on it again.
                let mut r = error(&e);
                r.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                return r;
            }
        }
    } else {
        Bytes::new()
    };
    // Errors go out in protobuf when asked for first, on routes of built-in kinds.
    let protobuf = crate::api::protobuf::wants(
        headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or(""),
    ) && !matches!(&route, Route::Resource(r) if r.rt.crd.is_some());
    let warnings = Warnings::default();
    let req = Req {
        method,
        query,
        headers,
        body,
        warnings: warnings.clone(),
        served_as: None,
        user,
    };
    let mut resp = match endpoints::serve(state, route, snap, req).await {
        Ok(r) => r,
        Err(e) => endpoints::error_as(&e, protobuf),
    };
    warnings.write(resp.headers_mut());
    resp
}

#[allow(clippy::too_many_arguments)]
fn record(
    state: &State,
    method: &Method,
    path: String,
    query: String,
    status: u16,
    (verb, resource): (Option<Verb>, Option<String>),
    injected: bool,
    traceparent: Option<String>,
) {
    state.faults.record(RequestRecord {
        method: method.to_string(),
        path,
        query,
        status,
        verb,
        resource,
        injected,
        traceparent,
    });
}

/// The API verb and resource of a request, for faults and the request log.
fn classify(method: &Method, q: &Query, route: Option<&Route>) -> (Option<Verb>, Option<String>) {
    let Some(Route::Resource(r)) = route else {
        return (None, None);
    };
    let item = r.name.is_some();
    let verb = match (method, item) {
        (&Method::GET, true) => Verb::Get,
        (&Method::GET, false) if r.watch_prefix || q.flag("watch") => Verb::Watch,
        (&Method::GET, false) => Verb::List,
        (&Method::POST, _) => Verb::Create,
        (&Method::PUT, _) => Verb::Update,
        (&Method::PATCH, _) => Verb::Patch,
        (&Method::DELETE, true) => Verb::Delete,
        (&Method::DELETE, false) => Verb::DeleteCollection,
        _ => return (None, Some(r.rt.plural.clone())),
    };
    (Some(verb), Some(r.rt.plural.clone()))
}

async fn read_body<B>(body: B, headers: &HeaderMap) -> Result<Bytes, ApiError>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<BodyError>,
{
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > BODY_LIMIT as u64) {
        return Err(ApiError::too_large());
    }
    match Limited::new(body, BODY_LIMIT).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e)
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some() =>
        {
            Err(ApiError::too_large())
        }
        Err(e) => Err(ApiError::bad_request(format!(
            "reading the request body: {e}"
        ))),
    }
}
