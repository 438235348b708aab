//! Filters around the metrics server's handlers (controller-runtime's
//! `pkg/metrics/filters`): [`with_authentication_and_authorization`] lets a scrape
//! through only if its bearer token is valid (a `TokenReview`) and its user may `get`
//! the request's path (a `SubjectAccessReview` of the non-resource URL, e.g.
//! `/metrics`), both asked of the API server the manager talks to.
//!
//! The metrics server ([`super`]) wraps `/metrics` and every extra handler in
//! the filter its [`FilterProvider`] builds from the manager's client. Answers are
//! Go's: no or a rejected token `401 Unauthorized`, a user without the permission
//! `403 Authorization denied for user <name>`, a review that could not be made `500`.
//! Reviews are cached for a short time only ([`AuthOptions`]: 1 min per token and
//! 5 min per allowed request, as upstream), so a revoked permission is revoked within
//! minutes and never cached for good. Denials are not cached (upstream keeps them 30 s):
//! a permission just granted works on the next scrape. The manager's own ServiceAccount needs `create` on `tokenreviews`
//! (`authentication.k8s.io`) and `subjectaccessreviews` (`authorization.k8s.io`);
//! the `rbac` module lists them.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use http::{StatusCode, header};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec, UserInfo};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use parking_lot::Mutex;

use crate::error::BoxError;
use crate::http::{Handler, Request, Response, text};

/// Wraps a handler (Go's `metricsserver.Filter`).
pub type Filter = Arc<dyn Fn(Arc<dyn Handler>) -> Arc<dyn Handler> + Send + Sync>;

/// Builds the [`Filter`] from the manager's client when the metrics server starts
/// (Go's `Options.FilterProvider`).
pub type FilterProvider = Arc<dyn Fn(&kube::Client) -> Result<Filter, BoxError> + Send + Sync>;

/// How long reviews are cached (Go's `DelegatingAuthenticatorConfig.CacheTTL` and
/// `DelegatingAuthorizerConfig.AllowCacheTTL` / `DenyCacheTTL`). Zero caches nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AuthOptions {
    /// How long a token's review (accepted or rejected) is reused; default 1 min.
    pub authentication_ttl: Duration,
    /// How long an allowed request is reused; default 5 min.
    pub allow_ttl: Duration,
    /// How long a denied request is reused; default zero (not cached, so a grant takes
    /// effect at once; Go's `DenyCacheTTL` is 30 s).
    pub deny_ttl: Duration,
}

impl Default for AuthOptions {
    fn default() -> Self {
        Self {
            authentication_ttl: Duration::from_secs(60),
            allow_ttl: Duration::from_secs(300),
            deny_ttl: Duration::ZERO,
        }
    }
}

/// controller-runtime's `filters.WithAuthenticationAndAuthorization` (cache times:
/// [`AuthOptions::default`]).
pub fn with_authentication_and_authorization() -> FilterProvider {
    with_authentication_and_authorization_opts(AuthOptions::default())
}

/// [`with_authentication_and_authorization`] with other cache times.
pub fn with_authentication_and_authorization_opts(opts: AuthOptions) -> FilterProvider {
    Arc::new(move |client: &kube::Client| {
        let auth = Arc::new(Delegating::new(client.clone(), opts));
        let filter: Filter = Arc::new(move |inner| {
            Arc::new(AuthFiltered {
                inner,
                auth: auth.clone(),
            }) as Arc<dyn Handler>
        });
        Ok(filter)
    })
}

/// The most entries a review cache holds; past it, expired entries are dropped and,
/// if that is not enough, the whole cache (a flood of distinct tokens cannot grow it).
const MAX_CACHED: usize = 4096;

/// A map whose entries expire.
struct TtlCache<K, V>(Mutex<HashMap<K, (V, Instant)>>);

impl<K: Eq + Hash, V: Clone> TtlCache<K, V> {
    fn new() -> Self {
        Self(Mutex::new(HashMap::new()))
    }

    fn get(&self, key: &K) -> Option<V> {
        let now = Instant::now();
        let map = self.0.lock();
        map.get(key)
            .filter(|(_, until)| *until > now)
            .map(|(v, _)| v.clone())
    }

    fn put(&self, key: K, value: V, ttl: Duration) {
        if ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let mut map = self.0.lock();
        if map.len() >= MAX_CACHED {
            map.retain(|_, (_, until)| *until > now);
            if map.len() >= MAX_CACHED {
                map.clear();
            }
        }
        map.insert(key, (value, now + ttl));
    }
}

/// Who a request's user is, as a cache key for authorization.
#[derive(Clone, PartialEq, Eq, Hash)]
struct AuthzKey {
    user: String,
    uid: String,
    groups: Vec<String>,
    verb: String,
    path: String,
}

/// Asks the API server with TokenReviews and SubjectAccessReviews, caching answers.
struct Delegating {
    client: kube::Client,
    opts: AuthOptions,
    tokens: TtlCache<String, Option<UserInfo>>,
    decisions: TtlCache<AuthzKey, bool>,
}

impl Delegating {
    fn new(client: kube::Client, opts: AuthOptions) -> Self {
        Self {
            client,
            opts,
            tokens: TtlCache::new(),
            decisions: TtlCache::new(),
        }
    }

