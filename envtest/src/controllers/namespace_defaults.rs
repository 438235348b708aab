//! What kube-controller-manager puts into every namespace: the `default` ServiceAccount (the
//! serviceaccounts controller, upstream's `pkg/controller/serviceaccount/serviceaccounts_controller.go`)
//! and the `kube-root-ca.crt` ConfigMap holding the server's CA certificate (the
//! root-ca-cert-publisher, `pkg/controller/certificates/rootcacertpublisher/publisher.go`).
//! Both are made when a namespace is written (not terminating) and made again when deleted;
//! the ConfigMap's data is put back when changed. A write observer (`registry::hooks`): they
//! exist before the namespace create returns. On with the workload controllers
//! (`EnvironmentBuilder::simulate_workloads`).

use std::sync::Arc;

use serde_json::{Value, json};

use crate::api::meta;
use crate::registry::ResourceType;
use crate::registry::context::Apiserver;
use crate::registry::hooks::{FollowUps, Observer, Written};

/// The ConfigMap the root CA is published in.
pub(crate) const ROOT_CA: &str = "kube-root-ca.crt";

/// Upstream's description annotation of the root CA ConfigMap.
const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// The two controllers, as one write observer; `ca` is the server's CA certificate (PEM).
pub(crate) struct NamespaceDefaults {
    pub ca: String,
}

impl Observer for NamespaceDefaults {
    fn observe(&self, api: &Apiserver, w: &Written, next: &mut FollowUps) {
        if w.rt.crd.is_some() || !w.rt.group.is_empty() {
            return;
        }
        let ns = meta::namespace(&w.obj);
        match w.rt.plural.as_str() {
            "namespaces" if !w.removed => {
                let ns = meta::name(&w.obj);
                self.ensure_account(api, next, ns);
                self.ensure_root_ca(api, next, ns);
            }
            "serviceaccounts" if w.removed && meta::name(&w.obj) == "default" => {
                self.ensure_account(api, next, ns);
            }
            "configmaps" if meta::name(&w.obj) == ROOT_CA => self.ensure_root_ca(api, next, ns),
            _ => {}
        }
    }
}

impl NamespaceDefaults {
    /// The `default` ServiceAccount of `ns`, created if missing.
    fn ensure_account(&self, api: &Apiserver, next: &mut FollowUps, ns: &str) {
        let Some(rt) = live_namespace_type(api, ns, "serviceaccounts") else {
            return;
        };
        if get(api, &rt, ns, "default").is_none() {
            let sa = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                "metadata": {"name": "default", "namespace": ns}});
            let _ = next.create(api, &rt, Some(ns), sa);
        }
    }

    /// The `kube-root-ca.crt` ConfigMap of `ns`, created if missing, its data put back if
    /// changed.
    fn ensure_root_ca(&self, api: &Apiserver, next: &mut FollowUps, ns: &str) {
        let Some(rt) = live_namespace_type(api, ns, "configmaps") else {
            return;
        };
        let data = json!({"ca.crt": self.ca});
        match get(api, &rt, ns, ROOT_CA) {
            None => {
                let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": ROOT_CA, "namespace": ns,
                        "annotations": {"kubernetes.io/description": DESCRIPTION}},
                    "data": data});
                let _ = next.create(api, &rt, Some(ns), cm);
            }
            Some(cm) if cm.get("data") != Some(&data) => {
                let _ = next.update(api, &rt, Some(ns), ROOT_CA, |cur| {
                    let mut v = cur.clone();
                    meta::remove_meta(&mut v, "resourceVersion");
                    v["data"] = data;
                    Ok(v)
                });
            }
            Some(_) => {}
        }
    }
}

/// The core/v1 type `plural`, if namespace `ns` exists and is not terminating.
fn live_namespace_type(api: &Apiserver, ns: &str, plural: &str) -> Option<Arc<ResourceType>> {
    let snap = api.registry.snapshot();
    let nrt = snap.get("", "v1", "namespaces")?;
    let n = get(api, nrt, "", ns)?;
    if meta::meta_str(&n, "deletionTimestamp").is_some() {
        return None;
    }
    snap.get("", "v1", plural).cloned()
}

fn get(api: &Apiserver, rt: &ResourceType, ns: &str, name: &str) -> Option<Value> {
    let key = crate::registry::objects::okey(rt, Some(ns), name);
    api.store.get_value(&rt.store_key(), &key)
}
