//! The configurations that make an API server call an operator's webhooks, generated
//! from what its webhook server serves ([`Registration`]s): one
//! `MutatingWebhookConfiguration` for the defaulters and one
//! `ValidatingWebhookConfiguration` for the validators (kubebuilder's
//! `config/webhook/manifests.yaml`, which controller-gen writes from markers), and the
//! CRD conversion stanza for the kinds the conversion webhook converts (kubebuilder's
//! `config/crd/patches/webhook_in_<plural>.yaml`).
//!
//! The client configuration is a parameter: the webhook Service in a cluster
//! ([`service_client`]), a URL and CA bundle for a local API server ([`url_client`]).

use k8s_openapi::ByteString;
use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhook, MutatingWebhookConfiguration, RuleWithOperations, ServiceReference,
    ValidatingWebhook, ValidatingWebhookConfiguration, WebhookClientConfig,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    self as apiext, CustomResourceConversion, CustomResourceDefinition, WebhookConversion,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::Value;

use super::Naming;
use crate::webhook::{Registration, WebhookType};

/// How the API server reaches the webhook at a path.
pub type ClientFn = dyn Fn(&str) -> WebhookClientConfig;

/// The webhook Service of `naming` (`<prefix>webhook-service`, port 443), at a path.
pub fn service_client(naming: &Naming) -> impl Fn(&str) -> WebhookClientConfig + use<> {
    let (name, namespace) = (naming.named("webhook-service"), naming.namespace.clone());
    move |path| WebhookClientConfig {
        service: Some(ServiceReference {
            name: name.clone(),
            namespace: namespace.clone(),
            path: Some(path.into()),
            port: None,
        }),
        ..Default::default()
    }
}

/// `base_url` (`https://127.0.0.1:9443`) at a path, trusted through `ca_pem`.
pub fn url_client(base_url: &str, ca_pem: &str) -> impl Fn(&str) -> WebhookClientConfig + use<> {
    let (base, ca) = (
        base_url.trim_end_matches('/').to_string(),
        ca_pem.to_string(),
    );
    move |path| WebhookClientConfig {
        url: Some(format!("{base}{path}")),
        ca_bundle: Some(ByteString(ca.as_bytes().to_vec())),
        service: None,
    }
}

fn rules(r: &Registration) -> Option<Vec<RuleWithOperations>> {
    Some(vec![RuleWithOperations {
        api_groups: Some(vec![r.group.clone()]),
        api_versions: Some(vec![r.version.clone()]),
        operations: Some(r.operations.clone()),
        resources: Some(vec![r.resource.clone()]),
        scope: None,
    }])
}

fn meta(naming: &Naming, suffix: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(naming.named(suffix)),
        ..Default::default()
    }
}

fn of(registrations: &[Registration], t: WebhookType) -> impl Iterator<Item = &Registration> {
    registrations.iter().filter(move |r| r.webhook_type == t)
}

/// The configuration `$config` of the `$t` webhooks in `registrations` (`None` if there
/// is none), each a `$hook`: failure policy `Fail`, side effects `None`, AdmissionReview
/// `v1`. (The two configurations' types differ only in name.)
macro_rules! configuration {
    ($config:ident, $hook:ident, $t:expr, $suffix:expr, $registrations:expr, $naming:expr, $client:expr) => {{
        let webhooks: Vec<$hook> = of($registrations, $t)
            .map(|r| $hook {
                name: r.name(),
                admission_review_versions: vec!["v1".into()],
                client_config: $client(&r.path),
                rules: rules(r),
                side_effects: "None".into(),
                failure_policy: Some("Fail".into()),
                ..Default::default()
            })
            .collect();
        (!webhooks.is_empty()).then(|| $config {
            metadata: meta($naming, $suffix),
            webhooks: Some(webhooks),
        })
    }};
}

/// The mutating configuration of the defaulters in `registrations` (`None` if there is
/// none).
pub fn mutating(
    registrations: &[Registration],
    naming: &Naming,
    client: &ClientFn,
) -> Option<MutatingWebhookConfiguration> {
    configuration!(
        MutatingWebhookConfiguration,
        MutatingWebhook,
        WebhookType::Mutating,
        "mutating-webhook-configuration",
        registrations,
        naming,
        client
    )
}

/// The validating configuration of the validators in `registrations` (`None` if there
/// is none).
pub fn validating(
    registrations: &[Registration],
    naming: &Naming,
    client: &ClientFn,
) -> Option<ValidatingWebhookConfiguration> {
    configuration!(
        ValidatingWebhookConfiguration,
        ValidatingWebhook,
        WebhookType::Validating,
        "validating-webhook-configuration",
        registrations,
        naming,
        client
    )
}

/// Both configurations (those that have webhooks), as JSON objects.
pub fn configurations(
    registrations: &[Registration],
    naming: &Naming,
    client: &ClientFn,
) -> Vec<Result<Value, serde_json::Error>> {
    let m = mutating(registrations, naming, client).map(serde_json::to_value);
    let v = validating(registrations, naming, client).map(serde_json::to_value);
    m.into_iter().chain(v).collect()
}

