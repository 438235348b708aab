//! ctrl-net: the transport limits every HTTP server ctrl runs shares — the embedded API server
//! (`ctrl-envtest`), and the manager's metrics, health-probe and webhook servers
//! (`ctrl-runtime`'s `http` and `webhook` modules). It is Go's `net/http` server behaviour
//! that kube-apiserver and controller-runtime rely on, in one place:
//!
//! * [`listen`] binds with the system's maximum listen backlog (Go reads
//!   `/proc/sys/net/core/somaxconn`), so a burst of thousands of connections queues in the
//!   kernel instead of being dropped and retried seconds later.
//! * [`Acceptor`] accepts with Go's back-off: when `accept` fails (out of file descriptors,
//!   `EMFILE` / `ENFILE`), it sleeps 5 ms, doubling up to 1 s, instead of spinning on a
//!   listener that stays readable; it recovers by itself once descriptors are free. Each
//!   accepted stream gets `TCP_NODELAY` and TCP keepalive ([`TCP_KEEPALIVE`]: Go's 15 s), so
//!   connections whose peer vanished are found and released.
//! * [`http1`] is a hyper HTTP/1.1 connection builder with a request-head timeout (upstream's
//!   32 s `ReadHeaderTimeout`, [`DEFAULT_HEADER_READ_TIMEOUT`]). hyper runs that timer
//!   whenever the connection waits for a request head, so it is also the idle timeout of a
//!   kept-alive connection: a half-sent head or a silent connection is closed after it.
//!
//! * `http2` (the `http2` feature) is a hyper HTTP/2 connection builder with kube-apiserver's limits
//!   (`k8s.io/apiserver/pkg/server/secure_serving.go`): 250 concurrent streams, 256 KiB stream
//!   windows and frames, a connection window of both multiplied, a bound on streams the client
//!   resets before they are served (rapid reset) and on streams this side resets for errors.
//!
//! * [`task::spawn`] spawns a background task boxed, so tokio's task code is compiled once.
//!
//! What this crate does not do: routing, bodies, TLS and shutdown belong to each server.

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use hyper::server::conn::http1 as hyper_http1;
#[cfg(feature = "http2")]
use hyper::server::conn::http2 as hyper_http2;
#[cfg(feature = "http2")]
use hyper_util::rt::TokioExecutor;
use hyper_util::rt::TokioTimer;
use socket2::{Domain, Protocol, SockRef, Socket, TcpKeepalive, Type};
use tokio::net::{TcpListener, TcpStream};

pub mod task;

/// How long a client has to send a request head, and how long a kept-alive connection may sit
/// idle (kube-apiserver's and controller-runtime's `ReadHeaderTimeout`: 32 s).
pub const DEFAULT_HEADER_READ_TIMEOUT: Duration = Duration::from_secs(32);

/// TCP keepalive idle time and probe interval of accepted connections (Go's default 15 s).
pub const TCP_KEEPALIVE: Duration = Duration::from_secs(15);

/// The first and the longest pause after a failed `accept` (Go's `net/http`: 5 ms .. 1 s).
const ACCEPT_BACKOFF: (Duration, Duration) = (Duration::from_millis(5), Duration::from_secs(1));

/// The system's maximum listen backlog: `net.core.somaxconn` where it can be read (Linux),
/// else 4096 (Linux's default since 5.4). The kernel caps any larger value to it.
pub fn max_backlog() -> i32 {
    std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<i32>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(4096)
}

/// Binds a non-blocking TCP listener on `addr` with `SO_REUSEADDR` and the
/// [`max_backlog`]. It can be made a tokio listener with `TcpListener::from_std` inside a
/// runtime (binding itself needs none, so servers can bind early and report clashes).
pub fn listen(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(max_backlog())?;
    socket.set_nonblocking(true)?;
    Ok(socket.into())
}

/// Sets `TCP_NODELAY` and TCP keepalive ([`TCP_KEEPALIVE`]) on an accepted stream.
pub fn tune(stream: &TcpStream) {
    let keepalive = TcpKeepalive::new()
        .with_time(TCP_KEEPALIVE)
        .with_interval(TCP_KEEPALIVE);
    let sock = SockRef::from(stream);
    if let Err(error) = sock
        .set_tcp_nodelay(true)
        .and_then(|()| sock.set_tcp_keepalive(&keepalive))
    {
        tracing::debug!(%error, "could not set TCP options on an accepted connection");
    }
}

