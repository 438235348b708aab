//! managedFields of ordinary writes
//! (`k8s.io/apimachinery/pkg/util/managedfields/internal/structuredmerge.go`) through
//! `kube::Client`: every POST, PUT and json/merge/strategic PATCH records an `Update` entry for its
//! manager with the fields it added or changed, taking them from other managers; status and scale
//! writes carry their subresource; an apply that changes a field an `Update` manager owns
//! conflicts.
//!
//! The expected `fieldsV1` follow the apiserver's field manager
//! (k8s.io/apimachinery/pkg/util/managedfields/internal: `managedFieldsUpdater`,
//! `stripMetaManager`, `buildManagerInfoManager`, `capManagersManager`) on top of
//! structured-merge-diff's `TypedValue.Compare`: a map that did not exist is itself added
//! (`.`), non-pointer Go structs (`spec`, `status`, a pod `template`) already exist in the
//! zero value, `metadata.name` & co. are stripped. The create entries mirror what a real
//! cluster shows for `kubectl create configmap x --from-literal=a=1` (manager
//! `kubectl-create`), e.g. in the Kubernetes docs' "Server-Side Apply" page.

use crate::common;

use std::collections::BTreeMap;

use common::status_of;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn entries(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Vec<ManagedFieldsEntry> {
    meta.managed_fields.clone().unwrap_or_default()
}

fn entry<'a>(all: &'a [ManagedFieldsEntry], manager: &str) -> &'a ManagedFieldsEntry {
    all.iter()
        .find(|e| e.manager.as_deref() == Some(manager))
        .unwrap_or_else(|| panic!("no entry for {manager}: {all:?}"))
}

fn fields(e: &ManagedFieldsEntry) -> Value {
    e.fields_v1
        .as_ref()
        .map(|f| f.0.clone())
        .unwrap_or(Value::Null)
}

fn post(manager: &str) -> PostParams {
    PostParams {
        field_manager: Some(manager.into()),
        ..Default::default()
    }
}

/// A non-apply patch by manager `m`.
fn pp(m: &str) -> PatchParams {
    PatchParams {
        field_manager: Some(m.into()),
        ..Default::default()
    }
}

fn labelled_cm() -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": "x", "labels": {"app": "web"}},
        "data": {"a": "1"},
    }))
    .unwrap()
}

