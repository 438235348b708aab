//! Kubernetes' CEL URL library (`library/urls.go`): `url(s)`, `isURL(s)`, and on a URL
//! `getScheme`, `getHost`, `getHostname`, `getPort`, `getEscapedPath`, `getQuery`. As Go's
//! `url.ParseRequestURI`, a URL is absolute (`scheme://...`) or an absolute path (`/...`).

use std::collections::HashMap;
use std::sync::Arc;

use cel::extractors::This;
use cel::objects::{Map, Opaque};
use cel::{Context, ExecutionError, Value};

use super::fail;

/// A parsed URL.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Url {
    scheme: String,
    host: String,
    path: String,
    query: String,
}

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.URL"
    }
}

impl Url {
    /// Parses `s` as `url.ParseRequestURI` would accept it.
    pub(crate) fn parse(s: &str) -> Option<Url> {
        if s.is_empty() || s.contains(|c: char| c.is_control() || c == ' ') {
            return None;
        }
        let s = s.split('#').next().unwrap_or(s);
        let (rest, query) = s.split_once('?').unwrap_or((s, ""));
        if rest.starts_with('/') {
            return Some(Url {
                scheme: String::new(),
                host: String::new(),
                path: rest.into(),
                query: query.into(),
            });
        }
        let (scheme, after) = rest.split_once(':')?;
        let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
        if !scheme_ok {
            return None;
        }
        let (host, path) = match after.strip_prefix("//") {
            Some(auth) => auth.split_at(auth.find('/').unwrap_or(auth.len())),
            None if after.starts_with('/') => ("", after),
            None => return None,
        };
        let host = host.rsplit('@').next().unwrap_or(host);
        Some(Url {
            scheme: scheme.into(),
            host: host.into(),
            path: path.into(),
            query: query.into(),
        })
    }

    fn hostname(&self) -> &str {
        if let Some(rest) = self.host.strip_prefix('[') {
            return rest.split(']').next().unwrap_or(rest);
        }
        self.host.split(':').next().unwrap_or("")
    }

    fn port(&self) -> &str {
        let after = match self.host.rfind(']') {
            Some(i) => &self.host[i + 1..],
            None => &self.host,
        };
        after.rsplit_once(':').map_or("", |(_, p)| p)
    }

    fn query_map(&self) -> Value {
        let mut out: HashMap<String, Vec<Value>> = HashMap::new();
        for pair in self.query.split('&').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            out.entry(k.to_string()).or_default().push(Value::from(v));
        }
        let map: HashMap<cel::objects::Key, Value> = out
            .into_iter()
            .map(|(k, v)| (k.into(), Value::List(Arc::new(v))))
            .collect();
        Value::Map(Map { map: Arc::new(map) })
    }
}

fn of(v: &Value, f: &str) -> Result<Url, ExecutionError> {
    match v {
        Value::Opaque(o) => o.downcast_ref::<Url>().cloned(),
        _ => None,
    }
    .ok_or_else(|| fail(f, format!("no such overload: {f}")))
}

fn getter(
    ctx: &mut Context,
    name: &'static str,
    get: fn(&Url) -> Value,
) -> Result<(), cel::DeclarationError> {
    ctx.add_function(name, move |This(v): This<Value>| {
        of(&v, name).map(|u| get(&u))
    })
}

/// Context functions of this library.
pub(super) fn register(ctx: &mut Context) -> Result<(), cel::DeclarationError> {
    ctx.add_function("url", |s: Arc<String>| {
        Url::parse(&s)
            .map(|u| Value::Opaque(Arc::new(u)))
            .ok_or_else(|| {
                fail(
                    "url",
                    format!("URL parse error during conversion from string: {s}"),
                )
            })
    })?;
    ctx.add_function("isURL", |s: Arc<String>| Url::parse(&s).is_some())?;
    getter(ctx, "getScheme", |u| Value::from(u.scheme.as_str()))?;
    getter(ctx, "getHost", |u| Value::from(u.host.as_str()))?;
    getter(ctx, "getHostname", |u| Value::from(u.hostname()))?;
    getter(ctx, "getPort", |u| Value::from(u.port()))?;
    getter(ctx, "getEscapedPath", |u| Value::from(u.path.as_str()))?;
    getter(ctx, "getQuery", Url::query_map)
}

#[cfg(test)]
mod tests {
    use super::Url;

    #[test]
    fn parses_request_uris() {
        let u = Url::parse("https://user@example.com:8080/a/b?x=1&x=2").unwrap();
        assert_eq!(
            (u.hostname(), u.port(), u.path.as_str()),
            ("example.com", "8080", "/a/b")
        );
        let v6 = Url::parse("http://[::1]:80/").unwrap();
        assert_eq!((v6.hostname(), v6.port()), ("::1", "80"));
        assert!(Url::parse("/just/a/path").is_some());
        assert!(Url::parse("example.com").is_none());
        assert!(Url::parse("").is_none());
    }
}
