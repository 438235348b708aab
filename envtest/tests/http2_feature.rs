//! ctrl-envtest's `http2` feature, both sides, on the TLS port. With it (the default) ALPN
//! offers `h2` then `http/1.1`, and a client offering both gets h2 (what h2 then serves is
//! `h2.rs`'s). Without it (`cargo test -p ctrl-envtest --no-default-features --test
//! http2_feature`, which `.ci/run` runs; ctrl's `envtest` feature builds it so) ALPN offers only
//! `http/1.1`: a client offering both gets HTTP/1.1 and one offering only `h2` fails the
//! handshake. Either way the real clients work over TLS: a kube client from the admin's
//! kubeconfig, and kubectl (whose Go client offers `h2` first and falls back to HTTP/1.1),
//! each writing and reading what the other wrote (kubectl's `create` sends protobuf).

mod common;
#[path = "common/kubectl_cli.rs"]
mod kubectl_cli;

use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

#[tokio::test]
async fn alpn_offers_h2_only_with_the_feature() {
    let env = common::env().await;
    let (_, both) = common::tls::connect(&env, &[b"h2", b"http/1.1"]).await;
    let (_, http1) = common::tls::connect(&env, &[b"http/1.1"]).await;
    assert_eq!(http1.as_deref(), Some(&b"http/1.1"[..]));
    let only_h2 = common::tls::try_connect(&env, &[b"h2"]).await;
    if cfg!(feature = "http2") {
        assert_eq!(both.as_deref(), Some(&b"h2"[..]));
        let picked = only_h2.expect("an h2-only client is served with the feature");
        assert_eq!(picked.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    } else {
        assert_eq!(both.as_deref(), Some(&b"http/1.1"[..]));
        assert!(
            only_h2.is_err(),
            "an h2-only client must fail the handshake without the feature"
        );
    }
}

#[tokio::test]
async fn the_kube_client_and_kubectl_work_over_tls() {
    let env = common::env().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("kubeconfig");
    env.write_kubeconfig(&path).expect("kubeconfig");
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).expect("read kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .expect("config");
    assert_eq!(config.cluster_url.scheme_str(), Some("https"));
    let client = kube::Client::try_from(config).expect("client");
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(
        &PostParams::default(),
        &common::cm("by-kube", &[("a", "1")]),
    )
    .await
    .expect("create over TLS");

    let Some(kubectl) = kubectl_cli::Kubectl::new(&env) else {
        return;
    };
    let read = kubectl
        .run(&["get", "configmap", "by-kube", "-o", "jsonpath={.data.a}"])
        .await;
    assert!(read.ok, "{read:?}");
    assert_eq!(read.stdout, "1");
    let created = kubectl
        .run(&["create", "configmap", "by-kubectl", "--from-literal=b=2"])
        .await;
    assert!(created.ok, "{created:?}");
    let got = api.get("by-kubectl").await.expect("kubectl's ConfigMap");
    assert_eq!(
        got.data.and_then(|d| d.get("b").cloned()).as_deref(),
        Some("2")
    );
}
