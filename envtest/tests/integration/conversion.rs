//! CRD conversion through a conversion webhook: ctrl-envtest calls a real ctrl-runtime
//! `/convert` handler (hub-and-spoke, over TLS) wherever a real API server converts —
//! request bodies at a non-storage version on the way in, objects, lists (one review) and
//! watch events on the way out — and fails like it (500, nothing stored) when the webhook
//! refuses or cannot be reached. CRDs whose `spec.conversion` is invalid are a 422. An
//! admission webhook written for another version is called with the object converted to it.

use crate::common;
use crate::kubectl_cli;
use crate::webhook_server;

use std::sync::Arc;

use async_trait::async_trait;
use ctrl_envtest::Environment;
use ctrl_runtime::http::{Handler, Request, Response};
use ctrl_runtime::webhook::admission::{
    CustomDefaulter, CustomValidator, Request as AdmissionRequest, ValidationError, Warnings,
    defaulting_webhook, validating_webhook,
};
use ctrl_runtime::webhook::conversion::{self, ConversionError, Convertible, Hub};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::{CustomResource, ResourceExt};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

mod v1 {
    use super::*;
    /// v1 (storage, hub): the size as text, `"10Gi"`.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq)]
    #[kube(
        group = "conv.ctrl.dev",
        version = "v1",
        kind = "Volume",
        namespaced,
        schema = "disabled"
    )]
    pub struct VolumeSpec {
        pub size: String,
    }
}

mod v2 {
    use super::*;
    /// v2: the size as a number and a unit.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq)]
    #[kube(
        group = "conv.ctrl.dev",
        version = "v2",
        kind = "Volume",
        namespaced,
        schema = "disabled"
    )]
    pub struct VolumeSpec {
        pub size: Size,
    }

    #[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
    pub struct Size {
        pub value: u64,
        pub unit: String,
    }
}

impl Hub for v1::Volume {}

impl Convertible<v1::Volume> for v2::Volume {
    fn convert_to(&self) -> Result<v1::Volume, ConversionError> {
        let unit = &self.spec.size.unit;
        if unit != "Mi" && unit != "Gi" {
            return Err(format!("unit {unit:?} is not supported").into());
        }
        let mut out = v1::Volume::new(
            "",
            v1::VolumeSpec {
                size: format!("{}{unit}", self.spec.size.value),
            },
        );
        out.metadata = self.metadata.clone();
        Ok(out)
    }

    fn convert_from(hub: &v1::Volume) -> Result<Self, ConversionError> {
        let size = &hub.spec.size;
        let split = size.len().saturating_sub(2);
        let value = size[..split]
            .parse()
            .map_err(|e| ConversionError(format!("size {size:?}: {e}")))?;
        let mut out = v2::Volume::new(
            "",
            v2::VolumeSpec {
                size: v2::Size {
                    value,
                    unit: size[split..].to_string(),
                },
            },
        );
        out.metadata = hub.metadata.clone();
        Ok(out)
    }
}

/// (desiredAPIVersion, number of objects) of every review the webhook received.
type Seen = Arc<Mutex<Vec<(String, usize)>>>;

/// The conversion handler, recording what it is asked.
struct Counted {
    inner: conversion::Webhook,
    seen: Seen,
}

#[async_trait]
impl Handler for Counted {
    async fn call(&self, req: Request) -> Response {
        if let Ok(v) = serde_json::from_slice::<Value>(req.body()) {
            let r = &v["request"];
            self.seen.lock().push((
                r["desiredAPIVersion"].as_str().unwrap_or("").to_string(),
                r["objects"].as_array().map_or(0, Vec::len),
            ));
        }
        self.inner.call(req).await
    }
}

fn crd(conversion: Value) -> CustomResourceDefinition {
    let schema = |size: Value| {
        json!({"openAPIV3Schema": {"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"size": size}}}}})
    };
    serde_json::from_value(json!({
        "metadata": {"name": "volumes.conv.ctrl.dev"},
        "spec": {
            "group": "conv.ctrl.dev",
            "scope": "Namespaced",
            "names": {"plural": "volumes", "singular": "volume", "kind": "Volume", "listKind": "VolumeList"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema(json!({"type": "string"}))},
                {"name": "v2", "served": true, "storage": false, "schema": schema(json!({
                    "type": "object",
                    "properties": {"value": {"type": "integer"}, "unit": {"type": "string"}}}))},
            ],
            "conversion": conversion,
        }
    }))
    .unwrap()
}

fn webhook_conversion(url: &str, ca_bundle: &str) -> Value {
    json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"url": url, "caBundle": ca_bundle},
        "conversionReviewVersions": ["v1"]}})
}

