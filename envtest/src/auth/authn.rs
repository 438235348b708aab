//! Authentication by bearer token (kube-apiserver's token-file and service-account
//! authenticators): the admin token of the environment (user `admin` in `system:masters`,
//! as Go's envtest), tokens of users added at run time (`Environment::add_user`), and
//! ServiceAccount tokens ([`super::token`]) — accepted while unexpired, carrying an audience
//! of this server, and while their ServiceAccount exists with the uid it had when the token was
//! issued (a deleted or re-created ServiceAccount's tokens are refused). Requests without
//! credentials are anonymous; the server refuses them (401) except where upstream's
//! `system:public-info-viewer` lets anyone read.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::Value;

use super::token::{self, Claims, Signer};
use super::{ADMIN_USER, AUTHENTICATED, MASTERS, UserInfo};
use crate::storage::Store;

/// The extra key upstream records a ServiceAccount token's id under.
const CREDENTIAL_ID: &str = "authentication.kubernetes.io/credential-id";

/// Knows every token this server accepts.
pub(crate) struct Authenticator {
    admin_token: String,
    /// The admin user, built once: every request of the admin shares it.
    admin: Arc<UserInfo>,
    users: RwLock<HashMap<String, Arc<UserInfo>>>,
    pub signer: Signer,
    store: Arc<Store>,
}

impl Authenticator {
    pub fn new(admin_token: String, store: Arc<Store>) -> Self {
        Authenticator {
            admin_token,
            admin: Arc::new(UserInfo::new(
                ADMIN_USER,
                vec![MASTERS.into(), AUTHENTICATED.into()],
            )),
            users: RwLock::new(HashMap::new()),
            signer: Signer::new(),
            store,
        }
    }

    /// The admin user's bearer token.
    pub fn admin_token(&self) -> &str {
        &self.admin_token
    }

    /// Adds a user with these groups (plus `system:authenticated`) and returns its new
    /// bearer token. Adding a name again gives it another token; the old one stays valid.
    pub fn add_user(&self, name: &str, groups: &[String]) -> String {
        let token = random_token();
        let mut groups = groups.to_vec();
        if !groups.iter().any(|g| g == AUTHENTICATED) {
            groups.push(AUTHENTICATED.to_string());
        }
        self.users
            .write()
            .insert(token.clone(), Arc::new(UserInfo::new(name, groups)));
        token
    }

    /// The user of an `Authorization` header: `Ok(None)` without one (anonymous), `Err(())`
    /// when it is not a bearer token this server accepts (401).
    pub fn authenticate(&self, authorization: Option<&str>) -> Result<Option<Arc<UserInfo>>, ()> {
        let Some(h) = authorization else {
            return Ok(None);
        };
        let token = bearer_token(h).ok_or(())?;
        let user = match self.static_user(token) {
            Some(u) => Some(u),
            None => self.account_user(token, &[]).map(|(u, _)| Arc::new(u)),
        };
        user.map(Some).ok_or(())
    }

    /// The user of a token valid for one of `audiences` (none: this server's), and the
    /// audiences it is valid for — a TokenReview's question.
    pub fn token_user(&self, token: &str, audiences: &[String]) -> Option<(UserInfo, Vec<String>)> {
        match self.static_user(token) {
            Some(u) => {
                let wanted = if audiences.is_empty() {
                    vec![token::ISSUER.to_string()]
                } else {
                    audiences.to_vec()
                };
                Some((UserInfo::clone(&u), wanted))
            }
            None => self.account_user(token, audiences),
        }
    }

    /// The user of the admin's or an added user's token (tokens with no `.`: not JWTs); `None`
    /// for any other token.
    fn static_user(&self, token: &str) -> Option<Arc<UserInfo>> {
        if token.contains('.') {
            return None;
        }
        if token == self.admin_token {
            return Some(self.admin.clone());
        }
        self.users.read().get(token).cloned()
    }

    /// The ServiceAccount user of a JWT valid for one of `audiences` (none: this server's),
    /// and the audiences it is valid for.
    fn account_user(&self, token: &str, audiences: &[String]) -> Option<(UserInfo, Vec<String>)> {
        if !token.contains('.') {
            return None;
        }
        let c = self.signer.verify(token, token::unix_now())?;
        let ours = [token::ISSUER.to_string()];
        let wanted = if audiences.is_empty() {
            &ours[..]
        } else {
            audiences
        };
        let valid: Vec<String> = wanted
            .iter()
            .filter(|a| c.audiences.contains(a))
            .cloned()
            .collect();
        if valid.is_empty() || !self.account_exists(&c) {
            return None;
        }
        Some((service_account_user(&c), valid))
    }

    /// The ServiceAccount of a token still exists with the uid it had at issue.
    fn account_exists(&self, c: &Claims) -> bool {
        let key = crate::storage::store_key("", "serviceaccounts");
        self.store
            .get_value(&key, &crate::storage::obj_key(&c.namespace, &c.name))
            .is_some_and(|sa| sa.pointer("/metadata/uid").and_then(Value::as_str) == Some(&c.uid))
    }
}

