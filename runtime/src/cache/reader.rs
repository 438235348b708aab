//! Reads: the [`Reader`] trait (controller-runtime's `client.Reader`), its cache
//! implementation ([`Cache`]'s `get` and `list` with [`ListOptions`], controller-runtime's
//! `CacheReader`), and the [`ObjectGetter`] that typed
//! reconcilers ([`crate::reconcile::as_reconciler`]) fetch their objects through.
//!
//! A read of a type nobody watched yet starts its informer and waits for it to sync
//! (unless `reader_fail_on_missing_informer` is set). Label selectors filter in
//! memory; a field match must name an index added with [`Cache::index_field`]
//! (`metadata.name` and `metadata.namespace` work without one).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use kube::core::{Selector, SelectorExt};

use super::informer::NotReady;
use super::store::{field_index_name, namespaced_value};
use super::{Cache, CacheObject, Error, Informer, Requirement, gvk_string, object_key};
use crate::reconcile::{self, ObjectGetter, Request};

/// What a list returns (controller-runtime's `client.ListOptions`: `InNamespace`,
/// `MatchingLabels` / `MatchingLabelsSelector`, `MatchingFields`, `Limit`).
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// Only this namespace (`None`: all).
    pub namespace: Option<String>,
    /// Only objects whose labels match.
    pub labels: Option<Selector>,
    /// Exact matches on indexed fields: `(field, value)`.
    pub fields: Vec<(String, String)>,
    /// At most this many objects (sorted by `namespace/name`).
    pub limit: Option<usize>,
}

impl ListOptions {
    /// Everything.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only objects in `ns` (`InNamespace`).
    pub fn in_namespace(mut self, ns: impl Into<String>) -> Self {
        self.namespace = Some(ns.into());
        self
    }

    /// Only objects matching `selector` (`MatchingLabelsSelector`).
    pub fn matching_labels(mut self, selector: Selector) -> Self {
        self.labels = Some(selector);
        self
    }

    /// Only objects carrying every `key=value` label (`MatchingLabels`).
    pub fn matching_label_map<I, A, B>(self, labels: I) -> Self
    where
        I: IntoIterator<Item = (A, B)>,
        A: Into<String>,
        B: Into<String>,
    {
        let sel: Selector = labels
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
        self.matching_labels(sel)
    }

    /// Only objects whose index `field` holds `value` (`MatchingFields`).
    pub fn matching_field(mut self, field: impl Into<String>, value: impl Into<String>) -> Self {
        self.fields.push((field.into(), value.into()));
        self
    }

    /// At most `n` objects (`Limit`).
    pub fn limit(mut self, n: usize) -> Self {
        self.limit = Some(n);
        self
    }
}

/// Reads objects (controller-runtime's `client.Reader`): [`Cache`], the client, the
/// namespaced client and the uncached `ApiReader` each read one way
/// ([`get_with`](Self::get_with), [`list_with`](Self::list_with)); the typed forms
/// [`get`](Self::get) and [`list`](Self::list) are provided on top.
pub trait Reader: Sync {
    /// What a read returns per object: `Arc<K>` from a cache, `K` from the server.
    type Object<K: CacheObject>: Send;
    /// Why a read failed.
    type Error: Send;

    /// The object `namespace/name` of `K` with dynamic type `dt` (a `DynamicObject` and
    /// its `ApiResource`); `namespace` empty for cluster-scoped types.
    fn get_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Self::Object<K>, Self::Error>> + Send;

    /// Objects of `K` with dynamic type `dt` matching `opts`, sorted by
    /// `namespace/name` when read from a cache.
    fn list_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        opts: &ListOptions,
    ) -> impl Future<Output = Result<Vec<Self::Object<K>>, Self::Error>> + Send;

    /// The typed object `namespace/name` (`namespace` empty for cluster-scoped types).
    fn get<K: CacheObject<DynamicType = ()>>(
        &self,
        namespace: &str,
        name: &str,
    ) -> impl Future<Output = Result<Self::Object<K>, Self::Error>> + Send {
        self.get_with::<K>(&(), namespace, name)
    }

    /// Typed objects matching `opts`.
    fn list<K: CacheObject<DynamicType = ()>>(
        &self,
        opts: &ListOptions,
    ) -> impl Future<Output = Result<Vec<Self::Object<K>>, Self::Error>> + Send {
        self.list_with::<K>(&(), opts)
    }
}

impl Cache {
    /// The informer a read of `K` uses, synced.
    async fn informer_for_read<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
    ) -> Result<Informer<K>, Error> {
        let kind = || gvk_string::<K>(dt);
        let inf = if self.inner.options.reader_fail_on_missing_informer {
            self.informer_inner::<K>(dt, false)
                .ok_or_else(|| Error::MissingInformer { kind: kind() })?
        } else {
            self.get_informer_with::<K>(dt)
        };
        if inf.has_synced() {
            return Ok(inf);
        }
        let Some(stop) = self.stop_token() else {
            return Err(Error::NotStarted { kind: kind() });
        };
        match inf.wait_readable(stop).await {
            Ok(()) => Ok(inf),
            Err(NotReady::Missing(message)) => Err(Error::NoKindMatch {
                kind: kind(),
                message,
            }),
            Err(NotReady::Stopped) => Err(Error::Stopped { kind: kind() }),
        }
    }
}