/// Accepts connections with Go's back-off on failure (see the crate docs).
#[derive(Debug)]
pub struct Acceptor {
    listener: TcpListener,
    delay: Duration,
    name: &'static str,
}

impl Acceptor {
    /// Accepts from `listener`; `name` names the server in logs (`"envtest"`, `"metrics"`).
    pub fn new(listener: TcpListener, name: &'static str) -> Self {
        Self {
            listener,
            delay: Duration::ZERO,
            name,
        }
    }

    /// The listener's address.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The next connection, [`tune`]d. A failed `accept` is logged and retried after a
    /// pause that doubles from 5 ms to 1 s and resets on success, so a process out of file
    /// descriptors neither spins nor stops serving. Cancel-safe: drop the future to stop.
    pub async fn accept(&mut self) -> (TcpStream, SocketAddr) {
        loop {
            match self.listener.accept().await {
                Ok((stream, peer)) => {
                    self.delay = Duration::ZERO;
                    tune(&stream);
                    return (stream, peer);
                }
                Err(error) => {
                    self.delay = if self.delay.is_zero() {
                        ACCEPT_BACKOFF.0
                    } else {
                        (self.delay * 2).min(ACCEPT_BACKOFF.1)
                    };
                    tracing::warn!(server = self.name, %error, retry_in = ?self.delay, "accept failed; retrying");
                    tokio::time::sleep(self.delay).await;
                }
            }
        }
    }
}

/// A hyper HTTP/1.1 server-connection builder with keep-alive and the request-head (and
/// idle) timeout `header_read_timeout` (usually [`DEFAULT_HEADER_READ_TIMEOUT`]).
pub fn http1(header_read_timeout: Duration) -> hyper_http1::Builder {
    let mut b = hyper_http1::Builder::new();
    b.timer(TokioTimer::new())
        .keep_alive(true)
        .header_read_timeout(header_read_timeout);
    b
}

/// kube-apiserver's `MaxConcurrentStreams` default (`secure_serving.go`).
#[cfg(feature = "http2")]
pub const HTTP2_MAX_CONCURRENT_STREAMS: u32 = 250;

/// kube-apiserver's per-stream upload buffer and read frame size (`resourceBody99Percentile`).
#[cfg(feature = "http2")]
pub const HTTP2_STREAM_WINDOW: u32 = 256 * 1024;

/// Streams a client may open and reset before this side accepts them (hyper's bound on the
/// rapid-reset attack, CVE-2023-44487); more and the connection is closed with a GOAWAY.
#[cfg(feature = "http2")]
pub const HTTP2_MAX_PENDING_RESETS: usize = 20;

/// Streams this side may reset for protocol errors before it closes the connection.
#[cfg(feature = "http2")]
pub const HTTP2_MAX_LOCAL_ERROR_RESETS: usize = 1024;

/// A hyper HTTP/2 server-connection builder with kube-apiserver's stream limits (see the crate
/// docs), keep-alive pings every `header_read_timeout` (a peer silent for another one is dropped)
/// and the same 1 MiB header-list limit as Go's `http.Server` (`DefaultMaxHeaderBytes`).
#[cfg(feature = "http2")]
pub fn http2(header_read_timeout: Duration) -> hyper_http2::Builder<TokioExecutor> {
    let mut b = hyper_http2::Builder::new(TokioExecutor::new());
    b.timer(TokioTimer::new())
        .max_concurrent_streams(HTTP2_MAX_CONCURRENT_STREAMS)
        .initial_stream_window_size(HTTP2_STREAM_WINDOW)
        .initial_connection_window_size(HTTP2_STREAM_WINDOW * HTTP2_MAX_CONCURRENT_STREAMS)
        .max_frame_size(HTTP2_STREAM_WINDOW)
        .max_header_list_size(1 << 20)
        .max_pending_accept_reset_streams(HTTP2_MAX_PENDING_RESETS)
        .max_local_error_reset_streams(HTTP2_MAX_LOCAL_ERROR_RESETS)
        .keep_alive_interval(header_read_timeout)
        .keep_alive_timeout(header_read_timeout);
    b
}
