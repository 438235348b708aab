//! [`ApiReader`]: reads straight from the API server, bypassing the cache
//! (controller-runtime's `mgr.GetAPIReader()`). For reads that must see the latest
//! write, or of types not worth an informer; each call is a request.

use kube::api::ListParams;

use super::Error;
use crate::cache::{CacheObject, ListOptions, Reader, Scoped, gvk_string, object_key};

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
}

impl Reader for ApiReader {
    type Object<K: CacheObject> = K;
    type Error = Error;

    async fn get_with<K: CacheObject>(
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

    /// The objects `opts` selects, its labels and fields as the server's selectors (the
    /// server knows only its own field selectors, not a cache's indexes).
    async fn list_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        opts: &ListOptions,
    ) -> Result<Vec<K>, Error> {
        let namespace = opts.namespace.as_deref().filter(|n| !n.is_empty());
        let lp = list_params(opts);
        let api = <K::Scope as Scoped>::api::<K>(self.kube.clone(), namespace, dt);
        api.list(&lp).await.map(|l| l.items).map_err(|e| {
            Error::new(
                "list",
                gvk_string::<K>(dt),
                namespace.unwrap_or_default().to_string(),
                e,
            )
        })
    }
}

/// `opts` as the server's list parameters: labels and fields as selectors (the server
/// knows only its own field selectors, not the cache's indexes), the limit.
pub(super) fn list_params(opts: &ListOptions) -> ListParams {
    let mut lp = ListParams::default();
    if let Some(sel) = &opts.labels {
        lp.label_selector = Some(sel.to_string()).filter(|s| !s.is_empty());
    }
    if !opts.fields.is_empty() {
        let fields: Vec<String> = opts
            .fields
            .iter()
            .map(|(f, v)| format!("{f}={v}"))
            .collect();
        lp.field_selector = Some(fields.join(","));
    }
    if let Some(n) = opts.limit.filter(|n| *n > 0) {
        lp.limit = u32::try_from(n).ok();
    }
    lp
}
