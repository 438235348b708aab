//! Command-line flags for a manager with kubebuilder's names ([`Args`], to
//! `#[command(flatten)]` into your own `clap` parser) and the client configuration
//! lookup controller-runtime's `config.GetConfig` does ([`load_config`]).

use std::path::{Path, PathBuf};

use kube::config::{KubeConfigOptions, Kubeconfig, KubeconfigError};

use super::Options;
use crate::certwatcher::{DEFAULT_CERT_NAME, DEFAULT_KEY_NAME};
use crate::metricsserver::{self as metrics_server, filters};
use crate::tls::TlsOptions;
#[cfg(feature = "webhook")]
use crate::webhook;

/// The default of `--webhook-port`: the webhook server's default port
/// (`webhook::DEFAULT_PORT`, which the unit test below keeps it equal to), here so that the
/// flag exists, as in every kubebuilder `main`, when the `webhook` feature is off.
const WEBHOOK_PORT: u16 = 9443;

/// The flags kubebuilder scaffolds into an operator's `main`.
///
/// ```
/// use clap::Parser;
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(flatten)]
///     manager: ctrl_runtime::manager::Args,
///     /// An operator flag of your own.
///     #[arg(long, default_value_t = 2)]
///     workers: usize,
/// }
///
/// let cli = Cli::parse_from(["op", "--leader-elect", "--metrics-bind-address", ":9090"]);
/// let opts = cli.manager.options();
/// assert!(opts.leader_election);
/// assert_eq!(opts.metrics_bind_address, ":9090");
/// // kubebuilder v4's default: HTTPS behind TokenReview + SubjectAccessReview.
/// assert!(opts.metrics.secure_serving && opts.metrics.filter_provider.is_some());
/// let plain = Cli::parse_from(["op", "--metrics-secure=false"]).manager.options();
/// assert!(!plain.metrics.secure_serving && plain.metrics.filter_provider.is_none());
/// // The webhook server of kubebuilder's `--webhook-cert-path` flags.
/// let hooks = Cli::parse_from(["op", "--webhook-cert-path", "/certs", "--webhook-port", "9444"]);
/// let server = hooks.manager.options().webhook_server.expect("a webhook server");
/// assert_eq!(server.options().cert_dir, std::path::Path::new("/certs"));
/// assert_eq!(server.options().port, 9444);
/// ```
// `about = None`: this doc comment must not become the `--help` text of a program
// that has no doc comment of its own; the group id keeps it apart from other structs
// named `Args` (`crate::log::Args`).
#[derive(clap::Args, Clone, Debug, PartialEq, Eq)]
#[command(about = None, long_about = None)]
#[group(id = "manager-flags")]
pub struct Args {
    /// The address the metrics endpoint binds to. Use "0" to disable the metrics service.
    #[arg(
        long = "metrics-bind-address",
        value_name = "ADDR",
        default_value = ":8080"
    )]
    pub metrics_bind_address: String,
    /// The address the probe endpoint binds to. Empty or "0" disables it.
    #[arg(
        long = "health-probe-bind-address",
        value_name = "ADDR",
        default_value = ":8081"
    )]
    pub health_probe_bind_address: String,
    /// Enable leader election for controller manager. Enabling this will ensure there
    /// is only one active controller manager. Needs the Lease's name, which the
    /// program sets in code (`Options::leader_election_id`).
    #[arg(
        long = "leader-elect",
        value_name = "BOOL",
        num_args = 0..=1,
        default_value_t = false,
        default_missing_value = "true",
        action = clap::ArgAction::Set
    )]
    pub leader_elect: bool,
    /// The address the pprof endpoints bind to (`/debug/pprof/`). Empty or "0"
    /// disables them.
    #[arg(long = "pprof-bind-address", value_name = "ADDR", default_value = "")]
    pub pprof_bind_address: String,
    /// Path to a kubeconfig. Only required if out-of-cluster.
    #[arg(long, value_name = "PATH")]
    pub kubeconfig: Option<PathBuf>,
    /// If set, the metrics endpoint is served securely via HTTPS, and only to clients
    /// whose bearer token may `get` its path (TokenReview + SubjectAccessReview). Use
    /// --metrics-secure=false to use HTTP instead.
    #[arg(
        long = "metrics-secure",
        value_name = "BOOL",
        num_args = 0..=1,
        default_value_t = true,
        default_missing_value = "true",
        action = clap::ArgAction::Set
    )]
    pub metrics_secure: bool,
    /// The directory that contains the metrics server certificate (else a
    /// self-signed one is served).
    #[arg(long = "metrics-cert-path", value_name = "DIR")]
    pub metrics_cert_path: Option<PathBuf>,
    /// The name of the metrics server certificate file.
    #[arg(
        long = "metrics-cert-name",
        value_name = "NAME",
        default_value = "tls.crt"
    )]
    pub metrics_cert_name: String,
    /// The name of the metrics server key file.
    #[arg(
        long = "metrics-cert-key",
        value_name = "NAME",
        default_value = "tls.key"
    )]
    pub metrics_cert_key: String,
    /// If set, HTTP/2 will be enabled for the metrics and webhook servers (off by
    /// default: the HTTP/2 stream-cancellation and rapid-reset CVEs). Needs ctrl's `http2`
    /// feature: without it `true` is refused when the flags are parsed.
    #[arg(
        long = "enable-http2",
        value_name = "BOOL",
        num_args = 0..=1,
        default_value_t = false,
        default_missing_value = "true",
        action = clap::ArgAction::Set,
        value_parser = parse_enable_http2
    )]
    pub enable_http2: bool,
    /// The directory that contains the webhook certificate (else the webhook server's
    /// default, `<tmp>/k8s-webhook-server/serving-certs`). The webhook flags configure the
    /// webhook server (feature `webhook`) and the manifests' Deployment; without the feature
    /// they are accepted and configure nothing.
    #[arg(long = "webhook-cert-path", value_name = "DIR")]
    pub webhook_cert_path: Option<PathBuf>,
    /// The name of the webhook certificate file.
    #[arg(
        long = "webhook-cert-name",
        value_name = "NAME",
        default_value = "tls.crt"
    )]
    pub webhook_cert_name: String,
    /// The name of the webhook key file.
    #[arg(
        long = "webhook-cert-key",
        value_name = "NAME",
        default_value = "tls.key"
    )]
    pub webhook_cert_key: String,
    /// The port the webhook server listens on.
    #[arg(long = "webhook-port", value_name = "PORT", default_value_t = WEBHOOK_PORT)]
    pub webhook_port: u16,
}

