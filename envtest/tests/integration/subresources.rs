//! Scale subresource, dryRun, strict field validation (unknown and duplicate fields), multi-version CRDs, deletecollection and
//! leases.

use crate::common;

use common::{cm, status_of, widget_ar};
use ctrl_envtest::Environment;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;

fn deployment(name: &str) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}
    }))
    .unwrap()
}

#[tokio::test]
async fn deployment_scale() {
    let env = common::env().await;
    let api: Api<Deployment> = Api::namespaced(env.client(), "default");
    api.create(&PostParams::default(), &deployment("d"))
        .await
        .unwrap();
    let s = api.get_scale("d").await.unwrap();
    assert_eq!(s.spec.unwrap().replicas, Some(1));
    assert_eq!(s.status.unwrap().selector.as_deref(), Some("app=d"));
    let s = api
        .patch_scale(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await
        .unwrap();
    assert_eq!(s.spec.unwrap().replicas, Some(3));
    let d = api.get("d").await.unwrap();
    assert_eq!(d.spec.unwrap().replicas, Some(3));
    assert_eq!(d.metadata.generation, Some(2));
}

#[tokio::test]
async fn dry_run_changes_nothing() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let before = api
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version;
    let out = api
        .create(
            &PostParams {
                dry_run: true,
                ..Default::default()
            },
            &cm("dry", &[("a", "1")]),
        )
        .await
        .unwrap();
    assert_eq!(out.metadata.name.as_deref(), Some("dry"));
    assert!(api.get_opt("dry").await.unwrap().is_none());
    let made = api
        .create(&PostParams::default(), &cm("real", &[("a", "1")]))
        .await
        .unwrap();
    let pp = PatchParams {
        dry_run: true,
        ..Default::default()
    };
    let patched = api
        .patch("real", &pp, &Patch::Merge(json!({"data": {"a": "2"}})))
        .await
        .unwrap();
    assert_eq!(patched.data.unwrap()["a"], "2");
    assert_eq!(api.get("real").await.unwrap(), made);
    let dp = DeleteParams {
        dry_run: true,
        ..Default::default()
    };
    api.delete("real", &dp).await.unwrap();
    assert!(api.get_opt("real").await.unwrap().is_some());
    let after: u64 = api
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap()
        .parse()
        .unwrap();
    let before: u64 = before.unwrap().parse().unwrap();
    assert_eq!(
        after,
        before + 1,
        "only the real create consumed a resourceVersion"
    );
}

#[tokio::test]
async fn strict_field_validation_for_custom_resources() {
    let env = Environment::builder()
        .crd(common::widget_crd(true))
        .start()
        .await
        .unwrap();
    let body = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1, "bogus": true}}).to_string();
    let (code, v) = common::raw(
        &env,
        "POST",
        "/apis/example.com/v1/namespaces/default/widgets?fieldValidation=Strict",
        Some(&body),
        "application/json",
    )
    .await;
    assert_eq!(code, 400, "{v}");
    assert!(v["message"].as_str().unwrap().contains("spec.bogus"), "{v}");
    let (code, v) = common::raw(
        &env,
        "POST",
        "/apis/example.com/v1/namespaces/default/widgets?fieldValidation=Ignore",
        Some(&body),
        "application/json",
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(v["spec"], json!({"size": 1}));
}

