//! X.509 client-certificate authentication (kube-apiserver's
//! `apiserver/pkg/authentication/request/x509`, `CommonNameUserConversion`): a client that
//! presents a certificate signed by the server's client CA (verified during the TLS handshake,
//! `crate::tls`) is the user of its subject's Common Name, in the groups of its Organizations
//! (plus `system:authenticated`). The admin kubeconfig carries such a certificate (CN `admin`,
//! O `system:masters`), as Go envtest's does; `Environment::add_user_certificate` issues more.
//! The subject comes from the certificate authority that issued the certificate (`crate::tls`
//! remembers each one's), not from parsing it: the CA's key never leaves the process, so no
//! other certificate passes the handshake.

use super::{AUTHENTICATED, UserInfo};

/// The user of a verified client certificate whose subject has Common Name `name` and
/// Organizations `organizations`; `None` when it names no Common Name (upstream refuses such a
/// certificate: 401).
pub(crate) fn user_of(name: String, organizations: Vec<String>) -> Option<UserInfo> {
    if name.is_empty() {
        return None;
    }
    let mut groups = organizations;
    if !groups.iter().any(|g| g == AUTHENTICATED) {
        groups.push(AUTHENTICATED.to_string());
    }
    Some(UserInfo::new(name, groups))
}
