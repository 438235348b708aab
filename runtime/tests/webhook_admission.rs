//! The admission webhooks over the real TLS server: defaulting patches, validation
//! verdicts with old and new objects, request context, panics, and bad input that
//! gets a clear 4xx while the server keeps serving.

mod webhook_support;

use std::sync::Arc;

use async_trait::async_trait;
use ctrl_runtime::webhook::admission::{
    self, CustomDefaulter, CustomValidator, Request, Response, ValidationError, Warnings,
};
use ctrl_runtime::webhook::{Error, Options, Server};
use k8s_openapi::api::core::v1::ConfigMap;
use parking_lot::Mutex;
use serde_json::{Value, json};
use webhook_support::{configmap, post, review, start};

struct Defaults;

#[async_trait]
impl CustomDefaulter<ConfigMap> for Defaults {
    async fn set_defaults(&self, req: &Request, cm: &mut ConfigMap) -> Result<(), ValidationError> {
        let data = cm.data.get_or_insert_default();
        data.entry("probe".into())
            .or_insert_with(|| "/healthz".into());
        data.insert(
            "user".into(),
            req.user_info.username.clone().unwrap_or_default(),
        );
        Ok(())
    }
}

/// (operation, old v, new v) as the validator saw them.
type Seen = (String, Option<String>, Option<String>);

#[derive(Default)]
struct Checks {
    seen: Mutex<Vec<Seen>>,
}

fn value(cm: &ConfigMap, k: &str) -> Option<String> {
    cm.data.as_ref().and_then(|d| d.get(k).cloned())
}

struct Validator(Arc<Checks>);

impl std::ops::Deref for Validator {
    type Target = Checks;
    fn deref(&self) -> &Checks {
        &self.0
    }
}

#[async_trait]
impl CustomValidator<ConfigMap> for Validator {
    async fn validate_create(
        &self,
        _req: &Request,
        cm: &ConfigMap,
    ) -> Result<Warnings, ValidationError> {
        self.seen
            .lock()
            .push(("create".into(), None, value(cm, "v")));
        match value(cm, "v").as_deref() {
            Some("bad") => Err(ValidationError::invalid("v must not be bad")
                .with_warnings(["careful".to_string()])),
            Some("warn") => Ok(vec!["v is deprecated".into()]),
            Some("panic") => panic!("validator exploded"),
            _ => Ok(vec![]),
        }
    }
    async fn validate_update(
        &self,
        _req: &Request,
        old: &ConfigMap,
        new: &ConfigMap,
    ) -> Result<Warnings, ValidationError> {
        self.seen
            .lock()
            .push(("update".into(), value(old, "v"), value(new, "v")));
        if value(old, "v") == Some("locked".into()) {
            return Err("v is locked".into());
        }
        Ok(vec![])
    }
    async fn validate_delete(
        &self,
        req: &Request,
        cm: &ConfigMap,
    ) -> Result<Warnings, ValidationError> {
        self.seen
            .lock()
            .push(("delete".into(), value(cm, "v"), None));
        if req.is_dry_run() {
            return Err(ValidationError::new(409, "Conflict", "no dry-run deletes"));
        }
        Ok(vec![])
    }
}

