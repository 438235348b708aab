//! X.509 client-certificate authentication (kube-apiserver's
//! `apiserver/pkg/authentication/request/x509`, `CommonNameUserConversion`): a client that
//! presents a certificate signed by the server's client CA (verified during the TLS handshake,
//! `crate::tls`) is the user of its subject's Common Name, in the groups of its Organizations
//! (plus `system:authenticated`). The admin kubeconfig carries such a certificate (CN `admin`,
//! O `system:masters`), as Go envtest's does; `Environment::add_user_certificate` issues more.

use x509_parser::prelude::{FromDer, X509Certificate};

use super::{AUTHENTICATED, UserInfo};

/// The user of a verified client certificate (DER), `None` when it names no Common Name
/// (upstream refuses such a certificate: 401).
pub(crate) fn user_of(der: &[u8]) -> Option<UserInfo> {
    let (_, cert) = X509Certificate::from_der(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()?
        .as_str()
        .ok()?
        .to_string();
    if name.is_empty() {
        return None;
    }
    let mut groups: Vec<String> = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    if !groups.iter().any(|g| g == AUTHENTICATED) {
        groups.push(AUTHENTICATED.to_string());
    }
    Some(UserInfo::new(name, groups))
}
