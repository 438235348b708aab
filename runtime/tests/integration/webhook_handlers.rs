//! The webhook handlers beyond one typed defaulter or validator, over the real TLS
//! server: several admission handlers at one path (Go's `MultiMutatingHandler` /
//! `MultiValidatingHandler`), a context function whose values the handler reads
//! (Go's `WithContextFunc`), and a `TokenReview` authentication webhook.

use crate::webhook_support;

use async_trait::async_trait;
use ctrl_runtime::webhook::admission::{
    self, Extensions, Handler, Request, Response, Webhook, handler_fn, multi_mutating_handler,
    multi_validating_handler,
};
use ctrl_runtime::webhook::authentication::{
    TokenReview, TokenReviewHandler, TokenReviewStatus, TokenReviewWebhook, UserInfo,
    authenticated, unauthenticated,
};
use serde_json::{Value, json};
use webhook_support::{configmap, post, review, start};

fn patching(op: Value) -> Box<dyn Handler> {
    Box::new(handler_fn(move |_req: &Request| {
        let patch: json_patch::Patch = serde_json::from_value(json!([op.clone()])).expect("patch");
        Response::patched(&patch).with_warnings([format!("patched {}", op["path"])])
    }))
}

fn allowing(warning: &'static str) -> Box<dyn Handler> {
    Box::new(handler_fn(move |_req: &Request| {
        Response::allowed("").with_warnings([warning.to_string()])
    }))
}

fn denying(message: &'static str) -> Box<dyn Handler> {
    Box::new(handler_fn(move |_req: &Request| Response::denied(message)))
}

async fn admit(r: &webhook_support::Running, path: &str) -> Response {
    let body = review("CREATE", configmap(json!({})), None).to_string();
    let (code, text) = post(r, path, "application/json", body.as_bytes()).await;
    assert_eq!(code, 200, "{text}");
    let v: Value = serde_json::from_str(&text).expect("JSON");
    serde_json::from_value(v["response"].clone()).expect("a response")
}

#[tokio::test]
async fn multi_handlers_concatenate_patches_and_the_first_denial_wins() {
    let label = json!({"op": "add", "path": "/metadata/labels", "value": {"a": "1"}});
    let note = json!({"op": "add", "path": "/metadata/annotations", "value": {"b": "2"}});
    let r = start(|s| {
        let both = multi_mutating_handler([patching(label.clone()), patching(note.clone())]);
        s.register("/mutate", Webhook::new(both)).expect("register");
        let deny = multi_mutating_handler([patching(label.clone()), denying("no mutation")]);
        s.register("/mutate-deny", Webhook::new(deny))
            .expect("register");
        let ok = multi_validating_handler([allowing("first"), allowing("second")]);
        s.register("/validate", Webhook::new(ok)).expect("register");
        let no =
            multi_validating_handler([allowing("first"), denying("second says no"), allowing("x")]);
        s.register("/validate-deny", Webhook::new(no))
            .expect("register");
    })
    .await;

    let resp = admit(&r, "/mutate").await;
    assert!(resp.allowed);
    let patch = resp
        .decoded_patch()
        .expect("patch decodes")
        .expect("a patch");
    assert_eq!(
        serde_json::to_value(&patch).expect("json"),
        json!([label, note])
    );
    assert_eq!(
        resp.warnings,
        [
            "patched \"/metadata/labels\"",
            "patched \"/metadata/annotations\""
        ]
    );

    let resp = admit(&r, "/mutate-deny").await;
    assert!(!resp.allowed);
    assert_eq!(resp.message(), "no mutation");

    let resp = admit(&r, "/validate").await;
    assert!(resp.allowed);
    assert_eq!(resp.warnings, ["first", "second"]);

    let resp = admit(&r, "/validate-deny").await;
    assert!(!resp.allowed);
    assert_eq!(resp.message(), "second says no");
    assert_eq!(resp.status.map(|s| s.code), Some(403));
}

/// What the context function passes on: the request's path.
#[derive(Clone)]
struct Path(String);

#[tokio::test]
async fn the_context_fn_s_values_reach_the_handler() {
    let r = start(|s| {
        let echo = handler_fn(|_req: &Request| match admission::context::<Path>() {
            Some(Path(p)) => Response::allowed(format!("served at {p}")),
            None => Response::denied("no context"),
        });
        let hook = Webhook::new(echo).with_context_fn(|req| {
            let mut ext = Extensions::new();
            ext.insert(Path(req.uri().path().to_string()));
            ext
        });
        s.register("/with-context", hook).expect("register");
        let bare = handler_fn(|_req: &Request| match admission::context::<Path>() {
            Some(_) => Response::allowed("unexpected context"),
            None => Response::denied("no context"),
        });
        s.register("/without", Webhook::new(bare))
            .expect("register");
    })
    .await;
    let resp = admit(&r, "/with-context").await;
    assert!(resp.allowed, "{resp:?}");
    assert_eq!(resp.message(), "served at /with-context");
    assert_eq!(admit(&r, "/without").await.message(), "no context");
    assert_eq!(admission::context::<Path>().map(|p| p.0), None);
}

