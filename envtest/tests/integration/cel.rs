//! CEL in ctrl-envtest, end to end through a kube client (issue 19): a CRD's
//! `x-kubernetes-validations` refuse invalid custom resources with upstream's wording, transition
//! rules see `oldSelf` on update, `messageExpression` words the error, unchanged invalid values
//! are ratcheted on update, `format` is checked, a CRD whose rule does not compile or costs too
//! much is itself refused, and a `#[derive(CustomResource, KubeSchema)]` with
//! `#[x_kube(validation = ..)]` is enforced. Policies are in `vap.rs`.

use crate::common;

use common::status_of;
use ctrl_envtest::Environment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Value, json};

fn gadget_crd(spec_schema: Value) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.cel.example.com"},
        "spec": {
            "group": "cel.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}}}],
        },
    }))
    .expect("valid CRD")
}

fn gadget_ar() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("cel.example.com", "v1", "Gadget"),
        "gadgets",
    )
}

fn gadget(name: &str, spec: Value) -> DynamicObject {
    DynamicObject::new(name, &gadget_ar()).data(json!({ "spec": spec }))
}

async fn env_with(spec_schema: Value) -> (Environment, Api<DynamicObject>) {
    let env = Environment::builder()
        .crd(gadget_crd(spec_schema))
        .start()
        .await
        .expect("start envtest");
    let api = Api::namespaced_with(env.client(), "default", &gadget_ar());
    (env, api)
}

async fn refused(api: &Api<DynamicObject>, obj: DynamicObject) -> String {
    common::invalid_message(
        api.create(&PostParams::default(), &obj)
            .await
            .expect_err("refused"),
    )
}

fn replicas_schema() -> Value {
    json!({"type": "object",
        "properties": {"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.replicas <= self.maxReplicas", "message": "replicas must not exceed maxReplicas"}]})
}

#[tokio::test]
async fn a_rule_refuses_an_invalid_object_with_upstream_wording() {
    let (_env, api) = env_with(replicas_schema()).await;
    let msg = refused(&api, gadget("g1", json!({"replicas": 5, "maxReplicas": 3}))).await;
    assert_eq!(
        msg,
        "Gadget.cel.example.com \"g1\" is invalid: spec: Invalid value: \"object\": replicas must not exceed maxReplicas"
    );
    api.create(
        &PostParams::default(),
        &gadget("g2", json!({"replicas": 3, "maxReplicas": 3})),
    )
    .await
    .expect("a valid object is created");
    // The same rule on an update (merge patch) refuses too, and nothing is stored.
    let patch = Patch::Merge(json!({"spec": {"replicas": 4}}));
    let st = status_of(
        api.patch("g2", &PatchParams::default(), &patch)
            .await
            .expect_err("refused"),
    );
    assert_eq!(st.code, 422);
    assert_eq!(api.get("g2").await.unwrap().data["spec"]["replicas"], 3);
}

#[tokio::test]
async fn rules_on_nested_nodes_report_their_paths_and_reasons() {
    let schema = json!({"type": "object", "properties": {
        "ports": {"type": "array", "items": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 1024", "message": "must be unprivileged"}]}},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}, "x-kubernetes-validations": [
            {"rule": "'team' in self", "message": "needs a team label", "reason": "FieldValueRequired", "fieldPath": ".team"}]}}});
    let (_env, api) = env_with(schema).await;
    let msg = refused(
        &api,
        gadget("g", json!({"ports": [8080, 80], "labels": {"app": "x"}})),
    )
    .await;
    assert!(
        msg.contains("spec.ports[1]: Invalid value: \"integer\": must be unprivileged"),
        "{msg}"
    );
    assert!(
        msg.contains("spec.labels.team: Required value: needs a team label"),
        "{msg}"
    );
}

