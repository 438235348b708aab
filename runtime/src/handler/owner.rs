//! [`EnqueueRequestForOwner`]: reconcile the owner named in the object's owner
//! references (controller-runtime's `handler.EnqueueRequestForOwner`).

use std::any::TypeId;

use k8s_openapi::ClusterResourceScope;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Resource;

use super::priority::{on_create, on_update};
use super::{EventHandler, add_unique};
use crate::event::{CreateEvent, DeleteEvent, GenericEvent, UpdateEvent};
use crate::reconcile::Request;
use crate::workqueue::Queue;
use crate::workqueue::triggers::Origin;

/// Enqueues the owners of the event's object whose group and kind match the owner type
/// (the version is ignored). For updates, the owners of both the old and the new object
/// are enqueued, each once. A namespaced owner gets the object's namespace; a
/// cluster-scoped owner gets none.
///
/// By default only the controller owner reference (`controller: true`) is considered,
/// as `Owns` does in controller-runtime's builder (Go's `OnlyControllerOwner()`);
/// [`EnqueueRequestForOwner::match_every_owner`] considers every reference.
#[derive(Clone, Debug)]
pub struct EnqueueRequestForOwner {
    group: String,
    kind: String,
    owner_namespaced: bool,
    only_controller: bool,
}

impl EnqueueRequestForOwner {
    /// Matches owners of type `O` (its group and kind; its scope decides the namespace).
    pub fn new<O>() -> Self
    where
        O: Resource<DynamicType = ()>,
        O::Scope: 'static,
    {
        let namespaced = TypeId::of::<O::Scope>() != TypeId::of::<ClusterResourceScope>();
        Self::for_group_kind(O::group(&()), O::kind(&()), namespaced)
    }

    /// Matches owners of an API group and kind given at run time (e.g. dynamic types).
    pub fn for_group_kind(
        group: impl Into<String>,
        kind: impl Into<String>,
        namespaced: bool,
    ) -> Self {
        Self {
            group: group.into(),
            kind: kind.into(),
            owner_namespaced: namespaced,
            only_controller: true,
        }
    }

    /// Considers only the controller owner reference (the default).
    pub fn only_controller_owner(mut self) -> Self {
        self.only_controller = true;
        self
    }

    /// Considers every owner reference, not just the controller's.
    pub fn match_every_owner(mut self) -> Self {
        self.only_controller = false;
        self
    }

    /// The requests for the matching owners of `obj`, in reference order.
    pub fn owner_requests<K: Resource>(&self, obj: &K, out: &mut Vec<Request>) {
        let meta = obj.meta();
        let refs = meta.owner_references.as_deref().unwrap_or_default();
        let refs: Vec<&OwnerReference> = if self.only_controller {
            refs.iter()
                .filter(|r| r.controller == Some(true))
                .take(1)
                .collect()
        } else {
            refs.iter().collect()
        };
        for r in refs {
            let Some(group) = parse_group(&r.api_version) else {
                tracing::error!(api_version = %r.api_version, "could not parse OwnerReference APIVersion");
                return;
            };
            if r.kind == self.kind && group == self.group {
                let namespace = if self.owner_namespaced {
                    meta.namespace.clone().unwrap_or_default()
                } else {
                    String::new()
                };
                out.push(Request::new(namespace, r.name.clone()));
            }
        }
    }
}

/// The group of an apiVersion (`apps/v1` -> `apps`, `v1` -> ``), or `None` when it has
/// more than one `/` (Go's `schema.ParseGroupVersion` error).
fn parse_group(api_version: &str) -> Option<&str> {
    match api_version.split_once('/') {
        None => Some(""),
        Some((_, v)) if v.contains('/') => None,
        Some((g, _)) => Some(g),
    }
}

impl<K: Resource + 'static> EventHandler<K> for EnqueueRequestForOwner {
    fn create(&self, e: &CreateEvent<K>, q: &dyn Queue<Request>) {
        let mut reqs = Vec::new();
        self.owner_requests(&*e.object, &mut reqs);
        on_create(e, q, |q| add_unique(q, reqs))
    }
    fn update(&self, e: &UpdateEvent<K>, q: &dyn Queue<Request>) {
        let mut reqs = Vec::new();
        self.owner_requests(&*e.object_old, &mut reqs);
        self.owner_requests(&*e.object_new, &mut reqs);
        on_update(e, q, |q| add_unique(q, reqs))
    }
    fn delete(&self, e: &DeleteEvent<K>, q: &dyn Queue<Request>) {
        let mut reqs = Vec::new();
        self.owner_requests(&*e.object, &mut reqs);
        add_unique(q, reqs)
    }
    fn generic(&self, e: &GenericEvent<K>, q: &dyn Queue<Request>) {
        let mut reqs = Vec::new();
        self.owner_requests(&*e.object, &mut reqs);
        add_unique(q, reqs)
    }
    fn trigger_origin(&self) -> Origin {
        Origin::Owns
    }
}

#[cfg(test)]
mod tests {
    use super::parse_group;

    #[test]
    fn parses_groups_like_go() {
        assert_eq!(parse_group("apps/v1"), Some("apps"));
        assert_eq!(parse_group("v1"), Some(""));
        assert_eq!(parse_group(""), Some(""));
        assert_eq!(parse_group("v1/fail/bad"), None);
    }
}
