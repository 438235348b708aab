//! The StorageBucket operator: keeps the status of `StorageBucket` custom resources
//! — buckets in an object store outside the cluster — up to date by probing them
//! over HTTP, records an Event when a bucket's availability changes, and holds a
//! finalizer on each bucket.
//!
//! ```sh
//! cargo run --example storagebucket                       # local demo, no cluster needed
//! cargo run --example storagebucket -- --run-for 10s      # ... that exits 0 after 10 s
//! cargo run --example storagebucket -- --no-demo          # ... with no sample buckets
//! cargo run --example storagebucket -- --print-crd        # the CRD, for kubectl apply -f -
//! cargo run --example storagebucket -- --print-rbac       # its RBAC, generated from the code
//! cargo run --example storagebucket -- --kubeconfig ~/.kube/config   # a real cluster
//! cargo run --example storagebucket -- --kubeconfig KC --leader-elect   # one of N replicas
//! ```
//!
//! With no cluster configured (no `--kubeconfig`, no `KUBECONFIG`, not in a pod) it
//! starts ctrl-envtest in process, installs the CRD, serves the defaulting and
//! validating webhooks (self-signed certificate) and registers them, starts a local
//! object store whose health flips, creates two buckets (defaulted by the webhook)
//! and a third that the validating webhook rejects, and prints what happens. With
//! `--leader-elect`, replicas share the Lease `storagebucket.storage.example.com`;
//! a replica that loses it exits non-zero. The modules are in
//! `examples/storagebucket/`.

#[path = "contract/mod.rs"]
mod contract;
#[path = "storagebucket/mod.rs"]
mod operator;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use contract::cli::{ExampleArgs, cluster_configured, local, parse_duration};
use contract::leader::{LeaderElectionFlags, log_leader_election};
use contract::{logging, run};
use ctrl::manager::{Args, Options, load_config};
use ctrl::webhook;
use operator::{controller, crd, demo, setup};
use tokio_util::sync::CancellationToken;

/// The operator's command line: kubebuilder's manager flags plus its own.
#[derive(Parser, Debug)]
#[command(
    name = "storagebucket",
    about = "The StorageBucket operator (a ctrl example)"
)]
struct Cli {
    #[command(flatten)]
    example: ExampleArgs,
    #[command(flatten)]
    manager: Args,
    #[command(flatten)]
    leader: LeaderElectionFlags,
    /// In a cluster: serve the admission webhooks on :9443 (certificates in
    /// `--webhook-cert-path`). The demo always serves them.
    #[arg(long)]
    enable_webhooks: bool,
    /// The directory with the webhook server's `tls.crt` and `tls.key`.
    #[arg(long, value_name = "DIR")]
    webhook_cert_path: Option<PathBuf>,
    /// How often every bucket is probed.
    #[arg(long, value_name = "DURATION", default_value = "3s", value_parser = parse_duration)]
    probe_interval: Duration,
    /// Demo only: how often the local object store's health flips (`0s`: never).
    #[arg(long, value_name = "DURATION", default_value = "7s", value_parser = parse_duration)]
    flip_every: Duration,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.example.print_crd {
        return run::print_crds(&[crd::crd()]);
    }
    if cli.example.print_rbac {
        return print_rbac(&cli).await;
    }
    let demo = !cluster_configured(cli.manager.kubeconfig.as_deref());
    logging::init("storagebucket", demo);
    run::exit(start(cli, demo).await)
}

/// `--print-rbac`: the manager as deployed (leader election, webhooks, the metrics
/// flags), its rules as YAML.
async fn print_rbac(cli: &Cli) -> ExitCode {
    let opts = cli
        .leader
        .apply(operator::LEASE_NAME, cli.manager.options());
    let opts = contract::rbac::deployed_options("storagebucket", opts);
    let cfg = controller::Config::default();
    contract::rbac::print("storagebucket", |client| {
        setup::manager(client, opts, &cfg, true)
    })
    .await
}

async fn start(cli: Cli, demo: bool) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let stop = run::stop_token(cli.example.run_for);
    let cfg = controller::Config {
        probe_interval: cli.probe_interval,
        ..Default::default()
    };
    let base = cli
        .leader
        .apply(operator::LEASE_NAME, cli.manager.options());
    if !demo {
        let client = kube::Client::try_from(load_config(cli.manager.kubeconfig.as_deref()).await?)?;
        let server = cli.webhook_cert_path.clone().map(|cert_dir| {
            webhook::Server::new(webhook::Options {
                cert_dir,
                tls: cli.manager.tls_options(),
                ..Default::default()
            })
        });
        let opts = Options {
            webhook_server: server,
            ..base
        };
        log_leader_election(&opts);
        let mgr = setup::manager(client, opts, &cfg, cli.enable_webhooks).await?;
        return Ok(mgr.start(stop).await?);
    }

    let kubeconfig = cli.example.kubeconfig_path("storagebucket");
    let world = demo::start(&kubeconfig, cli.flip_every, stop.clone()).await?;
    let (server, ca_pem) = demo::webhook_server()?;
    demo::install_webhooks(world.env.client(), &server, &ca_pem).await?;
    let opts = Options {
        metrics_bind_address: local(&cli.manager.metrics_bind_address, ":8080"),
        health_probe_bind_address: local(&cli.manager.health_probe_bind_address, ":8081"),
        webhook_server: Some(server),
        ..base
    };
    log_leader_election(&opts);
    let mgr = setup::manager(world.env.client(), opts, &cfg, true).await?;
    if let Some(url) = run::metrics_url(&mgr) {
        tracing::info!(target: "storagebucket::manager", "metrics at {url}");
    }
    let running = {
        let (mgr, stop) = (mgr.clone(), stop.clone());
        tokio::spawn(async move { mgr.start(stop).await })
    };
    if !cli.example.no_demo {
        create_samples_when_elected(&mgr, &world, &stop).await?;
    }
    running.await??;
    world.env.stop();
    Ok(())
}

/// Creates the sample buckets once this replica leads (at once without leader
/// election), unless stopped first.
async fn create_samples_when_elected(
    mgr: &ctrl::manager::Manager,
    world: &demo::World,
    stop: &CancellationToken,
) -> Result<(), kube::Error> {
    tokio::select! {
        _ = mgr.elected() => world.create_samples().await,
        _ = stop.cancelled() => Ok(()),
    }
}
