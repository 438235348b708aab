//! ctrl-envtest calls admission webhooks like a real API server: a ctrl webhook server
//! (registered by `WebhookBuilder`) defaults and validates ConfigMaps created through
//! `kube::Client`; failure policies, timeouts, dry run, selectors and PATCH writes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use base64::Engine;
use ctrl_builder::WebhookBuilder;
use ctrl_envtest::Environment;
use ctrl_runtime::manager::{Manager, Options as MgrOptions, Runnable};
use ctrl_runtime::webhook::admission::{
    self, CustomDefaulter, CustomValidator, Request, Response, ValidationError, Warnings,
};
use ctrl_runtime::webhook::{self, Server, certs};
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::Api;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

struct Defaults;

#[async_trait]
impl CustomDefaulter<ConfigMap> for Defaults {
    async fn set_defaults(
        &self,
        _req: &Request,
        cm: &mut ConfigMap,
    ) -> Result<(), ValidationError> {
        cm.data
            .get_or_insert_default()
            .entry("probe".into())
            .or_insert_with(|| "/healthz".into());
        Ok(())
    }
}

/// (operation, old v, new v, dry run) as the validator saw them.
type Seen = (String, Option<String>, Option<String>, bool);

#[derive(Clone, Default)]
struct Checks(Arc<Mutex<Vec<Seen>>>);

fn v(cm: &ConfigMap) -> Option<String> {
    cm.data.as_ref().and_then(|d| d.get("v").cloned())
}

#[async_trait]
impl CustomValidator<ConfigMap> for Checks {
    async fn validate_create(
        &self,
        req: &Request,
        cm: &ConfigMap,
    ) -> Result<Warnings, ValidationError> {
        self.0
            .lock()
            .push(("create".into(), None, v(cm), req.is_dry_run()));
        if v(cm).as_deref() == Some("bad") {
            return Err(ValidationError::invalid("v must not be bad"));
        }
        Ok(vec![])
    }
    async fn validate_update(
        &self,
        _req: &Request,
        old: &ConfigMap,
        new: &ConfigMap,
    ) -> Result<Warnings, ValidationError> {
        self.0.lock().push(("update".into(), v(old), v(new), false));
        if v(old).as_deref() == Some("locked") {
            return Err("v is locked".into());
        }
        Ok(vec![])
    }
    async fn validate_delete(
        &self,
        _req: &Request,
        cm: &ConfigMap,
    ) -> Result<Warnings, ValidationError> {
        self.0.lock().push(("delete".into(), v(cm), None, false));
        if v(cm).as_deref() == Some("keep") {
            return Err("this one is kept".into());
        }
        Ok(vec![])
    }
}

struct Slow;

#[async_trait]
impl admission::Handler for Slow {
    async fn handle(&self, _req: &Request) -> Response {
        tokio::time::sleep(Duration::from_secs(4)).await;
        Response::allowed("")
    }
}

struct Setup {
    env: Environment,
    url: String,
    ca_bundle: String,
    checks: Checks,
    ctx: CancellationToken,
}

impl Drop for Setup {
    fn drop(&mut self) {
        self.ctx.cancel();
    }
}

async fn setup() -> Setup {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let env = Environment::builder().start().await.expect("envtest");
    let dir = certs::temp_cert_dir().unwrap();
    let generated = certs::generate_self_signed(&dir, &[]).unwrap();
    let server = Server::new(webhook::Options {
        host: "127.0.0.1".into(),
        port: 0,
        cert_dir: dir,
        ..Default::default()
    });
    let addr = server.bind().unwrap();
    let mgr = Manager::new(
        env.client(),
        MgrOptions {
            metrics_bind_address: "0".into(),
            webhook_server: Some(server.clone()),
            ..Default::default()
        },
    )
    .unwrap();
    let checks = Checks::default();
    WebhookBuilder::new(&mgr)
        .for_::<ConfigMap>()
        .with_defaulter(Defaults)
        .with_validator(checks.clone())
        .complete()
        .unwrap();
    server
        .register("/slow", admission::Webhook::new(Slow))
        .unwrap();
    assert_eq!(
        server.paths(),
        vec!["/mutate--v1-configmap", "/slow", "/validate--v1-configmap"]
    );
    let ctx = CancellationToken::new();
    let c = ctx.clone();
    tokio::spawn(async move { mgr.start(c).await });
    assert!(
        Runnable::wait_ready(&server, ctx.clone()).await,
        "webhook server did not start"
    );
    Setup {
        env,
        url: format!("https://127.0.0.1:{}", addr.port()),
        ca_bundle: base64::engine::general_purpose::STANDARD.encode(&generated.ca_pem),
        checks,
        ctx,
    }
}

