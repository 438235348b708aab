//! The AppService example under the deterministic simulation (`ctrl_envtest::sim`): two
//! replicas with leader election, ctrl-envtest's simulated kubelet, and a seeded schedule of
//! watch drops, relists, 409 storms, 429s, 5xx, leader loss, replica crashes and replicas
//! leaving and joining again. For every seed: no AppService ever has more Pods than it asks
//! for, only the Lease holder writes, no two workers reconcile one AppService at once, and
//! the operator converges — the AppService `Available` with exactly its Pods — within five
//! virtual minutes.
//! The same under sharding (`appservice --sharded`): three replicas, each a shard of ring
//! `appservice` and a candidate for its sharder, whose webhook ctrl-envtest calls in memory;
//! shards crash, leave and join again, and no shard ever writes an AppService or Pod labelled
//! for another shard (or for none).
//! `SIM_SEED=<n>` replays one seed.

#[allow(dead_code)]
#[path = "../examples/appservice/mod.rs"]
mod operator;
mod sim_support;

use std::time::Duration;

use ctrl::sharding::{Shard, SharderOptions, label_shard};
use ctrl_envtest::Environment;
use ctrl_envtest::sim::{self, FaultPlan, Replica, Simulation, SimulationBuilder};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, Patch, PatchParams, PostParams};
use operator::crd::{APP_LABEL, AppService, AppServiceSpec, CONDITION_AVAILABLE};

const LEASE: &str = operator::setup::DEFAULT_LEASE_NAME;

/// One replica of the operator, as its `main` wires it, until the simulation stops it.
async fn replica(r: Replica) {
    let opts = sim_support::options(Some(LEASE));
    let cfg = operator::controller::Config::default();
    let mgr = match operator::setup::manager(r.client.clone(), opts, &cfg) {
        Ok(mgr) => mgr,
        Err(e) => return r.note(format_args!("manager: {e}")),
    };
    if let Some(id) = mgr.leader_election_identity() {
        r.leader_identity(id);
    }
    if let Err(e) = mgr.start(r.shutdown.clone()).await {
        r.note(format_args!("stopped: {e}"));
    }
}

/// The live (not terminating) Pods of AppService `name`, sorted.
fn pods_of(env: &Environment, name: &str) -> Vec<String> {
    let mut pods: Vec<String> = (env.stored::<Pod>().into_iter())
        .filter(|p| p.metadata.deletion_timestamp.is_none())
        .filter(|p| p.metadata.labels.as_ref().and_then(|l| l.get(APP_LABEL)) == Some(&name.into()))
        .filter_map(|p| p.metadata.name)
        .collect();
    pods.sort();
    pods
}

/// No AppService has more live Pods than its size.
fn no_extra_pods(env: &Environment) -> Result<(), String> {
    for app in env.stored::<AppService>() {
        let name = app.metadata.name.clone().unwrap_or_default();
        let pods = pods_of(env, &name);
        if pods.len() > app.spec.size.max(0) as usize {
            return Err(format!(
                "{name} has size {} and Pods {pods:?}",
                app.spec.size
            ));
        }
    }
    Ok(())
}

/// Whether AppService `name` is `Available` for its generation with exactly its Pods.
fn converged(env: &Environment, name: &str) -> Result<(), String> {
    let apps = env.stored::<AppService>();
    let app = (apps.iter())
        .find(|a| a.metadata.name.as_deref() == Some(name))
        .ok_or("no AppService")?;
    let status = app.status.clone().unwrap_or_default();
    let available = status.conditions.iter().any(|c| {
        c.type_ == CONDITION_AVAILABLE
            && c.status == "True"
            && c.observed_generation == app.metadata.generation
    });
    let pods = pods_of(env, name);
    if !available || status.nodes != pods || pods.len() != app.spec.size as usize {
        return Err(format!("not converged: {status:?}, Pods {pods:?}"));
    }
    Ok(())
}

async fn scenario(sim: Simulation) -> Result<(), String> {
    sim.check_lease("default", LEASE);
    sim.invariant("no extra Pods", no_extra_pods);
    sim.add_replica("r1", replica);
    sim.add_replica("r2", replica);
    let apps: Api<AppService> = Api::default_namespaced(sim.client());
    let spec = AppServiceSpec {
        size: 3,
        image: "busybox".into(),
    };
    let mut app = AppService::new("shop", spec);
    app.metadata.namespace = Some("default".into());
    let (pp, patch_params) = (PostParams::default(), PatchParams::default());
    sim_support::retried(&sim, || apps.create(&pp, &app)).await?;
    sim.advance(Duration::from_secs(20)).await?;
    let scale = Patch::Merge(serde_json::json!({"spec": {"size": 5}}));
    sim_support::retried(&sim, || apps.patch("shop", &patch_params, &scale)).await?;
    sim.run_until_steady(Duration::from_secs(300)).await?;
    converged(sim.env(), "shop")
}

