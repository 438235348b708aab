//! HTTPS on the same port as plain HTTP: the server looks at a connection's first byte and
//! speaks TLS when it is a handshake. kubectl (client-go) sends a kubeconfig's credentials
//! only over TLS, so the kubeconfigs the environment writes say `https://` and carry this
//! server's self-signed certificate (for `127.0.0.1` and `localhost`) as their
//! `certificate-authority-data`; kube clients and raw test requests may keep using plain
//! HTTP. TLS offers ALPN `h2` and `http/1.1`, as kube-apiserver does (client-go then multiplexes
//! every request and watch over one HTTP/2 connection); plain HTTP is HTTP/1.1.

use std::sync::Arc;

use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

/// The serving certificate and the acceptor built on it.
pub(crate) struct Tls {
    /// The certificate, PEM: clients trust it as their CA.
    pub cert_pem: String,
    pub acceptor: TlsAcceptor,
}

impl Tls {
    /// A fresh self-signed certificate for `127.0.0.1` and `localhost`.
    pub fn self_signed() -> Result<Tls, String> {
        let ck = rcgen::generate_simple_self_signed(vec![
            "127.0.0.1".to_string(),
            "localhost".to_string(),
        ])
        .map_err(|e| format!("serving certificate: {e}"))?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
        let cert: CertificateDer<'static> = ck.cert.der().clone();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_no_client_auth()
            .with_single_cert(vec![cert], key)
            .map_err(|e| format!("serving certificate: {e}"))?;
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Tls {
            cert_pem: ck.cert.pem(),
            acceptor: TlsAcceptor::from(Arc::new(config)),
        })
    }
}

/// Whether the client chose HTTP/2 in the handshake (ALPN `h2`).
pub(crate) fn negotiated_h2(s: &tokio_rustls::server::TlsStream<TcpStream>) -> bool {
    s.get_ref().1.alpn_protocol() == Some(b"h2")
}

/// Whether a connection starts with a TLS handshake record (waits for its first byte).
pub(crate) async fn starts_tls(stream: &TcpStream) -> bool {
    let mut first = [0u8; 1];
    matches!(stream.peek(&mut first).await, Ok(1) if first[0] == 0x16)
}
