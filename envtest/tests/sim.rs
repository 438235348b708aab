//! The deterministic simulation (`ctrl_envtest::sim`) running a real ctrl Manager: one seed
//! gives one trace (in this process and in another), a planted stale-cache bug is found and
//! its seed replays bit for bit while the fixed reconciler passes the same seeds, and a
//! ten-hour resync and a 15 s lease expiry happen in virtual time. Every assertion about time
//! is about virtual time.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ctrl_builder::ControllerBuilder;
use ctrl_envtest::Environment;
use ctrl_envtest::sim::{self, FaultKind, FaultPlan, Replica, Simulation, SimulationBuilder};
use ctrl_runtime::cache::{Cache, ListOptions, Reader};
use ctrl_runtime::manager::{Manager, Options};
use ctrl_runtime::reconcile::{self, Action, Request};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, PostParams};

/// The label that ties a child Pod to its parent ConfigMap.
const PARENT: &str = "sim.ctrl.rs/parent";

/// A parent: a ConfigMap asking for `replicas` child Pods.
fn parent(name: &str, replicas: usize) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cm.data = Some(BTreeMap::from([("replicas".into(), replicas.to_string())]));
    cm
}

/// A child Pod of `owner`, named `name` or, with `None`, `generateName`d.
fn child(owner: &ConfigMap, name: Option<String>) -> Pod {
    let parent = owner.metadata.name.clone().unwrap_or_default();
    let mut pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"labels": {PARENT: parent}},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]},
    }))
    .unwrap_or_default();
    match name {
        Some(n) => pod.metadata.name = Some(n),
        None => pod.metadata.generate_name = Some(format!("{parent}-")),
    }
    let _ = ctrl_runtime::controllerutil::set_controller_reference(owner, &mut pod);
    pod
}

/// The reconciler: makes the parent's child Pods from the cached list. `buggy` creates the
/// missing number with `generateName` — a stale cache makes it create too many; the fix names
/// each child, so a create the cache has not seen yet is an `AlreadyExists`.
async fn reconcile_parent(
    cache: Cache,
    client: kube::Client,
    buggy: bool,
    req: Request,
) -> Result<Action, reconcile::Error> {
    let Ok(cm) = cache.get::<ConfigMap>(&req.namespace, &req.name).await else {
        return Ok(Action::done());
    };
    let want = (cm.data.as_ref())
        .and_then(|d| d.get("replicas")?.parse::<usize>().ok())
        .unwrap_or(0);
    let opts = ListOptions::new()
        .in_namespace(&req.namespace)
        .matching_label_map([(PARENT, req.name.as_str())]);
    let have = cache.list::<Pod>(&opts).await.unwrap_or_default();
    let pods: Api<Pod> = Api::namespaced(client, &req.namespace);
    if buggy {
        for _ in have.len()..want {
            pods.create(&PostParams::default(), &child(&cm, None))
                .await?;
        }
        return Ok(Action::done());
    }
    for i in 0..want {
        let name = format!("{}-{i}", req.name);
        if have
            .iter()
            .any(|p| p.metadata.name.as_deref() == Some(&name))
        {
            continue;
        }
        match pods
            .create(&PostParams::default(), &child(&cm, Some(name)))
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(s)) if s.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Action::done())
}

/// Manager options for a replica: no servers; leader election on Lease `default/sim` when
/// `elect`; controller names may repeat (every replica runs in this one process).
fn options(elect: bool) -> Options {
    Options {
        controller: ctrl_runtime::config::Controller {
            skip_name_validation: Some(true),
            ..Default::default()
        },
        metrics_bind_address: "0".into(),
        leader_election: elect,
        leader_election_id: "sim".into(),
        leader_election_namespace: Some("default".into()),
        ..Default::default()
    }
}

/// Runs the parent controller in `replica` until it stops; counts reconciles in `seen`.
async fn operator(replica: Replica, buggy: bool, elect: bool, seen: Arc<AtomicUsize>) {
    let mgr = match Manager::new(replica.client.clone(), options(elect)) {
        Ok(mgr) => mgr,
        Err(e) => return replica.note(format_args!("manager: {e}")),
    };
    if let Some(id) = mgr.leader_election_identity() {
        replica.leader_identity(id);
    }
    let (cache, client) = (mgr.cache(), replica.client.clone());
    let r = reconcile::func(move |_stop, req: Request| {
        seen.fetch_add(1, Ordering::Relaxed);
        reconcile_parent(cache.clone(), client.clone(), buggy, req)
    });
    let built = ControllerBuilder::new(&mgr)
        .for_::<ConfigMap>()
        .owns::<Pod>()
        .named("parent")
        .complete(r);
    match built {
        Ok(_) => match mgr.start(replica.shutdown.clone()).await {
            Ok(()) => replica.note("stopped"),
            Err(e) => replica.note(format_args!("stopped: {e}")),
        },
        Err(e) => replica.note(format_args!("controller: {e}")),
    }
}

