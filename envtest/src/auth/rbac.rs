//! RBAC evaluation, ported from kube-apiserver's `plugin/pkg/auth/authorizer/rbac` and
//! `pkg/registry/rbac/validation` (`DefaultRuleResolver`): the ClusterRoleBindings, then the
//! RoleBindings of the request's namespace, whose subjects include the user, grant the rules of
//! their Role or ClusterRole as stored (an aggregated ClusterRole's rules are filled in by
//! [`controllers::clusterrole_aggregation`](crate::controllers::clusterrole_aggregation), as
//! upstream's controller does); a request is allowed when one rule covers it ([`rule_allows`]). A
//! binding to a missing role grants nothing and is named in the denial's reason. Reads the objects
//! from `storage` at every decision, so bindings added or removed take effect on the next request.

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use serde::de::DeserializeOwned;

use super::attributes::Attributes;
use super::{Decision, UserInfo};
use crate::storage::Store;

const GROUP: &str = "rbac.authorization.k8s.io";

/// The rules a binding grants, and upstream's description of it for the allow reason
/// (`ClusterRoleBinding "b" of ClusterRole "r" to User "u"`).
struct Grant {
    source: String,
    rules: Vec<PolicyRule>,
}

fn list<T: DeserializeOwned>(store: &Store, plural: &str, ns: Option<&str>) -> Vec<T> {
    let key = crate::storage::store_key(GROUP, plural);
    store
        .list(&key, ns, None)
        .map(|(_, items)| items)
        .unwrap_or_default()
        .iter()
        .filter_map(|(_, b)| serde_json::from_slice(b).ok())
        .collect()
}

fn get<T: DeserializeOwned>(store: &Store, plural: &str, ns: &str, name: &str) -> Option<T> {
    let key = crate::storage::store_key(GROUP, plural);
    let b = store.get(&key, &crate::storage::obj_key(ns, name))?;
    serde_json::from_slice(&b).ok()
}

/// The decision for `user` doing `attrs` by RBAC alone (no `system:masters` bypass).
pub(crate) fn authorize(store: &Store, user: &UserInfo, attrs: &Attributes) -> Decision {
    let (grants, errors) = resolve(store, user, &attrs.namespace);
    for g in &grants {
        if g.rules.iter().any(|r| rule_allows(attrs, r)) {
            return Decision::Allow(format!("RBAC: allowed by {}", g.source));
        }
    }
    if errors.is_empty() {
        Decision::Deny(String::new())
    } else {
        Decision::Deny(format!("RBAC: {}", aggregate(&errors)))
    }
}

/// Every rule granted to `user` in `namespace` (cluster-wide ones included), and the errors
/// met (missing roles): a `SelfSubjectRulesReview`'s answer.
pub(crate) fn rules_for(
    store: &Store,
    user: &UserInfo,
    namespace: &str,
) -> (Vec<PolicyRule>, Vec<String>) {
    let (grants, errors) = resolve(store, user, namespace);
    (grants.into_iter().flat_map(|g| g.rules).collect(), errors)
}

/// Upstream's `utilerrors.NewAggregate(..).Error()`: one message, or `[a, b]` (duplicates once).
fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    match seen.as_slice() {
        [one] => one.to_string(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The grants of the bindings that apply to `user`: cluster-wide, then in `namespace`.
fn resolve(store: &Store, user: &UserInfo, namespace: &str) -> (Vec<Grant>, Vec<String>) {
    let mut grants = Vec::new();
    let mut errors = Vec::new();
    for b in list::<ClusterRoleBinding>(store, "clusterrolebindings", None) {
        let Some(s) = applying_subject(user, b.subjects.as_deref(), "") else {
            continue;
        };
        match role_rules(store, &b.role_ref, "") {
            Ok(rules) => grants.push(Grant {
                source: format!(
                    "ClusterRoleBinding {:?} of {} {:?} to {}",
                    b.metadata.name.unwrap_or_default(),
                    b.role_ref.kind,
                    b.role_ref.name,
                    describe(s, "")
                ),
                rules,
            }),
            Err(e) => errors.push(e),
        }
    }
    if namespace.is_empty() {
        return (grants, errors);
    }
    for b in list::<RoleBinding>(store, "rolebindings", Some(namespace)) {
        let Some(s) = applying_subject(user, b.subjects.as_deref(), namespace) else {
            continue;
        };
        match role_rules(store, &b.role_ref, namespace) {
            Ok(rules) => grants.push(Grant {
                source: format!(
                    "RoleBinding {:?} of {} {:?} to {}",
                    format!("{}/{namespace}", b.metadata.name.unwrap_or_default()),
                    b.role_ref.kind,
                    b.role_ref.name,
                    describe(s, namespace)
                ),
                rules,
            }),
            Err(e) => errors.push(e),
        }
    }
    (grants, errors)
}

/// The first subject of a binding that `user` is.
fn applying_subject<'s>(
    user: &UserInfo,
    subjects: Option<&'s [Subject]>,
    namespace: &str,
) -> Option<&'s Subject> {
    subjects?.iter().find(|s| applies_to(user, s, namespace))
}

