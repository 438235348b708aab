//! API warnings: the `Warning: 299 - "<text>"` headers an API server sends with a
//! response (deprecated APIs, unknown fields under `fieldValidation=Warn`, admission
//! webhooks' warnings), logged (controller-runtime's `log.KubeAPIWarningLogger`, which
//! the manager installs by default).
//!
//! kube's client does not surface response headers, so [`log_api_warnings`] wraps a
//! `kube::Client` in one more service: every response passes through
//! [`WarningLogger`], which logs its warnings at `warn` level with the request's
//! method and path, and hands the response on unchanged. Build the manager's client
//! from the wrapped one and every write and read ([`super::Client`],
//! [`crate::cache`]) is covered.

use std::collections::HashSet;
use std::sync::Arc;

use http::{HeaderMap, Request};
use kube::client::Body;
use parking_lot::Mutex;

/// Logs the API warnings of responses (Go's `KubeAPIWarningLogger` with its
/// `Deduplicate` option).
#[derive(Clone, Debug, Default)]
pub struct WarningLogger {
    /// Log each distinct warning text once per logger (Go's `Deduplicate`).
    pub deduplicate: bool,
    seen: Arc<Mutex<HashSet<String>>>,
}

impl WarningLogger {
    /// A logger that logs every warning.
    pub fn new() -> Self {
        Self::default()
    }

    /// A logger that logs each distinct warning once.
    pub fn deduplicating() -> Self {
        Self {
            deduplicate: true,
            ..Self::default()
        }
    }

    /// Logs the warnings in `headers` of a response to `method path`; returns them.
    pub fn log(&self, method: &str, path: &str, headers: &HeaderMap) -> Vec<String> {
        let warnings = parse_warnings(headers);
        for text in &warnings {
            let new = self.seen.lock().insert(text.clone());
            if self.deduplicate && !new {
                continue;
            }
            tracing::warn!(method, path, warning = %text, "API server warning");
        }
        warnings
    }

    /// Every distinct warning text logged so far, sorted.
    pub fn seen(&self) -> Vec<String> {
        let mut all: Vec<String> = self.seen.lock().iter().cloned().collect();
        all.sort();
        all
    }

    /// `kube` with every response's warnings logged by this logger.
    pub fn wrap(self, kube: kube::Client) -> kube::Client {
        let ns = kube.default_namespace().to_string();
        let svc = tower::service_fn(move |req: Request<Body>| {
            let (kube, logger) = (kube.clone(), self.clone());
            async move {
                let (method, path) = (req.method().to_string(), req.uri().path().to_string());
                let resp = kube.send(req).await?;
                logger.log(&method, &path, resp.headers());
                Ok::<_, kube::Error>(resp)
            }
        });
        kube::Client::new(svc, ns)
    }
}

/// `kube` with the `Warning` headers of every response logged (each distinct text
/// once), as a controller-runtime manager's client does.
pub fn log_api_warnings(kube: kube::Client) -> kube::Client {
    WarningLogger::deduplicating().wrap(kube)
}

/// The texts of `Warning: 299 - "<text>"` headers (RFC 7234; other codes ignored, as
/// client-go does).
fn parse_warnings(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(http::header::WARNING)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| {
            let rest = v.trim().strip_prefix("299")?.trim_start();
            let rest = rest.strip_prefix('-')?.trim_start();
            let quoted = rest.strip_prefix('"')?;
            Some(unquote(quoted))
        })
        .collect()
}

/// The text up to the closing quote, with `\"` and `\\` unescaped.
fn unquote(s: &str) -> String {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            '"' => break,
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warning_headers_are_parsed() {
        let mut h = HeaderMap::new();
        h.append(
            "warning",
            r#"299 - "unknown field \"spec.x\"""#.parse().expect("hv"),
        );
        h.append(
            "warning",
            "299 - \"deprecated\" \"Tue, 01 Jan 2030\""
                .parse()
                .expect("hv"),
        );
        h.append("warning", "199 - \"misc\"".parse().expect("hv"));
        assert_eq!(
            parse_warnings(&h),
            vec![
                r#"unknown field "spec.x""#.to_string(),
                "deprecated".to_string()
            ]
        );
        let logger = WarningLogger::deduplicating();
        assert_eq!(logger.log("POST", "/x", &h).len(), 2);
        assert_eq!(logger.seen().len(), 2);
    }
}