#[tokio::test]
async fn create_then_patches_record_update_entries() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    let created = api.create(&post("creator"), &labelled_cm()).await.unwrap();
    let all = entries(&created.metadata);
    assert_eq!(all.len(), 1, "{all:?}");
    let e = entry(&all, "creator");
    assert_eq!(e.operation.as_deref(), Some("Update"));
    assert_eq!(e.api_version.as_deref(), Some("v1"));
    assert_eq!(e.fields_type.as_deref(), Some("FieldsV1"));
    assert!(e.subresource.is_none());
    assert!(e.time.is_some());
    // New maps carry ".", leaves are {}; name/namespace/uid/... are never owned.
    assert_eq!(
        fields(e),
        json!({"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
    );

    // A merge patch by another manager takes the field it changed; the creator keeps the rest.
    let by_patcher = pp("patcher");
    let patched = api
        .patch(
            "x",
            &by_patcher,
            &Patch::Merge(json!({"data": {"a": "2", "b": "new"}})),
        )
        .await
        .unwrap();
    let all = entries(&patched.metadata);
    assert_eq!(all.len(), 2, "{all:?}");
    assert_eq!(
        fields(entry(&all, "patcher")),
        json!({"f:data": {"f:a": {}, "f:b": {}}})
    );
    assert_eq!(
        fields(entry(&all, "creator")),
        json!({"f:data": {}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
    );

    // A write that changes nothing records nothing: same resourceVersion, same entries.
    let same = api
        .patch("x", &by_patcher, &Patch::Merge(json!({"data": {"a": "2"}})))
        .await
        .unwrap();
    assert_eq!(
        same.metadata.resource_version,
        patched.metadata.resource_version
    );
    assert_eq!(entries(&same.metadata), all);

    // A strategic patch that removes a field takes it from its owner, too.
    let sp = pp("remover");
    let removed = api
        .patch(
            "x",
            &sp,
            &Patch::Strategic(json!({"metadata": {"labels": {"app": null}}})),
        )
        .await
        .unwrap();
    let all = entries(&removed.metadata);
    assert!(
        all.iter().all(|e| e.manager.as_deref() != Some("remover")),
        "{all:?}"
    );
    // The last label went, so `labels` itself went: the creator keeps only `data`.
    assert_eq!(fields(entry(&all, "creator")), json!({"f:data": {}}));
}

#[tokio::test]
async fn writes_without_a_field_manager_are_unknown_or_the_user_agent() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    // kube sends no User-Agent and no fieldManager: upstream names the manager "unknown".
    let created = api
        .create(&PostParams::default(), &common::cm("x", &[("a", "1")]))
        .await
        .unwrap();
    assert_eq!(
        entry(&entries(&created.metadata), "unknown")
            .operation
            .as_deref(),
        Some("Update")
    );
    let mut cm = created.clone();
    cm.data
        .get_or_insert_default()
        .insert("b".into(), "2".into());
    let replaced = api.replace("x", &PostParams::default(), &cm).await.unwrap();
    let all = entries(&replaced.metadata);
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(
        fields(&all[0]),
        json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}})
    );

    // With a User-Agent, the part before the first '/' names the manager.
    let body = json!({"metadata": {"name": "y"}, "data": {"a": "1"}}).to_string();
    let (code, _, text) = common::raw_full(
        &env,
        "POST",
        "/api/v1/namespaces/default/configmaps",
        Some(&body),
        "application/json",
        &[(
            "User-Agent",
            "kubectl/v1.35.0 (linux/amd64) kubernetes/abcdef",
        )],
    )
    .await;
    assert_eq!(code, 201, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["metadata"]["managedFields"][0]["manager"], "kubectl");

    // fieldManager longer than 128 characters: 422, nothing stored (kube refuses to send
    // one, so the request is raw).
    let path = format!(
        "/api/v1/namespaces/default/configmaps?fieldManager={}",
        "m".repeat(129)
    );
    let body = json!({"metadata": {"name": "z"}}).to_string();
    let (code, st) = common::raw(&env, "POST", &path, Some(&body), "application/json").await;
    assert_eq!(code, 422, "{st}");
    assert!(
        st["message"].as_str().unwrap().contains("fieldManager"),
        "{st}"
    );
    assert!(api.get_opt("z").await.unwrap().is_none());
}

#[tokio::test]
async fn client_sent_managed_fields_replace_or_reset_tracking() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&post("creator"), &labelled_cm()).await.unwrap();
    // `[{}]` (and `[]`) reset tracking: only the resetting write's own changes remain.
    let reset = api
        .patch(
            "x",
            &pp("resetter"),
            &Patch::Merge(json!({"metadata": {"managedFields": [{}]}, "data": {"c": "3"}})),
        )
        .await
        .unwrap();
    let all = entries(&reset.metadata);
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(
        fields(entry(&all, "resetter")),
        json!({"f:data": {"f:c": {}}})
    );
    let cleared = api
        .patch(
            "x",
            &pp("other"),
            &Patch::Merge(json!({"metadata": {"managedFields": []}})),
        )
        .await
        .unwrap();
    assert!(
        cleared.metadata.managed_fields.is_none(),
        "{:?}",
        cleared.metadata.managed_fields
    );

    // A non-empty list replaces what is tracked.
    let mut cm = cleared.clone();
    cm.metadata.managed_fields = Some(vec![
        serde_json::from_value(json!({
            "manager": "imported", "operation": "Update", "apiVersion": "v1",
            "time": "2026-01-01T00:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:a": {}}},
        }))
        .unwrap(),
    ]);
    let replaced = api.replace("x", &PostParams::default(), &cm).await.unwrap();
    let all = entries(&replaced.metadata);
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(
        fields(entry(&all, "imported")),
        json!({"f:data": {"f:a": {}}})
    );

    // An entry sent without `time` comes back without one (not an unparsable empty Time).
    let mut cm = replaced.clone();
    cm.metadata.managed_fields = Some(vec![
        serde_json::from_value(json!({
            "manager": "untimed", "operation": "Update", "apiVersion": "v1",
            "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}},
        }))
        .unwrap(),
    ]);
    let replaced = api.replace("x", &PostParams::default(), &cm).await.unwrap();
    let all = entries(&replaced.metadata);
    assert_eq!(entry(&all, "untimed").time, None, "{all:?}");
}

