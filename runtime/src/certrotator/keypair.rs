//! The certificate material a [`CertRotator`](super::CertRotator) keeps in its Secret, under
//! cert-controller's keys (`ca.crt`, `ca.key`, and the serving pair, `tls.crt` / `tls.key` by
//! default), how a new CA or serving certificate is made, and when the stored ones are still
//! good (cert-controller's `refreshCertIfNeeded`, `validCACert`, `validServerCert` and
//! `ValidCert` in `pkg/rotator/rotator.go`).
//!
//! Two differences from upstream, both for rotations without a failed call:
//! - `ca.crt` is a bundle: the signing CA first, then the CA it replaced while that one is
//!   still valid. The whole bundle is what is injected as `caBundle`, so an API server that
//!   already has the new bundle still trusts a replica serving a certificate of the old CA.
//! - A serving certificate must name every host the rotator was given (upstream checks the
//!   first only), so adding a DNS name re-issues it.
//!
//! Keys are ECDSA P-256 (rcgen's default), not upstream's RSA 2048.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::ByteString;
use rcgen::{Issuer, KeyPair, PublicKeyData};
use x509_parser::certificate::X509Certificate;
use x509_parser::extensions::GeneralName;
use x509_parser::pem::Pem;

use crate::certwatcher;
use crate::webhook::certs::{self, Validity};

/// The Secret key of the CA bundle (cert-controller's `caCertName`).
pub const CA_CERT_KEY: &str = "ca.crt";
/// The Secret key of the CA's private key (cert-controller's `caKeyName`).
pub const CA_KEY_KEY: &str = "ca.key";

/// How far back a new certificate's validity starts, for clocks behind ours (upstream's
/// `now.Add(-1 * time.Hour)`).
const BACKDATE: Duration = Duration::from_secs(3600);

/// The four PEM documents of the Secret.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Artifacts {
    /// The signing CA, then the CAs it replaced that are still valid.
    pub ca_bundle: String,
    /// The signing CA's key.
    pub ca_key: String,
    /// The serving certificate.
    pub cert: String,
    /// The serving key.
    pub key: String,
}

/// What a Secret's data needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rotation {
    /// Nothing: the CA and the serving certificate are good past the look-ahead.
    None,
    /// A new serving certificate from the current CA.
    ServerCert,
    /// A new CA, and a serving certificate from it.
    Ca,
}

/// What decides what is made and what is still good: the rotator's options.
#[derive(Clone, Copy, Debug)]
pub(super) struct Policy<'a> {
    pub ca_name: &'a str,
    pub ca_organization: &'a str,
    pub hosts: &'a [String],
    pub ca_validity: Duration,
    pub server_validity: Duration,
    pub lookahead: Duration,
}

impl Artifacts {
    /// The material in a Secret's data; missing keys read as empty.
    pub fn from_data(data: &BTreeMap<String, ByteString>, cert_name: &str, key_name: &str) -> Self {
        let get = |k: &str| {
            data.get(k)
                .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                .unwrap_or_default()
        };
        Self {
            ca_bundle: get(CA_CERT_KEY),
            ca_key: get(CA_KEY_KEY),
            cert: get(cert_name),
            key: get(key_name),
        }
    }

    /// Writes the material into a Secret's data, keeping its other keys.
    pub fn write_into(
        &self,
        data: &mut BTreeMap<String, ByteString>,
        cert_name: &str,
        key_name: &str,
    ) {
        for (k, v) in [
            (CA_CERT_KEY, &self.ca_bundle),
            (CA_KEY_KEY, &self.ca_key),
            (cert_name, &self.cert),
            (key_name, &self.key),
        ] {
            data.insert(k.to_string(), ByteString(v.clone().into_bytes()));
        }
    }

    /// What these need at `now`: a CA that is not valid until `now + lookahead` (or
    /// whose key is not its own) needs a new CA; a serving certificate not signed by it,
    /// not valid until then, not naming every host, or not matching its key needs a new
    /// serving certificate.
    pub fn needs(&self, p: &Policy<'_>, now: SystemTime) -> Rotation {
        let at = now + p.lookahead;
        if let Err(why) = valid_ca(&self.ca_bundle, &self.ca_key, now, at) {
            tracing::info!(reason = %why, "the CA needs refreshing");
            return Rotation::Ca;
        }
        if let Err(why) = self.valid_server(p.hosts, now, at) {
            tracing::info!(reason = %why, "the serving certificate needs refreshing");
            return Rotation::ServerCert;
        }
        Rotation::None
    }

