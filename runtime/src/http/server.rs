//! [`Server`]: serves a [`Router`] on a bound listener until cancelled, then shuts
//! down gracefully (Go's `manager.Server` over `httpserver.New`).
//!
//! Listeners are bound up front with [`bind`] (the manager does it in
//! `Manager::new`, so a port clash is reported before anything starts and tests can
//! bind port 0 and read the address back). Each connection is HTTP/1.1 on hyper with
//! Go's limits: the request head must arrive within [`DEFAULT_HEADER_READ_TIMEOUT`]
//! and fit in [`DEFAULT_MAX_HEADER_BYTES`] (else `431` and the connection closes);
//! bodies over [`DEFAULT_MAX_BODY_BYTES`] get `413`; a panicking handler gets `500`.
//! With [`Server::with_tls`] (the secure metrics server) connections are TLS
//! ([`crate::tls`]): HTTP/1.1, or h2 where ALPN negotiated it; plain HTTP on the port
//! gets `400`.

use std::convert::Infallible;
use std::io;
use std::net::{SocketAddr, TcpListener as StdListener, ToSocketAddrs};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;
use http::StatusCode;
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
#[cfg(feature = "http2")]
use hyper_util::rt::{TokioExecutor, TokioTimer};
use parking_lot::Mutex;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::handler::{Response, text};
use super::router::Router;
use crate::tls;

/// How long a client has to send a request head, and how long a kept-alive connection may
/// sit idle (Go's `ReadHeaderTimeout` in controller-runtime's servers; `ctrl_net`'s).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = ctrl_net::DEFAULT_HEADER_READ_TIMEOUT;

/// The largest request head accepted (Go's `MaxHeaderBytes`: 1 MiB).
pub const DEFAULT_MAX_HEADER_BYTES: usize = 1 << 20;

/// The largest request body read into memory.
pub const DEFAULT_MAX_BODY_BYTES: usize = 1 << 20;

/// Limits and behaviour of a [`Server`].
#[derive(Clone, Debug)]
pub struct ServerOptions {
    /// Time allowed for the request head; default [`DEFAULT_HEADER_READ_TIMEOUT`].
    pub header_read_timeout: Duration,
    /// Largest request head in bytes (at least 8 KiB); default [`DEFAULT_MAX_HEADER_BYTES`].
    pub max_header_bytes: usize,
    /// Largest request body in bytes; default [`DEFAULT_MAX_BODY_BYTES`].
    pub max_body_bytes: usize,
    /// How long shutdown waits for requests in flight; `None` (the default, as Go)
    /// waits until they finish. Idle connections close at once.
    pub shutdown_timeout: Option<Duration>,
    /// Run only on the elected leader (Go's `OnlyServeWhenLeader`). Default false.
    pub only_serve_when_leader: bool,
}

impl Default for ServerOptions {
    fn default() -> Self {
        Self {
            header_read_timeout: DEFAULT_HEADER_READ_TIMEOUT,
            max_header_bytes: DEFAULT_MAX_HEADER_BYTES,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            shutdown_timeout: None,
            only_serve_when_leader: false,
        }
    }
}

/// Binds a listener on `addr`: `host:port`, `[v6]:port`, or Go's `:port` for every
/// interface (IPv4). Port 0 picks a free port; read it back with `local_addr`. The listen
/// backlog is the system maximum (`ctrl_net::listen`).
pub fn bind(addr: &str) -> io::Result<StdListener> {
    let target = match addr.strip_prefix(':') {
        Some(port) => format!("0.0.0.0:{port}"),
        None => addr.to_string(),
    };
    let mut last = None;
    for sa in target.to_socket_addrs()? {
        match ctrl_net::listen(sa) {
            Ok(l) => return Ok(l),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("no address to bind for {addr:?}"),
        )
    }))
}

/// An HTTP server for one [`Router`], run once with [`Server::serve`].
pub struct Server {
    kind: String,
    addr: SocketAddr,
    listener: Mutex<Option<StdListener>>,
    router: Arc<Router>,
    opts: ServerOptions,
    tls: Option<tls::Serving>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("kind", &self.kind)
            .field("addr", &self.addr)
            .field("opts", &self.opts)
            .field("tls", &self.tls.is_some())
            .finish()
    }
}

impl Server {
    /// A server named `kind` (for logs: `"metrics"`, `"health probe"`) on a listener
    /// from [`bind`].
    pub fn new(
        kind: impl Into<String>,
        listener: StdListener,
        router: Router,
        opts: ServerOptions,
    ) -> io::Result<Self> {
        listener.set_nonblocking(true)?;
        Ok(Self {
            kind: kind.into(),
            addr: listener.local_addr()?,
            listener: Mutex::new(Some(listener)),
            router: Arc::new(router),
            opts,
            tls: None,
        })
    }

    /// Serves TLS on the listener instead of plain HTTP (see [`crate::tls`]).
    pub fn with_tls(mut self, tls: tls::Serving) -> Self {
        self.tls = Some(tls);
        self
    }

    /// Whether the server serves TLS.
    pub fn is_tls(&self) -> bool {
        self.tls.is_some()
    }

    /// What the server is for.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The bound address.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's options.
    pub fn options(&self) -> &ServerOptions {
        &self.opts
    }

