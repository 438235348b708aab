//! Fault injection through `Environment::faults()`: failing the next N matching requests (500,
//! 429 with Retry-After, 409), latency, the request log, closing every watch and compacting the
//! history so that resumes get an in-stream 410 — observed with a real `kube::Client` and
//! kube-runtime's `watcher`.

use crate::common;

use std::time::{Duration, Instant};

use common::{cm, status_of};
use ctrl_envtest::{FaultMatch, FaultStatus, RequestRecord, Verb};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams, PostParams, WatchParams};
use kube::runtime::watcher;
use tokio::sync::mpsc;

const WAIT: Duration = Duration::from_secs(20);

fn secret(name: &str) -> Secret {
    let mut s = Secret::default();
    s.metadata.name = Some(name.into());
    s
}

async fn list_rv(api: &Api<ConfigMap>) -> String {
    api.list(&ListParams::default())
        .await
        .expect("list")
        .metadata
        .resource_version
        .unwrap_or_default()
}

/// Polls `cond` until it holds (or panics after [`WAIT`]).
async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(start.elapsed() < WAIT, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn cm_requests(r: &RequestRecord, verb: Verb) -> bool {
    r.verb == Some(verb) && r.resource.as_deref() == Some("configmaps")
}

#[tokio::test]
async fn fail_next_fails_exactly_n_matching_requests() {
    let env = common::env().await;
    let faults = env.faults();
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let secrets: Api<Secret> = Api::namespaced(env.client(), "default");
    let rv0 = list_rv(&api).await;

    faults.fail_next(
        2,
        FaultMatch::any().verb(Verb::Create).resource("configmaps"),
        FaultStatus::internal_error(),
    );
    let s = status_of(
        api.create(&PostParams::default(), &cm("a", &[]))
            .await
            .expect_err("first create fails"),
    );
    assert_eq!(s.code, 500);
    assert_eq!(s.reason, "InternalError");
    // Other verbs and resources are not affected and do not use up the failures.
    assert!(api.get_opt("a").await.expect("get").is_none());
    secrets
        .create(&PostParams::default(), &secret("s"))
        .await
        .expect("secrets are not matched");
    let rv1 = list_rv(&api).await;
    assert_ne!(rv0, rv1, "the secret create moved the resourceVersion");
    let s = status_of(
        api.create(&PostParams::default(), &cm("a", &[]))
            .await
            .expect_err("second create fails"),
    );
    assert_eq!(s.code, 500);
    // A failed request changes nothing.
    assert_eq!(list_rv(&api).await, rv1);
    api.create(&PostParams::default(), &cm("a", &[]))
        .await
        .expect("the third create succeeds");

    let injected: Vec<RequestRecord> = faults
        .requests()
        .into_iter()
        .filter(|r| r.injected)
        .collect();
    assert_eq!(injected.len(), 2);
    for r in &injected {
        assert_eq!(r.method, "POST");
        assert_eq!(r.path, "/api/v1/namespaces/default/configmaps");
        assert_eq!(r.status, 500);
        assert_eq!(r.verb, Some(Verb::Create));
        assert_eq!(r.resource.as_deref(), Some("configmaps"));
    }

    // By name: only the named object's requests fail, with a 409.
    faults.fail_next(1, FaultMatch::any().name("a"), FaultStatus::conflict());
    api.create(&PostParams::default(), &cm("b", &[]))
        .await
        .expect("b is not matched");
    let s = status_of(api.get("a").await.expect_err("a is matched"));
    assert_eq!(s.code, 409);
    assert!(s.is_conflict());
    api.get("a").await.expect("only one failure was asked for");

    // By namespace and subresource.
    faults.fail_next(
        1,
        FaultMatch::any().namespace("kube-system"),
        FaultStatus::service_unavailable(),
    );
    let system: Api<ConfigMap> = Api::namespaced(env.client(), "kube-system");
    api.get("a").await.expect("default is not matched");
    let s = status_of(
        system
            .get("nothing")
            .await
            .expect_err("kube-system matched"),
    );
    assert_eq!(s.code, 503);
    let s = status_of(system.get("nothing").await.expect_err("now a plain 404"));
    assert_eq!(s.code, 404);

    // clear() drops pending failures (and the log).
    faults.fail_next(5, FaultMatch::any(), FaultStatus::internal_error());
    faults.clear();
    api.get("a").await.expect("no failure after clear");
    assert_eq!(faults.requests().len(), 1, "the log restarted at clear()");
}

#[tokio::test]
async fn too_many_requests_carries_retry_after() {
    let env = common::env().await;
    let faults = env.faults();
    faults.fail_next(
        1,
        FaultMatch::any().verb(Verb::List),
        FaultStatus::too_many_requests(2),
    );
    let (code, headers, body) = common::raw_full(
        &env,
        "GET",
        "/api/v1/namespaces/default/configmaps",
        None,
        "application/json",
        &[],
    )
    .await;
    assert_eq!(code, 429);
    assert!(
        headers.iter().any(|(k, v)| k == "retry-after" && v == "2"),
        "{headers:?}"
    );
    let status: serde_json::Value = serde_json::from_str(&body).expect("Status JSON");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(status["code"], 429);
    assert_eq!(status["details"]["retryAfterSeconds"], 2);

    // kube's default retry policy honours the 429 and gets through.
    let mut cfg = env.config();
    cfg.default_retry = true;
    let client = kube::Client::try_from(cfg).expect("client");
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    faults.clear();
    faults.fail_next(
        2,
        FaultMatch::any().verb(Verb::Create),
        FaultStatus::too_many_requests(1),
    );
    let start = Instant::now();
    api.create(&PostParams::default(), &cm("retried", &[]))
        .await
        .expect("kube retries 429s");
    assert!(
        start.elapsed() >= Duration::from_millis(900),
        "Retry-After was honoured"
    );
    let posts: Vec<u16> = faults
        .requests()
        .iter()
        .filter(|r| r.verb == Some(Verb::Create))
        .map(|r| r.status)
        .collect();
    assert_eq!(posts, vec![429, 429, 201]);
}

#[tokio::test]
async fn latency_slows_matching_requests_down() {
    let env = common::env().await;
    let faults = env.faults();
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("x", &[]))
        .await
        .expect("create");
    faults.add_latency(
        FaultMatch::any().verb(Verb::Get).resource("configmaps"),
        Duration::from_millis(300),
    );
    let start = Instant::now();
    let got = api.get("x").await.expect("a slow get still succeeds");
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert_eq!(got.metadata.name.as_deref(), Some("x"));
    // Latencies add up; a failure still comes after the delay.
    faults.add_latency(FaultMatch::any().name("x"), Duration::from_millis(200));
    faults.fail_next(
        1,
        FaultMatch::any().name("x"),
        FaultStatus::internal_error(),
    );
    let start = Instant::now();
    let s = status_of(api.get("x").await.expect_err("delayed failure"));
    assert_eq!(s.code, 500);
    assert!(start.elapsed() >= Duration::from_millis(500));
    faults.clear();
    api.get("x").await.expect("fast again");
}