/// Keys given twice in a JSON body (found while the body is decoded): `Strict` fails the write
/// with upstream's text, after the unknown fields, and stores nothing; `Warn` (the default) writes
/// the last value and answers a `Warning` per key; `Ignore` says nothing. The whole body is
/// searched, fields the schema prunes too. A merge patch's own duplicates count the same way.
#[tokio::test]
async fn duplicate_fields_by_field_validation() {
    let env = Environment::builder()
        .crd(common::widget_crd(true))
        .start()
        .await
        .unwrap();
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    let body = |name: &str| {
        format!(
            r#"{{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {{"name": "{name}", "labels": {{"a": "1", "a": "2"}}}}, "spec": {{"size": 1, "bogus": [{{"x": 1, "x": 2}}], "size": 2}}}}"#
        )
    };
    let post = |q: &'static str, b: String| {
        let env = &env;
        async move {
            common::raw_full(
                env,
                "POST",
                &format!("{path}{q}"),
                Some(&b),
                "application/json",
                &[],
            )
            .await
        }
    };
    let (code, _, text) = post("?fieldValidation=Strict", body("strict")).await;
    assert_eq!(code, 400, "{text}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["message"],
        r#"strict decoding error: unknown field "spec.bogus", duplicate field "metadata.labels.a", duplicate field "spec.bogus[0].x", duplicate field "spec.size""#,
        "{v}"
    );
    let (code, _) = common::raw(&env, "GET", &format!("{path}/strict"), None, "").await;
    assert_eq!(code, 404, "a strict failure stores nothing");

    let (code, headers, text) = post("", body("warn")).await;
    assert_eq!(code, 201, "{text}");
    let w = common::warnings(&headers);
    assert!(
        w.iter()
            .any(|w| w.contains(r#"duplicate field \"spec.size\""#)),
        "{w:?}"
    );
    assert!(
        w.iter()
            .any(|w| w.contains(r#"duplicate field \"metadata.labels.a\""#)),
        "{w:?}"
    );
    assert!(w.iter().any(|w| w.contains("spec.bogus[0].x")), "{w:?}");
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["spec"], json!({"size": 2}), "the last value is written");
    assert_eq!(v["metadata"]["labels"], json!({"a": "2"}));

    let (code, headers, _) = post("?fieldValidation=Ignore", body("ignore")).await;
    assert_eq!(code, 201);
    assert!(common::warnings(&headers).is_empty(), "{headers:?}");

    let patch = |q: &'static str| {
        let env = &env;
        async move {
            common::raw_full(
                env,
                "PATCH",
                &format!("{path}/warn{q}"),
                Some(r#"{"spec": {"size": 3, "size": 4}}"#),
                "application/merge-patch+json",
                &[],
            )
            .await
        }
    };
    let (code, _, text) = patch("?fieldValidation=Strict").await;
    assert_eq!(code, 400, "{text}");
    assert!(
        text.contains(r#"strict decoding error: duplicate field \"spec.size\""#),
        "{text}"
    );
    let (code, headers, text) = patch("").await;
    assert_eq!(code, 200, "{text}");
    assert!(
        common::warnings(&headers)
            .iter()
            .any(|w| w.contains(r#"duplicate field \"spec.size\""#)),
        "{headers:?}"
    );
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["spec"], json!({"size": 4}));
}

#[tokio::test]
async fn multi_version_crd_serves_one_object_at_each_version() {
    let mut crd = serde_json::to_value(common::widget_crd(true)).unwrap();
    let mut v2 = crd["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    crd["spec"]["versions"].as_array_mut().unwrap().push(v2);
    let env = Environment::builder()
        .crd(serde_json::from_value(crd).unwrap())
        .start()
        .await
        .unwrap();
    let v1: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &widget_ar());
    v1.create(
        &PostParams::default(),
        &common::widget("w", json!({"size": 1})),
    )
    .await
    .unwrap();
    let ar2 = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("example.com", "v2", "Widget"),
        "widgets",
    );
    let v2api: Api<DynamicObject> = Api::namespaced_with(env.client(), "default", &ar2);
    let got = v2api.get("w").await.unwrap();
    assert_eq!(got.types.unwrap().api_version, "example.com/v2");
    assert_eq!(
        v2api.list(&Default::default()).await.unwrap().items.len(),
        1
    );
}

#[tokio::test]
async fn delete_collection_with_selector() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    for (n, app) in [("a", "x"), ("b", "x"), ("c", "y")] {
        let mut c = cm(n, &[]);
        c.metadata.labels = Some([("app".to_string(), app.to_string())].into());
        api.create(&PostParams::default(), &c).await.unwrap();
    }
    api.delete_collection(
        &DeleteParams::background(),
        &ListParams::default().labels("app=x"),
    )
    .await
    .unwrap();
    let left: Vec<String> = api
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(left, ["c"]);
}

#[tokio::test]
async fn lease_round_trip_and_races() {
    let env = common::env().await;
    let api: Api<Lease> = Api::namespaced(env.client(), "default");
    let lease: Lease = serde_json::from_value(json!({
        "metadata": {"name": "leader"},
        "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "renewTime": "2026-01-02T03:04:05.123456Z"}
    }))
    .unwrap();
    let made = api.create(&PostParams::default(), &lease).await.unwrap();
    let st = status_of(
        api.create(&PostParams::default(), &lease)
            .await
            .unwrap_err(),
    );
    assert_eq!(st.reason, "AlreadyExists");
    let (_, raw) = common::raw(
        &env,
        "GET",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases/leader",
        None,
        "application/json",
    )
    .await;
    assert_eq!(raw["spec"]["renewTime"], "2026-01-02T03:04:05.123456Z");
    let mut renewed = made.clone();
    renewed.spec.as_mut().unwrap().holder_identity = Some("b".into());
    api.replace("leader", &PostParams::default(), &renewed)
        .await
        .unwrap();
    let st = status_of(
        api.replace("leader", &PostParams::default(), &renewed)
            .await
            .unwrap_err(),
    );
    assert_eq!(st.reason, "Conflict");
}

#[tokio::test]
async fn builtin_type_errors_are_bad_requests() {
    let env = common::env().await;
    let body = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"replicas": "three", "selector": {}, "template": {}}})
    .to_string();
    let (code, v) = common::raw(
        &env,
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        Some(&body),
        "application/json",
    )
    .await;
    assert_eq!(code, 400, "{v}");
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .starts_with("Deployment in version \"v1\" cannot be handled as a Deployment"),
        "{v}"
    );
    let api: Api<Deployment> = Api::namespaced(env.client(), "default");
    assert!(api.get_opt("d").await.unwrap().is_none());
    // and through an update
    api.create(&PostParams::default(), &deployment("d"))
        .await
        .unwrap();
    let st = status_of(
        api.patch(
            "d",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": "x"}})),
        )
        .await
        .unwrap_err(),
    );
    assert_eq!(st.code, 400);
    assert_eq!(api.get("d").await.unwrap().spec.unwrap().replicas, Some(1));
}

