//! The program every operator on the cli is. An operator says what it is
//! ([`Operator`]: its name, CRDs, flags, and how it builds its manager); [`main`] does
//! the rest: `--print-crd`, `--print-rbac`, `--print-manifests`, logging, the stop
//! token (`--run-for`, signals), and the choice of cluster — the one `--kubeconfig` /
//! `KUBECONFIG` / in-cluster names, else (feature `envtest`) ctrl-envtest in process
//! with the operator's CRDs (`super::envtest`).

use std::future::Future;
use std::path::Path;
#[cfg(feature = "envtest")]
use std::path::PathBuf;
use std::process::ExitCode;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use super::args::Flags;
use super::{logging, print, run};
use crate::CancellationToken;
use crate::manager::{Args, BoxError, Manager, Options, load_config};

/// What [`Operator::manager`] returns: the manager or why it could not be built;
/// `None` for a program that runs no Manager.
pub type Deployed = Option<Result<Manager, BoxError>>;

/// An operator, as [`main`] runs it.
pub trait Operator: clap::Parser {
    /// The operator's name: its binary's, its kubeconfig file's, the prefix of its
    /// objects in a cluster (`<name>-system`, `<name>-controller-manager`, ...).
    const NAME: &'static str;

    /// Its CRDs: what `--print-crd` prints and the local API server installs.
    const CRDS: &'static [fn() -> CustomResourceDefinition];

    /// Its flags: the cli's and, when it runs a Manager, kubebuilder's.
    fn flags(&self) -> (&Flags, Option<&Args>);

    /// `--kubeconfig`: kubebuilder's flag, unless the operator has its own.
    fn kubeconfig(&self) -> Option<&Path> {
        self.flags().1?.kubeconfig.as_deref()
    }

    /// The manager options of its flags, before [`Cluster::options`] or
    /// [`print::deployed_options`] adapt them to where it runs: `opts` itself, unless
    /// the operator has flags of its own (a leader-election Lease, ...).
    fn options(&self, opts: Options) -> Options {
        opts
    }

    /// Its manager on `client` with `opts`, controllers and webhooks set up; `None` if
    /// it runs no Manager. [`main`] calls it on a client that is never dialled for
    /// `--print-rbac` and `--print-manifests` (so it must not talk to the cluster), and
    /// on the cluster's client to run it ([`Operator::run`]'s default).
    fn manager(&self, client: kube::Client, opts: Options) -> Deployed;

    /// The manager Deployment's environment in the manifests (`--print-manifests`,
    /// `--write-manifests`): what the code reads with a default, as (name, value), e.g. the
    /// `MEMCACHED_IMAGE` of a `cargo ctrl create api --image` controller. Default: none.
    fn env(&self) -> Vec<(String, String)> {
        Vec::new()
    }

    /// The local demo, once the manager leads: creates sample objects with `client`.
    /// Runs only on the local API server, without `--no-demo`. Default: nothing.
    fn demo(&self, client: kube::Client) -> impl Future<Output = Result<(), kube::Error>> {
        let _ = client;
        std::future::ready(Ok(()))
    }

    /// Installs the log subscriber: [`logging::init`] unless the operator sets up its
    /// own.
    fn init_logging(&self, local: bool) {
        logging::init(&Self::NAME.replace('-', "_"), local);
    }

    /// Runs the operator on `cluster` until `stop` is cancelled. Default: the
    /// [`Operator::manager`] with [`Cluster::options`] of the flags, on a configured
    /// cluster with its cert rotator (feature `webhook`: `certs::add_rotator`), run by
    /// [`Cluster::run_manager`] with [`Operator::demo`].
    fn run(
        self,
        cluster: &Cluster,
        stop: CancellationToken,
    ) -> impl Future<Output = Result<(), BoxError>> {
        async move {
            let args = self.flags().1.cloned().unwrap_or_default();
            let opts = self.options(cluster.options(&args));
            let mgr = self
                .manager(cluster.client(), opts)
                .ok_or_else(|| format!("{} runs no ctrl Manager: override `run`", Self::NAME))??;
            #[cfg(feature = "webhook")]
            if cluster.local_kubeconfig().is_none() {
                super::certs::add_rotator(Self::NAME, cluster.client(), &mgr, &args)?;
            }
            cluster.run_manager(&mgr, &stop, |c| self.demo(c)).await
        }
    }
}

/// An operator's `main`: the cli's flags first, then the operator on its cluster;
/// exits 0 when it stops cleanly (`--run-for` elapsed, Ctrl-C, SIGTERM).
pub async fn main<O: Operator>() -> ExitCode {
    let operator = O::parse();
    let flags = operator.flags().0;
    if flags.print_crd {
        return print::crds(&crds::<O>());
    }
    if let Some(dir) = &flags.write_manifests {
        return print::write_manifests(&operator, dir);
    }
    if flags.print_rbac || flags.print_manifests {
        return print::deployed(&operator, flags.print_manifests);
    }
    let local =
        !super::args::cluster_configured(operator.kubeconfig()) && cfg!(feature = "envtest");
    operator.init_logging(local);
    run::exit(start(operator, local).await)
}

/// `O`'s CRDs.
pub(super) fn crds<O: Operator>() -> Vec<CustomResourceDefinition> {
    O::CRDS.iter().map(|crd| crd()).collect()
}

async fn start<O: Operator>(operator: O, local: bool) -> Result<(), BoxError> {
    let flags = operator.flags().0;
    let stop = run::stop_token(flags.run_for);
    let cluster = if local {
        let args = operator.flags().1.cloned().unwrap_or_default();
        Cluster::local(O::NAME, flags, &args, crds::<O>()).await?
    } else {
        Cluster::configured(operator.kubeconfig()).await?
    };
    operator.run(&cluster, stop).await?;
    cluster.stop();
    Ok(())
}

