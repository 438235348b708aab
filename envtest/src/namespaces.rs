//! Namespace lifecycle (spec §1.16), kube-controller-manager's namespace controller in
//! miniature: once a Namespace is marked for deletion (`verbs::delete` sets `Terminating`),
//! every namespaced object in it is deleted (finalizers honoured: marked objects wait for their
//! clients), and when the namespace is empty its `kubernetes` spec finalizer is removed, which
//! removes the namespace. Driven by `gc::after_write` after each committed write, so it shares
//! the `controllers` switch with the garbage collector.

use std::sync::Arc;

use serde_json::{Value, json};

use crate::registry::ResourceType;
use crate::registry::context::State;

use crate::verbs::{delete, update};
use crate::{api::meta, gc};

fn is_namespace(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "namespaces" && rt.crd.is_none()
}

fn namespace_type(state: &State) -> Option<Arc<ResourceType>> {
    state
        .registry
        .snapshot()
        .get("", "v1", "namespaces")
        .cloned()
}

/// A namespace was just marked for deletion: delete its contents, then finish if empty.
pub(crate) fn after_mark(state: &Arc<State>, rt: &ResourceType, obj: &Value) {
    if !is_namespace(rt) {
        return;
    }
    let ns = meta::name(obj).to_string();
    for t in gc::collections(state).into_iter().filter(|t| t.namespaced) {
        let Ok((_, items)) = state.store.list(&t.store_key(), Some(&ns), None) else {
            continue;
        };
        for ((_, name), bytes) in items {
            let o = crate::storage::parse(&bytes);
            if meta::meta_str(&o, "deletionTimestamp").is_some() {
                continue;
            }
            let _ = delete::delete_object(state, &t, Some(&ns), &name, &Default::default());
        }
    }
    finish(state, &ns);
}

/// A namespaced object was removed: its terminating namespace may now be empty.
pub(crate) fn after_remove(state: &Arc<State>, rt: &ResourceType, obj: &Value) {
    if rt.namespaced {
        finish(state, meta::namespace(obj));
    }
}

/// Removes the `kubernetes` finalizer of terminating namespace `ns` once it holds nothing.
fn finish(state: &Arc<State>, ns: &str) {
    let Some(nrt) = namespace_type(state) else {
        return;
    };
    let key = (String::new(), ns.to_string());
    let Some(n) = state.store.get_value(&nrt.store_key(), &key) else {
        return;
    };
    if meta::meta_str(&n, "deletionTimestamp").is_none() {
        return;
    }
    let occupied = gc::collections(state)
        .iter()
        .filter(|t| t.namespaced)
        .any(|t| {
            state
                .store
                .list(&t.store_key(), Some(ns), None)
                .is_ok_and(|(_, items)| !items.is_empty())
        });
    if occupied {
        return;
    }
    let _ = update::update_object(
        state,
        &nrt,
        None,
        ns,
        None,
        Default::default(),
        false,
        |cur| {
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
        },
    );
}
