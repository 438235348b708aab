//! The flags every operator on [`super::main`] has ([`Flags`], flattened into its clap
//! `Cli` next to [`Args`], kubebuilder's manager flags: together [`OperatorArgs`]), and
//! the decisions they feed: whether a cluster is configured, and which local address a
//! default port becomes in the local demo.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::manager::{Args, Options};

/// The flags of an operator that runs a Manager: the cli's ([`Flags`]) and
/// kubebuilder's manager flags ([`Args`]), flattened into its command line.
#[derive(clap::Args, Debug)]
pub struct OperatorArgs {
    /// `--run-for`, `--no-demo`, `--print-*`.
    #[command(flatten)]
    pub flags: Flags,
    /// kubebuilder's manager flags.
    #[command(flatten)]
    pub manager: Args,
}

impl OperatorArgs {
    /// Both flag sets, as [`Operator::flags`](super::Operator::flags) returns them.
    pub fn flags(&self) -> (&Flags, Option<&Args>) {
        (&self.flags, Some(&self.manager))
    }
}

/// The cli's own flags.
// `about = None`: this doc comment must not become the operator's `--help` text.
#[derive(clap::Args, Clone, Debug, Default, PartialEq, Eq)]
#[command(about = None, long_about = None)]
pub struct Flags {
    /// Exit (with status 0) after this long, e.g. `10s`, `2m`.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub run_for: Option<Duration>,
    /// Start everything but create no sample objects.
    #[arg(long)]
    pub no_demo: bool,
    /// Print the operator's CRDs as YAML and exit.
    #[arg(long)]
    pub print_crd: bool,
    /// Print the RBAC objects the operator needs (ServiceAccount, ClusterRole, Role and
    /// bindings, generated from its code) as YAML and exit.
    #[arg(long)]
    pub print_rbac: bool,
    /// Print everything a cluster needs to run the operator (CRDs, RBAC, webhook
    /// configurations, the manager's Deployment and Services) as one YAML stream and exit.
    #[arg(long)]
    pub print_manifests: bool,
    /// Write kubebuilder's `config/` layout of those manifests (kustomize bases and
    /// `config/default`) under this directory and exit (what `cargo ctrl manifests` runs).
    #[arg(long, value_name = "DIR")]
    pub write_manifests: Option<PathBuf>,
    /// Local API server only: where to write the kubeconfig for kubectl (default: a
    /// file named after the operator in the temp dir).
    #[arg(long, value_name = "PATH")]
    pub write_kubeconfig: Option<PathBuf>,
}

impl Flags {
    /// Where the local API server's kubeconfig goes for operator `name`.
    pub fn kubeconfig_path(&self, name: &str) -> PathBuf {
        self.write_kubeconfig
            .clone()
            .unwrap_or_else(|| std::env::temp_dir().join(format!("{name}.kubeconfig")))
    }
}

/// Parses `1500ms`, `10s`, `2m`, `1h` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (try 500ms, 10s, 2m)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "" | "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (use ms, s, m or h)")),
    };
    Duration::try_from_secs_f64(secs).map_err(|e| format!("{s:?}: {e}"))
}

/// Whether a cluster is configured: `--kubeconfig` (`kubeconfig`), `KUBECONFIG`, or
/// a pod's service account. (`~/.kube/config` alone does not count: with the local API
/// server at hand, an operator never touches a cluster you did not name.)
pub fn cluster_configured(kubeconfig: Option<&Path>) -> bool {
    kubeconfig.is_some()
        || std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty())
        || kube::Config::incluster().is_ok()
}

/// In the local demo a default like `:8080` would collide between runs (and with
/// other operators): the default becomes a free loopback port; an address given on
/// the command line is kept.
pub fn local(addr: &str, default: &str) -> String {
    if addr == default {
        "127.0.0.1:0".into()
    } else {
        addr.into()
    }
}

/// The manager options of the local demo: the flags in `args`, with the default
/// metrics (`:8080`) and probe (`:8081`) addresses made free loopback ports ([`local`])
/// and the Lease (with `--leader-elect`) in namespace `default` (there is no pod
/// namespace to take it from).
pub fn local_options(args: &Args) -> Options {
    Options {
        metrics_bind_address: local(&args.metrics_bind_address, ":8080"),
        health_probe_bind_address: local(&args.health_probe_bind_address, ":8081"),
        leader_election_namespace: Some("default".into()),
        ..args.options()
    }
}
