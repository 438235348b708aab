//! The cache's own gauges (`controller_runtime_cache_objects`,
//! `controller_runtime_cache_approximate_bytes`, labels `group`/`version`/`kind`), scraped
//! from the manager's `/metrics` over HTTP while its cache holds ConfigMaps from envtest:
//! they follow creates and deletes seen through the watch, and the byte estimate is of the
//! order of the objects' size. One test per binary: the registry is process-wide.

mod manager_common;

use std::time::Duration;

use ctrl_envtest::wait::Wait;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, PostParams};
use manager_common::{env, get, launch, manager, with_metrics};

const SERIES: &str = r#"{group="",kind="ConfigMap",version="v1"}"#;

/// The value of `name{SERIES}` on the metrics page, if present.
async fn scrape(addr: std::net::SocketAddr, name: &str) -> Option<f64> {
    let body = get(addr, "/metrics").await.body;
    let prefix = format!("{name}{SERIES} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .and_then(|v| v.trim().parse().ok())
}

/// Polls until the objects gauge reads `want` (10 s at most).
async fn objects_reach(addr: std::net::SocketAddr, want: f64) {
    let gauge = || scrape(addr, "controller_runtime_cache_objects");
    let what = format!("controller_runtime_cache_objects {want}");
    Wait::new()
        .timeout(Duration::from_secs(10))
        .until(&what, gauge, |got| *got == Some(want))
        .await;
}

#[tokio::test]
async fn cache_gauges_follow_what_the_informer_holds() {
    let env = env().await;
    let cms: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let payload = "x".repeat(2_000);
    for i in 0..10 {
        let mut cm = ConfigMap::default();
        cm.metadata.name = Some(format!("cm-{i}"));
        cm.data = Some([("payload".to_string(), payload.clone())].into());
        cms.create(&PostParams::default(), &cm)
            .await
            .expect("create");
    }
    let mgr = manager(&env, with_metrics());
    let informer = mgr.cache().get_informer::<ConfigMap>();
    let running = launch(&mgr).await;
    let addr = mgr.metrics_addr().expect("metrics server bound");
    assert!(informer.wait_for_sync(Default::default()).await);
    objects_reach(addr, 10.0).await;
    let bytes = scrape(addr, "controller_runtime_cache_approximate_bytes")
        .await
        .expect("bytes gauge present");
    assert!(
        (10.0 * 2_000.0..10.0 * 20_000.0).contains(&bytes),
        "approximate bytes {bytes} is not of the order of 10 x 2 KB objects"
    );
    cms.delete("cm-0", &DeleteParams::default())
        .await
        .expect("delete");
    objects_reach(addr, 9.0).await;
    running.stop().await.expect("clean stop");
}