/// Where an operator runs.
pub enum Cluster {
    /// The cluster `--kubeconfig`, `KUBECONFIG` or the pod's service account names.
    Configured(kube::Client),
    /// No cluster was configured: ctrl-envtest in process, with the operator's CRDs.
    #[cfg(feature = "envtest")]
    Local {
        /// The API server.
        env: ctrl_envtest::Environment,
        /// Where its kubeconfig was written, for kubectl.
        kubeconfig: PathBuf,
        /// Whether to run the demo (no `--no-demo`).
        demo: bool,
        /// The webhook server of the local run, and its CA.
        webhooks: super::envtest::LocalWebhooks,
        /// The operator's name (its webhook configurations are named after it).
        name: String,
    },
}

impl Cluster {
    /// A client for the cluster `kubeconfig` (or `KUBECONFIG`, or in-cluster, or
    /// `~/.kube/config`) names.
    async fn configured(kubeconfig: Option<&Path>) -> Result<Self, BoxError> {
        let client = kube::Client::try_from(load_config(kubeconfig).await?)?;
        Ok(Self::Configured(client))
    }

    /// ctrl-envtest with `crds`, its kubeconfig written where `flags` say
    /// ([`super::envtest::start`] prints the `--kubeconfig <path>` line).
    #[cfg(feature = "envtest")]
    async fn local(
        name: &str,
        flags: &Flags,
        args: &Args,
        crds: Vec<CustomResourceDefinition>,
    ) -> Result<Self, BoxError> {
        let kubeconfig = flags.kubeconfig_path(name);
        let env = super::envtest::start_with_crds(crds, &kubeconfig).await?;
        Ok(Self::Local {
            env,
            kubeconfig,
            demo: !flags.no_demo,
            webhooks: super::envtest::LocalWebhooks::new(args.tls_options())?,
            name: name.into(),
        })
    }

    #[cfg(not(feature = "envtest"))]
    async fn local(
        _: &str,
        _: &Flags,
        _: &Args,
        _: Vec<CustomResourceDefinition>,
    ) -> Result<Self, BoxError> {
        Err("no cluster configured (and ctrl was built without its `envtest` feature)".into())
    }

    /// Stops the local API server (nothing on a configured cluster).
    fn stop(&self) {
        #[cfg(feature = "envtest")]
        if let Self::Local { env, .. } = self {
            env.stop();
        }
    }

    /// A client for the cluster.
    pub fn client(&self) -> kube::Client {
        match self {
            Self::Configured(client) => client.clone(),
            #[cfg(feature = "envtest")]
            Self::Local { env, .. } => env.client(),
        }
    }

    /// The local API server's kubeconfig, for the "watch it with kubectl" hints;
    /// `None` on a configured cluster.
    pub fn local_kubeconfig(&self) -> Option<&Path> {
        match self {
            Self::Configured(_) => None,
            #[cfg(feature = "envtest")]
            Self::Local { kubeconfig, .. } => Some(kubeconfig),
        }
    }

    /// Whether the demo runs: on the local API server, without `--no-demo`.
    pub fn demo(&self) -> bool {
        match self {
            Self::Configured(_) => false,
            #[cfg(feature = "envtest")]
            Self::Local { demo, .. } => *demo,
        }
    }

    /// The manager options of kubebuilder's flags `args`: as they are on a configured
    /// cluster (the Lease in `POD_NAMESPACE` if set, [`super::leader::namespace_from_env`]); locally with free loopback ports ([`super::args::local_options`]) and the local
    /// webhook server (self-signed, registered by [`Cluster::run_manager`]).
    pub fn options(&self, args: &Args) -> Options {
        match self {
            Self::Configured(_) => super::leader::namespace_from_env(args.options()),
            #[cfg(feature = "envtest")]
            Self::Local { webhooks, .. } => webhooks.options(super::args::local_options(args)),
        }
    }

    /// Runs `mgr` until `stop`; locally it registers the webhooks `mgr` serves on the
    /// local webhook server, says where the metrics are and, with the demo on, runs
    /// `demo(client)` once `mgr` leads. Returns when the manager stops.
    pub async fn run_manager<F, Fut>(
        &self,
        mgr: &Manager,
        stop: &CancellationToken,
        demo: F,
    ) -> Result<(), BoxError>
    where
        F: FnOnce(kube::Client) -> Fut,
        Fut: Future<Output = Result<(), kube::Error>>,
    {
        self.run_manager_boxed(
            mgr,
            stop,
            Box::new(|c| Box::pin(demo(c)) as run::Script<'_>),
        )
        .await
    }

    /// [`Cluster::run_manager`]'s body, compiled once in ctrl rather than once per demo
    /// type in every operator's binary.
    async fn run_manager_boxed<'a>(
        &self,
        mgr: &Manager,
        stop: &CancellationToken,
        demo: Box<dyn FnOnce(kube::Client) -> run::Script<'a> + 'a>,
    ) -> Result<(), BoxError> {
        if self.local_kubeconfig().is_none() {
            return Ok(mgr.start(stop.clone()).await?);
        }
        #[cfg(feature = "envtest")]
        if let Self::Local { webhooks, name, .. } = self {
            webhooks.install(self.client(), mgr, name).await?;
        }
        if let Some(url) = run::metrics_url(mgr) {
            tracing::info!(target: "ctrl::cli::metrics", "metrics at {url}");
        }
        let script = self.demo().then(|| demo(self.client()));
        run::run_with_demo(mgr, stop, script).await
    }
}
