//! [`Registration`]: what a webhook served at a path is for — the kind, its group,
//! version and resource, the operations — recorded next to the handler so that the
//! configuration making an API server call it can be generated from the running
//! program (`ctrl::manifests`) instead of written by hand (kubebuilder writes it from
//! `+kubebuilder:webhook` markers, which can drift from the code).
//!
//! `ctrl-builder`'s `WebhookBuilder` records one for each defaulter and validator it
//! registers ([`Server::describe`](super::Server::describe)); conversion webhooks are
//! described by the kinds of the server's [`conversion::Webhook`](super::conversion::Webhook).

/// Which kind of webhook a [`Registration`] is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum WebhookType {
    /// A defaulting (mutating) admission webhook: a `MutatingWebhookConfiguration`.
    Mutating,
    /// A validating admission webhook: a `ValidatingWebhookConfiguration`.
    Validating,
    /// The CRD conversion webhook: the CRD's `spec.conversion`.
    Conversion,
}

/// One webhook a server serves, described as its configuration needs it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Registration {
    /// Which kind of webhook.
    pub webhook_type: WebhookType,
    /// Where it is served (`/mutate-apps-v1-deployment`, `/convert`).
    pub path: String,
    /// The API group of the kind (`""` for the core group).
    pub group: String,
    /// Its version (for conversion, the hub's).
    pub version: String,
    /// The kind (`Deployment`).
    pub kind: String,
    /// Its resource (`deployments`).
    pub resource: String,
    /// The operations the API server calls it for (`CREATE`, `UPDATE`); empty for
    /// conversion.
    pub operations: Vec<String>,
}

impl Registration {
    /// The webhook's name in its configuration, kubebuilder's:
    /// `m<kind>-<version>.kb.io` (mutating) or `v<kind>-<version>.kb.io` (validating).
    pub fn name(&self) -> String {
        let prefix = match self.webhook_type {
            WebhookType::Mutating => "m",
            WebhookType::Validating => "v",
            WebhookType::Conversion => "c",
        };
        format!(
            "{prefix}{}-{}.kb.io",
            self.kind.to_lowercase(),
            self.version
        )
    }
}
