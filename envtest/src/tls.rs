//! HTTPS on the same port as plain HTTP: the server looks at a connection's first byte and
//! speaks TLS when it is a handshake. kubectl (client-go) sends a kubeconfig's credentials
//! only over TLS, so the kubeconfigs the environment writes say `https://` and carry this
//! server's CA certificate (the serving certificate is for `127.0.0.1` and `localhost`) as their
//! `certificate-authority-data`; kube clients and raw test requests may keep using plain
//! HTTP. The certificate is signed by a CA of the environment, which also signs client
//! certificates (X.509 client authentication, `auth::x509`), and remembers the subject of each
//! one it signs. TLS offers ALPN `h2` and `http/1.1`, as kube-apiserver does (client-go then
//! multiplexes every request and watch over one HTTP/2 connection), with the `http2` feature;
//! without it only `http/1.1`. Plain HTTP is HTTP/1.1.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

/// The serving certificate, the client CA and the acceptor built on them.
pub(crate) struct Tls {
    /// The CA certificate, PEM: clients trust it, and it signs the serving certificate and the
    /// client certificates ([`Tls::issue_client`]).
    pub cert_pem: String,
    pub acceptor: TlsAcceptor,
    ca: Issuer<'static, KeyPair>,
    /// The subject (Common Name, Organizations) of every client certificate the CA signed, by
    /// the certificate's DER ([`Tls::client_subject`]).
    issued: Mutex<HashMap<Vec<u8>, Subject>>,
}

/// A client certificate's subject: its Common Name and its Organizations.
pub(crate) type Subject = (String, Vec<String>);

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls").finish_non_exhaustive()
    }
}

fn err(what: &str) -> impl Fn(rcgen::Error) -> String + '_ {
    move |e| format!("{what}: {e}")
}

impl Tls {
    /// A fresh CA, and a serving certificate it signs for `127.0.0.1` and `localhost`. Client
    /// certificates are asked for, not required: one signed by the CA authenticates its
    /// subject (`auth::x509`), none leaves bearer tokens to decide (kube-apiserver's
    /// `--client-ca-file`).
    pub fn self_signed() -> Result<Tls, String> {
        let ca_key = KeyPair::generate().map_err(err("CA key"))?;
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).map_err(err("CA"))?;
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "ctrl-envtest-ca");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::CrlSign,
        ];
        let ca_cert = ca_params.self_signed(&ca_key).map_err(err("CA"))?;
        let ca = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate().map_err(err("serving key"))?;
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .map_err(err("serving certificate"))?;
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        let cert = params
            .signed_by(&key, &ca)
            .map_err(err("serving certificate"))?;
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(ca_cert.der().clone())
            .map_err(|e| format!("client CA: {e}"))?;
        let clients =
            WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .allow_unauthenticated()
                .build()
                .map_err(|e| format!("client CA: {e}"))?;
        let serving: CertificateDer<'static> = cert.der().clone();
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_client_cert_verifier(clients)
            .with_single_cert(vec![serving], key)
            .map_err(|e| format!("serving certificate: {e}"))?;
        config.alpn_protocols = alpn();
        Ok(Tls {
            cert_pem: ca_cert.pem(),
            acceptor: TlsAcceptor::from(Arc::new(config)),
            ca,
            issued: Mutex::new(HashMap::new()),
        })
    }

    /// A client certificate signed by the CA for user `name` in `groups` (subject CN and O):
    /// (certificate PEM, key PEM). The first two groups are written (rcgen keeps one value per
    /// attribute type; the second goes in under the Organization OID as a custom type).
    pub fn issue_client(&self, name: &str, groups: &[&str]) -> Result<(String, String), String> {
        let key = KeyPair::generate().map_err(err("client key"))?;
        let mut params = CertificateParams::new(Vec::<String>::new()).map_err(err("client"))?;
        params.distinguished_name.push(DnType::CommonName, name);
        if let Some(g) = groups.first() {
            params.distinguished_name.push(DnType::OrganizationName, *g);
        }
        if let Some(g) = groups.get(1) {
            params
                .distinguished_name
                .push(DnType::CustomDnType(vec![2, 5, 4, 10]), *g);
        }
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        let cert = params
            .signed_by(&key, &self.ca)
            .map_err(err("client certificate"))?;
        let written = groups.iter().take(2).map(|g| g.to_string()).collect();
        self.issued
            .lock()
            .insert(cert.der().to_vec(), (name.to_string(), written));
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// The subject [`Tls::issue_client`] wrote into the client certificate `der`, `None` for a
    /// certificate the CA did not sign here. The CA's key never leaves this value, so every
    /// client certificate the handshake verified was issued by `issue_client`: its subject is
    /// looked up, not parsed (which keeps an X.509 parser out of the build).
    pub(crate) fn client_subject(&self, der: &[u8]) -> Option<Subject> {
        self.issued.lock().get(der).cloned()
    }
}

/// The protocols ALPN offers: `h2` then `http/1.1` with the `http2` feature, else only
/// `http/1.1` (a client offering both then gets HTTP/1.1; one offering only `h2` a handshake
/// error, as rustls answers).
fn alpn() -> Vec<Vec<u8>> {
    let mut protocols = vec![b"http/1.1".to_vec()];
    if cfg!(feature = "http2") {
        protocols.insert(0, b"h2".to_vec());
    }
    protocols
}

/// Whether the client chose HTTP/2 in the handshake (ALPN `h2`).
#[cfg(feature = "http2")]
pub(crate) fn negotiated_h2(s: &tokio_rustls::server::TlsStream<TcpStream>) -> bool {
    s.get_ref().1.alpn_protocol() == Some(b"h2")
}

/// Whether a connection starts with a TLS handshake record (waits for its first byte).
pub(crate) async fn starts_tls(stream: &TcpStream) -> bool {
    let mut first = [0u8; 1];
    matches!(stream.peek(&mut first).await, Ok(1) if first[0] == 0x16)
}