fn deployment(replicas: i32) -> Deployment {
    serde_json::from_value(json!({
        "metadata": {"name": "d"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "d"}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]},
            },
        },
    }))
    .unwrap()
}

#[tokio::test]
async fn status_and_scale_writes_carry_their_subresource() {
    let env = common::env().await;
    let api: Api<Deployment> = Api::namespaced(env.client(), "default");
    let created = api.create(&post("creator"), &deployment(1)).await.unwrap();
    // spec and the pod template are Go structs that exist in the zero value: no "." for them;
    // the label selector is atomic; containers are keyed by name. The creator owns what
    // defaulting filled in (upstream's field manager runs on the defaulted object).
    assert_eq!(
        fields(entry(&entries(&created.metadata), "creator")),
        json!({"f:spec": {
            "f:progressDeadlineSeconds": {},
            "f:replicas": {},
            "f:revisionHistoryLimit": {},
            "f:selector": {},
            "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}}, "f:type": {}},
            "f:template": {
                "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                "f:spec": {
                    "f:containers": {"k:{\"name\":\"c\"}": {
                        ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                        "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {},
                    }},
                    "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {},
                    "f:securityContext": {}, "f:terminationGracePeriodSeconds": {},
                },
            },
        }})
    );
    let st = api
        .patch_status(
            "d",
            &pp("status-writer"),
            &Patch::Merge(json!({"status": {"replicas": 1}})),
        )
        .await
        .unwrap();
    let e = entry(&entries(&st.metadata), "status-writer").clone();
    assert_eq!(e.subresource.as_deref(), Some("status"));
    assert_eq!(fields(&e), json!({"f:status": {"f:replicas": {}}}));

    // kubectl scale is a merge patch of /scale: an Update entry at the parent's apiVersion.
    let scaled = api
        .patch_scale(
            "d",
            &pp("kubectl-scale"),
            &Patch::Merge(json!({"spec": {"replicas": 3}})),
        )
        .await;
    assert!(scaled.is_ok(), "{scaled:?}");
    let now = api.get("d").await.unwrap();
    let all = entries(&now.metadata);
    let e = entry(&all, "kubectl-scale");
    assert_eq!(e.subresource.as_deref(), Some("scale"));
    assert_eq!(e.api_version.as_deref(), Some("apps/v1"));
    assert_eq!(fields(e), json!({"f:spec": {"f:replicas": {}}}));
    assert!(
        fields(entry(&all, "creator"))["f:spec"]
            .get("f:replicas")
            .is_none()
    );
}

#[tokio::test]
async fn apply_conflicts_with_update_managers_and_force_takes_over() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&post("creator"), &labelled_cm()).await.unwrap();
    let cfg = |v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": v}});
    // Same value: shared, no conflict.
    api.patch("x", &PatchParams::apply("applier"), &Patch::Apply(cfg("1")))
        .await
        .unwrap();
    let err = status_of(
        api.patch("x", &PatchParams::apply("applier"), &Patch::Apply(cfg("2")))
            .await
            .unwrap_err(),
    );
    assert_eq!(err.code, 409);
    // upstream printManager: Update managers are named with the apiVersion they wrote at.
    assert_eq!(
        err.message,
        "Apply failed with 1 conflict: conflict with \"creator\" using v1: .data.a"
    );
    assert_eq!(api.get("x").await.unwrap().data.unwrap()["a"], "1");
    let forced = api
        .patch(
            "x",
            &PatchParams::apply("applier").force(),
            &Patch::Apply(cfg("2")),
        )
        .await
        .unwrap();
    let all = entries(&forced.metadata);
    assert_eq!(forced.data.unwrap()["a"], "2");
    assert_eq!(
        fields(entry(&all, "applier")),
        json!({"f:data": {"f:a": {}}})
    );
    assert!(
        fields(entry(&all, "creator"))["f:data"]
            .get("f:a")
            .is_none(),
        "{all:?}"
    );
    // Apply entries come first, as upstream sorts them.
    assert_eq!(all[0].operation.as_deref(), Some("Apply"));
}