impl Default for Args {
    fn default() -> Self {
        Self {
            metrics_bind_address: ":8080".into(),
            health_probe_bind_address: ":8081".into(),
            leader_elect: false,
            pprof_bind_address: String::new(),
            kubeconfig: None,
            metrics_secure: true,
            metrics_cert_path: None,
            metrics_cert_name: DEFAULT_CERT_NAME.into(),
            metrics_cert_key: DEFAULT_KEY_NAME.into(),
            enable_http2: false,
            webhook_cert_path: None,
            webhook_cert_name: DEFAULT_CERT_NAME.into(),
            webhook_cert_key: DEFAULT_KEY_NAME.into(),
            webhook_port: WEBHOOK_PORT,
        }
    }
}

impl Args {
    /// Manager options with these flags applied over the defaults.
    pub fn options(&self) -> Options {
        self.apply(Options::default())
    }

    /// `opts` with these flags applied.
    pub fn apply(&self, mut opts: Options) -> Options {
        opts.metrics_bind_address = self.metrics_bind_address.clone();
        opts.health_probe_bind_address = self.health_probe_bind_address.clone();
        opts.leader_election = self.leader_elect;
        opts.pprof_bind_address = self.pprof_bind_address.clone();
        self.apply_metrics(&mut opts.metrics);
        #[cfg(feature = "webhook")]
        {
            opts.webhook_server = Some(webhook::Server::new(self.webhook_options()));
        }
        opts
    }

    /// The webhook server's options as kubebuilder's `main` sets them: the port, the
    /// certificate from `--webhook-cert-path` (watched for changes), the TLS options.
    #[cfg(feature = "webhook")]
    pub fn webhook_options(&self) -> webhook::Options {
        let mut o = webhook::Options {
            port: self.webhook_port,
            tls: self.tls_options(),
            ..Default::default()
        };
        if let Some(dir) = self
            .webhook_cert_path
            .as_ref()
            .filter(|d| !d.as_os_str().is_empty())
        {
            o.cert_dir = dir.clone();
            o.cert_name = self.webhook_cert_name.clone();
            o.key_name = self.webhook_cert_key.clone();
        }
        o
    }

    /// The metrics server's options as kubebuilder's `main` sets them: secure
    /// serving with the authentication and authorization filter when
    /// `--metrics-secure`, the certificate from `--metrics-cert-path`, HTTP/2 only
    /// with `--enable-http2`.
    fn apply_metrics(&self, m: &mut metrics_server::Options) {
        m.secure_serving = self.metrics_secure;
        if self.metrics_secure {
            m.filter_provider = Some(filters::with_authentication_and_authorization());
        }
        if let Some(dir) = self
            .metrics_cert_path
            .as_ref()
            .filter(|d| !d.as_os_str().is_empty())
        {
            m.cert_dir = dir.clone();
            m.cert_name = self.metrics_cert_name.clone();
            m.key_name = self.metrics_cert_key.clone();
        }
        m.tls = self.tls_options();
    }

