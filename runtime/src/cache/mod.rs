//! The shared informer cache (controller-runtime's `pkg/cache`).
//!
//! A [`Cache`] holds one [`Informer`] per (type, scope), created lazily the first time
//! anyone asks — a read through [`Reader::get`] / [`Reader::list`] or the client
//! built over the cache, an index ([`Cache::index_field`]), or a controller's
//! `source::Kind` — and shared by all of them, so every type is watched once however
//! many controllers use it. Informers run on kube's `watcher` (`informer`), store
//! `Arc<K>` with indexes (`store`), and fan events out to handlers through bounded
//! buffers (`fanout`); what each holds is published as gauges (`footprint`). [`Options`] scope and trim what is watched (`options`: per
//! type, per namespace, page size, a watch error hook); reads live in `reader`.
//! [`Cache::remove_informer`] stops one informer; `source::Informer` feeds a
//! controller from an informer you hold. The manager starts the cache and waits for it
//! to sync before it starts controllers.
//!
//! Reads are served from memory and are therefore *eventually consistent*: a client
//! write is visible in the cache only once its watch event arrived (usually
//! milliseconds), exactly as in controller-runtime. A read-your-own-writes client waits
//! for its own writes first ([`Cache::wait_for_writes`]; `observed` holds what each
//! informer has applied and wakes the waiting reads).

mod backoff;
mod fanout;
mod footprint;
mod informer;
mod object;
mod observed;
mod options;
mod reader;
mod store;
mod unmanaged;
mod watchlist;

use std::any::{Any, TypeId};
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use kube::Client;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use backoff::WatchBackoff;
pub use fanout::{HandlerRegistration, InformerHandler, Notification};
pub use informer::{IndexConflict, Informer};
pub(crate) use object::typed_form;
pub use object::{CacheObject, Scoped, gvk_string, object_key};
pub use observed::{Requirement, resource_version};
pub use options::{
    ByObject, DEFAULT_HANDLER_BUFFER, DEFAULT_SYNC_PERIOD, MetaTransform, NAMESPACE_ALL,
    NamespaceConfig, Options, Transform, WatchErrorHandler, strip_managed_fields, type_key,
};
pub(crate) use reader::get_requested;
pub use reader::{ListOptions, Reader};
pub use store::{ALL_NAMESPACES, IndexFn, Store, field_index_name, namespaced_value};

use informer::InformerControl;

/// What went wrong in the cache.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A read before [`Cache::start`] (controller-runtime's `ErrCacheNotStarted`).
    #[error("the cache is not started, can not read objects of {kind}")]
    NotStarted {
        /// `apiVersion/Kind` read.
        kind: String,
    },
    /// [`Cache::start`] was called twice.
    #[error("the cache was already started")]
    AlreadyStarted,
    /// A read of a type with no informer while `reader_fail_on_missing_informer` is set.
    #[error("no informer for {kind} and reader_fail_on_missing_informer is set")]
    MissingInformer {
        /// `apiVersion/Kind` read.
        kind: String,
    },
    /// The server does not serve the type (e.g. its CRD is not installed).
    #[error("no matches for kind {kind}: {message}")]
    NoKindMatch {
        /// `apiVersion/Kind` read.
        kind: String,
        /// The server's message.
        message: String,
    },
    /// The cache stopped while a read waited for its informer to sync.
    #[error("the cache stopped before {kind} synced")]
    Stopped {
        /// `apiVersion/Kind` read.
        kind: String,
    },
    /// The object is not in the cache (NotFound).
    #[error("{kind} {key} not found in the cache")]
    NotFound {
        /// `apiVersion/Kind` read.
        kind: String,
        /// `namespace/name` or `name`.
        key: String,
    },
    /// A list matched a field that has no index.
    #[error("index with name field:{field} does not exist for {kind}")]
    IndexNotFound {
        /// `apiVersion/Kind` listed.
        kind: String,
        /// The field name.
        field: String,
    },
    /// A read of a read-your-own-writes client waited `timeout` for the cache to observe
    /// a write the client made, in vain (the watch lags, or the object is outside the
    /// cache's selectors). Read again, read through the API reader, or opt out of the
    /// wait for this read (`Client::without_read_your_writes`).
    #[error(
        "timed out after {timeout:?} waiting for the cache to observe the write of {kind} {key}"
    )]
    ReadYourWritesTimeout {
        /// `apiVersion/Kind` read.
        kind: String,
        /// `namespace/name` or `name` of the write not yet observed.
        key: String,
        /// How long the read waited.
        timeout: std::time::Duration,
    },
    /// An index was added twice.
    #[error("{kind}: {source}")]
    IndexConflict {
        /// `apiVersion/Kind` indexed.
        kind: String,
        /// The conflict.
        source: IndexConflict,
    },
}

