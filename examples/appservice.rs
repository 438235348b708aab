//! The AppService operator, the Operator SDK walkthrough in ctrl: an `AppService`
//! custom resource asks for `spec.size` Pods of `spec.image`; the controller keeps
//! exactly that many (`<name>-pod-<i>`, controller-owned, so garbage collection
//! removes them with their AppService), reports them in `status.nodes` with an
//! `Available` condition, and holds a finalizer that records a `Deleting` Event.
//!
//! ```sh
//! cargo run --example appservice                       # local demo, no cluster needed
//! cargo run --example appservice -- --run-for 10s      # ... that exits 0 after 10 s
//! cargo run --example appservice -- --no-demo          # ... with no sample AppService
//! cargo run --example appservice -- --print-crd        # the CRD, for kubectl apply -f -
//! cargo run --example appservice -- --kubeconfig ~/.kube/config   # a real cluster
//! cargo run --example appservice -- --kubeconfig KC --leader-elect   # one of N replicas
//! cargo run --example appservice -- --kubeconfig KC --sharded        # one of N shards
//! cargo run --example appservice -- --kubeconfig KC --sharded --sharder=false  # ... with ctrl-sharder
//! ```
//!
//! With `--sharded` every replica reconciles its share of the AppServices (ring
//! `appservice`, see `examples/appservice/sharding.rs` and `docs/sharding.md`).
//!
//! With no cluster configured (no `--kubeconfig`, no `KUBECONFIG`, not in a pod) it
//! starts ctrl-envtest in process with the CRD and its simulated kubelet (Pods get
//! a node, run and become Ready; deleted Pods terminate), creates
//! `example-appservice` with 3 Pods, scales it to 5, deletes a Pod and shows it come
//! back. The modules are in `examples/appservice/`.

#[path = "contract/mod.rs"]
mod contract;
#[path = "appservice/mod.rs"]
mod operator;

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use contract::cli::{ExampleArgs, cluster_configured, local, parse_duration};
use contract::leader::{LeaderElectionFlags, log_leader_election};
use contract::{logging, run};
use ctrl::manager::{Args, Manager, Options, load_config};
use operator::sharding::ShardingFlags;
use operator::{controller, crd, demo, setup, sharding};
use tokio_util::sync::CancellationToken;

/// The operator's command line: kubebuilder's manager flags plus its own.
#[derive(Parser, Debug)]
#[command(
    name = "appservice",
    about = "The AppService operator (a ctrl example)"
)]
struct Cli {
    #[command(flatten)]
    example: ExampleArgs,
    #[command(flatten)]
    manager: Args,
    #[command(flatten)]
    leader: LeaderElectionFlags,
    #[command(flatten)]
    sharding: ShardingFlags,
    /// Every AppService is reconciled again this long after its last reconcile.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    resync_period: Duration,
}

#[tokio::main]
async fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.example.print_crd {
        return run::print_crds(&[crd::crd()]);
    }
    if cli.example.print_rbac {
        let opts = cli
            .leader
            .apply(setup::DEFAULT_LEASE_NAME, cli.manager.options());
        let opts = contract::rbac::deployed_options("appservice", opts);
        let cfg = controller::Config::default();
        return contract::rbac::print("appservice", |c| setup::manager(c, opts, &cfg)).await;
    }
    let demo = !cluster_configured(cli.manager.kubeconfig.as_deref());
    logging::init("appservice", demo);
    run::exit(start(cli, demo).await)
}

async fn start(cli: Cli, demo: bool) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let stop = run::stop_token(cli.example.run_for);
    let cfg = controller::Config {
        resync_period: cli.resync_period,
        ..Default::default()
    };
    let base = cli
        .leader
        .apply(setup::DEFAULT_LEASE_NAME, cli.manager.options());
    if !demo {
        let client = kube::Client::try_from(load_config(cli.manager.kubeconfig.as_deref()).await?)?;
        let mgr = build(client, base, cfg, &cli.sharding).await?;
        return Ok(mgr.start(stop).await?);
    }

    let env = demo::start(&cli.example.kubeconfig_path("appservice")).await?;
    let opts = Options {
        metrics_bind_address: local(&cli.manager.metrics_bind_address, ":8080"),
        health_probe_bind_address: local(&cli.manager.health_probe_bind_address, ":8081"),
        ..base
    };
    let mgr = build(env.client(), opts, cfg, &cli.sharding).await?;
    if let Some(url) = run::metrics_url(&mgr) {
        tracing::info!(target: "appservice::manager", "metrics at {url}");
    }
    let running = {
        let (mgr, stop) = (mgr.clone(), stop.clone());
        tokio::spawn(async move { mgr.start(stop).await })
    };
    if !cli.example.no_demo {
        run_demo_when_elected(&mgr, env.client(), &stop).await?;
    }
    running.await??;
    env.stop();
    Ok(())
}

/// The operator's manager: plain, or with `--sharded` a shard of ring `appservice`
/// (installing the ControllerRing CRD and the ring first) that also runs the sharder
/// when it holds the sharder's Lease.
async fn build(
    client: kube::Client,
    opts: Options,
    mut cfg: controller::Config,
    flags: &ShardingFlags,
) -> Result<Manager, Box<dyn std::error::Error + Send + Sync>> {
    let namespace = opts
        .leader_election_namespace
        .clone()
        .unwrap_or_else(|| "default".into());
    let Some(shard) = flags.shard(&namespace) else {
        log_leader_election(&opts);
        return setup::manager(client, opts, &cfg).await;
    };
    let mgr = sharding::manager(client, opts, &mut cfg, shard, flags.sharder).await?;
    log_leader_election(mgr.options());
    Ok(mgr)
}

/// Runs the demo once this replica leads (at once without leader election), unless
/// stopped first.
async fn run_demo_when_elected(
    mgr: &Manager,
    client: kube::Client,
    stop: &CancellationToken,
) -> Result<(), kube::Error> {
    tokio::select! {
        _ = mgr.elected() => demo::run(client, stop).await,
        _ = stop.cancelled() => Ok(()),
    }
}
