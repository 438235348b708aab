//! The sharder's manager: leader election always on (one active sharder per cluster),
//! the webhook server, and `ctrl::sharding::RingSharders` sharding every ring; against
//! the cluster the flags name, or against the local ctrl-envtest with the demo.

use ctrl::CancellationToken;
use ctrl::manager::{BoxError, Manager, Options};
use ctrl::sharding::{RingSharders, SharderOptions, WebhookEndpoint};

use super::cli::{Cli, DEFAULT_LEASE_NAME, webhook_endpoint};
use super::demo;
use ctrl::cli::Cluster;
use ctrl::cli::args::local;
use ctrl::cli::leader::log_leader_election;

/// Runs the sharder on `cluster` until `stop`; on the local API server with the demo's
/// ring, shards and ConfigMaps (unless `--no-demo`).
pub async fn run(cli: &Cli, cluster: &Cluster, stop: CancellationToken) -> Result<(), BoxError> {
    let bind = match cluster.local_kubeconfig() {
        Some(_) => local(&cli.webhook_bind_address, ":9443"),
        None => cli.webhook_bind_address.clone(),
    };
    let mgr = manager(cluster.client(), cli, cluster.options(&cli.manager), &bind)?;
    if cluster.demo() {
        demo::add_shards(&mgr, cluster.client(), &cli.lease_namespace)?;
    }
    let script = |client| demo::run(client, stop.clone());
    cluster.run_manager(&mgr, &stop, script).await
}

/// The manager: leader election on Lease `--leader-election-id` (default
/// [`DEFAULT_LEASE_NAME`]), the webhook server on `bind`, and the sharders.
pub fn manager(
    client: kube::Client,
    cli: &Cli,
    opts: Options,
    bind: &str,
) -> Result<Manager, BoxError> {
    let (server, base_url, ca_pem) = webhook_endpoint(cli, bind)?;
    let opts = Options {
        leader_election: true,
        webhook_server: Some(server),
        ..cli.leader.apply(DEFAULT_LEASE_NAME, opts)
    };
    log_leader_election(&opts);
    let mgr = Manager::new(client.clone(), opts)?;
    let mut template = SharderOptions::new("", cli.lease_namespace.clone());
    template.sync_period = cli.sync_period;
    let endpoint = WebhookEndpoint {
        server: mgr.webhook_server(),
        base_url: base_url.clone(),
        ca_pem,
    };
    mgr.add(RingSharders::new(client, template).with_webhook(endpoint)?)?;
    tracing::info!(target: "ctrl_sharder::run", "sharding every ControllerRing; shard leases in namespace {}, webhook at {base_url}", cli.lease_namespace);
    Ok(mgr)
}
