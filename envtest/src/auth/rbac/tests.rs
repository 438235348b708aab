//! The RBAC evaluator against a store holding roles and bindings.

use serde_json::{Value, json};

use super::*;
use crate::storage::Change;

fn put(store: &Store, plural: &str, obj: Value) {
    let ns = obj["metadata"]["namespace"]
        .as_str()
        .unwrap_or("")
        .to_string();
    let name = obj["metadata"]["name"].as_str().unwrap_or("").to_string();
    let key = crate::storage::store_key(GROUP, plural);
    store
        .commit(&key, &crate::storage::obj_key(&ns, &name), false, |_| {
            Ok(Change::Put(obj))
        })
        .unwrap();
}

fn remove(store: &Store, plural: &str, ns: &str, name: &str) {
    let key = crate::storage::store_key(GROUP, plural);
    store
        .commit(&key, &crate::storage::obj_key(ns, name), false, |_| {
            Ok(Change::Remove)
        })
        .unwrap();
}

fn role(store: &Store, ns: &str, name: &str, rules: Value) {
    let (plural, kind) = if ns.is_empty() {
        ("clusterroles", "ClusterRole")
    } else {
        ("roles", "Role")
    };
    put(
        store,
        plural,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name, "namespace": ns}, "rules": rules}),
    );
}

fn bind(store: &Store, ns: &str, name: &str, role_kind: &str, role: &str, subjects: Value) {
    let (plural, kind) = if ns.is_empty() {
        ("clusterrolebindings", "ClusterRoleBinding")
    } else {
        ("rolebindings", "RoleBinding")
    };
    put(
        store,
        plural,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": {"name": name, "namespace": ns},
        "roleRef": {"apiGroup": GROUP, "kind": role_kind, "name": role}, "subjects": subjects}),
    );
}

fn attrs(verb: &str, group: &str, resource: &str, ns: &str) -> Attributes {
    Attributes::resource(verb, group, resource, ns)
}

fn alice() -> UserInfo {
    UserInfo::new("alice", vec!["devs".into(), "system:authenticated".into()])
}

fn allowed(store: &Store, u: &UserInfo, a: &Attributes) -> bool {
    matches!(authorize(store, u, a), Decision::Allow(_))
}

#[test]
fn a_role_binding_grants_its_verbs_in_its_namespace_only() {
    let s = Store::new(100, 100);
    role(
        &s,
        "a",
        "reader",
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]),
    );
    bind(
        &s,
        "a",
        "rb",
        "Role",
        "reader",
        json!([{"kind": "User", "name": "alice"}]),
    );
    let u = alice();
    for v in ["get", "list", "watch"] {
        assert!(allowed(&s, &u, &attrs(v, "", "pods", "a")), "{v}");
        assert!(
            !allowed(&s, &u, &attrs(v, "", "pods", "b")),
            "{v} elsewhere"
        );
        assert!(
            !allowed(&s, &u, &attrs(v, "", "pods", "")),
            "{v} cluster-wide"
        );
    }
    for v in ["create", "update", "patch", "delete", "deletecollection"] {
        assert!(!allowed(&s, &u, &attrs(v, "", "pods", "a")), "{v}");
    }
    assert!(!allowed(&s, &u, &attrs("get", "", "secrets", "a")));
    assert!(
        !allowed(&s, &u, &attrs("get", "apps", "pods", "a")),
        "another group"
    );
    assert_eq!(
        authorize(&s, &u, &attrs("get", "", "pods", "a")),
        Decision::Allow(
            r#"RBAC: allowed by RoleBinding "rb/a" of Role "reader" to User "alice""#.into()
        )
    );
    remove(&s, "rolebindings", "a", "rb");
    assert!(
        !allowed(&s, &u, &attrs("get", "", "pods", "a")),
        "binding removed"
    );
}

#[test]
fn cluster_role_bindings_grant_everywhere_and_role_bindings_scope_cluster_roles() {
    let s = Store::new(100, 100);
    role(
        &s,
        "",
        "cm-editor",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["*"]}]),
    );
    bind(
        &s,
        "x",
        "rb",
        "ClusterRole",
        "cm-editor",
        json!([{"kind": "Group", "name": "devs"}]),
    );
    let u = alice();
    assert!(allowed(&s, &u, &attrs("delete", "", "configmaps", "x")));
    assert!(!allowed(&s, &u, &attrs("delete", "", "configmaps", "y")));
    bind(
        &s,
        "",
        "crb",
        "ClusterRole",
        "cm-editor",
        json!([{"kind": "Group", "name": "devs"}]),
    );
    assert!(allowed(&s, &u, &attrs("delete", "", "configmaps", "y")));
    assert!(allowed(&s, &u, &attrs("list", "", "configmaps", "")));
    assert_eq!(
        authorize(&s, &u, &attrs("get", "", "configmaps", "y")),
        Decision::Allow(r#"RBAC: allowed by ClusterRoleBinding "crb" of ClusterRole "cm-editor" to Group "devs""#.into())
    );
}

