//! Manifests from the running code: everything a cluster needs to run an operator —
//! what kubebuilder's `config/` holds — generated from the manager the operator builds
//! instead of written by hand or from markers that drift.
//!
//! [`Manifests::new`] asks a built (never started) manager what it watches and serves:
//! the RBAC rules ([`Manager::rbac_rules`]), the webhooks registered by `WebhookBuilder`
//! (`Manager::webhook_registrations`, feature `webhook`: `MutatingWebhookConfiguration`,
//! `ValidatingWebhookConfiguration`, the CRDs' conversion stanza, `webhooks`), and
//! takes the operator's CRDs and flags ([`Args`]: the ports and certificate flags of the
//! manager `Deployment` and its metrics and webhook `Service`s, [`deployment`]). It
//! renders them two ways:
//!
//! - [`Manifests::yaml`]: one YAML stream with the final names (`<name>-system`,
//!   `<name>-controller-manager`, ...), for `kubectl apply -f -` (`--print-manifests`);
//! - [`Manifests::files`]: kubebuilder's kustomize layout ([`kustomize`]):
//!   `config/default` (namespace `<name>-system`, name prefix `<name>-`) over the bases
//!   `config/crd`, `config/rbac`, `config/manager`, `config/webhook`.
//!
//! Webhook certificates (`certs`): the operator's own cert rotator by default (its
//! Secret shipped empty, its RBAC in the rules), or the cert-manager overlay that
//! `config/default` enables by uncommenting.
//!
//! `ctrl::cli` prints them (`--print-manifests`); `cargo ctrl manifests` writes the files.

#[cfg(feature = "webhook")]
pub mod certs;
pub mod deployment;
pub mod kustomize;
#[cfg(feature = "webhook")]
pub mod webhooks;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use crate::manager::{Args, Manager};
use crate::rbac::{Manifest, Rules};
#[cfg(feature = "webhook")]
use crate::webhook::Registration;

/// How objects are named: the final names of a deployment, or the unprefixed names of
/// a kustomize base that `config/default` prefixes and puts in its namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Naming {
    /// The operator's name (labels, `app.kubernetes.io/name`).
    pub name: String,
    /// Put before every object's name (`<name>-`, or empty in a base).
    pub prefix: String,
    /// The namespace of the namespaced objects (`<name>-system`, or `system` in a base).
    pub namespace: String,
}

impl Naming {
    /// The final names of operator `name`: prefix `<name>-`, namespace `<name>-system`.
    pub fn deployed(name: &str) -> Self {
        Self {
            name: name.into(),
            prefix: format!("{name}-"),
            namespace: format!("{name}-system"),
        }
    }

    /// The names of a kustomize base for operator `name`: no prefix, namespace `system`.
    pub fn base(name: &str) -> Self {
        Self {
            name: name.into(),
            prefix: String::new(),
            namespace: "system".into(),
        }
    }

    /// `suffix` with the prefix (`<name>-controller-manager`).
    pub fn named(&self, suffix: &str) -> String {
        format!("{}{suffix}", self.prefix)
    }

    /// The RBAC objects' naming ([`crate::rbac::Manifest`]) for the same names.
    pub fn rbac(&self) -> Manifest {
        Manifest {
            name: self.prefix.trim_end_matches('-').to_string(),
            namespace: self.namespace.clone(),
            service_account: self.named("controller-manager"),
            labels: deployment::labels(&self.name, false),
        }
    }
}

/// What an operator needs in a cluster, as its manager says (see the module doc).
#[derive(Clone, Debug)]
pub struct Manifests {
    /// The operator's name.
    pub name: String,
    /// Its CRDs, as its types derive them.
    pub crds: Vec<CustomResourceDefinition>,
    /// The RBAC rules of its manager.
    pub rules: Rules,
    /// The webhooks its manager's webhook server serves (feature `webhook`).
    #[cfg(feature = "webhook")]
    pub webhooks: Vec<Registration>,
    /// The manager flags the Deployment runs it with (ports, certificates, metrics).
    pub args: Args,
    /// The manager container's environment (`Operator::env`): name, value.
    pub env: Vec<(String, String)>,
}

