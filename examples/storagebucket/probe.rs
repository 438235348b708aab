//! Probing a bucket's endpoint: one HTTP/1.1 GET over a fresh connection, with a
//! timeout. Plain `http://` only — enough for the demo's loopback object store; a
//! real operator would use a full HTTP client with TLS.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Empty;
use hyper::{Request, Uri};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// How long one probe may take before it counts as a failure.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// What a probe found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Whether the endpoint answered 2xx.
    pub available: bool,
    /// A `PascalCase` reason for the condition and Event (`Reachable`,
    /// `EndpointError`, `Unreachable`, `InvalidEndpoint`).
    pub reason: &'static str,
    /// A sentence for people.
    pub message: String,
    /// How long the probe took.
    pub took: Duration,
}

/// GETs `endpoint` and reports whether it answered 2xx within [`PROBE_TIMEOUT`].
pub async fn probe(endpoint: &str) -> Outcome {
    let started = Instant::now();
    let (available, reason, message) =
        match tokio::time::timeout(PROBE_TIMEOUT, get(endpoint)).await {
            Err(_) => (
                false,
                "Unreachable",
                format!("no answer within {PROBE_TIMEOUT:?}"),
            ),
            Ok(Err(Failure::Invalid(why))) => (false, "InvalidEndpoint", why),
            Ok(Err(Failure::Io(why))) => (false, "Unreachable", why),
            Ok(Ok(status)) if status.is_success() => {
                (true, "Reachable", format!("endpoint answered {status}"))
            }
            Ok(Ok(status)) => (
                false,
                "EndpointError",
                format!("endpoint answered {status}"),
            ),
        };
    Outcome {
        available,
        reason,
        message,
        took: started.elapsed(),
    }
}

enum Failure {
    Invalid(String),
    Io(String),
}

async fn get(endpoint: &str) -> Result<hyper::StatusCode, Failure> {
    let uri: Uri = endpoint
        .parse()
        .map_err(|e| Failure::Invalid(format!("endpoint {endpoint:?} is not a URL: {e}")))?;
    if uri.scheme_str() != Some("http") {
        return Err(Failure::Invalid(format!(
            "endpoint {endpoint:?}: only http:// endpoints are supported"
        )));
    }
    let host = uri
        .host()
        .ok_or_else(|| Failure::Invalid(format!("endpoint {endpoint:?} has no host")))?
        .to_string();
    let port = uri.port_u16().unwrap_or(80);
    let stream = TcpStream::connect((host.as_str(), port))
        .await
        .map_err(|e| Failure::Io(format!("cannot connect to {host}:{port}: {e}")))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| Failure::Io(format!("HTTP handshake with {host}:{port} failed: {e}")))?;
    tokio::spawn(conn);
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let req = Request::get(path)
        .header(hyper::header::HOST, format!("{host}:{port}"))
        .header(hyper::header::USER_AGENT, "storagebucket-operator")
        .body(Empty::<Bytes>::new())
        .map_err(|e| Failure::Invalid(format!("endpoint {endpoint:?}: {e}")))?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(|e| Failure::Io(format!("GET {endpoint} failed: {e}")))?;
    Ok(resp.status())
}
