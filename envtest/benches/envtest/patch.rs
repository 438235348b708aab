//! CPU per create and per status patch of a custom resource with a status subresource (the e2e
//! bench's `Widget`: a structural schema, `/status`), through the same kube client, 16 in flight:
//! the patch path the e2e bench's scenario (b) waits on, beside the create it is measured against
//! (issue 36: a status patch within 1.3x of a create's CPU).

use std::time::Duration;

use ctrl_envtest::Environment;
use futures::{StreamExt, stream};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

/// The Widget CRD (group `bench.ctrl.dev`), as `benches/e2e.rs` derives it.
pub const CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.bench.ctrl.dev
spec:
  group: bench.ctrl.dev
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        required: [spec]
        properties:
          spec:
            type: object
            required: [image, index, replicas, value]
            properties:
              index: {type: integer, format: uint, minimum: 0}
              value: {type: integer, format: uint64, minimum: 0}
              image: {type: string}
              replicas: {type: integer, format: uint32, minimum: 0}
          status:
            type: object
            nullable: true
            required: [run]
            properties:
              run: {type: integer, format: uint64, minimum: 0}
"#;

fn api(env: &Environment) -> Api<DynamicObject> {
    let ar = ApiResource {
        group: "bench.ctrl.dev".into(),
        version: "v1".into(),
        api_version: "bench.ctrl.dev/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    Api::namespaced_with(super::client(&env.url(), env.admin_token()), "default", &ar)
}

fn widget(i: usize) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "bench.ctrl.dev/v1", "kind": "Widget",
        "metadata": {"name": format!("w-{i:06}"), "namespace": "default",
            "labels": {"app.kubernetes.io/name": "bench"}},
        "spec": {"index": i, "value": 0, "replicas": (i % 5) + 1,
            "image": format!("registry.example.com/team/app-{}:1.2.{}", i % 7, i % 100)},
    }))
    .expect("a widget")
}

/// CPU time of `n` Widget creates and of one status merge patch on each (as the e2e bench's
/// reconciler sends it), 16 in flight, in `rounds` slices (each slice's creates, then their
/// patches), so that a change in the machine's load weighs on both alike; and patch / create
/// in each round.
pub async fn create_then_patch(
    env: &Environment,
    n: usize,
    rounds: usize,
) -> (Duration, Duration, Vec<f64>) {
    let api = api(env);
    let slice = n / rounds.max(1);
    let (mut created, mut patched, mut by_round) = (Duration::ZERO, Duration::ZERO, Vec::new());
    for r in 0..rounds {
        let names = r * slice..(r + 1) * slice;
        let c = cpu_of(names.clone(), |i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &widget(i))
                    .await
                    .expect("create widget");
            }
        })
        .await;
        let p = cpu_of(names, |i| {
            let api = api.clone();
            async move {
                let p = Patch::Merge(json!({"status": {"run": 1}}));
                api.patch_status(&format!("w-{i:06}"), &PatchParams::default(), &p)
                    .await
                    .expect("patch status");
            }
        })
        .await;
        by_round.push(p.as_secs_f64() / c.as_secs_f64().max(1e-9));
        (created, patched) = (created + c, patched + p);
    }
    (created, patched, by_round)
}

/// The process's CPU time while `request` runs for each of `names`, 16 in flight.
async fn cpu_of<F, Fut>(names: std::ops::Range<usize>, request: F) -> Duration
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let cpu = super::cpu_time();
    stream::iter(names)
        .map(request)
        .buffer_unordered(16)
        .collect::<Vec<()>>()
        .await;
    super::cpu_time().saturating_sub(cpu)
}
