//! [`Server`]: the webhook server (controller-runtime's `webhook.Server`): a
//! path -> handler map served over TLS (rustls, ring; hardened by [`crate::tls`]:
//! HTTP/1.1 only unless [`Options::tls`] enables h2, TLS 1.2+), run by the manager as
//! a runnable in its Webhooks group.
//!
//! [`Server::in_memory`] serves the same routes with no socket, through [`Server::service`]
//! (an API server in this process calls them: ctrl-envtest's simulation).
//!
//! Defaults are controller-runtime's: port 9443, certificates `tls.crt` / `tls.key`
//! in `<tmp>/k8s-webhook-server/serving-certs`, reloaded on change by a
//! [`CertWatcher`]. Every handler is instrumented with the webhook metrics
//! (`super::metrics`). A plain-HTTP request to the TLS port gets Go's `400` ("Client
//! sent an HTTP request to an HTTPS server."); bodies over the limit get `413`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{SocketAddr, TcpListener as StdListener};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use futures::FutureExt;
use http::StatusCode;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
#[cfg(feature = "http2")]
use hyper_util::rt::TokioExecutor;
use hyper_util::rt::TokioIo;
use parking_lot::{Mutex, RwLock};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::metrics::{self, InFlight};
use crate::certwatcher::{CertWatcher, DEFAULT_CERT_NAME, DEFAULT_KEY_NAME};
use crate::healthz::{CheckError, Checker};
use crate::http::{self as h, Handler};
use crate::tls::{self, TlsOptions};

/// controller-runtime's default webhook port.
pub const DEFAULT_PORT: u16 = 9443;
/// Where the conversion webhook is served.
pub const CONVERT_PATH: &str = "/convert";

/// The default certificate directory: `<tmp>/k8s-webhook-server/serving-certs`.
pub fn default_cert_dir() -> PathBuf {
    std::env::temp_dir()
        .join("k8s-webhook-server")
        .join("serving-certs")
}

/// How a webhook [`Server`] serves (Go's `webhook.Options`).
#[derive(Clone, Debug)]
pub struct Options {
    /// The address to listen on; empty means every interface.
    pub host: String,
    /// The port; default 9443, 0 picks a free one (see [`Server::local_addr`]).
    pub port: u16,
    /// Where the serving certificate and key are.
    pub cert_dir: PathBuf,
    /// The certificate file in `cert_dir`; default `tls.crt`.
    pub cert_name: String,
    /// The key file in `cert_dir`; default `tls.key`.
    pub key_name: String,
    /// A CA file in `cert_dir`; if set, clients must present a certificate it signed.
    pub client_ca_name: Option<String>,
    /// The largest request body; default [`super::admission::MAX_REQUEST_BYTES`].
    pub max_body_bytes: usize,
    /// How long a client has for the TLS handshake; default 10 s.
    pub handshake_timeout: Duration,
    /// How often the certificate is re-read whatever its files say; default 10 s.
    pub cert_watch_interval: Duration,
    /// TLS hardening (Go's `TLSOpts`): HTTP/2 off unless enabled, TLS 1.2+, hooks.
    pub tls: TlsOptions,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            host: String::new(),
            port: DEFAULT_PORT,
            cert_dir: default_cert_dir(),
            cert_name: DEFAULT_CERT_NAME.into(),
            key_name: DEFAULT_KEY_NAME.into(),
            client_ca_name: None,
            max_body_bytes: super::admission::MAX_REQUEST_BYTES,
            handshake_timeout: Duration::from_secs(10),
            cert_watch_interval: crate::certwatcher::DEFAULT_WATCH_INTERVAL,
            tls: TlsOptions::default(),
        }
    }
}

/// Why registering or serving failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A handler is already registered at this path.
    #[error("can't register duplicate path: {0}")]
    DuplicatePath(String),
    /// The path is not absolute or not clean.
    #[error("invalid webhook path {0:?}: must start with '/' and be clean")]
    InvalidPath(String),
    /// Binding failed.
    #[error("binding the webhook server to {addr}: {source}")]
    Bind {
        /// The address.
        addr: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The certificate or TLS configuration could not be loaded.
    #[error("webhook server TLS: {0}")]
    Tls(String),
    /// `start` was called twice.
    #[error("the webhook server was already started")]
    AlreadyStarted,
}

type Routes = HashMap<String, Arc<dyn Handler>>;

