//! The webhook server of a local run (feature `webhook`; `no_webhooks.rs` is the stand-in
//! without it): a self-signed certificate, a loopback port, and the webhook configurations
//! and CRD conversion registered with the local API server.

use k8s_openapi::api::admissionregistration::v1::{
    MutatingWebhookConfiguration, ValidatingWebhookConfiguration,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::ResourceExt;
use kube::api::{Api, PostParams};

use crate::manager::{BoxError, Manager, Options};
use crate::manifests::Naming;
use crate::manifests::webhooks::{self, url_client};
use crate::webhook::{self, certs};

/// The webhook server of a local run: `127.0.0.1` on a free port (bound now), a fresh
/// self-signed certificate, and the CA that trusts it. [`LocalWebhooks::install`]
/// registers what the operator's manager serves on it with the local API server.
#[derive(Clone, Debug)]
pub struct LocalWebhooks {
    /// The server (the manager's, through `Options::webhook_server`).
    pub server: webhook::Server,
    /// The CA's PEM, the configurations' `caBundle`.
    pub ca_pem: String,
}

impl LocalWebhooks {
    /// A server on a free loopback port with a self-signed certificate in a temp dir.
    pub fn new(tls: crate::tls::TlsOptions) -> Result<Self, BoxError> {
        let dir = certs::temp_cert_dir()?;
        let generated = certs::generate_self_signed(&dir, &[])?;
        let server = webhook::Server::new(webhook::Options {
            host: "127.0.0.1".into(),
            port: 0,
            cert_dir: dir,
            tls,
            ..Default::default()
        });
        server.bind()?;
        Ok(Self {
            server,
            ca_pem: generated.ca_pem,
        })
    }

    /// `opts` with this server as the manager's webhook server.
    pub fn options(&self, opts: Options) -> Options {
        Options {
            webhook_server: Some(self.server.clone()),
            ..opts
        }
    }

    /// Registers the webhooks `mgr` serves with the API server behind `client`: the
    /// mutating and validating configurations and the CRDs' conversion, generated from
    /// the registrations ([`crate::manifests::webhooks`]) with this server's URL. Does
    /// nothing when `mgr` serves no webhook, or serves them on a server of its own
    /// (whose CA the cli does not know).
    pub async fn install(
        &self,
        client: kube::Client,
        mgr: &Manager,
        name: &str,
    ) -> Result<(), BoxError> {
        let registrations = mgr.webhook_registrations();
        if registrations.is_empty() {
            return Ok(());
        }
        let theirs = mgr.webhook_server().local_addr();
        let Some(ours) = self.server.local_addr().filter(|a| Some(*a) == theirs) else {
            return Ok(());
        };
        let naming = Naming::deployed(name);
        let url = format!("https://{ours}");
        let client_fn = url_client(&url, &self.ca_pem);
        let pp = PostParams::default();
        if let Some(m) = webhooks::mutating(&registrations, &naming, &client_fn) {
            Api::<MutatingWebhookConfiguration>::all(client.clone())
                .create(&pp, &m)
                .await?;
        }
        if let Some(v) = webhooks::validating(&registrations, &naming, &client_fn) {
            Api::<ValidatingWebhookConfiguration>::all(client.clone())
                .create(&pp, &v)
                .await?;
        }
        install_conversion(
            &client,
            &webhooks::conversion_with(&registrations, &client_fn),
        )
        .await?;
        let paths: Vec<&str> = registrations.iter().map(|r| r.path.as_str()).collect();
        tracing::info!(target: "ctrl::cli::webhook", "webhooks at {url} ({}), registered with the API server", paths.join(", "));
        Ok(())
    }
}

/// Sets the conversion stanza of every installed CRD that `conversion` converts.
async fn install_conversion(
    client: &kube::Client,
    conversion: &webhooks::Conversion,
) -> Result<(), BoxError> {
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    for crd in api.list(&Default::default()).await? {
        let converted = conversion.apply(crd.clone());
        if converted.spec.conversion != crd.spec.conversion {
            api.replace(&crd.name_any(), &PostParams::default(), &converted)
                .await?;
        }
    }
    Ok(())
}