fn answer(body: &str) -> Value {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    assert_eq!(v["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(v["kind"], "AdmissionReview");
    v["response"].clone()
}

async fn send(r: &webhook_support::Running, path: &str, review: Value) -> Value {
    let (code, body) = post(r, path, "application/json", review.to_string().as_bytes()).await;
    assert_eq!(code, 200, "{body}");
    answer(&body)
}

fn server_setup(checks: Arc<Checks>) -> impl FnOnce(&Server) {
    move |s: &Server| {
        s.register(
            "/mutate",
            admission::defaulting_webhook::<ConfigMap, _>(Defaults),
        )
        .unwrap();
        s.register(
            "/validate",
            admission::validating_webhook::<ConfigMap, _>(Validator(checks)),
        )
        .unwrap();
    }
}

#[tokio::test]
async fn defaulter_answers_with_a_base64_json_patch() {
    let r = start(server_setup(Arc::new(Checks::default()))).await;
    let resp = send(
        &r,
        "/mutate",
        review("CREATE", configmap(json!({"a": "1"})), None),
    )
    .await;
    assert_eq!(resp["uid"], "uid-1");
    assert_eq!(resp["allowed"], true);
    assert_eq!(resp["patchType"], "JSONPatch");
    let patch: Response = serde_json::from_value(resp.clone()).unwrap();
    let patch = patch.decoded_patch().unwrap().unwrap();
    let mut obj = configmap(json!({"a": "1"}));
    json_patch::patch(&mut obj, &patch).unwrap();
    assert_eq!(
        obj["data"],
        json!({"a": "1", "probe": "/healthz", "user": "alice"})
    );

    // Already defaulted: no patch at all. Unknown fields are not removed.
    let mut full = configmap(json!({"a": "1", "probe": "/x", "user": "alice"}));
    full["extra"] = json!({"kept": true});
    let resp = send(&r, "/mutate", review("UPDATE", full, None)).await;
    assert_eq!(resp["allowed"], true);
    assert!(resp.get("patch").is_none(), "{resp}");

    // Delete is admitted without defaulting.
    let resp = send(
        &r,
        "/mutate",
        review("DELETE", Value::Null, Some(configmap(json!({})))),
    )
    .await;
    assert_eq!(resp["allowed"], true);
}

#[tokio::test]
async fn validator_sees_operations_old_and_new_and_returns_codes_and_warnings() {
    let checks = Arc::new(Checks::default());
    let r = start(server_setup(checks.clone())).await;

    let ok = send(
        &r,
        "/validate",
        review("CREATE", configmap(json!({"v": "fine"})), None),
    )
    .await;
    assert_eq!(ok["allowed"], true);

    let warned = send(
        &r,
        "/validate",
        review("CREATE", configmap(json!({"v": "warn"})), None),
    )
    .await;
    assert_eq!(warned["allowed"], true);
    assert_eq!(warned["warnings"], json!(["v is deprecated"]));

    let denied = send(
        &r,
        "/validate",
        review("CREATE", configmap(json!({"v": "bad"})), None),
    )
    .await;
    assert_eq!(denied["allowed"], false);
    assert_eq!(denied["status"]["code"], 422);
    assert_eq!(denied["status"]["reason"], "Invalid");
    assert_eq!(denied["status"]["message"], "v must not be bad");
    assert_eq!(denied["warnings"], json!(["careful"]));

    let upd = send(
        &r,
        "/validate",
        review(
            "UPDATE",
            configmap(json!({"v": "new"})),
            Some(configmap(json!({"v": "locked"}))),
        ),
    )
    .await;
    assert_eq!(upd["allowed"], false);
    assert_eq!(upd["status"]["code"], 403);
    assert_eq!(upd["status"]["message"], "v is locked");

    let mut dry = review("DELETE", Value::Null, Some(configmap(json!({"v": "gone"}))));
    dry["request"]["dryRun"] = json!(true);
    let del = send(&r, "/validate", dry).await;
    assert_eq!(del["status"]["code"], 409);

    let seen = checks.seen.lock().clone();
    assert!(
        seen.contains(&("update".into(), Some("locked".into()), Some("new".into()))),
        "{seen:?}"
    );
    assert!(
        seen.contains(&("delete".into(), Some("gone".into()), None)),
        "{seen:?}"
    );

    // An update without the old object is a 400 verdict, not a crash.
    let no_old = send(
        &r,
        "/validate",
        review("UPDATE", configmap(json!({})), None),
    )
    .await;
    assert_eq!(no_old["allowed"], false);
    assert_eq!(no_old["status"]["code"], 400);
}

#[tokio::test]
async fn a_panicking_handler_is_a_500_denial_and_counted() {
    let r = start(server_setup(Arc::new(Checks::default()))).await;
    let before = panics();
    let resp = send(
        &r,
        "/validate",
        review("CREATE", configmap(json!({"v": "panic"})), None),
    )
    .await;
    assert_eq!(resp["allowed"], false);
    assert_eq!(resp["status"]["code"], 500);
    assert!(
        resp["status"]["message"]
            .as_str()
            .unwrap()
            .contains("validator exploded")
    );
    assert!(panics() > before);
    // Still serving.
    let ok = send(
        &r,
        "/validate",
        review("CREATE", configmap(json!({})), None),
    )
    .await;
    assert_eq!(ok["allowed"], true);
}

fn panics() -> u64 {
    ctrl_runtime::metrics::registry()
        .gather()
        .iter()
        .find(|f| f.name() == "controller_runtime_webhook_panics_total")
        .map(|f| f.get_metric()[0].get_counter().get_value() as u64)
        .unwrap_or(0)
}

#[tokio::test]
async fn bad_input_gets_a_clear_4xx_and_the_server_keeps_serving() {
    let r = start(server_setup(Arc::new(Checks::default()))).await;
    let cases: Vec<(&str, &str, Vec<u8>, u16, &str)> = vec![
        (
            "malformed",
            "application/json",
            b"{not json".to_vec(),
            400,
            "couldn't decode",
        ),
        (
            "empty",
            "application/json",
            Vec::new(),
            400,
            "request body is empty",
        ),
        (
            "no request",
            "application/json",
            br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#.to_vec(),
            400,
            "no request",
        ),
        (
            "wrong kind",
            "application/json",
            br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{}}"#
                .to_vec(),
            400,
            "expected admission.k8s.io/v1 AdmissionReview",
        ),
        (
            "content type",
            "text/plain",
            review("CREATE", configmap(json!({})), None)
                .to_string()
                .into_bytes(),
            400,
            "expected application/json",
        ),
        (
            "oversized",
            "application/json",
            vec![b' '; 8 * 1024 * 1024],
            413,
            "too large",
        ),
    ];
    for (name, ct, body, code, msg) in cases {
        let (got, text) = post(&r, "/validate", ct, &body).await;
        assert_eq!(got, code, "{name}: {text}");
        assert!(text.contains(msg), "{name}: {text}");
        let ok = send(
            &r,
            "/validate",
            review("CREATE", configmap(json!({})), None),
        )
        .await;
        assert_eq!(ok["allowed"], true, "{name}: server still serves");
    }
    let (got, _) = post(&r, "/nowhere", "application/json", b"{}").await;
    assert_eq!(got, 404);
}

#[tokio::test]
async fn registering_a_path_twice_or_an_unclean_path_is_an_error() {
    let s = Server::new(Options::default());
    let h = || admission::Webhook::new(admission::handler_fn(|_| Response::allowed("")));
    s.register("/validate-x", h()).unwrap();
    assert!(
        matches!(s.register("/validate-x", h()), Err(Error::DuplicatePath(p)) if p == "/validate-x")
    );
    assert!(matches!(
        s.register("validate-y", h()),
        Err(Error::InvalidPath(_))
    ));
    assert!(matches!(
        s.register("/a/../b", h()),
        Err(Error::InvalidPath(_))
    ));
    assert_eq!(s.paths(), vec!["/validate-x".to_string()]);
    assert_eq!(s.options().port, 9443);
    assert!(
        s.options()
            .cert_dir
            .ends_with("k8s-webhook-server/serving-certs")
    );
    assert_eq!(s.options().cert_name, "tls.crt");
    assert_eq!(s.options().key_name, "tls.key");
}

#[tokio::test]
async fn metrics_carry_controller_runtime_names() {
    let r = start(server_setup(Arc::new(Checks::default()))).await;
    send(
        &r,
        "/validate",
        review("CREATE", configmap(json!({})), None),
    )
    .await;
    let names: Vec<String> = ctrl_runtime::metrics::registry()
        .gather()
        .iter()
        .map(|f| f.name().to_string())
        .collect();
    for n in [
        "controller_runtime_webhook_latency_seconds",
        "controller_runtime_webhook_requests_total",
        "controller_runtime_webhook_requests_in_flight",
        "controller_runtime_webhook_panics_total",
        "certwatcher_read_certificate_total",
        "certwatcher_read_certificate_errors_total",
    ] {
        assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
    }
    let fam = ctrl_runtime::metrics::registry().gather();
    let total = fam
        .iter()
        .find(|f| f.name() == "controller_runtime_webhook_requests_total")
        .unwrap();
    assert!(total.get_metric().iter().any(|m| {
        let l = m.get_label();
        l.iter()
            .any(|p| p.name() == "webhook" && p.value() == "/validate")
            && l.iter().any(|p| p.name() == "code" && p.value() == "200")
    }));
}
