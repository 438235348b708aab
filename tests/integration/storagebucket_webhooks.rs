//! Issue 9 in the StorageBucket example: its defaulting and validating webhooks,
//! served by the operator's manager (self-signed certificate, as the demo does) and
//! registered with ctrl-envtest, which calls them for every create and update.
//! Everything is checked through a plain kube client, as a user would see it.

use crate::common;
use crate::examples_storagebucket as operator;

use std::time::Duration;

use common::{bucket, buckets_api, create_bucket};
use ctrl::manager::Options;
use kube::api::{Patch, PatchParams, PostParams};
use operator::controller::Config;
use serde_json::json;
use tokio_util::sync::CancellationToken;

const MESSAGE: &str = "must be an http:// or https:// URL";

/// The rejection a write got: (code, message).
fn rejection<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> (u16, String) {
    match r {
        Err(kube::Error::Api(s)) => (s.code, s.message),
        other => panic!("expected the webhook to reject the write, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buckets_are_defaulted_and_non_http_endpoints_rejected() {
    let env = common::env().await;
    let (server, ca_pem) = common::webhook_server();
    common::install_webhooks(env.client(), &server, &ca_pem).await;
    let opts = Options {
        metrics_bind_address: "0".into(),
        webhook_server: Some(server.clone()),
        ..Default::default()
    };
    let cfg = Config {
        // a name of its own: controller names are unique per process (Go's checkName)
        name: "storagebucket-webhooks".into(),
        probe_interval: Duration::from_secs(60),
    };
    let mgr = operator::setup::manager(env.client(), opts, &cfg, true).expect("manager");
    let paths: Vec<String> = common::registrations()
        .into_iter()
        .map(|r| r.path)
        .collect();
    let [mutate, validate] = <[String; 2]>::try_from(paths).expect("two webhooks");
    assert_eq!(mutate, "/mutate-storage-example-com-v1-storagebucket");
    assert_eq!(server.paths(), vec![mutate, validate]);
    let stop = CancellationToken::new();
    let running = {
        let (mgr, stop) = (mgr.clone(), stop.clone());
        tokio::spawn(async move { mgr.start(stop).await })
    };
    tokio::time::timeout(Duration::from_secs(15), mgr.elected())
        .await
        .expect("elected");
    let api = buckets_api(env.client());

    // No probe path: the defaulting webhook fills in /healthz.
    let created = create_bucket(&api, "photos", "http://127.0.0.1:1/buckets/photos").await;
    assert_eq!(created.data["spec"]["probePath"], "/healthz");
    let stored = api.get("photos").await.expect("get");
    assert_eq!(stored.data["spec"]["probePath"], "/healthz");

    // A probe path of its own is kept.
    let own = bucket(
        "backups",
        json!({"endpoint": "https://objects.example.com/backups", "probePath": "/ready"}),
    );
    let created = api
        .create(&PostParams::default(), &own)
        .await
        .expect("create");
    assert_eq!(created.data["spec"]["probePath"], "/ready");

    // ftp:// is rejected with the validator's message, and nothing is stored.
    let ftp = bucket(
        "archive",
        json!({"endpoint": "ftp://objects.example.com/archive"}),
    );
    let (code, message) = rejection(api.create(&PostParams::default(), &ftp).await);
    assert_eq!(code, 422, "{message}");
    assert!(message.contains(MESSAGE), "{message}");
    assert!(
        message.contains("ftp://objects.example.com/archive"),
        "{message}"
    );
    assert!(api.get_opt("archive").await.expect("get").is_none());

    // So is an update to a non-http endpoint; the stored bucket is unchanged.
    let patch = json!({"spec": {"endpoint": "gopher://objects.example.com/photos"}});
    let (code, message) = rejection(
        api.patch("photos", &PatchParams::default(), &Patch::Merge(&patch))
            .await,
    );
    assert_eq!(code, 422, "{message}");
    assert!(message.contains(MESSAGE), "{message}");
    let stored = api.get("photos").await.expect("get");
    assert_eq!(
        stored.data["spec"]["endpoint"],
        "http://127.0.0.1:1/buckets/photos"
    );

    stop.cancel();
    running
        .await
        .expect("manager task")
        .expect("manager stopped cleanly");
}
