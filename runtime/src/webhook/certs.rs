//! [`generate_self_signed`]: a throwaway CA and a serving certificate signed by it
//! (rcgen), written as `tls.crt` / `tls.key` (and `ca.crt`) into a cert dir — what
//! tests, ctrl-envtest and the examples serve webhooks with. The CA goes into a
//! webhook configuration's `caBundle`. [`new_ca`] and [`new_serving_cert`] are the
//! two steps, which the cert rotator (the in-cluster CA kept in a Secret) uses
//! too.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

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

/// When a certificate is valid: `not_before..not_after` (rcgen's default, 1975..4096,
/// when not given).
#[derive(Clone, Copy, Debug)]
pub struct Validity {
    /// The first instant it is valid.
    pub not_before: SystemTime,
    /// The last instant it is valid.
    pub not_after: SystemTime,
}

impl Validity {
    fn apply(validity: Option<Validity>, params: &mut CertificateParams) {
        if let Some(v) = validity {
            params.not_before = v.not_before.into();
            params.not_after = v.not_after.into();
        }
    }
}

/// A new self-signed CA named `common_name` (and `organization`, if not empty): its
/// certificate (PEM), its key (PEM, PKCS#8) and the issuer that signs with it.
pub fn new_ca(
    common_name: &str,
    organization: &str,
    validity: Option<Validity>,
) -> Result<(String, String, Issuer<'static, KeyPair>), rcgen::Error> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    if !organization.is_empty() {
        params
            .distinguished_name
            .push(DnType::OrganizationName, organization);
    }
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::CrlSign,
    ];
    Validity::apply(validity, &mut params);
    let key = KeyPair::generate()?;
    let cert = params.self_signed(&key)?;
    let key_pem = key.serialize_pem();
    Ok((cert.pem(), key_pem, Issuer::new(params, key)))
}

/// A new serving certificate for `hosts` (DNS names or IP addresses; the first is the
/// common name) signed by `issuer`: the certificate and its key, PEM.
pub fn new_serving_cert(
    issuer: &Issuer<'_, KeyPair>,
    hosts: &[String],
    validity: Option<Validity>,
) -> Result<(String, String), rcgen::Error> {
    let mut params = CertificateParams::new(hosts.to_vec())?;
    let cn = hosts.first().map_or("ctrl webhook server", String::as_str);
    params.distinguished_name.push(DnType::CommonName, cn);
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    Validity::apply(validity, &mut params);
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, issuer)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Generates a CA and a serving certificate for `hosts` (DNS names or IP addresses;
/// default `localhost` and `127.0.0.1`) and writes `ca.crt`, `tls.crt` and
/// `tls.key` into `dir` (created if needed; files replaced atomically by rename).
pub fn generate_self_signed(dir: &Path, hosts: &[&str]) -> Result<SelfSignedCerts, CertError> {
    let (ca_pem, _, issuer) = new_ca("ctrl webhook test CA", "", None)?;
    let hosts: Vec<String> = if hosts.is_empty() {
        vec!["localhost".into(), "127.0.0.1".into()]
    } else {
        hosts.iter().map(|h| h.to_string()).collect()
    };
    let (cert_pem, key_pem) = new_serving_cert(&issuer, &hosts, None)?;
    let out = SelfSignedCerts {
        dir: dir.to_path_buf(),
        ca_pem,
        cert_pem,
        key_pem,
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

/// Writes `data` to `path` through a temporary file in the same directory and a rename,
/// so that a reader sees the old or the new content, never a part.
pub fn write_atomic(path: &Path, data: &str) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp-{}", uuid::Uuid::new_v4()));
    std::fs::write(&tmp, data)?;
    std::fs::rename(&tmp, path)
}