/// Upstream's `appliesToUser`: a ServiceAccount subject without a namespace means the
/// binding's namespace.
fn applies_to(user: &UserInfo, s: &Subject, namespace: &str) -> bool {
    match s.kind.as_str() {
        "User" => user.name == s.name,
        "Group" => user.groups.contains(&s.name),
        "ServiceAccount" => {
            let ns = s
                .namespace
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or(namespace);
            !ns.is_empty() && user.name == format!("system:serviceaccount:{ns}:{}", s.name)
        }
        _ => false,
    }
}

fn describe(s: &Subject, binding_namespace: &str) -> String {
    match s.kind.as_str() {
        "ServiceAccount" => {
            let ns = s
                .namespace
                .as_deref()
                .filter(|n| !n.is_empty())
                .unwrap_or(binding_namespace);
            format!("ServiceAccount {:?}", format!("{}/{ns}", s.name))
        }
        k => format!("{k} {:?}", s.name),
    }
}

/// The rules of a binding's role (upstream's `GetRoleReferenceRules`).
fn role_rules(store: &Store, r: &RoleRef, namespace: &str) -> Result<Vec<PolicyRule>, String> {
    match r.kind.as_str() {
        "Role" => get::<Role>(store, "roles", namespace, &r.name)
            .map(|role| role.rules.unwrap_or_default())
            .ok_or_else(|| format!("role.{GROUP} {:?} not found", r.name)),
        "ClusterRole" => get::<ClusterRole>(store, "clusterroles", "", &r.name)
            .map(|role| role.rules.unwrap_or_default())
            .ok_or_else(|| format!("clusterrole.{GROUP} {:?} not found", r.name)),
        k => Err(format!("unsupported role reference kind: {k:?}")),
    }
}

/// Upstream's `RuleAllows`.
pub(crate) fn rule_allows(a: &Attributes, rule: &PolicyRule) -> bool {
    let any = |list: &Option<Vec<String>>, want: &str| {
        list.iter().flatten().any(|x| x == "*" || x == want)
    };
    let verb = rule.verbs.iter().any(|v| v == "*" || *v == a.verb);
    if !a.resource_request {
        return verb && non_resource_url_matches(rule, &a.path);
    }
    verb && any(&rule.api_groups, &a.api_group)
        && resource_matches(rule, &a.combined_resource(), &a.subresource)
        && (rule.resource_names.as_ref().is_none_or(Vec::is_empty)
            || rule.resource_names.iter().flatten().any(|n| *n == a.name))
}

/// `*`, the exact `resource[/subresource]`, or `*/subresource`.
fn resource_matches(rule: &PolicyRule, combined: &str, sub: &str) -> bool {
    rule.resources.iter().flatten().any(|r| {
        r == "*"
            || r == combined
            || (!sub.is_empty()
                && r.len() == sub.len() + 2
                && r.starts_with("*/")
                && r.ends_with(sub))
    })
}

/// `*`, the exact path, or a prefix ending in `*`.
fn non_resource_url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls.iter().flatten().any(|u| {
        u == "*"
            || u == path
            || u.strip_suffix('*')
                .is_some_and(|p| path.starts_with(p.trim_end_matches('*')))
    })
}

#[cfg(test)]
mod tests;
