//! Acceptance checks 24–32: watch framing, start positions, resume, 410 after compaction,
//! bookmarks, streaming lists, selector transitions, timeouts and metadata watches.

use crate::common;

use std::time::{Duration, Instant};

use common::{IntoJson, RawStream, cm};
use ctrl_envtest::{Environment, FaultMatch, Verb};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::core::PartialObjectMeta;
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::json;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn rv(v: &serde_json::Value) -> u64 {
    v["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn watch_delivers_each_change_as_one_line_in_order() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let list = api.list(&Default::default()).await.unwrap();
    let start = list.metadata.resource_version.unwrap();
    let mut w = RawStream::open(
        &env,
        &format!("{CMS}?watch=true&resourceVersion={start}"),
        &[],
    )
    .await;
    assert_eq!(w.status, 200);
    assert_eq!(w.headers["content-type"], "application/json");
    api.create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap();
    let e1 = w.next_within(5).await.unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"k": "v"}})),
    )
    .await
    .unwrap();
    let e2 = w.next_within(5).await.unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    let e3 = w.next_within(5).await.unwrap();
    assert_eq!(
        [&e1["type"], &e2["type"], &e3["type"]],
        ["ADDED", "MODIFIED", "DELETED"]
    );
    assert!(rv(&e1) < rv(&e2) && rv(&e2) < rv(&e3));
    assert!(w.chunks_line_terminated);
    for e in [&e1, &e2, &e3] {
        assert_eq!(e["object"]["kind"], "ConfigMap");
        assert_eq!(e["object"]["apiVersion"], "v1");
    }
}

#[tokio::test]
async fn watch_without_rv_starts_with_existing_objects() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for n in ["a", "b"] {
        api.create(&PostParams::default(), &cm(n, &[]))
            .await
            .unwrap();
    }
    for q in ["watch=true", "watch=1&resourceVersion=0"] {
        let mut w = RawStream::open(&env, &format!("{CMS}?{q}"), &[]).await;
        let mut names = Vec::new();
        for _ in 0..2 {
            let e = w.next_within(5).await.unwrap();
            assert_eq!(e["type"], "ADDED");
            names.push(
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            );
        }
        names.sort();
        assert_eq!(names, ["a", "b"]);
    }
}

#[tokio::test]
async fn resume_from_last_rv_has_no_gaps_or_duplicates() {
    let env = common::env().await;
    let client = env.client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(client, "default");
    let start = common::list_rv(&api).await;
    let mut w = RawStream::open(
        &env,
        &format!("{CMS}?watch=true&resourceVersion={start}"),
        &[],
    )
    .await;
    api.create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap();
    let first = w.next_within(5).await.unwrap();
    drop(w);
    // writes elsewhere and here while no watch is open
    let mut s = k8s_openapi::api::core::v1::Secret::default();
    s.metadata.name = Some("s".into());
    secrets.create(&PostParams::default(), &s).await.unwrap();
    api.create(&PostParams::default(), &cm("b", &[]))
        .await
        .unwrap();
    secrets.delete("s", &DeleteParams::default()).await.unwrap();
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"x": "1"}})),
    )
    .await
    .unwrap();
    let mut w = RawStream::open(
        &env,
        &format!("{CMS}?watch=true&resourceVersion={}", rv(&first)),
        &[],
    )
    .await;
    let e1 = w.next_within(5).await.unwrap();
    let e2 = w.next_within(5).await.unwrap();
    assert_eq!(
        (
            e1["type"].as_str(),
            e1["object"]["metadata"]["name"].as_str()
        ),
        (Some("ADDED"), Some("b"))
    );
    assert_eq!(
        (
            e2["type"].as_str(),
            e2["object"]["metadata"]["name"].as_str()
        ),
        (Some("MODIFIED"), Some("a"))
    );
    // nothing else pending
    assert!(
        tokio::time::timeout(Duration::from_millis(300), w.next())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn compaction_gives_in_stream_410_and_watcher_relists() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let a = api
        .create(&PostParams::default(), &cm("a", &[]))
        .await
        .unwrap();
    api.create(&PostParams::default(), &cm("b", &[]))
        .await
        .unwrap();
    env.faults().compact_history();
    let n = a.metadata.resource_version.unwrap();
    let mut w = RawStream::open(&env, &format!("{CMS}?watch=true&resourceVersion={n}"), &[]).await;
    assert_eq!(w.status, 200);
    let e = w.next_within(5).await.unwrap();
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 410);
    assert_eq!(e["object"]["reason"], "Expired");
    assert!(w.next_within(5).await.is_none());

    // kube's watcher: list, then a watch that gets closed + compacted -> re-list, keeps going
    let faults = env.faults();
    let stream = watcher::watcher(api.clone(), watcher::Config::default()).default_backoff();
    let mut stream = stream.boxed();
    loop {
        if let Event::InitDone = stream.try_next().await.unwrap().unwrap() {
            break;
        }
    }
    api.create(&PostParams::default(), &cm("c", &[]))
        .await
        .unwrap();
    loop {
        if let Event::Apply(o) = stream.try_next().await.unwrap().unwrap() {
            assert_eq!(o.metadata.name.as_deref(), Some("c"));
            break;
        }
    }
    // The watch is closed; its reconnect is held back while history is compacted past it.
    faults.add_latency(
        FaultMatch::any().verb(Verb::Watch),
        Duration::from_millis(500),
    );
    faults.close_watches();
    api.create(&PostParams::default(), &cm("d", &[]))
        .await
        .unwrap();
    faults.compact_history();
    let lists_before = faults.count_requests(|r| r.is_list());
    let mut saw_relist = false;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let ev = tokio::time::timeout_at(deadline.into(), stream.next())
            .await
            .expect("watcher progresses")
            .unwrap();
        match ev {
            Ok(Event::Init) => saw_relist = true,
            Ok(Event::InitApply(o)) | Ok(Event::Apply(o))
                if o.metadata.name.as_deref() == Some("d") =>
            {
                break;
            }
            _ => {}
        }
    }
    assert!(saw_relist, "the watcher re-listed after the 410");
    assert!(faults.count_requests(|r| r.is_list()) > lists_before);
    let errors = faults
        .requests()
        .iter()
        .filter(|r| r.is_watch() && r.status == 410)
        .count();
    assert_eq!(errors, 0, "410 only ever in-stream");
}

