//! Helpers shared by the manager tests: an envtest, a manager on it, and HTTP
//! requests (a hyper client for well-formed ones, raw TCP for garbage).
#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use ctrl_envtest::Environment;
use ctrl_runtime::manager::{Error, Manager, Options};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// A fresh embedded API server.
pub async fn env() -> Environment {
    Environment::builder().start().await.expect("start envtest")
}

/// Options for tests: no metrics server, no probes (each test turns on what it needs).
pub fn quiet() -> Options {
    Options {
        metrics_bind_address: "0".into(),
        ..Default::default()
    }
}

/// [`quiet`] with the metrics server on a free local port.
pub fn with_metrics() -> Options {
    Options {
        metrics_bind_address: "127.0.0.1:0".into(),
        ..quiet()
    }
}

/// A manager on `env`.
pub fn manager(env: &Environment, opts: Options) -> Manager {
    Manager::new(env.client(), opts).expect("manager")
}

/// Starts `mgr` in a task.
pub fn run(mgr: &Manager, ctx: &CancellationToken) -> JoinHandle<Result<(), Error>> {
    let (mgr, ctx) = (mgr.clone(), ctx.clone());
    tokio::spawn(async move { mgr.start(ctx).await })
}

/// Waits (up to 10 s) for the manager task to return.
pub async fn finished(h: JoinHandle<Result<(), Error>>) -> Result<(), Error> {
    tokio::time::timeout(Duration::from_secs(10), h)
        .await
        .expect("manager stopped in time")
        .expect("manager task")
}

/// Waits (up to 10 s) until the manager is elected.
pub async fn elected(mgr: &Manager) {
    tokio::time::timeout(Duration::from_secs(10), mgr.elected())
        .await
        .expect("elected in time");
}

/// A response: status, content type, body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub location: Option<String>,
    pub body: String,
}

/// A GET over a fresh hyper HTTP/1.1 connection.
pub async fn get(addr: SocketAddr, path: &str) -> Reply {
    try_get(addr, path).await.expect("GET")
}

/// A GET that may fail to connect.
pub async fn try_get(
    addr: SocketAddr,
    path: &str,
) -> Result<Reply, Box<dyn std::error::Error + Send + Sync>> {
    let (status, headers, body) = get_bytes(addr, path).await?;
    let header = |name| {
        headers
            .get(name)
            .and_then(|v: &http::HeaderValue| v.to_str().ok())
            .map(str::to_string)
    };
    Ok(Reply {
        status,
        content_type: header(http::header::CONTENT_TYPE).unwrap_or_default(),
        location: header(http::header::LOCATION),
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// A GET whose body is kept as bytes (for binary answers).
pub async fn get_bytes(
    addr: SocketAddr,
    path: &str,
) -> Result<(u16, http::HeaderMap, Bytes), Box<dyn std::error::Error + Send + Sync>> {
    let stream = TcpStream::connect(addr).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let req = http::Request::get(path)
        .header(http::header::HOST, addr.to_string())
        .body(Empty::<Bytes>::new())?;
    let resp = sender.send_request(req).await?;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.into_body().collect().await?.to_bytes();
    Ok((status, headers, body))
}

/// Writes raw bytes on a fresh connection and reads until the server closes it or
/// 5 s pass; returns what came back.
pub async fn raw(addr: SocketAddr, request: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    // The server may answer (and close) before reading everything; ignore write errors.
    let _ = s.write_all(request).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// The status code of a raw HTTP response.
pub fn status_of(raw: &str) -> u16 {
    raw.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

/// A manager running in a task.
pub struct Running {
    pub ctx: CancellationToken,
    h: JoinHandle<Result<(), Error>>,
}

/// Starts `mgr` and waits until it is elected (everything started).
pub async fn launch(mgr: &Manager) -> Running {
    let ctx = CancellationToken::new();
    let h = run(mgr, &ctx);
    elected(mgr).await;
    Running { ctx, h }
}

impl Running {
    /// Cancels the manager and returns what `start` returned.
    pub async fn stop(self) -> Result<(), Error> {
        self.ctx.cancel();
        finished(self.h).await
    }
}

/// A one-shot signal a `Fn` runnable can fire (the first call takes the sender).
pub fn once() -> (
    impl Fn() -> Option<tokio::sync::oneshot::Sender<()>> + Send + Sync + 'static,
    tokio::sync::oneshot::Receiver<()>,
) {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let tx = std::sync::Mutex::new(Some(tx));
    (move || tx.lock().ok().and_then(|mut t| t.take()), rx)
}

/// Adds to `mgr` a controller `name` running `r` on ConfigMaps from its cache.
pub async fn add_configmap_controller(
    mgr: &Manager,
    name: &str,
    r: impl ctrl_runtime::reconcile::Reconciler,
    opts: ctrl_runtime::controller::Options,
) {
    use ctrl_runtime::handler::EnqueueRequestForObject;
    use ctrl_runtime::source::Kind;
    use k8s_openapi::api::core::v1::ConfigMap;
    let c = ctrl_runtime::controller::Controller::new(name, r, opts).expect("controller");
    c.watch(Kind::<ConfigMap>::new(
        &mgr.cache(),
        EnqueueRequestForObject,
    ))
    .await
    .expect("watch");
    mgr.add(c).expect("add controller");
}
