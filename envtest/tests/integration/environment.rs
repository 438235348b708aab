//! The Environment API: kubeconfig, bearer token, several servers at once, stop, health and
//! version endpoints, CRDs from files.

use crate::common;

use ctrl_envtest::Environment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};

#[tokio::test]
async fn kubeconfig_and_token() {
    let env = Environment::builder()
        .bearer_token("s3cret")
        .start()
        .await
        .unwrap();
    let (code, _, body) = common::raw_anonymous(
        &env,
        "GET",
        "/api/v1/namespaces",
        None,
        "application/json",
        &[],
    )
    .await;
    assert_eq!(code, 401);
    assert!(body.contains(r#""kind":"Status""#), "{body}");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("kubeconfig");
    env.write_kubeconfig(&path).unwrap();
    let kc = Kubeconfig::read_from(&path).unwrap();
    let cfg = kube::Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap();
    assert_eq!(cfg.default_namespace, "default");
    let client = kube::Client::try_from(cfg).unwrap();
    let nss: Api<Namespace> = Api::all(client);
    let names: Vec<String> = nss
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|n| n.metadata.name)
        .collect();
    assert_eq!(
        names,
        ["default", "kube-node-lease", "kube-public", "kube-system"]
    );
    // the client() carries the token as well
    let cms: Api<ConfigMap> = Api::default_namespaced(env.client());
    assert!(
        cms.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn environments_are_independent_and_stop() {
    let a = common::env().await;
    let b = common::env().await;
    assert_ne!(a.url(), b.url());
    let api_a: Api<ConfigMap> = Api::namespaced(a.client(), "default");
    api_a
        .create(&PostParams::default(), &common::cm("only-a", &[]))
        .await
        .unwrap();
    let api_b: Api<ConfigMap> = Api::namespaced(b.client(), "default");
    assert!(api_b.get_opt("only-a").await.unwrap().is_none());
    let addr = a.addr();
    a.stop();
    drop(a);
    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}

#[tokio::test]
async fn health_and_version() {
    let env = common::env().await;
    for p in ["/healthz", "/readyz", "/livez", "/readyz/ping"] {
        let (code, _, body) = common::raw_full(&env, "GET", p, None, "application/json", &[]).await;
        assert_eq!((code, body.as_str()), (200, "ok"), "{p}");
    }
    let info = env.client().apiserver_version().await.unwrap();
    assert_eq!(info.major, "1");
    assert_eq!(info.minor, "35");
    let (code, v) = common::raw(
        &env,
        "GET",
        "/api/v1/nosuchthings",
        None,
        "application/json",
    )
    .await;
    assert_eq!(code, 404);
    assert_eq!(
        v["message"],
        "the server could not find the requested resource"
    );
}

#[tokio::test]
async fn crds_from_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let crd = serde_json::to_value(common::widget_crd(true)).unwrap();
    let yaml = format!(
        "# a comment\n---\n{}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ignored\n",
        serde_json::to_string(&crd).unwrap()
    );
    std::fs::write(dir.path().join("widgets.yaml"), yaml).unwrap();
    std::fs::write(dir.path().join("README.md"), "not a manifest").unwrap();
    let env = Environment::builder()
        .crd_dir(dir.path())
        .start()
        .await
        .unwrap();
    let api: Api<kube::core::DynamicObject> =
        Api::namespaced_with(env.client(), "default", &common::widget_ar());
    api.create(
        &PostParams::default(),
        &common::widget("w", serde_json::json!({"size": 1})),
    )
    .await
    .unwrap();

    // a bad CRD fails start with a useful error
    let mut bad = crd.clone();
    bad["metadata"]["name"] = serde_json::json!("wrong.example.com");
    std::fs::write(
        dir.path().join("widgets.yaml"),
        serde_json::to_string(&bad).unwrap(),
    )
    .unwrap();
    let err = Environment::builder()
        .crd_path(dir.path().join("widgets.yaml"))
        .start()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("wrong.example.com"), "{err}");
}

#[tokio::test]
async fn verbs_outside_discovery_are_method_not_allowed() {
    let env = common::env().await;
    let (code, v) = common::raw(
        &env,
        "DELETE",
        "/api/v1/namespaces",
        Some("{}"),
        "application/json",
    )
    .await;
    assert_eq!(code, 405, "{v}");
    assert_eq!(v["reason"], "MethodNotAllowed");
    let (code, _) = common::raw(
        &env,
        "POST",
        "/api/v1/configmaps",
        Some("{}"),
        "application/json",
    )
    .await;
    assert_eq!(code, 405, "no create across all namespaces");
    let (code, _) = common::raw(
        &env,
        "PUT",
        "/api/v1/namespaces/default/configmaps",
        Some("{}"),
        "application/json",
    )
    .await;
    assert_eq!(code, 405);
    let nss: Api<Namespace> = Api::all(env.client());
    assert_eq!(nss.list(&Default::default()).await.unwrap().items.len(), 4);
}

#[tokio::test]
async fn crd_from_yaml_text() {
    let yaml = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.org
spec:
  group: example.org
  scope: Cluster
  names:
    plural: gadgets
    kind: Gadget
  versions:
    - name: v1alpha1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"#;
    let env = Environment::builder().crd_yaml(yaml).start().await.unwrap();
    let ar = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("example.org", "v1alpha1", "Gadget"),
        "gadgets",
    );
    let api: Api<kube::core::DynamicObject> = Api::all_with(env.client(), &ar);
    let g = kube::core::DynamicObject::new("g1", &ar)
        .data(serde_json::json!({"spec": {"anything": [1, 2]}}));
    let made = api.create(&PostParams::default(), &g).await.unwrap();
    assert_eq!(made.data["spec"]["anything"], serde_json::json!([1, 2]));
    assert!(made.metadata.namespace.is_none());
    let err = Environment::builder()
        .crd_yaml("kind: [unclosed")
        .start()
        .await
        .unwrap_err();
    assert!(matches!(err, ctrl_envtest::Error::Parse { .. }), "{err}");
}
