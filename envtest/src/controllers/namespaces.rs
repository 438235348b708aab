//! Namespace lifecycle
//! (`k8s.io/kubernetes/pkg/controller/namespace/deletion/namespaced_resources_deleter.go`),
//! kube-controller-manager's namespace controller in miniature: once a Namespace is marked for
//! deletion (the registry's delete sets `Terminating`), every namespaced object in it is deleted
//! (finalizers honoured: marked objects wait for their clients), and when the namespace is empty
//! its `kubernetes` spec finalizer is removed, which removes the namespace. A write observer
//! ([`Namespaces`], [`registry::hooks`](crate::registry::hooks)) registered with the garbage
//! collector, so it shares the `controllers` switch.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::meta;
use crate::registry::ResourceType;
use crate::registry::context::Apiserver;
use crate::registry::hooks::{FollowUps, Observer, Written};

/// The namespace controller, as a write observer.
pub(crate) struct Namespaces;

impl Observer for Namespaces {
    /// A removed namespaced object may empty its terminating namespace; a namespace marked for
    /// deletion has its contents deleted.
    fn observe(&self, api: &Apiserver, w: &Written, next: &mut FollowUps) {
        if w.rt.virtual_create {
            return;
        }
        if w.removed {
            after_remove(api, next, &w.rt, &w.obj);
        } else if meta::meta_str(&w.obj, "deletionTimestamp").is_some() {
            after_mark(api, next, &w.rt, &w.obj);
        }
    }
}

fn namespace_type(api: &Apiserver) -> Option<Arc<ResourceType>> {
    api.registry.snapshot().get("", "v1", "namespaces").cloned()
}

/// A namespace was just marked for deletion: delete its contents, then finish if empty.
fn after_mark(api: &Apiserver, next: &mut FollowUps, rt: &ResourceType, obj: &Value) {
    if !rt.is("", "namespaces") {
        return;
    }
    let ns = meta::name(obj).to_string();
    for t in api
        .registry
        .collections()
        .into_iter()
        .filter(|t| t.namespaced)
    {
        let Ok((_, items)) = api.store.list(&t.store_key(), Some(&ns), None) else {
            continue;
        };
        for ((_, name), bytes) in items {
            let o = crate::storage::parse(&bytes);
            if meta::meta_str(&o, "deletionTimestamp").is_some() {
                continue;
            }
            let _ = next.delete(api, &t, Some(&ns), &name, &Default::default());
        }
    }
    finish(api, next, &ns);
}

/// A namespaced object was removed: its terminating namespace may now be empty.
fn after_remove(api: &Apiserver, next: &mut FollowUps, rt: &ResourceType, obj: &Value) {
    if rt.namespaced {
        finish(api, next, meta::namespace(obj));
    }
}

/// Removes the `kubernetes` finalizer of terminating namespace `ns` once it holds nothing.
fn finish(api: &Apiserver, next: &mut FollowUps, ns: &str) {
    let Some(nrt) = namespace_type(api) else {
        return;
    };
    let key = crate::storage::obj_key("", ns);
    let Some(n) = api.store.get_value(&nrt.store_key(), &key) else {
        return;
    };
    if meta::meta_str(&n, "deletionTimestamp").is_none() {
        return;
    }
    let occupied = api
        .registry
        .collections()
        .iter()
        .filter(|t| t.namespaced)
        .any(|t| {
            api.store
                .list(&t.store_key(), Some(ns), None)
                .is_ok_and(|(_, items)| !items.is_empty())
        });
    if occupied {
        return;
    }
    let _ = next.update(api, &nrt, None, ns, |cur| {
        let mut v = cur.clone();
        meta::remove_meta(&mut v, "resourceVersion");
        let kept: Vec<Value> = v
            .get("spec")
            .and_then(|s| s.get("finalizers"))
            .and_then(Value::as_array)
            .map(|a| a.iter().filter(|f| *f != "kubernetes").cloned().collect())
            .unwrap_or_default();
        v["spec"] = json!({ "finalizers": kept });
        Ok(v)
    });
}