#[tokio::test]
async fn compaction_gives_watches_an_in_stream_410() {
    let env = common::env().await;
    let faults = env.faults();
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let secrets: Api<Secret> = Api::namespaced(env.client(), "default");
    let old = list_rv(&api).await;
    api.create(&PostParams::default(), &cm("a", &[]))
        .await
        .expect("create");
    secrets
        .create(&PostParams::default(), &secret("s"))
        .await
        .expect("create secret");
    let now = list_rv(&api).await;
    faults.compact_history();

    let path = format!("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={old}");
    let (code, _, body) = tokio::time::timeout(
        WAIT,
        common::raw_full(&env, "GET", &path, None, "application/json", &[]),
    )
    .await
    .expect("the expired watch ends by itself");
    assert_eq!(code, 200, "never an HTTP 410 for a watch");
    let lines: Vec<&str> = body.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "exactly one event: {body}");
    let ev: serde_json::Value = serde_json::from_str(lines[0]).expect("event JSON");
    assert_eq!(ev["type"], "ERROR");
    assert_eq!(ev["object"]["kind"], "Status");
    assert_eq!(ev["object"]["code"], 410);
    assert_eq!(ev["object"]["reason"], "Expired");
    assert!(
        ev["object"]["message"]
            .as_str()
            .unwrap_or("")
            .starts_with(&format!("too old resource version: {old}")),
        "{ev}"
    );

    // An exact list from before the floor is expired too (an ordinary HTTP 410 there).
    let (code, status) = common::raw(
        &env,
        "GET",
        &format!(
            "/api/v1/namespaces/default/configmaps?resourceVersion={old}&resourceVersionMatch=Exact"
        ),
        None,
        "application/json",
    )
    .await;
    assert_eq!(code, 410, "{status}");
    assert_eq!(status["reason"], "Expired");

    // From the current resourceVersion everything works.
    let stream = api
        .watch(
            &WatchParams::default().timeout(10).disable_bookmarks(),
            &now,
        )
        .await
        .expect("watch from now");
    api.create(&PostParams::default(), &cm("b", &[]))
        .await
        .expect("create b");
    let mut stream = stream.boxed();
    let ev = tokio::time::timeout(WAIT, stream.try_next())
        .await
        .expect("event")
        .expect("ok")
        .expect("not ended");
    assert!(
        matches!(ev, kube::api::WatchEvent::Added(ref o) if o.metadata.name.as_deref() == Some("b")),
        "{ev:?}"
    );
    // The request log shows the expired watch as a 200 watch request.
    assert!(faults.count_requests(|r| cm_requests(r, Verb::Watch) && r.status == 200) >= 2);
    assert_eq!(
        faults.count_requests(|r| cm_requests(r, Verb::Watch) && r.status == 410),
        0
    );
}