    /// New material for `what` (at least a new serving certificate): a new CA heads the
    /// bundle, followed by the signing CA it replaces if that one is still valid.
    pub fn rotated(
        &self,
        what: Rotation,
        p: &Policy<'_>,
        now: SystemTime,
    ) -> Result<Self, rcgen::Error> {
        let begin = now.checked_sub(BACKDATE).unwrap_or(UNIX_EPOCH);
        let (ca_bundle, ca_key, issuer) = if what == Rotation::Ca {
            let validity = Validity {
                not_before: begin,
                not_after: now + p.ca_validity,
            };
            let (pem, key, issuer) = certs::new_ca(p.ca_name, p.ca_organization, Some(validity))?;
            let bundle = match self.signing_ca_pem().filter(|old| still_valid(old, now)) {
                Some(old) => format!("{pem}{old}"),
                None => pem,
            };
            (bundle, key, issuer)
        } else {
            let key = KeyPair::from_pem(&self.ca_key)?;
            let signing = self
                .signing_ca_pem()
                .ok_or(rcgen::Error::CouldNotParseCertificate)?;
            let issuer = Issuer::from_ca_cert_pem(&signing, key)?;
            (self.ca_bundle.clone(), self.ca_key.clone(), issuer)
        };
        let validity = Validity {
            not_before: begin,
            not_after: now + p.server_validity,
        };
        let (cert, key) = certs::new_serving_cert(&issuer, p.hosts, Some(validity))?;
        Ok(Self {
            ca_bundle,
            ca_key,
            cert,
            key,
        })
    }

    /// The first certificate of the bundle, re-encoded as PEM.
    fn signing_ca_pem(&self) -> Option<String> {
        let der = first_der(&self.ca_bundle)?;
        Some(pem_of(&der))
    }

    fn valid_server(
        &self,
        hosts: &[String],
        now: SystemTime,
        at: SystemTime,
    ) -> Result<(), String> {
        certwatcher::parse_key_pair(
            self.cert.as_bytes(),
            self.key.as_bytes(),
            Path::new("tls.crt"),
            Path::new("tls.key"),
        )
        .map_err(|e| e.to_string())?;
        let ca_der = first_der(&self.ca_bundle).ok_or("no CA certificate")?;
        let ca = parse(&ca_der)?;
        let leaf_der = first_der(&self.cert).ok_or("no serving certificate")?;
        let leaf = parse(&leaf_der)?;
        leaf.verify_signature(Some(ca.public_key()))
            .map_err(|e| format!("not signed by the CA: {e}"))?;
        valid_between(&leaf, now, at)?;
        match hosts.iter().find(|h| !names(&leaf, h)) {
            Some(h) => Err(format!("does not name {h}")),
            None => Ok(()),
        }
    }
}

/// The CA heading `bundle` is a CA, valid from `now` to `at`, and `key` is its key.
fn valid_ca(bundle: &str, key: &str, now: SystemTime, at: SystemTime) -> Result<(), String> {
    let der = first_der(bundle).ok_or("no CA certificate")?;
    let ca = parse(&der)?;
    if !ca.is_ca() {
        return Err("not a CA".into());
    }
    valid_between(&ca, now, at)?;
    let key = KeyPair::from_pem(key).map_err(|e| format!("CA key: {e}"))?;
    if key.subject_public_key_info() != ca.public_key().raw {
        return Err("the CA key is not the CA certificate's".into());
    }
    Ok(())
}

fn still_valid(pem: &str, now: SystemTime) -> bool {
    first_der(pem).is_some_and(|der| parse(&der).is_ok_and(|c| valid_between(&c, now, now).is_ok()))
}

fn valid_between(c: &X509Certificate<'_>, now: SystemTime, at: SystemTime) -> Result<(), String> {
    let v = c.validity();
    if v.not_before.timestamp() > unix(now) {
        return Err("not valid yet".into());
    }
    if v.not_after.timestamp() <= unix(at) {
        return Err(format!("expires at {}", v.not_after));
    }
    Ok(())
}