struct Inner {
    opts: Options,
    routes: RwLock<Arc<Routes>>,
    listener: Mutex<Option<StdListener>>,
    started: Mutex<bool>,
    addr: watch::Sender<Option<SocketAddr>>,
    ready: watch::Sender<bool>,
    conversion: Mutex<Option<super::conversion::Webhook>>,
    registrations: Mutex<Vec<super::Registration>>,
    /// Served only through [`Server::service`] ([`Server::in_memory`]).
    in_memory: bool,
}

/// The webhook server. Cheap to clone; clones share one server.
#[derive(Clone)]
pub struct Server {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("opts", &self.inner.opts)
            .field("paths", &self.paths())
            .finish()
    }
}

impl Server {
    /// A server with `opts`; nothing is bound until it starts (or [`Server::bind`]).
    pub fn new(opts: Options) -> Self {
        Self::build(opts, false)
    }

    /// A server answering only through [`Server::service`]: it binds no port and loads no
    /// certificate, and once started it is ready at once. For a manager whose API server
    /// calls its webhooks in this process (ctrl-envtest's simulation).
    pub fn in_memory(opts: Options) -> Self {
        Self::build(opts, true)
    }

    fn build(opts: Options, in_memory: bool) -> Self {
        metrics::init();
        let (addr, _) = watch::channel(None);
        let (ready, _) = watch::channel(false);
        Self {
            inner: Arc::new(Inner {
                opts,
                routes: RwLock::new(Arc::new(HashMap::new())),
                listener: Mutex::new(None),
                started: Mutex::new(false),
                addr,
                ready,
                conversion: Mutex::new(None),
                registrations: Mutex::new(Vec::new()),
                in_memory,
            }),
        }
    }

    /// The server's options.
    pub fn options(&self) -> &Options {
        &self.inner.opts
    }

    /// Binds the listener now (else `start` does), so that port 0 can be read back
    /// with [`Server::local_addr`] before starting. Idempotent.
    pub fn bind(&self) -> Result<SocketAddr, Error> {
        if let Some(a) = *self.inner.addr.borrow() {
            return Ok(a);
        }
        let o = &self.inner.opts;
        let host = if o.host.is_empty() {
            "0.0.0.0"
        } else {
            o.host.as_str()
        };
        let addr = if host.contains(':') {
            format!("[{host}]:{}", o.port)
        } else {
            format!("{host}:{}", o.port)
        };
        let l = h::bind(&addr).map_err(|source| Error::Bind { addr, source })?;
        let local = l.local_addr().map_err(|source| Error::Bind {
            addr: "local address".into(),
            source,
        })?;
        *self.inner.listener.lock() = Some(l);
        self.inner.addr.send_replace(Some(local));
        Ok(local)
    }

