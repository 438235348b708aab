//! The manager's endpoints a kubebuilder operator serves: `/metrics` (Prometheus text)
//! and `/healthz` + `/readyz`.

use std::net::SocketAddr;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use prometheus::{Encoder, TextEncoder};

/// Serves the endpoints on `addr` until the process ends.
pub async fn serve(addr: SocketAddr) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(answer);
            let conn = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), svc);
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection");
            }
        });
    }
}

async fn answer(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let body = match req.uri().path() {
        "/metrics" => {
            let mut out = Vec::new();
            let _ = TextEncoder::new().encode(&prometheus::gather(), &mut out);
            out
        }
        _ => b"ok".to_vec(),
    };
    Ok(Response::new(Full::new(Bytes::from(body))))
}