impl Error {
    /// Whether this is a NotFound (for `client::ignore_not_found`).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::NotFound { .. })
    }
}

struct Entry {
    any: Arc<dyn Any + Send + Sync>,
    ctl: Arc<dyn InformerControl>,
}

struct Inner {
    client: Client,
    options: Options,
    informers: Mutex<HashMap<(TypeId, String), Entry>>,
    /// `(group, resource)` of every type a source or informer was asked for.
    watched: Mutex<BTreeSet<(String, String)>>,
    tasks: Mutex<Vec<JoinHandle<()>>>,
    started: watch::Sender<Option<CancellationToken>>,
}

/// Shared informers with indexed stores (controller-runtime's `cache.Cache`).
/// Cheap to clone: clones share the informers.
#[derive(Clone)]
pub struct Cache {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<String> = self
            .inner
            .informers
            .lock()
            .values()
            .map(|e| e.ctl.name())
            .collect();
        f.debug_struct("Cache")
            .field("informers", &names)
            .field("started", &self.is_started())
            .finish()
    }
}

impl Cache {
    /// A cache reading through `client`, configured by `options`. Nothing is watched
    /// until a type is first used.
    pub fn new(client: Client, options: Options) -> Self {
        Self {
            inner: Arc::new(Inner {
                client,
                options,
                informers: Mutex::new(HashMap::new()),
                watched: Mutex::new(BTreeSet::new()),
                tasks: Mutex::new(Vec::new()),
                started: watch::channel(None).0,
            }),
        }
    }

    /// The options the cache was built with.
    pub fn options(&self) -> &Options {
        &self.inner.options
    }

    /// The kube client the informers watch through.
    pub fn kube_client(&self) -> &Client {
        &self.inner.client
    }

    /// Runs every informer, present and future, until `ctx` is cancelled, then waits
    /// for them to stop. Fails if the cache was already started.
    pub async fn start(&self, ctx: CancellationToken) -> Result<(), Error> {
        {
            let informers = self.inner.informers.lock();
            let mut already = false;
            self.inner.started.send_if_modified(|s| {
                already = s.is_some();
                if !already {
                    *s = Some(ctx.clone());
                }
                !already
            });
            if already {
                return Err(Error::AlreadyStarted);
            }
            let mut tasks = self.inner.tasks.lock();
            for e in informers.values() {
                tasks.extend(e.ctl.spawn(ctx.clone()));
            }
        }
        tracing::info!(
            informers = self.inner.informers.lock().len(),
            "cache started"
        );
        ctx.cancelled().await;
        let tasks: Vec<JoinHandle<()>> = std::mem::take(&mut *self.inner.tasks.lock());
        for t in tasks {
            let _ = t.await;
        }
        tracing::info!("cache stopped");
        Ok(())
    }

    fn is_started(&self) -> bool {
        self.inner.started.borrow().is_some()
    }

    fn stop_token(&self) -> Option<CancellationToken> {
        self.inner.started.borrow().clone()
    }

    /// Waits until the cache is started and every informer it has has synced (true),
    /// or `ctx` is cancelled (false).
    pub async fn wait_for_cache_sync(&self, ctx: CancellationToken) -> bool {
        let mut started = self.inner.started.subscribe();
        tokio::select! {
            r = started.wait_for(|s| s.is_some()) => if r.is_err() { return false },
            _ = ctx.cancelled() => return false,
        }
        loop {
            let pending: Vec<Arc<dyn InformerControl>> = self
                .inner
                .informers
                .lock()
                .values()
                .filter(|e| !e.ctl.has_synced())
                .map(|e| e.ctl.clone())
                .collect();
            let Some(first) = pending.first() else {
                return true;
            };
            tokio::select! {
                _ = first.synced() => {}
                _ = ctx.cancelled() => return false,
            }
        }
    }

    /// True when the cache is started and every informer has synced.
    pub fn has_synced(&self) -> bool {
        self.is_started()
            && self
                .inner
                .informers
                .lock()
                .values()
                .all(|e| e.ctl.has_synced())
    }

    /// The informer for typed resource `K`, created (and started, if the cache runs)
    /// on first use.
    pub fn get_informer<K>(&self) -> Informer<K>
    where
        K: CacheObject<DynamicType = ()>,
    {
        self.get_informer_with::<K>(&())
    }

