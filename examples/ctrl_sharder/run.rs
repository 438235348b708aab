//! The sharder's manager: leader election always on (one active sharder per cluster),
//! the webhook server, and `ctrl::sharding::RingSharders` sharding every ring; against
//! the cluster the flags name, or against ctrl-envtest with the local demo.

use ctrl::manager::{BoxError, Manager, Options, load_config};
use ctrl::sharding::{RingSharders, SharderOptions, WebhookEndpoint, controllerring_crd};
use ctrl_envtest::Environment;

use super::super::contract::cli::local_options;
use super::super::contract::leader::log_leader_election;
use super::super::contract::{envtest, run};
use super::cli::{Cli, DEFAULT_LEASE_NAME, webhook_endpoint};
use super::demo;

/// Runs the sharder until `--run-for` ends or a signal stops it.
pub async fn start(cli: Cli, demo: bool) -> Result<(), BoxError> {
    let stop = run::stop_token(cli.example.run_for);
    if !demo {
        let client = kube::Client::try_from(load_config(cli.manager.kubeconfig.as_deref()).await?)?;
        let opts = cli.manager.options();
        let mgr = manager(client, &cli, opts, &cli.webhook_bind_address)?;
        return Ok(mgr.start(stop).await?);
    }
    let builder = Environment::builder().crd(controllerring_crd());
    let path = cli.example.kubeconfig_path("ctrl-sharder");
    let env = envtest::start(builder, &path, "ControllerRing CRD").await?;
    let bind = super::super::contract::cli::local(&cli.webhook_bind_address, ":9443");
    let mgr = manager(env.client(), &cli, local_options(&cli.manager), &bind)?;
    let script = (!cli.example.no_demo).then(|| demo::run(env.client(), stop.clone()));
    if !cli.example.no_demo {
        demo::add_shards(&mgr, env.client(), &cli.lease_namespace)?;
    }
    run::manager_with_demo(&mgr, &stop, script).await?;
    env.stop();
    Ok(())
}

/// The manager: leader election on Lease `--leader-election-id` (default
/// [`DEFAULT_LEASE_NAME`]), the webhook server on `bind`, and the sharders.
fn manager(
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
