//! Impersonation (kube-apiserver's `endpoints/filters/impersonation.go`): `Impersonate-User`
//! (a `system:serviceaccount:<ns>:<name>` user is the ServiceAccount), `Impersonate-Group`
//! (repeatable), `Impersonate-Uid` and `Impersonate-Extra-<key>`. The requester must be allowed
//! the `impersonate` verb on each — `users`, `groups`, `serviceaccounts` (in their namespace),
//! `authentication.k8s.io` `uids` and `userextras/<key>` — else the request is refused with the
//! 403 of the first one missing. What `kubectl --as` / `--as-group` send.

use http::HeaderMap;

use super::attributes::{Attributes, forbidden};
use super::authn::{service_account_groups, split_service_account};
use super::{AUTHENTICATED, Auth, Decision, UserInfo};
use crate::api::status::ApiError;

/// What every impersonation header's name starts with.
const PREFIX: &str = "impersonate-";
const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA: &str = "impersonate-extra-";

/// The attributes the permission to impersonate one thing is checked at.
fn ask(group: &str, resource: &str, namespace: &str, name: &str) -> Attributes {
    let mut attrs = Attributes::resource("impersonate", group, resource, namespace);
    attrs.name = name.to_string();
    attrs.api_version = "v1".into();
    attrs
}

fn values<'h>(headers: &'h HeaderMap, name: &str) -> Vec<&'h str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .collect()
}

/// The user `requester` acts as: `Ok(None)` without impersonation headers; a 403 when a
/// permission is missing; a 500 (upstream's answer) for groups, uid or extra without a user.
pub(crate) fn impersonate(
    auth: &Auth,
    requester: &UserInfo,
    headers: &HeaderMap,
) -> Result<Option<UserInfo>, ApiError> {
    // Most requests impersonate no one: one pass over the names, no lookups.
    if !headers.keys().any(|k| k.as_str().starts_with(PREFIX)) {
        return Ok(None);
    }
    let user = values(headers, USER).first().copied();
    let groups = values(headers, GROUP);
    let uid = values(headers, UID).first().copied();
    let extras: Vec<(String, &str)> = headers
        .iter()
        .filter_map(|(k, v)| {
            Some((
                k.as_str().strip_prefix(EXTRA)?.to_string(),
                v.to_str().ok()?,
            ))
        })
        .collect();
    let Some(user) = user else {
        if groups.is_empty() && uid.is_none() && extras.is_empty() {
            return Ok(None);
        }
        return Err(ApiError::internal(
            "requested impersonation of groups, uid or extra without impersonating a user",
        ));
    };
    let mut asks = Vec::new();
    let mut out = UserInfo::new(user, Vec::new());
    match split_service_account(user) {
        Some((ns, name)) => {
            asks.push(ask("", "serviceaccounts", ns, name));
            if groups.is_empty() {
                out.groups = service_account_groups(ns);
            }
        }
        None => asks.push(ask("", "users", "", user)),
    }
    for g in &groups {
        asks.push(ask("", "groups", "", g));
        out.groups.push(g.to_string());
    }
    for (key, value) in &extras {
        let mut a = ask("authentication.k8s.io", "userextras", "", value);
        a.subresource = key.clone();
        asks.push(a);
        out.extra
            .entry(key.clone())
            .or_default()
            .push(value.to_string());
    }
    if let Some(uid) = uid {
        asks.push(ask("authentication.k8s.io", "uids", "", uid));
        out.uid = uid.to_string();
    }
    for a in &asks {
        if let Decision::Deny(reason) = auth.authorize(requester, a) {
            return Err(forbidden(requester, a, &reason));
        }
    }
    add_authenticated(&mut out);
    Ok(Some(out))
}

/// A non-anonymous impersonated user is in `system:authenticated` unless the groups asked
/// for name it or `system:unauthenticated`.
fn add_authenticated(u: &mut UserInfo) {
    let group = if u.name == "system:anonymous" {
        "system:unauthenticated"
    } else {
        AUTHENTICATED
    };
    if !u
        .groups
        .iter()
        .any(|g| g == AUTHENTICATED || g == "system:unauthenticated")
    {
        u.groups.push(group.to_string());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use http::HeaderValue;
    use serde_json::json;

    use super::*;
    use crate::storage::{Change, Store};

    fn auth_with_impersonator() -> Auth {
        let store = Arc::new(Store::new(100, 100));
        let put = |plural: &str, obj: serde_json::Value| {
            let name = obj["metadata"]["name"].as_str().unwrap().to_string();
            let key = crate::storage::store_key("rbac.authorization.k8s.io", plural);
            store
                .commit(&key, &crate::storage::obj_key("", &name), false, |_| {
                    Ok(Change::Put(obj))
                })
                .unwrap();
        };
        put(
            "clusterroles",
            json!({"metadata": {"name": "imp"}, "rules": [
            {"apiGroups": [""], "resources": ["users"], "resourceNames": ["bob"], "verbs": ["impersonate"]},
            {"apiGroups": [""], "resources": ["groups"], "verbs": ["impersonate"]}]}),
        );
        put(
            "clusterrolebindings",
            json!({"metadata": {"name": "imp"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "imp"},
            "subjects": [{"kind": "User", "name": "alice"}]}),
        );
        Auth::new("adm".into(), store, super::super::Authorization::Rbac)
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn allowed_impersonation_changes_the_user() {
        let a = auth_with_impersonator();
        let alice = UserInfo::new("alice", vec![AUTHENTICATED.into()]);
        assert_eq!(impersonate(&a, &alice, &HeaderMap::new()).unwrap(), None);
        let u = impersonate(
            &a,
            &alice,
            &headers(&[
                ("Impersonate-User", "bob"),
                ("Impersonate-Group", "g1"),
                ("Impersonate-Group", "g2"),
            ]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (u.name.as_str(), u.groups.clone()),
            (
                "bob",
                vec!["g1".to_string(), "g2".into(), AUTHENTICATED.into()]
            )
        );
    }

    #[test]
    fn impersonation_without_permission_is_forbidden() {
        let a = auth_with_impersonator();
        let alice = UserInfo::new("alice", vec![]);
        let e = impersonate(&a, &alice, &headers(&[("Impersonate-User", "carol")])).unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            r#"users "carol" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#
        );
        let e = impersonate(
            &a,
            &alice,
            &headers(&[("Impersonate-User", "system:serviceaccount:ns:sa")]),
        )
        .unwrap_err();
        assert_eq!(
            e.message,
            r#"serviceaccounts "sa" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns""#
        );
        let bob = UserInfo::new("bob", vec![]);
        assert_eq!(
            impersonate(&a, &bob, &headers(&[("Impersonate-User", "bob")]))
                .unwrap_err()
                .code,
            403
        );
        assert_eq!(
            impersonate(&a, &alice, &headers(&[("Impersonate-Group", "g")]))
                .unwrap_err()
                .code,
            500
        );
    }

    #[test]
    fn masters_may_impersonate_service_accounts_and_get_their_groups() {
        let a = auth_with_impersonator();
        let admin = UserInfo::new("admin", vec![super::super::MASTERS.into()]);
        let u = impersonate(
            &a,
            &admin,
            &headers(&[("Impersonate-User", "system:serviceaccount:ns:sa")]),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            u.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:ns",
                AUTHENTICATED
            ]
        );
    }
}