    /// Serves until `ctx` is cancelled, then stops accepting, lets requests in flight
    /// finish (bounded by `shutdown_timeout`) and returns. Fails if called twice or if
    /// the listener cannot be registered with the runtime.
    pub async fn serve(&self, ctx: CancellationToken) -> io::Result<()> {
        let std =
            self.listener.lock().take().ok_or_else(|| {
                io::Error::other(format!("{} server was already started", self.kind))
            })?;
        let listener = TcpListener::from_std(std)?;
        tracing::info!(kind = %self.kind, addr = %self.addr, secure = self.tls.is_some(), "Starting server");
        let certs_ctx = ctx.child_token();
        if let Some(w) = self.tls.as_ref().and_then(|t| t.certs.clone()) {
            let c = certs_ctx.clone();
            crate::task::spawn(async move { w.watch(c).await });
        }
        let _stop_certs = certs_ctx.drop_guard();
        let conns = TaskTracker::new();
        let shutdown = CancellationToken::new();
        // Back-off when out of file descriptors, TCP keepalive: `ctrl_net`, as every server.
        let mut acceptor = ctrl_net::Acceptor::new(listener, "http");
        loop {
            let (stream, peer) = tokio::select! {
                _ = ctx.cancelled() => break,
                a = acceptor.accept() => a,
            };
            conns.spawn(accept_conn(
                stream,
                peer,
                self.tls.clone(),
                self.router.clone(),
                self.opts.clone(),
                shutdown.clone(),
            ));
        }
        tracing::info!(kind = %self.kind, addr = %self.addr, "shutting down server");
        drop(acceptor);
        shutdown.cancel();
        conns.close();
        match self.opts.shutdown_timeout {
            None => conns.wait().await,
            Some(t) => {
                if tokio::time::timeout(t, conns.wait()).await.is_err() {
                    tracing::error!(kind = %self.kind, timeout = ?t, "error shutting down server: requests still in flight");
                }
            }
        }
        Ok(())
    }
}

/// Serves one accepted connection: plain, or after the TLS handshake as HTTP/1.1 or
/// (negotiated by ALPN, with the `http2` feature) h2.
async fn accept_conn(
    stream: TcpStream,
    peer: SocketAddr,
    tls: Option<tls::Serving>,
    router: Arc<Router>,
    opts: ServerOptions,
    shutdown: CancellationToken,
) {
    let Some(t) = tls else {
        return serve_conn(stream, router, opts, shutdown, false).await;
    };
    let kind = "http";
    let Some(stream) = tls::accept(stream, peer, &t.acceptor, t.handshake_timeout, kind).await
    else {
        return;
    };
    let h2 = tls::negotiated_h2(&stream);
    serve_conn(stream, router, opts, shutdown, h2).await
}

/// Drives the hyper connection `conn` to its end; once `shutdown` is cancelled it closes
/// gracefully (requests in flight finish). Yields the connection's result. A macro
/// because hyper's HTTP/1, h2 and auto connections share no trait.
macro_rules! drive_conn {
    ($conn:expr, $shutdown:expr) => {{
        let conn = $conn;
        tokio::pin!(conn);
        tokio::select! {
            res = conn.as_mut() => res,
            _ = $shutdown.cancelled() => {
                conn.as_mut().graceful_shutdown();
                conn.await
            }
        }
    }};
}
#[cfg(feature = "webhook")]
pub(crate) use drive_conn;

/// Serves one connection as HTTP/1.1, or as h2 if `h2` (TLS only, after ALPN chose it).
async fn serve_conn<I>(
    stream: I,
    router: Arc<Router>,
    opts: ServerOptions,
    shutdown: CancellationToken,
    h2: bool,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let max_body = opts.max_body_bytes;
    let svc = service_fn(move |req: http::Request<Incoming>| {
        let router = router.clone();
        async move { Ok::<_, Infallible>(respond(&router, req, max_body).await) }
    });
    let max_header = opts.max_header_bytes.max(8192);
    let io = TokioIo::new(stream);
    // h2 only with the `http2` feature (without it ALPN never offers h2, so `h2` is false).
    #[cfg(feature = "http2")]
    if h2 {
        let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
        builder
            .timer(TokioTimer::new())
            .max_header_list_size(u32::try_from(max_header).unwrap_or(u32::MAX));
        return ended(drive_conn!(builder.serve_connection(io, svc), shutdown), h2);
    }
    let mut builder = ctrl_net::http1(opts.header_read_timeout);
    builder
        .max_header_size(max_header)
        .max_buf_size(max_header + 64 * 1024);
    ended(drive_conn!(builder.serve_connection(io, svc), shutdown), h2);
}

/// Logs how a connection ended, if with an error.
fn ended(res: Result<(), hyper::Error>, h2: bool) {
    if let Err(error) = res {
        tracing::debug!(%error, h2, "http connection ended with an error");
    }
}

/// Reads the body (capped), routes the request, and turns a handler panic into `500`.
async fn respond(router: &Router, req: http::Request<Incoming>, max_body: usize) -> Response {
    let (parts, body) = req.into_parts();
    let body: Bytes = match Limited::new(body, max_body).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) if e.is::<http_body_util::LengthLimitError>() => {
            return text(
                StatusCode::PAYLOAD_TOO_LARGE,
                "http: request body too large\n",
            );
        }
        Err(_) => return text(StatusCode::BAD_REQUEST, "400 Bad Request\n"),
    };
    let req = http::Request::from_parts(parts, body);
    let path = req.uri().path().to_string();
    match std::panic::AssertUnwindSafe(router.dispatch(req))
        .catch_unwind()
        .await
    {
        Ok(resp) => resp,
        Err(_) => {
            tracing::error!(path = %path, "http handler panicked");
            text(
                StatusCode::INTERNAL_SERVER_ERROR,
                "500 Internal Server Error\n",
            )
        }
    }
}
