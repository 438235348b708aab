//! The Memcached webhooks on an in-process API server: served by the operator's
//! manager, registered from what it serves (as `cargo run` and `cargo ctrl manifests`
//! register them), called by the API server on every create.

use ctrl::cli::envtest::LocalWebhooks;
use ctrl::envtest::Environment;
use ctrl::manager::Options;
use kube::api::{Api, PostParams};
use kube::CustomResourceExt;
use memcached_operator::api::v1alpha1::memcached::{self, Memcached};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_api_server_calls_the_webhooks() {
    let env = Environment::builder().crd(Memcached::crd()).start().await.expect("envtest");
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
    let api: Api<Memcached> = Api::namespaced(env.client(), "default");
    // Created with `spec.size` unset: the defaulting webhook fills it in.
    let mut obj = memcached::sample();
    obj.spec.size = None;
    let created = api.create(&PostParams::default(), &obj).await.expect("create");
    assert_eq!(created.spec.size, Some(1));
    // An invalid `spec.size`: the validating webhook rejects it.
    let mut bad = memcached::sample();
    bad.metadata.name = Some("invalid".into());
    bad.spec.size = Some(5);
    match api.create(&PostParams::default(), &bad).await {
        Err(kube::Error::Api(s)) => assert!(s.message.contains("spec.size"), "{}", s.message),
        other => panic!("expected a rejection, got {other:?}"),
    }

    stop.cancel();
    running.await.expect("manager task").expect("manager stopped cleanly");
}