fn simulation(seed: u64) -> SimulationBuilder {
    Simulation::builder(seed)
        .environment(|env| {
            env.crd(operator::crd::crd())
                .simulate_pods(true)
                .pod_start_delay(Duration::from_millis(500))
                .pod_stop_delay(Duration::from_millis(500))
        })
        .faults(FaultPlan::all(
            Duration::from_secs(5),
            Duration::from_secs(60),
        ))
}

/// Runs seeds `0..n` (on `SIM_THREADS` threads) and prints how fast they went.
fn check_seeds(n: u64) -> sim::CheckReport {
    let t0 = std::time::Instant::now();
    let report = sim::check(0..n, simulation, scenario).unwrap_or_else(|f| panic!("{f}"));
    let wall = t0.elapsed();
    let seeds = report.outcomes.len();
    println!(
        "{seeds} seeds in {wall:.2?} of wall time ({:.1} seeds/s)",
        seeds as f64 / wall.as_secs_f64()
    );
    report
}

#[test]
fn appservice_converges_under_faults_for_every_seed() {
    let report = check_seeds(20);
    if std::env::var_os(sim::SEED_VAR).is_none() {
        assert_eq!(report.outcomes.len(), 20);
    }
    // Each seed replays: the same trace, kubelet, crashes, elections and all.
    for first in report.outcomes.iter().take(3) {
        let again = simulation(first.seed).run(scenario);
        assert_eq!(again.as_ref().ok(), Some(first), "seed {}", first.seed);
    }
}

/// The issue's bar: 1,000 seeds of the full fault schedule, every checker green
/// (`cargo test --test appservice_sim -- --ignored --nocapture` prints the time taken).
#[test]
#[ignore = "1,000 seeds take about 35 s on 2 cores (--profile sim); run with --ignored"]
fn appservice_converges_under_faults_for_a_thousand_seeds() {
    let report = check_seeds(1000);
    if std::env::var_os(sim::SEED_VAR).is_none() {
        assert_eq!(report.outcomes.len(), 1000);
    }
}

/// One replica of `appservice --sharded --shard-id <name>`: shard `<name>` of ring
/// `appservice` and a candidate for its sharder, its webhook server served in memory.
async fn shard(r: Replica) {
    use operator::sharding::RING;
    let opts = sim_support::options(None);
    // Named after the shard, so that the trace says which shard reconciles.
    let cfg = operator::controller::Config {
        name: format!("appservice-{}", r.name),
        ..Default::default()
    };
    r.shard(&r.name);
    let shard = Shard::new(RING, &r.name, "default");
    let mgr = match operator::sharding::manager(r.client.clone(), opts, &cfg, shard, true).await {
        Ok(mgr) => mgr,
        Err(e) => return r.note(format_args!("manager: {e}")),
    };
    if let Some(id) = mgr.leader_election_identity() {
        r.leader_identity(id);
    }
    let server = mgr.webhook_server();
    if let Some(addr) = server.local_addr() {
        r.serve_webhooks(&addr.to_string(), server.service());
    }
    if let Err(e) = mgr.start(r.shutdown.clone()).await {
        r.note(format_args!("stopped: {e}"));
    }
}

const APPS: [&str; 3] = ["shop", "cart", "search"];

async fn sharded_scenario(sim: Simulation) -> Result<(), String> {
    use operator::sharding::{RING, SHARDER_LEASE};
    sim.check_shards(
        &label_shard(RING),
        &["appservices", "pods"],
        ("default", SHARDER_LEASE),
    );
    sim.invariant("no extra Pods", no_extra_pods);
    for name in ["r1", "r2", "r3"] {
        sim.add_replica(name, shard);
    }
    // The ring exists (and its webhook is registered) once a sharder leads.
    sim.advance(Duration::from_secs(5)).await?;
    let apps: Api<AppService> = Api::default_namespaced(sim.client());
    let pp = PostParams::default();
    for name in APPS {
        let spec = AppServiceSpec {
            size: 2,
            image: "busybox".into(),
        };
        let mut app = AppService::new(name, spec);
        app.metadata.namespace = Some("default".into());
        sim_support::retried(&sim, || apps.create(&pp, &app)).await?;
    }
    sim.advance(Duration::from_secs(20)).await?;
    let (scale, params) = (
        Patch::Merge(serde_json::json!({"spec": {"size": 3}})),
        PatchParams::default(),
    );
    sim_support::retried(&sim, || apps.patch("shop", &params, &scale)).await?;
    sim.run_until_steady(Duration::from_secs(300)).await?;
    let all_converged = || APPS.iter().try_for_each(|name| converged(sim.env(), name));
    if all_converged().is_ok() {
        return Ok(());
    }
    // An AppService whose create (or drain acknowledgement) the sharder's webhook missed
    // (slow past its timeout; `failurePolicy: Ignore`) is stored unassigned and nobody
    // reconciles it until the sharder's next periodic sync: upstream's design ("the object
    // will be unassigned until the next sync of the sharder controller", docs/design.md).
    // Only then may convergence take up to one more sync period.
    let unassigned = unassigned(sim.env(), &label_shard(RING));
    if unassigned.is_empty() {
        return all_converged();
    }
    sim.note(format_args!(
        "unassigned {unassigned:?}: waiting for the sharder's sync"
    ));
    let deadline = sim.elapsed() + SharderOptions::new(RING, "default").sync_period;
    loop {
        sim.advance(Duration::from_secs(10)).await?;
        let converged = all_converged();
        if converged.is_ok() || sim.elapsed() > deadline {
            return converged.map_err(|e| format!("{e}, a sync period after {unassigned:?}"));
        }
    }
}