/// The token of an `Authorization` header as upstream's bearer-token authenticator reads it
/// (`apiserver/pkg/authentication/request/bearertoken`): the trimmed header split on single
/// spaces into at most three parts, the first `bearer` in any case, the token the second part
/// — so `Bearer  <token>` (two spaces) carries an empty token, which is refused.
fn bearer_token(header: &str) -> Option<&str> {
    let mut parts = header.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// `system:serviceaccount:<ns>:<name>` in `system:serviceaccounts`,
/// `system:serviceaccounts:<ns>` and `system:authenticated`.
fn service_account_user(c: &Claims) -> UserInfo {
    let mut u = UserInfo::new(
        format!("system:serviceaccount:{}:{}", c.namespace, c.name),
        service_account_groups(&c.namespace),
    );
    u.groups.push(AUTHENTICATED.to_string());
    u.uid = c.uid.clone();
    u.extra
        .insert(CREDENTIAL_ID.into(), vec![format!("JTI={}", c.id)]);
    u
}

/// The groups every ServiceAccount of `namespace` is in (upstream's `MakeGroupNames`).
pub(crate) fn service_account_groups(namespace: &str) -> Vec<String> {
    vec![
        "system:serviceaccounts".to_string(),
        format!("system:serviceaccounts:{namespace}"),
    ]
}

/// `system:serviceaccount:<ns>:<name>` split into (ns, name).
pub(crate) fn split_service_account(user: &str) -> Option<(&str, &str)> {
    let rest = user.strip_prefix("system:serviceaccount:")?;
    let (ns, name) = rest.split_once(':')?;
    (!ns.is_empty() && !name.is_empty() && !name.contains(':')).then_some((ns, name))
}

/// 32 random bytes, URL-safe base64: an opaque bearer token (never contains a `.`).
pub(crate) fn random_token() -> String {
    use base64::Engine;
    let bytes: [u8; 32] = rand::random();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn store_with_sa(uid: &str) -> Arc<Store> {
        let store = Arc::new(Store::new(100, 100));
        let key = crate::storage::store_key("", "serviceaccounts");
        let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa", "namespace": "default", "uid": uid}});
        store
            .commit(
                &key,
                &crate::storage::obj_key("default", "sa"),
                false,
                |_| Ok(crate::storage::Change::Put(sa)),
            )
            .unwrap();
        store
    }

    fn claims(uid: &str, aud: &str) -> Claims {
        Claims {
            namespace: "default".into(),
            name: "sa".into(),
            uid: uid.into(),
            audiences: vec![aud.into()],
            id: "j1".into(),
            expires: token::unix_now() + 600,
        }
    }

    #[test]
    fn admin_users_and_anonymous() {
        let a = Authenticator::new("adm".into(), Arc::new(Store::new(10, 10)));
        let admin = a.authenticate(Some("Bearer adm")).unwrap().unwrap();
        assert_eq!(admin.name, "admin");
        assert!(admin.is_master());
        assert_eq!(a.authenticate(None), Ok(None));
        assert_eq!(a.authenticate(Some("Bearer nope")), Err(()));
        assert_eq!(a.authenticate(Some("Basic YTpi")), Err(()));
        assert_eq!(
            a.authenticate(Some("Bearer  adm")),
            Err(()),
            "two spaces: empty token"
        );
        assert_eq!(a.authenticate(Some("Bearer ")), Err(()));
        assert!(a.authenticate(Some("BEARER adm")).unwrap().is_some());
        assert!(a.authenticate(Some("Bearer adm extra")).unwrap().is_some());
        let t = a.add_user("alice", &["dev".into()]);
        let alice = a
            .authenticate(Some(&format!("Bearer {t}")))
            .unwrap()
            .unwrap();
        assert_eq!(alice.groups, vec!["dev", "system:authenticated"]);
    }

    #[test]
    fn service_account_tokens_need_their_account_and_audience() {
        let store = store_with_sa("u1");
        let a = Authenticator::new("adm".into(), store);
        let t = a
            .signer
            .issue(&claims("u1", token::ISSUER), token::unix_now());
        let u = a
            .authenticate(Some(&format!("Bearer {t}")))
            .unwrap()
            .unwrap();
        assert_eq!(u.name, "system:serviceaccount:default:sa");
        assert_eq!(
            u.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:default",
                "system:authenticated"
            ]
        );
        assert_eq!(u.extra[CREDENTIAL_ID], vec!["JTI=j1"]);
        let stale = a
            .signer
            .issue(&claims("u0", token::ISSUER), token::unix_now());
        assert_eq!(
            a.authenticate(Some(&format!("Bearer {stale}"))),
            Err(()),
            "re-created account"
        );
        let other = a.signer.issue(&claims("u1", "vault"), token::unix_now());
        assert_eq!(
            a.authenticate(Some(&format!("Bearer {other}"))),
            Err(()),
            "foreign audience"
        );
        let (_, aud) = a.token_user(&other, &["vault".into()]).unwrap();
        assert_eq!(aud, vec!["vault"]);
    }

    #[test]
    fn service_account_names_split() {
        assert_eq!(
            split_service_account("system:serviceaccount:ns:sa"),
            Some(("ns", "sa"))
        );
        assert_eq!(split_service_account("system:serviceaccount:ns"), None);
        assert_eq!(split_service_account("bob"), None);
    }
}
