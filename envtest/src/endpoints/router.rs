//! The URL grammar (`k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`): maps a request path
//! to a discovery/health endpoint or to a resource route (type from the `registry`, namespace,
//! name, subresource), and parses query strings the way kube and kubectl send them (`?&…`, `+` for
//! spaces, percent-escapes).

use std::collections::HashMap;
use std::sync::Arc;

use crate::api::status::ApiError;
use crate::registry::{ResourceType, Snapshot};

/// A resource request: collection or item, with namespace and subresource.
#[derive(Debug, Clone)]
pub(crate) struct ResourceRoute {
    pub rt: Arc<ResourceType>,
    /// The namespace in the URL (`None` for cluster-scoped and all-namespaces requests).
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub sub: Option<String>,
    /// Reached through the legacy `/watch/` path prefix (a watch without `watch=true`).
    pub watch_prefix: bool,
}

/// What a path addresses.
#[derive(Debug, Clone)]
pub(crate) enum Route {
    Health,
    Version,
    /// `/api`
    CoreVersions,
    /// `/apis`
    Groups,
    /// `/apis/{group}`
    Group(String),
    /// `/api/v1`, `/apis/{g}/{v}`
    ResourceList(String, String),
    OpenApiRoot,
    /// `/openapi/v3/api/v1`, `/openapi/v3/apis/g/v`
    OpenApiDoc(String, String),
    Resource(ResourceRoute),
}

/// The most segments a served path has.
const MAX_SEGMENTS: usize = 9;

/// Routes `path` against the registry snapshot.
pub(crate) fn route(path: &str, reg: &Snapshot) -> Result<Route, ApiError> {
    let trimmed = path.trim_end_matches('/');
    if let Some(fixed) = fixed_route(trimmed) {
        return Ok(fixed);
    }
    if trimmed.contains('%') {
        return Err(ApiError::unknown_path());
    }
    // On the stack: no route has more segments (`/apis/{g}/{v}/watch/namespaces/{ns}/{r}/{n}/{sub}`).
    let mut buf = [""; MAX_SEGMENTS];
    let mut n = 0;
    for s in trimmed.split('/').skip(1) {
        if s.is_empty() || n == MAX_SEGMENTS {
            return Err(ApiError::unknown_path());
        }
        buf[n] = s;
        n += 1;
    }
    let segs = &buf[..n];
    match segs {
        ["openapi", "v3", "api", v] => return Ok(Route::OpenApiDoc(String::new(), v.to_string())),
        ["openapi", "v3", "apis", g, v] => {
            return Ok(Route::OpenApiDoc(g.to_string(), v.to_string()));
        }
        _ => {}
    }
    let (group, version, rest): (&str, &str, &[&str]) = match segs {
        ["api", v, rest @ ..] => ("", v, rest),
        ["apis", g] => {
            return if reg.groups().iter().any(|(n, _)| n == g) {
                Ok(Route::Group(g.to_string()))
            } else {
                Err(ApiError::unknown_path())
            };
        }
        ["apis", g, v, rest @ ..] => (g, v, rest),
        _ => return Err(ApiError::unknown_path()),
    };
    if !reg.has_group_version(group, version) {
        return Err(ApiError::unknown_path());
    }
    resource_route(reg, group, version, rest)
}

/// The routes of fixed paths: health, version, discovery roots, the OpenAPI root.
fn fixed_route(trimmed: &str) -> Option<Route> {
    match trimmed {
        "/healthz" | "/readyz" | "/livez" => return Some(Route::Health),
        "/version" => return Some(Route::Version),
        "/api" => return Some(Route::CoreVersions),
        "/apis" => return Some(Route::Groups),
        "/openapi/v3" => return Some(Route::OpenApiRoot),
        _ => {}
    }
    ["/healthz/", "/readyz/", "/livez/"]
        .iter()
        .any(|h| trimmed.starts_with(h))
        .then_some(Route::Health)
}