    /// The user the token belongs to; `None` if the API server rejects it.
    async fn authenticate(&self, token: &str) -> Result<Option<UserInfo>, kube::Error> {
        if let Some(user) = self.tokens.get(&token.to_string()) {
            return Ok(user);
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                ..Default::default()
            },
            ..Default::default()
        };
        let out = Api::<TokenReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let status = out.status.unwrap_or_default();
        let user = match (status.authenticated, status.user) {
            (Some(true), Some(user)) => Some(user),
            _ => {
                tracing::debug!(error = ?status.error, "token rejected by TokenReview");
                None
            }
        };
        let ttl = self.opts.authentication_ttl;
        self.tokens.put(token.to_string(), user.clone(), ttl);
        Ok(user)
    }

    /// Whether `key`'s user may `key.verb` the non-resource URL `key.path`.
    async fn authorize(&self, key: AuthzKey, user: &UserInfo) -> Result<bool, kube::Error> {
        if let Some(allowed) = self.decisions.get(&key) {
            return Ok(allowed);
        }
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: user.username.clone(),
                uid: user.uid.clone(),
                groups: user.groups.clone(),
                extra: user.extra.clone(),
                non_resource_attributes: Some(NonResourceAttributes {
                    path: Some(key.path.clone()),
                    verb: Some(key.verb.clone()),
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let out = Api::<SubjectAccessReview>::all(self.client.clone())
            .create(&PostParams::default(), &review)
            .await?;
        let status = out.status.unwrap_or_default();
        let allowed = status.allowed && status.denied != Some(true);
        if !allowed {
            tracing::debug!(user = %key.user, path = %key.path, reason = ?status.reason, "SubjectAccessReview denied");
        }
        let ttl = if allowed {
            self.opts.allow_ttl
        } else {
            self.opts.deny_ttl
        };
        self.decisions.put(key, allowed, ttl);
        Ok(allowed)
    }
}

/// The bearer token of `req` (Go's `bearertoken.Authenticator`: scheme matched
/// case-insensitively, empty tokens ignored).
fn bearer_token(req: &Request) -> Option<&str> {
    let value = req.headers().get(header::AUTHORIZATION)?.to_str().ok()?;
    let mut parts = value.trim().splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// A handler behind [`Delegating`].
struct AuthFiltered {
    inner: Arc<dyn Handler>,
    auth: Arc<Delegating>,
}

fn error(status: StatusCode, msg: &str) -> Response {
    text(status, format!("{msg}\n"))
}

#[async_trait]
impl Handler for AuthFiltered {
    async fn call(&self, req: Request) -> Response {
        let Some(token) = bearer_token(&req) else {
            return error(StatusCode::UNAUTHORIZED, "Unauthorized");
        };
        let user = match self.auth.authenticate(token).await {
            Ok(Some(user)) => user,
            Ok(None) => return error(StatusCode::UNAUTHORIZED, "Unauthorized"),
            Err(e) => {
                tracing::error!(error = %e, "Authentication failed");
                return error(StatusCode::INTERNAL_SERVER_ERROR, "Authentication failed");
            }
        };
        let name = user.username.clone().unwrap_or_default();
        let key = AuthzKey {
            user: name.clone(),
            uid: user.uid.clone().unwrap_or_default(),
            groups: user.groups.clone().unwrap_or_default(),
            verb: req.method().as_str().to_ascii_lowercase(),
            path: req.uri().path().to_string(),
        };
        match self.auth.authorize(key, &user).await {
            Ok(true) => self.inner.call(req).await,
            Ok(false) => error(
                StatusCode::FORBIDDEN,
                &format!("Authorization denied for user {name}"),
            ),
            Err(e) => {
                let msg = format!("Authorization for user {name} failed");
                tracing::error!(error = %e, user = %name, "{msg}");
                error(StatusCode::INTERNAL_SERVER_ERROR, &msg)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(auth: Option<&str>) -> Request {
        let mut b = http::Request::builder().uri("/metrics");
        if let Some(a) = auth {
            b = b.header(header::AUTHORIZATION, a);
        }
        b.body(bytes::Bytes::new()).expect("request")
    }

    #[test]
    fn bearer_tokens_as_go_reads_them() {
        assert_eq!(bearer_token(&req(Some("Bearer abc"))), Some("abc"));
        assert_eq!(bearer_token(&req(Some("bearer abc"))), Some("abc"));
        assert_eq!(bearer_token(&req(Some("  Bearer abc  "))), Some("abc"));
        assert_eq!(bearer_token(&req(Some("Basic abc"))), None);
        assert_eq!(bearer_token(&req(Some("Bearer"))), None);
        assert_eq!(bearer_token(&req(Some("Bearer  x"))), None);
        assert_eq!(bearer_token(&req(None)), None);
    }

    #[test]
    fn cache_entries_expire_and_zero_ttl_caches_nothing() {
        let c: TtlCache<&str, bool> = TtlCache::new();
        c.put("a", true, Duration::from_millis(30));
        c.put("b", true, Duration::ZERO);
        assert_eq!(c.get(&"a"), Some(true));
        assert_eq!(c.get(&"b"), None);
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(c.get(&"a"), None);
    }

    #[test]
    fn cache_is_bounded() {
        let c: TtlCache<usize, ()> = TtlCache::new();
        for i in 0..(MAX_CACHED * 2) {
            c.put(i, (), Duration::from_secs(60));
        }
        assert!(c.0.lock().len() <= MAX_CACHED);
    }
}
