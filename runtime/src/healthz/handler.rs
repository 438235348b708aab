//! [`Handler`]: serves a set of named checks (Go's `healthz.Handler`), with the
//! aggregate at `/` and each check at `/<name>`.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::Arc;

use async_trait::async_trait;
use http::StatusCode;

use super::{Checker, Ping};
use crate::http::{self as server, Request, Response, clean_path, not_found, text};

/// Named checks served over HTTP. With no checks it serves a single passing `ping`.
#[derive(Clone, Default)]
pub struct Handler {
    checks: BTreeMap<String, Arc<dyn Checker>>,
}

impl std::fmt::Debug for Handler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handler")
            .field("checks", &self.checks.keys().collect::<Vec<_>>())
            .finish()
    }
}

struct Status<'a> {
    name: &'a str,
    healthy: bool,
    excluded: bool,
}

impl Handler {
    /// A handler with no checks.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the check called `name`.
    pub fn add_check(&mut self, name: impl Into<String>, check: impl Checker) -> &mut Self {
        self.checks.insert(name.into(), Arc::new(check));
        self
    }

    /// The names of the checks, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.checks.keys().map(String::as_str)
    }

    /// Whether there are no checks.
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }

    /// Runs every check not excluded by `?exclude=` and writes Go's aggregate body.
    async fn serve_aggregated(&self, req: &Request) -> Response {
        let query = Query::parse(req.uri().query());
        let mut excluded: BTreeSet<String> = query.values("exclude").collect();
        let parts = self.run_checks(req, &excluded).await;
        for p in parts.iter().filter(|p| p.excluded) {
            excluded.remove(p.name);
        }
        for name in &excluded {
            tracing::debug!(checker = %name, "cannot exclude health check, no matches for it");
        }
        let failed = parts.iter().any(|p| !p.healthy);
        let status = if failed {
            StatusCode::INTERNAL_SERVER_ERROR
        } else {
            StatusCode::OK
        };
        if !failed && !query.has("verbose") {
            return text(status, "ok");
        }
        text(status, verbose_body(&parts, &excluded))
    }

    /// Every check's outcome, in name order (those in `excluded` are not run); a handler
    /// without checks answers as if it had `ping`.
    async fn run_checks<'a>(
        &'a self,
        req: &Request,
        excluded: &BTreeSet<String>,
    ) -> Vec<Status<'a>> {
        let results = futures::future::join_all(self.checks.iter().map(|(name, check)| {
            let skip = excluded.contains(name.as_str());
            async move {
                if skip {
                    return (name.as_str(), true, true);
                }
                match check.check(req).await {
                    Ok(()) => (name.as_str(), true, false),
                    Err(error) => {
                        tracing::debug!(checker = %name, %error, "healthz check failed");
                        (name.as_str(), false, false)
                    }
                }
            }
        }))
        .await;
        let mut parts: Vec<Status<'_>> = results
            .into_iter()
            .map(|(name, healthy, was_excluded)| Status {
                name,
                healthy,
                excluded: was_excluded,
            })
            .collect();
        if self.checks.is_empty() {
            parts.push(Status {
                name: "ping",
                healthy: true,
                excluded: false,
            });
        }
        parts
    }
}

/// The verbose aggregate (Go's `handleRootHealth`): a line per check, the exclusions that
/// matched nothing, and the verdict. A failed check's reason stays out: this endpoint is
/// public; `/<name>` has it.
fn verbose_body(parts: &[Status<'_>], unmatched: &BTreeSet<String>) -> String {
    let mut body = String::new();
    for p in parts {
        let _ = if p.excluded {
            writeln!(body, "[+]{} excluded: ok", p.name)
        } else if p.healthy {
            writeln!(body, "[+]{} ok", p.name)
        } else {
            writeln!(body, "[-]{} failed: reason withheld", p.name)
        };
    }
    if !unmatched.is_empty() {
        let quoted: Vec<String> = unmatched.iter().map(|n| format!("{n:?}")).collect();
        let _ = writeln!(
            body,
            "warn: some health checks cannot be excluded: no matches for {}",
            quoted.join(",")
        );
    }
    let failing: Vec<&str> = parts
        .iter()
        .filter(|p| !p.healthy)
        .map(|p| p.name)
        .collect();
    if failing.is_empty() {
        body.push_str("healthz check passed\n");
    } else {
        tracing::info!(failing = ?failing, "healthz check failed");
        body.push_str("healthz check failed\n");
    }
    body
}

async fn serve_one(check: &dyn Checker, req: &Request) -> Response {
    match check.check(req).await {
        Ok(()) => text(StatusCode::OK, "ok"),
        Err(error) => text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("internal server error: {error}\n"),
        ),
    }
}

#[async_trait]
impl server::Handler for Handler {
    async fn call(&self, req: Request) -> Response {
        let path = clean_path(req.uri().path());
        if path == "/" {
            return self.serve_aggregated(&req).await;
        }
        let name = &path[1..];
        if self.checks.is_empty() && name == "ping" {
            return serve_one(&Ping, &req).await;
        }
        match self.checks.get(name) {
            Some(check) => serve_one(&**check, &req).await,
            None => not_found(),
        }
    }
}

/// A parsed query string: `a=1&b&a=2`, percent- and `+`-decoded (Go's `URL.Query`).
struct Query(Vec<(String, String)>);

impl Query {
    fn parse(q: Option<&str>) -> Self {
        let pairs = q
            .unwrap_or("")
            .split(['&', ';'])
            .filter(|s| !s.is_empty())
            .map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                (decode(k), decode(v))
            })
            .collect();
        Self(pairs)
    }

    fn has(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| k == key)
    }

    fn values<'a>(&'a self, key: &'a str) -> impl Iterator<Item = String> + 'a {
        self.0
            .iter()
            .filter(move |(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }
}

fn decode(s: &str) -> String {
    fn hex(b: u8) -> Option<u8> {
        (b as char).to_digit(16).map(|d| d as u8)
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let escaped = match (b, bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) => hex(h).zip(hex(l)).map(|(h, l)| h << 4 | l),
            _ => None,
        };
        match (b, escaped) {
            (_, Some(e)) => {
                out.push(e);
                i += 3;
                continue;
            }
            (b'+', None) => out.push(b' '),
            (b, None) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::decode;

    #[test]
    fn decodes_queries() {
        assert_eq!(decode("a%20b+c"), "a b c");
        assert_eq!(decode("100%"), "100%");
        assert_eq!(decode("%zz"), "%zz");
        assert_eq!(decode("%é"), "%é");
    }
}