#[tokio::test]
async fn transition_rules_and_message_expressions() {
    let schema = json!({"type": "object", "properties": {
        "class": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "class is immutable"}]},
        "size": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= oldSelf",
            "messageExpression": "'size may not shrink from ' + string(oldSelf) + ' to ' + string(self)"}]}}});
    let (_env, api) = env_with(schema).await;
    api.create(
        &PostParams::default(),
        &gadget("g", json!({"class": "gold", "size": 5})),
    )
    .await
    .expect("create: no oldSelf, rules skipped");
    let merge = |spec: Value| Patch::Merge(json!({ "spec": spec }));
    api.patch("g", &PatchParams::default(), &merge(json!({"size": 6})))
        .await
        .expect("growing is fine");
    let st = status_of(
        api.patch(
            "g",
            &PatchParams::default(),
            &merge(json!({"class": "silver", "size": 2})),
        )
        .await
        .expect_err("refused"),
    );
    assert!(
        st.message
            .contains("spec.class: Invalid value: \"string\": class is immutable"),
        "{}",
        st.message
    );
    assert!(
        st.message
            .contains("spec.size: Invalid value: \"integer\": size may not shrink from 6 to 2"),
        "{}",
        st.message
    );
}

#[tokio::test]
async fn unchanged_invalid_values_are_ratcheted_on_update() {
    // Objects stored under a looser schema, then the CRD tightens (a CEL rule and a maxLength).
    let loose = json!({"type": "object", "properties": {"name": {"type": "string"}, "note": {"type": "string"}}});
    let (env, api) = env_with(loose).await;
    api.create(
        &PostParams::default(),
        &gadget("g", json!({"name": "way-too-long-name", "note": "a"})),
    )
    .await
    .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let strict = json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "name": {"type": "string", "maxLength": 5, "x-kubernetes-validations": [{"rule": "!self.contains('-')", "message": "no dashes"}]},
        "note": {"type": "string"}}}}}}}]}});
    crds.patch(
        "gadgets.cel.example.com",
        &PatchParams::default(),
        &Patch::Merge(strict),
    )
    .await
    .expect("tighten the CRD");
    let merge = |spec: Value| Patch::Merge(json!({ "spec": spec }));
    api.patch("g", &PatchParams::default(), &merge(json!({"note": "b"})))
        .await
        .expect("the invalid name is unchanged: ratcheted");
    let st = status_of(
        api.patch(
            "g",
            &PatchParams::default(),
            &merge(json!({"name": "still-too-long"})),
        )
        .await
        .expect_err("a changed invalid value is refused"),
    );
    assert!(
        st.message.contains("no dashes") && st.message.contains("spec.name: Too long"),
        "{}",
        st.message
    );
    assert!(
        refused(&api, gadget("h", json!({"name": "bad-name"})))
            .await
            .contains("no dashes")
    );
}

/// What a write checks is read from the CRD as it is now: a CRD update that adds a rule and a
/// field applies to the very next write (create and patch), and one that removes them too
/// (whether a schema has rules is found once per CRD version, when its types are rebuilt).
#[tokio::test]
async fn a_crd_update_applies_its_rules_and_fields_to_the_next_write() {
    let plain = json!({"type": "object", "properties": {"replicas": {"type": "integer"}, "maxReplicas": {"type": "integer"}}});
    let (env, api) = env_with(plain.clone()).await;
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let set_spec = |spec: Value| {
        Patch::Merge(
            json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": true,
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]}}),
        )
    };
    let over = json!({"replicas": 5, "maxReplicas": 3});
    api.create(&PostParams::default(), &gadget("g1", over.clone()))
        .await
        .expect("no rule yet");
    // The rule (and a new field, `size`) added: the next create and patch see both.
    let mut ruled = replicas_schema();
    ruled["properties"]["size"] = json!({"type": "string"});
    let pp = PatchParams::default();
    crds.patch("gadgets.cel.example.com", &pp, &set_spec(ruled))
        .await
        .expect("add the rule");
    assert!(
        refused(&api, gadget("g2", over.clone()))
            .await
            .contains("replicas must not exceed maxReplicas")
    );
    let grow = Patch::Merge(json!({"spec": {"maxReplicas": 2, "size": "L"}}));
    let st = status_of(api.patch("g1", &pp, &grow).await.expect_err("refused"));
    assert!(
        st.message.contains("replicas must not exceed maxReplicas"),
        "{}",
        st.message
    );
    let fits = Patch::Merge(json!({"spec": {"maxReplicas": 5, "size": "L"}}));
    let g1 = api.patch("g1", &pp, &fits).await.expect("a valid patch");
    assert_eq!(
        g1.data["spec"]["size"], "L",
        "the new field is no longer pruned"
    );
    // Both removed again: the object that broke the rule is created, and `size` is pruned.
    crds.patch("gadgets.cel.example.com", &pp, &set_spec(plain))
        .await
        .expect("remove the rule");
    let mut loose = gadget("g3", over);
    loose.data["spec"]["size"] = json!("S");
    let g3 = api
        .create(&PostParams::default(), &loose)
        .await
        .expect("the rule is gone");
    assert_eq!(g3.data["spec"].get("size"), None, "{:?}", g3.data);
}