/// The AppServices with no shard label `label`.
fn unassigned(env: &Environment, label: &str) -> Vec<String> {
    (env.stored::<AppService>().into_iter())
        .filter(|a| {
            a.metadata
                .labels
                .as_ref()
                .is_none_or(|l| !l.contains_key(label))
        })
        .filter_map(|a| a.metadata.name)
        .collect()
}

/// Shards crash, leave and join (one fault every 6 s for a minute) among the API faults.
fn sharded_simulation(seed: u64) -> SimulationBuilder {
    simulation(seed).faults(FaultPlan::all(
        Duration::from_secs(6),
        Duration::from_secs(60),
    ))
}

/// Seeds 0-3. Seed 3 found a sharder bug: shard r2 acknowledged the drain of AppService `cart`
/// through a slow sharder webhook (past its timeout, `failurePolicy: Ignore`), which left `cart`
/// without a shard; the sharder synced again only at its 5-minute sync period, so `cart` stayed
/// `Available=False` with both Pods ready. It now syncs at each lease poll while a drain is
/// unacknowledged (`runtime/src/sharding/sharder/mod.rs`). Seed 102 found that a write held in
/// flight past [`sim::QUIET`] by a slow webhook let the run count as steady; it no longer does.
///
/// Seeds 0-199 found four more (each replays with `SIM_SEED=<n>`). Seed 121: a crashed
/// incarnation's reconcile, waiting out its read-your-writes timeout on its dead cache, was
/// still open when the next incarnation of the shard took the key — the crash left the
/// manager's tasks running; a crash now aborts them (a dropped `Manager::start` aborts every
/// runnable). Seed 132: the next incarnation started beside one still winding down after a
/// graceful leave, both shard `r3`; a replica is now one pod name, restarted only once its last
/// incarnation ended. Seed 72: the sharder's sync met a 409 storm and left the AppService
/// unassigned until its next sync period; a conflict now makes it sync again at the next lease
/// poll, as upstream retries conflicts with backoff. Seed 153: an AppService created while the
/// sharder webhook was slow is stored without a shard until the sharder's periodic sync,
/// upstream's design — the scenario gives such an object one sync period more to converge.
#[test]
fn sharded_appservice_converges_and_no_shard_writes_anothers_objects() {
    let t0 = std::time::Instant::now();
    let report = sim::check(0..4, sharded_simulation, sharded_scenario);
    let report = report.unwrap_or_else(|f| panic!("{f}"));
    println!(
        "{} sharded seeds in {:.2?}",
        report.outcomes.len(),
        t0.elapsed()
    );
    let first = &report.outcomes[0];
    let again = sharded_simulation(first.seed).run(sharded_scenario);
    assert_eq!(again.as_ref().ok(), Some(first), "seed {}", first.seed);
}

/// 200 seeds of the sharded scenario (`cargo test --profile sim --test appservice_sim --
/// --ignored sharded --nocapture`).
#[test]
#[ignore = "200 sharded seeds take about 30 s on 2 cores (--profile sim); run with --ignored"]
fn sharded_appservice_converges_for_two_hundred_seeds() {
    let t0 = std::time::Instant::now();
    let report = sim::check(0..200, sharded_simulation, sharded_scenario);
    let report = report.unwrap_or_else(|f| panic!("{f}"));
    println!(
        "{} sharded seeds in {:.2?}",
        report.outcomes.len(),
        t0.elapsed()
    );
}

/// The shard checker catches what it is for: a replica that says it is shard `rogue` but runs
/// the unsharded operator (its caches see every AppService) writes the shards' objects.
#[test]
fn the_shard_checker_catches_a_replica_writing_another_shards_objects() {
    let rogue = |sim: Simulation| async move {
        sim.add_replica("rogue", |r: Replica| {
            r.shard("rogue");
            replica(r)
        });
        sharded_scenario(sim).await
    };
    let failure = sim::check(0..3, simulation, rogue).expect_err("caught");
    assert!(
        failure.message.contains("shard rogue (rogue) wrote")
            && failure.message.contains("an object of shard r"),
        "{failure}"
    );
}
