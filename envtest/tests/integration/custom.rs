//! Custom resources: acceptance checks 5 (CR PUT needs resourceVersion), 10–11 (generation and
//! the status subresource), 33–34 (CRD create/delete effects on discovery and routes).

use crate::common;

use common::{status_of, widget, widget_ar, widget_crd};
use ctrl_envtest::Environment;
use futures::StreamExt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::core::{DynamicObject, GroupVersionKind};
use kube::discovery::Discovery;
use serde_json::json;

async fn env_with(status: bool) -> Environment {
    Environment::builder()
        .crd(widget_crd(status))
        .start()
        .await
        .unwrap()
}

fn generation(o: &DynamicObject) -> i64 {
    o.metadata.generation.unwrap()
}

#[tokio::test]
async fn cr_put_without_resource_version_is_invalid() {
    let env = env_with(true).await;
    let api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &widget_ar());
    api.create(&PostParams::default(), &widget("w", json!({"size": 1})))
        .await
        .unwrap();
    let st = status_of(
        api.replace(
            "w",
            &PostParams::default(),
            &widget("w", json!({"size": 2})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(st.code, 422);
    assert_eq!(st.reason, "Invalid");
    assert!(
        st.message.contains("metadata.resourceVersion")
            && st.message.contains("must be specified for an update"),
        "{}",
        st.message
    );
}

#[tokio::test]
async fn generation_with_status_subresource() {
    let env = env_with(true).await;
    let api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &widget_ar());
    let w = api
        .create(&PostParams::default(), &widget("w", json!({"size": 1})))
        .await
        .unwrap();
    assert_eq!(generation(&w), 1);
    let w = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 2}})),
        )
        .await
        .unwrap();
    assert_eq!(generation(&w), 2);
    let w = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"a": "b"}}})),
        )
        .await
        .unwrap();
    assert_eq!(generation(&w), 2);
    let w = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(generation(&w), 2);
    assert_eq!(w.data["status"]["ready"], true);

    // A /status PUT that also changes spec changes only status.
    let mut body = w.clone();
    body.data["spec"]["size"] = json!(50);
    body.data["status"]["ready"] = json!(false);
    let out = api
        .replace_status("w", &PostParams::default(), &body)
        .await
        .unwrap();
    assert_eq!(out.data["spec"]["size"], 2);
    assert_eq!(out.data["status"]["ready"], false);
    assert_eq!(generation(&out), 2);

    // A main-endpoint PUT that changes status changes nothing in status.
    let mut body = out.clone();
    body.data["status"]["ready"] = json!(true);
    let out2 = api
        .replace("w", &PostParams::default(), &body)
        .await
        .unwrap();
    assert_eq!(out2.data["status"]["ready"], false);
    assert_eq!(
        out2.metadata.resource_version,
        out.metadata.resource_version
    );
}

/// A `/status` write is checked against the schema of `status` only (upstream's status strategy,
/// `ValidateStatusUpdate`): a stored spec that a tightened CRD calls invalid does not block it,
/// while a bad status is refused by the schema and by a CEL rule on status; the write keeps the
/// stored spec, a no-op keeps the resourceVersion, a stale resourceVersion is a conflict.
#[tokio::test]
async fn status_writes_are_validated_on_status_only() {
    let env = env_with(true).await;
    let api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &widget_ar());
    api.create(&PostParams::default(), &widget("w", json!({"size": 7})))
        .await
        .unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(env.client());
    let tighter = json!({"spec": {"versions": [{"name": "v1", "served": true, "storage": true,
    "subresources": {"status": {}},
    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer", "maximum": 5}}},
        "status": {"type": "object",
            "properties": {"ready": {"type": "boolean"}, "phase": {"type": "string", "maxLength": 4}},
            "x-kubernetes-validations": [{"rule": "!has(self.phase) || self.phase != 'Down'", "message": "phase may not be Down"}]},
    }}}}]}});
    crds.patch(
        "widgets.example.com",
        &PatchParams::default(),
        &Patch::Merge(tighter),
    )
    .await
    .expect("tighten the CRD");
    let pp = PatchParams::default();
    let status = |s: serde_json::Value| Patch::Merge(json!({ "status": s }));
    let w = api
        .patch_status("w", &pp, &status(json!({"ready": true})))
        .await
        .expect("the stored spec is not validated on a status write");
    assert_eq!(
        (
            w.data["spec"]["size"].clone(),
            w.data["status"]["ready"].clone()
        ),
        (json!(7), json!(true))
    );
    let refused = common::invalid_message;
    let long = api
        .patch_status("w", &pp, &status(json!({"phase": "Sideways"})))
        .await;
    let msg = refused(long.expect_err("a status over its schema"));
    assert!(msg.contains("status.phase: Too long"), "{msg}");
    let down = api
        .patch_status("w", &pp, &status(json!({"phase": "Down"})))
        .await;
    let msg = refused(down.expect_err("a status against a CEL rule"));
    assert!(msg.contains("phase may not be Down"), "{msg}");
    // A status write that also sends spec keeps the stored spec; the same status again is a no-op.
    let both =
        Patch::Merge(json!({"spec": {"size": 1}, "status": {"ready": false, "phase": "Up"}}));
    let w = api.patch_status("w", &pp, &both).await.unwrap();
    assert_eq!(
        (
            w.data["spec"]["size"].clone(),
            w.data["status"]["phase"].clone()
        ),
        (json!(7), json!("Up"))
    );
    let again = api.patch_status("w", &pp, &both).await.unwrap();
    assert_eq!(again.metadata.resource_version, w.metadata.resource_version);
    let stale =
        Patch::Merge(json!({"metadata": {"resourceVersion": "1"}, "status": {"ready": true}}));
    let st = status_of(api.patch_status("w", &pp, &stale).await.expect_err("stale"));
    assert_eq!(st.code, 409, "{}", st.message);
    // The main resource is validated whole: the changed spec must fit.
    let spec = api
        .patch("w", &pp, &Patch::Merge(json!({"spec": {"size": 6}})))
        .await;
    assert!(refused(spec.expect_err("spec over its maximum")).contains("spec.size"));
}