/// No parent has more child Pods than it asks for.
fn no_extra_children(env: &Environment) -> Result<(), String> {
    let pods = env.stored::<Pod>();
    for cm in env.stored::<ConfigMap>() {
        let Some(want) = cm.data.as_ref().and_then(|d| d.get("replicas")) else {
            continue;
        };
        let name = cm.metadata.name.clone().unwrap_or_default();
        let have = (pods.iter())
            .filter(|p| p.metadata.labels.as_ref().and_then(|l| l.get(PARENT)) == Some(&name))
            .count();
        if want.parse::<usize>().is_ok_and(|w| have > w) {
            return Err(format!("{name} wants {want} Pods and has {have}"));
        }
    }
    Ok(())
}

/// The scenario: `replicas` replicas, a parent of 3 Pods, scaled to 5; steady within 5
/// virtual minutes with no extra child ever.
async fn scenario(sim: Simulation, buggy: bool, replicas: usize) -> Result<(), String> {
    let elect = replicas > 1;
    if elect {
        sim.check_lease("default", "sim");
    }
    sim.invariant("no extra children", no_extra_children);
    for i in 1..=replicas {
        let seen = Arc::new(AtomicUsize::new(0));
        sim.add_replica(&format!("r{i}"), move |r| {
            operator(r, buggy, elect, seen.clone())
        });
    }
    let cms: Api<ConfigMap> = Api::default_namespaced(sim.client());
    while let Err(e) = cms.create(&PostParams::default(), &parent("shop", 3)).await {
        // An injected fault: the test retries, as a user would.
        sim.tick()
            .await
            .map_err(|v| format!("{v} (creating the parent: {e})"))?;
    }
    sim.advance(Duration::from_secs(5)).await?;
    let scale = serde_json::json!({"data": {"replicas": "5"}});
    let patch = kube::api::Patch::Merge(scale);
    while let Err(e) = cms.patch("shop", &Default::default(), &patch).await {
        sim.tick()
            .await
            .map_err(|v| format!("{v} (scaling: {e})"))?;
    }
    sim.run_until_steady(Duration::from_secs(300)).await
}

/// Watch drops, relists, 409 storms, 429s and 5xx, one every 3 s for the first 30 s.
fn api_faults(seed: u64) -> SimulationBuilder {
    use FaultKind::*;
    Simulation::builder(seed).faults(FaultPlan {
        kinds: vec![WatchDrop, Relist, ConflictStorm, Throttle, ServerError],
        every: Duration::from_secs(3),
        until: Duration::from_secs(30),
    })
}

/// Every fault, replica crashes and leader loss included.
fn all_faults(seed: u64) -> SimulationBuilder {
    Simulation::builder(seed).faults(FaultPlan::all(
        Duration::from_secs(4),
        Duration::from_secs(40),
    ))
}

#[test]
fn one_seed_gives_one_trace_hash_and_another_seed_another() {
    let run = |seed| {
        all_faults(seed)
            .run(|sim| scenario(sim, false, 2))
            .unwrap_or_else(|f| panic!("{f}"))
    };
    let (a, b) = (run(7), run(7));
    assert_eq!(a, b, "seed 7 twice");
    assert!(a.steps > 50, "a trace of a real run: {a:?}");
    let c = run(8);
    assert_ne!(a.trace_hash, c.trace_hash, "seeds 7 and 8");
}

/// Run alone by [`one_seed_gives_one_trace_hash_in_another_process`] with `SIM_SEED` set; on
/// its own it runs seed 0.
#[test]
fn prints_the_trace_hash_of_its_seed() {
    let report = sim::check(0..1, all_faults, |sim| scenario(sim, false, 2));
    let report = report.unwrap_or_else(|f| panic!("{f}"));
    let o = &report.outcomes[0];
    println!("HASH {} {:016x}", o.seed, o.trace_hash);
}

