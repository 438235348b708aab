//! Read your own writes against ctrl-envtest with a lagging watch
//! (`Faults::delay_watch_delivery`): the cached client sees every write it made when the
//! option is on, and reads stale when it is off; a read already waiting is not held up
//! by a later write; an object outside the cache's selector times out with the typed
//! error unless the read opts out (controller-runtime's `pkg/client/consistency.go`,
//! PR #3472).
//!
//! On virtual time: the server's watch delay line, the client's wait and its timeout all
//! read tokio's (paused) clock, and every client talks to the server in memory (no
//! socket), so a 200 ms lag on three thousand reads costs no wall time.

use std::collections::BTreeMap;
use std::time::Duration;

use ctrl_envtest::wait::wait_until;
use ctrl_envtest::{Environment, FaultMatch};
use ctrl_runtime::cache::{Cache, ListOptions, Options, Reader};
use ctrl_runtime::client::{
    Client, DeleteParams, ObjectWriter, READ_YOUR_WRITES_TIMEOUTS, ignore_not_found,
};
use futures::FutureExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::ObjectMeta;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How many times each write-then-read runs.
const ITERATIONS: usize = 1000;
/// How many tasks share them (each runs its share one after the other).
const TASKS: usize = 50;

fn cm(name: &str, app: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            namespace: Some("default".into()),
            name: Some(name.into()),
            labels: Some(BTreeMap::from([("app".to_string(), app.to_string())])),
            ..Default::default()
        },
        data: Some(BTreeMap::from([("k".to_string(), value.to_string())])),
        ..Default::default()
    }
}

/// An environment whose watches deliver every event `delay` late, and a started cache
/// (with `cache_opts`) and its client, with read-your-own-writes when `ryw`.
async fn setup(
    delay: Duration,
    cache_opts: Options,
    ryw: bool,
) -> (Environment, Client, CancellationToken) {
    let env = Environment::start().await.expect("envtest");
    env.faults()
        .delay_watch_delivery(FaultMatch::any().resource("configmaps"), delay);
    let cache = Cache::new(env.in_memory_client(), cache_opts);
    let mut client = Client::new(env.in_memory_client(), cache.clone());
    if ryw {
        client = client.with_read_your_writes();
    }
    let ctx = CancellationToken::new();
    let (c, x) = (cache.clone(), ctx.clone());
    tokio::spawn(async move { c.start(x).await });
    assert!(cache.wait_for_cache_sync(ctx.clone()).await);
    // Start the ConfigMap informer before the writes.
    client
        .list::<ConfigMap>(&ListOptions::new().in_namespace("default"))
        .await
        .expect("first list");
    (env, client, ctx)
}

/// What one write-then-read saw.
#[derive(Debug, Default, PartialEq, Eq)]
struct Seen {
    fresh: usize,
    stale: usize,
}

/// Creates a ConfigMap then gets it: fresh when the get returns what the create stored.
async fn create_then_get(client: &Client, name: &str) -> bool {
    let created = client.create(&cm(name, "rw", "1")).await.expect("create");
    let got = ignore_not_found(client.get::<ConfigMap>("default", name).await).expect("get");
    got.is_some_and(|g| g.metadata.resource_version == created.metadata.resource_version)
}

/// Updates the ConfigMap then lists its kind: fresh when the list holds the update.
async fn update_then_list(client: &Client, name: &str) -> bool {
    let current = client.api_reader().get::<ConfigMap>("default", name).await;
    let mut next = current.expect("uncached get");
    next.data = Some(BTreeMap::from([("k".to_string(), "2".to_string())]));
    let updated = client.update(&next).await.expect("update");
    let all = client
        .list::<ConfigMap>(&ListOptions::new().in_namespace("default"))
        .await
        .expect("list");
    all.iter().any(|c| {
        c.metadata.name.as_deref() == Some(name)
            && c.metadata.resource_version == updated.metadata.resource_version
    })
}

/// Deletes the ConfigMap then lists its kind: fresh when the list lacks it. The delete
/// waits until the cache holds the object (read without the option), so that a list
/// lacking it means the cache saw the delete, not that it never saw the create.
async fn delete_then_list(client: &Client, name: &str) -> bool {
    let plain = client.without_read_your_writes();
    wait_until(
        "the cache holds the object",
        || async { ignore_not_found(plain.get::<ConfigMap>("default", name).await) },
        |got| matches!(got, Ok(Some(_))),
    )
    .await
    .expect("cached get");
    let obj = cm(name, "rw", "");
    client
        .delete(&obj, &DeleteParams::default())
        .await
        .expect("delete");
    let all = client
        .list::<ConfigMap>(&ListOptions::new().in_namespace("default"))
        .await
        .expect("list");
    !all.iter().any(|c| c.metadata.name.as_deref() == Some(name))
}

