//! The Memcached controller on an in-process API server (ctrl-envtest): the operator's
//! manager runs as `cargo run` runs it, and everything is checked through a kube
//! client, as a user would see it.

use std::time::Duration;

use ctrl::cli::envtest::LocalWebhooks;
use ctrl::envtest::Environment;
use ctrl::manager::Options;
use kube::api::{Api, PostParams};
use kube::CustomResourceExt;
use memcached_operator::api::v1alpha1::memcached::{self, CONDITION_AVAILABLE, Memcached};

/// Whether `obj`'s `Available` condition is `True`.
fn available(obj: &Memcached) -> bool {
    let conditions = obj.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    conditions.iter().any(|c| c.type_ == CONDITION_AVAILABLE && c.status == "True")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sample_becomes_available() {
    let env = Environment::builder()
        .crd(Memcached::crd())
        .simulate_pods(true)
        .start()
        .await
        .expect("envtest");
    let webhooks = LocalWebhooks::new(Default::default()).expect("webhook server");
    let opts = webhooks.options(Options {
        metrics_bind_address: "0".into(),
        health_probe_bind_address: "0".into(),
        ..Default::default()
    });
    let mgr = memcached_operator::manager(env.client(), opts).expect("manager");
    webhooks.install(env.client(), &mgr, "memcached-operator").await.expect("webhooks");
    let stop = ctrl::CancellationToken::new();
    let running = {
        let (mgr, stop) = (mgr.clone(), stop.clone());
        tokio::spawn(async move { mgr.start(stop).await })
    };
    mgr.elected().await;

    let sample = memcached::sample();
    let api: Api<Memcached> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &sample).await.expect("create the sample");
    let name = sample.metadata.name.clone().unwrap_or_default();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let got = api.get(&name).await.expect("get the sample");
        if available(&got) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "never Available: {:?}", got.status);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.cancel();
    running.await.expect("manager task").expect("manager stopped cleanly");
}
