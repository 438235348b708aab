//! Types read uncached (controller-runtime's `client.CacheOptions.DisableFor`): a
//! [`Client`] built with [`Client::disable_for`] reads those types straight from the
//! server through its [`ApiReader`](super::ApiReader) and never starts an informer
//! for them — for types read rarely, or too many to hold in memory (Secrets), or that
//! must be read fresh. Everything else still reads the cache ([`crate::cache`]).

use std::sync::Arc;

use super::{Client, Error};
use crate::cache::{CacheObject, ListOptions, Reader, type_key};

impl Client {
    /// Reads of typed resource `K` go to the server, not the cache.
    pub fn disable_for<K: CacheObject<DynamicType = ()>>(self) -> Self {
        self.disable_for_with::<K>(&())
    }

    /// Reads of `K` with dynamic type `dt` go to the server, not the cache.
    pub fn disable_for_with<K: CacheObject>(mut self, dt: &K::DynamicType) -> Self {
        Arc::make_mut(&mut self.uncached).insert(type_key::<K>(dt));
        self
    }

    /// Whether reads of `K` bypass the cache.
    pub(crate) fn is_uncached<K: CacheObject>(&self, dt: &K::DynamicType) -> bool {
        !self.uncached.is_empty() && self.uncached.contains(&type_key::<K>(dt))
    }

    pub(crate) async fn get_uncached<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<K>, Error> {
        self.api_reader()
            .get_with::<K>(dt, namespace, name)
            .await
            .map(Arc::new)
    }

    pub(crate) async fn list_uncached<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        opts: &ListOptions,
    ) -> Result<Vec<Arc<K>>, Error> {
        let items = self.api_reader().list_with::<K>(dt, opts).await?;
        Ok(items.into_iter().map(Arc::new).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::api_reader::list_params;

    #[test]
    fn list_options_become_server_selectors() {
        let opts = ListOptions::new()
            .matching_label_map([("app", "x")])
            .matching_field("metadata.name", "a")
            .limit(3);
        let lp = list_params(&opts);
        assert_eq!(lp.label_selector.as_deref(), Some("app=x"));
        assert_eq!(lp.field_selector.as_deref(), Some("metadata.name=a"));
        assert_eq!(lp.limit, Some(3));
        assert_eq!(list_params(&ListOptions::new()).label_selector, None);
    }
}
