//! The client: reads from the cache, writes to the API server (controller-runtime's
//! `pkg/client` as the manager builds it).
//!
//! [`Reader::get`] and [`Reader::list`] on a client read the shared informer cache
//! ([`crate::cache`]), starting an informer on a type's first read. Writes (`write`) go
//! straight to the server through kube's `Api`: create, update, patch (merge, JSON,
//! strategic, server-side apply with field manager and force), delete (propagation,
//! preconditions) and delete-all-of. [`Client::status`] writes the status subresource
//! (a [`Writer`] aimed at `status`: `writer`), [`Client::sub_resource`] any named subresource (`subresource`);
//! [`Client::api_reader`] reads the server uncached (`api_reader`), and types named
//! in [`Client::disable_for`] are always read that way (`uncached`).
//! [`WriteOptions`] (`options`) carry dry-run, field manager and field validation per
//! call; [`Client::with_dry_run`] and [`Client::with_field_validation`] set them for
//! every write. [`NamespacedClient`] (`namespaced`) pins every call to one namespace;
//! [`log_api_warnings`] (`warnings`) logs the `Warning` headers the server sends;
//! [`RestMapper`] (`restmapper`) resolves the `ApiResource` of a kind at run time.
//!
//! **Staleness.** As in controller-runtime, a read after a write may not see it yet:
//! the cache learns of the write from its watch, usually within milliseconds. A client
//! built with read-your-own-writes ([`Client::with_read_your_writes`], [`Options`];
//! `consistency`) makes its cached reads wait until the cache has observed the client's
//! own writes. Without it, a reconciler that must see its own write re-reads through
//! `api_reader`, or relies on the next reconcile (the write's watch event triggers one).
//! Conflicting updates fail with 409 ([`Error::is_conflict`]); requeue and retry.

mod api_reader;
pub mod apply;
mod consistency;
mod error;
mod namespaced;
mod options;
mod restmapper;
mod subresource;
mod uncached;
mod warnings;
mod write;
mod writer;

use std::collections::HashSet;
use std::sync::Arc;

use crate::cache::{Cache, CacheObject, ListOptions, Reader, gvk_string, object_key};
use crate::reconcile::{self, ObjectGetter, Request};

pub use api_reader::ApiReader;
pub use consistency::{
    CacheOptions, DEFAULT_READ_YOUR_WRITES_TIMEOUT, FORGET_AFTER, Options,
    READ_YOUR_WRITES_TIMEOUTS,
};
pub use error::{Error, Source, ignore_already_exists, ignore_not_found};
pub use kube::api::{
    DeleteParams, Patch, PatchParams, PostParams, Preconditions, PropagationPolicy,
};
pub use namespaced::NamespacedClient;
pub use options::{FieldValidation, WriteOptions};
pub use restmapper::{RestMapper, RestMapperError};
pub use subresource::SubResourceClient;
pub use warnings::{WarningLogger, log_api_warnings};
pub use writer::{ObjectWriter, PendingWrite, Writable, WritableWith, Writer};

/// The status writer [`Client::status`] returns: the client's [`Writer`] aimed at the
/// `status` subresource (controller-runtime's `client.StatusWriter`).
pub type StatusClient<'a> = Writer<'a>;

/// Cached reads, direct writes (controller-runtime's `client.Client`). Cheap to clone.
#[derive(Clone)]
pub struct Client {
    kube: kube::Client,
    cache: Cache,
    field_owner: Option<String>,
    dry_run: bool,
    field_validation: Option<FieldValidation>,
    /// `type_key`s of the types read straight from the server.
    uncached: Arc<HashSet<String>>,
    /// Read-your-own-writes, when on (`consistency`).
    ryw: Option<consistency::ReadYourWrites>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("field_owner", &self.field_owner)
            .field("dry_run", &self.dry_run)
            .field("field_validation", &self.field_validation)
            .field("uncached", &self.uncached)
            .field("read_your_writes", &self.reads_your_writes())
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
            dry_run: false,
            field_validation: None,
            uncached: Arc::default(),
            ryw: None,
        }
    }

    /// A client whose every write is a dry run (`dryRun=All`): the server validates,
    /// admits and answers with what it would store, and stores nothing
    /// (controller-runtime's `client.NewDryRunClient`).
    pub fn with_dry_run(mut self) -> Self {
        self.dry_run = true;
        self
    }

    /// Sets the field validation of every write that does not choose one
    /// (controller-runtime's `client.WithFieldValidation`).
    pub fn with_field_validation(mut self, v: FieldValidation) -> Self {
        self.field_validation = Some(v);
        self
    }

    /// Whether every write is a dry run ([`with_dry_run`](Self::with_dry_run)).
    pub fn is_dry_run(&self) -> bool {
        self.dry_run
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
        Writer::subresource(self, "status")
    }
}

/// The object a reconcile reads ([`crate::reconcile::as_reconciler`]): the cached object, read
/// as [`Reader::get`] reads it, so that with read-your-own-writes on, a reconcile that
/// follows this client's own write of the object sees that write (no 409 from a stale
/// copy). NotFound is `None`.
#[async_trait::async_trait]
impl<K> ObjectGetter<K> for Client
where
    K: CacheObject<DynamicType = ()>,
{
    async fn get(&self, req: &Request) -> Result<Option<Arc<K>>, reconcile::Error> {
        crate::cache::get_requested(self, req, Error::is_not_found)
            .await
            .map_err(Into::into)
    }
}

impl Reader for Client {
    type Object<K: CacheObject> = Arc<K>;
    type Error = Error;

    /// From the cache, or from the server for types named in [`Client::disable_for`].
    async fn get_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<K>, Error> {
        if self.is_uncached::<K>(dt) {
            return self.get_uncached(dt, namespace, name).await;
        }
        let key = object_key(Some(namespace), name);
        self.wait_for_own_writes::<K>(dt, consistency::Select::Key(&key), "get", &key)
            .await?;
        self.cache
            .get_by_key::<K>(dt, &key)
            .await
            .map_err(|e| Error::new("get", gvk_string::<K>(dt), key, e))
    }

    /// From the cache, or from the server for types named in [`Client::disable_for`].
    async fn list_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        opts: &ListOptions,
    ) -> Result<Vec<Arc<K>>, Error> {
        if self.is_uncached::<K>(dt) {
            return self.list_uncached(dt, opts).await;
        }
        let ns = opts.namespace.as_deref().filter(|n| !n.is_empty());
        let select = consistency::Select::Namespace(ns);
        self.wait_for_own_writes::<K>(dt, select, "list", ns.unwrap_or_default())
            .await?;
        self.cache.list_with::<K>(dt, opts).await.map_err(|e| {
            Error::new(
                "list",
                gvk_string::<K>(dt),
                opts.namespace.clone().unwrap_or_default(),
                e,
            )
        })
    }
}