fn hook(s: &Setup, name: &str, path: &str, extra: serde_json::Value) -> serde_json::Value {
    let mut h = json!({
        "name": name,
        "clientConfig": {"url": format!("{}{path}", s.url), "caBundle": s.ca_bundle},
        "rules": [{"operations": ["CREATE", "UPDATE", "DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "objectSelector": {"matchLabels": {"webhook": "on"}},
    });
    if let (Some(h), Some(e)) = (h.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            h.insert(k.clone(), v.clone());
        }
    }
    h
}

async fn install(s: &Setup, mutating: Vec<serde_json::Value>, validating: Vec<serde_json::Value>) {
    let c = s.env.client();
    if !mutating.is_empty() {
        let m: MutatingWebhookConfiguration = serde_json::from_value(json!({
            "metadata": {"name": "m"}, "webhooks": mutating}))
        .unwrap();
        Api::<MutatingWebhookConfiguration>::all(c.clone())
            .create(&PostParams::default(), &m)
            .await
            .unwrap();
    }
    if !validating.is_empty() {
        let v: ValidatingWebhookConfiguration = serde_json::from_value(json!({
            "metadata": {"name": "v"}, "webhooks": validating}))
        .unwrap();
        Api::<ValidatingWebhookConfiguration>::all(c)
            .create(&PostParams::default(), &v)
            .await
            .unwrap();
    }
}

async fn standard(s: &Setup) {
    install(
        s,
        vec![hook(
            s,
            "default.cm.ctrl.dev",
            "/mutate--v1-configmap",
            json!({}),
        )],
        vec![hook(
            s,
            "validate.cm.ctrl.dev",
            "/validate--v1-configmap",
            json!({}),
        )],
    )
    .await;
}

fn cm(name: &str, val: &str, labelled: bool) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": if labelled { json!({"webhook": "on"}) } else { json!({}) }},
        "data": {"v": val},
    }))
    .unwrap()
}

fn api_err(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(s) => (s.code, s.message),
        other => panic!("not an API error: {other}"),
    }
}

#[tokio::test]
async fn created_objects_come_back_defaulted_and_invalid_ones_are_rejected() {
    let s = setup().await;
    standard(&s).await;
    let cms: Api<ConfigMap> = Api::namespaced(s.env.client(), "default");
    let made = cms
        .create(&PostParams::default(), &cm("a", "ok", true))
        .await
        .unwrap();
    assert_eq!(made.data.unwrap()["probe"], "/healthz");
    let stored = cms.get("a").await.unwrap();
    assert_eq!(stored.data.unwrap()["probe"], "/healthz");

    // Not selected by the object selector: untouched.
    let plain = cms
        .create(&PostParams::default(), &cm("plain", "bad", false))
        .await
        .unwrap();
    assert!(!plain.data.unwrap().contains_key("probe"));

    let (code, msg) = api_err(
        cms.create(&PostParams::default(), &cm("b", "bad", true))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422);
    assert_eq!(
        msg,
        "admission webhook \"validate.cm.ctrl.dev\" denied the request: v must not be bad"
    );
    assert!(
        cms.get_opt("b").await.unwrap().is_none(),
        "a rejected create stores nothing"
    );
}

#[tokio::test]
async fn update_validator_sees_old_and_new_and_patches_are_defaulted() {
    let s = setup().await;
    standard(&s).await;
    let cms: Api<ConfigMap> = Api::namespaced(s.env.client(), "default");
    cms.create(&PostParams::default(), &cm("u", "locked", true))
        .await
        .unwrap();
    let patch = Patch::Merge(json!({"data": {"v": "changed"}}));
    let (code, msg) = api_err(
        cms.patch("u", &PatchParams::default(), &patch)
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 403);
    assert!(msg.ends_with("v is locked"), "{msg}");
    let seen = s.checks.0.lock().clone();
    assert!(
        seen.contains(&(
            "update".into(),
            Some("locked".into()),
            Some("changed".into()),
            false
        )),
        "{seen:?}"
    );

    // A merge patch that drops the defaulted key gets it back from the mutating webhook.
    cms.create(&PostParams::default(), &cm("p", "ok", true))
        .await
        .unwrap();
    let drop_probe = Patch::Merge(json!({"data": {"probe": null, "v": "new"}}));
    let out = cms
        .patch("p", &PatchParams::default(), &drop_probe)
        .await
        .unwrap();
    let data = out.data.unwrap();
    assert_eq!(data["probe"], "/healthz");
    assert_eq!(data["v"], "new");

    // Delete is validated against the stored object.
    cms.create(&PostParams::default(), &cm("k", "keep", true))
        .await
        .unwrap();
    let (code, msg) = api_err(cms.delete("k", &DeleteParams::default()).await.unwrap_err());
    assert_eq!(code, 403);
    assert!(msg.ends_with("this one is kept"), "{msg}");
    cms.delete("p", &DeleteParams::default()).await.unwrap();
}

