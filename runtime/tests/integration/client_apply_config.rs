//! Typed apply configurations against ctrl-envtest, which tracks `managedFields` as
//! kube-apiserver does: applying a `DeploymentApply` that sets only `spec.replicas` makes the
//! field manager own `f:spec.f:replicas` and nothing else, while today's whole-object apply of
//! a `Deployment` with the same intent also claims the required fields it had to serialize
//! (`selector`, `template`: k8s-openapi #112). Both are asserted, so the test documents the
//! difference. The status writer applies status configurations the same way.

use std::collections::BTreeMap;

use ctrl_envtest::Environment;
use ctrl_runtime::cache::{Cache, Options, Reader};
use ctrl_runtime::client::apply::apps::v1::{
    DeploymentApply, DeploymentSpecApply, DeploymentStatusApply,
};
use ctrl_runtime::client::{Client, ObjectWriter};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use kube::api::ObjectMeta;
use serde_json::{Value, json};

fn deployment(name: &str) -> Deployment {
    let labels = BTreeMap::from([("app".to_string(), name.to_string())]);
    Deployment {
        metadata: ObjectMeta {
            name: Some(name.into()),
            namespace: Some("default".into()),
            ..Default::default()
        },
        spec: Some(DeploymentSpec {
            replicas: Some(1),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..Default::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..Default::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "web".into(),
                        image: Some("nginx".into()),
                        ..Default::default()
                    }],
                    ..Default::default()
                }),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The `fieldsV1` that `manager` owns on the server's copy of `name` (for `subresource`, or
/// the main resource with `""`).
async fn owned(client: &Client, name: &str, manager: &str, subresource: &str) -> Value {
    let d = client
        .api_reader()
        .get::<Deployment>("default", name)
        .await
        .expect("uncached get");
    let entries = d.metadata.managed_fields.unwrap_or_default();
    let entry = entries
        .iter()
        .find(|e| {
            e.manager.as_deref() == Some(manager)
                && e.subresource.as_deref().unwrap_or_default() == subresource
        })
        .unwrap_or_else(|| panic!("no managedFields entry of {manager}: {entries:?}"));
    assert_eq!(entry.operation.as_deref(), Some("Apply"));
    entry.fields_v1.as_ref().expect("fieldsV1").0.clone()
}

async fn setup() -> (Environment, Client) {
    let env = Environment::start().await.expect("envtest");
    let cache = Cache::new(env.client(), Options::default());
    let client = Client::new(env.client(), cache);
    (env, client)
}

#[tokio::test]
async fn an_apply_configuration_owns_only_the_fields_it_sets() {
    let (_env, client) = setup().await;
    client.create(&deployment("web")).await.expect("create");

    let ac =
        DeploymentApply::new("web", "default").spec(DeploymentSpecApply::default().replicas(3));
    let stored = client
        .apply_config(&ac, Some("scaler"), true)
        .await
        .expect("apply configuration");
    assert_eq!(stored.spec.and_then(|s| s.replicas), Some(3));
    assert_eq!(
        owned(&client, "web", "scaler", "").await,
        json!({"f:spec": {"f:replicas": {}}})
    );

    // The same intent as a whole typed object: its required fields go out as `{}` and the
    // manager owns them too.
    let mut whole = Deployment {
        metadata: ac_meta("web"),
        ..Default::default()
    };
    whole.spec = Some(DeploymentSpec {
        replicas: Some(3),
        ..Default::default()
    });
    client
        .apply(&whole, Some("whole-object"), true)
        .await
        .expect("whole-object apply");
    let fields = owned(&client, "web", "whole-object", "").await;
    let spec = fields["f:spec"].as_object().expect("f:spec");
    assert!(spec.contains_key("f:replicas"), "{fields}");
    assert!(spec.contains_key("f:selector"), "{fields}");
    assert!(spec.contains_key("f:template"), "{fields}");
}

fn ac_meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("default".into()),
        ..Default::default()
    }
}

#[tokio::test]
async fn the_status_writer_applies_a_status_configuration() {
    let (_env, client) = setup().await;
    client.create(&deployment("st")).await.expect("create");
    let ac = DeploymentApply::new("st", "default")
        .status(DeploymentStatusApply::default().observed_generation(7));
    let stored = client
        .status()
        .apply_config(&ac, Some("status-writer"), true)
        .await
        .expect("status apply configuration");
    assert_eq!(stored.status.and_then(|s| s.observed_generation), Some(7));
    assert_eq!(
        owned(&client, "st", "status-writer", "status").await,
        json!({"f:status": {"f:observedGeneration": {}}})
    );
    // The object is untouched by it: the spec is still the creator's.
    let d: Deployment = client
        .api_reader()
        .get("default", "st")
        .await
        .expect("uncached get");
    assert_eq!(d.spec.and_then(|s| s.replicas), Some(1));
}

#[tokio::test]
async fn a_configuration_without_a_name_is_refused_before_it_is_sent() {
    let (_env, client) = setup().await;
    let err = client
        .apply_config(&DeploymentApply::default(), Some("x"), false)
        .await
        .expect_err("no name");
    assert!(err.to_string().contains("metadata.name"), "{err}");
    assert_eq!(err.code(), None);
}
