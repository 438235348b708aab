//! [`WebhookBuilder`]: registers a kind's defaulting, validating and conversion
//! webhooks with the manager's webhook server (controller-runtime's
//! `builder.WebhookManagedBy`).
//!
//! Paths are kubebuilder's: `/mutate-<group with dots as dashes>-<version>-<lowercase
//! kind>` and `/validate-...` (so `apps/v1 Deployment` is `/mutate-apps-v1-deployment`,
//! core `v1 Pod` is `/mutate--v1-pod`), unless a custom path is given; conversion is
//! served at `/convert`. The server is `mgr.webhook_server()` (Go's `GetWebhookServer`)
//! unless [`WebhookBuilder::with_server`] names another.
//!
//! ```no_run
//! # use ctrl_runtime::webhook::admission::{CustomDefaulter, CustomValidator, Request, ValidationError, Warnings};
//! # use k8s_openapi::api::core::v1::ConfigMap;
//! # struct D; struct V;
//! # #[async_trait::async_trait] impl CustomDefaulter<ConfigMap> for D {
//! #   async fn set_defaults(&self, _: &Request, _: &mut ConfigMap) -> Result<(), ValidationError> { Ok(()) } }
//! # #[async_trait::async_trait] impl CustomValidator<ConfigMap> for V {}
//! # fn demo(mgr: ctrl_runtime::manager::Manager) -> Result<(), ctrl_builder::WebhookError> {
//! ctrl_builder::WebhookBuilder::new(&mgr)
//!     .for_::<ConfigMap>()
//!     .with_defaulter(D)
//!     .with_validator(V)
//!     .complete()
//! # }
//! ```

use std::marker::PhantomData;

use ctrl_runtime::manager::Manager;
use ctrl_runtime::webhook::admission::{
    ContextFn, CustomDefaulter, CustomValidator, DefaulterHandler, Extensions, ValidatorHandler,
    Webhook,
};
use ctrl_runtime::webhook::conversion::{self, Convertible, Hub};
use ctrl_runtime::webhook::{self as wh, Server};
use kube::Resource;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Why [`WebhookBuilder::complete`] failed.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// Nothing to register.
    #[error("no defaulter, validator or conversion set for {0}")]
    NothingToRegister(String),
    /// A custom path is not an absolute, clean path.
    #[error("invalid custom path {path:?}: {reason}")]
    InvalidPath {
        /// The path.
        path: String,
        /// Why.
        reason: &'static str,
    },
    /// A custom path was given for a webhook that is not set.
    #[error("custom {0} path set without a {0}")]
    PathWithoutWebhook(&'static str),
    /// The server refused a path (e.g. registered twice).
    #[error(transparent)]
    Server(#[from] wh::Error),
}

type ConvFn = Box<dyn FnOnce(&conversion::Webhook)>;

/// Builds a kind's webhooks; start with [`WebhookBuilder::new`]. `complete` exists
/// only after `for_`, so a builder without a kind does not compile.
pub struct WebhookBuilder<K = ()> {
    mgr: Manager,
    server: Option<Server>,
    defaulter: Option<Webhook>,
    validator: Option<Webhook>,
    defaulter_path: Option<String>,
    validator_path: Option<String>,
    recover_panic: bool,
    context_fn: Option<ContextFn>,
    conversions: Vec<ConvFn>,
    _k: PhantomData<fn() -> K>,
}

/// Options of [`WebhookBuilder::with_defaulter_options`] (Go's `DefaulterOption`s).
#[derive(Clone, Copy, Debug, Default)]
pub struct DefaulterOptions {
    /// Keep `remove` operations in the patch, so fields the Rust type does not model
    /// are removed from the object (Go's `DefaulterRemoveUnknownOrOmitableFields`).
    /// Default false.
    pub remove_unknown_or_omitable_fields: bool,
}

impl<K> std::fmt::Debug for WebhookBuilder<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookBuilder")
            .field("kind", &std::any::type_name::<K>())
            .field("defaulter", &self.defaulter.is_some())
            .field("validator", &self.validator.is_some())
            .field("defaulter_path", &self.defaulter_path)
            .field("validator_path", &self.validator_path)
            .finish_non_exhaustive()
    }
}

