//! Sharding on ctrl-envtest with short leases: a sharder and shards of ring `test`
//! reconciling ConfigMaps (see `sharding_support`). Covers the list: spread and
//! exclusivity over 1,000 objects, no two shards reconciling one object at once across
//! 30 membership changes, crash takeover, join with drains, and upstream interop.

use crate::sharding_support as support;

use std::collections::BTreeMap;
use std::time::Duration;

use ctrl::sharding::{HashRing, key_for_object, label_drain, label_shard};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::runtime::watcher;
use support::*;
use tokio::time::Instant;

const WORK: Duration = Duration::from_millis(5);

fn ids(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}-{i}")).collect()
}

/// Starts shards `ids` (leases released on stop), each reconciling into `audit`.
async fn fleet(client: &kube::Client, ids: &[String], audit: &Audit) -> Vec<Running> {
    let mut running = Vec::new();
    for id in ids {
        running.push(start_shard(client.clone(), id, true, audit.clone(), WORK, None).await);
    }
    running
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_shards_split_a_thousand_objects_and_reconcile_only_their_own() {
    let env = env().await;
    let client = env.client();
    let audit = Audit::default();
    let shards = ids("shard", 3);
    let running = fleet(&client, &shards, &audit).await;
    create_objects(&client, 1000).await;
    let sharder = start_sharder(client.clone());
    assert!(
        all_assigned_to(&client, &shards, 1000, SYNC * 4).await,
        "every object is labelled with a live shard within the sync period"
    );
    let assigned = assignments(&client).await;
    for id in &shards {
        let n = assigned.values().filter(|s| *s == id).count();
        assert!(
            (167..=500).contains(&n),
            "{id} has {n} objects, not within ±50 % of 333"
        );
    }
    let all_reconciled = eventually(Duration::from_secs(20), || async {
        let runs = audit.lock();
        assigned.keys().all(|o| runs.iter().any(|r| r.object == *o))
    })
    .await;
    assert!(all_reconciled, "every object is reconciled");
    for r in audit.lock().iter() {
        assert_eq!(
            assigned[&r.object], r.shard,
            "{} reconciled by a foreign shard",
            r.object
        );
    }
    for r in running {
        r.stop().await;
    }
    sharder.stop().await;
}

/// A shard of the churn test: 20 ms reconciles, each object requeued every 150 ms.
async fn churn_shard(client: &kube::Client, id: &str, release: bool, audit: &Audit) -> Running {
    let every = Some(Duration::from_millis(150));
    start_shard(
        client.clone(),
        id,
        release,
        audit.clone(),
        Duration::from_millis(20),
        every,
    )
    .await
}

/// One membership change of the churn test, chosen round-robin.
async fn change(
    step: usize,
    live: &mut Vec<Running>,
    next: &mut usize,
    client: &kube::Client,
    audit: &Audit,
) {
    match step % 3 {
        // A join; every other shard "crashes" when stopped later (its lease is not
        // released and must expire).
        0 => {
            *next += 1;
            let id = format!("s-{next}");
            live.push(churn_shard(client, &id, next.is_multiple_of(2), audit).await);
        }
        // A graceful stop (the lease is released) and a crash (it is not).
        _ if live.len() > 1 => {
            let victim = live.remove(step % live.len());
            victim.stop().await;
        }
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_object_is_reconciled_by_two_shards_at_once_over_thirty_membership_changes() {
    let env = env().await;
    let client = env.client();
    let audit = Audit::default();
    create_objects(&client, 60).await;
    let sharder = start_sharder(client.clone());
    let mut live = Vec::new();
    let mut next = 0;
    for i in 0..3usize {
        // Every other shard "crashes" when stopped: its lease is left to expire.
        live.push(churn_shard(&client, &format!("s-{i}"), i.is_multiple_of(2), &audit).await);
        next = i;
    }
    for step in 0..30 {
        change(step, &mut live, &mut next, &client, &audit).await;
        tokio::time::sleep(Duration::from_millis(700)).await;
    }
    let ids: Vec<String> = live.iter().map(|r| r.id.clone()).collect();
    assert!(
        all_assigned_to(&client, &ids, 60, LEASE * 2 + SYNC * 3).await,
        "the survivors own everything"
    );
    for r in live {
        r.stop().await;
    }
    sharder.stop().await;
    let runs = audit.lock().clone();
    let shards_seen: std::collections::BTreeSet<_> = runs.iter().map(|r| r.shard.clone()).collect();
    assert!(
        shards_seen.len() >= 8,
        "objects moved between many shards: {shards_seen:?}"
    );
    let bad = overlaps(&runs);
    assert!(
        bad.is_empty(),
        "{} overlapping reconciles, first: {:?}",
        bad.len(),
        bad.first()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashed_shards_objects_move_within_lease_duration_plus_sync_period() {
    let env = env().await;
    let client = env.client();
    let audit = Audit::default();
    create_objects(&client, 100).await;
    let sharder = start_sharder(client.clone());
    let a = start_shard(client.clone(), "a", false, audit.clone(), WORK, None).await;
    let b = start_shard(client.clone(), "b", true, audit.clone(), WORK, None).await;
    let both = vec!["a".to_string(), "b".to_string()];
    // Settled on both shards' ring, not only assigned to either: a shard whose lease the sharder
    // has not seen yet gets nothing at first, and its share arrives a sync or two later.
    assert!(wait_settled(&client, &both, 100, SYNC * 4).await);
    let on_a: Vec<String> = assignments(&client)
        .await
        .into_iter()
        .filter(|(_, s)| s == "a")
        .map(|(o, _)| o)
        .collect();
    assert!(!on_a.is_empty());
    a.stop().await; // no release: a crash as far as the sharder can tell
    let crashed = Instant::now();
    // Upstream's timing: the lease expires, is Uncertain one lease duration later and
    // then taken over; the next lease poll moves the objects.
    let bound = LEASE * 2 + SYNC;
    assert!(
        all_assigned_to(
            &client,
            &["b".to_string()],
            100,
            bound + Duration::from_secs(3)
        )
        .await,
        "moved to b"
    );
    let moved = eventually(Duration::from_secs(10), || async {
        on_a.iter().all(|o| reconciled_by(&audit, o, "b", crashed))
    })
    .await;
    assert!(moved, "b reconciles the crashed shard's objects");
    b.stop().await;
    sharder.stop().await;
}

/// The bench's uneven spreads (`[0, 0, 11290, 8710]`) explained: a shard that stops
/// gracefully releases its lease, is Dead at once, and a sharder still running moves its
/// objects to the shards still running. A fleet stopped shard by shard before its
/// sharder therefore ends with the first stopped shards empty and the last ones holding
/// exactly their own ring's share; stopped after the sharder, it keeps its spread.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_stopped_one_by_one_under_a_running_sharder_hand_their_objects_on() {
    let env = env().await;
    let client = env.client();
    let audit = Audit::default();
    create_objects(&client, 200).await;
    let sharder = start_sharder(client.clone());
    let all = ids("s", 4);
    let running = fleet(&client, &all, &audit).await;
    assert!(wait_settled(&client, &all, 200, SYNC * 4).await);
    let before = spread(&client, &all).await;
    assert!(
        before.iter().all(|n| *n > 0),
        "every shard has objects: {before:?}"
    );
    let mut running = running.into_iter();
    for i in 0..2 {
        running.next().expect("shard").stop().await;
        let rest = &all[i + 1..];
        assert!(
            wait_settled(&client, rest, 200, SYNC * 4).await,
            "s-{i}'s objects moved to the ring of {rest:?}"
        );
    }
    let last_two = spread(&client, &all).await;
    assert_eq!(
        &last_two[..2],
        &[0, 0],
        "the first stopped shards are empty"
    );
    assert_eq!(last_two[2] + last_two[3], 200);
    // The sharder stopped first: the shards still running keep what they hold.
    sharder.stop().await;
    for r in running {
        r.stop().await;
    }
    assert_eq!(spread(&client, &all).await, last_two);
}

/// Creates ConfigMap `name` in [`NS`]; returns its shard label as stored.
async fn create_one(client: &kube::Client, name: &str) -> Option<String> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let created = api
        .create(&PostParams::default(), &config_map(name))
        .await
        .expect("create");
    created.metadata.labels?.get(&label_shard(RING)).cloned()
}

/// The webhook reads the ring and the shard leases from watches, as upstream's reads
/// its caches: a create costs the admission call and no read of the ring or the leases.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_webhook_assigns_from_its_watches_without_reading_the_api_server() {
    let env = env().await;
    let client = env.client();
    let audit = Audit::default();
    let shards = ids("w", 3);
    let running = fleet(&client, &shards, &audit).await;
    let held: Vec<&str> = shards.iter().map(String::as_str).collect();
    assert!(leases_held(&client, &held).await);
    // One tick only (at start): every request below comes from the webhook.
    let mut sopts = ctrl::sharding::SharderOptions::new(RING, NS);
    sopts.lease_poll = Duration::from_secs(3600);
    let sharder = start_sharder_opts(client.clone(), sopts, true);
    let mut warm = 0;
    let registered = eventually(Duration::from_secs(20), || {
        warm += 1;
        let name = format!("warm-{warm}");
        let client = client.clone();
        async move { create_one(&client, &name).await.is_some() }
    })
    .await;
    assert!(registered, "the webhook labels objects");
    let faults = env.faults();
    // The sharder installs its webhook before its first tick reads the ring and the leases, so
    // the webhook can label objects before that tick ran; the tick ends by writing the ring's
    // status. Count from after it, so that only the webhook's reads are counted below.
    let status = format!("/controllerrings/{RING}/status");
    let ticked = eventually(Duration::from_secs(20), || {
        let n = faults.count_requests(|r| r.method == "PATCH" && r.path.ends_with(&status));
        async move { n > 0 }
    })
    .await;
    assert!(ticked, "the sharder's first tick wrote the ring's status");
    faults.clear_requests();
    let ring = HashRing::new(held.iter().copied());
    for i in 0..30 {
        let name = format!("cm-{i}");
        let meta = ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(NS.into()),
            ..Default::default()
        };
        let want = ring.shard_for(&key_for_object("", "ConfigMap", &meta).expect("key"));
        assert_eq!(create_one(&client, &name).await.as_deref(), want, "{name}");
    }
    let reads: Vec<String> = faults
        .requests()
        .into_iter()
        .filter(|r| {
            let what = r.resource.as_deref();
            (what == Some("controllerrings") || what == Some("leases"))
                && matches!(
                    r.verb,
                    Some(ctrl_envtest::Verb::Get | ctrl_envtest::Verb::List)
                )
                // The shards' own lease renewals read their leases by name.
                && !shards.iter().any(|id| r.path.ends_with(&format!("/leases/{id}")))
        })
        .map(|r| format!("{} {}?{}", r.method, r.path, r.query))
        .collect();
    assert!(
        reads.is_empty(),
        "the webhook read the ring or listed the leases: {reads:?}"
    );
    for r in running {
        r.stop().await;
    }
    sharder.stop().await;
}

/// An object's label states in watch order: (shard label, drain label present).
type History = std::sync::Arc<parking_lot::Mutex<BTreeMap<String, Vec<(Option<String>, bool)>>>>;

/// Every label state of every ConfigMap in [`NS`], in watch order.
fn record_history(client: kube::Client) -> (History, tokio::task::JoinHandle<()>) {
    let history = History::default();
    let h = history.clone();
    let api: Api<ConfigMap> = Api::namespaced(client, NS);
    let task = tokio::spawn(async move {
        let mut stream = watcher::watcher(api, watcher::Config::default()).boxed();
        while let Some(Ok(ev)) = stream.next().await {
            if let watcher::Event::Apply(cm) | watcher::Event::InitApply(cm) = ev {
                let labels = cm.metadata.labels.clone().unwrap_or_default();
                let state = (
                    labels.get(&label_shard(RING)).cloned(),
                    labels.contains_key(&label_drain(RING)),
                );
                let mut h = h.lock();
                let states = h
                    .entry(cm.metadata.name.clone().unwrap_or_default())
                    .or_default();
                if states.last() != Some(&state) {
                    states.push(state);
                }
            }
        }
    });
    (history, task)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_join_moves_about_a_third_each_after_its_drain_was_acknowledged() {
    let env = env().await;
    let client = env.client();
    let audit = Audit::default();
    create_objects(&client, 300).await;
    let sharder = start_sharder(client.clone());
    let mut shards = vec![
        start_shard(client.clone(), "a", true, audit.clone(), WORK, None).await,
        start_shard(client.clone(), "b", true, audit.clone(), WORK, None).await,
    ];
    // Settled on a and b's ring (see the crash test above), so `before` is each object's owner.
    assert!(wait_settled(&client, &["a".into(), "b".into()], 300, SYNC * 4).await);
    let before = assignments(&client).await;
    let (history, watch) = record_history(client.clone());
    shards.push(start_shard(client.clone(), "c", true, audit.clone(), WORK, None).await);
    let expected: usize = before
        .keys()
        .filter(|o| {
            HashRing::new(["a", "b", "c"]).shard_for(&format!("/ConfigMap/{NS}/{o}")) == Some("c")
        })
        .count();
    let moved_all = eventually(SYNC * 4, || async {
        assignments(&client)
            .await
            .values()
            .filter(|s| *s == "c")
            .count()
            == expected
    })
    .await;
    assert!(moved_all, "the ring's share of c ({expected}) moved");
    assert!(
        (50..=150).contains(&expected),
        "about a third moves: {expected}"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    watch.abort();
    let history = history.lock().clone();
    for (o, old) in &before {
        let states = &history[o];
        let Some(at_c) = states.iter().position(|(s, _)| s.as_deref() == Some("c")) else {
            continue;
        };
        let drained = states[..at_c]
            .iter()
            .any(|(s, d)| s.as_deref() == Some(old.as_str()) && *d);
        let released = states[..at_c].iter().any(|(s, _)| s.is_none());
        assert!(
            drained && released,
            "{o} moved {old} -> c without a drain handshake: {states:?}"
        );
    }
    for s in shards {
        s.stop().await;
    }
    sharder.stop().await;
    assert!(overlaps(&audit.lock()).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn objects_assigned_by_the_upstream_algorithm_are_kept_as_they_are() {
    // Vectors from upstream's algorithm (xxhash64, 100 tokens, group/Kind/ns/name),
    // computed by hand-checked code in `ring`'s unit tests and pinned here.
    let ring = HashRing::new(["shard-a", "shard-b", "shard-c"]);
    let meta = |name: &str| ObjectMeta {
        name: Some(name.into()),
        namespace: Some(NS.into()),
        ..Default::default()
    };
    let env = env().await;
    let client = env.client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let mut versions = BTreeMap::new();
    for i in 0..50 {
        let name = format!("cm-{i}");
        let key = key_for_object("", "ConfigMap", &meta(&name)).expect("key");
        let shard = ring.shard_for(&key).expect("shard").to_string();
        let mut m = meta(&name);
        m.labels = Some(BTreeMap::from([(label_shard(RING), shard)]));
        let cm = api
            .create(
                &PostParams::default(),
                &ConfigMap {
                    metadata: m,
                    ..Default::default()
                },
            )
            .await
            .expect("create");
        versions.insert(name, cm.metadata.resource_version.unwrap_or_default());
    }
    let audit = Audit::default();
    let mut shards = Vec::new();
    for id in ["shard-a", "shard-b", "shard-c"] {
        shards.push(start_shard(client.clone(), id, true, audit.clone(), WORK, None).await);
    }
    // A sharder seeing fewer shards would rightly move the objects of the others.
    assert!(leases_held(&client, &["shard-a", "shard-b", "shard-c"]).await);
    let sharder = start_sharder(client.clone());
    let synced = eventually(Duration::from_secs(20), || async {
        audit.lock().len() >= 50
    })
    .await;
    assert!(synced, "the shards reconcile their pre-assigned objects");
    tokio::time::sleep(SYNC + Duration::from_secs(1)).await;
    for cm in api.list(&Default::default()).await.expect("list").items {
        let name = cm.metadata.name.clone().unwrap_or_default();
        assert_eq!(
            cm.metadata.resource_version.as_ref(),
            versions.get(&name),
            "{name} was rewritten"
        );
    }
    for s in shards {
        s.stop().await;
    }
    sharder.stop().await;
}