#[tokio::test]
async fn bookmarks_only_when_allowed() {
    let env = Environment::builder()
        .bookmark_interval(Duration::from_millis(200))
        .start()
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let start = common::list_rv(&api).await;
    let mut w = RawStream::open(
        &env,
        &format!("{CMS}?watch=true&allowWatchBookmarks=true&resourceVersion={start}"),
        &[],
    )
    .await;
    let b = w.next_within(5).await.unwrap();
    assert_eq!(b["type"], "BOOKMARK");
    let obj = b["object"].as_object().unwrap();
    let mut keys: Vec<&String> = obj.keys().collect();
    keys.sort();
    assert_eq!(keys, ["apiVersion", "kind", "metadata"]);
    assert_eq!(b["object"]["metadata"].as_object().unwrap().len(), 1);
    assert_eq!(b["object"]["kind"], "ConfigMap");
    // resume from the bookmark loses nothing
    drop(w);
    let brv = b["object"]["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();
    api.create(&PostParams::default(), &cm("after", &[]))
        .await
        .unwrap();
    let mut w = RawStream::open(
        &env,
        &format!("{CMS}?watch=true&resourceVersion={brv}"),
        &[],
    )
    .await;
    let e = w.next_within(5).await.unwrap();
    assert_eq!(e["type"], "ADDED");
    assert_eq!(e["object"]["metadata"]["name"], "after");
    // without the flag: no bookmarks
    tokio::time::sleep(Duration::from_millis(600)).await;
    api.create(&PostParams::default(), &cm("after2", &[]))
        .await
        .unwrap();
    let e = w.next_within(5).await.unwrap();
    assert_eq!(e["type"], "ADDED");
    assert_eq!(e["object"]["metadata"]["name"], "after2");
}

#[tokio::test]
async fn streaming_list_ends_initial_events_with_bookmark() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for n in ["a", "b", "c"] {
        api.create(&PostParams::default(), &cm(n, &[]))
            .await
            .unwrap();
    }
    let mut w = RawStream::open(&env, &format!("{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=0&allowWatchBookmarks=true"), &[]).await;
    for _ in 0..3 {
        assert_eq!(w.next_within(5).await.unwrap()["type"], "ADDED");
    }
    let b = w.next_within(5).await.unwrap();
    assert_eq!(b["type"], "BOOKMARK");
    assert_eq!(
        b["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );

    let mut s = watcher::watcher(api.clone(), watcher::Config::default().streaming_lists()).boxed();
    let mut applied = 0;
    loop {
        match tokio::time::timeout(Duration::from_secs(10), s.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            Event::InitApply(_) => applied += 1,
            Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(applied, 3);
}

#[tokio::test]
async fn selector_transitions() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let mut c = cm("t", &[]);
    c.metadata.labels = Some([("app".to_string(), "a".to_string())].into());
    let made = api.create(&PostParams::default(), &c).await.unwrap();
    let start = made.metadata.resource_version.unwrap();
    let mut w = RawStream::open(
        &env,
        &format!("{CMS}?watch=true&labelSelector=app%3Da&resourceVersion={start}"),
        &[],
    )
    .await;
    api.patch(
        "t",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "b"}}})),
    )
    .await
    .unwrap();
    let e = w.next_within(5).await.unwrap();
    assert_eq!(e["type"], "DELETED");
    assert_eq!(e["object"]["metadata"]["labels"]["app"], "b");
    api.patch(
        "t",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"labels": {"app": "a"}}})),
    )
    .await
    .unwrap();
    assert_eq!(w.next_within(5).await.unwrap()["type"], "ADDED");
    api.patch(
        "t",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"x": "y"}})),
    )
    .await
    .unwrap();
    assert_eq!(w.next_within(5).await.unwrap()["type"], "MODIFIED");
}

