//! [`Router`]: path -> [`Handler`] with Go's `http.ServeMux` rules: a pattern ending in
//! `/` matches its whole subtree, any other pattern matches exactly, the longest
//! pattern wins; unclean paths (`//x`, `/a/../b`) are redirected to their clean form
//! and unknown paths get `404 page not found`.

use std::sync::Arc;

use http::{HeaderValue, StatusCode, Uri, header};

use super::handler::{Handler, Request, Response, not_found, text};

struct Route {
    pattern: String,
    strip: Option<String>,
    handler: Arc<dyn Handler>,
}

/// Routes requests to handlers by path (Go's `http.ServeMux`).
#[derive(Default)]
pub struct Router {
    routes: Vec<Route>,
}

impl Router {
    /// An empty router: every path is `404`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Serves `pattern` with `handler`: exactly, or the whole subtree if it ends in
    /// `/`. A later registration of the same pattern replaces the earlier one.
    pub fn handle(&mut self, pattern: impl Into<String>, handler: impl Handler) -> &mut Self {
        self.insert(pattern.into(), None, Arc::new(handler));
        self
    }

    /// Serves `prefix` and everything under `prefix/` with `handler`, which sees the
    /// path with `prefix` removed (Go's `mux.Handle(p, http.StripPrefix(p, h))` for
    /// both `p` and `p + "/"`, as the manager mounts the probe handlers).
    pub fn mount(&mut self, prefix: &str, handler: impl Handler) -> &mut Self {
        let prefix = prefix.trim_end_matches('/').to_string();
        let handler: Arc<dyn Handler> = Arc::new(handler);
        self.insert(prefix.clone(), Some(prefix.clone()), handler.clone());
        self.insert(format!("{prefix}/"), Some(prefix), handler);
        self
    }

    /// Whether `pattern` is registered.
    pub fn has(&self, pattern: &str) -> bool {
        self.routes.iter().any(|r| r.pattern == pattern)
    }

    fn insert(&mut self, pattern: String, strip: Option<String>, handler: Arc<dyn Handler>) {
        self.routes.retain(|r| r.pattern != pattern);
        self.routes.push(Route {
            pattern,
            strip,
            handler,
        });
        // Longest pattern first, so the first match is the most specific.
        self.routes
            .sort_by_key(|r| std::cmp::Reverse(r.pattern.len()));
    }

    /// Routes one request.
    pub async fn dispatch(&self, mut req: Request) -> Response {
        let path = req.uri().path().to_string();
        if !path.starts_with('/') {
            return text(StatusCode::BAD_REQUEST, "400 Bad Request\n");
        }
        let clean = clean_path(&path);
        if clean != path {
            return redirect(req.uri(), &clean);
        }
        let Some(route) = self.routes.iter().find(|r| matches(&r.pattern, &path)) else {
            // Go redirects `/x` to `/x/` when only the subtree is registered.
            let with_slash = format!("{path}/");
            if self.has(&with_slash) {
                return redirect(req.uri(), &with_slash);
            }
            return not_found();
        };
        if let Some(prefix) = &route.strip {
            let rest = path
                .strip_prefix(prefix.as_str())
                .unwrap_or(&path)
                .to_string();
            match with_path(req.uri(), &rest) {
                Some(uri) => *req.uri_mut() = uri,
                None => return text(StatusCode::BAD_REQUEST, "400 Bad Request\n"),
            }
        }
        route.handler.call(req).await
    }
}

fn matches(pattern: &str, path: &str) -> bool {
    if pattern.ends_with('/') {
        path.starts_with(pattern)
    } else {
        path == pattern
    }
}

/// `uri` with its path replaced by `path` (query kept). An empty path is allowed, as
/// Go's `StripPrefix` leaves it; handlers treat it as `/`.
fn with_path(uri: &Uri, path: &str) -> Option<Uri> {
    let pq = match uri.query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_string(),
    };
    if pq.is_empty() || pq.starts_with('?') {
        // `Uri` cannot hold an empty path; keep the query on `/`.
        return format!("/{pq}").parse().ok();
    }
    if !pq.starts_with('/') {
        return format!("/{pq}").parse().ok();
    }
    pq.parse().ok()
}

fn redirect(uri: &Uri, path: &str) -> Response {
    let location = match uri.query() {
        Some(q) => format!("{path}?{q}"),
        None => path.to_string(),
    };
    let mut resp = text(StatusCode::MOVED_PERMANENTLY, "");
    if let Ok(v) = HeaderValue::from_str(&location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

/// Go's `path.Clean` for a rooted path, keeping a trailing `/` (as `ServeMux` does):
/// collapses `//`, drops `.` and resolves `..`.
pub fn clean_path(path: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            s => out.push(s),
        }
    }
    let mut clean = format!("/{}", out.join("/"));
    if path.ends_with('/') && clean != "/" {
        clean.push('/');
    }
    clean
}

#[cfg(test)]
mod tests {
    use super::clean_path;

    #[test]
    fn cleans_like_go() {
        assert_eq!(clean_path("/"), "/");
        assert_eq!(clean_path("//metrics"), "/metrics");
        assert_eq!(clean_path("/a/../metrics"), "/metrics");
        assert_eq!(clean_path("/healthz/"), "/healthz/");
        assert_eq!(clean_path("/healthz/./ping"), "/healthz/ping");
        assert_eq!(clean_path("/../.."), "/");
    }
}