#[tokio::test]
async fn formats_are_checked() {
    let schema = json!({"type": "object", "properties": {
        "when": {"type": "string", "format": "date-time"}, "id": {"type": "string", "format": "uuid"},
        "addr": {"type": "string", "format": "ipv4"}, "free": {"type": "string", "format": "my-own-format"}}});
    let (_env, api) = env_with(schema).await;
    let msg = refused(
        &api,
        gadget(
            "g",
            json!({"when": "yesterday", "id": "123", "addr": "10.0.0.1", "free": "x"}),
        ),
    )
    .await;
    assert!(msg.contains("spec.when: Invalid value: \"yesterday\": spec.when in body must be of type date-time: \"yesterday\""), "{msg}");
    assert!(
        msg.contains("spec.id in body must be of type uuid: \"123\""),
        "{msg}"
    );
    assert!(
        !msg.contains("spec.addr") && !msg.contains("spec.free"),
        "{msg}"
    );
    let ok = json!({"when": "2024-05-01T10:00:00Z", "id": "123e4567-e89b-12d3-a456-426614174000", "addr": "10.0.0.1", "free": "x"});
    api.create(&PostParams::default(), &gadget("g", ok))
        .await
        .expect("valid formats");
}

#[tokio::test]
async fn kubernetes_libraries_in_rules() {
    let schema = json!({"type": "object", "properties": {
        "memory": {"type": "string", "x-kubernetes-validations": [{"rule": "isQuantity(self) && quantity(self).isLessThan(quantity('2Gi'))", "message": "memory must be under 2Gi"}]},
        "cidr": {"type": "string", "x-kubernetes-validations": [{"rule": "isCIDR(self) && cidr(self).containsIP('10.0.0.1')", "message": "must contain 10.0.0.1"}]},
        "endpoint": {"type": "string", "x-kubernetes-validations": [{"rule": "isURL(self) && url(self).getScheme() == 'https'", "message": "must be an https URL"}]},
        "tags": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}, "x-kubernetes-validations": [{"rule": "self.isSorted() && self.all(t, t.matches('^[a-z]+$'))", "message": "tags must be sorted lowercase words"}]}}});
    let (_env, api) = env_with(schema).await;
    let good = json!({"memory": "1536Mi", "cidr": "10.0.0.0/8", "endpoint": "https://example.com/x", "tags": ["a", "b"]});
    api.create(&PostParams::default(), &gadget("ok", good))
        .await
        .expect("valid");
    let bad = json!({"memory": "3Gi", "cidr": "192.168.0.0/16", "endpoint": "http://example.com", "tags": ["b", "a"]});
    let msg = refused(&api, gadget("bad", bad)).await;
    for want in [
        "memory must be under 2Gi",
        "must contain 10.0.0.1",
        "must be an https URL",
        "tags must be sorted lowercase words",
    ] {
        assert!(msg.contains(want), "{want}: {msg}");
    }
}

async fn crd_refused(crd: CustomResourceDefinition) -> String {
    let env = Environment::builder().start().await.expect("start envtest");
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let st = status_of(
        crds.create(&PostParams::default(), &crd)
            .await
            .expect_err("the CRD is refused"),
    );
    assert_eq!(st.code, 422, "{}", st.message);
    assert!(
        crds.get_opt("gadgets.cel.example.com")
            .await
            .unwrap()
            .is_none(),
        "nothing stored"
    );
    st.message
}

