//! Go's acceptance of a webhook serving certificate that is its own `caBundle` (feature
//! `x509`, which compiles x509-parser to read the certificate): [`GoVerifier`] falls back to it
//! when webpki's chain verification fails. Without the feature a webhook called with such a
//! bundle fails its TLS handshake, as webpki fails it; a bundle holding a CA (what
//! `ctrl::cli::envtest::LocalWebhooks`, the cert rotator and cert-manager give) verifies either way.

use std::sync::Arc;

use base64::Engine;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};

/// The certificates of a `caBundle`, as DER.
pub(super) fn roots_der(ca_bundle: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let pem = base64::engine::general_purpose::STANDARD
        .decode(ca_bundle.trim())
        .map_err(|e| format!("caBundle is not base64: {e}"))?;
    CertificateDer::pem_slice_iter(&pem)
        .map(|c| c.map_err(|e| format!("caBundle: {e}")))
        .collect()
}

/// Verifies a webhook's serving certificate as kube-apiserver (Go's `crypto/x509`) does:
/// a chain to the `caBundle` (webpki's verification), or — what webpki refuses and Go
/// accepts — a certificate that is itself in the `caBundle` (Go's `Verify` takes a leaf found
/// in the root pool as a chain of one: a self-signed serving certificate given as its own
/// `caBundle`, CA flag or not). Such a certificate must still be within its validity period,
/// name the host (its subject alternative names, as Go since 1.15) and allow server
/// authentication (no extended key usage, or `serverAuth` / any).
#[derive(Debug)]
pub(super) struct GoVerifier {
    webpki: Arc<rustls::client::WebPkiServerVerifier>,
    anchors: Vec<CertificateDer<'static>>,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl GoVerifier {
    /// webpki's verification, then the leaf found among `anchors` (the bundle's certificates).
    pub(super) fn new(
        webpki: Arc<rustls::client::WebPkiServerVerifier>,
        anchors: Vec<CertificateDer<'static>>,
        algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
    ) -> Self {
        Self {
            webpki,
            anchors,
            algorithms,
        }
    }
}

impl rustls::client::danger::ServerCertVerifier for GoVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        let err =
            match self
                .webpki
                .verify_server_cert(end_entity, intermediates, server_name, ocsp, now)
            {
                Ok(v) => return Ok(v),
                Err(e) => e,
            };
        if !self
            .anchors
            .iter()
            .any(|a| a.as_ref() == end_entity.as_ref())
        {
            return Err(err);
        }
        pinned_valid(end_entity, server_name, now.as_secs())
            .map(|()| rustls::client::danger::ServerCertVerified::assertion())
            .map_err(|why| {
                rustls::Error::InvalidCertificate(rustls::CertificateError::Other(
                    rustls::OtherError(Arc::new(std::io::Error::other(why))),
                ))
            })
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Go's checks of a leaf that is its own root: validity period, host name, key usage.
fn pinned_valid(der: &[u8], server: &ServerName<'_>, now: u64) -> Result<(), String> {
    use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};
    let (_, cert) = X509Certificate::from_der(der).map_err(|e| format!("x509: {e}"))?;
    let now = i64::try_from(now).unwrap_or(i64::MAX);
    let v = cert.validity();
    if now < v.not_before.timestamp() || now > v.not_after.timestamp() {
        return Err("x509: certificate has expired or is not yet valid".into());
    }
    if let Ok(Some(eku)) = cert.extended_key_usage()
        && !(eku.value.any || eku.value.server_auth)
    {
        return Err("x509: certificate specifies an incompatible key usage".into());
    }
    let names = cert
        .subject_alternative_name()
        .ok()
        .flatten()
        .map(|s| s.value.general_names.clone())
        .unwrap_or_default();
    let ok = match server {
        ServerName::IpAddress(ip) => {
            let ip = std::net::IpAddr::from(*ip);
            names.iter().any(|n| match n {
                GeneralName::IPAddress(b) => match b.len() {
                    4 => <[u8; 4]>::try_from(*b).is_ok_and(|o| ip == std::net::IpAddr::from(o)),
                    16 => <[u8; 16]>::try_from(*b).is_ok_and(|o| ip == std::net::IpAddr::from(o)),
                    _ => false,
                },
                _ => false,
            })
        }
        ServerName::DnsName(d) => names.iter().any(|n| match n {
            GeneralName::DNSName(pattern) => dns_matches(pattern, d.as_ref()),
            _ => false,
        }),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err(format!("x509: certificate is not valid for {server:?}"))
    }
}

/// Go's `matchHostnames`: case-insensitive, a leading `*.` matches one label.
fn dns_matches(pattern: &str, host: &str) -> bool {
    let (p, h) = (pattern.to_ascii_lowercase(), host.to_ascii_lowercase());
    let h = h.trim_end_matches('.');
    match p.strip_prefix("*.") {
        Some(rest) => h
            .split_once('.')
            .is_some_and(|(first, tail)| !first.is_empty() && tail == rest),
        None => p.trim_end_matches('.') == h,
    }
}