#[test]
fn one_seed_gives_one_trace_hash_in_another_process() {
    let here = all_faults(11)
        .run(|sim| scenario(sim, false, 2))
        .unwrap_or_else(|f| panic!("{f}"));
    let exe = std::env::current_exe().expect("the test binary");
    let out = std::process::Command::new(exe)
        .args([
            "prints_the_trace_hash_of_its_seed",
            "--exact",
            "--nocapture",
        ])
        .env(sim::SEED_VAR, "11")
        .output()
        .expect("run the test binary again");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let want = format!("HASH 11 {:016x}", here.trace_hash);
    assert!(stdout.lines().any(|l| l == want), "want {want} in {stdout}");
}

#[test]
fn a_stale_cache_bug_is_found_its_seed_replays_and_the_fix_passes_the_same_seeds() {
    let found = sim::check(0..1000, api_faults, |sim| scenario(sim, true, 1));
    let failure = found.expect_err("the planted bug is found within 1,000 seeds");
    println!("{failure}");
    assert!(
        failure.message.contains("no extra children") && failure.message.contains("Pods"),
        "{failure}"
    );
    let replay = format!("SIM_SEED={} cargo test --test sim", failure.seed);
    assert!(failure.replay.starts_with(&replay), "{}", failure.replay);
    assert!(!failure.last_steps.is_empty());

    let again = api_faults(failure.seed).run(|sim| scenario(sim, true, 1));
    let again = again.expect_err("the seed fails again");
    assert_eq!(
        (&again.message, again.trace_hash, &again.last_steps),
        (&failure.message, failure.trace_hash, &failure.last_steps),
        "bit for bit"
    );

    let seeds = 0..=failure.seed.max(20);
    let fixed = sim::check(seeds, api_faults, |sim| scenario(sim, false, 1));
    let fixed = fixed.unwrap_or_else(|f| panic!("the fixed reconciler: {f}"));
    assert!(fixed.outcomes.len() >= 21);
}

/// The replicas' reconcile counters.
fn counted(sim: &Simulation, replicas: usize, elect: bool) -> Vec<Arc<AtomicUsize>> {
    (1..=replicas)
        .map(|i| {
            let seen = Arc::new(AtomicUsize::new(0));
            let s = seen.clone();
            sim.add_replica(&format!("r{i}"), move |r| {
                operator(r, false, elect, s.clone())
            });
            seen
        })
        .collect()
}

#[test]
fn a_ten_hour_resync_reconciles_again_in_virtual_time() {
    let outcome = Simulation::builder(5).run(|sim| async move {
        let seen = counted(&sim, 1, false);
        let cms: Api<ConfigMap> = Api::default_namespaced(sim.client());
        (cms.create(&PostParams::default(), &parent("shop", 1)).await)
            .map_err(|e| e.to_string())?;
        sim.run_until_steady(Duration::from_secs(60)).await?;
        let settled = seen[0].load(Ordering::Relaxed);
        // controller-runtime's default SyncPeriod is 10 h, jittered by ±10 %.
        sim.advance(Duration::from_secs(9 * 3600) - sim.elapsed())
            .await?;
        if seen[0].load(Ordering::Relaxed) != settled {
            return Err(format!("a reconcile before 9 h, at {:?}", sim.elapsed()));
        }
        sim.advance(Duration::from_secs(2 * 3600 + 60)).await?;
        let after = seen[0].load(Ordering::Relaxed);
        if after <= settled {
            return Err(format!("no resync reconcile by {:?}", sim.elapsed()));
        }
        Ok(())
    });
    let outcome = outcome.unwrap_or_else(|f| panic!("{f}"));
    assert!(outcome.virtual_time >= Duration::from_secs(11 * 3600));
}

#[test]
fn a_crashed_leaders_lease_expires_after_fifteen_virtual_seconds() {
    let outcome = Simulation::builder(3).run(|sim| async move {
        sim.check_lease("default", "sim");
        let _seen = counted(&sim, 2, true);
        while sim.lease_holder("default", "sim").is_none() {
            sim.tick().await?;
        }
        sim.advance(Duration::from_secs(10)).await?;
        let Some(leader) = sim.lease_holder("default", "sim") else {
            return Err("the leader let go of its Lease".into());
        };
        let crashed_at = sim.elapsed();
        sim.crash(&leader);
        let taken_at = loop {
            sim.tick().await?;
            match sim.lease_holder("default", "sim") {
                Some(h) if h != leader => break sim.elapsed(),
                _ => {}
            }
        };
        // The crashed leader renewed at most one retry period (2 s, jittered) before it
        // crashed; the standby takes over once the 15 s lease duration has passed since then.
        let waited = taken_at - crashed_at;
        if !(Duration::from_secs(12)..Duration::from_secs(20)).contains(&waited) {
            return Err(format!("the standby took over after {waited:?}"));
        }
        Ok(())
    });
    outcome.unwrap_or_else(|f| panic!("{f}"));
}

