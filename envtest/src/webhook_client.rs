//! Calls one webhook over HTTPS as the API server does: POST of a review to `clientConfig.url`, the
//! server verified against `clientConfig.caBundle`, within the webhook's timeout. HTTP/1.1
//! connections are kept per (URL authority, CA) and reused, so a steady stream of writes pays the
//! TLS handshake once. Admission webhooks (`admission`) and CRD conversion webhooks
//! ([`registry::conversion`](crate::registry::conversion)) are called through it. A leaf: it
//! imports nothing else of the crate.

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

type Sender = SendRequest<Full<Bytes>>;

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
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
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
    let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
        .await
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
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// POSTs `review` to `url`; the decoded review that came back, or why the call failed.
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
    let key = format!(
        "{}|{}",
        uri.authority().map(|a| a.as_str()).unwrap_or(""),
        ca_bundle
    );
    let body = Bytes::from(serde_json::to_vec(review).map_err(|e| e.to_string())?);
    let fut = async {
        let reused = {
            let mut p = pool().lock();
            let list = p.entry(key.clone()).or_default();
            list.retain(|s| !s.is_closed());
            list.pop()
        };
        let mut sender = match reused {
            Some(s) => s,
            None => connect(&uri, ca_bundle).await?,
        };
        sender.ready().await.map_err(|e| e.to_string())?;
        let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let req = http::Request::post(path)
            .header(
                http::header::HOST,
                uri.authority().map(|a| a.as_str()).unwrap_or(""),
            )
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(body.clone()))
            .map_err(|e| e.to_string())?;
        let resp = sender.send_request(req).await.map_err(|e| e.to_string())?;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        pool().lock().entry(key.clone()).or_default().push(sender);
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