impl Cache {
    /// [`Reader::get_with`] by the object's store key (`namespace/name`, or `name`), for a
    /// caller that has built the key already (the client, for its own-writes check).
    pub(crate) async fn get_by_key<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        key: &str,
    ) -> Result<Arc<K>, Error> {
        let inf = self.informer_for_read::<K>(dt).await?;
        inf.store().get(key).ok_or_else(|| Error::NotFound {
            kind: gvk_string::<K>(dt),
            key: key.to_string(),
        })
    }

    /// Waits until the informer of `K` reflects every `(key, requirement)` of `writes`
    /// (the writes of a read-your-own-writes client, the layer above),
    /// starting and syncing it first as a read does; woken by its watch, never polling.
    /// Fails with [`Error::ReadYourWritesTimeout`] naming a key still not reflected after
    /// `timeout`.
    pub async fn wait_for_writes<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        writes: &[(Arc<str>, Requirement)],
        timeout: Duration,
    ) -> Result<(), Error> {
        if writes.is_empty() {
            return Ok(());
        }
        let deadline = tokio::time::Instant::now() + timeout;
        let inf = self.informer_for_read::<K>(dt).await?;
        match inf.wait_observed(writes, deadline).await {
            None => Ok(()),
            Some(key) => Err(Error::ReadYourWritesTimeout {
                kind: gvk_string::<K>(dt),
                key: key.to_string(),
                timeout,
            }),
        }
    }
}

impl Reader for Cache {
    type Object<K: CacheObject> = Arc<K>;
    type Error = Error;

    async fn get_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        namespace: &str,
        name: &str,
    ) -> Result<Arc<K>, Error> {
        self.get_by_key::<K>(dt, &object_key(Some(namespace), name))
            .await
    }

    async fn list_with<K: CacheObject>(
        &self,
        dt: &K::DynamicType,
        opts: &ListOptions,
    ) -> Result<Vec<Arc<K>>, Error> {
        let inf = self.informer_for_read::<K>(dt).await?;
        let store = inf.store();
        let ns = opts.namespace.as_deref().filter(|n| !n.is_empty());
        let mut native: Vec<(&str, &str)> = Vec::new();
        let mut found: Option<Vec<Arc<K>>> = None;
        for (field, value) in &opts.fields {
            let index = field_index_name(field);
            if !store.has_index(&index) {
                if field == "metadata.name" || field == "metadata.namespace" {
                    native.push((field, value));
                    continue;
                }
                return Err(Error::IndexNotFound {
                    kind: gvk_string::<K>(dt),
                    field: field.clone(),
                });
            }
            let hits = store
                .by_index(&index, &namespaced_value(ns, value))
                .unwrap_or_default();
            found = Some(match found {
                None => hits,
                Some(prev) => prev
                    .into_iter()
                    .filter(|o| hits.iter().any(|h| Arc::ptr_eq(h, o)))
                    .collect(),
            });
        }
        let mut objs = match (found, ns) {
            (Some(objs), _) => objs,
            (None, Some(ns)) => store.list_namespace(ns),
            (None, None) => store.list(),
        };
        objs.retain(|o| {
            let m = o.meta();
            let labels_ok = opts.labels.as_ref().is_none_or(|sel| {
                let empty = BTreeMap::new();
                sel.matches(m.labels.as_ref().unwrap_or(&empty))
            });
            let ns_ok = ns.is_none_or(|ns| m.namespace.as_deref() == Some(ns));
            let native_ok = native.iter().all(|(f, v)| match *f {
                "metadata.name" => m.name.as_deref() == Some(*v),
                _ => m.namespace.as_deref() == Some(*v),
            });
            labels_ok && ns_ok && native_ok
        });
        objs.sort_by_cached_key(|o| {
            object_key(
                o.meta().namespace.as_deref(),
                o.meta().name.as_deref().unwrap_or_default(),
            )
        });
        if let Some(n) = opts.limit.filter(|n| *n > 0) {
            objs.truncate(n);
        }
        Ok(objs)
    }
}

/// A reconcile's read of the object `req` names through `reader` (what [`ObjectGetter`] is
/// for a cache and for a client): the object, `None` when `not_found` says the error is a
/// NotFound, else the error.
pub(crate) async fn get_requested<R, K>(
    reader: &R,
    req: &Request,
    not_found: fn(&R::Error) -> bool,
) -> Result<Option<Arc<K>>, R::Error>
where
    R: Reader<Object<K> = Arc<K>>,
    K: CacheObject<DynamicType = ()>,
{
    match reader.get_with::<K>(&(), &req.namespace, &req.name).await {
        Ok(obj) => Ok(Some(obj)),
        Err(e) if not_found(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

#[async_trait]
impl<K> ObjectGetter<K> for Cache
where
    K: CacheObject<DynamicType = ()>,
{
    async fn get(&self, req: &Request) -> Result<Option<Arc<K>>, reconcile::Error> {
        get_requested(self, req, Error::is_not_found)
            .await
            .map_err(|e| reconcile::Error::new(e.to_string()))
    }
}