#[tokio::test]
async fn recorder_events_are_visible_as_core_events() {
    use k8s_openapi::api::core::v1::Event as CoreEvent;
    use k8s_openapi::api::events::v1::Event as NewEvent;
    use kube::Resource;
    use kube::runtime::events::{Event, EventType, Recorder, Reporter};
    let env = common::env().await;
    let client = env.client();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let obj = cms
        .create(&PostParams::default(), &cm("subject", &[]))
        .await
        .unwrap();
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "tester".into(),
            instance: Some("pod-1".into()),
        },
    );
    let ev = Event {
        type_: EventType::Normal,
        reason: "Synced".into(),
        note: Some("all good".into()),
        action: "Sync".into(),
        secondary: None,
    };
    let reference = obj.object_ref(&());
    recorder.publish(&ev, &reference).await.unwrap();
    recorder.publish(&ev, &reference).await.unwrap();

    let new: Api<NewEvent> = Api::namespaced(client.clone(), "default");
    let list = new.list(&Default::default()).await.unwrap();
    assert_eq!(list.items.len(), 1);
    let e = &list.items[0];
    assert_eq!(
        e.regarding.as_ref().unwrap().name.as_deref(),
        Some("subject")
    );
    assert_eq!(e.note.as_deref(), Some("all good"));
    assert_eq!(e.series.as_ref().map(|s| s.count), Some(2));

    let core: Api<CoreEvent> = Api::namespaced(client, "default");
    let lp =
        ListParams::default().fields("involvedObject.name=subject,involvedObject.kind=ConfigMap");
    let list = core.list(&lp).await.unwrap();
    assert_eq!(list.items.len(), 1);
    let e = &list.items[0];
    assert_eq!(e.message.as_deref(), Some("all good"));
    assert_eq!(e.reporting_component.as_deref(), Some("tester"));
    assert_eq!(e.reason.as_deref(), Some("Synced"));
}