struct Setup {
    env: Environment,
    seen: Seen,
    hook: webhook_server::Running,
}

impl Setup {
    fn v1(&self) -> Api<v1::Volume> {
        Api::namespaced(self.env.client(), "default")
    }
    fn v2(&self) -> Api<v2::Volume> {
        Api::namespaced(self.env.client(), "default")
    }
}

/// The conversion webhook for the tests: hub v1, spoke v2.
fn volumes() -> conversion::Webhook {
    let w = conversion::Webhook::new();
    w.hub::<v1::Volume>().spoke::<v1::Volume, v2::Volume>();
    w
}

async fn setup() -> Setup {
    let seen = Seen::default();
    let counted = Counted {
        inner: volumes(),
        seen: seen.clone(),
    };
    setup_with(counted, seen).await
}

/// An environment with the CRD converting through `handler` (served at `/convert`).
async fn setup_with(handler: impl Handler, seen: Seen) -> Setup {
    setup_server(
        move |server| server.register("/convert", handler).unwrap(),
        seen,
    )
    .await
}

/// An environment with the CRD converting through the `/convert` of a webhook server whose
/// handlers `register` sets up.
async fn setup_server(register: impl FnOnce(&ctrl_runtime::webhook::Server), seen: Seen) -> Setup {
    let hook = webhook_server::start(register).await;
    let env = common::env().await;
    let url = format!("{}/convert", hook.url);
    Api::<CustomResourceDefinition>::all(env.client())
        .create(
            &PostParams::default(),
            &crd(webhook_conversion(&url, &hook.ca_bundle)),
        )
        .await
        .unwrap();
    Setup { env, seen, hook }
}

fn at_v1(name: &str, size: &str) -> v1::Volume {
    v1::Volume::new(name, v1::VolumeSpec { size: size.into() })
}

fn at_v2(name: &str, value: u64, unit: &str) -> v2::Volume {
    v2::Volume::new(
        name,
        v2::VolumeSpec {
            size: v2::Size {
                value,
                unit: unit.into(),
            },
        },
    )
}

fn size2(v: &v2::Volume) -> (u64, &str) {
    (v.spec.size.value, v.spec.size.unit.as_str())
}