#[tokio::test]
async fn no_status_subresource() {
    let env = env_with(false).await;
    let api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &widget_ar());
    api.create(&PostParams::default(), &widget("w", json!({"size": 1})))
        .await
        .unwrap();
    let st = status_of(api.get_status("w").await.unwrap_err());
    assert_eq!(st.code, 404);
    let w = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(generation(&w), 2);
    assert_eq!(w.data["status"]["ready"], true);
}

#[tokio::test]
async fn schema_violations_are_invalid_and_unknown_fields_pruned() {
    let env = env_with(true).await;
    let api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &widget_ar());
    let st = status_of(
        api.create(&PostParams::default(), &widget("w", json!({"size": 1000})))
            .await
            .unwrap_err(),
    );
    assert_eq!(st.code, 422, "{st:?}");
    let st = status_of(
        api.create(
            &PostParams::default(),
            &widget("w", json!({"color": "green"})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(st.code, 422, "{st:?}");
    let w = api
        .create(
            &PostParams::default(),
            &widget("w", json!({"size": 3, "extra": 1})),
        )
        .await
        .unwrap();
    assert_eq!(w.data["spec"], json!({"size": 3}));
}

#[tokio::test]
async fn crd_create_serves_resource_before_response() {
    let env = Environment::builder().start().await.unwrap();
    let client = env.client();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let made = crds
        .create(&PostParams::default(), &widget_crd(true))
        .await
        .unwrap();
    let conds = made.status.clone().unwrap().conditions.unwrap();
    for t in ["NamesAccepted", "Established"] {
        assert!(
            conds.iter().any(|c| c.type_ == t && c.status == "True"),
            "{t} in {conds:?}"
        );
    }
    // legacy /apis and /apis/G/V
    let (_, apis) = common::raw(&env, "GET", "/apis", None, "application/json").await;
    assert!(
        apis["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "example.com")
    );
    let (code, rl) = common::raw(
        &env,
        "GET",
        "/apis/example.com/v1",
        None,
        "application/json",
    )
    .await;
    assert_eq!(code, 200);
    let res = rl["resources"].as_array().unwrap();
    assert!(
        res.iter()
            .any(|r| r["name"] == "widgets" && r["shortNames"] == json!(["wg"]))
    );
    assert!(res.iter().any(|r| r["name"] == "widgets/status"));
    // OpenAPI v3 root
    let (_, oa) = common::raw(&env, "GET", "/openapi/v3", None, "application/json").await;
    assert!(
        oa["paths"]["apis/example.com/v1"]["serverRelativeURL"]
            .as_str()
            .unwrap()
            .starts_with("/openapi/v3/apis/example.com/v1?hash=")
    );
    // aggregated discovery
    let (_, _, text) = common::raw_full(
        &env,
        "GET",
        "/apis",
        None,
        "application/json",
        &[(
            "Accept",
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
        )],
    )
    .await;
    let agg: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(agg["kind"], "APIGroupDiscoveryList");
    assert!(
        agg["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["metadata"]["name"] == "example.com")
    );
    // kube discovery both ways
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let d = Discovery::new(client.clone()).run().await.unwrap();
    assert!(d.resolve_gvk(&gvk).is_some());
    let d = Discovery::new(client.clone())
        .run_aggregated()
        .await
        .unwrap();
    let (ar, caps) = d
        .resolve_gvk(&gvk)
        .expect("aggregated discovery finds widgets");
    assert_eq!(ar.plural, "widgets");
    assert!(
        caps.subresources.iter().any(|(s, _)| s.plural == "status"),
        "{caps:?}"
    );
    // CRUD + watch
    let api: Api<DynamicObject> = Api::namespaced_with(client, "default", &widget_ar());
    let w = api
        .create(&PostParams::default(), &widget("w", json!({"size": 1})))
        .await
        .unwrap();
    let rv = w.metadata.resource_version.clone().unwrap();
    let mut stream = api
        .watch(&WatchParams::default().timeout(5), &rv)
        .await
        .unwrap()
        .boxed();
    api.patch(
        "w",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"size": 2}})),
    )
    .await
    .unwrap();
    match stream.next().await.unwrap().unwrap() {
        WatchEvent::Modified(o) => assert_eq!(o.data["spec"]["size"], 2),
        other => panic!("unexpected {other:?}"),
    }
    api.delete("w", &DeleteParams::default()).await.unwrap();
    assert!(api.get_opt("w").await.unwrap().is_none());
}