/// The conversion stanza for the CRDs the conversion webhook serves.
#[derive(Clone, Debug, Default)]
pub struct Conversion {
    /// `(group, kind)` of each converted kind, and the client config of `/convert`.
    kinds: Vec<(String, String, WebhookClientConfig)>,
}

/// The [`Conversion`] of the conversion registrations, through the webhook Service of
/// `naming`.
pub fn conversion(registrations: &[Registration], naming: &Naming) -> Conversion {
    conversion_with(registrations, &service_client(naming))
}

/// The [`Conversion`] of the conversion registrations, reached through `client`.
pub fn conversion_with(registrations: &[Registration], client: &ClientFn) -> Conversion {
    Conversion {
        kinds: of(registrations, WebhookType::Conversion)
            .map(|r| (r.group.clone(), r.kind.clone(), client(&r.path)))
            .collect(),
    }
}

impl Conversion {
    /// `crd` with `spec.conversion` set to strategy `Webhook` (ConversionReview `v1`)
    /// if its kind is converted; unchanged otherwise.
    pub fn apply(&self, mut crd: CustomResourceDefinition) -> CustomResourceDefinition {
        let found = self
            .kinds
            .iter()
            .find(|(g, k, _)| *g == crd.spec.group && *k == crd.spec.names.kind);
        if let Some((_, _, cc)) = found {
            crd.spec.conversion = Some(CustomResourceConversion {
                strategy: "Webhook".into(),
                webhook: Some(WebhookConversion {
                    client_config: Some(to_crd_client(cc)),
                    conversion_review_versions: vec!["v1".into()],
                }),
            });
        }
        crd
    }
}

/// The CRD API's own copy of a webhook client config.
fn to_crd_client(cc: &WebhookClientConfig) -> apiext::WebhookClientConfig {
    apiext::WebhookClientConfig {
        url: cc.url.clone(),
        ca_bundle: cc.ca_bundle.clone(),
        service: cc.service.as_ref().map(|s| apiext::ServiceReference {
            name: s.name.clone(),
            namespace: s.namespace.clone(),
            path: s.path.clone(),
            port: s.port,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registration(webhook_type: WebhookType, path: &str) -> Registration {
        Registration {
            webhook_type,
            path: path.into(),
            group: "cache.example.com".into(),
            version: "v1".into(),
            kind: "Memcached".into(),
            resource: "memcacheds".into(),
            operations: vec!["CREATE".into(), "UPDATE".into()],
        }
    }

    fn crd(group: &str, kind: &str) -> CustomResourceDefinition {
        let mut crd = CustomResourceDefinition::default();
        crd.spec.group = group.into();
        crd.spec.names.kind = kind.into();
        crd
    }

    #[test]
    fn conversion_sets_the_stanza_of_converted_kinds_only() {
        let regs = [registration(WebhookType::Conversion, "/convert")];
        let conv = conversion(&regs, &Naming::deployed("op"));
        let converted = conv.apply(crd("cache.example.com", "Memcached"));
        let c = converted.spec.conversion.expect("conversion");
        assert_eq!(c.strategy, "Webhook");
        let w = c.webhook.expect("webhook");
        assert_eq!(w.conversion_review_versions, ["v1"]);
        let svc = w.client_config.and_then(|c| c.service).expect("service");
        assert_eq!(
            (
                svc.name.as_str(),
                svc.namespace.as_str(),
                svc.path.as_deref()
            ),
            ("op-webhook-service", "op-system", Some("/convert"))
        );
        let other = conv.apply(crd("cache.example.com", "Other"));
        assert!(other.spec.conversion.is_none());
    }

    #[test]
    fn each_configuration_holds_its_type_of_webhook() {
        let regs = [
            registration(
                WebhookType::Mutating,
                "/mutate-cache-example-com-v1-memcached",
            ),
            registration(
                WebhookType::Validating,
                "/validate-cache-example-com-v1-memcached",
            ),
            registration(WebhookType::Conversion, "/convert"),
        ];
        let naming = Naming::base("op");
        let client = url_client("https://127.0.0.1:9443/", "CA");
        let m = mutating(&regs, &naming, &client).expect("mutating");
        assert_eq!(
            m.metadata.name.as_deref(),
            Some("mutating-webhook-configuration")
        );
        let hooks = m.webhooks.expect("webhooks");
        assert_eq!(hooks.len(), 1);
        assert_eq!(hooks[0].name, "mmemcached-v1.kb.io");
        assert_eq!(
            hooks[0].client_config.url.as_deref(),
            Some("https://127.0.0.1:9443/mutate-cache-example-com-v1-memcached")
        );
        let v = validating(&regs, &naming, &client).expect("validating");
        assert_eq!(v.webhooks.expect("webhooks")[0].name, "vmemcached-v1.kb.io");
        assert!(mutating(&regs[1..], &naming, &client).is_none());
    }
}
