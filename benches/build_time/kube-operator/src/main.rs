//! The operator's `main`: kubebuilder's manager flags (a subset), the cluster from the
//! kubeconfig or in-cluster, `--print-crd`.

use clap::Parser;
use kube::CustomResourceExt;
use kube_memcached_operator::{api::Memcached, controller, serve};

/// The Memcached operator (kube-runtime).
#[derive(Parser, Debug)]
struct Cli {
    /// The address the metrics endpoint binds to.
    #[arg(long, default_value = "127.0.0.1:8080")]
    metrics_bind_address: std::net::SocketAddr,
    /// Print the CRD and exit.
    #[arg(long)]
    print_crd: bool,
    /// Log as JSON.
    #[arg(long)]
    json: bool,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let cli = Cli::parse();
    if cli.print_crd {
        println!("{}", serde_json::to_string_pretty(&Memcached::crd())?);
        return Ok(());
    }
    let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into());
    if cli.json {
        tracing_subscriber::fmt().json().with_env_filter(filter).init();
    } else {
        tracing_subscriber::fmt().with_env_filter(filter).init();
    }
    let client = kube::Client::try_default().await?;
    tokio::spawn(serve::serve(cli.metrics_bind_address));
    controller::run(client).await;
    Ok(())
}
