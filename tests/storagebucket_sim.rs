//! The StorageBucket example under the deterministic simulation (`ctrl_envtest::sim`): two
//! leader-elected replicas, each serving the defaulting and validating webhooks in memory
//! behind one Service address (`Replica::serve_webhooks`), and a seeded schedule of every
//! fault — slow webhooks past their timeout, crashed and departed webhook servers, watch
//! drops, relists, 409 storms, 429s, 5xx, leader loss. For every seed: no bucket is ever
//! stored without the webhooks' say (an http(s) endpoint and a probe path), only the Lease
//! holder writes, an `ftp://` bucket is denied, and the operator converges — the bucket
//! probed (its `https://` endpoint is one the demo probe does not speak: `InvalidEndpoint`,
//! with no socket opened), its finalizer on, a deleted bucket gone — within five virtual
//! minutes. `SIM_SEED=<n>` replays one seed.

#[allow(dead_code)]
#[path = "../examples/storagebucket/mod.rs"]
mod operator;
mod sim_support;

use std::time::Duration;

use ctrl::manager::Options;
use ctrl::manifests::{Naming, webhooks};
use ctrl::webhook;
use ctrl_envtest::sim::{self, FaultPlan, Replica, Simulation, SimulationBuilder};
use ctrl_envtest::{Environment, WebhookConfiguration};
use kube::api::{Api, DeleteParams, PostParams};
use operator::crd::{CONDITION_AVAILABLE, FINALIZER, StorageBucket, StorageBucketSpec};

const LEASE: &str = operator::LEASE_NAME;

/// The webhook Service's address, as the deployed configurations name it.
const SERVICE: &str = "storagebucket-webhook-service.storagebucket-system.svc:443";

/// One replica as `main` wires it, its webhook server in memory, until the simulation stops
/// it. Probes are an hour apart: each writes `lastProbeTime`, and the run is steady only
/// when nothing writes.
async fn replica(r: Replica) {
    let opts = Options {
        webhook_server: Some(webhook::Server::in_memory(Default::default())),
        ..sim_support::options(Some(LEASE))
    };
    let cfg = operator::controller::Config {
        probe_interval: Duration::from_secs(3600),
        ..Default::default()
    };
    let mgr = match operator::setup::manager(r.client.clone(), opts, &cfg, true) {
        Ok(mgr) => mgr,
        Err(e) => return r.note(format_args!("manager: {e}")),
    };
    if let Some(id) = mgr.leader_election_identity() {
        r.leader_identity(id);
    }
    r.serve_webhooks(SERVICE, mgr.webhook_server().service());
    if let Err(e) = mgr.start(r.shutdown.clone()).await {
        r.note(format_args!("stopped: {e}"));
    }
}

/// The configurations `--print-manifests` generates, pointing at [`SERVICE`] by URL (made
/// once: a manager that is never started describes them).
fn configurations() -> [WebhookConfiguration; 2] {
    static CONFIGS: std::sync::OnceLock<[WebhookConfiguration; 2]> = std::sync::OnceLock::new();
    CONFIGS.get_or_init(generate).clone()
}

fn generate() -> [WebhookConfiguration; 2] {
    // A kube client needs a runtime to be made in (it spawns its buffer).
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    let _in = rt.enter();
    let client = ctrl::cli::print::offline_client().expect("offline client");
    let opts = Options {
        metrics_bind_address: "0".into(),
        ..Default::default()
    };
    let mgr = ctrl::manager::Manager::new(client, opts).expect("manager");
    operator::webhooks::setup(&mgr).expect("webhooks");
    let regs = mgr.webhook_registrations();
    let (ca, _, _) = webhook::certs::new_ca("storagebucket sim CA", "", None).expect("a CA");
    let url = webhooks::url_client(&format!("https://{SERVICE}"), &ca);
    let naming = Naming::deployed("storagebucket");
    let m = webhooks::mutating(&regs, &naming, &url).expect("a defaulter");
    let v = webhooks::validating(&regs, &naming, &url).expect("a validator");
    [m.into(), v.into()]
}

/// Every stored bucket went through both webhooks: an http(s) endpoint and a probe path.
fn admitted(env: &Environment) -> Result<(), String> {
    for b in env.stored::<StorageBucket>() {
        let name = b.metadata.name.clone().unwrap_or_default();
        let scheme_ok = ["http://", "https://"]
            .iter()
            .any(|s| b.spec.endpoint.starts_with(s));
        let defaulted = b.spec.probe_path.as_deref().is_some_and(|p| !p.is_empty());
        if !scheme_ok || !defaulted {
            return Err(format!("{name} was stored unadmitted: {:?}", b.spec));
        }
    }
    Ok(())
}