#[tokio::test]
async fn objects_convert_between_versions_on_every_read_and_write() {
    let s = setup().await;
    let pp = PostParams::default();
    // Created at v1 (storage: no conversion on the way in), read at v2.
    s.v1().create(&pp, &at_v1("a", "10Gi")).await.unwrap();
    let a = s.v2().get("a").await.unwrap();
    assert_eq!(size2(&a), (10, "Gi"));
    assert_eq!(a.uid(), s.v1().get("a").await.unwrap().uid());

    // Created at v2: stored at v1, the response is at v2.
    let b = s.v2().create(&pp, &at_v2("b", 5, "Mi")).await.unwrap();
    assert_eq!(size2(&b), (5, "Mi"));
    assert_eq!(s.v1().get("b").await.unwrap().spec.size, "5Mi");

    // A list at v2 converts its items in ONE review; at v1 nothing is converted.
    s.seen.lock().clear();
    let list = s.v2().list(&ListParams::default()).await.unwrap();
    let sizes: Vec<(u64, &str)> = list.items.iter().map(size2).collect();
    assert_eq!(sizes, vec![(10, "Gi"), (5, "Mi")]);
    assert_eq!(*s.seen.lock(), vec![("conv.ctrl.dev/v2".to_string(), 2)]);
    s.seen.lock().clear();
    let list = s.v1().list(&ListParams::default()).await.unwrap();
    assert_eq!(list.items.len(), 2);
    assert!(s.seen.lock().is_empty(), "{:?}", s.seen.lock());

    // An update at v2 stores the converted object.
    let mut b = s.v2().get("b").await.unwrap();
    b.spec.size.value = 7;
    let b = s.v2().replace("b", &pp, &b).await.unwrap();
    assert_eq!(size2(&b), (7, "Mi"));
    assert_eq!(s.v1().get("b").await.unwrap().spec.size, "7Mi");

    // Merge and JSON patches at v2 apply to the v2 form.
    let merged = s
        .v2()
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"spec": {"size": {"value": 20}}, "metadata": {"labels": {"x": "y"}}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(size2(&merged), (20, "Gi"));
    let stored = s.v1().get("a").await.unwrap();
    assert_eq!(stored.spec.size, "20Gi");
    assert_eq!(stored.labels().get("x").map(String::as_str), Some("y"));
    let p: json_patch::Patch = serde_json::from_value(
        json!([{"op": "replace", "path": "/spec/size/unit", "value": "Mi"}]),
    )
    .unwrap();
    s.v2()
        .patch("a", &PatchParams::default(), &Patch::<()>::Json(p))
        .await
        .unwrap();
    assert_eq!(s.v1().get("a").await.unwrap().spec.size, "20Mi");

    // Deleting at v2 answers with the object (held by a finalizer) at v2; a patch at v2
    // dropping the finalizer then lets it go.
    let mut held = at_v2("held", 3, "Gi");
    held.metadata.finalizers = Some(vec!["conv.ctrl.dev/hold".into()]);
    s.v2().create(&pp, &held).await.unwrap();
    let gone = s.v2().delete("held", &Default::default()).await.unwrap();
    let obj = gone
        .left()
        .expect("the object, still held by its finalizer");
    assert_eq!(size2(&obj), (3, "Gi"));
    assert!(obj.metadata.deletion_timestamp.is_some());
    s.v2()
        .patch(
            "held",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
    assert!(s.v1().get_opt("held").await.unwrap().is_none());
}

#[tokio::test]
async fn watch_events_at_v2_carry_converted_objects() {
    let s = setup().await;
    let pp = PostParams::default();
    s.v1().create(&pp, &at_v1("before", "1Gi")).await.unwrap();
    let mut events = s
        .v2()
        .watch(&WatchParams::default().timeout(20), "0")
        .await
        .unwrap()
        .boxed();
    s.v1().create(&pp, &at_v1("after", "2Mi")).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        match events
            .try_next()
            .await
            .unwrap()
            .expect("the watch ended early")
        {
            WatchEvent::Added(v) => seen.push((v.name_any(), size2(&v).0, v.spec.size.unit)),
            WatchEvent::Error(e) => panic!("watch error: {e:?}"),
            _ => {}
        }
    }
    assert_eq!(
        seen,
        vec![
            ("before".into(), 1, "Gi".into()),
            ("after".into(), 2, "Mi".into())
        ]
    );
}

fn api_error(e: kube::Error) -> kube::core::Status {
    common::status_of(e)
}

#[tokio::test]
async fn a_refused_conversion_is_a_500_with_the_webhook_message_and_stores_nothing() {
    let s = setup().await;
    let err = s
        .v2()
        .create(&PostParams::default(), &at_v2("bad", 1, "Xi"))
        .await
        .unwrap_err();
    let st = api_error(err);
    assert_eq!(st.code, 500, "{st:?}");
    assert!(
        st.message.contains(
            "conversion webhook for conv.ctrl.dev/v2, Kind=Volume failed: unit \"Xi\" is not supported"
        ),
        "{}",
        st.message
    );
    assert!(
        s.v1()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );

    // A stored object the webhook cannot convert fails reads at v2 (get and list alike).
    s.v1()
        .create(&PostParams::default(), &at_v1("odd", "lotsGi"))
        .await
        .unwrap();
    let st = api_error(s.v2().get("odd").await.unwrap_err());
    assert_eq!(st.code, 500);
    assert!(
        st.message.contains(
            "conversion webhook for conv.ctrl.dev/v1, Kind=Volume failed: size \"lotsGi\""
        ),
        "{}",
        st.message
    );
    let st = api_error(s.v2().list(&ListParams::default()).await.unwrap_err());
    assert_eq!(st.code, 500);
    assert!(
        st.message
            .contains("conversion webhook for conv.ctrl.dev/v1, Kind=VolumeList failed"),
        "{}",
        st.message
    );
}

