//! The in-memory transport (`Environment::in_memory_client`): a real `kube::Client` whose
//! requests are handed to the server's handler with no socket. What it sees must be what HTTP
//! gives: the same objects and resourceVersions, the same `Status` errors, injected faults
//! with `Retry-After`, watch streams, and the same request log.

use crate::common;

use common::{cm, status_of};
use ctrl_envtest::{FaultMatch, FaultStatus, Verb};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, PostParams, WatchEvent, WatchParams};

#[tokio::test]
async fn in_memory_and_http_clients_see_the_same_server() {
    let env = common::env().await;
    let mem: Api<ConfigMap> = Api::default_namespaced(env.in_memory_client());
    let http: Api<ConfigMap> = Api::default_namespaced(env.client());

    let created = mem
        .create(&PostParams::default(), &cm("a", &[("k", "v")]))
        .await
        .expect("create in memory");
    let over_http = http.get("a").await.expect("get over HTTP");
    assert_eq!(created, over_http);
    let listed = mem.list(&ListParams::default()).await.expect("list");
    assert_eq!(listed.items, vec![over_http]);

    // An error is the server's Status, decoded as over HTTP.
    let dup = mem.create(&PostParams::default(), &cm("a", &[])).await;
    let status = status_of(dup.expect_err("a second create conflicts"));
    assert_eq!(
        (status.code, status.reason.as_str()),
        (409, "AlreadyExists")
    );
    let bad = mem
        .create(&PostParams::default(), &cm("Not_A_Name", &[]))
        .await;
    assert_eq!(status_of(bad.expect_err("an invalid name")).code, 422);

    // Every request went through the request log, as over HTTP.
    let creates = env
        .faults()
        .count_requests(|r| r.verb == Some(Verb::Create));
    assert_eq!(creates, 3);
}

#[tokio::test]
async fn in_memory_requests_meet_injected_faults_and_watches_stream() {
    let env = common::env().await;
    let mem: Api<ConfigMap> = Api::default_namespaced(env.in_memory_client());
    env.faults().fail_next(
        1,
        FaultMatch::any().verb(Verb::Create),
        FaultStatus::too_many_requests(7),
    );
    let throttled = mem.create(&PostParams::default(), &cm("b", &[])).await;
    let status = status_of(throttled.expect_err("the injected 429"));
    assert_eq!(status.code, 429);
    let retry = status.details.map(|d| d.retry_after_seconds);
    assert_eq!(retry, Some(7));

    let rv = common::list_rv(&mem).await;
    let stream = mem
        .watch(&WatchParams::default(), &rv)
        .await
        .expect("watch in memory");
    let mut stream = stream.boxed();
    mem.create(&PostParams::default(), &cm("b", &[]))
        .await
        .expect("create after the fault");
    match stream.try_next().await.expect("a watch event") {
        Some(WatchEvent::Added(o)) => assert_eq!(o.metadata.name.as_deref(), Some("b")),
        other => panic!("expected ADDED b, got {other:?}"),
    }
    // Closing every watch ends the in-memory stream as it would a connection's.
    env.faults().close_watches();
    assert!(stream.next().await.is_none(), "the watch ends");
}