impl Manifests {
    /// The manifests of operator `name`, whose manager `mgr` is built as deployed
    /// (controllers and webhooks set up), with `crds` and the flags `args`.
    pub fn new(
        name: &str,
        mgr: &Manager,
        args: &Args,
        crds: Vec<CustomResourceDefinition>,
    ) -> Self {
        // The operator runs its cert rotator in the cluster (`ctrl::cli` adds it).
        #[cfg(feature = "webhook")]
        certs::add_rotator_rules(name, mgr, args);
        Self {
            name: name.into(),
            crds,
            rules: mgr.rbac_rules(),
            #[cfg(feature = "webhook")]
            webhooks: mgr.webhook_registrations(),
            args: args.clone(),
            env: Vec::new(),
        }
    }

    /// Whether the manager serves webhooks (never without the `webhook` feature): the
    /// Deployment's webhook port and certificate volume, the webhook Service and
    /// configurations, the certificate Secret.
    pub fn serves_webhooks(&self) -> bool {
        #[cfg(feature = "webhook")]
        return !self.webhooks.is_empty();
        #[cfg(not(feature = "webhook"))]
        false
    }

    /// These manifests with `env` set on the manager container.
    pub fn with_env(mut self, env: Vec<(String, String)>) -> Self {
        self.env = env;
        self
    }

    /// The manager Deployment, with [`Manifests::env`].
    pub fn deployment(&self, naming: &Naming) -> k8s_openapi::api::apps::v1::Deployment {
        let mut d = deployment::deployment(naming, &self.args, self.serves_webhooks());
        deployment::set_env(&mut d, &self.env);
        d
    }

    /// The CRDs, each with its conversion stanza when a conversion webhook serves it.
    #[cfg(feature = "webhook")]
    pub fn crds(&self, naming: &Naming) -> Vec<CustomResourceDefinition> {
        let conversion = webhooks::conversion(&self.webhooks, naming);
        self.crds
            .iter()
            .cloned()
            .map(|crd| conversion.apply(crd))
            .collect()
    }

    /// The CRDs, as the operator's types derive them (no conversion webhook serves them
    /// without the `webhook` feature).
    #[cfg(not(feature = "webhook"))]
    pub fn crds(&self, _naming: &Naming) -> Vec<CustomResourceDefinition> {
        self.crds.clone()
    }

    /// Every object with `naming`, in `kubectl apply` order: the Namespace, CRDs, RBAC,
    /// Services, the certificate Secret, the Deployment, the webhook configurations.
    pub fn objects(&self, naming: &Naming) -> Result<Vec<Value>, serde_json::Error> {
        let mut out = vec![serde_json::to_value(deployment::namespace(naming))?];
        for crd in self.crds(naming) {
            out.push(serde_json::to_value(crd)?);
        }
        for o in naming.rbac().objects(&self.rules) {
            out.push(serde_json::to_value(o)?);
        }
        for s in deployment::services(naming, &self.args, self.serves_webhooks()) {
            out.push(serde_json::to_value(s)?);
        }
        #[cfg(feature = "webhook")]
        if self.serves_webhooks() {
            out.push(serde_json::to_value(certs::secret(naming))?);
        }
        out.push(serde_json::to_value(self.deployment(naming))?);
        #[cfg(feature = "webhook")]
        for c in webhooks::configurations(&self.webhooks, naming, &webhooks::service_client(naming))
        {
            out.push(c?);
        }
        Ok(out)
    }

    /// [`Manifests::objects`] with the final names as one YAML stream: what
    /// `--print-manifests` prints, for `kubectl apply -f -`.
    pub fn yaml(&self) -> Result<String, crate::manager::BoxError> {
        let objects = self.objects(&Naming::deployed(&self.name))?;
        let header = format!(
            "# Everything the {} operator needs in a cluster, generated from its code by\n\
             # `{} --print-manifests` (CRDs, RBAC, webhook configurations, the manager).\n",
            self.name, self.name
        );
        Ok(header + &crate::cli::print::yaml_stream(&objects)?)
    }

    /// kubebuilder's kustomize layout: `(path under the project, contents)` of every
    /// file of `config/` ([`kustomize::files`]).
    pub fn files(&self) -> Result<Vec<(String, String)>, crate::manager::BoxError> {
        kustomize::files(self)
    }
}