#[tokio::test]
async fn an_unreachable_webhook_is_a_500_and_stores_nothing() {
    let env = common::env().await;
    let _ = rustls::crypto::ring::default_provider().install_default();
    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let certs_dir = ctrl_runtime::webhook::certs::temp_cert_dir().unwrap();
    let generated = ctrl_runtime::webhook::certs::generate_self_signed(&certs_dir, &[]).unwrap();
    let ca = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        &generated.ca_pem,
    );
    let url = format!("https://127.0.0.1:{port}/convert");
    Api::<CustomResourceDefinition>::all(env.client())
        .create(&PostParams::default(), &crd(webhook_conversion(&url, &ca)))
        .await
        .unwrap();
    let v1: Api<v1::Volume> = Api::namespaced(env.client(), "default");
    let v2: Api<v2::Volume> = Api::namespaced(env.client(), "default");
    let st = api_error(
        v2.create(&PostParams::default(), &at_v2("x", 1, "Gi"))
            .await
            .unwrap_err(),
    );
    assert_eq!(st.code, 500, "{st:?}");
    assert!(
        st.message
            .contains("conversion webhook for conv.ctrl.dev/v2, Kind=Volume failed: Post"),
        "{}",
        st.message
    );
    assert!(
        v1.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    // The storage version needs no webhook.
    v1.create(&PostParams::default(), &at_v1("y", "1Gi"))
        .await
        .unwrap();
    assert_eq!(v1.get("y").await.unwrap().spec.size, "1Gi");
}

#[tokio::test]
async fn invalid_conversion_settings_are_a_422() {
    let env = common::env().await;
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let ca = "bm90IGEgY2VydA=="; // base64 of "not a cert"
    let cases = [
        (
            json!({"strategy": "Webhook"}),
            "spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
        ),
        (
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "http://127.0.0.1:1/convert"}, "conversionReviewVersions": ["v1"]}}),
            "'https' is the only allowed URL scheme",
        ),
        (
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://127.0.0.1:1/convert", "service": {"name": "s", "namespace": "n"}}, "conversionReviewVersions": ["v1"]}}),
            "exactly one of url or service is required",
        ),
        (
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://127.0.0.1:1/convert"}, "conversionReviewVersions": ["v9"]}}),
            "must include at least one of v1, v1beta1",
        ),
        (
            json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "https://127.0.0.1:1/convert", "caBundle": ca}, "conversionReviewVersions": ["v1"]}}),
            "spec.conversion.webhookClientConfig.caBundle",
        ),
        (
            json!({"strategy": "None", "webhook": {"clientConfig": {"url": "https://127.0.0.1:1/convert"}, "conversionReviewVersions": ["v1"]}}),
            "should not be set when strategy is not set to Webhook",
        ),
        (json!({"strategy": "Magic"}), "Unsupported value: \"Magic\""),
    ];
    for (conversion, want) in cases {
        let st = api_error(
            crds.create(&PostParams::default(), &crd(conversion.clone()))
                .await
                .unwrap_err(),
        );
        assert_eq!(st.code, 422, "{conversion}: {st:?}");
        assert!(st.message.contains(want), "{conversion}: {}", st.message);
    }
    assert!(
        crds.get_opt("volumes.conv.ctrl.dev")
            .await
            .unwrap()
            .is_none()
    );
}

/// How the misbehaving webhook tampers with a correct answer.
type Tamper = fn(&mut Value);

/// A webhook that answers correctly, then applies the tamper function currently set.
fn tampering(tamper: Arc<Mutex<Tamper>>) -> impl Handler {
    let inner = volumes();
    ctrl_runtime::http::handler_fn(move |req| {
        let review: Value = serde_json::from_slice(req.body()).unwrap_or_default();
        let mut answer = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "response": inner.review(&review["request"]),
        });
        (tamper.lock())(&mut answer);
        let mut resp = http::Response::new(http_body_util::Full::new(bytes::Bytes::from(
            answer.to_string(),
        )));
        resp.headers_mut().insert(
            http::header::CONTENT_TYPE,
            http::HeaderValue::from_static("application/json"),
        );
        resp
    })
}

