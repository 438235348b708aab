//! Where a [`CertRotator`](super::CertRotator) puts its CA bundle: the `caBundle` of every
//! webhook of a `MutatingWebhookConfiguration` or `ValidatingWebhookConfiguration`, or of a
//! CRD's conversion webhook (cert-controller's `injectCertToWebhook` and
//! `injectCertToConversionWebhook` in `pkg/rotator/rotator.go`). Each [`Target`] is one object
//! named in the rotator's options; [`ensure`] reads it, sets the bundle where it differs and
//! writes it back with its resourceVersion (a conflict is read again), as upstream's
//! `ensureCerts` does with an unstructured object, so no field this crate does not know is
//! lost.

use base64::Engine;
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};

use crate::rbac::{Rule, rule};

/// Which kind of object a [`Target`] is (cert-controller's `WebhookType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TargetKind {
    /// A `MutatingWebhookConfiguration`: every webhook gets the bundle.
    Mutating,
    /// A `ValidatingWebhookConfiguration`: every webhook gets the bundle.
    Validating,
    /// A `CustomResourceDefinition` whose `spec.conversion.webhook.clientConfig` gets it.
    CrdConversion,
}

/// One object the CA bundle is injected into (cert-controller's `WebhookInfo`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Target {
    /// What it is.
    pub kind: TargetKind,
    /// Its name (the configuration's, or the CRD's `<plural>.<group>`).
    pub name: String,
}

impl Target {
    /// The `MutatingWebhookConfiguration` called `name`.
    pub fn mutating(name: impl Into<String>) -> Self {
        Self {
            kind: TargetKind::Mutating,
            name: name.into(),
        }
    }
    /// The `ValidatingWebhookConfiguration` called `name`.
    pub fn validating(name: impl Into<String>) -> Self {
        Self {
            kind: TargetKind::Validating,
            name: name.into(),
        }
    }
    /// The conversion webhook of the CRD called `name` (`<plural>.<group>`).
    pub fn crd_conversion(name: impl Into<String>) -> Self {
        Self {
            kind: TargetKind::CrdConversion,
            name: name.into(),
        }
    }

    /// The API resource of the target's kind.
    pub(super) fn api_resource(&self) -> ApiResource {
        let (group, kind, plural) = match self.kind {
            TargetKind::Mutating => (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration",
                "mutatingwebhookconfigurations",
            ),
            TargetKind::Validating => (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration",
                "validatingwebhookconfigurations",
            ),
            TargetKind::CrdConversion => (
                "apiextensions.k8s.io",
                "CustomResourceDefinition",
                "customresourcedefinitions",
            ),
        };
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, "v1", kind), plural)
    }

    /// What keeping the bundle in it needs: get, list, watch and update on it by name.
    pub(super) fn rbac_rule(&self) -> Rule {
        let r = self.api_resource();
        rule()
            .groups([r.group])
            .resources([r.plural])
            .resource_names([self.name.clone()])
            .verbs(["get", "list", "watch", "update"])
    }
}

/// What [`ensure`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Outcome {
    /// The object carries the bundle (already, or now).
    Injected,
    /// There is no such object (yet): nothing to do until it is created.
    Missing,
    /// It is being deleted: left alone.
    Deleting,
}

/// How many times a write that conflicts is tried again on a fresh read.
const CONFLICT_RETRIES: usize = 5;

/// Makes `target` carry `bundle` (PEM): reads it, sets `caBundle` where it differs and
/// writes it back, reading again on a conflict.
pub(super) async fn ensure(
    client: &kube::Client,
    target: &Target,
    bundle: &str,
) -> Result<Outcome, kube::Error> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &target.api_resource());
    let encoded = base64::engine::general_purpose::STANDARD.encode(bundle);
    let mut attempt = 0;
    loop {
        let Some(mut obj) = api.get_opt(&target.name).await? else {
            return Ok(Outcome::Missing);
        };
        if obj.metadata.deletion_timestamp.is_some() {
            return Ok(Outcome::Deleting);
        }
        if !inject(&mut obj.data, target.kind, &encoded) {
            return Ok(Outcome::Injected);
        }
        tracing::info!(kind = ?target.kind, name = %target.name, "Injecting the CA bundle");
        match api
            .replace(&target.name, &PostParams::default(), &obj)
            .await
        {
            Ok(_) => return Ok(Outcome::Injected),
            Err(kube::Error::Api(e)) if e.code == 409 && attempt < CONFLICT_RETRIES => attempt += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Sets `caBundle` (base64) where `kind` keeps it in `data` (the object without its
/// metadata); returns whether anything changed. A CRD with no conversion webhook is left
/// alone (upstream fails on it; here the rule is that a stanza generated later is filled
/// in once it exists).
pub(super) fn inject(data: &mut Value, kind: TargetKind, encoded: &str) -> bool {
    let mut changed = false;
    let mut set = |config: &mut Value| {
        if let Some(c) = config.as_object_mut()
            && c.get("caBundle").and_then(Value::as_str) != Some(encoded)
        {
            c.insert("caBundle".into(), json!(encoded));
            changed = true;
        }
    };
    match kind {
        TargetKind::Mutating | TargetKind::Validating => {
            let hooks = data.get_mut("webhooks").and_then(Value::as_array_mut);
            for hook in hooks.into_iter().flatten() {
                if let Some(c) = hook.get_mut("clientConfig") {
                    set(c);
                }
            }
        }
        TargetKind::CrdConversion => {
            if let Some(c) = data.pointer_mut("/spec/conversion/webhook/clientConfig") {
                set(c);
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_webhook_gets_the_bundle_once() {
        let mut cfg = json!({"webhooks": [
            {"name": "a", "clientConfig": {"url": "https://x/a"}},
            {"name": "b", "clientConfig": {"url": "https://x/b", "caBundle": "old"}},
        ]});
        assert!(inject(&mut cfg, TargetKind::Validating, "new"));
        assert_eq!(
            cfg.pointer("/webhooks/0/clientConfig/caBundle"),
            Some(&json!("new"))
        );
        assert_eq!(
            cfg.pointer("/webhooks/1/clientConfig/caBundle"),
            Some(&json!("new"))
        );
        assert!(
            !inject(&mut cfg, TargetKind::Validating, "new"),
            "nothing left to change"
        );
    }

    #[test]
    fn a_crd_gets_it_in_its_conversion_webhook_only_if_it_has_one() {
        let mut crd = json!({"spec": {"conversion": {"strategy": "None"}}});
        assert!(!inject(&mut crd, TargetKind::CrdConversion, "new"));
        let mut crd = json!({"spec": {"conversion": {"strategy": "Webhook",
            "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}}}}});
        assert!(inject(&mut crd, TargetKind::CrdConversion, "new"));
        assert_eq!(
            crd.pointer("/spec/conversion/webhook/clientConfig/caBundle"),
            Some(&json!("new"))
        );
    }
}