impl WebhookBuilder<()> {
    /// A builder for `mgr`'s webhook server (Go's `ctrl.NewWebhookManagedBy(mgr)`).
    pub fn new(mgr: &Manager) -> Self {
        Self {
            mgr: mgr.clone(),
            server: None,
            defaulter: None,
            validator: None,
            defaulter_path: None,
            validator_path: None,
            recover_panic: true,
            context_fn: None,
            conversions: Vec::new(),
            _k: PhantomData,
        }
    }

    /// The kind the webhooks are for (Go's `For(&T{})`).
    pub fn for_<K>(self) -> WebhookBuilder<K>
    where
        K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static,
    {
        WebhookBuilder {
            mgr: self.mgr,
            server: self.server,
            defaulter: None,
            validator: None,
            defaulter_path: None,
            validator_path: None,
            recover_panic: self.recover_panic,
            context_fn: self.context_fn,
            conversions: Vec::new(),
            _k: PhantomData,
        }
    }
}

impl<K> WebhookBuilder<K> {
    /// Registers on `server` instead of the manager's own.
    pub fn with_server(mut self, server: Server) -> Self {
        self.server = Some(server);
        self
    }

    /// Whether handler panics become `500` denials (default true, as Go's `RecoverPanic`).
    pub fn recover_panic(mut self, recover: bool) -> Self {
        self.recover_panic = recover;
        self
    }

    /// Runs `f` on each HTTP request to the defaulter and validator; their handlers
    /// read what it returns with `admission::context::<T>()` (Go's `WithContextFunc`).
    pub fn with_context_fn(
        mut self,
        f: impl Fn(&ctrl_runtime::http::Request) -> Extensions + Send + Sync + 'static,
    ) -> Self {
        self.context_fn = Some(std::sync::Arc::new(f));
        self
    }

    /// Serves the defaulter at `path` instead of `/mutate-...` (Go's `WithDefaulterCustomPath`).
    pub fn with_defaulter_custom_path(mut self, path: impl Into<String>) -> Self {
        self.defaulter_path = Some(path.into());
        self
    }

    /// Serves the validator at `path` instead of `/validate-...` (Go's `WithValidatorCustomPath`).
    pub fn with_validator_custom_path(mut self, path: impl Into<String>) -> Self {
        self.validator_path = Some(path.into());
        self
    }
}

impl<K> WebhookBuilder<K>
where
    K: Resource<DynamicType = ()> + Serialize + DeserializeOwned + Send + Sync + 'static,
{
    /// Defaults `K` objects on create and update (Go's `WithDefaulter`).
    pub fn with_defaulter(self, d: impl CustomDefaulter<K>) -> Self {
        self.with_defaulter_options(d, DefaulterOptions::default())
    }

    /// [`with_defaulter`](Self::with_defaulter) with options (Go's
    /// `WithDefaulter(d, opts...)`).
    pub fn with_defaulter_options(
        mut self,
        d: impl CustomDefaulter<K>,
        opts: DefaulterOptions,
    ) -> Self {
        let handler = DefaulterHandler::<K, _>::new(d)
            .remove_unknown_or_omitable_fields(opts.remove_unknown_or_omitable_fields);
        self.defaulter = Some(Webhook::new(handler));
        self
    }

    /// Validates `K` objects on create, update and delete (Go's `WithValidator`).
    pub fn with_validator(mut self, v: impl CustomValidator<K>) -> Self {
        self.validator = Some(Webhook::new(ValidatorHandler::<K, _>::new(v)));
        self
    }

    /// The defaulting path kubebuilder generates for `K`.
    pub fn mutate_path() -> String {
        format!("/mutate-{}", gvk_path::<K>())
    }

    /// The validating path kubebuilder generates for `K`.
    pub fn validate_path() -> String {
        format!("/validate-{}", gvk_path::<K>())
    }

    /// Registers everything set on the server (Go's `Complete`).
    pub fn complete(self) -> Result<(), WebhookError> {
        let dpath = resolve(
            self.defaulter_path,
            Self::mutate_path,
            self.defaulter.is_some(),
            "defaulter",
        )?;
        let vpath = resolve(
            self.validator_path,
            Self::validate_path,
            self.validator.is_some(),
            "validator",
        )?;
        if self.defaulter.is_none() && self.validator.is_none() && self.conversions.is_empty() {
            return Err(WebhookError::NothingToRegister(
                std::any::type_name::<K>().into(),
            ));
        }
        let server = match self.server {
            Some(s) => s,
            None => self.mgr.webhook_server(),
        };
        let (recover, ctx) = (self.recover_panic, self.context_fn);
        let finish = |w: Webhook| w.recover_panic(recover).with_context_fn_shared(ctx.clone());
        if let (Some(w), Some(p)) = (self.defaulter, dpath) {
            server.register(&p, finish(w))?;
            server.describe(registration::<K>(wh::WebhookType::Mutating, p));
        }
        if let (Some(w), Some(p)) = (self.validator, vpath) {
            server.register(&p, finish(w))?;
            server.describe(registration::<K>(wh::WebhookType::Validating, p));
        }
        if !self.conversions.is_empty() {
            let conv = server.conversion()?;
            for f in self.conversions {
                f(&conv);
            }
        }
        Ok(())
    }
}

