//! Malformed DeleteOptions never delete (issue 23, finding 1): the body and the query are
//! decoded into the typed `meta/v1` DeleteOptions as upstream's handler does, so a value of the
//! wrong JSON type is a 400 `BadRequest` — on an object, a collection and a namespace — and
//! `dryRun: ["All"]` deletes nothing. Each case checks that every object, every
//! resourceVersion and every watch is untouched.

use crate::common;

use common::{Untouched, cm};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, PostParams};
use serde_json::Value;

/// Bodies whose fields have the wrong JSON type (or that are not an object at all).
const BAD_BODIES: &[&str] = &[
    r#"{"dryRun":"All"}"#,
    r#"{"dryRun":[1]}"#,
    r#"{"preconditions":{"uid":12345}}"#,
    r#"{"preconditions":"garbage"}"#,
    r#"{"preconditions":[]}"#,
    r#"{"preconditions":{"resourceVersion":1}}"#,
    "123",
    "[]",
    r#""x""#,
    "{not json",
    r#"{"gracePeriodSeconds":"abc"}"#,
    r#"{"gracePeriodSeconds":1.5}"#,
    r#"{"propagationPolicy":5}"#,
    r#"{"orphanDependents":"yes"}"#,
    r#"{"kind":"ConfigMap","apiVersion":"v1"}"#,
];

/// Query strings of the same kind (sent with no body). A boolean such as `orphanDependents=yes`
/// is no type error: apimachinery reads any value but `0` and `false` as true.
const BAD_QUERIES: &[&str] = &[
    "gracePeriodSeconds=abc",
    "gracePeriodSeconds=",
    "dryRun=Everything",
];

/// The three targets: one ConfigMap, the ConfigMap collection of `default`, a namespace.
const TARGETS: &[&str] = &[
    "/api/v1/namespaces/default/configmaps/x",
    "/api/v1/namespaces/default/configmaps",
    "/api/v1/namespaces/keep",
];

/// An environment with ConfigMaps `x`, `y` in `default` and `z` in namespace `keep`.
async fn setup() -> (ctrl_envtest::Environment, Untouched) {
    let env = common::env().await;
    let ns_api: Api<Namespace> = Api::all(env.client());
    let mut ns = Namespace::default();
    ns.metadata.name = Some("keep".into());
    ns_api.create(&PostParams::default(), &ns).await.unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for n in ["x", "y"] {
        cms.create(&PostParams::default(), &cm(n, &[("k", "v")]))
            .await
            .unwrap();
    }
    let keep: Api<ConfigMap> = Api::namespaced(env.client(), "keep");
    keep.create(&PostParams::default(), &cm("z", &[("k", "v")]))
        .await
        .unwrap();
    let before = Untouched::take(&env, &["/api/v1/configmaps", "/api/v1/namespaces"]).await;
    (env, before)
}

/// `DELETE target+query` with `body`: the code, the answer and a description.
async fn delete(
    env: &ctrl_envtest::Environment,
    target: &str,
    query: &str,
    body: Option<&str>,
) -> (u16, Value, String) {
    let path = format!("{target}{query}");
    let (code, status) = common::raw(env, "DELETE", &path, body, "application/json").await;
    (code, status, format!("DELETE {path} body {body:?}"))
}

fn assert_bad_request(code: u16, status: &Value, what: &str) {
    assert_eq!(code, 400, "{what}: {status}");
    assert_eq!(status["kind"], "Status", "{what}");
    assert_eq!(status["reason"], "BadRequest", "{what}: {status}");
    assert!(
        !status["message"].as_str().unwrap_or("").is_empty(),
        "{what}: a message explains the error"
    );
}

#[tokio::test]
async fn delete_options_of_the_wrong_type_are_400_and_delete_nothing() {
    let (env, before) = setup().await;
    for target in TARGETS {
        let bodies = BAD_BODIES.iter().map(|b| (Some(*b), String::new()));
        let queries = BAD_QUERIES.iter().map(|q| (None, format!("?{q}")));
        for (body, query) in bodies.chain(queries) {
            let (code, status, what) = delete(&env, target, &query, body).await;
            assert_bad_request(code, &status, &what);
        }
        before.check(&env, target).await;
    }
    before.check_no_events(&env, "after-bad-deletes").await;
}

