//! Kubernetes' CEL URL library (`library/urls.go`): `url(s)`, `isURL(s)`, and on a URL
//! `getScheme`, `getHost`, `getHostname`, `getPort`, `getEscapedPath`, `getQuery`. As Go's
//! `url.ParseRequestURI`, a URL is absolute (`scheme://...`) or an absolute path (`/...`): the
//! parsing is [`crate::api::net::Url`]'s, this module makes it a CEL value.

use std::collections::HashMap;
use std::sync::Arc;

use cel::extractors::This;
use cel::objects::{Map, Opaque};
use cel::{Context, ExecutionError, Value};

use crate::api::net::Url;

use super::fail;

impl Opaque for Url {
    fn runtime_type_name(&self) -> &str {
        "kubernetes.URL"
    }
}

/// `getQuery()`: each key with its values (in the order given).
fn query_map(u: &Url) -> Value {
    let mut out: HashMap<String, Vec<Value>> = HashMap::new();
    for pair in u.query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        out.entry(k.to_string()).or_default().push(Value::from(v));
    }
    let map: HashMap<cel::objects::Key, Value> = out
        .into_iter()
        .map(|(k, v)| (k.into(), Value::List(Arc::new(v))))
        .collect();
    Value::Map(Map { map: Arc::new(map) })
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
    getter(ctx, "getQuery", query_map)
}