/// Tokens `good` (alice) and `bad`; `boom` panics.
struct Tokens;

#[async_trait]
impl TokenReviewHandler for Tokens {
    async fn review(&self, review: &TokenReview) -> TokenReviewStatus {
        let user = |name: &str| UserInfo {
            username: Some(name.to_string()),
            groups: Some(vec!["ops".to_string()]),
            ..UserInfo::default()
        };
        match review.spec.token.as_deref() {
            Some("good") => authenticated("", user("alice")),
            Some("boom") => panic!("token handler blew up"),
            _ => unauthenticated("unknown token", UserInfo::default()),
        }
    }
}

fn token_review(token: &str) -> Vec<u8> {
    json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
           "metadata": {"uid": "tr-1"}, "spec": {"token": token, "audiences": ["api"]}})
    .to_string()
    .into_bytes()
}

async fn authenticate(r: &webhook_support::Running, token: &str) -> (u16, Value) {
    let (code, text) = post(r, "/authenticate", "application/json", &token_review(token)).await;
    let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
    (code, v)
}

#[tokio::test]
async fn a_token_review_webhook_says_who_a_token_belongs_to() {
    let r = start(|s| {
        s.register("/authenticate", TokenReviewWebhook::new(Tokens))
            .expect("register");
    })
    .await;
    let (code, v) = authenticate(&r, "good").await;
    assert_eq!(code, 200);
    assert_eq!(v["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(v["kind"], "TokenReview");
    assert_eq!(v["metadata"]["uid"], "tr-1");
    assert_eq!(v["status"]["authenticated"], true);
    assert_eq!(v["status"]["user"]["username"], "alice");
    assert_eq!(v["status"]["user"]["groups"], json!(["ops"]));

    let (code, v) = authenticate(&r, "bad").await;
    assert_eq!(code, 200);
    assert_eq!(v["status"]["authenticated"], false);
    assert_eq!(v["status"]["error"], "unknown token");

    let (code, v) = authenticate(&r, "boom").await;
    assert_eq!(code, 200);
    assert_eq!(v["status"]["authenticated"], false);
    assert_eq!(
        v["status"]["error"],
        "panic: token handler blew up [recovered]"
    );

    let (code, v) = authenticate(&r, "").await;
    assert_eq!(code, 400);
    assert_eq!(v["status"]["error"], "token is empty");
    let (code, _) = post(&r, "/authenticate", "application/json", b"not json").await;
    assert_eq!(code, 400);
    let (code, _) = post(&r, "/authenticate", "text/plain", &token_review("good")).await;
    assert_eq!(code, 400);
}

/// Sets `data.defaulted`.
struct Defaults;

#[async_trait]
impl admission::CustomDefaulter<k8s_openapi::api::core::v1::ConfigMap> for Defaults {
    async fn set_defaults(
        &self,
        _req: &Request,
        cm: &mut k8s_openapi::api::core::v1::ConfigMap,
    ) -> Result<(), admission::ValidationError> {
        cm.data
            .get_or_insert_with(Default::default)
            .insert("defaulted".into(), "yes".into());
        Ok(())
    }
}

#[tokio::test]
async fn the_defaulter_removes_unknown_fields_only_when_asked() {
    use admission::DefaulterHandler;
    use k8s_openapi::api::core::v1::ConfigMap;
    let r = start(|s| {
        let keep = DefaulterHandler::<ConfigMap, _>::new(Defaults);
        s.register("/keep", Webhook::new(keep)).expect("register");
        let remove =
            DefaulterHandler::<ConfigMap, _>::new(Defaults).remove_unknown_or_omitable_fields(true);
        s.register("/remove", Webhook::new(remove))
            .expect("register");
    })
    .await;
    let mut object = configmap(json!({}));
    object["unknownField"] = json!("kept by the API server's schema, not by ConfigMap");
    let body = review("CREATE", object, None).to_string();
    let ops = |path: &'static str| {
        let (r, body) = (&r, body.clone());
        async move {
            let (code, text) = post(r, path, "application/json", body.as_bytes()).await;
            assert_eq!(code, 200, "{text}");
            let v: Value = serde_json::from_str(&text).expect("JSON");
            let resp: Response = serde_json::from_value(v["response"].clone()).expect("response");
            let patch = resp.decoded_patch().expect("decodes").expect("a patch");
            serde_json::to_value(patch).expect("json")
        }
    };
    let kept = ops("/keep").await.to_string();
    assert!(!kept.contains("\"remove\""), "{kept}");
    assert!(kept.contains("defaulted"), "{kept}");
    let removed = ops("/remove").await.to_string();
    assert!(
        removed.contains("\"remove\"") && removed.contains("/unknownField"),
        "{removed}"
    );
}
