//! [`ClusterName`] and [`ClusterRequest`]: the cluster dimension of a request
//! (multicluster-runtime's `multicluster.ClusterName` and `mcreconcile.Request`).

use std::borrow::Borrow;
use std::fmt;

use kube::Resource;

use crate::reconcile::Request;

/// The name a [`Provider`](super::Provider) gives a cluster: the key of
/// [`Manager::cluster`](super::Manager::cluster), the `cluster` field of logs and spans.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClusterName(String);

impl ClusterName {
    /// A cluster name.
    pub fn new(name: impl Into<String>) -> Self {
        Self(name.into())
    }

    /// The name as a string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ClusterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ClusterName {
    fn from(s: &str) -> Self {
        Self(s.to_string())
    }
}

impl From<String> for ClusterName {
    fn from(s: String) -> Self {
        Self(s)
    }
}

impl From<&ClusterName> for ClusterName {
    fn from(s: &ClusterName) -> Self {
        s.clone()
    }
}

impl AsRef<str> for ClusterName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for ClusterName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

/// The object to reconcile and the cluster it lives in (multicluster-runtime's
/// `mcreconcile.Request`): what a multi-cluster controller's queue holds. The same
/// namespace and name in two clusters are two requests.
///
/// Displays as `cluster://<cluster>/<namespace>/<name>` (`cluster://<cluster>/<name>`
/// for a cluster-scoped object); `Debug` shows the same, so the `request` field of a
/// reconcile's span reads `cluster://member-1/default/x`.
#[derive(Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClusterRequest {
    /// The cluster the object lives in.
    pub cluster: ClusterName,
    /// The object's namespace; empty for cluster-scoped objects.
    pub namespace: String,
    /// The object's name.
    pub name: String,
}

impl ClusterRequest {
    /// A request for `namespace/name` in `cluster`.
    pub fn new(
        cluster: impl Into<ClusterName>,
        namespace: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        Self {
            cluster: cluster.into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }

    /// `req` in `cluster`.
    pub fn from_request(cluster: impl Into<ClusterName>, req: Request) -> Self {
        Self::new(cluster, req.namespace, req.name)
    }

    /// The request for `obj` in `cluster`.
    pub fn from_obj<K: Resource>(cluster: impl Into<ClusterName>, obj: &K) -> Self {
        Self::from_request(cluster, Request::from_obj(obj))
    }

    /// The namespace and name, without the cluster (the single-cluster request).
    pub fn request(&self) -> Request {
        Request::new(self.namespace.clone(), self.name.clone())
    }
}

impl fmt::Display for ClusterRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.namespace.is_empty() {
            write!(f, "cluster://{}/{}", self.cluster, self.name)
        } else {
            write!(
                f,
                "cluster://{}/{}/{}",
                self.cluster, self.namespace, self.name
            )
        }
    }
}

impl fmt::Debug for ClusterRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_as_a_cluster_url() {
        let r = ClusterRequest::new("member-1", "default", "x");
        assert_eq!(r.to_string(), "cluster://member-1/default/x");
        assert_eq!(
            ClusterRequest::new("m", "", "node-1").to_string(),
            "cluster://m/node-1"
        );
        assert_eq!(r.request(), Request::new("default", "x"));
        assert_ne!(r, ClusterRequest::new("member-2", "default", "x"));
    }
}