#[tokio::test]
async fn answers_that_break_the_review_contract_are_rejected_like_upstream() {
    let tamper: Arc<Mutex<Tamper>> = Arc::new(Mutex::new(|_| {}));
    let s = setup_with(tampering(tamper.clone()), Seen::default()).await;
    let mut a = at_v1("a", "10Gi");
    a.metadata.labels = Some([("app".to_string(), "x".to_string())].into());
    s.v1().create(&PostParams::default(), &a).await.unwrap();
    let cases: [(Tamper, &str); 5] = [
        (
            |v| v["response"]["uid"] = json!("nope"),
            "failed: expected response.uid=",
        ),
        (
            |v| v["apiVersion"] = json!("apiextensions.k8s.io/v1beta1"),
            "failed: expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview",
        ),
        (
            |v| v["response"]["convertedObjects"] = json!([]),
            "returned 0 objects, expected 1",
        ),
        (
            |v| v["response"]["convertedObjects"][0]["apiVersion"] = json!("conv.ctrl.dev/v1"),
            "invalid groupVersion (expected conv.ctrl.dev/v2, received conv.ctrl.dev/v1)",
        ),
        (
            |v| v["response"]["convertedObjects"][0]["metadata"]["name"] = json!("other"),
            "must have the same name: a != other",
        ),
    ];
    for (t, want) in cases {
        *tamper.lock() = t;
        let st = api_error(s.v2().get("a").await.unwrap_err());
        assert_eq!(st.code, 500, "{want}: {st:?}");
        assert!(
            st.message
                .contains("conversion webhook for conv.ctrl.dev/v1, Kind=Volume")
                && st.message.contains(want),
            "want {want:?} in {}",
            st.message
        );
    }
    // Labels and annotations are the webhook's to change; the rest of metadata is restored.
    *tamper.lock() = |v| {
        let m = &mut v["response"]["convertedObjects"][0]["metadata"];
        m["labels"] = json!({"by": "webhook"});
        m["annotations"] = json!({"note": "converted"});
        m["generation"] = json!(99);
        m["resourceVersion"] = json!("12345");
    };
    let got = s.v2().get("a").await.unwrap();
    let stored = s.v1().get("a").await.unwrap();
    assert_eq!(size2(&got), (10, "Gi"));
    assert_eq!(got.labels().get("by").map(String::as_str), Some("webhook"));
    assert!(got.labels().get("app").is_none());
    assert_eq!(
        got.annotations().get("note").map(String::as_str),
        Some("converted")
    );
    assert_eq!(got.metadata.generation, stored.metadata.generation);
    assert_eq!(got.resource_version(), stored.resource_version());
}

/// (kind version, requestKind version) of every review the validator saw.
type Calls = Arc<Mutex<Vec<(String, String)>>>;

/// A validating webhook written for v2 only: sizes over 100 are refused.
struct SizeLimit(Calls);

#[async_trait]
impl CustomValidator<v2::Volume> for SizeLimit {
    async fn validate_create(
        &self,
        req: &AdmissionRequest,
        v: &v2::Volume,
    ) -> Result<Warnings, ValidationError> {
        let asked = req.request_kind.as_ref().map(|k| k.version.clone());
        self.0
            .lock()
            .push((req.kind.version.clone(), asked.unwrap_or_default()));
        if v.spec.size.value > 100 {
            return Err(ValidationError::invalid(format!(
                "size {} is over 100",
                v.spec.size.value
            )));
        }
        Ok(Vec::new())
    }
}

#[tokio::test]
async fn admission_webhooks_for_another_version_see_the_object_converted_to_it() {
    let calls = Calls::default();
    let c = calls.clone();
    let s = setup_server(
        move |server| {
            server.register("/convert", volumes()).unwrap();
            server
                .register(
                    "/validate",
                    validating_webhook::<v2::Volume, _>(SizeLimit(c)),
                )
                .unwrap();
        },
        Seen::default(),
    )
    .await;
    let (env, hook) = (&s.env, &s.hook);
    let config = |policy: &str| -> ValidatingWebhookConfiguration {
        serde_json::from_value(json!({
            "metadata": {"name": "size-limit"},
            "webhooks": [{
                "name": "size.conv.ctrl.dev",
                "clientConfig": {"url": format!("{}/validate", hook.url), "caBundle": hook.ca_bundle},
                "rules": [{"operations": ["CREATE"], "apiGroups": ["conv.ctrl.dev"], "apiVersions": ["v2"], "resources": ["volumes"]}],
                "matchPolicy": policy,
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }],
        }))
        .unwrap()
    };
    let configs: Api<ValidatingWebhookConfiguration> = Api::all(env.client());
    configs
        .create(&PostParams::default(), &config("Equivalent"))
        .await
        .unwrap();
    let (v1, v2) = (s.v1(), s.v2());
    let pp = PostParams::default();

    // A v1 request reaches the v2 webhook with the object converted to v2.
    let st = api_error(v1.create(&pp, &at_v1("big", "500Gi")).await.unwrap_err());
    assert_eq!(st.code, 422, "{st:?}");
    assert!(
        st.message.contains("size 500 is over 100"),
        "{}",
        st.message
    );
    let st = api_error(v2.create(&pp, &at_v2("big2", 200, "Mi")).await.unwrap_err());
    assert!(
        st.message.contains("size 200 is over 100"),
        "{}",
        st.message
    );
    v1.create(&pp, &at_v1("small", "5Gi")).await.unwrap();
    assert_eq!(
        *calls.lock(),
        vec![
            ("v2".to_string(), "v1".to_string()),
            ("v2".to_string(), "v2".to_string()),
            ("v2".to_string(), "v1".to_string()),
        ]
    );
    let names: Vec<String> = v1
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|v| v.name_any())
        .collect();
    assert_eq!(names, vec!["small"]);

    // matchPolicy: Exact leaves v1 requests alone.
    let mut exact = configs.get("size-limit").await.unwrap();
    exact.webhooks.as_mut().unwrap()[0].match_policy = Some("Exact".into());
    configs.replace("size-limit", &pp, &exact).await.unwrap();
    v1.create(&pp, &at_v1("big", "500Gi")).await.unwrap();
    assert_eq!(calls.lock().len(), 3);
}