    /// The TLS options the flags ask for (kubebuilder's `tlsOpts`): hand them to the
    /// webhook server too, `webhook::Options { tls: args.tls_options(), .. }`.
    pub fn tls_options(&self) -> TlsOptions {
        TlsOptions {
            enable_http2: self.enable_http2,
            ..TlsOptions::default()
        }
    }

    /// The client configuration: see [`load_config`].
    pub async fn config(&self) -> Result<kube::Config, ConfigError> {
        load_config(self.kubeconfig.as_deref()).await
    }

    /// A client from [`Args::config`], its requests counted in
    /// `rest_client_requests_total` ([`crate::metrics::client`]).
    pub async fn client(&self) -> Result<kube::Client, ConfigError> {
        crate::metrics::client::new_client(self.config().await?, false).map_err(ConfigError::Client)
    }
}

/// `--enable-http2`'s value: `true` or `false`, and `true` only in a build with HTTP/2
/// (the `http2` feature; else [`crate::tls::HTTP2_NEEDS_FEATURE`]).
fn parse_enable_http2(value: &str) -> Result<bool, String> {
    match value {
        "true" if cfg!(feature = "http2") => Ok(true),
        "true" => Err(crate::tls::HTTP2_NEEDS_FEATURE.to_string()),
        "false" => Ok(false),
        _ => Err(format!("{value:?} is not a boolean (true or false)")),
    }
}

/// Why no client configuration could be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A kubeconfig named by `--kubeconfig` or `KUBECONFIG` could not be used.
    #[error("unable to load kubeconfig from {source_name}: {error}")]
    Kubeconfig {
        /// Where it came from (`--kubeconfig <path>`, `KUBECONFIG`, `~/.kube/config`).
        source_name: String,
        /// Why.
        #[source]
        error: KubeconfigError,
    },
    /// Nothing to load: not in a cluster and no kubeconfig anywhere.
    #[error(
        "could not locate a kubeconfig: not running in a cluster ({in_cluster}), KUBECONFIG is not set and {home} does not exist"
    )]
    NotFound {
        /// Why the in-cluster configuration failed.
        in_cluster: String,
        /// The home kubeconfig path that was tried.
        home: String,
    },
    /// The configuration was loaded but the client could not be built.
    #[error("unable to create a Kubernetes client: {0}")]
    Client(#[source] kube::Error),
}

/// Loads the client configuration in controller-runtime's order: `kubeconfig` (the
/// `--kubeconfig` flag), then the `KUBECONFIG` environment variable (a list of files,
/// merged), then the in-cluster service account, then `$HOME/.kube/config`.
pub async fn load_config(kubeconfig: Option<&Path>) -> Result<kube::Config, ConfigError> {
    let opts = KubeConfigOptions::default();
    if let Some(path) = kubeconfig.filter(|p| !p.as_os_str().is_empty()) {
        let source_name = format!("--kubeconfig {}", path.display());
        return from_kubeconfig(Kubeconfig::read_from(path), &opts, source_name).await;
    }
    match Kubeconfig::from_env() {
        Ok(Some(kc)) => return from_kubeconfig(Ok(kc), &opts, "KUBECONFIG".into()).await,
        Ok(None) => {}
        Err(error) => {
            return Err(ConfigError::Kubeconfig {
                source_name: "KUBECONFIG".into(),
                error,
            });
        }
    }
    let in_cluster = match kube::Config::incluster() {
        Ok(cfg) => return Ok(cfg),
        Err(e) => e.to_string(),
    };
    let home = std::env::var_os("HOME")
        .map(|h| PathBuf::from(h).join(".kube").join("config"))
        .unwrap_or_else(|| PathBuf::from("~/.kube/config"));
    if home.exists() {
        let source_name = home.display().to_string();
        return from_kubeconfig(Kubeconfig::read_from(&home), &opts, source_name).await;
    }
    Err(ConfigError::NotFound {
        in_cluster,
        home: home.display().to_string(),
    })
}

async fn from_kubeconfig(
    kc: Result<Kubeconfig, KubeconfigError>,
    opts: &KubeConfigOptions,
    source_name: String,
) -> Result<kube::Config, ConfigError> {
    let loaded = match kc {
        Ok(kc) => kube::Config::from_custom_kubeconfig(kc, opts).await,
        Err(e) => Err(e),
    };
    loaded.map_err(|error| ConfigError::Kubeconfig { source_name, error })
}

#[cfg(all(test, feature = "webhook"))]
mod tests {
    #[test]
    fn the_webhook_port_flag_defaults_to_the_servers_default_port() {
        assert_eq!(super::WEBHOOK_PORT, crate::webhook::DEFAULT_PORT);
    }
}
