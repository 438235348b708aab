//! [`ApiReader`]: reads straight from the API server, bypassing the cache
//! (controller-runtime's `mgr.GetAPIReader()`). For reads that must see the latest
//! write, or of types not worth an informer; each call is a request.

use kube::api::ListParams;
use serde::de::DeserializeOwned;

use super::Error;
use crate::cache::{CacheObject, Scoped, gvk_string, object_key};

/// An uncached reader. Cheap to clone.
#[derive(Clone)]
pub struct ApiReader {
    kube: kube::Client,
}

impl std::fmt::Debug for ApiReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiReader").finish_non_exhaustive()
    }
}

impl ApiReader {
    /// A reader over `kube`.
    pub fn new(kube: kube::Client) -> Self {
        Self { kube }
    }

    /// The object `namespace/name` (empty namespace for cluster-scoped types).
    pub async fn get<K>(&self, namespace: &str, name: &str) -> Result<K, Error>
    where
        K: CacheObject<DynamicType = ()> + DeserializeOwned,
    {
        let ns = Some(namespace).filter(|n| !n.is_empty());
        let api = <K::Scope as Scoped>::api::<K>(self.kube.clone(), ns, &());
        api.get(name)
            .await
            .map_err(|e| Error::new("get", gvk_string::<K>(&()), object_key(ns, name), e))
    }

    /// The objects `lp` selects in `namespace` (`None`: all namespaces).
    pub async fn list<K>(&self, namespace: Option<&str>, lp: &ListParams) -> Result<Vec<K>, Error>
    where
        K: CacheObject<DynamicType = ()> + DeserializeOwned,
    {
        let api = <K::Scope as Scoped>::api::<K>(self.kube.clone(), namespace, &());
        api.list(lp).await.map(|l| l.items).map_err(|e| {
            Error::new(
                "list",
                gvk_string::<K>(&()),
                namespace.unwrap_or_default().to_string(),
                e,
            )
        })
    }
}
