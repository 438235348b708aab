//! The StorageBucket admission webhooks: a defaulting webhook that fills in the
//! probe path a bucket leaves empty, and a validating webhook that rejects an
//! endpoint that is not `http://` or `https://`. [`setup`] registers both with the
//! manager's webhook server through ctrl-builder's `WebhookBuilder` (under
//! kubebuilder's paths). The `MutatingWebhookConfiguration` /
//! `ValidatingWebhookConfiguration` that make an API server call them are generated
//! from what the manager serves (`ctrl::manifests::webhooks`): `ctrl::cli` installs
//! them in the local demo, `--print-manifests` points them at the webhook Service.

use ctrl::WebhookBuilder;
use ctrl::async_trait;
use ctrl::manager::Manager;
use ctrl::webhook::admission::{
    CustomDefaulter, CustomValidator, Request, ValidationError, Warnings,
};

use super::crd::{DEFAULT_PROBE_PATH, StorageBucket};

/// Fills `spec.probePath` with [`DEFAULT_PROBE_PATH`] when it is empty.
pub struct BucketDefaulter;

#[async_trait]
impl CustomDefaulter<StorageBucket> for BucketDefaulter {
    async fn set_defaults(
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
