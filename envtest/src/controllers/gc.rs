//! The garbage collector (`k8s.io/kubernetes/pkg/controller/garbagecollector/garbagecollector.go`),
//! an in-process stand-in for kube-controller-manager's: it follows `metadata.ownerReferences`.
//! When an owner is removed, dependents whose owners are now all gone are deleted (Background) and
//! the others lose the dangling reference; an owner marked with the `orphan` finalizer has its
//! reference removed from every dependent, then the finalizer; an owner marked with
//! `foregroundDeletion` has its dependents deleted and keeps the finalizer until no dependent with
//! `blockOwnerDeletion: true` is left.
//!
//! It is a write observer of the registry ([`Gc`], [`registry::hooks`](crate::registry::hooks)): it
//! sees every committed write and acts through the registry's generic write path (`FollowUps`), so
//! every action is an ordinary write (new resourceVersion, watch event) whose own consequences are
//! observed in turn. [`super::namespaces`] does the namespace lifecycle the same way. Both are off
//! with `EnvironmentBuilder::controllers(false)` (Go envtest parity).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::meta;
use crate::registry::ResourceType;
use crate::registry::context::Apiserver;
use crate::registry::hooks::{FollowUps, Observer, Written};
use crate::registry::rest::DeleteOpts;

/// The garbage collector, as a write observer.
pub(crate) struct Gc;

impl Observer for Gc {
    /// Reacts to a committed write of an object (removed, or possibly marked for deletion).
    fn observe(&self, api: &Apiserver, w: &Written, next: &mut FollowUps) {
        if w.rt.virtual_create {
            return;
        }
        react(api, next, &w.rt, &w.obj, w.removed);
    }
}

fn react(api: &Apiserver, next: &mut FollowUps, rt: &ResourceType, obj: &Value, removed: bool) {
    // Most writes neither remove nor mark for deletion: they return before anything is copied.
    if !removed && meta::meta_str(obj, "deletionTimestamp").is_none() {
        return;
    }
    let uid = meta::meta_str(obj, "uid").unwrap_or("").to_string();
    if removed {
        owner_gone(api, next, rt, obj, &uid);
        // An owner in foreground deletion may have been waiting for this dependent.
        for r in refs(obj) {
            if let Some((ort, owner)) = find_owner(api, obj, &r)
                && meta::finalizers(&owner)
                    .iter()
                    .any(|f| f == "foregroundDeletion")
            {
                finish_foreground(api, next, &ort, &owner);
            }
        }
        return;
    }
    let fins = meta::finalizers(obj);
    if fins.iter().any(|f| f == "orphan") {
        for (drt, d) in dependents(api, rt, obj, &uid) {
            drop_ref(api, next, &drt, &d, &uid);
        }
        remove_finalizer(api, next, rt, obj, "orphan");
    } else if fins.iter().any(|f| f == "foregroundDeletion") {
        for (drt, d) in dependents(api, rt, obj, &uid) {
            if meta::meta_str(&d, "deletionTimestamp").is_none() {
                let policy = if dependents(api, &drt, &d, meta::meta_str(&d, "uid").unwrap_or(""))
                    .is_empty()
                {
                    "Background"
                } else {
                    "Foreground"
                };
                delete_one(api, next, &drt, &d, policy);
            }
        }
        if let Some(owner) = api.store.get_value(&rt.store_key(), &key_of(rt, obj)) {
            finish_foreground(api, next, rt, &owner);
        }
    }
}