impl<K: Hub> WebhookBuilder<K> {
    /// Serves conversion for `K`'s kind with `K` as the hub (Go registers `/convert`
    /// when the `For` type is a hub).
    pub fn with_conversion_hub(mut self) -> Self {
        self.conversions.push(Box::new(|c| {
            c.hub::<K>();
        }));
        self
    }

    /// Adds `S` as a spoke version converting through hub `K`.
    pub fn with_spoke<S: Convertible<K>>(mut self) -> Self {
        self.conversions.push(Box::new(|c| {
            c.spoke::<K, S>();
        }));
        self
    }
}

/// What the webhook at `path` is for: `K`'s kind, called on create and update (the
/// operations of kubebuilder's `+kubebuilder:webhook` marker, `verbs=create;update`).
fn registration<K: Resource<DynamicType = ()>>(
    webhook_type: wh::WebhookType,
    path: String,
) -> wh::Registration {
    wh::Registration {
        webhook_type,
        path,
        group: K::group(&()).into(),
        version: K::version(&()).into(),
        kind: K::kind(&()).into(),
        resource: K::plural(&()).into(),
        operations: vec!["CREATE".into(), "UPDATE".into()],
    }
}

fn gvk_path<K: Resource<DynamicType = ()>>() -> String {
    format!(
        "{}-{}-{}",
        K::group(&()).replace('.', "-"),
        K::version(&()),
        K::kind(&()).to_lowercase()
    )
}

fn resolve(
    custom: Option<String>,
    default: fn() -> String,
    set: bool,
    what: &'static str,
) -> Result<Option<String>, WebhookError> {
    match (custom, set) {
        (Some(_), false) => Err(WebhookError::PathWithoutWebhook(what)),
        (Some(p), true) => validate_path(&p).map(|_| Some(p)),
        (None, true) => Ok(Some(default())),
        (None, false) => Ok(None),
    }
}