/// Whether the certificate's subject alternative names include `host` (a DNS name or an
/// IP address).
fn names(c: &X509Certificate<'_>, host: &str) -> bool {
    let Ok(Some(san)) = c.subject_alternative_name() else {
        return false;
    };
    let ip: Option<IpAddr> = host.parse().ok();
    san.value.general_names.iter().any(|n| match (n, ip) {
        (GeneralName::DNSName(d), None) => d.eq_ignore_ascii_case(host),
        (GeneralName::IPAddress(b), Some(IpAddr::V4(v4))) => *b == v4.octets(),
        (GeneralName::IPAddress(b), Some(IpAddr::V6(v6))) => *b == v6.octets(),
        _ => false,
    })
}

fn first_der(pem: &str) -> Option<Vec<u8>> {
    Pem::iter_from_buffer(pem.as_bytes())
        .filter_map(Result::ok)
        .find(|p| p.label == "CERTIFICATE")
        .map(|p| p.contents)
}

fn parse(der: &[u8]) -> Result<X509Certificate<'_>, String> {
    x509_parser::parse_x509_certificate(der)
        .map(|(_, c)| c)
        .map_err(|e| format!("parsing a certificate: {e}"))
}

fn pem_of(der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
}

fn unix(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ders(pem: &str) -> Vec<Vec<u8>> {
        Pem::iter_from_buffer(pem.as_bytes())
            .map(|p| p.unwrap().contents)
            .collect()
    }

    const DAY: Duration = Duration::from_secs(86_400);

    fn policy(hosts: &[String]) -> Policy<'_> {
        Policy {
            ca_name: "test-ca",
            ca_organization: "ctrl",
            hosts,
            ca_validity: 3650 * DAY,
            server_validity: 365 * DAY,
            lookahead: 90 * DAY,
        }
    }

    #[test]
    fn empty_material_needs_a_ca_and_a_fresh_one_needs_nothing() {
        let hosts = vec!["svc.ns.svc".to_string(), "127.0.0.1".to_string()];
        let p = policy(&hosts);
        let now = SystemTime::now();
        let empty = Artifacts::default();
        assert_eq!(empty.needs(&p, now), Rotation::Ca);
        let fresh = empty.rotated(Rotation::Ca, &p, now).unwrap();
        assert_eq!(fresh.needs(&p, now), Rotation::None);
        // Within the look-ahead of the serving certificate's end: a new serving cert.
        assert_eq!(fresh.needs(&p, now + 300 * DAY), Rotation::ServerCert);
        // Within the look-ahead of the CA's end: a new CA.
        assert_eq!(fresh.needs(&p, now + 3600 * DAY), Rotation::Ca);
        // A host added: a new serving certificate.
        let more = vec!["other.ns.svc".to_string()];
        assert_eq!(fresh.needs(&policy(&more), now), Rotation::ServerCert);
    }

    #[test]
    fn a_new_ca_keeps_the_old_one_in_the_bundle_and_a_server_rotation_keeps_the_ca() {
        let hosts = vec!["svc.ns.svc".to_string()];
        let p = policy(&hosts);
        let now = SystemTime::now();
        let first = Artifacts::default().rotated(Rotation::Ca, &p, now).unwrap();
        let server = first.rotated(Rotation::ServerCert, &p, now).unwrap();
        assert_eq!(server.ca_bundle, first.ca_bundle);
        assert_ne!(server.cert, first.cert);
        assert_eq!(server.needs(&p, now), Rotation::None);
        let second = server.rotated(Rotation::Ca, &p, now).unwrap();
        assert_eq!(ders(&second.ca_bundle)[1..], ders(&first.ca_bundle)[..]);
        assert_eq!(second.needs(&p, now), Rotation::None);
        // The old serving certificate does not chain to the new signing CA.
        let mixed = Artifacts {
            cert: first.cert.clone(),
            key: first.key.clone(),
            ..second.clone()
        };
        assert_eq!(mixed.needs(&p, now), Rotation::ServerCert);
        // A third CA drops the first: only the CA it replaces stays.
        let third = mixed.rotated(Rotation::Ca, &p, now).unwrap();
        let third_ders = ders(&third.ca_bundle);
        assert_eq!(third_ders.len(), 2);
        assert_eq!(third_ders[1], ders(&second.ca_bundle)[0]);
    }
}
