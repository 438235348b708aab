//! Webhook TLS as kube-apiserver verifies it (issue 29): a webhook whose serving certificate
//! is self-signed and given as its own `caBundle` is called (Go's `crypto/x509` takes a leaf
//! found in the root pool as a chain of one, CA flag or not), while what Go refuses is still
//! refused: such a certificate that does not name the host, and a bundle that holds another
//! certificate. Each case denies a ConfigMap through a real ctrl-runtime webhook server under
//! `failurePolicy: Fail`, so a refused handshake shows as a 500 and a call as the webhook's 422 (ctrl-runtime's answer to `ValidationError::invalid`).

use crate::common;

use async_trait::async_trait;
use base64::Engine;
use ctrl_runtime::certwatcher::{DEFAULT_CERT_NAME, DEFAULT_KEY_NAME};
use ctrl_runtime::manager::Runnable;
use ctrl_runtime::webhook::admission::{
    CustomValidator, Request, ValidationError, Warnings, validating_webhook,
};
use ctrl_runtime::webhook::{self, Server, certs};
use k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use serde_json::json;
use tokio_util::sync::CancellationToken;

struct DenyAll;

#[async_trait]
impl CustomValidator<ConfigMap> for DenyAll {
    async fn validate_create(
        &self,
        _: &Request,
        _: &ConfigMap,
    ) -> Result<Warnings, ValidationError> {
        Err(ValidationError::invalid("denied by the webhook"))
    }
    async fn validate_update(
        &self,
        _: &Request,
        _: &ConfigMap,
        _: &ConfigMap,
    ) -> Result<Warnings, ValidationError> {
        Ok(Vec::new())
    }
}

/// A self-signed certificate for `names` (a CA or not): (cert PEM, key PEM).
fn self_signed(names: &[&str], ca: bool) -> (String, String) {
    let mut params =
        CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
    if ca {
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    }
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    (cert.pem(), key.serialize_pem())
}

/// A webhook server serving `cert`; its URL and a stop token.
async fn serve(cert: &(String, String)) -> (String, CancellationToken) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir = certs::temp_cert_dir().unwrap();
    std::fs::write(dir.join(DEFAULT_CERT_NAME), &cert.0).unwrap();
    std::fs::write(dir.join(DEFAULT_KEY_NAME), &cert.1).unwrap();
    let server = Server::new(webhook::Options {
        host: "127.0.0.1".into(),
        port: 0,
        cert_dir: dir,
        ..Default::default()
    });
    server
        .register("/validate", validating_webhook::<ConfigMap, _>(DenyAll))
        .unwrap();
    let addr = server.bind().expect("bind");
    let ctx = CancellationToken::new();
    let (s, c) = (server.clone(), ctx.clone());
    tokio::spawn(async move { s.serve(c).await });
    assert!(Runnable::wait_ready(&server, ctx.clone()).await);
    (format!("https://127.0.0.1:{}/validate", addr.port()), ctx)
}

/// The HTTP code of a ConfigMap create once the webhook at `url` trusts `bundle_pem`.
async fn create_code(url: &str, bundle_pem: &str) -> (u16, String) {
    let env = common::env().await;
    let config: ValidatingWebhookConfiguration = serde_json::from_value(json!({
        "metadata": {"name": "deny"},
        "webhooks": [{
            "name": "deny.cm.ctrl.dev",
            "clientConfig": {"url": url, "caBundle": base64::engine::general_purpose::STANDARD.encode(bundle_pem)},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "sideEffects": "None", "admissionReviewVersions": ["v1"], "failurePolicy": "Fail",
        }],
    }))
    .unwrap();
    Api::<ValidatingWebhookConfiguration>::all(env.client())
        .create(&PostParams::default(), &config)
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    match cms
        .create(&PostParams::default(), &common::cm("x", &[]))
        .await
    {
        Ok(_) => (201, String::new()),
        Err(e) => {
            let s = common::status_of(e);
            (s.code, s.message)
        }
    }
}

#[tokio::test]
async fn a_self_signed_certificate_is_its_own_ca_bundle() {
    for ca in [true, false] {
        let cert = self_signed(&["127.0.0.1", "localhost"], ca);
        let (url, stop) = serve(&cert).await;
        let (code, message) = create_code(&url, &cert.0).await;
        assert_eq!(
            code, 422,
            "CA flag {ca}: the webhook was called and denied: {message}"
        );
        assert!(message.contains("denied by the webhook"), "{message}");
        stop.cancel();
    }
}

#[tokio::test]
async fn what_go_refuses_is_still_refused() {
    // The certificate does not name 127.0.0.1.
    let wrong_host = self_signed(&["localhost"], true);
    let (url, stop) = serve(&wrong_host).await;
    let (code, message) = create_code(&url, &wrong_host.0).await;
    assert_eq!(code, 500, "{message}");
    assert!(message.contains("failed calling webhook"), "{message}");
    stop.cancel();
    // The bundle holds another self-signed certificate.
    let served = self_signed(&["127.0.0.1"], true);
    let other = self_signed(&["127.0.0.1"], true);
    let (url, stop) = serve(&served).await;
    let (code, message) = create_code(&url, &other.0).await;
    assert_eq!(code, 500, "{message}");
    stop.cancel();
}
