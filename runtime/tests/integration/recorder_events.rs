//! The Events recorder against ctrl-envtest: Events written through
//! `mgr.event_recorder` appear as `events.k8s.io/v1` Events with the right
//! fields, repeats fold into a series, a full queue drops instead of blocking, and
//! Events still queued when the manager stops are flushed.

use crate::manager_common;

use std::time::Duration;

use ctrl_envtest::wait::Wait;
use ctrl_runtime::recorder::{EventType, Provider};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::api::events::v1::Event;
use kube::api::{Api, ListParams, PostParams};
use manager_common::{env, finished, manager, quiet, run};
use tokio_util::sync::CancellationToken;

async fn configmap(client: &kube::Client, name: &str) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    Api::<ConfigMap>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &cm)
        .await
        .expect("create configmap")
}

/// Polls (up to 10 s) until the namespace holds `n` Events for which `keep` holds.
async fn wait_for_events(
    client: &kube::Client,
    ns: &str,
    n: usize,
    keep: impl Fn(&Event) -> bool,
) -> Vec<Event> {
    let api = Api::<Event>::namespaced(client.clone(), ns);
    let events = || async {
        let list = api.list(&ListParams::default()).await.expect("list events");
        list.items
            .into_iter()
            .filter(|e| keep(e))
            .collect::<Vec<Event>>()
    };
    // On timeout: what there is, for the caller's assertion to show.
    let wait = Wait::new().timeout(Duration::from_secs(10));
    match wait.try_until(events, |events| events.len() >= n).await {
        Ok(events) => events,
        Err(timed_out) => timed_out.last,
    }
}

#[tokio::test]
async fn an_event_is_written_with_the_fields_of_the_events_api() {
    let env = env().await;
    let mgr = manager(&env, quiet());
    let cm = configmap(&env.client(), "recorded").await;
    let recorder = mgr.event_recorder("configmap-controller");
    assert_eq!(recorder.controller(), "configmap-controller");
    recorder.event(
        &cm,
        EventType::Warning,
        "ProbeFailed",
        "Probe",
        "endpoint answered 503",
    );

    let events = wait_for_events(&env.client(), "default", 1, |_| true).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(e.type_.as_deref(), Some("Warning"));
    assert_eq!(e.reason.as_deref(), Some("ProbeFailed"));
    assert_eq!(e.action.as_deref(), Some("Probe"));
    assert_eq!(e.note.as_deref(), Some("endpoint answered 503"));
    assert_eq!(
        e.reporting_controller.as_deref(),
        Some("configmap-controller")
    );
    let instance = e.reporting_instance.as_deref().unwrap_or_default();
    assert!(
        instance.starts_with("configmap-controller"),
        "reportingInstance {instance:?}"
    );
    assert!(e.event_time.is_some());
    let regarding = e.regarding.as_ref().expect("regarding");
    assert_eq!(regarding.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(regarding.api_version.as_deref(), Some("v1"));
    assert_eq!(regarding.namespace.as_deref(), Some("default"));
    assert_eq!(regarding.name.as_deref(), Some("recorded"));
    assert_eq!(regarding.uid, cm.metadata.uid);
    assert!(e.related.is_none());
}

#[tokio::test]
async fn a_related_object_and_a_cluster_scoped_object() {
    let env = env().await;
    let mgr = manager(&env, quiet());
    let cm = configmap(&env.client(), "child").await;
    let ns = Api::<Namespace>::all(env.client())
        .get("default")
        .await
        .expect("namespace");
    let recorder = mgr.event_recorder("ns-controller");
    recorder.event_with_related(&ns, &cm, EventType::Normal, "Adopted", "Adopt", "");

    // A cluster-scoped object's Events go to the "default" namespace.
    let events = wait_for_events(&env.client(), "default", 1, |_| true).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let e = &events[0];
    assert_eq!(e.type_.as_deref(), Some("Normal"));
    assert_eq!(e.note, None, "an empty note is left out");
    let regarding = e.regarding.as_ref().expect("regarding");
    assert_eq!(regarding.kind.as_deref(), Some("Namespace"));
    assert_eq!(regarding.name.as_deref(), Some("default"));
    let related = e.related.as_ref().expect("related");
    assert_eq!(related.kind.as_deref(), Some("ConfigMap"));
    assert_eq!(related.name.as_deref(), Some("child"));
}

#[tokio::test]
async fn a_repeated_event_becomes_a_series() {
    let env = env().await;
    let mgr = manager(&env, quiet());
    let cm = configmap(&env.client(), "flapping").await;
    let recorder = mgr.event_recorder("flap-controller");
    for _ in 0..3 {
        recorder.event(&cm, EventType::Normal, "Flapped", "Probe", "again");
    }
    let series = |e: &Event| e.series.as_ref().is_some_and(|s| s.count == 3);
    let events = wait_for_events(&env.client(), "default", 1, series).await;
    assert_eq!(events.len(), 1, "one Event with series.count 3");
    let all = wait_for_events(&env.client(), "default", 1, |_| true).await;
    assert_eq!(all.len(), 1, "repeats patch the first Event: {all:?}");
}

#[tokio::test]
async fn a_full_queue_drops_new_events_instead_of_blocking() {
    let env = env().await;
    let provider = Provider::with_queue_length(env.client(), 2);
    assert!(
        !provider.is_started(),
        "nothing runs before the first Event"
    );
    let cm = configmap(&env.client(), "noisy").await;
    let recorder = provider.event_recorder("noisy-controller");
    // The test runtime has one thread: the writer cannot run until we await, so the
    // queue holds two and the other eight are dropped.
    for i in 0..10 {
        recorder.event(&cm, EventType::Normal, format!("Reason{i}"), "Act", "");
    }
    assert!(provider.is_started());
    assert_eq!(provider.dropped(), 8);
    provider.stop(Duration::from_secs(10)).await;
    let events = wait_for_events(&env.client(), "default", 2, |_| true).await;
    let mut reasons: Vec<_> = events.iter().filter_map(|e| e.reason.clone()).collect();
    reasons.sort();
    assert_eq!(reasons, ["Reason0", "Reason1"]);

    // After stop, Events are dropped.
    recorder.event(&cm, EventType::Normal, "Late", "Act", "");
    assert_eq!(provider.dropped(), 9);
}

#[tokio::test]
async fn events_queued_when_the_manager_stops_are_flushed() {
    let env = env().await;
    let mgr = manager(&env, quiet());
    let cm = configmap(&env.client(), "at-shutdown").await;
    let ctx = CancellationToken::new();
    let running = run(&mgr, &ctx);
    tokio::time::timeout(Duration::from_secs(10), mgr.elected())
        .await
        .expect("elected");
    let recorder = mgr.event_recorder("shutdown-controller");
    for i in 0..50 {
        recorder.event(&cm, EventType::Normal, format!("Step{i}"), "Act", "");
    }
    ctx.cancel();
    finished(running).await.expect("clean stop");
    // Every Event was written before `start` returned: list once, no polling.
    let events = Api::<Event>::namespaced(env.client(), "default")
        .list(&ListParams::default())
        .await
        .expect("list events");
    assert_eq!(events.items.len(), 50);
}