#[tokio::test]
async fn failure_policy_decides_when_the_webhook_is_down() {
    let s = setup().await;
    let dead = "https://127.0.0.1:1/validate";
    let mut ignore = hook(
        &s,
        "ignore.ctrl.dev",
        "",
        json!({"failurePolicy": "Ignore"}),
    );
    ignore["clientConfig"]["url"] = json!(dead);
    install(&s, vec![], vec![ignore]).await;
    let cms: Api<ConfigMap> = Api::namespaced(s.env.client(), "default");
    cms.create(&PostParams::default(), &cm("through", "x", true))
        .await
        .unwrap();

    let mut fail = hook(&s, "fail.ctrl.dev", "", json!({"failurePolicy": "Fail"}));
    fail["clientConfig"]["url"] = json!(dead);
    let m: MutatingWebhookConfiguration =
        serde_json::from_value(json!({"metadata": {"name": "f"}, "webhooks": [fail]})).unwrap();
    Api::<MutatingWebhookConfiguration>::all(s.env.client())
        .create(&PostParams::default(), &m)
        .await
        .unwrap();
    let (code, msg) = api_err(
        cms.create(&PostParams::default(), &cm("blocked", "x", true))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 500);
    assert!(
        msg.contains("failed calling webhook \"fail.ctrl.dev\""),
        "{msg}"
    );
    assert!(cms.get_opt("blocked").await.unwrap().is_none());
}

#[tokio::test]
async fn timeout_seconds_is_honoured() {
    let s = setup().await;
    install(
        &s,
        vec![],
        vec![hook(
            &s,
            "slow.ctrl.dev",
            "/slow",
            json!({"timeoutSeconds": 1}),
        )],
    )
    .await;
    let cms: Api<ConfigMap> = Api::namespaced(s.env.client(), "default");
    let t0 = Instant::now();
    let (code, msg) = api_err(
        cms.create(&PostParams::default(), &cm("slow", "x", true))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 500);
    assert!(msg.contains("deadline exceeded"), "{msg}");
    assert!(
        t0.elapsed() < Duration::from_secs(4),
        "gave up before the handler finished"
    );
}

#[tokio::test]
async fn dry_run_calls_only_side_effect_free_webhooks() {
    let s = setup().await;
    standard(&s).await;
    let cms: Api<ConfigMap> = Api::namespaced(s.env.client(), "default");
    let dry = PostParams {
        dry_run: true,
        ..Default::default()
    };
    let out = cms.create(&dry, &cm("dry", "ok", true)).await.unwrap();
    assert_eq!(out.data.unwrap()["probe"], "/healthz");
    assert!(cms.get_opt("dry").await.unwrap().is_none());
    assert!(
        s.checks.0.lock().iter().any(|c| c.0 == "create" && c.3),
        "the validator saw dryRun"
    );

    let unknown = hook(
        &s,
        "unknown.ctrl.dev",
        "/validate--v1-configmap",
        json!({"sideEffects": "Unknown", "objectSelector": {"matchLabels": {"fx": "yes"}}}),
    );
    let v: ValidatingWebhookConfiguration =
        serde_json::from_value(json!({"metadata": {"name": "fx"}, "webhooks": [unknown]})).unwrap();
    Api::<ValidatingWebhookConfiguration>::all(s.env.client())
        .create(&PostParams::default(), &v)
        .await
        .unwrap();
    let mut obj = cm("dry2", "ok", false);
    obj.metadata.labels = Some([("fx".to_string(), "yes".to_string())].into());
    let (code, msg) = api_err(cms.create(&dry, &obj).await.unwrap_err());
    assert_eq!(code, 400);
    assert!(msg.contains("does not support dry run"), "{msg}");
}

