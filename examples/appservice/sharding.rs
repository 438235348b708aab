//! `--sharded`: this replica is one shard of ring `appservice` and a candidate for
//! its sharder (ctrl's port of kubernetes-controller-sharding, `ctrl::sharding`).
//!
//! Every replica reconciles only the AppServices (and Pods) labelled
//! `shard.alpha.sharding.timebertt.dev/appservice=<its shard id>`, holds its own shard
//! Lease, and serves the sharder's webhook; the replica holding the leader-election
//! Lease (`appservice-sharder`) runs the sharder and points the ring's
//! MutatingWebhookConfiguration at its own webhook server. The ControllerRing CRD and
//! the ring are created if missing, so this runs against a bare `ctrl-envtest serve`.

use ctrl::manager::{BoxError, Options};
use ctrl::sharding::{
    ControllerRing, GroupResource, RingResource, Shard, Sharder, SharderOptions,
    controllerring_crd, label_shard,
};
use ctrl::webhook::{self, Server, certs};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, PostParams};

use super::crd::AppService;
use super::{controller, setup};

/// The ring's name.
pub const RING: &str = "appservice";

/// The sharder's leader-election Lease.
pub const SHARDER_LEASE: &str = "appservice-sharder";

/// The sharding flags.
#[derive(clap::Args, Clone, Debug, PartialEq, Eq)]
pub struct ShardingFlags {
    /// Run as a shard of ring `appservice` (and a candidate for its sharder).
    #[arg(long)]
    pub sharded: bool,
    /// This shard's identity (default: the hostname plus a random suffix).
    #[arg(long, value_name = "ID")]
    pub shard_id: Option<String>,
    /// With `--sharded`: also be a candidate for the ring's sharder (serve its webhook,
    /// run it when leading). `--sharder=false` when the sharder runs on its own
    /// (`ctrl-sharder`, or upstream's Go sharder).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub sharder: bool,
}

impl Default for ShardingFlags {
    fn default() -> Self {
        Self {
            sharded: false,
            shard_id: None,
            sharder: true,
        }
    }
}

impl ShardingFlags {
    /// The shard, if `--sharded`; its lease in `namespace`.
    pub fn shard(&self, namespace: &str) -> Option<Shard> {
        self.sharded.then(|| {
            let id = self.shard_id.clone().unwrap_or_else(default_shard_id);
            Shard::new(RING, id, namespace)
        })
    }
}

/// `<hostname>-<5 random hex digits>`.
fn default_shard_id() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_lowercase())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "appservice".into());
    format!("{host}-{:05x}", rand::random::<u32>() & 0xfffff)
}

/// The ring: AppServices, and the Pods they control.
pub fn ring() -> ControllerRing {
    ControllerRing::with_resources(
        RING,
        vec![RingResource {
            group_resource: GroupResource::new("app.example.com", "appservices"),
            controlled_resources: vec![GroupResource::new("", "pods")],
        }],
    )
}

/// Creates the ControllerRing CRD and the ring unless they exist.
async fn install(client: &kube::Client) -> Result<(), BoxError> {
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    create_if_missing(&crds, &controllerring_crd()).await?;
    let rings: Api<ControllerRing> = Api::all(client.clone());
    for _ in 0..50 {
        // The CRD is served once established.
        match create_if_missing(&rings, &ring()).await {
            Ok(()) => return Ok(()),
            Err(kube::Error::Api(s)) if s.code == 404 => {
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => return Err(e.into()),
        }
    }
    Err("the ControllerRing CRD was not served in time".into())
}

async fn create_if_missing<K>(api: &Api<K>, obj: &K) -> Result<(), kube::Error>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    match api.create(&PostParams::default(), obj).await {
        Err(kube::Error::Api(s)) if s.code == 409 => Ok(()),
        r => r.map(|_| ()),
    }
}

/// `cache` with the AppService (`For`) and Pod (`Owns`) caches selecting the shard's
/// objects.
fn select(shard: &Shard, cache: ctrl::cache::Options) -> ctrl::cache::Options {
    shard.select::<Pod>(shard.select::<AppService>(cache))
}

/// `opts` for a shard: the AppService and Pod caches select the shard's objects,
/// leader election (for the sharder) on Lease [`SHARDER_LEASE`], and a webhook server
/// on a free loopback port with a fresh self-signed certificate. Returns the options
/// and the CA's PEM.
fn options(shard: &Shard, opts: Options) -> Result<(Options, String), BoxError> {
    let dir = certs::temp_cert_dir()?;
    let generated = certs::generate_self_signed(&dir, &[])?;
    let server = Server::new(webhook::Options {
        host: "127.0.0.1".into(),
        port: 0,
        cert_dir: dir,
        ..Default::default()
    });
    server.bind()?;
    let opts = Options {
        cache: select(shard, opts.cache),
        leader_election: true,
        leader_election_id: SHARDER_LEASE.into(),
        leader_election_release_on_cancel: true,
        webhook_server: Some(server),
        ..opts
    };
    Ok((opts, generated.ca_pem))
}

/// The manager of shard `shard`: the ControllerRing CRD and ring installed if
/// missing, the AppService controller of `cfg` as the shard (it reconciles only the
/// shard's AppServices, and its Pods inherit the shard label), the shard's lease, and
/// with `sharder` the sharder with its webhook (without, the sharder runs elsewhere:
/// `ctrl-sharder`).
pub async fn manager(
    client: kube::Client,
    opts: Options,
    cfg: &controller::Config,
    shard: Shard,
    sharder: bool,
) -> Result<ctrl::Manager, BoxError> {
    install(&client).await?;
    let cfg = controller::Config {
        inherited_labels: vec![label_shard(RING)],
        ..cfg.clone()
    };
    let (opts, ca_pem) = if sharder {
        let (opts, ca_pem) = options(&shard, opts)?;
        (opts, Some(ca_pem))
    } else {
        let opts = Options {
            cache: select(&shard, opts.cache),
            leader_election: false,
            ..opts
        };
        (opts, None)
    };
    let mgr = setup::with_probes(client.clone(), opts)?;
    controller::builder(&mgr, &cfg)
        .sharded(shard.clone())
        .complete(controller::reconciler(&mgr, &cfg))?;
    mgr.add(shard.lease(client.clone())?)?;
    match ca_pem {
        Some(ca_pem) => add_sharder(&mgr, client, &shard, ca_pem)?,
        None => {
            tracing::info!(target: "appservice::sharding", shard = %shard.id(), "shard {} of ring {RING}; the sharder runs elsewhere", shard.id());
        }
    }
    Ok(mgr)
}

/// Adds the sharder (with its webhook) to `mgr`.
fn add_sharder(
    mgr: &ctrl::Manager,
    client: kube::Client,
    shard: &Shard,
    ca_pem: String,
) -> Result<(), BoxError> {
    let server = mgr.webhook_server();
    let addr = server
        .local_addr()
        .ok_or("the webhook server is not bound")?;
    let sharder = Sharder::new(client, SharderOptions::new(RING, shard.namespace()))
        .with_webhook_registration(format!("https://{addr}"), ca_pem);
    sharder.register_webhook(&server)?;
    mgr.add(sharder)?;
    tracing::info!(target: "appservice::sharding", shard = %shard.id(), "shard {} of ring {RING}; sharder webhook at https://{addr}", shard.id());
    Ok(())
}