    /// Where the server listens, once bound.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        *self.inner.addr.borrow()
    }

    /// Serves `handler` at `path` (Go's `Register`). Registering a path twice, or a
    /// path that is not absolute and clean, is an error. Allowed after start.
    pub fn register(&self, path: &str, handler: impl Handler) -> Result<(), Error> {
        if !path.starts_with('/') || h::clean_path(path) != path {
            return Err(Error::InvalidPath(path.to_string()));
        }
        let mut routes = self.inner.routes.write();
        if routes.contains_key(path) {
            return Err(Error::DuplicatePath(path.to_string()));
        }
        let mut next = (**routes).clone();
        next.insert(path.to_string(), Arc::new(handler));
        *routes = Arc::new(next);
        metrics::register_path(path);
        tracing::info!(path, "Registering webhook");
        Ok(())
    }

    /// The server's conversion webhook, served at `/convert` from the first call on
    /// (Go registers its scheme-wide handler there when a kind is convertible). Add
    /// kinds with `.hub::<H>()` / `.spoke::<H, S>()`.
    pub fn conversion(&self) -> Result<super::conversion::Webhook, Error> {
        let mut c = self.inner.conversion.lock();
        if let Some(w) = &*c {
            return Ok(w.clone());
        }
        let w = super::conversion::Webhook::new();
        self.register(CONVERT_PATH, w.clone())?;
        *c = Some(w.clone());
        Ok(w)
    }

    /// Records what the webhook at `registration.path` is for (`WebhookBuilder` does
    /// it for every defaulter and validator), so that its configuration can be
    /// generated ([`Server::registrations`]).
    pub fn describe(&self, registration: super::Registration) {
        self.inner.registrations.lock().push(registration);
    }

    /// What this server serves, sorted: the described admission webhooks and, for
    /// each kind of the conversion webhook, a [`Conversion`](super::WebhookType::Conversion)
    /// registration at `/convert`.
    pub fn registrations(&self) -> Vec<super::Registration> {
        let mut out = self.inner.registrations.lock().clone();
        if let Some(c) = &*self.inner.conversion.lock() {
            out.extend(c.registrations(CONVERT_PATH));
        }
        out.sort();
        out
    }

    /// The registered paths, sorted.
    pub fn paths(&self) -> Vec<String> {
        let mut p: Vec<String> = self.inner.routes.read().keys().cloned().collect();
        p.sort();
        p
    }

    /// The server's routes as a `tower::Service`, with no socket and no TLS: each request is
    /// answered as one that came over a connection is (the handler at its path, the body
    /// limit, the webhook metrics and span, panic recovery). For an API server running in
    /// this process: ctrl-envtest's simulation calls a replica's webhooks through it
    /// (`Replica::serve_webhooks`), deterministically, on its virtual clock.
    pub fn service(
        &self,
    ) -> impl tower::Service<
        http::Request<bytes::Bytes>,
        Response = h::Response,
        Error = Infallible,
        Future: Send + 'static,
    > + Clone
    + Send
    + Sync
    + 'static {
        let inner = self.inner.clone();
        tower::service_fn(move |req: http::Request<bytes::Bytes>| {
            let inner = inner.clone();
            async move {
                let max_body = inner.opts.max_body_bytes;
                let req = req.map(http_body_util::Full::new);
                Ok::<_, Infallible>(respond(&inner, req, max_body).await)
            }
        })
    }

    /// A readiness check passing once the server accepts TLS connections (Go's
    /// `StartedChecker`): add it with `mgr.add_readyz_check("webhook", s.started_checker())`.
    pub fn started_checker(&self) -> StartedChecker {
        StartedChecker(self.clone())
    }

    /// Resolves `true` once [`Server::serve`] listens (or, with nothing registered, has
    /// decided not to), `false` if `ctx` is cancelled first. The manager waits for it
    /// before it starts the caches, whose first lists may need a conversion webhook.
    pub async fn wait_serving(&self, ctx: CancellationToken) -> bool {
        let mut rx = self.inner.ready.subscribe();
        tokio::select! {
            r = rx.wait_for(|r| *r) => r.is_ok(),
            _ = ctx.cancelled() => false,
        }
    }

    /// Serves until `ctx` is cancelled, then stops accepting and lets requests in
    /// flight finish.
    pub async fn serve(&self, ctx: CancellationToken) -> Result<(), Error> {
        {
            let mut started = self.inner.started.lock();
            if *started {
                return Err(Error::AlreadyStarted);
            }
            *started = true;
        }
        if self.inner.in_memory || self.inner.routes.read().is_empty() {
            tracing::info!(
                in_memory = self.inner.in_memory,
                "no webhooks registered or served in memory only; the webhook server does not listen"
            );
            self.inner.ready.send_replace(true);
            ctx.cancelled().await;
            return Ok(());
        }
        let o = self.inner.opts.clone();
        let certs = CertWatcher::new(o.cert_dir.join(&o.cert_name), o.cert_dir.join(&o.key_name))
            .map_err(|e| Error::Tls(e.to_string()))?
            .with_watch_interval(o.cert_watch_interval);
        let certs = Arc::new(certs);
        let ca = o.client_ca_name.as_ref().map(|n| o.cert_dir.join(n));
        let cfg = o
            .tls
            .server_config(certs.clone(), ca.as_deref())
            .map_err(Error::Tls)?;
        let acceptor = TlsAcceptor::from(Arc::new(cfg));
        self.bind()?;
        let std = self
            .inner
            .listener
            .lock()
            .take()
            .ok_or(Error::AlreadyStarted)?;
        let listener = TcpListener::from_std(std).map_err(|source| Error::Bind {
            addr: "listener".into(),
            source,
        })?;
        let addr = self.local_addr();
        self.inner.ready.send_replace(true);
        tracing::info!(addr = ?addr, cert_dir = %o.cert_dir.display(), "Starting webhook server");
        let watcher_ctx = ctx.child_token();
        let w = certs.clone();
        let wctx = watcher_ctx.clone();
        tokio::spawn(async move { w.watch(wctx).await });
        let conns = TaskTracker::new();
        let shutdown = CancellationToken::new();
        // Back-off when out of file descriptors, TCP keepalive: `ctrl_net`, as every server.
        let mut incoming = ctrl_net::Acceptor::new(listener, "webhook");
        loop {
            let (stream, peer) = tokio::select! {
                _ = ctx.cancelled() => break,
                a = incoming.accept() => a,
            };
            conns.spawn(serve_conn(
                stream,
                peer,
                acceptor.clone(),
                self.inner.clone(),
                shutdown.clone(),
            ));
        }
        tracing::info!(addr = ?addr, "Shutting down webhook server");
        drop(incoming);
        watcher_ctx.cancel();
        shutdown.cancel();
        conns.close();
        conns.wait().await;
        Ok(())
    }
}

