//! The StorageBucket example as an integration test. The operator's modules run
//! against ctrl-envtest and a local object store; everything the test checks it
//! reads through its own kube client, as `kubectl` would, looking at the wire
//! format (`status.available`, `status.lastProbeTime`, `status.conditions`), not
//! at the example's types or internals.

use crate::common;
use crate::examples_storagebucket as operator;

use std::time::Duration;

use common::{WAIT, available, buckets_api, create_bucket, status, wait_until};
use ctrl::manager::{Error as ManagerError, Options};
use ctrl::webhook::Server;
use ctrl_envtest::Environment;
use ctrl_envtest::wait::Wait;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams};
use operator::controller::Config;
use operator::crd;
use operator::store::ObjectStore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The operator's manager on `env`, running until `stop`; with the admission
/// webhooks on `webhooks` if given.
async fn operator(
    env: &Environment,
    name: &str,
    stop: &CancellationToken,
    webhooks: Option<Server>,
) -> JoinHandle<Result<(), ManagerError>> {
    let with_webhooks = webhooks.is_some();
    let opts = Options {
        metrics_bind_address: "0".into(),
        health_probe_bind_address: "0".into(),
        webhook_server: webhooks,
        ..Default::default()
    };
    let cfg = Config {
        name: name.into(),
        probe_interval: Duration::from_millis(200),
    };
    let mgr = operator::setup::manager(env.client(), opts, &cfg, with_webhooks).expect("manager");
    let stop = stop.clone();
    tokio::spawn(async move { mgr.start(stop).await })
}

