//! Which webhooks a write goes to: a configuration's `webhooks[]` as [`Hook`]s, their
//! `rules` (operations, apiGroups, apiVersions, resources incl. `x/status` and `*/*`,
//! scope, `matchPolicy` Exact or Equivalent — the same resource at another served version)
//! and their namespace and object selectors (`matchLabels` and `matchExpressions`,
//! evaluated with the server's label selector).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::api::selector::LabelSelector;
use crate::registry::ResourceType;
use crate::registry::context::Apiserver;

/// One webhook of a configuration.
#[derive(Clone, Debug)]
pub(crate) struct Hook {
    pub name: String,
    pub url: String,
    pub ca_bundle: String,
    pub timeout: Duration,
    pub ignore_failures: bool,
    /// `matchPolicy: Exact`; the default `Equivalent` also matches the resource at its
    /// other versions.
    exact: bool,
    side_effects: String,
    rules: Vec<Value>,
    namespace_selector: Option<LabelSelector>,
    object_selector: Option<LabelSelector>,
    bad_selector: bool,
}

fn strs(v: Option<&Value>) -> Vec<&str> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// A `metav1.LabelSelector` object as the selector string grammar, parsed.
fn selector(v: Option<&Value>) -> Result<Option<LabelSelector>, String> {
    let Some(v) = v.filter(|v| v.is_object()) else {
        return Ok(None);
    };
    let mut parts = Vec::new();
    if let Some(m) = v.get("matchLabels").and_then(Value::as_object) {
        for (k, val) in m {
            parts.push(format!("{k}={}", val.as_str().unwrap_or("")));
        }
    }
    for e in v
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let values = strs(e.get("values")).join(",");
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => parts.push(format!("{key} in ({values})")),
            "NotIn" => parts.push(format!("{key} notin ({values})")),
            "Exists" => parts.push(key.to_string()),
            "DoesNotExist" => parts.push(format!("!{key}")),
            op => return Err(format!("unknown selector operator {op:?}")),
        }
    }
    LabelSelector::parse(&parts.join(",")).map(Some)
}

/// The webhooks of `configs`.
pub(crate) fn hooks(configs: &[Value]) -> Vec<Hook> {
    let mut out = Vec::new();
    for c in configs {
        for w in c
            .get("webhooks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let cc = w.get("clientConfig").cloned().unwrap_or(Value::Null);
            let ns = selector(w.get("namespaceSelector"));
            let obj = selector(w.get("objectSelector"));
            let bad_selector = ns.is_err() || obj.is_err();
            out.push(Hook {
                name: w
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                url: match (cc.get("url").and_then(Value::as_str), cc.get("service")) {
                    (Some(url), _) => url.to_string(),
                    (None, Some(svc)) => crate::webhook_client::service_url(svc),
                    (None, None) => String::new(),
                },
                ca_bundle: cc
                    .get("caBundle")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                timeout: Duration::from_secs(
                    w.get("timeoutSeconds")
                        .and_then(Value::as_u64)
                        .unwrap_or(10)
                        .clamp(1, 30),
                ),
                ignore_failures: w.get("failurePolicy").and_then(Value::as_str) == Some("Ignore"),
                exact: w.get("matchPolicy").and_then(Value::as_str) == Some("Exact"),
                side_effects: w
                    .get("sideEffects")
                    .and_then(Value::as_str)
                    .unwrap_or("Unknown")
                    .to_string(),
                rules: w
                    .get("rules")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
                namespace_selector: ns.ok().flatten(),
                object_selector: obj.ok().flatten(),
                bad_selector,
            });
        }
    }
    out
}

fn has(list: &[&str], v: &str) -> bool {
    list.iter().any(|x| *x == "*" || *x == v)
}

impl Hook {
    /// The version of the resource this webhook is called at: `rt` itself when a rule
    /// names it, else (`matchPolicy: Equivalent`) the first of `equivalents` (the same
    /// resource at its other served versions) a rule names.
    pub fn matching_type(
        &self,
        rt: &Arc<ResourceType>,
        equivalents: &[Arc<ResourceType>],
        sub: Option<&str>,
        op: &str,
    ) -> Option<Arc<ResourceType>> {
        if self.matches_rules(rt, sub, op) {
            return Some(rt.clone());
        }
        if self.exact {
            return None;
        }
        equivalents
            .iter()
            .find(|t| t.version != rt.version && self.matches_rules(t, sub, op))
            .cloned()
    }

    /// Whether a rule covers this operation on this resource (and subresource).
    pub fn matches_rules(&self, rt: &ResourceType, sub: Option<&str>, op: &str) -> bool {
        self.rules.iter().any(|r| {
            let resources = strs(r.get("resources"));
            let res_ok = match sub {
                None => resources.iter().any(|x| *x == "*" || *x == rt.plural),
                Some(s) => resources.iter().any(|x| {
                    let (p, xs) = x.split_once('/').unwrap_or((x, ""));
                    (p == "*" || p == rt.plural) && (xs == "*" || xs == s)
                }),
            };
            let scope_ok = match r.get("scope").and_then(Value::as_str).unwrap_or("*") {
                "Cluster" => !rt.namespaced,
                "Namespaced" => rt.namespaced,
                _ => true,
            };
            has(&strs(r.get("operations")), op)
                && has(&strs(r.get("apiGroups")), &rt.group)
                && has(&strs(r.get("apiVersions")), &rt.version)
                && res_ok
                && scope_ok
        })
    }

    /// Whether the namespace and object selectors match (either object for the latter).
    pub fn matches_selectors(
        &self,
        ns_labels: Option<&Map<String, Value>>,
        new: Option<&Value>,
        old: Option<&Value>,
    ) -> bool {
        if self.bad_selector {
            return false;
        }
        if let (Some(sel), Some(labels)) = (&self.namespace_selector, ns_labels)
            && !sel.matches(Some(labels))
        {
            return false;
        }
        match &self.object_selector {
            None => true,
            Some(sel) => [new, old]
                .into_iter()
                .flatten()
                .any(|o| sel.matches_object(o)),
        }
    }

    /// Whether the webhook may be called on a dry run.
    pub fn dry_run_safe(&self) -> bool {
        matches!(self.side_effects.as_str(), "None" | "NoneOnDryRun")
    }
}

/// The labels the namespace selector sees: the namespace's (for a namespaced object),
/// the object's own (for a Namespace), or none (cluster-scoped: always matches).
pub(crate) fn namespace_labels(
    api: &Apiserver,
    rt: &ResourceType,
    ns: Option<&str>,
    obj: Option<&Value>,
) -> Option<Map<String, Value>> {
    let labels_of = |o: &Value| {
        o.get("metadata")
            .and_then(|m| m.get("labels"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    if rt.is("", "namespaces") {
        return obj.map(labels_of);
    }
    if !rt.namespaced {
        return None;
    }
    let ns_rt = api
        .registry
        .snapshot()
        .get("", "v1", "namespaces")
        .cloned()?;
    let okey = crate::registry::objects::okey(&ns_rt, None, ns.unwrap_or(""));
    Some(
        api.store
            .get_value(&ns_rt.store_key(), &okey)
            .map(|o| labels_of(&o))
            .unwrap_or_default(),
    )
}