#[test]
fn resource_names_subresources_and_wildcards() {
    let s = Store::new(100, 100);
    role(
        &s,
        "",
        "r",
        json!([
            {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["one"], "verbs": ["get", "update"]},
            {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["update"]},
            {"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]},
            {"apiGroups": ["batch"], "resources": ["*"], "verbs": ["list"]},
        ]),
    );
    bind(
        &s,
        "",
        "b",
        "ClusterRole",
        "r",
        json!([{"kind": "User", "name": "alice"}]),
    );
    let u = alice();
    let named = |verb: &str, name: &str| Attributes {
        name: name.into(),
        ..attrs(verb, "", "configmaps", "n")
    };
    assert!(allowed(&s, &u, &named("get", "one")));
    assert!(!allowed(&s, &u, &named("get", "two")));
    assert!(
        !allowed(&s, &u, &named("list", "")),
        "resourceNames never allow an unnamed list"
    );
    let sub = |group: &str, res: &str, sub: &str, verb: &str| Attributes {
        subresource: sub.into(),
        name: "d".into(),
        ..attrs(verb, group, res, "n")
    };
    assert!(allowed(
        &s,
        &u,
        &sub("apps", "deployments", "scale", "update")
    ));
    assert!(
        !allowed(&s, &u, &sub("apps", "deployments", "", "update")),
        "the subresource rule does not cover the object"
    );
    assert!(!allowed(
        &s,
        &u,
        &sub("apps", "deployments", "scale", "get")
    ));
    assert!(
        allowed(&s, &u, &sub("apps", "deployments", "status", "get")),
        "*/status"
    );
    assert!(
        allowed(&s, &u, &sub("", "pods", "status", "get")),
        "*/status in any group"
    );
    assert!(!allowed(&s, &u, &sub("", "pods", "log", "get")));
    assert!(allowed(&s, &u, &attrs("list", "batch", "jobs", "n")));
    assert!(
        allowed(&s, &u, &sub("batch", "jobs", "status", "list")),
        "* covers subresources"
    );
}

#[test]
fn non_resource_urls() {
    let s = Store::new(100, 100);
    role(
        &s,
        "",
        "m",
        json!([{"nonResourceURLs": ["/metrics", "/logs/*"], "verbs": ["get"]}]),
    );
    bind(
        &s,
        "",
        "b",
        "ClusterRole",
        "m",
        json!([{"kind": "User", "name": "alice"}]),
    );
    let u = alice();
    let nr = |verb: &str, path: &str| Attributes::non_resource(verb, path);
    assert!(allowed(&s, &u, &nr("get", "/metrics")));
    assert!(!allowed(&s, &u, &nr("post", "/metrics")));
    assert!(!allowed(&s, &u, &nr("get", "/metrics/x")));
    assert!(allowed(&s, &u, &nr("get", "/logs/a/b")));
    assert!(allowed(&s, &u, &nr("get", "/logs/")));
    assert!(!allowed(&s, &u, &nr("get", "/logs")));
    // Non-resource rules of a namespaced binding never apply (there is no namespace).
    role(
        &s,
        "",
        "h",
        json!([{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]),
    );
    bind(
        &s,
        "a",
        "rb",
        "ClusterRole",
        "h",
        json!([{"kind": "User", "name": "alice"}]),
    );
    assert!(!allowed(&s, &u, &nr("get", "/healthz")));
}

#[test]
fn service_account_subjects_default_to_the_binding_namespace() {
    let s = Store::new(100, 100);
    role(
        &s,
        "a",
        "r",
        json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]),
    );
    bind(
        &s,
        "a",
        "rb",
        "Role",
        "r",
        json!([{"kind": "ServiceAccount", "name": "sa"}]),
    );
    let sa = UserInfo::new("system:serviceaccount:a:sa", vec![]);
    let other = UserInfo::new("system:serviceaccount:b:sa", vec![]);
    assert!(allowed(&s, &sa, &attrs("list", "", "pods", "a")));
    assert!(!allowed(&s, &other, &attrs("list", "", "pods", "a")));
    assert_eq!(
        authorize(&s, &sa, &attrs("list", "", "pods", "a")),
        Decision::Allow(
            r#"RBAC: allowed by RoleBinding "rb/a" of Role "r" to ServiceAccount "sa/a""#.into()
        )
    );
    // In a ClusterRoleBinding a ServiceAccount subject needs its namespace.
    role(
        &s,
        "",
        "cr",
        json!([{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]),
    );
    bind(
        &s,
        "",
        "crb",
        "ClusterRole",
        "cr",
        json!([{"kind": "ServiceAccount", "name": "sa"}]),
    );
    assert!(!allowed(&s, &sa, &attrs("list", "", "nodes", "")));
    bind(
        &s,
        "",
        "crb",
        "ClusterRole",
        "cr",
        json!([{"kind": "ServiceAccount", "name": "sa", "namespace": "a"}]),
    );
    assert!(allowed(&s, &sa, &attrs("list", "", "nodes", "")));
}

#[test]
fn a_binding_to_a_missing_role_grants_nothing_and_says_so() {
    let s = Store::new(100, 100);
    bind(
        &s,
        "",
        "crb",
        "ClusterRole",
        "gone",
        json!([{"kind": "User", "name": "alice"}]),
    );
    bind(
        &s,
        "a",
        "rb",
        "Role",
        "gone-too",
        json!([{"kind": "User", "name": "alice"}]),
    );
    assert_eq!(
        authorize(&s, &alice(), &attrs("get", "", "pods", "a")),
        Decision::Deny(r#"RBAC: [clusterrole.rbac.authorization.k8s.io "gone" not found, role.rbac.authorization.k8s.io "gone-too" not found]"#.into())
    );
    assert_eq!(
        authorize(&s, &alice(), &attrs("get", "", "pods", "")),
        Decision::Deny(r#"RBAC: clusterrole.rbac.authorization.k8s.io "gone" not found"#.into())
    );
    assert_eq!(
        authorize(
            &s,
            &UserInfo::new("bob", vec![]),
            &attrs("get", "", "pods", "a")
        ),
        Decision::Deny(String::new())
    );
}