#[tokio::test]
async fn secret_string_data_and_namespace_defaults() {
    use k8s_openapi::api::core::v1::{Namespace, Secret};
    let env = common::env().await;
    let secrets: Api<Secret> = Api::namespaced(env.client(), "default");
    let s: Secret =
        serde_json::from_value(json!({"metadata": {"name": "s"}, "stringData": {"user": "admin"}}))
            .unwrap();
    let made = secrets.create(&PostParams::default(), &s).await.unwrap();
    assert!(made.string_data.is_none());
    assert_eq!(made.data.unwrap()["user"].0, b"admin");
    assert_eq!(made.type_.as_deref(), Some("Opaque"));

    let nss: Api<Namespace> = Api::all(env.client());
    let mut ns = Namespace::default();
    ns.metadata.name = Some("team-a".into());
    let made = nss.create(&PostParams::default(), &ns).await.unwrap();
    assert_eq!(
        made.metadata.labels.unwrap()["kubernetes.io/metadata.name"],
        "team-a"
    );
    assert_eq!(made.spec.unwrap().finalizers.unwrap(), ["kubernetes"]);
    assert_eq!(made.status.unwrap().phase.as_deref(), Some("Active"));
    // the label cannot be changed away from the name
    let out = nss
        .patch(
            "team-a",
            &PatchParams::default(),
            &Patch::Merge(
                json!({"metadata": {"labels": {"kubernetes.io/metadata.name": "other"}}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(
        out.metadata.labels.unwrap()["kubernetes.io/metadata.name"],
        "team-a"
    );
}

/// Both discovery forms list the same subresources, with their response kinds: the legacy
/// `APIResourceList` and aggregated discovery v2 (as kube's `Discovery` reads it).
#[tokio::test]
async fn discovery_lists_each_subresource_in_both_forms() {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::APIResourceList;
    let env = common::env().await;
    let req = http::Request::get("/api/v1").body(Vec::new()).unwrap();
    let legacy: APIResourceList = env.client().request(req).await.unwrap();
    let entry = |name: &str| legacy.resources.iter().find(|r| r.name == name).cloned();
    let eviction = entry("pods/eviction").expect("pods/eviction listed");
    assert_eq!(
        (
            eviction.group.as_deref(),
            eviction.kind.as_str(),
            eviction.verbs
        ),
        (Some("policy"), "Eviction", vec!["create".to_string()])
    );
    let token = entry("serviceaccounts/token").expect("serviceaccounts/token listed");
    assert_eq!(token.kind, "TokenRequest");
    assert_eq!(entry("pods/status").expect("pods/status").kind, "Pod");
    assert!(entry("configmaps/status").is_none());

    let discovery = kube::Discovery::new(env.client())
        .run_aggregated()
        .await
        .unwrap();
    let gvk = GroupVersionKind::gvk("", "v1", "Pod");
    let (_, caps) = discovery.resolve_gvk(&gvk).expect("pods discovered");
    let mut aggregated: Vec<String> = caps
        .subresources
        .iter()
        .map(|(ar, _)| format!("pods/{}", ar.plural))
        .collect();
    let mut listed: Vec<String> = legacy
        .resources
        .iter()
        .filter(|r| r.name.starts_with("pods/"))
        .map(|r| r.name.clone())
        .collect();
    aggregated.sort();
    listed.sort();
    assert_eq!(aggregated, listed);
    assert_eq!(
        listed,
        ["pods/ephemeralcontainers", "pods/eviction", "pods/status"]
    );
}

/// A status patch that leaves the status as stored is a no-op (the resourceVersion is kept);
/// one that changes it gets a new resourceVersion and keeps the generation (the no-op check
/// compares `status` first, then the whole object).
#[tokio::test]
async fn status_patches_keep_the_version_when_nothing_changes() {
    let (_env, api) = common::env_with_widget().await;
    let pp = PatchParams::default();
    let set = |ready: bool| Patch::Merge(json!({"status": {"ready": ready}}));
    let a = api.patch_status("w", &pp, &set(true)).await.unwrap();
    let b = api.patch_status("w", &pp, &set(true)).await.unwrap();
    assert_eq!(a.metadata.resource_version, b.metadata.resource_version);
    let c = api.patch_status("w", &pp, &set(false)).await.unwrap();
    assert_ne!(b.metadata.resource_version, c.metadata.resource_version);
    assert_eq!(c.data["status"]["ready"], false);
    assert_eq!(a.metadata.generation, c.metadata.generation);
    // A spec change sent to /status is dropped: a no-op.
    let spec = Patch::Merge(json!({"spec": {"size": 7}}));
    let d = api.patch_status("w", &pp, &spec).await.unwrap();
    assert_eq!(c.metadata.resource_version, d.metadata.resource_version);
    assert_eq!(d.data["spec"]["size"], 1);
}
