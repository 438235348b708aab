//! A ctrl-runtime webhook server over TLS for envtest tests that make ctrl-envtest call
//! webhooks (conversion, admission warnings): fresh self-signed certificates, port 0,
//! handlers registered by the caller, stopped when dropped. Include it with
//! `#[path = "common/webhook_server.rs"] mod webhook_server;`.
#![allow(dead_code)]

use base64::Engine;
use ctrl_runtime::manager::Runnable;
use ctrl_runtime::webhook::{self, Server, certs};
use tokio_util::sync::CancellationToken;

/// A started webhook server.
pub struct Running {
    /// The server (register more handlers on it).
    pub server: Server,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// The CA that signed the serving certificate, base64 of PEM (a `caBundle`).
    pub ca_bundle: String,
    ctx: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.ctx.cancel();
    }
}

/// Starts a server with the handlers `setup` registers; returns once it accepts TLS.
pub async fn start(setup: impl FnOnce(&Server)) -> Running {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = certs::temp_cert_dir().expect("temp cert dir");
    let generated = certs::generate_self_signed(&dir, &[]).expect("certificates");
    let server = Server::new(webhook::Options {
        host: "127.0.0.1".into(),
        port: 0,
        cert_dir: dir,
        ..Default::default()
    });
    setup(&server);
    let addr = server.bind().expect("bind");
    let ctx = CancellationToken::new();
    let (s, c) = (server.clone(), ctx.clone());
    tokio::spawn(async move { s.serve(c).await });
    assert!(
        Runnable::wait_ready(&server, ctx.clone()).await,
        "webhook server did not start"
    );
    Running {
        server,
        url: format!("https://127.0.0.1:{}", addr.port()),
        ca_bundle: base64::engine::general_purpose::STANDARD.encode(&generated.ca_pem),
        ctx,
    }
}
