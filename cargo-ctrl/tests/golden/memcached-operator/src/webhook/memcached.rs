//! The `Memcached` webhooks (cache.example.com/v1alpha1), registered on the manager's
//! webhook server by [`setup`] under kubebuilder's paths. Their
//! `MutatingWebhookConfiguration` / `ValidatingWebhookConfiguration` (and the CRD's
//! conversion stanza) are generated from the registration: `cargo ctrl manifests`, and
//! `cargo run` registers them with its in-process API server.

#[allow(unused_imports)]
use ctrl::async_trait;
use ctrl::manager::{BoxError, Manager};
#[allow(unused_imports)]
use ctrl::webhook::admission::{
    CustomDefaulter, CustomValidator, Request, ValidationError, Warnings,
};
use ctrl::WebhookBuilder;
#[allow(unused_imports)]
use ctrl::webhook::admission::field::{FieldError, Path};
#[allow(unused_imports)]
use kube::{Resource, ResourceExt};

use crate::api::v1alpha1::memcached::Memcached;

/// Registers the Memcached webhooks on `mgr`'s webhook server (Go's
/// `ctrl.NewWebhookManagedBy(mgr).For(&Memcached{})...Complete()`).
pub fn setup(mgr: &Manager) -> Result<(), BoxError> {
    WebhookBuilder::new(mgr)
        .for_::<Memcached>()
        .with_defaulter(MemcachedDefaulter)
        .with_validator(MemcachedValidator)
        .complete()?;
    Ok(())
}

/// Fills in what a Memcached leaves unset (kubebuilder's `Default`).
pub struct MemcachedDefaulter;

#[async_trait]
impl CustomDefaulter<Memcached> for MemcachedDefaulter {
    async fn set_defaults(&self, _req: &Request, obj: &mut Memcached) -> Result<(), ValidationError> {
        if obj.spec.size.is_none() {
            obj.spec.size = Some(1);
        }
        Ok(())
    }
}

/// Rejects an invalid Memcached on create and update (kubebuilder's `ValidateCreate` /
/// `ValidateUpdate`).
pub struct MemcachedValidator;

impl MemcachedValidator {
    fn check(obj: &Memcached) -> Result<Warnings, ValidationError> {
        let mut errors = Vec::new();
        if let Some(size) = obj.spec.size.filter(|s| !(1..=3).contains(s)) {
            let path = Path::new("spec").child("size");
            errors.push(FieldError::invalid(&path, size, "must be between 1 and 3"));
        }
        if !errors.is_empty() {
            let (group, name) = (Memcached::group(&()), obj.name_any());
            return Err(ValidationError::invalid_fields(&group, "Memcached", &name, &errors));
        }
        Ok(Vec::new())
    }
}

#[async_trait]
impl CustomValidator<Memcached> for MemcachedValidator {
    async fn validate_create(&self, _req: &Request, obj: &Memcached) -> Result<Warnings, ValidationError> {
        Self::check(obj)
    }

    async fn validate_update(
        &self,
        _req: &Request,
        _old: &Memcached,
        obj: &Memcached,
    ) -> Result<Warnings, ValidationError> {
        Self::check(obj)
    }
}
