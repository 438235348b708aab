//! ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding (`admissionregistration.k8s.io/v1`)
//! through a kube client (issue 19): a bound policy denies with upstream's message and status,
//! warns (a `Warning` header) under `Warn`, reads its `params` from the binding's `paramRef`,
//! refuses when params are missing under `parameterNotFoundAction: Deny`, honours
//! `matchConstraints`, `matchConditions` and `failurePolicy`; an expression that does not compile
//! refuses the policy itself.

use crate::common;

use common::{cm, raw_full, status_of};
use ctrl_envtest::Environment;
use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use serde_json::{Value, json};

fn policy(name: &str, spec: Value) -> ValidatingAdmissionPolicy {
    serde_json::from_value(
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name}, "spec": spec}),
    )
    .expect("valid policy")
}

fn binding(name: &str, spec: Value) -> ValidatingAdmissionPolicyBinding {
    serde_json::from_value(json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name}, "spec": spec})).expect("valid binding")
}

fn configmaps() -> Value {
    json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]})
}

/// A policy allowing at most two keys in a ConfigMap's data (or `params.data.max` keys).
fn small_configmaps(extra: Value) -> Value {
    let mut spec = json!({"failurePolicy": "Fail", "matchConstraints": configmaps(),
        "validations": [{"expression": "!has(object.data) || object.data.size() <= 2"}]});
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    spec
}

async fn install(
    env: &Environment,
    p: ValidatingAdmissionPolicy,
    b: ValidatingAdmissionPolicyBinding,
) {
    Api::<ValidatingAdmissionPolicy>::all(env.client())
        .create(&PostParams::default(), &p)
        .await
        .expect("create policy");
    Api::<ValidatingAdmissionPolicyBinding>::all(env.client())
        .create(&PostParams::default(), &b)
        .await
        .expect("create binding");
}

fn three_keys(name: &str) -> ConfigMap {
    cm(name, &[("a", "1"), ("b", "2"), ("c", "3")])
}

