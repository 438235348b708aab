//! [`generate_self_signed`]: a throwaway CA and a serving certificate signed by it
//! (rcgen), written as `tls.crt` / `tls.key` (and `ca.crt`) into a cert dir — what
//! tests, ctrl-envtest and the examples serve webhooks with. The CA goes into a
//! webhook configuration's `caBundle`; production gets its certificates from
//! cert-manager instead.

use std::path::{Path, PathBuf};

use crate::certwatcher::{DEFAULT_CERT_NAME, DEFAULT_KEY_NAME};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// The CA file name [`generate_self_signed`] writes.
pub const CA_CERT_NAME: &str = "ca.crt";

/// What [`generate_self_signed`] produced.
#[derive(Clone, Debug)]
pub struct SelfSignedCerts {
    /// The directory holding the files.
    pub dir: PathBuf,
    /// The CA certificate, PEM (for `caBundle` and clients).
    pub ca_pem: String,
    /// The serving certificate, PEM.
    pub cert_pem: String,
    /// The serving key, PEM.
    pub key_pem: String,
}

/// Why generating certificates failed.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// rcgen failed.
    #[error("generating certificates: {0}")]
    Generate(#[from] rcgen::Error),
    /// Writing the files failed.
    #[error("writing certificates: {0}")]
    Io(#[from] std::io::Error),
}

/// Generates a CA and a serving certificate for `hosts` (DNS names or IP addresses;
/// default `localhost` and `127.0.0.1`) and writes `ca.crt`, `tls.crt` and
/// `tls.key` into `dir` (created if needed; files replaced atomically by rename).
pub fn generate_self_signed(dir: &Path, hosts: &[&str]) -> Result<SelfSignedCerts, CertError> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "ctrl webhook test CA");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::CrlSign,
    ];
    let ca_key = KeyPair::generate()?;
    let ca_cert = ca_params.self_signed(&ca_key)?;
    let issuer = Issuer::new(ca_params, ca_key);

    let hosts: Vec<String> = if hosts.is_empty() {
        vec!["localhost".into(), "127.0.0.1".into()]
    } else {
        hosts.iter().map(|h| h.to_string()).collect()
    };
    let mut params = CertificateParams::new(hosts)?;
    params
        .distinguished_name
        .push(DnType::CommonName, "ctrl webhook server");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;

    let out = SelfSignedCerts {
        dir: dir.to_path_buf(),
        ca_pem: ca_cert.pem(),
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    };
    std::fs::create_dir_all(dir)?;
    write_atomic(&dir.join(CA_CERT_NAME), &out.ca_pem)?;
    write_atomic(&dir.join(DEFAULT_KEY_NAME), &out.key_pem)?;
    write_atomic(&dir.join(DEFAULT_CERT_NAME), &out.cert_pem)?;
    Ok(out)
}

/// A fresh directory under the system temp dir for [`generate_self_signed`].
pub fn temp_cert_dir() -> std::io::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("ctrl-webhook-certs-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir)?;
    Ok(dir)
}

fn write_atomic(path: &Path, data: &str) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", uuid::Uuid::new_v4()));
    std::fs::write(&tmp, data)?;
    std::fs::rename(&tmp, path)
}