/// The built-in checkers catch what they are for: a replica writing while another holds the
/// Lease, and two replicas reconciling one key at once (both without leader election here).
#[test]
fn the_checkers_catch_a_write_without_the_lease_and_two_holders_of_a_key() {
    let unelected = |sim: Simulation| async move {
        sim.check_lease("default", "sim");
        let seen = Arc::new(AtomicUsize::new(0));
        let s = seen.clone();
        sim.add_replica("leader", move |r| operator(r, false, true, s.clone()));
        sim.add_replica("rogue", move |r| operator(r, false, false, seen.clone()));
        while sim.lease_holder("default", "sim").is_none() {
            sim.tick().await?;
        }
        let cms: Api<ConfigMap> = Api::default_namespaced(sim.client());
        (cms.create(&PostParams::default(), &parent("shop", 2)).await)
            .map_err(|e| e.to_string())?;
        sim.run_until_steady(Duration::from_secs(60)).await
    };
    // Some seeds show the rogue reconciling a key the leader holds first (the other
    // checker); some seed within these shows the write without the Lease.
    let caught =
        "rogue wrote (POST /api/v1/namespaces/default/pods) while leader held Lease default/sim";
    let failures: Vec<String> = (0..20)
        .filter_map(|seed| Simulation::builder(seed).run(unelected).err())
        .map(|f| f.message)
        .collect();
    assert!(failures.iter().any(|m| m.contains(caught)), "{failures:#?}");

    let twins = |sim: Simulation| async move {
        let _seen = counted(&sim, 2, false);
        let cms: Api<ConfigMap> = Api::default_namespaced(sim.client());
        (cms.create(&PostParams::default(), &parent("shop", 2)).await)
            .map_err(|e| e.to_string())?;
        sim.run_until_steady(Duration::from_secs(60)).await
    };
    let failure = sim::check(0..50, Simulation::builder, twins).expect_err("caught");
    assert!(
        failure
            .message
            .contains("two workers hold parent default/shop"),
        "{failure}"
    );
}

/// An operator that never stops writing does not converge: `run_until_steady` fails at its
/// virtual deadline.
#[test]
fn an_operator_that_never_settles_misses_the_deadline() {
    let result = Simulation::builder(1).run(|sim| async move {
        sim.add_replica("r1", |r: Replica| async move {
            let cms: Api<ConfigMap> = Api::default_namespaced(r.client.clone());
            for i in 0.. {
                let cm = parent(&format!("churn-{i}"), 0);
                let _ = cms.create(&PostParams::default(), &cm).await;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        sim.run_until_steady(Duration::from_secs(30)).await
    });
    let failure = result.expect_err("never steady");
    assert!(
        failure.message.contains("not steady within 30s"),
        "{failure}"
    );
    assert!(failure.virtual_time >= Duration::from_secs(30));
}

/// `sim::check` runs seeds on several threads but reports the first failing seed in seed
/// order, as a run of one seed after another would, whichever thread finished first; the
/// seeds before it all ran and passed, and each failure names the test to replay.
#[test]
fn check_reports_the_first_failing_seed_in_seed_order() {
    let failing = [13, 14, 30];
    let result = sim::check(0..40, Simulation::builder, |sim| async move {
        if failing.contains(&sim.seed()) {
            return Err(format!("seed {} fails", sim.seed()));
        }
        sim.advance(Duration::from_secs(1)).await
    });
    let failure = result.expect_err("seeds 13, 14 and 30 fail");
    assert_eq!(failure.seed, 13, "{failure}");
    assert!(
        failure
            .replay
            .ends_with("-- check_reports_the_first_failing_seed_in_seed_order --exact"),
        "{}",
        failure.replay
    );
    let passed = sim::check(0..13, Simulation::builder, |sim| async move {
        sim.advance(Duration::from_secs(1)).await
    });
    let seeds: Vec<u64> = passed
        .expect("no failing seed")
        .outcomes
        .iter()
        .map(|o| o.seed)
        .collect();
    assert_eq!(seeds, (0..13).collect::<Vec<_>>());
}
