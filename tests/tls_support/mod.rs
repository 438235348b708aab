//! TLS clients for the tests of the manager's TLS servers (`tests/secure_metrics.rs`):
//! a client trusting a given CA with chosen TLS versions, one trusting anything with
//! chosen ALPN protocols, raw HTTP/1.1 and h2 GETs over a TLS stream, and raw bytes
//! to a port.
#![allow(dead_code)] // each test file uses a different part

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// The TLS versions a test client offers.
#[derive(Clone, Copy, Debug)]
pub enum Versions {
    /// 1.2 and 1.3.
    Any,
    /// 1.2 only.
    Tls12Only,
    /// 1.3 only.
    Tls13Only,
}

/// A client trusting only the PEM CA `ca_pem`, offering `versions` and ALPN `http/1.1`.
pub fn ca_client(ca_pem: &str, versions: Versions) -> ClientConfig {
    let provider = ctrl::certwatcher::crypto_provider();
    let mut roots = RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(c.expect("CA PEM")).expect("add CA");
    }
    let v: &[&rustls::SupportedProtocolVersion] = match versions {
        Versions::Any => &[&rustls::version::TLS13, &rustls::version::TLS12],
        Versions::Tls12Only => &[&rustls::version::TLS12],
        Versions::Tls13Only => &[&rustls::version::TLS13],
    };
    let mut cfg = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(v)
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    cfg
}

/// A client accepting any certificate, offering the ALPN protocols `alpn`.
pub fn insecure_client(alpn: &[&[u8]]) -> ClientConfig {
    let mut cfg = ctrl::tls::insecure_client_config().expect("client config");
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    cfg
}

/// A TLS connection to `addr` (server name `localhost`).
pub async fn connect(addr: SocketAddr, cfg: ClientConfig) -> std::io::Result<TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    let name = ServerName::try_from("localhost").expect("server name");
    TlsConnector::from(Arc::new(cfg)).connect(name, tcp).await
}

/// `GET /metrics` over HTTP/1.1 on `tls`, with a bearer `token` if given: status and body.
pub async fn get(tls: TlsStream<TcpStream>, token: Option<&str>) -> (u16, String) {
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    let req =
        format!("GET /metrics HTTP/1.1\r\nHost: localhost\r\n{auth}Connection: close\r\n\r\n");
    exchange(tls, &req).await
}

/// Sends the raw HTTP/1.1 request `req` (with `Connection: close`) on `tls` and reads the
/// response to the end: status and body.
pub async fn exchange(mut tls: TlsStream<TcpStream>, req: &str) -> (u16, String) {
    tls.write_all(req.as_bytes()).await.expect("send");
    let mut resp = Vec::new();
    // A server closing without close_notify is an error here, the bytes are not.
    let _ = tls.read_to_end(&mut resp).await;
    let resp = String::from_utf8_lossy(&resp).to_string();
    let status = resp
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = resp.split_once("\r\n\r\n").map(|(_, b)| b.to_string());
    (status, body.unwrap_or(resp))
}

/// `GET /metrics` over h2 on `tls`: status and body.
pub async fn get_h2(tls: TlsStream<TcpStream>) -> (u16, String) {
    let (mut send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .expect("h2 handshake");
    tokio::spawn(conn);
    let req = http::Request::get("https://localhost/metrics")
        .body(Empty::<bytes::Bytes>::new())
        .expect("request");
    let resp = send.send_request(req).await.expect("h2 request");
    let status = resp.status().as_u16();
    let body = resp
        .into_body()
        .collect()
        .await
        .expect("h2 body")
        .to_bytes();
    (status, String::from_utf8_lossy(&body).to_string())
}

/// Sends `bytes` to `addr` and returns what comes back before the server closes (or
/// 5 s pass).
pub async fn send_raw(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut conn = TcpStream::connect(addr).await.expect("connect");
    conn.write_all(bytes).await.expect("send");
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).to_string()
}

/// A token of ServiceAccount `ns/name` (created first), from the TokenRequest API.
pub async fn sa_token(admin: &kube::Client, ns: &str, name: &str) -> String {
    use k8s_openapi::api::authentication::v1::TokenRequest;
    use k8s_openapi::api::core::v1::ServiceAccount;
    use kube::api::{Api, PostParams};
    let sas: Api<ServiceAccount> = Api::namespaced(admin.clone(), ns);
    let sa: ServiceAccount =
        serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).expect("sa");
    match sas.create(&PostParams::default(), &sa).await {
        Ok(_) => {}
        Err(kube::Error::Api(s)) if s.is_already_exists() => {}
        Err(e) => panic!("create ServiceAccount {ns}/{name}: {e}"),
    }
    let tr: TokenRequest =
        serde_json::from_value(serde_json::json!({"spec": {}})).expect("token request");
    let out = sas
        .create_token_request(name, &PostParams::default(), &tr)
        .await
        .expect("token request");
    out.status.expect("token status").token
}

/// Lets ServiceAccount `ns/name` `get` `/metrics`: a ClusterRole with that rule (as
/// `--print-rbac`'s metrics reader) bound to it.
pub async fn grant_metrics_reader(admin: &kube::Client, ns: &str, name: &str) {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    use kube::api::{Api, PostParams};
    let role: ClusterRole = serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("{name}-metrics-reader")},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    }))
    .expect("role");
    let binding: ClusterRoleBinding = serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("{name}-metrics-reader")},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": format!("{name}-metrics-reader")},
        "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": ns}],
    }))
    .expect("binding");
    Api::<ClusterRole>::all(admin.clone())
        .create(&PostParams::default(), &role)
        .await
        .expect("create ClusterRole");
    Api::<ClusterRoleBinding>::all(admin.clone())
        .create(&PostParams::default(), &binding)
        .await
        .expect("create ClusterRoleBinding");
}

/// `GET /metrics` on the secure endpoint `addr` (any certificate) with `token`.
pub async fn scrape_secure(addr: SocketAddr, token: Option<&str>) -> (u16, String) {
    let tls = connect(addr, insecure_client(&[b"http/1.1"]))
        .await
        .expect("tls");
    get(tls, token).await
}
