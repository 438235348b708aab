//! Shared helpers for the webhook server tests: a server on port 0 with fresh
//! self-signed certificates, and a raw HTTP/1.1-over-TLS client that trusts them.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ctrl_runtime::webhook::{Options, Server, certs};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_util::sync::CancellationToken;

pub struct Running {
    pub server: Server,
    pub addr: SocketAddr,
    pub dir: PathBuf,
    pub ca_pem: String,
    pub ctx: CancellationToken,
    pub task: tokio::task::JoinHandle<()>,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.ctx.cancel();
    }
}

pub fn options(dir: PathBuf) -> Options {
    Options {
        host: "127.0.0.1".into(),
        port: 0,
        cert_dir: dir,
        ..Options::default()
    }
}

/// A server with fresh certificates, handlers registered by `setup`, started.
pub async fn start_with(
    opts: impl FnOnce(Options) -> Options,
    setup: impl FnOnce(&Server),
) -> Running {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = certs::temp_cert_dir().expect("temp dir");
    let generated = certs::generate_self_signed(&dir, &[]).expect("certs");
    let server = Server::new(opts(options(dir.clone())));
    setup(&server);
    let addr = server.bind().expect("bind");
    let ctx = CancellationToken::new();
    let s = server.clone();
    let c = ctx.clone();
    let task = tokio::spawn(async move {
        s.serve(c).await.expect("serve");
    });
    Running {
        server,
        addr,
        dir,
        ca_pem: generated.ca_pem,
        ctx,
        task,
    }
}

pub async fn start(setup: impl FnOnce(&Server)) -> Running {
    start_with(|o| o, setup).await
}

pub fn client_config(ca_pem: &str, alpn: &[&[u8]]) -> rustls::ClientConfig {
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
        roots.add(c.expect("ca pem")).expect("add ca");
    }
    let mut cfg = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    cfg
}

pub async fn tls_connect(
    addr: SocketAddr,
    cfg: rustls::ClientConfig,
) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
    let tcp = TcpStream::connect(addr).await?;
    TlsConnector::from(Arc::new(cfg))
        .connect(ServerName::try_from("localhost").expect("name"), tcp)
        .await
}

/// POSTs `body` to `path` over HTTP/1.1 + TLS; returns the status and body.
pub async fn post(r: &Running, path: &str, content_type: &str, body: &[u8]) -> (u16, String) {
    post_with(r, path, content_type, &[], body).await
}

/// [`post`] with extra request headers (`name`, `value`).
pub async fn post_with(
    r: &Running,
    path: &str,
    content_type: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> (u16, String) {
    let mut tls = tls_connect(r.addr, client_config(&r.ca_pem, &[b"http/1.1"]))
        .await
        .expect("tls connect");
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
        body.len()
    );
    tls.write_all(head.as_bytes()).await.expect("write head");
    // The server may answer (413) before reading everything; ignore write errors then.
    let _ = tls.write_all(body).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut out)).await;
    parse(&out)
}

pub fn parse(raw: &[u8]) -> (u16, String) {
    let text = String::from_utf8_lossy(raw).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

/// An AdmissionReview v1 for a ConfigMap.
pub fn review(
    operation: &str,
    object: serde_json::Value,
    old: Option<serde_json::Value>,
) -> serde_json::Value {
    let mut req = serde_json::json!({
        "uid": "uid-1",
        "kind": {"group": "", "version": "v1", "kind": "ConfigMap"},
        "resource": {"group": "", "version": "v1", "resource": "configmaps"},
        "name": "cm",
        "namespace": "default",
        "operation": operation,
        "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
        "object": object,
        "dryRun": false,
    });
    if let Some(old) = old {
        req["oldObject"] = old;
    }
    serde_json::json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": req})
}

pub fn configmap(data: serde_json::Value) -> serde_json::Value {
    serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "default"}, "data": data})
}
