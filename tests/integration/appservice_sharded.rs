//! `appservice --sharded` as an integration test: three replicas of the operator's
//! modules on one ctrl-envtest (with the simulated kubelet) share AppServices through
//! ring `appservice`; the sharder (on the leader) assigns them by webhook, every one is
//! reconciled (its Pod exists) by its shard, and they move when a replica stops and
//! another joins; their Pods follow them (labelled with their AppService's shard, in
//! that shard's Pod cache only). Checked through a plain kube client, as kubectl would,
//! and the replicas' own caches. The same with the sharder only in its own process
//! (the `ctrl-sharder` example) and the replicas started `--sharder=false`.

use crate::examples_appservice as operator;

use std::collections::BTreeMap;
use std::time::Duration;

use ctrl::Reader;
use ctrl::manager::Options;
use ctrl::sharding::{CONDITION_READY, ControllerRing, Shard, label_shard};
use ctrl_envtest::Environment;
use ctrl_envtest::wait::Wait;
use k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use operator::crd::{AppService, AppServiceSpec};
use operator::sharding::RING;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(30);
const N: usize = 60;

struct Replica {
    id: String,
    mgr: ctrl::Manager,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

/// Replica `id`; with `sharder` it also serves the sharder's webhook and runs the
/// sharder when leading (`--sharded`), without it is a shard only (`--sharder=false`).
async fn replica(env: &Environment, id: &str, sharder: bool) -> Replica {
    let opts = Options {
        metrics_bind_address: "0".into(),
        health_probe_bind_address: "0".into(),
        leader_election_namespace: Some("default".into()),
        graceful_shutdown_timeout: Duration::from_secs(10),
        ..Default::default()
    };
    let cfg = operator::controller::Config {
        name: format!("appservice-{id}"),
        ..Default::default()
    };
    let shard = Shard::new(RING, id, "default");
    let mgr = operator::sharding::manager(env.client(), opts, &cfg, shard, sharder)
        .await
        .expect("sharded manager");
    let stop = CancellationToken::new();
    let token = stop.clone();
    let running = mgr.clone();
    let task = tokio::spawn(async move {
        running.start(token).await.expect("replica runs");
    });
    Replica {
        id: id.into(),
        mgr,
        stop,
        task,
    }
}

/// AppService name -> shard label, and the names of existing Pods.
async fn observe(client: &kube::Client) -> (BTreeMap<String, String>, Vec<String>) {
    let apps: Api<AppService> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let lp = ListParams::default();
    let assigned = apps
        .list(&lp)
        .await
        .expect("list")
        .items
        .into_iter()
        .map(|a| {
            let shard = a
                .metadata
                .labels
                .unwrap_or_default()
                .remove(&label_shard(RING));
            (
                a.metadata.name.unwrap_or_default(),
                shard.unwrap_or_default(),
            )
        })
        .collect();
    let pods = pods.list(&lp).await.expect("pods").items;
    (
        assigned,
        pods.into_iter().filter_map(|p| p.metadata.name).collect(),
    )
}

/// Waits until every AppService is on one of `live` and has its Pod.
async fn settled(client: &kube::Client, live: &[&str]) -> BTreeMap<String, String> {
    let ok = |(assigned, pods): &(BTreeMap<String, String>, Vec<String>)| {
        assigned.len() == N
            && assigned.values().all(|s| live.contains(&s.as_str()))
            && assigned
                .keys()
                .all(|a| pods.contains(&format!("{a}-pod-0")))
    };
    let what = format!("every AppService on one of {live:?}, with its Pod");
    let (assigned, _) = Wait::new()
        .timeout(WAIT)
        .until(&what, || observe(client), ok)
        .await;
    assigned
}

/// Pod name -> (its shard label, its controller's name).
async fn pods_and_owners(client: &kube::Client) -> BTreeMap<String, (String, String)> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let list = pods.list(&ListParams::default()).await.expect("pods");
    list.items
        .into_iter()
        .map(|p| {
            let shard = p
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(&label_shard(RING)));
            let mut owners = p.metadata.owner_references.iter().flatten();
            let owner = owners
                .find(|o| o.controller == Some(true))
                .map(|o| o.name.clone());
            (
                p.metadata.name.clone().unwrap_or_default(),
                (
                    shard.cloned().unwrap_or_default(),
                    owner.unwrap_or_default(),
                ),
            )
        })
        .collect()
}

