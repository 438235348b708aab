//! [`ApiReader`]: reads straight from the API server, bypassing the cache
//! (controller-runtime's `mgr.GetAPIReader()`). For reads that must see the latest
//! write, or of types not worth an informer; each call is a request.

use kube::api::ListParams;

use super::Error;
use crate::cache::{CacheObject, Scoped, gvk_string, object_key, typed_form};

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

    typed_form! {
        /// The object `namespace/name` (empty namespace for cluster-scoped types).
        pub async fn get<K>(&self, namespace: &str, name: &str) -> Result<K, Error> = get_with
        where K: CacheObject<DynamicType = ()>
    }

    /// The object `namespace/name` of `K` with dynamic type `dt` (a `DynamicObject`
    /// and its `ApiResource`).
    pub async fn get_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        namespace: &str,
        name: &str,
    ) -> Result<K, Error> {
        let ns = Some(namespace).filter(|n| !n.is_empty());
        let api = <K::Scope as Scoped>::api::<K>(self.kube.clone(), ns, dt);
        api.get(name)
            .await
            .map_err(|e| Error::new("get", gvk_string::<K>(dt), object_key(ns, name), e))
    }

    typed_form! {
        /// The objects `lp` selects in `namespace` (`None`: all namespaces).
        pub async fn list<K>(&self, namespace: Option<&str>, lp: &ListParams) -> Result<Vec<K>, Error> = list_with
        where K: CacheObject<DynamicType = ()>
    }

    /// The objects of `K` with dynamic type `dt` that `lp` selects in `namespace`.
    pub async fn list_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        namespace: Option<&str>,
        lp: &ListParams,
    ) -> Result<Vec<K>, Error> {
        let api = <K::Scope as Scoped>::api::<K>(self.kube.clone(), namespace, dt);
        api.list(lp).await.map(|l| l.items).map_err(|e| {
            Error::new(
                "list",
                gvk_string::<K>(dt),
                namespace.unwrap_or_default().to_string(),
                e,
            )
        })
    }
}
