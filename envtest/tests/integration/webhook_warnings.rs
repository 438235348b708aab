//! Admission webhook `warnings` reach the client as a real API server sends them: one
//! `Warning: 299 - "<text>"` response header each (quotes escaped, duplicates once), on
//! allowed and on denied writes. Read with raw HTTP (kube only logs them) and from kubectl,
//! which prints `Warning: <text>`.

use crate::common;
use crate::kubectl_cli;
use crate::webhook_server;

use async_trait::async_trait;
use ctrl_envtest::Environment;
use ctrl_runtime::webhook::admission::{
    CustomValidator, Request, ValidationError, Warnings, validating_webhook,
};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;

struct Warner;

fn mode(cm: &ConfigMap) -> &str {
    cm.data
        .as_ref()
        .and_then(|d| d.get("mode"))
        .map_or("", String::as_str)
}

#[async_trait]
impl CustomValidator<ConfigMap> for Warner {
    async fn validate_create(
        &self,
        _req: &Request,
        cm: &ConfigMap,
    ) -> Result<Warnings, ValidationError> {
        match mode(cm) {
            "deny" => Err(ValidationError::invalid("mode deny is refused")
                .with_warnings(vec!["refused with a warning".to_string()])),
            "warn" => Ok(vec![
                "size is large".to_string(),
                "a \"quoted\" word".to_string(),
                "size is large".to_string(),
                String::new(),
            ]),
            _ => Ok(Vec::new()),
        }
    }

    async fn validate_update(
        &self,
        _req: &Request,
        _old: &ConfigMap,
        new: &ConfigMap,
    ) -> Result<Warnings, ValidationError> {
        Ok(vec![format!("updated to mode {:?}", mode(new))])
    }
}

async fn setup() -> (Environment, webhook_server::Running) {
    let hook = webhook_server::start(|s| {
        s.register("/validate", validating_webhook::<ConfigMap, _>(Warner))
            .unwrap();
    })
    .await;
    let env = common::env().await;
    let config: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "warner"},
        "webhooks": [{
            "name": "warn.cm.ctrl.dev",
            "clientConfig": {"url": format!("{}/validate", hook.url), "caBundle": hook.ca_bundle},
            "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None",
            "admissionReviewVersions": ["v1"],
        }],
    }))
    .unwrap();
    Api::<ValidatingWebhookConfiguration>::all(env.client())
        .create(&PostParams::default(), &config)
        .await
        .unwrap();
    (env, hook)
}

async fn create(env: &Environment, name: &str, mode: &str) -> (u16, Vec<(String, String)>, String) {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"mode": mode}});
    common::raw_full(
        env,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(&body.to_string()),
        "application/json",
        &[],
    )
    .await
}

#[tokio::test]
async fn webhook_warnings_become_warning_headers() {
    let (env, _hook) = setup().await;
    let (code, headers, body) = create(&env, "w", "warn").await;
    assert_eq!(code, 201, "{body}");
    assert_eq!(
        common::warnings(&headers),
        vec![r#"299 - "size is large""#, r#"299 - "a \"quoted\" word""#]
    );

    // No warnings, no header.
    let (code, headers, body) = create(&env, "quiet", "").await;
    assert_eq!(code, 201, "{body}");
    assert!(common::warnings(&headers).is_empty(), "{headers:?}");

    // A denial carries its warnings too.
    let (code, headers, body) = create(&env, "d", "deny").await;
    assert_eq!(code, 422, "{body}");
    assert!(body.contains("mode deny is refused"), "{body}");
    assert_eq!(
        common::warnings(&headers),
        vec![r#"299 - "refused with a warning""#]
    );
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    assert!(cms.get_opt("d").await.unwrap().is_none());

    // Updates (here a merge patch) too.
    let (code, headers, body) = common::raw_full(
        &env,
        "PATCH",
        "/api/v1/namespaces/default/configmaps/w",
        Some(r#"{"data":{"mode":"calm"}}"#),
        "application/merge-patch+json",
        &[],
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        common::warnings(&headers),
        vec![r#"299 - "updated to mode \"calm\"""#]
    );
}

#[tokio::test]
async fn kubectl_prints_webhook_warnings() {
    let (env, _hook) = setup().await;
    let Some(kubectl) = kubectl_cli::Kubectl::new(&env) else {
        return;
    };
    let manifest = kubectl.file(
        "cm.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kw\n  namespace: default\ndata:\n  mode: warn\n",
    );
    let out = kubectl
        .run(&["create", "-f", &manifest.to_string_lossy()])
        .await;
    assert!(out.ok, "{out:?}");
    assert!(out.stderr.contains("Warning: size is large"), "{out:?}");
    assert!(
        out.stderr.contains(r#"Warning: a "quoted" word"#),
        "{out:?}"
    );
    assert!(out.stdout.contains("configmap/kw created"), "{out:?}");
}