/// Whether every Pod is on its AppService's shard (the sharder keys controlled objects
/// by their controller) and each replica's Pod cache holds exactly its shard's Pods
/// (`Shard::select` on the `Owns` type).
async fn pods_follow_their_owners(client: &kube::Client, replicas: &[Replica]) -> bool {
    let apps = observe(client).await.0;
    let pods = pods_and_owners(client).await;
    let on_owners_shard = pods
        .values()
        .all(|(shard, owner)| apps.get(owner).is_some_and(|s| s == shard));
    let mut caches_hold_their_share = true;
    for r in replicas {
        let cached = r
            .mgr
            .cache()
            .list::<Pod>(&ctrl::prelude::ListOptions::new().in_namespace("default"))
            .await
            .expect("cache list");
        let mut names: Vec<String> = cached
            .iter()
            .filter_map(|p| p.metadata.name.clone())
            .collect();
        names.sort();
        let theirs: Vec<String> = pods
            .iter()
            .filter(|(_, (s, _))| *s == r.id)
            .map(|(n, _)| n.clone())
            .collect();
        caches_hold_their_share &= names == theirs;
    }
    !pods.is_empty() && on_owners_shard && caches_hold_their_share
}

/// Waits until [`pods_follow_their_owners`] holds.
async fn wait_pods_follow_their_owners(client: &kube::Client, replicas: &[Replica]) {
    let deadline = Instant::now() + WAIT;
    while !pods_follow_their_owners(client, replicas).await {
        assert!(
            Instant::now() < deadline,
            "every Pod is on its AppService's shard and only in that shard's cache: {:?}",
            pods_and_owners(client).await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the sharder (on the leader) registered the ring's webhook.
async fn wait_for_webhook(client: &kube::Client) {
    let webhooks: Api<MutatingWebhookConfiguration> = Api::all(client.clone());
    let deadline = Instant::now() + WAIT;
    while webhooks
        .get_opt("controllerring-appservice")
        .await
        .expect("get")
        .is_none()
    {
        assert!(
            Instant::now() < deadline,
            "the sharder registers its webhook"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Creates `app-0..N` (size 1); returns how many came back labelled with a shard.
async fn create_apps(client: &kube::Client) -> usize {
    let apps: Api<AppService> = Api::namespaced(client.clone(), "default");
    let mut labelled = 0;
    for i in 0..N {
        let spec = AppServiceSpec {
            size: 1,
            ..Default::default()
        };
        let app = AppService::new(&format!("app-{i}"), spec);
        let created = apps
            .create(&PostParams::default(), &app)
            .await
            .expect("create");
        let labels = created.metadata.labels.unwrap_or_default();
        labelled += usize::from(labels.contains_key(&label_shard(RING)));
    }
    labelled
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_sharded_replicas_share_appservices_and_hand_them_over() {
    let env = Environment::builder()
        .crd(operator::crd::crd())
        .simulate_pods(true)
        .pod_start_delay(Duration::from_millis(50))
        .start()
        .await
        .expect("envtest");
    let client = env.client();
    let mut replicas = Vec::new();
    for id in ["r-0", "r-1", "r-2"] {
        replicas.push(replica(&env, id, true).await);
    }
    wait_for_webhook(&client).await;
    tokio::time::sleep(Duration::from_secs(1)).await; // all three shard leases held
    assert_eq!(
        create_apps(&client).await,
        N,
        "the sharder's webhook labels AppServices as they are created"
    );
    let first = settled(&client, &["r-0", "r-1", "r-2"]).await;
    for id in ["r-0", "r-1", "r-2"] {
        assert!(first.values().any(|s| s == id), "{id} got AppServices");
    }
    wait_pods_follow_their_owners(&client, &replicas).await;

    let gone = replicas.remove(0);
    gone.stop.cancel();
    gone.task.await.expect("stopped");
    let after_stop = settled(&client, &["r-1", "r-2"]).await;
    assert!(
        first
            .iter()
            .filter(|(_, s)| *s == &gone.id)
            .all(|(a, _)| after_stop[a] != gone.id)
    );
    wait_pods_follow_their_owners(&client, &replicas).await;

    replicas.push(replica(&env, "r-3", true).await);
    let deadline = Instant::now() + WAIT;
    while !observe(&client).await.0.values().any(|s| s == "r-3") {
        assert!(
            Instant::now() < deadline,
            "AppServices move to the new replica"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(1)).await; // the drains of one sync
    let after_join = settled(&client, &["r-1", "r-2", "r-3"]).await;
    let moved = after_join.values().filter(|s| *s == "r-3").count();
    assert!(
        (N / 6..=N / 2).contains(&moved),
        "about a third moved to the new replica: {moved}"
    );
    wait_pods_follow_their_owners(&client, &replicas).await;
    for r in replicas {
        r.stop.cancel();
        r.task.await.expect("stopped");
    }
}

/// The `ctrl-sharder` example's binary, built with the cargo running this test into
/// this test's target dir (`cargo test` builds examples only as test harnesses).
fn sharder_binary() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    let profile_dir = exe
        .parent()
        .and_then(std::path::Path::parent)
        .expect("target/<profile>");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = std::process::Command::new(cargo);
    cmd.args(["build", "--example", "ctrl-sharder", "--quiet"])
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    if let Some(target) = profile_dir.parent() {
        cmd.env("CARGO_TARGET_DIR", target);
    }
    if profile_dir.file_name().is_some_and(|p| p == "release") {
        cmd.arg("--release");
    }
    let status = cmd
        .status()
        .expect("run cargo build --example ctrl-sharder");
    assert!(
        status.success(),
        "cargo build --example ctrl-sharder: {status}"
    );
    profile_dir.join("examples").join("ctrl-sharder")
}

/// Starts `ctrl-sharder` against `env` (3 s syncs, webhook on a free loopback port).
fn start_sharder_process(env: &Environment, dir: &std::path::Path) -> tokio::process::Child {
    let kubeconfig = dir.join("kubeconfig");
    env.write_kubeconfig(&kubeconfig).expect("kubeconfig");
    tokio::process::Command::new(sharder_binary())
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .args(["--lease-namespace", "default", "--sync-period", "3s"])
        .args(["--webhook-bind-address", "127.0.0.1:0"])
        .args([
            "--metrics-bind-address",
            "0",
            "--health-probe-bind-address",
            "0",
        ])
        .env("RUST_LOG", "warn")
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn ctrl-sharder")
}

/// The ring's (shards, availableShards, Ready condition status).
async fn ring_status(client: &kube::Client) -> (i32, i32, String) {
    let rings: Api<ControllerRing> = Api::all(client.clone());
    let status = rings
        .get(RING)
        .await
        .expect("ring")
        .status
        .unwrap_or_default();
    let ready = status
        .conditions
        .iter()
        .find(|c| c.type_ == CONDITION_READY);
    let ready = ready.map(|c| c.status.clone()).unwrap_or_default();
    (status.shards, status.available_shards, ready)
}

/// Its replicas are `x-*`: controller names are unique per process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ctrl_sharder_in_its_own_process_drives_shards_that_run_no_sharder() {
    let env = Environment::builder()
        .crd(operator::crd::crd())
        .simulate_pods(true)
        .pod_start_delay(Duration::from_millis(50))
        .start()
        .await
        .expect("envtest");
    let client = env.client();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut sharder = start_sharder_process(&env, dir.path());
    let mut replicas = Vec::new();
    for id in ["x-0", "x-1"] {
        replicas.push(replica(&env, id, false).await);
    }
    wait_for_webhook(&client).await;
    tokio::time::sleep(Duration::from_secs(1)).await; // both shard leases held
    assert_eq!(
        create_apps(&client).await,
        N,
        "ctrl-sharder's webhook labels AppServices as they are created"
    );
    let first = settled(&client, &["x-0", "x-1"]).await;
    assert!(first.values().any(|s| s == "x-0") && first.values().any(|s| s == "x-1"));
    wait_pods_follow_their_owners(&client, &replicas).await;
    let deadline = Instant::now() + WAIT;
    while ring_status(&client).await != (2, 2, "True".into()) {
        assert!(
            Instant::now() < deadline,
            "ring status: {:?}",
            ring_status(&client).await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let gone = replicas.remove(0);
    gone.stop.cancel();
    gone.task.await.expect("stopped");
    settled(&client, &["x-1"]).await;
    wait_pods_follow_their_owners(&client, &replicas).await;
    let (shards, available, ready) = ring_status(&client).await;
    assert_eq!((available, ready.as_str()), (1, "True"), "{shards} shards");
    for r in replicas {
        r.stop.cancel();
        r.task.await.expect("stopped");
    }
    assert!(
        sharder.try_wait().expect("sharder status").is_none(),
        "ctrl-sharder kept running"
    );
    sharder.kill().await.expect("stop ctrl-sharder");
}
