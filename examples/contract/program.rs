//! The program every example is. An example says what it is ([`Example`]: its name,
//! CRDs, flags, and how it runs on a [`Cluster`]); [`main`] does the rest of the
//! contract: `--print-crd`, `--print-rbac`, logging, the stop token (`--run-for`,
//! signals), and the choice of cluster — the one `--kubeconfig` / `KUBECONFIG` /
//! in-cluster names, else ctrl-envtest in process with the example's CRDs
//! ([`super::envtest`]).

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use ctrl::CancellationToken;
use ctrl::manager::{Args, BoxError, Manager, Options, load_config};
use ctrl_envtest::Environment;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

use super::cli::{ExampleArgs, cluster_configured, local_options};
use super::{envtest, logging, rbac, run};

/// What [`Example::deployed_manager`] returns: the manager or why it could not be
/// built; `None` for an example that runs no Manager.
pub type Deployed = Option<Result<Manager, BoxError>>;

/// An example operator, as [`main`] runs it.
pub trait Example: clap::Parser {
    /// The example's name: its binary's, its kubeconfig file's, its RBAC objects'.
    const NAME: &'static str;

    /// Its CRDs: what `--print-crd` prints and the local API server installs.
    const CRDS: &'static [fn() -> CustomResourceDefinition];

    /// Its flags: the contract's and, when it runs a Manager, kubebuilder's.
    fn flags(&self) -> (&ExampleArgs, Option<&Args>);

    /// `--kubeconfig`: kubebuilder's flag, unless the example has its own.
    fn kubeconfig(&self) -> Option<&Path> {
        self.flags().1?.kubeconfig.as_deref()
    }

    /// The manager options of its flags, before [`Cluster::options`] or
    /// [`rbac::deployed_options`] adapt them to where it runs: `opts` itself, unless
    /// the example has flags of its own (a leader-election Lease, ...).
    fn options(&self, opts: Options) -> Options {
        opts
    }

    /// Its manager on `client` (never dialled) with `opts` (as deployed), for
    /// `--print-rbac`; `None` if it runs no Manager.
    fn deployed_manager(&self, client: kube::Client, opts: Options) -> Deployed;

    /// Installs the log subscriber: the contract's ([`logging::init`]) unless the
    /// example sets up its own.
    fn init_logging(&self, local: bool) {
        logging::init(&Self::NAME.replace('-', "_"), local);
    }

    /// Runs the operator on `cluster` until `stop` is cancelled.
    fn run(
        self,
        cluster: &Cluster,
        stop: CancellationToken,
    ) -> impl Future<Output = Result<(), BoxError>>;
}

/// An example's `main`: the contract's flags first, then the example on its cluster;
/// exits 0 when it stops cleanly (`--run-for` elapsed, Ctrl-C, SIGTERM).
pub async fn main<E: Example>() -> ExitCode {
    let example = E::parse();
    let (args, manager) = example.flags();
    if args.print_crd {
        return run::print_crds(&crds::<E>());
    }
    if args.print_rbac {
        let base = manager.map(Args::options).unwrap_or_default();
        let opts = rbac::deployed_options(E::NAME, example.options(base));
        return rbac::print(E::NAME, |client| example.deployed_manager(client, opts));
    }
    let local = !cluster_configured(example.kubeconfig());
    example.init_logging(local);
    run::exit(start(example, local).await)
}

/// `E`'s CRDs.
fn crds<E: Example>() -> Vec<CustomResourceDefinition> {
    E::CRDS.iter().map(|crd| crd()).collect()
}

async fn start<E: Example>(example: E, local: bool) -> Result<(), BoxError> {
    let args = example.flags().0;
    let stop = run::stop_token(args.run_for);
    let cluster = if local {
        Cluster::local(E::NAME, args, crds::<E>()).await?
    } else {
        Cluster::configured(example.kubeconfig()).await?
    };
    example.run(&cluster, stop).await?;
    if let Cluster::Local { env, .. } = &cluster {
        env.stop();
    }
    Ok(())
}

/// Where an example runs.
pub enum Cluster {
    /// The cluster `--kubeconfig`, `KUBECONFIG` or the pod's service account names.
    Configured(kube::Client),
    /// No cluster was configured: ctrl-envtest in process, with the example's CRDs.
    Local {
        /// The API server.
        env: Environment,
        /// Where its kubeconfig was written, for kubectl.
        kubeconfig: PathBuf,
        /// Whether to run the demo (no `--no-demo`).
        demo: bool,
    },
}

impl Cluster {
    /// A client for the cluster `kubeconfig` (or `KUBECONFIG`, or in-cluster) names.
    async fn configured(kubeconfig: Option<&Path>) -> Result<Self, BoxError> {
        let client = kube::Client::try_from(load_config(kubeconfig).await?)?;
        Ok(Self::Configured(client))
    }

    /// ctrl-envtest with `crds`, its kubeconfig written where `args` say
    /// ([`envtest::start`] prints the `--kubeconfig <path>` line).
    async fn local(
        name: &str,
        args: &ExampleArgs,
        crds: Vec<CustomResourceDefinition>,
    ) -> Result<Self, BoxError> {
        let kubeconfig = args.kubeconfig_path(name);
        let what = match crds
            .iter()
            .map(|c| c.spec.names.kind.as_str())
            .collect::<Vec<_>>()
        {
            kinds if kinds.is_empty() => "no CRD".to_string(),
            kinds => format!("{} CRD", kinds.join(", ")),
        };
        let builder = crds
            .into_iter()
            .fold(Environment::builder(), |b, crd| b.crd(crd));
        let env = envtest::start(builder, &kubeconfig, &what).await?;
        Ok(Self::Local {
            env,
            kubeconfig,
            demo: !args.no_demo,
        })
    }

    /// A client for the cluster.
    pub fn client(&self) -> kube::Client {
        match self {
            Self::Configured(client) => client.clone(),
            Self::Local { env, .. } => env.client(),
        }
    }

    /// The local API server's kubeconfig, for the "watch it with kubectl" hints;
    /// `None` on a configured cluster.
    pub fn local_kubeconfig(&self) -> Option<&Path> {
        match self {
            Self::Configured(_) => None,
            Self::Local { kubeconfig, .. } => Some(kubeconfig),
        }
    }

    /// Whether the demo runs: on the local API server, without `--no-demo`.
    pub fn demo(&self) -> bool {
        matches!(self, Self::Local { demo: true, .. })
    }

    /// The manager options of kubebuilder's flags `args`: as they are on a configured
    /// cluster, with free loopback ports locally ([`local_options`]).
    pub fn options(&self, args: &Args) -> Options {
        match self {
            Self::Configured(_) => args.options(),
            Self::Local { .. } => local_options(args),
        }
    }

    /// Runs `mgr` until `stop`; locally it says where the metrics are and, with the
    /// demo on, runs `demo(client)` once `mgr` leads. Returns when the manager stops.
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
        if let Self::Configured(_) = self {
            return Ok(mgr.start(stop.clone()).await?);
        }
        if let Some(url) = run::metrics_url(mgr) {
            tracing::info!("metrics at {url}");
        }
        let script = self.demo().then(|| demo(self.client()));
        run::manager_with_demo(mgr, stop, script).await
    }
}