/// A custom path must be an absolute, clean URL path with no query or fragment
/// (Go checks it with `url.ParseRequestURI`).
fn validate_path(p: &str) -> Result<(), WebhookError> {
    let bad = |reason| {
        Err(WebhookError::InvalidPath {
            path: p.to_string(),
            reason,
        })
    };
    if !p.starts_with('/') {
        return bad("must start with '/'");
    }
    if p.contains(['?', '#']) {
        return bad("must not have a query or fragment");
    }
    if p.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("must not contain spaces or control characters");
    }
    if ctrl_runtime::http::clean_path(p) != p || p.len() == 1 {
        return bad("must be a clean path below '/'");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::Pod;

    #[test]
    fn paths_are_kubebuilders() {
        assert_eq!(
            WebhookBuilder::<Deployment>::mutate_path(),
            "/mutate-apps-v1-deployment"
        );
        assert_eq!(WebhookBuilder::<Pod>::validate_path(), "/validate--v1-pod");
        assert_eq!(
            WebhookBuilder::<k8s_openapi::api::networking::v1::Ingress>::mutate_path(),
            "/mutate-networking-k8s-io-v1-ingress"
        );
    }

    #[test]
    fn custom_paths_are_validated() {
        for ok in ["/custom", "/a/b-c", "/v1/mutate"] {
            assert!(validate_path(ok).is_ok(), "{ok}");
        }
        for bad in [
            "custom", "/", "/a/../b", "//a", "/a?x=1", "/a#f", "/a b", "",
        ] {
            assert!(
                matches!(validate_path(bad), Err(WebhookError::InvalidPath { .. })),
                "{bad}"
            );
        }
        assert!(matches!(
            resolve(Some("/x".into()), String::new, false, "defaulter"),
            Err(WebhookError::PathWithoutWebhook("defaulter"))
        ));
        assert_eq!(
            resolve(None, || "/d".into(), true, "validator").unwrap(),
            Some("/d".into())
        );
    }
}

#[cfg(test)]
mod manager_tests {
    use super::*;
    use ctrl_runtime::manager::Options;
    use ctrl_runtime::webhook::admission::{CustomValidator, Request, ValidationError};
    use k8s_openapi::api::core::v1::Pod;

    struct V;

    #[async_trait::async_trait]
    impl CustomValidator<Pod> for V {}

    struct D;

    #[async_trait::async_trait]
    impl CustomDefaulter<Pod> for D {
        async fn set_defaults(&self, _: &Request, _: &mut Pod) -> Result<(), ValidationError> {
            Ok(())
        }
    }

    #[tokio::test]
    async fn complete_registers_on_the_managers_server_once() {
        let env = ctrl_envtest::Environment::builder().start().await.unwrap();
        let mgr = Manager::new(
            env.client(),
            Options {
                metrics_bind_address: "0".into(),
                ..Default::default()
            },
        )
        .unwrap();
        WebhookBuilder::new(&mgr)
            .for_::<Pod>()
            .with_defaulter(D)
            .with_validator(V)
            .with_validator_custom_path("/custom-validate")
            .complete()
            .unwrap();
        let server = mgr.webhook_server();
        assert_eq!(
            server.paths(),
            vec![
                "/custom-validate".to_string(),
                "/mutate--v1-pod".to_string()
            ]
        );
        assert_eq!(server.options().port, 9443);
        let again = WebhookBuilder::new(&mgr)
            .for_::<Pod>()
            .with_defaulter(D)
            .complete();
        assert!(matches!(
            again,
            Err(WebhookError::Server(wh::Error::DuplicatePath(_)))
        ));
        let nothing = WebhookBuilder::new(&mgr).for_::<Pod>().complete();
        assert!(matches!(nothing, Err(WebhookError::NothingToRegister(_))));
        // Options and a context function ride along to the registered webhooks.
        WebhookBuilder::new(&mgr)
            .for_::<Pod>()
            .with_defaulter_options(
                D,
                DefaulterOptions {
                    remove_unknown_or_omitable_fields: true,
                },
            )
            .with_defaulter_custom_path("/mutate-with-options")
            .with_context_fn(|_req| Extensions::new())
            .complete()
            .unwrap();
        assert!(server.paths().contains(&"/mutate-with-options".to_string()));
        // Each registration is described for the generated configurations.
        let described: Vec<(wh::WebhookType, String, String)> = server
            .registrations()
            .into_iter()
            .map(|r| (r.webhook_type, r.path, r.resource))
            .collect();
        assert_eq!(
            described,
            [
                (
                    wh::WebhookType::Mutating,
                    "/mutate--v1-pod".into(),
                    "pods".into()
                ),
                (
                    wh::WebhookType::Mutating,
                    "/mutate-with-options".into(),
                    "pods".into()
                ),
                (
                    wh::WebhookType::Validating,
                    "/custom-validate".into(),
                    "pods".into()
                ),
            ]
        );
    }
}