/// The owner references of an object.
fn refs(obj: &Value) -> Vec<Value> {
    obj.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn key_of(rt: &ResourceType, obj: &Value) -> crate::storage::ObjKey {
    crate::registry::objects::okey(rt, Some(meta::namespace(obj)), meta::name(obj))
}

/// The live owner a reference of `dependent` points to (same uid), with its type.
fn find_owner(api: &Apiserver, dependent: &Value, r: &Value) -> Option<(Arc<ResourceType>, Value)> {
    let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
    let snap = api.registry.snapshot();
    let ort = snap
        .types
        .iter()
        .find(|t| t.api_version() == s("apiVersion") && t.kind == s("kind") && !t.virtual_create)?
        .clone();
    if ort.namespaced && meta::namespace(dependent).is_empty() {
        return None;
    }
    let okey = crate::registry::objects::okey(&ort, Some(meta::namespace(dependent)), s("name"));
    let owner = api.store.get_value(&ort.store_key(), &okey)?;
    (meta::meta_str(&owner, "uid") == Some(s("uid"))).then_some((ort, owner))
}

/// Objects whose ownerReferences name `uid`, in the owner's namespace (or anywhere for a
/// cluster-scoped owner).
fn dependents(
    api: &Apiserver,
    rt: &ResourceType,
    owner: &Value,
    uid: &str,
) -> Vec<(Arc<ResourceType>, Value)> {
    if uid.is_empty() {
        return Vec::new();
    }
    let ns = rt.namespaced.then(|| meta::namespace(owner));
    let mut out = Vec::new();
    for t in api.registry.collections() {
        if ns.is_some() && !t.namespaced {
            continue;
        }
        let Ok((_, items)) = api
            .store
            .list(&t.store_key(), ns.filter(|_| t.namespaced), None)
        else {
            continue;
        };
        for (_, bytes) in items {
            let d = crate::storage::parse(&bytes);
            if refs(&d)
                .iter()
                .any(|r| r.get("uid").and_then(Value::as_str) == Some(uid))
            {
                out.push((t.clone(), d));
            }
        }
    }
    out
}

/// An owner with `uid` is gone: delete orphaned dependents, trim the others' references.
fn owner_gone(api: &Apiserver, next: &mut FollowUps, rt: &ResourceType, owner: &Value, uid: &str) {
    for (drt, d) in dependents(api, rt, owner, uid) {
        let others_live = refs(&d)
            .iter()
            .filter(|r| r.get("uid").and_then(Value::as_str) != Some(uid))
            .any(|r| find_owner(api, &d, r).is_some());
        if others_live {
            drop_ref(api, next, &drt, &d, uid);
        } else if meta::meta_str(&d, "deletionTimestamp").is_none() {
            delete_one(api, next, &drt, &d, "Background");
        }
    }
}

fn delete_one(
    api: &Apiserver,
    next: &mut FollowUps,
    rt: &Arc<ResourceType>,
    d: &Value,
    policy: &str,
) {
    let opts = DeleteOpts {
        policy: Some(policy.to_string()),
        uid: meta::meta_str(d, "uid").map(String::from),
        ..Default::default()
    };
    let ns = rt.namespaced.then(|| meta::namespace(d));
    let _ = next.delete(api, rt, ns, meta::name(d), &opts);
}

/// Rewrites `d` through the update path with `f`.
fn modify(
    api: &Apiserver,
    next: &mut FollowUps,
    rt: &Arc<ResourceType>,
    d: &Value,
    f: impl FnOnce(&mut Value),
) {
    let ns = rt.namespaced.then(|| meta::namespace(d));
    let served = rt.clone();
    let _ = next.update(api, rt, ns, meta::name(d), |cur| {
        let mut v = crate::registry::objects::served(cur, &served).into_owned();
        meta::remove_meta(&mut v, "resourceVersion");
        f(&mut v);
        Ok(v)
    });
}

fn drop_ref(api: &Apiserver, next: &mut FollowUps, rt: &Arc<ResourceType>, d: &Value, uid: &str) {
    let uid = uid.to_string();
    modify(api, next, rt, d, move |v| {
        let kept: Vec<Value> = refs(v)
            .into_iter()
            .filter(|r| r.get("uid").and_then(Value::as_str) != Some(uid.as_str()))
            .collect();
        meta::set_meta(v, "ownerReferences", json!(kept));
    });
}

fn remove_finalizer(
    api: &Apiserver,
    next: &mut FollowUps,
    rt: &ResourceType,
    obj: &Value,
    f: &str,
) {
    let Some(rt) = api
        .registry
        .snapshot()
        .get(&rt.group, &rt.version, &rt.plural)
        .cloned()
    else {
        return;
    };
    let f = f.to_string();
    modify(api, next, &rt, obj, move |v| {
        let kept: Vec<String> = meta::finalizers(v)
            .into_iter()
            .filter(|x| *x != f)
            .collect();
        meta::set_meta(v, "finalizers", json!(kept));
    });
}

/// Removes `foregroundDeletion` once no dependent with `blockOwnerDeletion: true` is left.
fn finish_foreground(api: &Apiserver, next: &mut FollowUps, rt: &ResourceType, owner: &Value) {
    let uid = meta::meta_str(owner, "uid").unwrap_or("");
    let blocking = dependents(api, rt, owner, uid).iter().any(|(_, d)| {
        refs(d).iter().any(|r| {
            r.get("uid").and_then(Value::as_str) == Some(uid)
                && r.get("blockOwnerDeletion").and_then(Value::as_bool) == Some(true)
        })
    });
    if !blocking {
        remove_finalizer(api, next, rt, owner, "foregroundDeletion");
    }
}