#[tokio::test]
async fn old_update_managers_merge_into_ancient_changes() {
    let env = common::env().await;
    let api: Api<ConfigMap> = Api::namespaced(env.client(), "default");
    api.create(&post("m0"), &common::cm("x", &[("k0", "v")]))
        .await
        .unwrap();
    for i in 1..12 {
        let by = pp(&format!("m{i}"));
        let mut data = BTreeMap::new();
        data.insert(format!("k{i}"), "v".to_string());
        api.patch("x", &by, &Patch::Merge(json!({ "data": data })))
            .await
            .unwrap();
    }
    let all = entries(&api.get("x").await.unwrap().metadata);
    assert_eq!(all.len(), 10, "{all:?}");
    let ancient = entry(&all, "ancient-changes");
    let owned = fields(ancient)["f:data"].as_object().unwrap().len();
    assert!(owned >= 2, "{ancient:?}");
}

/// A custom resource with an associative list (keyed by `name`), a set, an atomic map, an
/// empty map and a status subresource.
const GADGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gadgets.fm.example.com}
spec:
  group: fm.example.com
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              ports:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items: {type: object, required: [name], properties: {name: {type: string}, port: {type: integer}}}
              tags: {type: array, x-kubernetes-list-type: set, items: {type: string}}
              selector: {type: object, x-kubernetes-map-type: atomic, additionalProperties: {type: string}}
              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}
          status:
            type: object
            properties:
              phase: {type: string}
"#;

/// An environment serving [`GADGET_CRD`], and its Gadgets in `default`.
async fn gadgets() -> (ctrl_envtest::Environment, Api<kube::core::DynamicObject>) {
    let env = ctrl_envtest::Environment::builder()
        .crd_yaml(GADGET_CRD)
        .start()
        .await
        .unwrap();
    let ar = kube::core::ApiResource::from_gvk_with_plural(
        &kube::core::GroupVersionKind::gvk("fm.example.com", "v1", "Gadget"),
        "gadgets",
    );
    let api = Api::namespaced_with(env.client(), "default", &ar);
    (env, api)
}

/// A custom resource's create (custom resources are compared as unstructured JSON upstream:
/// every new map and list is itself owned, `.`), then a status patch: keyed list elements are
/// `k:{...}` with their key fields owned, set elements `v:<json>`, an atomic map and an empty map
/// are leaves, the status the create sent is dropped (`/status` owns it) and the status writer's
/// entry names its subresource and leaves the creator's alone.
#[tokio::test]
async fn custom_resource_create_owns_keyed_lists_sets_and_empty_maps() {
    let (_env, api) = gadgets().await;
    let gadget: kube::core::DynamicObject = serde_json::from_value(json!({
        "apiVersion": "fm.example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g", "labels": {"a": "1"}},
        "spec": {"ports": [{"name": "http", "port": 80}, {"name": "dns"}],
            "tags": ["x", "y"], "selector": {"k": "v"}, "extra": {}},
        "status": {"phase": "Ignored"},
    }))
    .unwrap();
    let created = api.create(&post("creator"), &gadget).await.unwrap();
    let creator = json!({
        "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
        "f:spec": {
            ".": {},
            "f:extra": {},
            "f:ports": {
                ".": {},
                "k:{\"name\":\"dns\"}": {".": {}, "f:name": {}},
                "k:{\"name\":\"http\"}": {".": {}, "f:name": {}, "f:port": {}},
            },
            "f:selector": {},
            "f:tags": {".": {}, "v:\"x\"": {}, "v:\"y\"": {}},
        },
    });
    let all = entries(&created.metadata);
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(fields(entry(&all, "creator")), creator);
    assert!(created.data.get("status").is_none(), "{created:?}");

    let st = Patch::Merge(json!({"status": {"phase": "Up"}}));
    let patched = api
        .patch_status("g", &pp("status-writer"), &st)
        .await
        .unwrap();
    let all = entries(&patched.metadata);
    assert_eq!(all.len(), 2, "{all:?}");
    let e = entry(&all, "status-writer");
    assert_eq!(e.subresource.as_deref(), Some("status"));
    assert_eq!(fields(e), json!({"f:status": {".": {}, "f:phase": {}}}));
    assert_eq!(fields(entry(&all, "creator")), creator);
}