#[tokio::test]
async fn kubectl_reads_and_writes_through_the_conversion_webhook() {
    let s = setup().await;
    let Some(kubectl) = kubectl_cli::Kubectl::new(&s.env) else {
        return;
    };
    s.v1()
        .create(&PostParams::default(), &at_v1("a", "10Gi"))
        .await
        .unwrap();
    let out = kubectl
        .run(&[
            "get",
            "volumes.v2.conv.ctrl.dev",
            "a",
            "-o",
            "jsonpath={.apiVersion} {.spec.size.value} {.spec.size.unit}",
        ])
        .await;
    assert!(out.ok, "{out:?}");
    assert_eq!(out.stdout, "conv.ctrl.dev/v2 10 Gi");
    let manifest = kubectl.file(
        "b.yaml",
        "apiVersion: conv.ctrl.dev/v2\nkind: Volume\nmetadata:\n  name: b\n  namespace: default\nspec:\n  size:\n    value: 3\n    unit: Mi\n",
    );
    let out = kubectl
        .run(&["apply", "-f", &manifest.to_string_lossy()])
        .await;
    assert!(out.ok, "{out:?}");
    assert_eq!(s.v1().get("b").await.unwrap().spec.size, "3Mi");
}

/// A defaulting webhook written for v2 only: sizes below 10 are raised to 10.
struct MinSize;

#[async_trait]
impl CustomDefaulter<v2::Volume> for MinSize {
    async fn set_defaults(
        &self,
        _req: &AdmissionRequest,
        v: &mut v2::Volume,
    ) -> Result<(), ValidationError> {
        v.spec.size.value = v.spec.size.value.max(10);
        Ok(())
    }
}

#[tokio::test]
async fn a_mutation_made_at_another_version_is_converted_back_before_it_is_stored() {
    let s = setup_server(
        |server| {
            server.register("/convert", volumes()).unwrap();
            server
                .register("/mutate", defaulting_webhook::<v2::Volume, _>(MinSize))
                .unwrap();
        },
        Seen::default(),
    )
    .await;
    let config: MutatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "min-size"},
        "webhooks": [{
            "name": "min.conv.ctrl.dev",
            "clientConfig": {"url": format!("{}/mutate", s.hook.url), "caBundle": s.hook.ca_bundle},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["conv.ctrl.dev"], "apiVersions": ["v2"], "resources": ["volumes"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }],
    }))
    .unwrap();
    Api::<MutatingWebhookConfiguration>::all(s.env.client())
        .create(&PostParams::default(), &config)
        .await
        .unwrap();
    let pp = PostParams::default();
    // At the storage version: converted to v2 for the webhook, its patch converted back.
    let made = s.v1().create(&pp, &at_v1("small", "5Mi")).await.unwrap();
    assert_eq!(made.spec.size, "10Mi");
    // At v2 (the request converts to v1, the webhook sees v2 again).
    let made = s.v2().create(&pp, &at_v2("tiny", 1, "Gi")).await.unwrap();
    assert_eq!(size2(&made), (10, "Gi"));
    assert_eq!(s.v1().get("tiny").await.unwrap().spec.size, "10Gi");
    // Updates too.
    let mut big = s.v1().create(&pp, &at_v1("big", "50Gi")).await.unwrap();
    big.spec.size = "2Gi".into();
    let updated = s.v1().replace("big", &pp, &big).await.unwrap();
    assert_eq!(updated.spec.size, "10Gi");
}
