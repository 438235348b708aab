//! A tiny stand-in for an object store outside the cluster: an HTTP server on
//! 127.0.0.1 that answers `GET /buckets/<name>` with 200 while healthy and 503 while
//! not. The demo flips its health periodically so the operator has something to
//! notice; tests flip it by hand with [`ObjectStore::set_healthy`].

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use ctrl::CancellationToken;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// A running local object store. Dropping it does not stop it; cancel the token
/// given to [`ObjectStore::start`].
#[derive(Clone, Debug)]
pub struct ObjectStore {
    addr: SocketAddr,
    healthy: Arc<AtomicBool>,
}

impl ObjectStore {
    /// Starts the store on a free port of 127.0.0.1, healthy, serving until `stop`.
    pub async fn start(stop: CancellationToken) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let store = Self {
            addr: listener.local_addr()?,
            healthy: Arc::new(AtomicBool::new(true)),
        };
        let healthy = store.healthy.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = stop.cancelled() => return,
                    a = listener.accept() => a,
                };
                let Ok((stream, _)) = accepted else { continue };
                let healthy = healthy.clone();
                let service = service_fn(move |req| answer(req, healthy.load(Ordering::Relaxed)));
                tokio::spawn(
                    hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service),
                );
            }
        });
        Ok(store)
    }

    /// The URL of bucket `name` in this store.
    pub fn bucket_url(&self, name: &str) -> String {
        format!("http://{}/buckets/{name}", self.addr)
    }

    /// Where the store listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether the store answers 200 right now.
    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }

    /// Makes the store answer 200 (`true`) or 503 (`false`).
    pub fn set_healthy(&self, healthy: bool) {
        self.healthy.store(healthy, Ordering::Relaxed);
    }

    /// Flips the store's health every `every` until `stop`, calling `on_flip` with
    /// the new health each time.
    pub fn flip_every(
        &self,
        every: Duration,
        stop: CancellationToken,
        on_flip: impl Fn(bool) + Send + 'static,
    ) {
        let store = self.clone();
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = ticks.tick() => {}
                }
                let healthy = !store.is_healthy();
                store.set_healthy(healthy);
                on_flip(healthy);
            }
        });
    }
}

async fn answer(
    req: Request<Incoming>,
    healthy: bool,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (status, body) = match req.uri().path().strip_prefix("/buckets/") {
        Some(name) if !name.is_empty() && healthy => {
            (StatusCode::OK, format!("bucket {name}: ok\n"))
        }
        Some(name) if !name.is_empty() => (
            StatusCode::SERVICE_UNAVAILABLE,
            "object store is down for maintenance\n".to_string(),
        ),
        _ => (StatusCode::NOT_FOUND, "no such bucket\n".to_string()),
    };
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    Ok(resp)
}
