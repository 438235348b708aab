//! The accept step of a TLS server: a connection that opens with plain HTTP gets Go's
//! `400` ("Client sent an HTTP request to an HTTPS server.") and is closed; anything
//! else goes through the rustls handshake, bounded by a timeout. Garbage and failed
//! handshakes are logged at debug level and cost the server nothing.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// Go's answer to plain HTTP on a TLS port.
const PLAIN_HTTP_REPLY: &[u8] =
    b"HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n";

/// Accepts one TLS connection for the server `kind`, or `None` (answered, garbage, or
/// a handshake that failed or did not finish within `timeout`).
pub(crate) async fn accept(
    mut stream: TcpStream,
    peer: SocketAddr,
    acceptor: &TlsAcceptor,
    timeout: Duration,
    kind: &str,
) -> Option<TlsStream<TcpStream>> {
    // A TLS connection opens with a handshake record (0x16); an ASCII letter is plain HTTP.
    let mut first = [0u8; 1];
    match tokio::time::timeout(timeout, stream.peek(&mut first)).await {
        Ok(Ok(1)) if first[0].is_ascii_alphabetic() => {
            tracing::debug!(%peer, server = kind, "plain HTTP request to a TLS port");
            let _ = stream.write_all(PLAIN_HTTP_REPLY).await;
            let _ = stream.shutdown().await;
            return None;
        }
        Ok(Ok(n)) if n > 0 => {}
        _ => return None,
    }
    match tokio::time::timeout(timeout, acceptor.accept(stream)).await {
        Ok(Ok(t)) => Some(t),
        Ok(Err(error)) => {
            tracing::debug!(%peer, server = kind, %error, "TLS handshake failed");
            None
        }
        Err(_) => {
            tracing::debug!(%peer, server = kind, "TLS handshake timed out");
            None
        }
    }
}

/// Whether the connection negotiated HTTP/2 by ALPN (only then is it served as h2:
/// a client that did not negotiate it cannot switch to it with a preface).
pub(crate) fn negotiated_h2(tls: &TlsStream<TcpStream>) -> bool {
    tls.get_ref().1.alpn_protocol() == Some(super::ALPN_H2)
}