async fn serve_conn(
    stream: TcpStream,
    peer: SocketAddr,
    acceptor: TlsAcceptor,
    inner: Arc<Inner>,
    shutdown: CancellationToken,
) {
    let timeout = inner.opts.handshake_timeout;
    let Some(tls) = tls::accept(stream, peer, &acceptor, timeout, "webhook").await else {
        return;
    };
    #[cfg(feature = "http2")]
    let h2 = tls::negotiated_h2(&tls);
    let max_body = inner.opts.max_body_bytes;
    let svc = service_fn(move |req: http::Request<Incoming>| {
        let inner = inner.clone();
        async move { Ok::<_, Infallible>(respond(&inner, req, max_body).await) }
    });
    // Served as negotiated: h2 only after ALPN said so (with the `http2` feature: without it
    // ALPN never offers h2), else HTTP/1.1 only.
    let io = TokioIo::new(tls);
    #[cfg(feature = "http2")]
    if h2 {
        let builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        return ended(
            peer,
            h::drive_conn!(builder.serve_connection(io, svc), shutdown),
        );
    }
    let builder = ctrl_net::http1(ctrl_net::DEFAULT_HEADER_READ_TIMEOUT);
    ended(
        peer,
        h::drive_conn!(builder.serve_connection(io, svc), shutdown),
    );
}

/// Logs how a webhook connection ended, if with an error.
fn ended(peer: SocketAddr, res: Result<(), hyper::Error>) {
    if let Err(error) = res {
        tracing::debug!(%peer, %error, "webhook connection ended with an error");
    }
}

/// [`respond_in`] inside a `webhook` span; with the `otel` feature the span continues the
/// trace of the API server's `traceparent` header, if it sent one.
async fn respond<B>(inner: &Inner, req: http::Request<B>, max_body: usize) -> h::Response
where
    B: hyper::body::Body<Data = bytes::Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let span = tracing::info_span!("webhook", webhook = %req.uri().path());
    #[cfg(feature = "otel")]
    if let Some(tp) = req
        .headers()
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
    {
        crate::otel::continue_from(&span, tp);
    }
    tracing::Instrument::instrument(respond_in(inner, req, max_body), span).await
}

async fn respond_in<B>(inner: &Inner, req: http::Request<B>, max_body: usize) -> h::Response
where
    B: hyper::body::Body<Data = bytes::Bytes>,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let path = req.uri().path().to_string();
    let handler = inner.routes.read().get(&path).cloned();
    let Some(handler) = handler else {
        return h::not_found();
    };
    let flight = InFlight::start(&path);
    let t0 = Instant::now();
    let (parts, body) = req.into_parts();
    let resp = match Limited::new(body, max_body).collect().await {
        Ok(c) => {
            let req = http::Request::from_parts(parts, c.to_bytes());
            match std::panic::AssertUnwindSafe(handler.call(req))
                .catch_unwind()
                .await
            {
                Ok(r) => r,
                Err(_) => {
                    metrics::panic_observed();
                    tracing::error!(path = %path, "webhook handler panicked");
                    h::text(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "500 Internal Server Error\n",
                    )
                }
            }
        }
        Err(e) if e.is::<http_body_util::LengthLimitError>() => h::text(
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request entity is too large; limit is {max_body} bytes\n"),
        ),
        Err(_) => h::text(StatusCode::BAD_REQUEST, "400 Bad Request\n"),
    };
    flight.done(t0.elapsed(), resp.status().as_u16());
    resp
}

/// The readiness check from [`Server::started_checker`].
#[derive(Clone, Debug)]
pub struct StartedChecker(Server);

#[async_trait]
impl Checker for StartedChecker {
    async fn check(&self, _req: &h::Request) -> Result<(), CheckError> {
        let Some(mut addr) = self.0.local_addr() else {
            return Err("webhook server has not been started yet".into());
        };
        if addr.ip().is_unspecified() {
            addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        let cfg = tls::insecure_client_config()?;
        let connector = tokio_rustls::TlsConnector::from(Arc::new(cfg));
        let dial = async {
            let tcp = TcpStream::connect(addr).await?;
            let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
            connector.connect(name, tcp).await
        };
        match tokio::time::timeout(Duration::from_secs(10), dial).await {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(format!("webhook server is not reachable: {e}").into()),
            Err(_) => Err("webhook server is not reachable: timed out".into()),
        }
    }
}