#[tokio::test]
async fn a_rule_that_does_not_compile_refuses_the_crd() {
    let schema = json!({"type": "object", "properties": {"replicas": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.nonExistingField > 0"}]});
    let msg = crd_refused(gadget_crd(schema)).await;
    assert!(
        msg.starts_with(
            "CustomResourceDefinition.apiextensions.k8s.io \"gadgets.cel.example.com\" is invalid: "
        ),
        "{msg}"
    );
    assert!(msg.contains("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.nonExistingField > 0\""), "{msg}");
    assert!(
        msg.contains("compilation failed: ERROR: <input>:1:5: undefined field 'nonExistingField'"),
        "{msg}"
    );
    let syntax = json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.a >"}]});
    assert!(
        crd_refused(gadget_crd(syntax))
            .await
            .contains("compilation failed: ERROR: <input>:1:")
    );
}

#[tokio::test]
async fn a_rule_too_costly_refuses_the_crd_and_a_bounded_one_installs() {
    let schema = |max: Option<u64>| {
        let mut list = json!({"type": "array", "items": {"type": "string"},
            "x-kubernetes-validations": [{"rule": "self.all(x, self.exists(y, x == y))"}]});
        if let Some(m) = max {
            list["maxItems"] = json!(m);
            list["items"]["maxLength"] = json!(16);
        }
        json!({"type": "object", "properties": {"names": list}})
    };
    let msg = crd_refused(gadget_crd(schema(None))).await;
    assert!(msg.contains("spec.validation.openAPIV3Schema.properties[spec].properties[names].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x"), "{msg}");
    let (_env, api) = env_with(schema(Some(50))).await;
    api.create(
        &PostParams::default(),
        &gadget("g", json!({"names": ["a", "b"]})),
    )
    .await
    .expect("bounded rule runs");
}

#[tokio::test]
async fn the_runtime_cost_limit_stops_a_rule() {
    let schema = json!({"type": "object", "properties": {"n": {"type": "array", "maxItems": 700, "items": {"type": "integer"},
        "x-kubernetes-validations": [{"rule": "self.all(x, self.all(y, x + y >= 0))"}]}}});
    let (_env, api) = env_with(schema).await;
    let items: Vec<i64> = (0..700).collect();
    let msg = refused(&api, gadget("g", json!({ "n": items }))).await;
    assert!(msg.contains("spec.n: Invalid value: \"array\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.all(x, self.all(y, x + y >= 0))"), "{msg}");
}

mod derived {
    use kube::{CustomResource, KubeSchema};
    use serde::{Deserialize, Serialize};

    /// A custom resource whose CEL rules come from kube's derive.
    #[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug)]
    #[kube(
        group = "derive.example.com",
        version = "v1",
        kind = "Bucket",
        namespaced
    )]
    #[x_kube(validation = Rule::new("self.minSize <= self.maxSize").message("minSize must not exceed maxSize"))]
    #[serde(rename_all = "camelCase")]
    pub struct BucketSpec {
        pub min_size: i64,
        pub max_size: i64,
        #[x_kube(validation = Rule::new("self == oldSelf").message("region is immutable"))]
        pub region: String,
    }
}

#[tokio::test]
async fn derived_x_kube_validations_are_enforced() {
    use derived::{Bucket, BucketSpec};
    use kube::CustomResourceExt;
    let env = Environment::builder()
        .crd(Bucket::crd())
        .start()
        .await
        .expect("start envtest");
    let api: Api<Bucket> = Api::namespaced(env.client(), "default");
    let spec = |min, max, region: &str| BucketSpec {
        min_size: min,
        max_size: max,
        region: region.into(),
    };
    let st = status_of(
        api.create(&PostParams::default(), &Bucket::new("b", spec(5, 1, "eu")))
            .await
            .expect_err("refused"),
    );
    assert_eq!(
        st.message,
        "Bucket.derive.example.com \"b\" is invalid: spec: Invalid value: \"object\": minSize must not exceed maxSize"
    );
    let b = api
        .create(&PostParams::default(), &Bucket::new("b", spec(1, 5, "eu")))
        .await
        .expect("valid");
    let mut moved = b.clone();
    moved.spec.region = "us".into();
    let st = status_of(
        api.replace("b", &PostParams::default(), &moved)
            .await
            .expect_err("immutable"),
    );
    assert!(
        st.message
            .contains("spec.region: Invalid value: \"string\": region is immutable"),
        "{}",
        st.message
    );
}

/// Runs the real kubectl against `env` (a missing kubectl fails the test: this is the check a
/// user of `ctrl-envtest serve` makes).
async fn kubectl(env: &Environment, dir: &std::path::Path, args: &[&str]) -> (bool, String) {
    let kubeconfig = dir.join("kubeconfig");
    env.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    let out = tokio::process::Command::new("kubectl")
        .args(args)
        .env("KUBECONFIG", &kubeconfig)
        .env("HOME", dir)
        .env("KUBECACHEDIR", dir.join("cache"))
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), out)
        .await
        .expect("kubectl timed out")
        .expect("kubectl must be on PATH for this test (it is not skipped)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

const KUBECTL_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.cel.example.com}
spec:
  group: cel.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-validations:
            - {rule: "self.replicas <= self.maxReplicas", message: "replicas must not exceed maxReplicas"}
            properties:
              replicas: {type: integer}
              maxReplicas: {type: integer}
