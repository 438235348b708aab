//! The `/convert` handler: hub-and-spoke conversion between two versions of a CRD
//! over the real TLS server, failures reported per the API, bad input a 400.

mod webhook_support;

use ctrl_runtime::webhook::conversion::{ConversionError, Convertible, Hub};
use kube::CustomResource;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use webhook_support::{post, start};

mod v1 {
    use super::*;
    /// v1: the size as text, `"<w>x<h>"`.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq)]
    #[kube(
        group = "example.com",
        version = "v1",
        kind = "Widget",
        namespaced,
        schema = "disabled"
    )]
    pub struct WidgetSpec {
        pub size: String,
    }
}

mod v2 {
    use super::*;
    /// v2 (the hub): width and height.
    #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq)]
    #[kube(
        group = "example.com",
        version = "v2",
        kind = "Widget",
        namespaced,
        schema = "disabled"
    )]
    pub struct WidgetSpec {
        pub width: u32,
        pub height: u32,
    }
}

impl Hub for v2::Widget {}

impl Convertible<v2::Widget> for v1::Widget {
    fn convert_to(&self) -> Result<v2::Widget, ConversionError> {
        if self.spec.size == "boom" {
            panic!("boom");
        }
        let (w, h) = self
            .spec
            .size
            .split_once('x')
            .ok_or_else(|| ConversionError(format!("size {:?} is not WxH", self.spec.size)))?;
        let parse = |s: &str| s.parse::<u32>().map_err(|e| ConversionError(e.to_string()));
        let mut out = v2::Widget::new(
            "",
            v2::WidgetSpec {
                width: parse(w)?,
                height: parse(h)?,
            },
        );
        out.metadata = self.metadata.clone();
        Ok(out)
    }
    fn convert_from(hub: &v2::Widget) -> Result<Self, ConversionError> {
        let mut out = v1::Widget::new(
            "",
            v1::WidgetSpec {
                size: format!("{}x{}", hub.spec.width, hub.spec.height),
            },
        );
        out.metadata = hub.metadata.clone();
        Ok(out)
    }
}

fn review(desired: &str, objects: Vec<Value>) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
           "request": {"uid": "c-1", "desiredAPIVersion": desired, "objects": objects}})
}

fn widget(version: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget",
           "metadata": {"name": "w", "namespace": "default", "labels": {"a": "b"}}, "spec": spec})
}

async fn convert(r: &webhook_support::Running, body: Value) -> Value {
    let (code, text) = post(
        r,
        "/convert",
        "application/json",
        body.to_string().as_bytes(),
    )
    .await;
    assert_eq!(code, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["kind"], "ConversionReview");
    v["response"].clone()
}

#[tokio::test]
async fn converts_between_spokes_and_hub_and_round_trips() {
    let r = start(|s| {
        let conv = s.conversion().unwrap();
        conv.hub::<v2::Widget>().spoke::<v2::Widget, v1::Widget>();
        assert!(conv.is_convertible("example.com", "Widget"));
    })
    .await;
    assert!(r.server.paths().contains(&"/convert".to_string()));

    let up = convert(
        &r,
        review("example.com/v2", vec![widget("v1", json!({"size": "3x4"}))]),
    )
    .await;
    assert_eq!(up["uid"], "c-1");
    assert_eq!(up["result"]["status"], "Success");
    let obj = &up["convertedObjects"][0];
    assert_eq!(obj["apiVersion"], "example.com/v2");
    assert_eq!(obj["spec"], json!({"width": 3, "height": 4}));
    assert_eq!(obj["metadata"]["labels"], json!({"a": "b"}));

    let down = convert(&r, review("example.com/v1", vec![obj.clone()])).await;
    assert_eq!(
        down["convertedObjects"][0],
        widget("v1", json!({"size": "3x4"}))
    );
}

#[tokio::test]
async fn failures_are_reported_in_the_result_and_bad_input_is_a_400() {
    let r = start(|s| {
        s.conversion().unwrap().spoke::<v2::Widget, v1::Widget>();
    })
    .await;
    let bad = convert(
        &r,
        review("example.com/v2", vec![widget("v1", json!({"size": "big"}))]),
    )
    .await;
    assert_eq!(bad["result"]["status"], "Failure");
    assert_eq!(bad["result"]["message"], "size \"big\" is not WxH");
    assert_eq!(bad["convertedObjects"], json!([]));

    let same = convert(
        &r,
        review("example.com/v1", vec![widget("v1", json!({"size": "1x1"}))]),
    )
    .await;
    assert_eq!(same["result"]["status"], "Failure");

    let mut other = widget("v1", json!({}));
    other["kind"] = json!("Gadget");
    let unknown = convert(&r, review("example.com/v2", vec![other])).await;
    assert_eq!(unknown["result"]["status"], "Failure");
    assert!(
        unknown["result"]["message"]
            .as_str()
            .unwrap()
            .contains("not convertible")
    );

    for body in [
        b"{nope".to_vec(),
        br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview"}"#.to_vec(),
        br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}"#.to_vec(),
    ] {
        let (code, _) = post(&r, "/convert", "application/json", &body).await;
        assert_eq!(code, 400);
    }
    let ok = convert(
        &r,
        review("example.com/v2", vec![widget("v1", json!({"size": "1x2"}))]),
    )
    .await;
    assert_eq!(ok["result"]["status"], "Success");
}

fn conversion_panics() -> f64 {
    ctrl_runtime::metrics::registry()
        .gather()
        .iter()
        .find(|f| f.name() == "controller_runtime_conversion_webhook_panics_total")
        .map_or(0.0, |f| f.get_metric()[0].get_counter().get_value())
}

#[tokio::test]
async fn a_panicking_conversion_is_a_failed_review_and_is_counted() {
    let r = start(|s| {
        s.conversion()
            .unwrap()
            .hub::<v2::Widget>()
            .spoke::<v2::Widget, v1::Widget>();
    })
    .await;
    let before = conversion_panics();
    let resp = convert(
        &r,
        review(
            "example.com/v2",
            vec![widget("v1", json!({"size": "boom"}))],
        ),
    )
    .await;
    assert_eq!(resp["uid"], "c-1");
    assert_eq!(resp["result"]["status"], "Failure");
    assert_eq!(resp["result"]["message"], "panic: boom [recovered]");
    assert_eq!(conversion_panics(), before + 1.0);
    // The server keeps serving.
    let ok = convert(
        &r,
        review("example.com/v2", vec![widget("v1", json!({"size": "1x2"}))]),
    )
    .await;
    assert_eq!(ok["result"]["status"], "Success");
}
