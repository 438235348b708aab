//! `#[derive(ApplyConfiguration)]` next to kube's `CustomResource`: the derived `WidgetApply`
//! sends only what is set (its JSON is checked), and applied to ctrl-envtest it leaves the
//! field manager owning exactly those fields (`managedFields`), where the whole typed object
//! claims every field it serialized.

use ctrl::ApplyConfiguration;
use ctrl::cache::{Cache, Options};
use ctrl::client::Client;
use ctrl::prelude::{ObjectWriter, Reader};
use ctrl_envtest::Environment;
use kube::{CustomResource, CustomResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// A port of a widget.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, ApplyConfiguration)]
#[serde(rename_all = "camelCase")]
pub struct WidgetPort {
    /// Its number.
    pub container_port: i32,
    /// Its name.
    pub name: Option<String>,
}

/// What a widget should be.
#[derive(
    CustomResource, Clone, Debug, Default, Deserialize, Serialize, JsonSchema, ApplyConfiguration,
)]
#[kube(
    group = "test.ctrl.rs",
    version = "v1",
    kind = "Widget",
    namespaced,
    status = "WidgetStatus"
)]
#[serde(rename_all = "camelCase")]
pub struct WidgetSpec {
    /// How big.
    pub size: i32,
    /// Its colour.
    pub color: String,
    /// Free-form tags.
    pub tags: Vec<String>,
    /// Its ports.
    pub ports: Vec<WidgetPort>,
    /// An optional note, sent as `remark`.
    #[serde(rename = "remark")]
    pub note: Option<String>,
}

/// What a widget is.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema, ApplyConfiguration)]
#[serde(rename_all = "camelCase")]
pub struct WidgetStatus {
    /// How many are ready.
    pub ready_count: i32,
}

#[test]
fn the_derived_configuration_serializes_only_what_is_set() {
    let ac = WidgetApply::new("w", "default").spec(
        WidgetSpecApply::default()
            .size(3)
            .note("hi")
            .ports(vec![WidgetPortApply::default().container_port(80)]),
    );
    assert_eq!(
        serde_json::to_value(&ac).expect("json"),
        json!({
            "apiVersion": "test.ctrl.rs/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"},
            "spec": {"size": 3, "remark": "hi", "ports": [{"containerPort": 80}]},
        })
    );
    let status =
        WidgetApply::new("w", "default").status(WidgetStatusApply::default().ready_count(2));
    assert_eq!(
        serde_json::to_value(&status).expect("json")["status"],
        json!({"readyCount": 2})
    );
}

/// The `fieldsV1` `manager` owns on the server's copy of the widget.
async fn owned(client: &Client, manager: &str) -> Value {
    let w: Widget = client
        .api_reader()
        .get("default", "w")
        .await
        .expect("uncached get");
    let entries = w.metadata.managed_fields.unwrap_or_default();
    let entry = entries
        .iter()
        .find(|e| e.manager.as_deref() == Some(manager))
        .unwrap_or_else(|| panic!("no managedFields entry of {manager}: {entries:?}"));
    entry.fields_v1.as_ref().expect("fieldsV1").0.clone()
}

#[tokio::test]
async fn applying_the_derived_configuration_owns_only_its_fields() {
    let env = Environment::builder()
        .crd(Widget::crd())
        .start()
        .await
        .expect("envtest");
    let client = Client::new(env.client(), Cache::new(env.client(), Options::default()));
    let spec = WidgetSpec {
        size: 1,
        color: "red".into(),
        tags: vec!["a".into()],
        ..Default::default()
    };
    client
        .create(&Widget::new("w", spec).within("default"))
        .await
        .expect("create");

    let ac = WidgetApply::new("w", "default").spec(WidgetSpecApply::default().size(5));
    let stored = client
        .apply_config(&ac, Some("sizer"), true)
        .await
        .expect("apply configuration");
    assert_eq!((stored.spec.size, stored.spec.color.as_str()), (5, "red"));
    assert_eq!(
        owned(&client, "sizer").await,
        json!({"f:spec": {"f:size": {}}})
    );

    // The whole typed object with the same intent claims every field it serialized.
    let whole = Widget::new(
        "w",
        WidgetSpec {
            size: 5,
            ..Default::default()
        },
    )
    .within("default");
    client
        .apply(&whole, Some("whole-object"), true)
        .await
        .expect("whole-object apply");
    let fields = owned(&client, "whole-object").await;
    for f in ["f:size", "f:color", "f:tags", "f:ports"] {
        assert!(fields["f:spec"].get(f).is_some(), "{f} not owned: {fields}");
    }
}

/// `within` for the test: kube's `new` leaves the namespace unset.
trait Within {
    fn within(self, ns: &str) -> Self;
}

impl Within for Widget {
    fn within(mut self, ns: &str) -> Self {
        self.metadata.namespace = Some(ns.into());
        self
    }
}