#[tokio::test]
async fn close_watches_ends_open_streams() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let rv = list_rv(&api).await;
    let mut streams = Vec::new();
    for _ in 0..3 {
        streams.push(
            api.watch(
                &WatchParams::default().timeout(290).disable_bookmarks(),
                &rv,
            )
            .await
            .expect("watch")
            .boxed(),
        );
    }
    api.create(&PostParams::default(), &cm("a", &[]))
        .await
        .expect("create");
    for s in &mut streams {
        let ev = tokio::time::timeout(WAIT, s.try_next())
            .await
            .expect("event")
            .expect("ok");
        assert!(ev.is_some());
    }
    env.faults().close_watches();
    for s in &mut streams {
        let end = tokio::time::timeout(WAIT, s.try_next())
            .await
            .expect("the stream ends promptly");
        assert!(matches!(end, Ok(None)), "clean end of stream, got {end:?}");
    }
    // New watches still work.
    let s = api
        .watch(&WatchParams::default().timeout(10).disable_bookmarks(), &rv)
        .await
        .expect("watch again");
    let first = tokio::time::timeout(WAIT, s.boxed().try_next())
        .await
        .expect("event")
        .expect("ok");
    assert!(first.is_some(), "the create is replayed from history");
}

/// Runs kube-runtime's watcher over configmaps in `default`, forwarding its events.
fn spawn_watcher(
    api: Api<ConfigMap>,
) -> (
    mpsc::UnboundedReceiver<watcher::Event<ConfigMap>>,
    tokio::task::JoinHandle<()>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let handle = tokio::spawn(async move {
        let mut w = watcher(api, watcher::Config::default()).boxed();
        while let Some(ev) = w.next().await {
            if let Ok(ev) = ev
                && tx.send(ev).is_err()
            {
                return;
            }
        }
    });
    (rx, handle)
}

/// Waits for an event satisfying `pred`, skipping others.
async fn wait_for(
    rx: &mut mpsc::UnboundedReceiver<watcher::Event<ConfigMap>>,
    what: &str,
    pred: impl Fn(&watcher::Event<ConfigMap>) -> bool,
) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let ev = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
            .expect("watcher running");
        if pred(&ev) {
            return;
        }
    }
}

fn applied(name: &'static str) -> impl Fn(&watcher::Event<ConfigMap>) -> bool {
    move |ev| matches!(ev, watcher::Event::Apply(o) if o.metadata.name.as_deref() == Some(name))
}

