//! The review answers against a store holding roles, bindings and a ServiceAccount.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::storage::{Change, Store};

fn auth() -> Auth {
    let store = Arc::new(Store::new(100, 100));
    let put = |group: &str, plural: &str, ns: &str, obj: Value| {
        let name = obj["metadata"]["name"].as_str().unwrap().to_string();
        let key = crate::storage::store_key(group, plural);
        store
            .commit(&key, &crate::storage::obj_key(ns, &name), false, |_| {
                Ok(Change::Put(obj))
            })
            .unwrap();
    };
    put(
        "rbac.authorization.k8s.io",
        "roles",
        "a",
        json!({"metadata": {"name": "r", "namespace": "a"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}, {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["c"], "verbs": ["get"]}]}),
    );
    put(
        "rbac.authorization.k8s.io",
        "rolebindings",
        "a",
        json!({"metadata": {"name": "rb", "namespace": "a"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}, "subjects": [{"kind": "User", "name": "alice"}]}),
    );
    put(
        "",
        "serviceaccounts",
        "a",
        json!({"metadata": {"name": "sa", "namespace": "a", "uid": "sa-uid"}}),
    );
    Auth::new("adm".into(), store, Authorization::Rbac)
}

fn alice() -> UserInfo {
    UserInfo::new("alice", vec!["system:authenticated".into()])
}

#[test]
fn subject_access_reviews_answer_for_the_named_user() {
    let a = auth();
    let sar = |user: &str, ns: &str| json!({"spec": {"user": user, "resourceAttributes": {"namespace": ns, "verb": "list", "resource": "pods"}}});
    let out = answer(&a, &alice(), "subjectaccessreviews", "", sar("alice", "a")).unwrap();
    assert_eq!(
        out["status"],
        json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"rb/a\" of Role \"r\" to User \"alice\""})
    );
    let out = answer(&a, &alice(), "subjectaccessreviews", "", sar("alice", "b")).unwrap();
    assert_eq!(out["status"], json!({"allowed": false}));
    let masters = json!({"spec": {"groups": ["system:masters"], "nonResourceAttributes": {"verb": "get", "path": "/metrics"}}});
    assert_eq!(
        answer(&a, &alice(), "subjectaccessreviews", "", masters).unwrap()["status"],
        json!({"allowed": true})
    );
}

#[test]
fn bad_subject_access_reviews_are_invalid() {
    let a = auth();
    let e = answer(
        &a,
        &alice(),
        "subjectaccessreviews",
        "",
        json!({"spec": {"user": "x"}}),
    )
    .unwrap_err();
    assert_eq!(e.code, 422);
    assert!(e.message.contains("spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified"), "{}", e.message);
    let e = answer(
        &a,
        &alice(),
        "subjectaccessreviews",
        "",
        json!({"spec": {"nonResourceAttributes": {"path": "/x", "verb": "get"}}}),
    )
    .unwrap_err();
    assert!(
        e.message.contains(
            "spec.user: Invalid value: \"\": at least one of user or group must be specified"
        ),
        "{}",
        e.message
    );
}

#[test]
fn self_reviews_answer_for_the_caller() {
    let a = auth();
    let can = |verb: &str, res: &str, name: &str| json!({"spec": {"resourceAttributes": {"namespace": "a", "verb": verb, "resource": res, "name": name}}});
    assert_eq!(
        answer(
            &a,
            &alice(),
            "selfsubjectaccessreviews",
            "",
            can("list", "pods", "")
        )
        .unwrap()["status"]["allowed"],
        true
    );
    assert_eq!(
        answer(
            &a,
            &alice(),
            "selfsubjectaccessreviews",
            "",
            can("delete", "pods", "")
        )
        .unwrap()["status"]["allowed"],
        false
    );
    assert_eq!(
        answer(
            &a,
            &alice(),
            "selfsubjectaccessreviews",
            "",
            can("get", "configmaps", "c")
        )
        .unwrap()["status"]["allowed"],
        true
    );
    assert_eq!(
        answer(
            &a,
            &alice(),
            "selfsubjectaccessreviews",
            "",
            can("get", "configmaps", "d")
        )
        .unwrap()["status"]["allowed"],
        false
    );
    let who = answer(&a, &alice(), "selfsubjectreviews", "", json!({})).unwrap();
    assert_eq!(
        who["status"]["userInfo"],
        json!({"username": "alice", "groups": ["system:authenticated"]})
    );
}

#[test]
fn self_subject_rules_reviews_list_the_callers_rules() {
    let a = auth();
    let rules = answer(
        &a,
        &alice(),
        "selfsubjectrulesreviews",
        "",
        json!({"spec": {"namespace": "a"}}),
    )
    .unwrap();
    assert_eq!(
        rules["status"]["resourceRules"],
        json!([
        {"verbs": ["list"], "apiGroups": [""], "resources": ["pods"]},
        {"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["c"]}])
    );
    assert_eq!(rules["status"]["incomplete"], false);
    let admin = UserInfo::new("admin", vec![MASTERS.into()]);
    let rules = answer(
        &a,
        &admin,
        "selfsubjectrulesreviews",
        "",
        json!({"spec": {"namespace": "a"}}),
    )
    .unwrap();
    assert_eq!(
        rules["status"]["nonResourceRules"],
        json!([{"verbs": ["*"], "nonResourceURLs": ["*"]}])
    );
}

#[test]
fn token_requests_and_reviews() {
    let a = auth();
    let sa = a
        .store()
        .get_value(
            &crate::storage::store_key("", "serviceaccounts"),
            &crate::storage::obj_key("a", "sa"),
        )
        .unwrap();
    let tr = token_request(&a, &sa, json!({"spec": {}})).unwrap();
    assert_eq!(tr["spec"]["expirationSeconds"], 3600);
    assert_eq!(tr["spec"]["audiences"], json!([token::ISSUER]));
    let t = tr["status"]["token"].as_str().unwrap();
    let review = answer(
        &a,
        &alice(),
        "tokenreviews",
        "",
        json!({"spec": {"token": t}}),
    )
    .unwrap();
    assert_eq!(review["status"]["authenticated"], true);
    assert_eq!(
        review["status"]["user"]["username"],
        "system:serviceaccount:a:sa"
    );
    assert_eq!(review["status"]["user"]["uid"], "sa-uid");
    let bad = answer(
        &a,
        &alice(),
        "tokenreviews",
        "",
        json!({"spec": {"token": "nope"}}),
    )
    .unwrap();
    assert_eq!(bad["status"], json!({"user": {}}));
    assert_eq!(
        answer(&a, &alice(), "tokenreviews", "", json!({"spec": {}}))
            .unwrap_err()
            .code,
        400
    );
    let e = token_request(&a, &sa, json!({"spec": {"expirationSeconds": 100}})).unwrap_err();
    assert_eq!(e.code, 422);
    assert!(e.message.contains("spec.expirationSeconds: Invalid value: 100: may not specify a duration less than 10 minutes"), "{}", e.message);
    let vault = token_request(
        &a,
        &sa,
        json!({"spec": {"audiences": ["vault"], "expirationSeconds": 600}}),
    )
    .unwrap();
    let vt = vault["status"]["token"].as_str().unwrap();
    assert_eq!(
        a.authn.authenticate(Some(&format!("Bearer {vt}"))),
        Err(()),
        "not for this server"
    );
    let review = answer(
        &a,
        &alice(),
        "tokenreviews",
        "",
        json!({"spec": {"token": vt, "audiences": ["vault"]}}),
    )
    .unwrap();
    assert_eq!(review["status"]["audiences"], json!(["vault"]));
}
