//! The client: reads from the cache, writes to the API server (controller-runtime's
//! `pkg/client` as the manager builds it).
//!
//! [`Client::get`] and [`Client::list`] read the shared informer cache
//! (`crate::cache`), starting an informer on a type's first read. Writes (`write`) go
//! straight to the server through kube's `Api`: create, update, patch (merge, JSON,
//! strategic, server-side apply with field manager and force), delete (propagation,
//! preconditions) and delete-all-of. [`Client::status`] writes the status subresource
//! (`status`); [`Client::api_reader`] reads the server uncached (`api_reader`).
//!
//! **Staleness.** As in controller-runtime, a read after a write may not see it yet:
//! the cache learns of the write from its watch, usually within milliseconds. A
//! reconciler that must see its own write re-reads through `api_reader`, or relies on
//! the next reconcile (the write's watch event triggers one). Conflicting updates fail
//! with 409 ([`Error::is_conflict`]); requeue and retry.

mod api_reader;
mod error;
mod status;
mod write;

use std::sync::Arc;

use crate::cache::{Cache, CacheObject, ListOptions, gvk_string, object_key};

pub use api_reader::ApiReader;
pub use error::{Error, Source, ignore_already_exists, ignore_not_found};
pub use kube::api::{
    DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
};
pub use status::StatusClient;
pub use write::{Writable, WritableWith};

/// Cached reads, direct writes (controller-runtime's `client.Client`). Cheap to clone.
#[derive(Clone)]
pub struct Client {
    kube: kube::Client,
    cache: Cache,
    field_owner: Option<String>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("field_owner", &self.field_owner)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client writing through `kube` and reading from `cache`.
    pub fn new(kube: kube::Client, cache: Cache) -> Self {
        Self {
            kube,
            cache,
            field_owner: None,
        }
    }

    /// Sets the field manager of every write that does not name one
    /// (controller-runtime's `client.WithFieldOwner`).
    pub fn with_field_owner(mut self, owner: impl Into<String>) -> Self {
        self.field_owner = Some(owner.into());
        self
    }

    /// The cache reads come from.
    pub fn cache(&self) -> &Cache {
        &self.cache
    }

    /// The kube client writes go through.
    pub fn kube_client(&self) -> &kube::Client {
        &self.kube
    }

    /// A reader that bypasses the cache (controller-runtime's `APIReader`).
    pub fn api_reader(&self) -> ApiReader {
        ApiReader::new(self.kube.clone())
    }

    /// Writes to the status subresource.
    pub fn status(&self) -> StatusClient<'_> {
        StatusClient::new(self)
    }

    /// The typed object `namespace/name` from the cache (`namespace` empty for
    /// cluster-scoped types).
    pub async fn get<K>(&self, namespace: &str, name: &str) -> Result<Arc<K>, Error>
    where
        K: CacheObject<DynamicType = ()>,
    {
        self.get_with::<K>(&(), namespace, name).await
    }

    /// The object `namespace/name` of `K` with dynamic type `dt` from the cache.
    pub async fn get_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<K>, Error> {
        self.cache
            .get_with::<K>(dt, namespace, name)
            .await
            .map_err(|e| {
                Error::new(
                    "get",
                    gvk_string::<K>(dt),
                    object_key(Some(namespace), name),
                    e,
                )
            })
    }

    /// Typed objects matching `opts`, from the cache.
    pub async fn list<K>(&self, opts: &ListOptions) -> Result<Vec<Arc<K>>, Error>
    where
        K: CacheObject<DynamicType = ()>,
    {
        self.list_with::<K>(&(), opts).await
    }

    /// Objects of `K` with dynamic type `dt` matching `opts`, from the cache.
    pub async fn list_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        opts: &ListOptions,
    ) -> Result<Vec<Arc<K>>, Error> {
        self.cache.list_with::<K>(dt, opts).await.map_err(|e| {
            Error::new(
                "list",
                gvk_string::<K>(dt),
                opts.namespace.clone().unwrap_or_default(),
                e,
            )
        })
    }

    /// `pp` with the client's field owner when it names none.
    fn post_params(&self, mut pp: PostParams) -> PostParams {
        if pp.field_manager.is_none() {
            pp.field_manager = self.field_owner.clone();
        }
        pp
    }

    /// `pp` with the client's field owner when it names none.
    fn patch_params(&self, mut pp: PatchParams) -> PatchParams {
        if pp.field_manager.is_none() {
            pp.field_manager = self.field_owner.clone();
        }
        pp
    }
}
