//! CRD cleanup (apiextensions-apiserver's finalizer controller): a CustomResourceDefinition being
//! deleted is held by the `customresourcecleanup.apiextensions.k8s.io` finalizer
//! ([`registry::crd::CLEANUP_FINALIZER`](crate::registry::crd::CLEANUP_FINALIZER)) while its custom
//! resources are deleted (finalizers honoured); when the last is gone the finalizer is dropped and
//! the CRD goes, taking its types, routes and watches with it
//! ([`registry::crd::after_commit`](crate::registry::crd::after_commit)). A write observer
//! ([`registry::hooks`](crate::registry::hooks)) that always runs — it is part of the API server,
//! not of kube-controller-manager, so `EnvironmentBuilder::controllers(false)` keeps it.

use serde_json::{Value, json};

use crate::api::meta;
use crate::registry::context::Apiserver;
use crate::registry::crd::{CLEANUP_FINALIZER, is_crd_type, store_key_of};
use crate::registry::hooks::{FollowUps, Observer, Verb, Written};
use crate::registry::rest::DeleteOpts;

/// The CRD cleanup, as a write observer.
pub(crate) struct CrdCleanup;

impl Observer for CrdCleanup {
    /// A CRD marked by a delete has its objects deleted; a removed custom object may let its
    /// deleting CRD go.
    fn observe(&self, api: &Apiserver, w: &Written, next: &mut FollowUps) {
        if is_crd_type(&w.rt) {
            if w.verb == Verb::Delete && !w.removed {
                after_delete_marked(api, next, &w.obj);
            }
        } else if let Some(crd) = &w.rt.crd
            && w.removed
        {
            maybe_finish(api, next, crd);
        }
    }
}

/// A CRD just marked for deletion: delete its objects, then finish if none is left.
fn after_delete_marked(api: &Apiserver, next: &mut FollowUps, obj: &Value) {
    let name = meta::name(obj).to_string();
    let snap = api.registry.snapshot();
    let Some(crt) = snap
        .types
        .iter()
        .find(|t| t.crd.as_deref() == Some(name.as_str()))
        .cloned()
    else {
        maybe_finish(api, next, &name);
        return;
    };
    if let Ok((_, items)) = api.store.list(&crt.store_key(), None, None) {
        let opts = DeleteOpts::default();
        for ((ns, name), _) in items {
            let _ = next.delete(api, &crt, Some(&ns), &name, &opts);
        }
    }
    maybe_finish(api, next, &name);
}

/// Removes the cleanup finalizer of a deleting CRD whose objects are all gone.
fn maybe_finish(api: &Apiserver, next: &mut FollowUps, crd: &str) {
    let snap = api.registry.snapshot();
    let Some(crd_rt) = snap.types.iter().find(|t| is_crd_type(t)).cloned() else {
        return;
    };
    let Some(obj) = api
        .store
        .get_value(&crd_rt.store_key(), &crate::storage::obj_key("", crd))
    else {
        return;
    };
    if meta::meta_str(&obj, "deletionTimestamp").is_none() {
        return;
    }
    if api.store.count(&store_key_of(&obj)) > 0 {
        return;
    }
    let _ = next.update(api, &crd_rt, None, crd, |cur| {
        let mut v = cur.clone();
        let f: Vec<String> = meta::finalizers(&v)
            .into_iter()
            .filter(|x| x != CLEANUP_FINALIZER)
            .collect();
        meta::set_meta(&mut v, "finalizers", json!(f));
        Ok(v)
    });
}