#[tokio::test]
async fn timeout_seconds_ends_the_stream() {
    let env = common::env().await;
    let started = Instant::now();
    let mut w = RawStream::open(&env, &format!("{CMS}?watch=true&timeoutSeconds=2"), &[]).await;
    assert!(
        tokio::time::timeout(Duration::from_secs(10), w.next())
            .await
            .unwrap()
            .is_none()
    );
    assert!(started.elapsed() >= Duration::from_millis(1900));
}

#[tokio::test]
async fn metadata_watch_and_list_for_builtin_and_custom() {
    let env = Environment::builder()
        .crd(common::widget_crd(true))
        .start()
        .await
        .unwrap();
    let client = env.client();
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    api.create(&PostParams::default(), &cm("m", &[("big", "data")]))
        .await
        .unwrap();
    let (code, l) = common::raw_full(
        &env,
        "GET",
        CMS,
        None,
        "application/json",
        &[(
            "Accept",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )],
    )
    .await
    .into_json();
    assert_eq!(code, 200);
    assert_eq!(l["kind"], "PartialObjectMetadataList");
    assert_eq!(l["items"][0]["kind"], "PartialObjectMetadata");
    assert!(l["items"][0].get("data").is_none());

    let meta: Api<PartialObjectMeta<ConfigMap>> = Api::namespaced(client.clone(), "default");
    let mut s = watcher::watcher(meta, watcher::Config::default()).boxed();
    let mut names = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(10), s.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            Event::InitApply(o) => names.push(o.metadata.name.unwrap()),
            Event::InitDone => break,
            _ => {}
        }
    }
    assert_eq!(names, ["m"]);
    api.create(&PostParams::default(), &cm("n", &[]))
        .await
        .unwrap();
    loop {
        if let Event::Apply(o) = tokio::time::timeout(Duration::from_secs(10), s.try_next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
        {
            assert_eq!(o.metadata.name.as_deref(), Some("n"));
            break;
        }
    }

    // custom resource through the metadata API
    let ar = common::widget_ar();
    let wapi: Api<kube::core::DynamicObject> = Api::namespaced_with(client.clone(), "default", &ar);
    wapi.create(
        &PostParams::default(),
        &common::widget("w", json!({"size": 1})),
    )
    .await
    .unwrap();
    let list = wapi.list_metadata(&Default::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    assert_eq!(list.items[0].metadata.name.as_deref(), Some("w"));
    let mut raw = RawStream::open(
        &env,
        "/apis/example.com/v1/namespaces/default/widgets?watch=true",
        &[(
            "accept",
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        )],
    )
    .await;
    let e = raw.next_within(5).await.unwrap();
    assert_eq!(e["object"]["kind"], "PartialObjectMetadata");
    assert_eq!(e["object"]["metadata"]["name"], "w");
}

#[tokio::test]
async fn slow_watcher_is_dropped_and_writers_never_wait() {
    let env = Environment::builder()
        .watch_buffer(4)
        .start()
        .await
        .unwrap();
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let start = common::list_rv(&api).await;
    let base = env.watch_stats::<ConfigMap>();
    assert!(base.lists >= 1, "the list above is counted: {base:?}");
    // A watcher that never reads: the socket, then the body channel, then its queue fill up.
    let mut w = RawStream::open(
        &env,
        &format!("{CMS}?watch=true&resourceVersion={start}"),
        &[],
    )
    .await;
    let big = "x".repeat(200 * 1024);
    let writes = async {
        for i in 0..60 {
            api.create(
                &PostParams::default(),
                &cm(&format!("big-{i}"), &[("d", big.as_str())]),
            )
            .await
            .unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(60), writes)
        .await
        .expect("writers are not blocked by a stalled watcher");
    // The stalled watch was dropped: it delivers what it had queued, then ends cleanly.
    let mut got = 0;
    let mut last = start.clone();
    while let Some(e) = tokio::time::timeout(Duration::from_secs(10), w.next())
        .await
        .unwrap()
    {
        assert_eq!(e["type"], "ADDED");
        last = e["object"]["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string();
        got += 1;
    }
    assert!(got < 60, "the stalled watcher was cut off ({got} events)");
    let cut = env.watch_stats::<ConfigMap>();
    assert_eq!(
        (cut.watches, cut.dropped, cut.lists),
        (base.watches + 1, base.dropped + 1, base.lists),
        "one watch opened and dropped, no list: {base:?} -> {cut:?}"
    );
    // A new watch resumes from the last event received and gets exactly the rest.
    let mut w = RawStream::open(
        &env,
        &format!("{CMS}?watch=true&resourceVersion={last}&timeoutSeconds=3"),
        &[],
    )
    .await;
    let mut rest = 0;
    while let Some(e) = w.next_within(10).await {
        assert_eq!(e["type"], "ADDED");
        rest += 1;
    }
    assert_eq!(got + rest, 60);
    common::list_rv(&api).await;
    let end = env.watch_stats::<ConfigMap>();
    assert_eq!(
        (end.watches, end.dropped, end.lists),
        (cut.watches + 1, cut.dropped, cut.lists + 1),
        "the resumed watch kept up; one more list: {cut:?} -> {end:?}"
    );
}

#[tokio::test]
async fn watch_from_the_future_waits_then_times_out() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let now: u64 = common::list_rv(&api).await.parse().unwrap();
    // Reached while waiting: only events after the requested resourceVersion arrive.
    let mut w = RawStream::open(
        &env,
        &format!("{CMS}?watch=true&resourceVersion={}", now + 2),
        &[],
    )
    .await;
    for n in ["a", "b", "c"] {
        api.create(&PostParams::default(), &cm(n, &[]))
            .await
            .unwrap();
    }
    let e = w.next_within(5).await.unwrap();
    assert_eq!(e["object"]["metadata"]["name"], "c");
    // Never reached: one ERROR event (504 Timeout), then the end.
    let mut w = RawStream::open(
        &env,
        &format!("{CMS}?watch=true&resourceVersion={}", now + 1000),
        &[],
    )
    .await;
    assert_eq!(w.status, 200);
    let e = w.next_within(10).await.unwrap();
    assert_eq!(e["type"], "ERROR");
    assert_eq!(e["object"]["code"], 504);
    assert!(w.next_within(5).await.is_none());
}

#[tokio::test]
async fn legacy_watch_prefix() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("p", &[]))
        .await
        .unwrap();
    let mut w = RawStream::open(
        &env,
        "/api/v1/watch/namespaces/default/configmaps?timeoutSeconds=1",
        &[],
    )
    .await;
    let e = w.next_within(5).await.unwrap();
    assert_eq!(
        (e["type"].as_str(), e["object"]["metadata"]["name"].as_str()),
        (Some("ADDED"), Some("p"))
    );
}

