//! Who may do what: authentication, impersonation and RBAC authorization (kube-apiserver's
//! `pkg/authentication`, `endpoints/filters/impersonation.go` and
//! `plugin/pkg/auth/authorizer/rbac`). It reads the RBAC objects and ServiceAccounts from
//! `storage` and builds its errors with `api`; it knows nothing of HTTP routing: the server
//! derives the request's [`attributes::Attributes`] from the URL, asks [`Auth`] who the caller
//! is and whether they may, and the review resources (`TokenReview`, `SubjectAccessReview`,
//! `SelfSubject*Review`, the ServiceAccount `token` subresource) are answered by [`review`].
//!
//! * [`x509`]: client certificates signed by the environment's CA (CN = user, O = groups).
//! * [`authn`]: bearer tokens — the admin user (`system:masters`), users added at run time,
//!   ServiceAccount tokens ([`token`]: JWTs signed by this server, issued by TokenRequest).
//! * [`impersonate`]: the `Impersonate-User` / `-Group` / `-Uid` / `-Extra-*` headers.
//! * [`rbac`]: Role, ClusterRole (aggregation included), RoleBinding, ClusterRoleBinding
//!   evaluation, upstream's rule matching, and the rules of a user (`SelfSubjectRulesReview`).
//! * [`attributes`]: the request attributes (upstream's `RequestInfo`) and the 403 message.
//! * [`bootstrap`]: the default ClusterRoles and ClusterRoleBindings the server seeds.

pub(crate) mod attributes;
pub(crate) mod authn;
pub(crate) mod bootstrap;
pub(crate) mod impersonate;
pub(crate) mod rbac;
pub(crate) mod review;
pub(crate) mod token;
pub(crate) mod x509;

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::status::ApiError;
use crate::storage::Store;
use attributes::Attributes;

/// The group whose members every request is allowed (`system:masters`).
pub(crate) const MASTERS: &str = "system:masters";
/// Added to every authenticated user's groups.
pub(crate) const AUTHENTICATED: &str = "system:authenticated";
/// The name of the admin user of the environment's own client and kubeconfig.
pub(crate) const ADMIN_USER: &str = "admin";

/// An authenticated (or impersonated) user, as upstream's `user.Info`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// A user with these groups (no uid, no extra).
    pub fn new(name: impl Into<String>, groups: Vec<String>) -> Self {
        UserInfo {
            name: name.into(),
            groups,
            ..Default::default()
        }
    }

    /// Member of `system:masters`: every request is allowed.
    pub fn is_master(&self) -> bool {
        self.groups.iter().any(|g| g == MASTERS)
    }

    /// The `authentication.k8s.io/v1` `UserInfo` form (empty fields left out, as upstream).
    pub fn to_value(&self) -> Value {
        let mut v = json!({"username": self.name, "groups": self.groups});
        if !self.uid.is_empty() {
            v["uid"] = json!(self.uid);
        }
        if !self.extra.is_empty() {
            v["extra"] = json!(self.extra);
        }
        v
    }
}

/// How requests are authorized: by RBAC (the default, as Go's envtest runs kube-apiserver), or
/// every authenticated request allowed (`ctrl-envtest serve --authorization AlwaysAllow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Authorization {
    /// RBAC, with the `system:masters` bypass (kube-apiserver's default chain).
    #[default]
    Rbac,
    /// Every authenticated request is allowed.
    AlwaysAllow,
}

/// Authentication and authorization of one API server.
pub(crate) struct Auth {
    pub authn: authn::Authenticator,
    pub mode: Authorization,
    store: Arc<Store>,
}

/// What an authorizer decided, with upstream's reason text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    Allow(String),
    /// No rule allows it; the reason names RBAC errors (missing roles), if any.
    Deny(String),
}

impl Auth {
    /// Authentication with this admin token, reading objects from `store`.
    pub fn new(admin_token: String, store: Arc<Store>, mode: Authorization) -> Self {
        Auth {
            authn: authn::Authenticator::new(admin_token, store.clone()),
            mode,
            store,
        }
    }

    /// The decision for `user` doing `attrs`: `system:masters` first, then RBAC (or every
    /// request under [`Authorization::AlwaysAllow`]).
    pub fn authorize(&self, user: &UserInfo, attrs: &Attributes) -> Decision {
        if self.allows_all(user) {
            return Decision::Allow(String::new());
        }
        rbac::authorize(&self.store, user, attrs)
    }

    /// Whatever `user` asks is allowed: a member of `system:masters`, or any user under
    /// [`Authorization::AlwaysAllow`].
    fn allows_all(&self, user: &UserInfo) -> bool {
        user.is_master() || self.mode == Authorization::AlwaysAllow
    }

    /// `Ok` when allowed, else upstream's 403 `Forbidden`.
    pub fn check(&self, user: &UserInfo, attrs: &Attributes) -> Result<(), ApiError> {
        match self.authorize(user, attrs) {
            Decision::Allow(_) => Ok(()),
            Decision::Deny(reason) => Err(attributes::forbidden(user, attrs, &reason)),
        }
    }

    /// The user a request acts as — `cert_user` (a verified client certificate's, `x509`) or
    /// the bearer token's — or the Status to answer instead: 401 without credentials
    /// this server accepts (anonymous requests only where `public`: health and version), 403
    /// when an impersonation or the request itself is not allowed. `param` looks up a decoded
    /// query parameter.
    pub fn filter<'q>(
        &self,
        method: &str,
        path: &str,
        param: impl Fn(&str) -> Option<&'q str>,
        headers: &http::HeaderMap,
        public: bool,
        cert_user: Option<Arc<UserInfo>>,
    ) -> Result<Arc<UserInfo>, ApiError> {
        let unauthorized = || ApiError::new(401, "Unauthorized", "Unauthorized");
        let header = headers
            .get(http::header::AUTHORIZATION)
            .map(|v| v.to_str().unwrap_or(""));
        // Upstream's union authenticator asks the client certificate before the tokens.
        let authenticated = match cert_user {
            Some(u) => Ok(Some(u)),
            None => self.authn.authenticate(header),
        };
        let user = match authenticated {
            Ok(Some(u)) => u,
            Ok(None) if public => {
                return Ok(Arc::new(UserInfo::new(
                    "system:anonymous",
                    vec!["system:unauthenticated".into()],
                )));
            }
            _ => return Err(unauthorized()),
        };
        let user = match impersonate::impersonate(self, &user, headers)? {
            Some(acting) => Arc::new(acting),
            None => user,
        };
        // `authorize` allows these before it reads the attributes: none are built.
        if self.allows_all(&user) {
            return Ok(user);
        }
        let attrs = Attributes::from_request(method, path, param);
        self.check(&user, &attrs).inspect_err(|e| {
            tracing::debug!(user = %user.name, verb = %attrs.verb, resource = %attrs.combined_resource(), namespace = %attrs.namespace, path, reason = %e.message, "forbidden");
        })?;
        Ok(user)
    }

    /// The store RBAC reads.
    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }
}