/// Waits (up to [`WAIT`]) for an Event of `type_` and `reason` regarding bucket
/// `name`: the recorder writes Events in the background, after the status patch.
async fn wait_for_event(client: &kube::Client, name: &str, type_: &str, reason: &str) {
    let api = Api::<Event>::namespaced(client.clone(), "default");
    let seen = || async {
        let events = api.list(&ListParams::default()).await.expect("list events");
        let about = |e: &Event| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name);
        let seen: Vec<(String, String)> = events
            .items
            .into_iter()
            .filter(about)
            .map(|e| (e.type_.unwrap_or_default(), e.reason.unwrap_or_default()))
            .collect();
        seen
    };
    let what = format!("a {type_} {reason} Event regarding {name}");
    let has = |seen: &Vec<(String, String)>| seen.iter().any(|(t, r)| t == type_ && r == reason);
    Wait::new().timeout(WAIT).until(&what, seen, has).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buckets_become_available_flip_with_the_store_and_finalize_on_delete() {
    let stop = CancellationToken::new();
    let env = common::env().await;
    let store = ObjectStore::start(stop.clone()).await.expect("store");
    let running = operator(&env, "storagebucket-flip", &stop, None).await;

    let client = env.client();
    let api = buckets_api(client.clone());
    for name in ["photos", "backups"] {
        create_bucket(&api, name, &store.bucket_url(name)).await;
    }

    // Both become available, with the finalizer, a probe time and a True condition.
    for name in ["photos", "backups"] {
        let got = wait_until(&api, name, "available", |o| available(o) == Some(true)).await;
        let got = got.as_ref();
        let s = status(got);
        assert!(s["lastProbeTime"].is_string(), "{s}");
        assert_eq!(s["conditions"][0]["type"], "Available");
        assert_eq!(s["conditions"][0]["status"], "True");
        assert_eq!(s["conditions"][0]["reason"], "Reachable");
        let finalizers = got.map(|o| o.metadata.finalizers.clone().unwrap_or_default());
        assert_eq!(
            finalizers,
            Some(vec!["storage.example.com/finalizer".to_string()])
        );
    }

    // The store fails: the next probes flip both to unavailable.
    store.set_healthy(false);
    for name in ["photos", "backups"] {
        let got = wait_until(&api, name, "unavailable", |o| available(o) == Some(false)).await;
        let s = status(got.as_ref());
        assert_eq!(s["conditions"][0]["status"], "False");
        assert_eq!(s["conditions"][0]["reason"], "EndpointError");
        assert!(
            s["conditions"][0]["message"]
                .as_str()
                .is_some_and(|m| m.contains("503")),
            "{s}"
        );
    }
    // ... and each change was recorded as an Event.
    wait_for_event(&client, "photos", "Normal", "Available").await;
    wait_for_event(&client, "photos", "Warning", "Unavailable").await;

    // It comes back.
    store.set_healthy(true);
    wait_until(&api, "photos", "available again", |o| {
        available(o) == Some(true)
    })
    .await;

    // Deleting a bucket runs the finalizer, which lets the object go.
    api.delete("photos", &DeleteParams::default())
        .await
        .expect("delete");
    wait_until(&api, "photos", "deleted", |o| o.is_none()).await;
    // The finalizer ran: it recorded the release.
    wait_for_event(&client, "photos", "Normal", "Released").await;
    // The other bucket is untouched.
    assert_eq!(
        available(api.get_opt("backups").await.expect("get").as_ref()),
        Some(true)
    );

    stop.cancel();
    running
        .await
        .expect("manager task")
        .expect("manager stopped cleanly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_endpoint_is_reported_not_retried_into_a_crash() {
    let stop = CancellationToken::new();
    let env = common::env().await;
    let running = operator(&env, "storagebucket-bad", &stop, None).await;
    let api = buckets_api(env.client());
    create_bucket(&api, "not-a-url", "::nonsense::").await;
    create_bucket(&api, "tls", "https://127.0.0.1:1/b").await;
    // A port nothing listens on: connection refused.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = closed.local_addr().expect("addr").port();
    drop(closed);
    create_bucket(&api, "refused", &format!("http://127.0.0.1:{port}/b")).await;

    for (name, reason) in [
        ("not-a-url", "InvalidEndpoint"),
        ("tls", "InvalidEndpoint"),
        ("refused", "Unreachable"),
    ] {
        let got = wait_until(&api, name, "probed", |o| available(o) == Some(false)).await;
        assert_eq!(status(got.as_ref())["conditions"][0]["reason"], reason);
    }
    stop.cancel();
    running
        .await
        .expect("manager task")
        .expect("manager stopped cleanly");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_demo_world_and_the_printed_crd() {
    // --print-crd prints a CRD that parses back and that envtest installs.
    let yaml = ctrl::cli::print::crds_yaml(&[crd::crd()]).expect("crd yaml");
    let parsed: CustomResourceDefinition = serde_saphyr::from_str(&yaml).expect("parse crd yaml");
    assert_eq!(
        parsed.metadata.name.as_deref(),
        Some("storagebuckets.storage.example.com")
    );

    // The demo: envtest + store + samples, and a kubeconfig a separate client can use.
    let stop = CancellationToken::new();
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = dir.path().join("kubeconfig");
    let builder = Environment::builder().crd(crd::crd());
    let env = ctrl::cli::envtest::start(builder, &kubeconfig, "StorageBucket CRD")
        .await
        .expect("demo envtest");
    let world = operator::demo::start(env.client(), &kubeconfig, Duration::ZERO, stop.clone())
        .await
        .expect("demo world");
    // ... with the webhooks served and registered, as the demo does.
    let (server, ca_pem) = common::webhook_server();
    common::install_webhooks(env.client(), &server, &ca_pem).await;
    let running = operator(&env, "storagebucket-demo", &stop, Some(server)).await;
    world.create_samples().await.expect("samples");

    let kc = kube::config::Kubeconfig::read_from(&kubeconfig).expect("read kubeconfig");
    let cfg = kube::Config::from_custom_kubeconfig(kc, &Default::default())
        .await
        .expect("config from kubeconfig");
    let api = buckets_api(kube::Client::try_from(cfg).expect("client"));
    for name in operator::demo::SAMPLE_BUCKETS {
        let got = wait_until(&api, name, "available", |o| available(o) == Some(true)).await;
        // Created without a probe path: the defaulting webhook filled it in.
        let spec = got.map(|o| o.data["spec"].clone()).unwrap_or_default();
        assert_eq!(spec["probePath"], "/healthz", "{spec}");
    }
    // The ftp:// sample was rejected by the validating webhook: it does not exist.
    let rejected = api
        .get_opt(operator::demo::REJECTED_BUCKET)
        .await
        .expect("get");
    assert!(rejected.is_none(), "{rejected:?}");
    stop.cancel();
    running
        .await
        .expect("manager task")
        .expect("manager stopped cleanly");
}