/// Boolean parameters are read as apimachinery's `Convert_Slice_string_To_bool` reads them: the
/// Python client's `watch=True` is a watch, `False` / `0` (any case) is a list, and a value
/// that is neither is true rather than a 400.
#[tokio::test]
async fn boolean_parameters_are_read_as_apimachinery_reads_them() {
    let env = common::env().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    cms.create(&PostParams::default(), &cm("b", &[]))
        .await
        .expect("create");
    for watch in ["True", "TRUE", "t", ""] {
        let path = format!(
            "/api/v1/namespaces/default/configmaps?fieldSelector=metadata.name%3Db&watch={watch}&allowWatchBookmarks=True"
        );
        let mut s = RawStream::open(&env, &path, &[]).await;
        assert_eq!(s.status, 200, "watch={watch}");
        let ev = s.next_within(10).await.expect("an event");
        assert_eq!(ev["type"], "ADDED", "watch={watch}: {ev}");
        assert_eq!(ev["object"]["metadata"]["name"], "b");
    }
    for watch in ["False", "FALSE", "0"] {
        let path = format!("/api/v1/namespaces/default/configmaps?watch={watch}");
        let (code, list) = common::raw(&env, "GET", &path, None, "").await;
        assert_eq!(code, 200, "watch={watch}");
        assert_eq!(list["kind"], "ConfigMapList", "watch={watch}: {list}");
    }
}