#[tokio::test]
async fn namespace_selector_and_rules_choose_the_webhooks() {
    let s = setup().await;
    let only_labelled_ns = hook(
        &s,
        "ns.ctrl.dev",
        "/validate--v1-configmap",
        json!({"objectSelector": {}, "namespaceSelector": {"matchExpressions": [{"key": "guarded", "operator": "Exists"}]}}),
    );
    install(&s, vec![], vec![only_labelled_ns]).await;
    let nss: Api<Namespace> = Api::all(s.env.client());
    let ns: Namespace = serde_json::from_value(
        json!({"metadata": {"name": "guarded", "labels": {"guarded": "true"}}}),
    )
    .unwrap();
    nss.create(&PostParams::default(), &ns).await.unwrap();
    let guarded: Api<ConfigMap> = Api::namespaced(s.env.client(), "guarded");
    let open: Api<ConfigMap> = Api::namespaced(s.env.client(), "default");
    assert!(
        guarded
            .create(&PostParams::default(), &cm("x", "bad", false))
            .await
            .is_err()
    );
    open.create(&PostParams::default(), &cm("x", "bad", false))
        .await
        .unwrap();
    // Secrets are not in the rules.
    let secrets: Api<k8s_openapi::api::core::v1::Secret> =
        Api::namespaced(s.env.client(), "guarded");
    let sec: k8s_openapi::api::core::v1::Secret =
        serde_json::from_value(json!({"metadata": {"name": "s"}})).unwrap();
    secrets.create(&PostParams::default(), &sec).await.unwrap();
}

#[tokio::test]
async fn the_admission_path_refuses_the_patches_the_verb_path_refuses() {
    let s = setup().await;
    standard(&s).await;
    let cms: Api<ConfigMap> = Api::namespaced(s.env.client(), "default");
    for (name, labelled) in [("reviewed", true), ("direct", false)] {
        cms.create(&PostParams::default(), &cm(name, "ok", labelled))
            .await
            .unwrap();
        // 10,001 operations, each harmless: over upstream's limit whether or not a webhook
        // reviews the patched object first.
        let ops: Vec<_> = (0..10_001)
            .map(|_| json!({"op": "test", "path": "/metadata/name", "value": name}))
            .collect();
        let patch = Patch::<()>::Json(serde_json::from_value(json!(ops)).unwrap());
        let (code, msg) = api_err(
            cms.patch(name, &PatchParams::default(), &patch)
                .await
                .unwrap_err(),
        );
        assert_eq!((code, name), (413, name), "{msg}");
        assert!(msg.contains("10000"), "{msg}");
        let stored = cms.get(name).await.unwrap();
        assert_eq!(
            stored.data.unwrap()["v"],
            "ok",
            "a refused patch changes nothing"
        );
    }
}

/// A configuration created or deleted at run time takes effect on the next write, as upstream's
/// configuration informer does (admission reads a count of the configurations on every write
/// instead of listing them: this holds that count to the store).
#[tokio::test]
async fn configurations_added_and_removed_at_run_time_apply_to_the_next_write() {
    let s = setup().await;
    let cms: Api<ConfigMap> = Api::namespaced(s.env.client(), "default");
    cms.create(&PostParams::default(), &cm("before", "bad", true))
        .await
        .expect("no webhook yet: nothing reviews the write");
    assert!(s.checks.0.lock().is_empty(), "no webhook was called");

    standard(&s).await;
    let made = cms
        .create(&PostParams::default(), &cm("during", "ok", true))
        .await
        .expect("admitted through both webhooks");
    assert_eq!(made.data.unwrap()["probe"], "/healthz", "mutated");
    let (code, _) = api_err(
        cms.create(&PostParams::default(), &cm("refused", "bad", true))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422, "the validating webhook now reviews writes");

    let dp = DeleteParams::default();
    Api::<MutatingWebhookConfiguration>::all(s.env.client())
        .delete("m", &dp)
        .await
        .unwrap();
    let made = cms
        .create(&PostParams::default(), &cm("half", "ok", true))
        .await
        .unwrap();
    assert!(
        !made.data.unwrap().contains_key("probe"),
        "the mutating webhook is gone"
    );
    let (code, _) = api_err(
        cms.create(&PostParams::default(), &cm("refused2", "bad", true))
            .await
            .unwrap_err(),
    );
    assert_eq!(code, 422, "the validating one is still there");

    Api::<ValidatingWebhookConfiguration>::all(s.env.client())
        .delete("v", &dp)
        .await
        .unwrap();
    let calls = s.checks.0.lock().len();
    cms.create(&PostParams::default(), &cm("after", "bad", true))
        .await
        .expect("no webhook left: the write is not reviewed");
    assert_eq!(s.checks.0.lock().len(), calls, "no webhook was called");
}