/// The route of a path below a served group version (`rest`: the segments after it):
/// the resource list, or a resource collection, item or subresource.
fn resource_route(
    reg: &Snapshot,
    group: &str,
    version: &str,
    rest: &[&str],
) -> Result<Route, ApiError> {
    let mut rest = rest;
    let watch_prefix = rest.first() == Some(&"watch");
    if watch_prefix {
        rest = &rest[1..];
    }
    let find = |plural: &str| reg.get(group, version, plural).cloned();
    let res =
        |rt: Arc<ResourceType>, namespace: Option<&str>, name: Option<&str>, sub: Option<&str>| {
            if let Some(n) = name
                && (n == "." || n == "..")
            {
                return Err(ApiError::bad_request(format!(
                    "invalid resource name: {n:?}"
                )));
            }
            Ok(Route::Resource(ResourceRoute {
                rt,
                namespace: namespace.map(String::from),
                name: name.map(String::from),
                sub: sub.map(String::from),
                watch_prefix,
            }))
        };
    let not_found = || Err(ApiError::unknown_path());
    match rest {
        [] => Ok(Route::ResourceList(group.to_string(), version.to_string())),
        // namespaces/{ns}/{res}[/{name}[/{sub}]] when {res} is a namespaced resource here.
        ["namespaces", ns, r, tail @ ..] if find(r).is_some_and(|t| t.namespaced) => {
            let Some(rt) = find(r) else {
                return not_found();
            };
            match tail {
                [] => res(rt, Some(ns), None, None),
                [name] => res(rt, Some(ns), Some(name), None),
                [name, sub] => res(rt, Some(ns), Some(name), Some(sub)),
                _ => not_found(),
            }
        }
        [r] => match find(r) {
            Some(rt) => res(rt, None, None, None),
            None => not_found(),
        },
        [r, name] => match find(r) {
            Some(rt) if !rt.namespaced => res(rt, None, Some(name), None),
            _ => not_found(),
        },
        [r, name, sub] => match find(r) {
            Some(rt) if !rt.namespaced => res(rt, None, Some(name), Some(sub)),
            _ => not_found(),
        },
        _ => not_found(),
    }
}

/// The 504 for a resourceVersion from the future.
pub(crate) fn too_large(n: u64, current: u64) -> ApiError {
    let mut e = ApiError::new(504, "Timeout", format!("Too large resource version: {n}, current: {current}"))
        .with_details(serde_json::json!({"causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}], "retryAfterSeconds": 1}));
    e.retry_after = Some(1);
    e
}

pub(crate) fn parse_rv(q: &Query) -> Result<Option<u64>, ApiError> {
    match q.value("resourceVersion") {
        None => Ok(None),
        Some(v) => v
            .parse()
            .map(Some)
            .map_err(|_| ApiError::bad_request(format!("invalid resource version: {v:?}"))),
    }
}

/// Decodes `application/x-www-form-urlencoded` text (`+` is a space).
pub(crate) fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Query parameters: empty pairs ignored, later values win.
#[derive(Debug, Default, Clone)]
pub(crate) struct Query(HashMap<String, String>);

impl Query {
    pub fn parse(q: Option<&str>) -> Self {
        let mut m = HashMap::new();
        for pair in q.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            m.insert(decode(k), decode(v));
        }
        Query(m)
    }

    pub fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }

    /// A non-empty value.
    pub fn value(&self, k: &str) -> Option<&str> {
        self.get(k).filter(|v| !v.is_empty())
    }

    /// A boolean parameter as apimachinery's `Convert_Slice_string_To_bool` reads it: absent,
    /// `0` or `false` in any case is false; any other value is true, `True` (the Python
    /// client's spelling) and an empty value (`?watch`) included.
    pub fn flag(&self, k: &str) -> bool {
        self.get(k)
            .is_some_and(|v| v != "0" && !v.eq_ignore_ascii_case("false"))
    }

    pub fn number(&self, k: &str) -> Result<Option<u64>, ApiError> {
        match self.value(k) {
            None => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| ApiError::bad_request(format!("invalid value for {k}: {v:?}"))),
        }
    }

    /// `dryRun=All`; any other value is rejected.
    pub fn dry_run(&self) -> Result<bool, ApiError> {
        match self.value("dryRun") {
            None => Ok(false),
            Some("All") => Ok(true),
            Some(v) => Err(ApiError::bad_request(format!(
                "Invalid dryRun value {v:?}: supported values: \"All\""
            ))),
        }
    }
}
