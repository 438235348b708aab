//! Trace context through the API server (issue 34): the request log records the W3C
//! `traceparent` header a client sends, and with `stamp_traceparent` a create or update
//! carries it onto the object as KEP-5915's `tracing.k8s.io/traceparent` annotation; without
//! it the object is written as sent.

use ctrl_envtest::Environment;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const ANNOTATION: &str = "tracing.k8s.io/traceparent";

/// The environment's admin client, sending `traceparent: TP` with every request.
fn traced(env: &Environment) -> kube::Client {
    let mut cfg = env.config();
    let token = format!("Bearer {}", env.admin_token());
    cfg.headers.push((
        http::header::AUTHORIZATION,
        http::HeaderValue::from_str(&token).expect("token"),
    ));
    cfg.headers.push((
        http::HeaderName::from_static("traceparent"),
        http::HeaderValue::from_static(TP),
    ));
    kube::Client::try_from(cfg).expect("client")
}

async fn create(env: &Environment, name: &str) -> ConfigMap {
    let cms: Api<ConfigMap> = Api::namespaced(traced(env), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.into());
    cms.create(&PostParams::default(), &cm)
        .await
        .expect("create")
}

fn annotation(cm: &ConfigMap) -> Option<&str> {
    cm.metadata
        .annotations
        .as_ref()?
        .get(ANNOTATION)
        .map(String::as_str)
}

#[tokio::test]
async fn the_traceparent_header_is_logged_and_stamped_when_asked() {
    let env = Environment::builder()
        .stamp_traceparent(true)
        .start()
        .await
        .expect("envtest");
    let cm = create(&env, "stamped").await;
    assert_eq!(annotation(&cm), Some(TP));
    let logged = env
        .faults()
        .requests()
        .into_iter()
        .find(|r| r.method == "POST" && r.path.ends_with("/configmaps"))
        .expect("the create is logged");
    assert_eq!(logged.traceparent.as_deref(), Some(TP));
}

#[tokio::test]
async fn without_stamping_the_object_is_written_as_sent() {
    let env = Environment::start().await.expect("envtest");
    let cm = create(&env, "plain").await;
    assert_eq!(annotation(&cm), None);
}
