//! The StorageBucket operator: keeps the status of `StorageBucket` custom resources
//! — buckets in an object store outside the cluster — up to date by probing them
//! over HTTP, records an Event when a bucket's availability changes, and holds a
//! finalizer on each bucket.
//!
//! ```sh
//! cargo run --example storagebucket                       # local demo, no cluster needed
//! cargo run --example storagebucket -- --run-for 10s      # ... that exits 0 after 10 s
//! cargo run --example storagebucket -- --print-crd        # the CRD, for kubectl apply -f -
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

#[path = "storagebucket/mod.rs"]
mod operator;

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use ctrl::manager::{Args, Options, load_config, shutdown_signal};
use ctrl::webhook;
use operator::leader::LeaderElectionFlags;
use operator::{controller, crd, demo, logging, setup};
use tokio_util::sync::CancellationToken;

/// The operator's command line: kubebuilder's manager flags plus its own.
#[derive(Parser, Debug)]
#[command(
    name = "storagebucket",
    about = "The StorageBucket operator (a ctrl example)"
)]
struct Cli {
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
    /// Exit (with status 0) after this long, e.g. `10s`, `2m`.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    run_for: Option<Duration>,
    /// Print the StorageBucket CRD as YAML and exit.
    #[arg(long)]
    print_crd: bool,
    /// Demo only: how often the local object store's health flips (`0s`: never).
    #[arg(long, value_name = "DURATION", default_value = "7s", value_parser = parse_duration)]
    flip_every: Duration,
    /// Demo only: where to write the kubeconfig for kubectl.
    #[arg(long, value_name = "PATH")]
    write_kubeconfig: Option<PathBuf>,
}

/// Parses `1500ms`, `10s`, `2m`, `1h` or a bare number of seconds.
fn parse_duration(s: &str) -> Result<Duration, String> {
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

/// Whether a cluster is configured: `--kubeconfig`, `KUBECONFIG`, or a pod's
/// service account. (`~/.kube/config` alone does not count: the demo never
/// touches a cluster you did not name.)
fn cluster_configured(cli: &Cli) -> bool {
    cli.manager.kubeconfig.is_some()
        || std::env::var_os("KUBECONFIG").is_some_and(|v| !v.is_empty())
        || kube::Config::incluster().is_ok()
}

/// Says which Lease this replica competes for, when leader election is on.
fn log_leader_election(opts: &Options) {
    if opts.leader_election {
        let ns = opts
            .leader_election_namespace
            .as_deref()
            .unwrap_or("default");
        tracing::info!(target: "storagebucket::leader", "leader election on: Lease {ns}/{}", opts.leader_election_id);
    }
}

/// A local default like `:8080` would collide between demo runs: use a free port.
fn local(addr: &str, default: &str) -> String {
    if addr == default {
        "127.0.0.1:0".into()
    } else {
        addr.into()
    }
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    if cli.print_crd {
        return match crd::crd_yaml() {
            Ok(yaml) => {
                print!("{yaml}");
                std::process::ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("cannot print the CRD: {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    let demo = !cluster_configured(&cli);
    logging::init(demo);
    match run(cli, demo).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!(target: "storagebucket::main", "{error}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli, demo: bool) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    // Ctrl-C / SIGTERM, or the end of --run-for, stops everything gracefully.
    let stop = CancellationToken::new();
    let signal = shutdown_signal();
    {
        let (stop, run_for) = (stop.clone(), cli.run_for);
        tokio::spawn(async move {
            let deadline = async {
                match run_for {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = signal.cancelled() => tracing::info!(target: "storagebucket::main", "signal received, shutting down"),
                _ = deadline => tracing::info!(target: "storagebucket::main", "--run-for elapsed, shutting down"),
            }
            stop.cancel();
        });
    }

    let cfg = controller::Config {
        probe_interval: cli.probe_interval,
        ..Default::default()
    };
    let base = cli.leader.apply(cli.manager.options());
    if !demo {
        let client = kube::Client::try_from(load_config(cli.manager.kubeconfig.as_deref()).await?)?;
        let server = cli.webhook_cert_path.clone().map(|cert_dir| {
            webhook::Server::new(webhook::Options {
                cert_dir,
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

    let kubeconfig = cli
        .write_kubeconfig
        .clone()
        .unwrap_or_else(|| std::env::temp_dir().join("storagebucket.kubeconfig"));
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
    if let Some(addr) = mgr.metrics_addr() {
        tracing::info!(target: "storagebucket::manager", "metrics at http://{addr}/metrics");
    }
    let running = {
        let (mgr, stop) = (mgr.clone(), stop.clone());
        tokio::spawn(async move { mgr.start(stop).await })
    };
    tokio::select! {
        _ = mgr.elected() => world.create_samples().await?,
        _ = stop.cancelled() => {}
    }
    running.await??;
    world.env.stop();
    tracing::info!(target: "storagebucket::main", "stopped");
    Ok(())
}