/// Runs `iterations` of each write-then-read over [`TASKS`] tasks, one object per
/// iteration; counts what the reads saw, per phase.
async fn run(client: &Client, iterations: usize) -> [Seen; 3] {
    let per_task = iterations.div_ceil(TASKS);
    let tasks = (0..TASKS).map(|t| {
        let client = client.clone();
        tokio::spawn(async move {
            let mut seen: [Seen; 3] = Default::default();
            let names: Vec<String> = (0..per_task).map(|i| format!("rw-{t}-{i}")).collect();
            for name in &names {
                count(&mut seen[0], create_then_get(&client, name).await);
            }
            for name in &names {
                count(&mut seen[1], update_then_list(&client, name).await);
            }
            for name in &names {
                count(&mut seen[2], delete_then_list(&client, name).await);
            }
            seen
        })
    });
    let mut total: [Seen; 3] = Default::default();
    for seen in futures::future::join_all(tasks).await {
        for (t, s) in total.iter_mut().zip(seen.expect("task")) {
            t.fresh += s.fresh;
            t.stale += s.stale;
        }
    }
    total
}

fn count(seen: &mut Seen, fresh: bool) {
    match fresh {
        true => seen.fresh += 1,
        false => seen.stale += 1,
    }
}

#[tokio::test(start_paused = true)]
async fn every_read_sees_the_clients_own_writes_with_the_option_on() {
    let (_env, client, ctx) = setup(Duration::from_millis(200), Options::default(), true).await;
    let seen = run(&client, ITERATIONS).await;
    let all_fresh = Seen {
        fresh: ITERATIONS.div_ceil(TASKS) * TASKS,
        stale: 0,
    };
    // create-then-get, update-then-list, delete-then-list.
    assert_eq!(seen[0], all_fresh, "create then get");
    assert_eq!(seen[1], all_fresh, "update then list");
    assert_eq!(seen[2], all_fresh, "delete then list");
    ctx.cancel();
}

#[tokio::test(start_paused = true)]
async fn without_the_option_the_same_reads_are_stale() {
    let (_env, client, ctx) = setup(Duration::from_millis(200), Options::default(), false).await;
    // Fewer iterations: one stale read per phase proves the point.
    let seen = run(&client, TASKS).await;
    for (phase, s) in ["create then get", "update then list", "delete then list"]
        .iter()
        .zip(&seen)
    {
        assert!(
            s.stale > 0,
            "{phase}: no stale read without the option: {s:?}"
        );
    }
    ctx.cancel();
}

fn timeouts_counted() -> u64 {
    ctrl_runtime::metrics::registry()
        .gather()
        .iter()
        .filter(|f| f.name() == READ_YOUR_WRITES_TIMEOUTS)
        .flat_map(|f| f.get_metric())
        .map(|m| m.get_counter().get_value() as u64)
        .sum()
}

#[tokio::test(start_paused = true)]
async fn a_waiting_read_is_not_held_up_by_a_later_write_and_unseen_objects_time_out() {
    // Only `app=in` is cached; the watch lags by 2 s.
    let opts = Options {
        default_label_selector: Some("app=in".into()),
        ..Options::default()
    };
    let (_env, client, ctx) = setup(Duration::from_secs(2), opts, true).await;
    let client = client.with_read_your_writes_timeout(Duration::from_secs(60));
    client.create(&cm("seen", "in", "1")).await.expect("create");
    let created = Instant::now();

    // The list waits for the create (its event is 2 s away) ...
    let list_opts = ListOptions::new().in_namespace("default");
    let mut waiting = Box::pin(client.list::<ConfigMap>(&list_opts));
    assert!(
        (&mut waiting).now_or_never().is_none(),
        "the create was seen at once"
    );
    // ... and a write that completes meanwhile, of an object the cache never sees, does
    // not hold it up: it returns once the create is observed.
    client
        .create(&cm("unseen", "out", "1"))
        .await
        .expect("create");
    let listed = waiting.await.expect("the waiting list");
    assert_eq!(
        created.elapsed(),
        Duration::from_secs(2),
        "not when the event came"
    );
    let names: Vec<_> = listed
        .iter()
        .filter_map(|c| c.metadata.name.clone())
        .collect();
    assert_eq!(names, ["seen"]);

    // A read that starts now waits for the unseen object, and times out.
    let before = timeouts_counted();
    let short = client.with_read_your_writes_timeout(Duration::from_millis(300));
    let asked = Instant::now();
    let err = short
        .get::<ConfigMap>("default", "unseen")
        .await
        .expect_err("a read of an object outside the selector");
    assert!(err.is_read_your_writes_timeout(), "{err}");
    assert_eq!(
        asked.elapsed(),
        Duration::from_millis(300),
        "not its timeout"
    );
    assert_eq!(err.key, "default/unseen");
    let err = short
        .list::<ConfigMap>(&list_opts)
        .await
        .expect_err("a list waiting for an object outside the selector");
    assert!(err.is_read_your_writes_timeout(), "{err}");
    assert!(timeouts_counted() >= before + 2);

    // Opted out, the read answers from the cache at once: not there.
    let plain = client.without_read_your_writes();
    let err = plain
        .get::<ConfigMap>("default", "unseen")
        .await
        .expect_err("not in the cache");
    assert!(err.is_not_found(), "{err}");
    let listed = plain.list::<ConfigMap>(&list_opts).await.expect("list");
    assert_eq!(listed.len(), 1);
    // Another namespace has nothing pending: a list there does not wait.
    let other = short
        .list::<ConfigMap>(&ListOptions::new().in_namespace("kube-system"))
        .await
        .expect("a list of another namespace");
    assert!(other.is_empty());
    ctx.cancel();
}