#[tokio::test]
async fn request_log_shows_the_watcher_resuming_and_relisting() {
    let env = common::env().await;
    let faults = env.faults();
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let secrets: Api<Secret> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &cm("before", &[]))
        .await
        .expect("create");
    faults.clear_requests();

    let (mut rx, handle) = spawn_watcher(api.clone());
    wait_for(&mut rx, "InitDone", |e| {
        matches!(e, watcher::Event::InitDone)
    })
    .await;
    eventually("the first watch request", || {
        faults.count_requests(|r| cm_requests(r, Verb::Watch)) == 1
    })
    .await;
    assert_eq!(faults.count_requests(|r| cm_requests(r, Verb::List)), 1);
    let watch = faults
        .requests()
        .into_iter()
        .find(|r| cm_requests(r, Verb::Watch))
        .expect("a watch record");
    assert_eq!(watch.method, "GET");
    assert_eq!(watch.path, "/api/v1/namespaces/default/configmaps");
    assert!(watch.query.contains("watch=true"), "{}", watch.query);
    assert!(watch.query.contains("resourceVersion="), "{}", watch.query);

    // Closing watches: the watcher resumes from its resourceVersion without re-listing.
    api.create(&PostParams::default(), &cm("one", &[]))
        .await
        .expect("create");
    wait_for(&mut rx, "one", applied("one")).await;
    faults.close_watches();
    eventually("a second watch request", || {
        faults.count_requests(|r| cm_requests(r, Verb::Watch)) == 2
    })
    .await;
    api.create(&PostParams::default(), &cm("two", &[]))
        .await
        .expect("create");
    wait_for(&mut rx, "two", applied("two")).await;
    assert_eq!(
        faults.count_requests(|r| cm_requests(r, Verb::List)),
        1,
        "a closed watch is resumed, not re-listed"
    );

    // Compaction past the watcher's resourceVersion (writes elsewhere move it), then a closed
    // watch: the resume gets an in-stream 410 and the watcher re-lists — once.
    secrets
        .create(&PostParams::default(), &secret("elsewhere"))
        .await
        .expect("create secret");
    faults.compact_history();
    faults.close_watches();
    wait_for(&mut rx, "the re-list", |e| {
        matches!(e, watcher::Event::Init)
    })
    .await;
    wait_for(&mut rx, "InitDone after re-list", |e| {
        matches!(e, watcher::Event::InitDone)
    })
    .await;
    api.create(&PostParams::default(), &cm("three", &[]))
        .await
        .expect("create");
    wait_for(&mut rx, "three", applied("three")).await;
    assert_eq!(faults.count_requests(|r| cm_requests(r, Verb::List)), 2);
    let watches = faults.count_requests(|r| cm_requests(r, Verb::Watch));
    assert!(
        (3..=5).contains(&watches),
        "no watch loop: {watches} watch requests"
    );
    // Every watch request was answered 200: the 410 travelled inside the stream.
    assert!(
        faults
            .requests()
            .iter()
            .filter(|r| cm_requests(r, Verb::Watch))
            .all(|r| r.status == 200)
    );
    handle.abort();
}

#[tokio::test]
async fn injected_watch_and_list_failures_are_survived_by_the_watcher() {
    let env = common::env().await;
    let faults = env.faults();
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    // The first list fails twice with 503 and the first two watches with 500.
    faults.fail_next(
        2,
        FaultMatch::any().verb(Verb::List).resource("configmaps"),
        FaultStatus::service_unavailable(),
    );
    faults.fail_next(
        2,
        FaultMatch::any().verb(Verb::Watch).resource("configmaps"),
        FaultStatus::internal_error(),
    );
    api.create(&PostParams::default(), &cm("early", &[]))
        .await
        .expect("create");
    let (mut rx, handle) = spawn_watcher(api.clone());
    wait_for(&mut rx, "early in the initial list", |e| {
        matches!(e, watcher::Event::InitApply(o) if o.metadata.name.as_deref() == Some("early"))
    })
    .await;
    wait_for(&mut rx, "InitDone", |e| {
        matches!(e, watcher::Event::InitDone)
    })
    .await;
    api.create(&PostParams::default(), &cm("late", &[]))
        .await
        .expect("create");
    wait_for(&mut rx, "late", applied("late")).await;
    let injected: Vec<(Option<Verb>, u16)> = faults
        .requests()
        .iter()
        .filter(|r| r.injected)
        .map(|r| (r.verb, r.status))
        .collect();
    assert_eq!(
        injected,
        vec![
            (Some(Verb::List), 503),
            (Some(Verb::List), 503),
            (Some(Verb::Watch), 500),
            (Some(Verb::Watch), 500)
        ]
    );
    handle.abort();
}