#[tokio::test]
async fn crd_delete_removes_objects_routes_and_discovery() {
    let env = env_with(true).await;
    let client = env.client();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &widget_ar());
    let w = api
        .create(&PostParams::default(), &widget("a", json!({})))
        .await
        .unwrap();
    api.create(&PostParams::default(), &widget("b", json!({})))
        .await
        .unwrap();
    let rv = w.metadata.resource_version.clone().unwrap();
    let mut stream = api
        .watch(&WatchParams::default().timeout(30).disable_bookmarks(), &rv)
        .await
        .unwrap()
        .boxed();
    match stream.next().await.unwrap().unwrap() {
        WatchEvent::Added(o) => assert_eq!(o.metadata.name.as_deref(), Some("b")),
        other => panic!("unexpected {other:?}"),
    }
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    let mut deleted = Vec::new();
    while let Some(ev) = stream.next().await {
        match ev.unwrap() {
            WatchEvent::Deleted(o) => deleted.push(o.metadata.name.unwrap()),
            other => panic!("unexpected {other:?}"),
        }
    }
    deleted.sort();
    assert_eq!(deleted, ["a", "b"]);
    assert!(crds.get_opt("widgets.example.com").await.unwrap().is_none());
    let (code, _) = common::raw(
        &env,
        "GET",
        "/apis/example.com/v1/namespaces/default/widgets",
        None,
        "application/json",
    )
    .await;
    assert_eq!(code, 404);
    let (_, apis) = common::raw(&env, "GET", "/apis", None, "application/json").await;
    assert!(
        !apis["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "example.com")
    );
    let (_, oa) = common::raw(&env, "GET", "/openapi/v3", None, "application/json").await;
    assert!(oa["paths"].get("apis/example.com/v1").is_none());
    // recreating serves an empty collection
    crds.create(&PostParams::default(), &widget_crd(true))
        .await
        .unwrap();
    assert!(
        api.list(&Default::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn crd_delete_waits_for_finalized_objects() {
    let env = env_with(true).await;
    let client = env.client();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), "default", &widget_ar());
    let mut w = widget("held", json!({}));
    w.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &w).await.unwrap();
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    crds.delete("widgets.example.com", &DeleteParams::default())
        .await
        .unwrap();
    // The CRD is terminating and still served while an object waits for its finalizer.
    let crd = crds.get("widgets.example.com").await.unwrap();
    assert!(crd.metadata.deletion_timestamp.is_some());
    let conds = crd.status.unwrap().conditions.unwrap();
    assert!(
        conds
            .iter()
            .any(|c| c.type_ == "Terminating" && c.status == "True"),
        "{conds:?}"
    );
    let held = api.get("held").await.unwrap();
    assert!(held.metadata.deletion_timestamp.is_some());
    // Releasing the object finishes the CRD deletion.
    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert!(crds.get_opt("widgets.example.com").await.unwrap().is_none());
    let (code, _) = common::raw(
        &env,
        "GET",
        "/apis/example.com/v1/namespaces/default/widgets",
        None,
        "application/json",
    )
    .await;
    assert_eq!(code, 404);
}
