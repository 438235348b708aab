//! [`Request`]: the key of the object to reconcile, as the work queue holds it, and
//! [`TypedRequest`]: what any controller's queue may hold instead.

use std::fmt;
use std::hash::Hash;

use kube::Resource;

/// The namespace and name of the object to reconcile (controller-runtime's
/// `reconcile.Request`). Cluster-scoped objects have an empty namespace.
///
/// Displays as `namespace/name`, or just `name` when the namespace is empty, like
/// Go's `types.NamespacedName`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Request {
    /// The object's namespace; empty for cluster-scoped objects.
    pub namespace: String,
    /// The object's name.
    pub name: String,
}

impl Request {
    /// A request for `name` in `namespace`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// A request for a cluster-scoped object.
    pub fn cluster(name: impl Into<String>) -> Self {
        Self::new(String::new(), name)
    }

    /// The request for `obj`: its namespace (if any) and name.
    pub fn from_obj<K: Resource>(obj: &K) -> Self {
        let meta = obj.meta();
        Self {
            namespace: meta.namespace.clone().unwrap_or_default(),
            name: meta.name.clone().unwrap_or_default(),
        }
    }
}

/// A request type a controller's work queue can hold and its reconciler receives
/// (the `request comparable` type parameter of controller-runtime's
/// `TypedReconciler`, `TypedController`, `TypedEventHandler` and `TypedSource`).
///
/// Every `Clone + Eq + Hash + Debug + Send + Sync + 'static` type is one: the queue
/// deduplicates requests by value and rate-limits each value on its own; `Debug` names
/// it in the reconcile's log span. [`Request`] is the default everywhere; a controller
/// over several clusters might use `struct ClusterRequest { cluster: String, request:
/// Request }`.
pub trait TypedRequest: Clone + Eq + Hash + fmt::Debug + Send + Sync + 'static {}

impl<T: Clone + Eq + Hash + fmt::Debug + Send + Sync + 'static> TypedRequest for T {}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            f.write_str(&self.name)
        } else {
            write!(f, "{}/{}", self.namespace, self.name)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use kube::api::ObjectMeta;

    #[test]
    fn display_and_from_obj() {
        assert_eq!(Request::new("ns", "a").to_string(), "ns/a");
        assert_eq!(Request::cluster("node-1").to_string(), "node-1");
        let cm = ConfigMap {
            metadata: ObjectMeta {
                name: Some("cm".into()),
                namespace: Some("default".into()),
                ..Default::default()
            },
            ..Default::default()
        };
        assert_eq!(Request::from_obj(&cm), Request::new("default", "cm"));
        assert_eq!(Request::from_obj(&ConfigMap::default()), Request::default());
    }
}