"#;

const KUBECTL_POLICY: &str = r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: small}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE, UPDATE], resources: [configmaps]}
  validations:
  - {expression: "!has(object.data) || object.data.size() <= 1", message: "at most one key"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: small-warn}
spec: {policyName: small, validationActions: [Warn]}
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_sees_rules_policies_and_bad_crds_refused() {
    let env = Environment::builder().start().await.expect("start envtest");
    let dir = tempfile::tempdir().unwrap();
    let file = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p.to_string_lossy().into_owned()
    };
    let crd = file("crd.yaml", KUBECTL_CRD);
    let (ok, out) = kubectl(&env, dir.path(), &["apply", "-f", &crd]).await;
    assert!(ok, "{out}");
    let bad = file(
        "bad.yaml",
        "apiVersion: cel.example.com/v1\nkind: Gadget\nmetadata: {name: g1, namespace: default}\nspec: {replicas: 5, maxReplicas: 3}\n",
    );
    let (ok, out) = kubectl(&env, dir.path(), &["apply", "-f", &bad]).await;
    assert!(!ok && out.contains("The Gadget \"g1\" is invalid: spec: Invalid value: \"object\": replicas must not exceed maxReplicas"), "{out}");
    let good = file(
        "good.yaml",
        "apiVersion: cel.example.com/v1\nkind: Gadget\nmetadata: {name: g2, namespace: default}\nspec: {replicas: 1, maxReplicas: 3}\n",
    );
    let (ok, out) = kubectl(&env, dir.path(), &["apply", "-f", &good]).await;
    assert!(
        ok && out.contains("gadget.cel.example.com/g2 created"),
        "{out}"
    );
    let broken = file(
        "broken.yaml",
        &KUBECTL_CRD
            .replace("gadgets.cel", "doodads.cel")
            .replace(
                "plural: gadgets, singular: gadget, kind: Gadget",
                "plural: doodads, singular: doodad, kind: Doodad",
            )
            .replace("self.replicas <=", "self.replica <="),
    );
    let (ok, out) = kubectl(&env, dir.path(), &["apply", "-f", &broken]).await;
    assert!(
        !ok && out.contains("compilation failed: ERROR: <input>:1:5: undefined field 'replica'"),
        "{out}"
    );
    let policy = file("policy.yaml", KUBECTL_POLICY);
    let (ok, out) = kubectl(&env, dir.path(), &["apply", "-f", &policy]).await;
    assert!(ok, "{out}");
    let (ok, out) = kubectl(
        &env,
        dir.path(),
        &[
            "create",
            "configmap",
            "two",
            "--from-literal=a=1",
            "--from-literal=b=2",
        ],
    )
    .await;
    assert!(ok && out.contains("Warning: Validation failed for ValidatingAdmissionPolicy 'small' with binding 'small-warn': at most one key"), "{out}");
}
