//! The StorageBucket admission webhooks: a defaulting webhook that fills in the
//! probe path a bucket leaves empty, and a validating webhook that rejects an
//! endpoint that is not `http://` or `https://`. [`setup`] registers both with the
//! manager's webhook server through ctrl-builder's `WebhookBuilder` (under
//! kubebuilder's paths); [`configurations`] builds the
//! `MutatingWebhookConfiguration` / `ValidatingWebhookConfiguration` that make the
//! API server call them (the demo, [`super::demo`], installs them in ctrl-envtest;
//! a cluster would point them at a Service instead of a URL).

use ctrl::WebhookBuilder;
use ctrl::async_trait;
use ctrl::manager::Manager;
use ctrl::webhook::admission::{
    CustomDefaulter, CustomValidator, Request, ValidationError, Warnings,
};
use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ValidatingWebhook,
    ValidatingWebhookConfiguration, WebhookClientConfig,
};
use kube::api::ObjectMeta;

use super::crd::{DEFAULT_PROBE_PATH, StorageBucket};

/// The name of both webhook configurations.
pub const CONFIGURATION_NAME: &str = "storagebucket-webhooks";

/// Fills `spec.probePath` with [`DEFAULT_PROBE_PATH`] when it is empty.
pub struct BucketDefaulter;

#[async_trait]
impl CustomDefaulter<StorageBucket> for BucketDefaulter {
    async fn default(
        &self,
        _req: &Request,
        bucket: &mut StorageBucket,
    ) -> Result<(), ValidationError> {
        if bucket.spec.probe_path.as_deref().is_none_or(str::is_empty) {
            bucket.spec.probe_path = Some(DEFAULT_PROBE_PATH.to_string());
        }
        Ok(())
    }
}

/// Rejects a bucket whose endpoint is not an `http://` or `https://` URL.
pub struct BucketValidator;

impl BucketValidator {
    fn check(bucket: &StorageBucket) -> Result<Warnings, ValidationError> {
        let endpoint = bucket.spec.endpoint.as_str();
        let scheme = endpoint
            .split_once("://")
            .map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("http" | "https") => Ok(Vec::new()),
            _ => Err(ValidationError::invalid(format!(
                "spec.endpoint: Invalid value: {endpoint:?}: must be an http:// or https:// URL"
            ))),
        }
    }
}

#[async_trait]
impl CustomValidator<StorageBucket> for BucketValidator {
    async fn validate_create(
        &self,
        _req: &Request,
        bucket: &StorageBucket,
    ) -> Result<Warnings, ValidationError> {
        Self::check(bucket)
    }

    async fn validate_update(
        &self,
        _req: &Request,
        _old: &StorageBucket,
        bucket: &StorageBucket,
    ) -> Result<Warnings, ValidationError> {
        Self::check(bucket)
    }
}

/// Registers the defaulting and validating webhooks on `mgr`'s webhook server.
pub fn setup(mgr: &Manager) -> Result<(), ctrl::builder::WebhookError> {
    WebhookBuilder::new(mgr)
        .for_::<StorageBucket>()
        .with_defaulter(BucketDefaulter)
        .with_validator(BucketValidator)
        .complete()
}

/// The webhook paths, as kubebuilder names them: (mutating, validating).
pub fn paths() -> (String, String) {
    (
        WebhookBuilder::<StorageBucket>::mutate_path(),
        WebhookBuilder::<StorageBucket>::validate_path(),
    )
}

fn rules() -> Vec<RuleWithOperations> {
    vec![RuleWithOperations {
        api_groups: Some(vec!["storage.example.com".into()]),
        api_versions: Some(vec!["v1".into()]),
        operations: Some(vec!["CREATE".into(), "UPDATE".into()]),
        resources: Some(vec!["storagebuckets".into()]),
        scope: Some("Namespaced".into()),
    }]
}

fn client_config(base_url: &str, path: &str, ca_pem: &str) -> WebhookClientConfig {
    WebhookClientConfig {
        url: Some(format!("{}{path}", base_url.trim_end_matches('/'))),
        ca_bundle: Some(ByteString(ca_pem.as_bytes().to_vec())),
        service: None,
    }
}

/// The configurations that make an API server call the webhooks served at
/// `base_url` (`https://host:port`) with a certificate signed by `ca_pem`.
pub fn configurations(
    base_url: &str,
    ca_pem: &str,
) -> (MutatingWebhookConfiguration, ValidatingWebhookConfiguration) {
    let (mutate, validate) = paths();
    let meta = || ObjectMeta {
        name: Some(CONFIGURATION_NAME.into()),
        ..Default::default()
    };
    let mutating = MutatingWebhookConfiguration {
        metadata: meta(),
        webhooks: Some(vec![MutatingWebhook {
            name: "mstoragebucket.storage.example.com".into(),
            admission_review_versions: vec!["v1".into()],
            client_config: client_config(base_url, &mutate, ca_pem),
            rules: Some(rules()),
            side_effects: "None".into(),
            failure_policy: Some("Fail".into()),
            ..Default::default()
        }]),
    };
    let validating = ValidatingWebhookConfiguration {
        metadata: meta(),
        webhooks: Some(vec![ValidatingWebhook {
            name: "vstoragebucket.storage.example.com".into(),
            admission_review_versions: vec!["v1".into()],
            client_config: client_config(base_url, &validate, ca_pem),
            rules: Some(rules()),
            side_effects: "None".into(),
            failure_policy: Some("Fail".into()),
            ..Default::default()
        }]),
    };
    (mutating, validating)
}