/// Bucket `photos` probed for its generation, finalizer on; `backups` gone.
fn converged(env: &Environment) -> Result<(), String> {
    let buckets = env.stored::<StorageBucket>();
    let find = |n: &str| {
        buckets
            .iter()
            .find(|b| b.metadata.name.as_deref() == Some(n))
    };
    if find("backups").is_some() {
        return Err("backups was not deleted".into());
    }
    let photos = find("photos").ok_or("no bucket photos")?;
    let finalized = photos
        .metadata
        .finalizers
        .iter()
        .flatten()
        .any(|f| f == FINALIZER);
    let probed = photos.available_condition().is_some_and(|c| {
        c.type_ == CONDITION_AVAILABLE && c.status == "False" && c.reason == "InvalidEndpoint"
    });
    let status = photos.status.clone().unwrap_or_default();
    if !finalized || !probed || status.observed_generation != photos.metadata.generation {
        return Err(format!(
            "photos not converged: {:?}",
            photos.metadata.finalizers.as_ref().zip(Some(status))
        ));
    }
    Ok(())
}

fn bucket(name: &str, endpoint: &str) -> StorageBucket {
    let mut b = StorageBucket::new(name, StorageBucketSpec::new(endpoint));
    b.metadata.namespace = Some("default".into());
    b
}

/// Creates `b`, retrying through injected faults and webhooks that are down, slow or
/// refused (an `AlreadyExists` is an earlier try that landed); `Err` is a checker's
/// finding or the webhooks' denial.
async fn create(sim: &Simulation, b: &StorageBucket) -> Result<Result<(), String>, String> {
    let api: Api<StorageBucket> = Api::default_namespaced(sim.client());
    sim_support::retried(sim, || async {
        match api.create(&PostParams::default(), b).await {
            Ok(_) => Ok(Ok(())),
            Err(kube::Error::Api(s)) if s.code == 409 && s.reason == "AlreadyExists" => Ok(Ok(())),
            Err(kube::Error::Api(s)) if s.message.contains("denied the request") => {
                Ok(Err(s.message))
            }
            Err(e) => Err(e),
        }
    })
    .await
}

async fn scenario(sim: Simulation) -> Result<(), String> {
    sim.check_lease("default", LEASE);
    sim.invariant("admitted by the webhooks", admitted);
    sim.add_replica("r1", replica);
    sim.add_replica("r2", replica);
    sim.advance(Duration::from_secs(3)).await?;
    for name in ["photos", "backups"] {
        let url = format!("https://objects.example.com/{name}");
        create(&sim, &bucket(name, &url)).await??;
    }
    match create(
        &sim,
        &bucket("archive", "ftp://objects.example.com/archive"),
    )
    .await?
    {
        Err(denied) if denied.contains("must be an http:// or https:// URL") => {}
        other => return Err(format!("the ftp:// bucket was not denied: {other:?}")),
    }
    sim.advance(Duration::from_secs(20)).await?;
    let api: Api<StorageBucket> = Api::default_namespaced(sim.client());
    while let Err(e) = api.delete("backups", &DeleteParams::default()).await {
        match e {
            kube::Error::Api(s) if s.code == 404 => break,
            e => sim
                .tick()
                .await
                .map_err(|v| format!("{v} (deleting: {e})"))?,
        }
    }
    sim.run_until_steady(Duration::from_secs(300)).await?;
    converged(sim.env())
}

fn simulation(seed: u64) -> SimulationBuilder {
    let configs = configurations();
    Simulation::builder(seed)
        .environment(|env| env.crd(operator::crd::crd()).webhooks(configs))
        .faults(FaultPlan::all(
            Duration::from_secs(5),
            Duration::from_secs(60),
        ))
}

#[test]
fn storagebucket_converges_under_faults_with_its_webhooks_in_memory() {
    let t0 = std::time::Instant::now();
    let report = sim::check(0..20, simulation, scenario).unwrap_or_else(|f| panic!("{f}"));
    println!("{} seeds in {:.2?}", report.outcomes.len(), t0.elapsed());
}

/// Each seed replays: the same trace, webhook calls, crashes and elections. (Session 11 saw seed
/// 1 replay with another hash about half the time under load: the example stamped
/// `lastProbeTime` from the system clock, so whether a probe's status patch changed the bucket
/// — and so every later resourceVersion and watch delay — hung on a wall-clock second
/// boundary; it reads `ctrl::clock` now.)
#[test]
fn storagebucket_seeds_replay() {
    let report = sim::check(0..3, simulation, scenario).unwrap_or_else(|f| panic!("{f}"));
    for first in &report.outcomes {
        let again = simulation(first.seed).run(scenario);
        assert_eq!(again.as_ref().ok(), Some(first), "seed {}", first.seed);
    }
}
