//! TLS connections to the environment's HTTPS port with a chosen ALPN list, and an HTTP/2
//! connection over one (as client-go holds one to kube-apiserver).

use std::sync::Arc;

#[cfg(feature = "http2")]
use bytes::Bytes;
use ctrl_envtest::Environment;
#[cfg(feature = "http2")]
use http_body_util::Full;
#[cfg(feature = "http2")]
use hyper::client::conn::http2::SendRequest;
#[cfg(feature = "http2")]
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

/// A TLS stream trusting the environment's CA, offering `alpn`; and the protocol the server
/// picked.
pub async fn connect(
    env: &Environment,
    alpn: &[&[u8]],
) -> (
    tokio_rustls::client::TlsStream<tokio::net::TcpStream>,
    Option<Vec<u8>>,
) {
    let s = try_connect(env, alpn).await.expect("TLS handshake");
    let picked = s.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    (s, picked)
}

/// [`connect`]'s TLS stream, or the handshake's error.
pub async fn try_connect(
    env: &Environment,
    alpn: &[&[u8]],
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    let ca = CertificateDer::from_pem_slice(env.ca_pem().as_bytes()).expect("the CA");
    roots.add(ca).expect("a root");
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = tokio::net::TcpStream::connect(env.addr())
        .await
        .expect("tcp");
    // As Go's net package does: an h2 request is a HEADERS and a DATA write, which Nagle
    // would hold until the first is acknowledged (a delayed ACK, ~40 ms).
    tcp.set_nodelay(true).expect("nodelay");
    let name = ServerName::try_from("127.0.0.1").expect("a name");
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
}

/// One HTTP/2 connection (ALPN `h2` offered with `http/1.1`, and asserted picked; the `http2`
/// feature).
#[cfg(feature = "http2")]
pub async fn h2(env: &Environment) -> SendRequest<Full<Bytes>> {
    let (io, alpn) = connect(env, &[b"h2", b"http/1.1"]).await;
    assert_eq!(alpn.as_deref(), Some(&b"h2"[..]), "the server picks h2");
    let (send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
            .await
            .expect("h2 handshake");
    tokio::spawn(conn);
    send
}