#[tokio::test]
async fn a_bound_policy_denies_with_upstream_message() {
    let env = common::env().await;
    install(
        &env,
        policy("small", small_configmaps(json!({}))),
        binding(
            "small-b",
            json!({"policyName": "small", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let st = status_of(
        cms.create(&PostParams::default(), &three_keys("big"))
            .await
            .expect_err("denied"),
    );
    assert_eq!((st.code, st.reason.as_str()), (422, "Invalid"));
    assert_eq!(
        st.message,
        "configmaps \"big\" is forbidden: ValidatingAdmissionPolicy 'small' with binding 'small-b' denied request: failed expression: !has(object.data) || object.data.size() <= 2"
    );
    assert!(
        cms.get_opt("big").await.unwrap().is_none(),
        "nothing stored"
    );
    cms.create(&PostParams::default(), &cm("ok", &[("a", "1")]))
        .await
        .expect("a valid object passes");
    // Other resources are not matched.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(env.client(), "default");
    let mut s = k8s_openapi::api::core::v1::Secret::default();
    s.metadata.name = Some("s".into());
    s.string_data = Some(
        [("a", "1"), ("b", "2"), ("c", "3")]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    secrets
        .create(&PostParams::default(), &s)
        .await
        .expect("secrets are not matched");
}

#[tokio::test]
async fn an_unbound_policy_does_nothing_and_reasons_set_the_status() {
    let env = common::env().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let spec = small_configmaps(
        json!({"validations": [{"expression": "!has(object.data) || object.data.size() <= 2", "message": "at most two keys", "reason": "Forbidden"}]}),
    );
    Api::<ValidatingAdmissionPolicy>::all(env.client())
        .create(&PostParams::default(), &policy("small", spec))
        .await
        .unwrap();
    cms.create(&PostParams::default(), &three_keys("one"))
        .await
        .expect("no binding, no effect");
    Api::<ValidatingAdmissionPolicyBinding>::all(env.client())
        .create(
            &PostParams::default(),
            &binding(
                "b",
                json!({"policyName": "small", "validationActions": ["Deny"]}),
            ),
        )
        .await
        .unwrap();
    let st = status_of(
        cms.create(&PostParams::default(), &three_keys("two"))
            .await
            .expect_err("denied"),
    );
    assert_eq!((st.code, st.reason.as_str()), (403, "Forbidden"));
    assert!(
        st.message.ends_with("denied request: at most two keys"),
        "{}",
        st.message
    );
}

#[tokio::test]
async fn warn_admits_with_a_warning_header() {
    let env = common::env().await;
    install(
        &env,
        policy("small", small_configmaps(json!({}))),
        binding(
            "small-warn",
            json!({"policyName": "small", "validationActions": ["Warn"]}),
        ),
    )
    .await;
    let body = serde_json::to_string(&three_keys("big")).unwrap();
    let (code, headers, text) = raw_full(
        &env,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(&body),
        "application/json",
        &[],
    )
    .await;
    assert_eq!(code, 201, "{text}");
    let warning = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("warning"))
        .map(|(_, v)| v.clone());
    assert_eq!(
        warning.as_deref(),
        Some(
            "299 - \"Validation failed for ValidatingAdmissionPolicy 'small' with binding 'small-warn': failed expression: !has(object.data) || object.data.size() <= 2\""
        )
    );
}

#[tokio::test]
async fn params_come_from_the_binding_param_ref() {
    let env = common::env().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    // As upstream, params are looked up before match conditions run: the params object itself
    // is kept out by an exclude rule naming it.
    let mut constraints = configmaps();
    constraints["excludeResourceRules"] = json!([{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["*"],
        "resources": ["configmaps"], "resourceNames": ["limits"]}]);
    let spec = json!({"paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}, "matchConstraints": constraints,
        "matchConditions": [{"name": "not-skipped", "expression": "object.metadata.name != 'skipped'"}],
        "variables": [{"name": "keys", "expression": "has(object.data) ? object.data.size() : 0"}],
        "validations": [{"expression": "variables.keys <= int(params.data.max)",
            "messageExpression": "'at most ' + params.data.max + ' keys, got ' + string(variables.keys)"}]});
    let b = binding(
        "limits-b",
        json!({"policyName": "limited", "validationActions": ["Deny"],
        "paramRef": {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}}),
    );
    install(&env, policy("limited", spec), b).await;
    let st = status_of(
        cms.create(&PostParams::default(), &cm("x", &[]))
            .await
            .expect_err("no params yet"),
    );
    assert!(st.message.ends_with("ValidatingAdmissionPolicy 'limited' with binding 'limits-b' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"), "{}", st.message);
    cms.create(&PostParams::default(), &cm("limits", &[("max", "1")]))
        .await
        .expect("the params object (excluded by name)");
    cms.create(&PostParams::default(), &cm("one", &[("a", "1")]))
        .await
        .expect("within the limit");
    let st = status_of(
        cms.create(
            &PostParams::default(),
            &cm("two", &[("a", "1"), ("b", "2")]),
        )
        .await
        .expect_err("over the limit"),
    );
    assert!(
        st.message
            .ends_with("denied request: at most 1 keys, got 2"),
        "{}",
        st.message
    );
}

#[tokio::test]
async fn failure_policy_decides_on_errors() {
    let env = common::env().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let failing = |fp: &str| {
        json!({"failurePolicy": fp, "matchConstraints": configmaps(),
        "validations": [{"expression": "object.data.missing == 'x'"}]})
    };
    install(
        &env,
        policy("fails", failing("Ignore")),
        binding(
            "fails-b",
            json!({"policyName": "fails", "validationActions": ["Deny"]}),
        ),
    )
    .await;
    cms.create(&PostParams::default(), &cm("a", &[("k", "v")]))
        .await
        .expect("Ignore: the error is ignored");
    let pols: Api<ValidatingAdmissionPolicy> = Api::all(env.client());
    let mut p = pols.get("fails").await.unwrap();
    p.spec = serde_json::from_value(failing("Fail")).unwrap();
    pols.replace("fails", &PostParams::default(), &p)
        .await
        .unwrap();
    let st = status_of(
        cms.create(&PostParams::default(), &cm("b", &[("k", "v")]))
            .await
            .expect_err("Fail: denied"),
    );
    assert!(st.message.contains("denied request: expression 'object.data.missing == 'x'' resulted in error: no such key: missing"), "{}", st.message);
}

#[tokio::test]
async fn a_policy_that_does_not_compile_is_refused() {
    let env = common::env().await;
    let pols: Api<ValidatingAdmissionPolicy> = Api::all(env.client());
    let bad = small_configmaps(json!({"validations": [{"expression": "object.data.size( <= 2"}]}));
    let st = status_of(
        pols.create(&PostParams::default(), &policy("bad", bad))
            .await
            .expect_err("refused"),
    );
    assert_eq!(st.code, 422);
    assert!(st.message.contains("spec.validations[0].expression: Invalid value: \"object.data.size( <= 2\": compilation failed: ERROR: <input>:1:"), "{}", st.message);
}

/// A binding created or deleted at run time applies to the next write (admission reads a count
/// of the bindings on every write instead of listing them: this holds that count to the store).
#[tokio::test]
async fn bindings_added_and_removed_at_run_time_apply_to_the_next_write() {
    let env = common::env().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let bindings = Api::<ValidatingAdmissionPolicyBinding>::all(env.client());
    let small = binding(
        "small-b",
        json!({"policyName": "small", "validationActions": ["Deny"]}),
    );
    cms.create(&PostParams::default(), &three_keys("before"))
        .await
        .expect("no policy yet");
    install(
        &env,
        policy("small", small_configmaps(json!({}))),
        small.clone(),
    )
    .await;
    let st = status_of(
        cms.create(&PostParams::default(), &three_keys("during"))
            .await
            .expect_err("the new binding denies the next write"),
    );
    assert_eq!(st.code, 422);

    bindings
        .delete("small-b", &DeleteParams::default())
        .await
        .expect("delete binding");
    cms.create(&PostParams::default(), &three_keys("unbound"))
        .await
        .expect("the binding is gone: the policy no longer applies");

    bindings
        .create(&PostParams::default(), &small)
        .await
        .expect("bind again");
    let st = status_of(
        cms.create(&PostParams::default(), &three_keys("again"))
            .await
            .expect_err("bound again: denied again"),
    );
    assert_eq!(st.code, 422);
}