#[tokio::test]
async fn invalid_delete_options_values_are_422_and_delete_nothing() {
    let (env, before) = setup().await;
    for target in TARGETS {
        for (body, query) in [
            (Some(r#"{"propagationPolicy":"Sideways"}"#), ""),
            (
                Some(r#"{"propagationPolicy":"Orphan","orphanDependents":true}"#),
                "",
            ),
            (None, "?propagationPolicy=Sideways"),
        ] {
            let (code, status, what) = delete(&env, target, query, body).await;
            assert_eq!(code, 422, "{what}: {status}");
            assert_eq!(status["reason"], "Invalid", "{what}");
            assert_eq!(status["details"]["kind"], "DeleteOptions", "{what}");
        }
    }
    before.check(&env, "invalid values").await;
    before.check_no_events(&env, "after-invalid-deletes").await;
}

#[tokio::test]
async fn dry_run_all_deletes_nothing_in_the_body_or_the_query() {
    let (env, before) = setup().await;
    for target in TARGETS {
        for (body, query) in [
            (Some(r#"{"dryRun":["All"]}"#), ""),
            (
                Some(r#"{"dryRun":["All"],"propagationPolicy":"Foreground"}"#),
                "",
            ),
            (None, "?dryRun=All"),
            (Some("{}"), "?dryRun=All"),
        ] {
            let (code, answer, what) = delete(&env, target, query, body).await;
            assert_eq!(code, 200, "{what}: {answer}");
        }
    }
    before.check(&env, "dry runs").await;
    before.check_no_events(&env, "after-dry-runs").await;
}

#[tokio::test]
async fn a_failing_precondition_deletes_nothing_on_an_object() {
    let (env, before) = setup().await;
    let target = TARGETS[0];
    for body in [
        r#"{"preconditions":{"uid":"not-the-uid"}}"#,
        r#"{"preconditions":{"resourceVersion":"1"}}"#,
    ] {
        let (code, status) =
            common::raw(&env, "DELETE", target, Some(body), "application/json").await;
        assert_eq!(code, 409, "{body}: {status}");
        assert_eq!(status["reason"], "Conflict", "{body}");
    }
    before.check(&env, "preconditions").await;
    // A well-formed delete still works afterwards.
    let (code, _) = common::raw(&env, "DELETE", target, Some("{}"), "application/json").await;
    assert_eq!(code, 200);
}

/// A DeleteOptions body nested deeper than Go's JSON decoder accepts (10,000 levels: the
/// hostile-input probe sent a 600 KB ConfigMap-shaped body) is a 400 and deletes nothing, where
/// serde would skip the deep unknown field and delete.
#[tokio::test]
async fn a_body_nested_deeper_than_go_accepts_deletes_nothing() {
    let (env, before) = setup().await;
    let depth = 100_000;
    let body = format!(
        r#"{{"kind":"ConfigMap","apiVersion":"v1","data":{{"x":{}{}}}}}"#,
        "[".repeat(depth),
        "]".repeat(depth)
    );
    for target in TARGETS {
        let (code, status, what) = delete(&env, target, "", Some(&body)).await;
        assert_eq!(code, 400, "{what}: {status}");
        assert!(
            status["message"]
                .as_str()
                .unwrap_or("")
                .contains("exceeded max depth"),
            "{status}"
        );
    }
    before.check(&env, "deep nesting").await;
    before.check_no_events(&env, "after-deep-nesting").await;
    // Nesting within the limit is decoded (and the unknown field ignored).
    let ok = format!(r#"{{"x":{}{}}}"#, "[".repeat(100), "]".repeat(100));
    let (code, _, what) = delete(&env, TARGETS[0], "", Some(&ok)).await;
    assert_eq!(code, 200, "{what}");
}