    /// The informer for `K` with dynamic type `dt` (an `ApiResource` for
    /// `DynamicObject`).
    pub fn get_informer_with<K: CacheObject>(&self, dt: &K::DynamicType) -> Informer<K> {
        self.informer_inner::<K>(dt, true)
            .unwrap_or_else(|| self.new_informer::<K>(dt))
    }

    /// Notes that `K` (with `dt`) is watched through this cache: a `source::Kind` was
    /// built for it or its informer created. [`Cache::watched_resources`] lists them,
    /// for the RBAC rules the manager needs.
    pub fn record_watch<K: CacheObject>(&self, dt: &K::DynamicType) {
        let key = (K::group(dt).into_owned(), K::plural(dt).into_owned());
        self.inner.watched.lock().insert(key);
    }

    /// `(group, resource)` of every type recorded by [`Cache::record_watch`], sorted.
    pub fn watched_resources(&self) -> Vec<(String, String)> {
        self.inner.watched.lock().iter().cloned().collect()
    }

    /// The informer if one exists (`create` false) or after creating it.
    fn informer_inner<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        create: bool,
    ) -> Option<Informer<K>> {
        let key = informer_key::<K>(dt);
        let mut informers = self.inner.informers.lock();
        if let Some(e) = informers.get(&key) {
            return (*e.any).downcast_ref::<Informer<K>>().cloned();
        }
        if !create {
            return None;
        }
        self.record_watch::<K>(dt);
        let settings = self.inner.options.resolve::<K>(dt);
        let inf = Informer::<K>::new(self.inner.client.clone(), dt.clone(), settings);
        let ctl: Arc<dyn InformerControl> = Arc::new(inf.clone());
        if let Some(ctx) = self.stop_token() {
            self.inner.tasks.lock().extend(ctl.spawn(ctx));
        }
        tracing::debug!(informer = %ctl.name(), "informer created");
        informers.insert(
            key,
            Entry {
                any: Arc::new(inf.clone()),
                ctl,
            },
        );
        Some(inf)
    }

    fn new_informer<K: CacheObject>(&self, dt: &K::DynamicType) -> Informer<K> {
        // informer_inner(create = true) always returns Some; this is the unreachable
        // fallback, kept total instead of panicking.
        Informer::<K>::new(
            self.inner.client.clone(),
            dt.clone(),
            self.inner.options.resolve::<K>(dt),
        )
    }

    /// Stops and forgets the informer of typed resource `K` (controller-runtime's
    /// `RemoveInformer`): its watch ends, its handlers (e.g. controllers' `Kind`
    /// sources) get no more events, and the next use of `K` starts a new informer.
    /// Returns whether there was one.
    pub fn remove_informer<K>(&self) -> bool
    where
        K: CacheObject<DynamicType = ()>,
    {
        self.remove_informer_with::<K>(&())
    }

    /// [`remove_informer`](Self::remove_informer) for `K` with dynamic type `dt`.
    pub fn remove_informer_with<K: CacheObject>(&self, dt: &K::DynamicType) -> bool {
        let removed = self.inner.informers.lock().remove(&informer_key::<K>(dt));
        match removed {
            Some(e) => {
                e.ctl.stop();
                true
            }
            None => false,
        }
    }

    /// Adds a field index on typed resource `K` (controller-runtime's
    /// `FieldIndexer.IndexField`); query it with
    /// [`ListOptions::matching_field`].
    pub fn index_field<K>(
        &self,
        field: &str,
        f: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Result<(), Error>
    where
        K: CacheObject<DynamicType = ()>,
    {
        self.index_field_with::<K>(&(), field, f)
    }

    /// Adds a field index on `K` with dynamic type `dt`.
    pub fn index_field_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        field: &str,
        f: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Result<(), Error> {
        self.get_informer_with::<K>(dt)
            .add_field_index(field, f)
            .map_err(|source| Error::IndexConflict {
                kind: gvk_string::<K>(dt),
                source,
            })
    }
}

/// Informers are keyed by Rust type (typed / dynamic / metadata-only differ) and by
/// group, version, kind and plural (dynamic types differ by `ApiResource`). A type whose
/// dynamic type is `()` names one resource, so its Rust type is the whole key: no string
/// is built on a cached read of it.
fn informer_key<K: CacheObject>(dt: &K::DynamicType) -> (TypeId, String) {
    if std::mem::size_of::<K::DynamicType>() == 0 {
        return (TypeId::of::<K>(), String::new());
    }
    (
        TypeId::of::<K>(),
        format!("{}/{}/{}", K::api_version(dt), K::kind(dt), K::plural(dt)),
    )
}