/// A status write starts from the stored entries whatever managedFields it sends: twins written
/// alike, one by plain status patches (which carry the stored entries back) and one by patches
/// that also send forged entries, end with the same managedFields; a status writer's entry names
/// its subresource and loses the fields another writer takes.
#[tokio::test]
async fn status_writes_record_the_same_entries_whatever_they_send() {
    let (_env, api) = gadgets().await;
    for name in ["plain", "forged"] {
        let g: kube::core::DynamicObject = serde_json::from_value(json!({
            "apiVersion": "fm.example.com/v1", "kind": "Gadget",
            "metadata": {"name": name}, "spec": {"tags": ["x"]},
        }))
        .unwrap();
        api.create(&post("creator"), &g).await.unwrap();
    }
    let forged = json!([{"manager": "forger", "operation": "Update", "apiVersion": "fm.example.com/v1",
        "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:tags": {}}}}]);
    let steps = [
        ("status-writer", "Up"),
        ("creator", "Down"),
        ("status-writer", "Up"),
    ];
    // Without their times, in an order that does not depend on them: the list is ordered by
    // time first, and the two objects' writes may fall either side of a second's boundary.
    let without_time = |o: &kube::core::DynamicObject| {
        let mut list = entries(&o.metadata);
        for e in &mut list {
            e.time = None;
        }
        list.sort_by_key(|e| (e.manager.clone(), e.subresource.clone()));
        list
    };
    for (manager, phase) in steps {
        let plain = Patch::Merge(json!({"status": {"phase": phase}}));
        let a = api
            .patch_status("plain", &pp(manager), &plain)
            .await
            .unwrap();
        let sent = Patch::Merge(
            json!({"metadata": {"managedFields": forged}, "status": {"phase": phase}}),
        );
        let b = api
            .patch_status("forged", &pp(manager), &sent)
            .await
            .unwrap();
        assert_eq!(without_time(&a), without_time(&b), "after {manager}");
    }
    let all = entries(&api.get("plain").await.unwrap().metadata);
    assert!(
        all.iter().all(|e| e.manager.as_deref() != Some("forger")),
        "{all:?}"
    );
    // The creator's status entry went when the status writer took `phase` back.
    let status_entries: Vec<_> = all
        .iter()
        .filter(|e| e.subresource.as_deref() == Some("status"))
        .collect();
    assert_eq!(status_entries.len(), 1, "{all:?}");
    let writer = entry(&all, "status-writer");
    assert_eq!(writer.subresource.as_deref(), Some("status"));
    assert_eq!(fields(writer)["f:status"]["f:phase"], json!({}), "{all:?}");
    let creator_spec = all
        .iter()
        .find(|e| e.manager.as_deref() == Some("creator") && e.subresource.is_none())
        .expect("the creator's entry");
    assert_eq!(
        fields(creator_spec),
        json!({"f:spec": {".": {}, "f:tags": {".": {}, "v:\"x\"": {}}}})
    );
}
