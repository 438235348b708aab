//! Calls one webhook over HTTPS as the API server does: POST of a review to `clientConfig.url`, the
//! server verified against `clientConfig.caBundle` as Go's `crypto/x509` verifies it
//! (`pinned`, feature `x509`: a self-signed serving certificate may be its own bundle; without the
//! feature, webpki's verification alone, which refuses such a bundle), within the webhook's
//! timeout; a `clientConfig.service` is called at its DNS name, routed to where the test
//! says the Service is served ([`add_route`]). HTTP/1.1 connections are kept per (URL authority, CA) and reused, so a steady stream
//! of writes pays the TLS handshake once; a URL the simulation serves in memory (`in_memory`) is
//! called there instead, with no socket. Admission webhooks (`admission`) and CRD conversion
//! webhooks ([`registry::conversion`](crate::registry::conversion)) are called through it. A leaf:
//! it imports nothing else of the crate.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;

mod in_memory;
#[cfg(feature = "x509")]
mod pinned;

pub(crate) use in_memory::{BoxError, Endpoints, WebhookService};

type Sender = SendRequest<Full<Bytes>>;

/// Service routes: `<name>.<namespace>.svc:<port>` -> where that Service is served, as
/// kube-apiserver's service resolver maps a Service to an endpoint. Process-wide (as the
/// connection pool): added by `EnvironmentBuilder::service_route` (`env`).
fn routes() -> &'static Mutex<HashMap<String, std::net::SocketAddr>> {
    static R: OnceLock<Mutex<HashMap<String, std::net::SocketAddr>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(HashMap::new()))
}

/// Routes calls to port `port` of Service `namespace/name` to `addr`.
pub(crate) fn add_route(namespace: &str, name: &str, port: u16, addr: std::net::SocketAddr) {
    routes()
        .lock()
        .insert(format!("{name}.{namespace}.svc:{port}"), addr);
}

/// The URL a `clientConfig.service` is called at, as kube-apiserver calls it:
/// `https://<name>.<namespace>.svc:<port><path>` (port 443 unless given); reachable
/// through a route ([`add_route`]), verified against the Service's DNS name.
pub(crate) fn service_url(service: &Value) -> String {
    let at = |k: &str| service.get(k).and_then(Value::as_str).unwrap_or("");
    let port = service.get("port").and_then(Value::as_u64).unwrap_or(443);
    format!(
        "https://{}.{}.svc:{port}{}",
        at("name"),
        at("namespace"),
        at("path")
    )
}

fn pool() -> &'static Mutex<HashMap<String, Vec<Sender>>> {
    static P: OnceLock<Mutex<HashMap<String, Vec<Sender>>>> = OnceLock::new();
    P.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The root certificates of a `caBundle` (base64 of PEM), or why it holds none.
pub(crate) fn roots(ca_bundle: &str) -> Result<rustls::RootCertStore, String> {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(ca_bundle.trim())
        .map_err(|e| format!("caBundle is not base64: {e}"))?;
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(&pem) {
        let c = c.map_err(|e| format!("caBundle: {e}"))?;
        roots.add(c).map_err(|e| format!("caBundle: {e}"))?;
    }
    if roots.is_empty() {
        return Err("caBundle holds no certificate".into());
    }
    Ok(roots)
}

fn tls_config(ca_bundle: &str) -> Result<rustls::ClientConfig, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let roots = roots(ca_bundle)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let webpki = rustls::client::WebPkiServerVerifier::builder_with_provider(
        Arc::new(roots),
        provider.clone(),
    )
    .build()
    .map_err(|e| format!("caBundle: {e}"))?;
    #[cfg(feature = "x509")]
    let verifier = Arc::new(pinned::GoVerifier::new(
        webpki,
        pinned::roots_der(ca_bundle)?,
        provider.signature_verification_algorithms,
    ));
    #[cfg(not(feature = "x509"))]
    let verifier = webpki;
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(cfg)
}

async fn connect(uri: &http::Uri, ca_bundle: &str) -> Result<Sender, String> {
    let host = uri.host().ok_or("url has no host")?;
    let host = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(443);
    let route = routes().lock().get(&format!("{host}:{port}")).copied();
    let tcp = match route {
        Some(addr) => tokio::net::TcpStream::connect(addr).await,
        None => tokio::net::TcpStream::connect((host.as_str(), port)).await,
    }
    .map_err(|e| format!("dial tcp {host}:{port}: {e}"))?;
    let _ = tcp.set_nodelay(true);
    let name = ServerName::try_from(host.clone()).map_err(|e| e.to_string())?;
    let tls = tokio_rustls::TlsConnector::from(Arc::new(tls_config(ca_bundle)?))
        .connect(name, tcp)
        .await
        .map_err(|e| format!("tls: {e}"))?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .map_err(|e| e.to_string())?;
    crate::task::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// POSTs `review` to `url`; the decoded review that came back, or why the call failed. A URL
/// served in memory (`in_memory`, the simulation's) is called there, else over TLS.
pub(crate) async fn call(
    url: &str,
    ca_bundle: &str,
    review: &Value,
    timeout: Duration,
) -> Result<Value, String> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| format!("invalid url {url:?}: {e}"))?;
    if uri.scheme_str() != Some("https") {
        return Err(format!("webhook url {url:?} must use https"));
    }
    let body = Bytes::from(serde_json::to_vec(review).map_err(|e| e.to_string())?);
    let fut = async {
        let (status, bytes) = match in_memory::lookup(&uri) {
            Some(service) => {
                roots(ca_bundle)?;
                in_memory::post(service, &uri, body).await?
            }
            None => post_tls(&uri, ca_bundle, body).await?,
        };
        if !status.is_success() {
            return Err(format!(
                "the server responded with HTTP {}: {}",
                status.as_u16(),
                String::from_utf8_lossy(&bytes).trim()
            ));
        }
        serde_json::from_slice::<Value>(&bytes).map_err(|e| format!("decoding the response: {e}"))
    };
    match tokio::time::timeout(timeout, fut).await {
        Ok(r) => r.map_err(|e| format!("failed to call webhook: Post {url:?}: {e}")),
        Err(_) => Err(format!(
            "failed to call webhook: Post {url:?}: context deadline exceeded (timeout {}s)",
            timeout.as_secs()
        )),
    }
}

/// The POST of a review body to `path` at `uri`'s authority, as JSON.
fn request<B>(uri: &http::Uri, path: &str, body: B) -> Result<http::Request<B>, String> {
    http::Request::post(path)
        .header(
            http::header::HOST,
            uri.authority().map(|a| a.as_str()).unwrap_or(""),
        )
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::ACCEPT, "application/json")
        .body(body)
        .map_err(|e| e.to_string())
}

/// POSTs `body` to `uri` over TLS on a pooled connection (a new one when none is free): the
/// status and body of the answer.
async fn post_tls(
    uri: &http::Uri,
    ca_bundle: &str,
    body: Bytes,
) -> Result<(http::StatusCode, Bytes), String> {
    let key = format!(
        "{}|{}",
        uri.authority().map(|a| a.as_str()).unwrap_or(""),
        ca_bundle
    );
    let reused = {
        let mut p = pool().lock();
        let list = p.entry(key.clone()).or_default();
        list.retain(|s| !s.is_closed());
        list.pop()
    };
    let mut sender = match reused {
        Some(s) => s,
        None => connect(uri, ca_bundle).await?,
    };
    sender.ready().await.map_err(|e| e.to_string())?;
    let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
    let req = request(uri, path, Full::new(body))?;
    let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
    let status = resp.status();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    pool().lock().entry(key).or_default().push(sender);
    Ok((status, bytes))
}
