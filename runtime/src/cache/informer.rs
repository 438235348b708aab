//! [`Informer`]: one shared watch of one type in one scope, feeding the store
//! (`super::store`) and fanning events out to handlers (`super::fanout`)
//! (client-go's `SharedIndexInformer`).
//!
//! List, watch, resume, relist and backoff are kube's `watcher` with
//! ctrl's `WatchBackoff` (kube's default numbers on ctrl's clock), through a streaming list when the options ask
//! (`super::watchlist`); this module turns its `Init` / `InitApply` /
//! `InitDone` / `Apply` / `Delete` events into store writes and Create / Update /
//! Delete notifications. A relist (`Init` after the first sync, e.g. when the watch
//! history was compacted) is diffed against the store at `InitDone`: objects the new
//! list lacks are removed and reported as `Delete` with `delete_state_unknown`. With
//! several namespaces, one watcher runs per scope (`options::WatchScope`: a namespace
//! with its own selectors and transform, or all namespaces but the named ones) and each
//! relist is diffed only against its own scope. Watch errors go to the options' watch
//! error handler; [`Cache::remove_informer`](super::Cache::remove_informer) stops the
//! informer through its own child token. Resyncs replay every object as `Update(old == new)`.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use kube::Client;
use kube::runtime::watcher::{self, Event};
use parking_lot::{Mutex, RwLock};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::fanout::{HandlerRegistration, InformerHandler, Notification, Sink};
use super::footprint::Footprint;
use super::object::{CacheObject, Scoped, object_key};
use super::observed::{Observed, Requirement, resource_version};
use super::options::{Resolved, WatchScope, strips_managed_fields};
use super::store::{IndexFn, Store, field_index_name};
use super::unmanaged::{self, Unmanaged};
use super::watchlist::WatchResult;
use crate::event::{CreateEvent, DeleteEvent, UpdateEvent};

/// The type-erased side of an informer the cache drives.
pub(crate) trait InformerControl: Send + Sync + 'static {
    /// Spawns the watch loop (once; later calls return `None`).
    fn spawn(&self, ctx: CancellationToken) -> Option<JoinHandle<()>>;
    /// Whether the initial list has been stored.
    fn has_synced(&self) -> bool;
    /// Resolves once synced.
    fn synced(&self) -> BoxFuture<'static, ()>;
    /// `apiVersion/Kind` and scope, for logs.
    fn name(&self) -> String;
    /// Stops the watch and the handlers' delivery (the informer was removed).
    fn stop(&self);
}

/// One event of the watch of scope `.0`.
type ScopedEvent<K> = (usize, WatchResult<K>);

/// The most events [`Ready`] takes in one go: twice kube's default list page (500 objects).
/// A paged list's burst is one page, and ends at the poll after its last object, which asks
/// for the next page (so the cap must exceed a page, or that request would wait for the
/// store); a stream that always has more ready (a streaming list the server sends faster than
/// it is read) is taken in bursts of this many, so at most two pages' worth of objects wait
/// for the store (a paged list holds one decoded page at a time).
const READY_BATCH: usize = 1000;

/// Events the informer's streams had ready, taken at once (see `Inner::next_event`).
struct Ready<K> {
    events: VecDeque<ScopedEvent<K>>,
    /// The streams ended after `events`.
    ended: bool,
}

impl<K> Ready<K> {
    fn new() -> Self {
        Self {
            events: VecDeque::new(),
            ended: false,
        }
    }

    /// Takes what `streams` has ready without waiting; whether it took an event or saw
    /// them end. A poll that finds none ready leaves a no-op waker: the caller then waits
    /// on the streams with its own.
    fn fill(
        &mut self,
        streams: &mut futures::stream::SelectAll<BoxStream<'static, ScopedEvent<K>>>,
    ) -> bool {
        while self.events.len() < READY_BATCH {
            match streams.next().now_or_never() {
                Some(Some(ev)) => self.events.push_back(ev),
                Some(None) => {
                    self.ended = true;
                    break;
                }
                None => break,
            }
        }
        !self.events.is_empty() || self.ended
    }
}

/// A handler registered before the informer started, with its sink.
type Unstarted<K> = (Arc<Sink<K>>, Arc<dyn InformerHandler<K>>);

struct Inner<K: CacheObject> {
    name: String,
    client: Client,
    dt: K::DynamicType,
    settings: Resolved<K>,
    store: Store<K>,
    /// What the watch has applied, for read-your-own-writes (`super::observed`).
    observed: Observed,
    footprint: Footprint,
    handlers: RwLock<Vec<Arc<Sink<K>>>>,
    unstarted: Mutex<Vec<Unstarted<K>>>,
    stop: Mutex<Option<CancellationToken>>,
    started: AtomicBool,
    synced: watch::Sender<bool>,
    missing: watch::Sender<Option<String>>,
    next_id: AtomicU64,
}

/// A shared informer for objects of type `K` (get one from
/// [`Cache::get_informer`](super::Cache::get_informer)).
pub struct Informer<K: CacheObject> {
    inner: Arc<Inner<K>>,
}

impl<K: CacheObject> Clone for Informer<K> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<K: CacheObject> std::fmt::Debug for Informer<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Informer")
            .field("name", &self.inner.name)
            .field("objects", &self.inner.store.len())
            .field("synced", &self.has_synced())
            .finish()
    }
}

/// Why an index could not be added.
#[derive(Debug, thiserror::Error)]
#[error("index {0} already exists")]
pub struct IndexConflict(pub String);

impl<K: CacheObject> Informer<K> {
    pub(crate) fn new(client: Client, dt: K::DynamicType, settings: Resolved<K>) -> Self {
        let names: Vec<&str> = settings
            .scopes
            .iter()
            .map(|s| s.namespace.as_deref().unwrap_or("all namespaces"))
            .collect();
        let scope = if K::Scope::CLUSTER {
            "all namespaces".to_string()
        } else {
            names.join(",")
        };
        let name = format!("{} ({scope})", super::object::gvk_string::<K>(&dt));
        let footprint = Footprint::new(&K::group(&dt), &K::version(&dt), &K::kind(&dt));
        let observed = Observed::new(match K::Scope::CLUSTER {
            true => vec![None],
            false => settings
                .scopes
                .iter()
                .map(|s| s.namespace.clone())
                .collect(),
        });
        Self {
            inner: Arc::new(Inner {
                name,
                client,
                dt,
                settings,
                store: Store::new(),
                observed,
                footprint,
                handlers: RwLock::new(Vec::new()),
                unstarted: Mutex::new(Vec::new()),
                stop: Mutex::new(None),
                started: AtomicBool::new(false),
                synced: watch::channel(false).0,
                missing: watch::channel(None).0,
                next_id: AtomicU64::new(1),
            }),
        }
    }

    /// The informer's store (read-only use: the informer is its only writer).
    pub fn store(&self) -> &Store<K> {
        &self.inner.store
    }

    /// The dynamic type the informer watches.
    pub fn dynamic_type(&self) -> &K::DynamicType {
        &self.inner.dt
    }

    /// True once the first list has been stored.
    pub fn has_synced(&self) -> bool {
        *self.inner.synced.borrow()
    }

    /// Waits until synced (true) or `ctx` is cancelled (false).
    pub async fn wait_for_sync(&self, ctx: CancellationToken) -> bool {
        let mut rx = self.inner.synced.subscribe();
        tokio::select! {
            r = rx.wait_for(|s| *s) => r.is_ok(),
            _ = ctx.cancelled() => false,
        }
    }

    /// Waits until synced; fails at once while the server answers the list with 404
    /// (the type is not installed), or when `ctx` is cancelled.
    pub(crate) async fn wait_readable(&self, ctx: CancellationToken) -> Result<(), NotReady> {
        let mut synced = self.inner.synced.subscribe();
        let mut missing = self.inner.missing.subscribe();
        tokio::select! {
            biased;
            r = synced.wait_for(|s| *s) => r.map(|_| ()).map_err(|_| NotReady::Stopped),
            m = missing.wait_for(|m| m.is_some()) => Err(match m {
                Ok(m) => NotReady::Missing(m.clone().unwrap_or_default()),
                Err(_) => NotReady::Stopped,
            }),
            _ = ctx.cancelled() => Err(NotReady::Stopped),
        }
    }

    /// Waits until the store reflects every `(key, requirement)` of `writes` (the writes a
    /// read-your-own-writes client made: `super::observed`), woken by the watch, until
    /// `deadline`. Returns the first key still not reflected then, if any.
    pub(crate) async fn wait_observed(
        &self,
        writes: &[(Arc<str>, Requirement)],
        deadline: tokio::time::Instant,
    ) -> Option<Arc<str>> {
        let pending = || {
            writes
                .iter()
                .find(|(key, req)| !self.inner.observed.satisfies(&self.inner.store, key, req))
                .map(|(key, _)| key.clone())
        };
        pending()?;
        self.inner
            .observed
            .wait(deadline, || pending().is_none())
            .await;
        pending()
    }

    /// Registers a handler. It first receives a Create (`is_in_initial_list`) for
    /// every object already stored, then every later event, in order per object. On a
    /// multi-threaded runtime its batches run inside `block_in_place`, so a handler that
    /// blocks cannot trap the tasks queued on its worker thread.
    pub fn add_event_handler(&self, handler: impl InformerHandler<K>) -> HandlerRegistration<K> {
        self.register(handler, false)
    }

    /// [`add_event_handler`](Self::add_event_handler) for a handler that never blocks (a
    /// source's enqueue, which is what controllers register): its batches run on the
    /// delivery task itself. Handing a worker off costs ~5 us of CPU and 10-25 us of
    /// latency per batch, and a quick handler often gets batches of one event.
    pub fn add_quick_event_handler(
        &self,
        handler: impl InformerHandler<K>,
    ) -> HandlerRegistration<K> {
        self.register(handler, true)
    }

    fn register(&self, handler: impl InformerHandler<K>, quick: bool) -> HandlerRegistration<K> {
        let id = self.inner.next_id.fetch_add(1, Ordering::Relaxed);
        let sink = Sink::new(id, self.inner.settings.handler_buffer, quick);
        let handler: Arc<dyn InformerHandler<K>> = Arc::new(handler);
        {
            let mut handlers = self.inner.handlers.write();
            for obj in self.inner.store.list() {
                let key = key_of(&*obj);
                sink.push(
                    &key,
                    Notification::Create(CreateEvent {
                        object: obj,
                        is_in_initial_list: true,
                    }),
                );
            }
            if self.has_synced() {
                sink.push_synced();
            }
            handlers.push(sink.clone());
        }
        let mut unstarted = self.inner.unstarted.lock();
        let stop = self.inner.stop.lock().clone();
        match stop {
            Some(ctx) => {
                tokio::spawn(sink.clone().run(handler, ctx));
            }
            None => unstarted.push((sink.clone(), handler)),
        }
        drop(unstarted);
        tracing::debug!(informer = %self.inner.name, handler = id, "event handler added");
        HandlerRegistration { sink }
    }

    /// Removes a handler: it gets no further events.
    pub fn remove_event_handler(&self, reg: &HandlerRegistration<K>) {
        self.inner
            .handlers
            .write()
            .retain(|s| !Arc::ptr_eq(s, &reg.sink));
        self.inner
            .unstarted
            .lock()
            .retain(|(s, _)| !Arc::ptr_eq(s, &reg.sink));
        reg.sink.close();
    }

    /// Adds a field index named `field` (stored as `field:<field>`), filing every
    /// object under the values `f` returns (controller-runtime's `IndexField`). May be
    /// called before or after the informer started.
    pub fn add_field_index(
        &self,
        field: &str,
        f: impl Fn(&K) -> Vec<String> + Send + Sync + 'static,
    ) -> Result<(), IndexConflict> {
        let name = field_index_name(field);
        let func: IndexFn<K> = Arc::new(f);
        // Hold the handler lock so no event is applied while the index is built.
        let _guard = self.inner.handlers.read();
        if self.inner.store.add_index(name.clone(), func) {
            Ok(())
        } else {
            Err(IndexConflict(name))
        }
    }
}

/// The server's message when a list failed because the type is not served (404).
fn type_missing(err: &watcher::Error) -> Option<String> {
    match err {
        watcher::Error::InitialListFailed(kube::Error::Api(s)) if s.is_not_found() => {
            Some(s.message.clone())
        }
        _ => None,
    }
}

/// Why a read could not wait for an informer to sync.
pub(crate) enum NotReady {
    /// The server does not serve the type (yet).
    Missing(String),
    /// The cache was stopped.
    Stopped,
}

fn key_of<K: kube::Resource>(obj: &K) -> Arc<str> {
    let m = obj.meta();
    Arc::from(object_key(
        m.namespace.as_deref(),
        m.name.as_deref().unwrap_or_default(),
    ))
}

impl<K: CacheObject> Inner<K> {
    /// The watches this informer runs: one per namespace scope, or the one cluster
    /// watch of a cluster-scoped type.
    fn scopes(&self) -> Vec<WatchScope> {
        if K::Scope::CLUSTER {
            vec![self.settings.base.clone()]
        } else {
            self.settings.scopes.clone()
        }
    }

    fn transform(&self, scope: &WatchScope, mut obj: K) -> K {
        let meta = kube::Resource::meta_mut(&mut obj);
        if let Some(t) = &scope.transform {
            t(meta);
        }
        // serde grows sequences by doubling; trim the metadata lists every object
        // carries so the stored copy holds no spare capacity (cheaper than a clone).
        if let Some(v) = meta.managed_fields.as_mut() {
            v.shrink_to_fit();
        }
        if let Some(v) = meta.owner_references.as_mut() {
            v.shrink_to_fit();
        }
        if let Some(v) = meta.finalizers.as_mut() {
            v.shrink_to_fit();
        }
        if let Some(t) = &self.settings.transform {
            t(&mut obj);
        }
        obj
    }

    /// Queues `n` for every handler; they are woken by [`Inner::wake_handlers`] once the
    /// watch has no further event ready.
    fn dispatch(&self, sinks: &[Arc<Sink<K>>], key: &Arc<str>, n: Notification<K>) {
        for s in sinks {
            s.push_quiet(key, n.clone());
        }
    }

    fn wake_handlers(&self) {
        for s in self.handlers.read().iter() {
            s.wake_pending();
        }
    }

    /// The next event. Every event the streams have ready is taken in one go (a list
    /// page's objects arrive as one burst), up to [`READY_BATCH`]: the poll that finds
    /// none ready is the one that sends the next page's request, so the server builds that
    /// page while this task stores the burst (one after the other, the store's writes were
    /// on the start's critical path). Before taking more, the handlers are woken for what
    /// the last burst queued. `None` once stopped or the streams ended.
    async fn next_event(
        &self,
        events: &mut futures::stream::SelectAll<BoxStream<'static, ScopedEvent<K>>>,
        ready: &mut Ready<K>,
        resync: &mut std::pin::Pin<&mut tokio::time::Sleep>,
        ctx: &CancellationToken,
    ) -> Option<ScopedEvent<K>> {
        loop {
            // Once stopped (or removed), no further event is applied.
            if ctx.is_cancelled() {
                return None;
            }
            if let Some(ev) = ready.events.pop_front() {
                return Some(ev);
            }
            if ready.ended {
                return None;
            }
            self.wake_handlers();
            if ready.fill(events) {
                continue;
            }
            tokio::select! {
                biased;
                _ = ctx.cancelled() => return None,
                _ = resync.as_mut() => {
                    self.resync();
                    resync.as_mut().reset(self.next_resync());
                }
                ev = events.next() => match ev {
                    Some(ev) => ready.events.push_back(ev),
                    None => return None,
                },
            }
        }
    }

    /// Stores `obj` from scope `i` (`listing`: from its list, not its watch).
    fn upsert(&self, scopes: &[WatchScope], i: usize, obj: K, listing: bool) -> Arc<str> {
        let obj = Arc::new(self.transform(&scopes[i], obj));
        let key = key_of(&*obj);
        let rv = resource_version(&*obj);
        let initial = listing && !self.synced_now();
        self.footprint.stored(&*obj);
        let sinks = self.handlers.read();
        let n = match self.store.insert_key(key.clone(), obj.clone()) {
            None => Notification::Create(CreateEvent {
                object: obj,
                is_in_initial_list: initial,
            }),
            Some(old) => Notification::Update(UpdateEvent::new(old, obj)),
        };
        self.footprint.publish(self.store.len());
        self.dispatch(&sinks, &key, n);
        match listing {
            true => self.observed.listed(i, rv),
            false => self.observed.applied(i, rv),
        }
        key
    }

    fn delete(&self, scope: &WatchScope, i: usize, obj: K) {
        let obj = Arc::new(self.transform(scope, obj));
        let key = key_of(&*obj);
        let rv = resource_version(&*obj);
        let sinks = self.handlers.read();
        self.store.remove(&key);
        self.footprint.publish(self.store.len());
        self.dispatch(&sinks, &key, Notification::Delete(DeleteEvent::new(obj)));
        self.observed.applied(i, rv);
    }

    /// Removes what a relist of `scopes[i]` did not return (an all-namespaces scope
    /// beside named ones covers only the other namespaces).
    fn finish_relist(&self, scopes: &[WatchScope], i: usize, seen: &HashSet<Arc<str>>) {
        let sinks = self.handlers.read();
        let candidates = match scopes[i].namespace.as_deref() {
            Some(ns) => self.store.list_namespace(ns),
            None => {
                let named: HashSet<&str> = scopes
                    .iter()
                    .filter_map(|s| s.namespace.as_deref())
                    .collect();
                let mut all = self.store.list();
                all.retain(|o| !named.contains(o.meta().namespace.as_deref().unwrap_or_default()));
                all
            }
        };
        for obj in candidates {
            let key = key_of(&*obj);
            if seen.contains(&key) {
                continue;
            }
            if let Some(last) = self.store.remove(&key) {
                tracing::debug!(informer = %self.name, key = %key, "object gone after relist");
                let n = Notification::Delete(DeleteEvent {
                    object: last,
                    delete_state_unknown: true,
                });
                self.dispatch(&sinks, &key, n);
            }
        }
        self.footprint.publish(self.store.len());
    }

    fn mark_synced(&self) {
        let sinks = self.handlers.read();
        for s in sinks.iter() {
            s.push_synced();
        }
        self.synced.send_replace(true);
        let objects = self.store.len();
        tracing::info!(
            informer = %self.name,
            objects,
            approximate_bytes = self.footprint.approximate_bytes(objects),
            "informer synced"
        );
    }

    fn resync(&self) {
        let sinks = self.handlers.read();
        for obj in self.store.list() {
            let key = key_of(&*obj);
            self.dispatch(
                &sinks,
                &key,
                Notification::Update(UpdateEvent::new(obj.clone(), obj)),
            );
        }
    }

    fn next_resync(&self) -> tokio::time::Instant {
        let jitter = 0.9 + ctrl_clock::random_f64() * 0.2;
        tokio::time::Instant::now()
            + self
                .settings
                .sync_period
                .mul_f64(jitter)
                .max(Duration::from_millis(1))
    }

    /// One watcher stream per scope, tagged with the scope's index.
    fn streams(
        &self,
        scopes: &[WatchScope],
    ) -> futures::stream::SelectAll<BoxStream<'static, ScopedEvent<K>>> {
        let streams = scopes.iter().enumerate().map(|(i, scope)| {
            let cfg = watcher::Config {
                label_selector: scope.label_selector.clone(),
                field_selector: scope.field_selector.clone(),
                page_size: self
                    .settings
                    .page_size
                    .or(watcher::Config::default().page_size),
                ..Default::default()
            };
            let api = <K::Scope as Scoped>::api::<Unmanaged<K>>(
                self.client.clone(),
                scope.namespace.as_deref(),
                &self.dt,
            );
            let streaming = self.settings.streaming_lists;
            let events = super::watchlist::watch(api, cfg, streaming, self.name.clone());
            let strip = scope.transform.as_ref().is_some_and(strips_managed_fields);
            let events = match strip {
                true => unmanaged::skipping(events).boxed(),
                false => events,
            };
            events.map(move |e| (i, e.map(unmanaged::inner))).boxed()
        });
        futures::stream::select_all(streams)
    }

    async fn run(self: Arc<Self>, ctx: CancellationToken) {
        let scopes = self.scopes();
        let mut events = self.streams(&scopes);
        let mut relists: Vec<Option<HashSet<Arc<str>>>> = vec![None; scopes.len()];
        let mut listed = vec![false; scopes.len()];
        let mut inits = vec![false; scopes.len()];
        let resync = tokio::time::sleep_until(self.next_resync());
        tokio::pin!(resync);
        let mut ready = Ready::new();
        tracing::debug!(informer = %self.name, "informer started");
        while let Some((i, ev)) = self
            .next_event(&mut events, &mut ready, &mut resync, &ctx)
            .await
        {
            match ev {
                Err(err) => self.watch_failed(&err),
                // Only a relist (the scope's second list or later, also after a list
                // that failed half way) is diffed against the store: before the first
                // list the scope has nothing of its own there.
                Ok(Event::Init) => {
                    relists[i] = inits[i].then(HashSet::new);
                    inits[i] = true;
                }
                Ok(Event::InitApply(obj)) => {
                    let key = self.upsert(&scopes, i, obj, true);
                    if let Some(seen) = relists[i].as_mut() {
                        seen.insert(key);
                    }
                }
                Ok(Event::InitDone) => {
                    if let Some(seen) = relists[i].take() {
                        self.finish_relist(&scopes, i, &seen);
                    }
                    listed[i] = true;
                    self.observed.list_done(i);
                    self.missing.send_replace(None);
                    if !self.synced_now() && listed.iter().all(|l| *l) {
                        self.mark_synced();
                    }
                }
                Ok(Event::Apply(obj)) => {
                    self.upsert(&scopes, i, obj, false);
                }
                Ok(Event::Delete(obj)) => self.delete(&scopes[i], i, obj),
            }
        }
        self.wake_handlers();
        tracing::debug!(informer = %self.name, "informer stopped");
    }

    /// A failed list or watch: recorded when the type is missing, handed to the
    /// watch error handler, logged; kube's watcher retries with backoff.
    fn watch_failed(&self, err: &watcher::Error) {
        if let Some(msg) = type_missing(err) {
            self.missing.send_replace(Some(msg));
        }
        if let Some(handler) = &self.settings.watch_error_handler {
            handler(&self.name, err);
        }
        tracing::warn!(informer = %self.name, error = %err, "watch failed; retrying with backoff");
    }

    fn synced_now(&self) -> bool {
        *self.synced.borrow()
    }
}

impl<K: CacheObject> InformerControl for Informer<K> {
    fn spawn(&self, ctx: CancellationToken) -> Option<JoinHandle<()>> {
        if self.inner.started.swap(true, Ordering::AcqRel) {
            return None;
        }
        // A child token: removing the informer stops it without stopping the cache.
        let ctx = self
            .inner
            .stop
            .lock()
            .get_or_insert_with(|| ctx.child_token())
            .clone();
        let mut unstarted = self.inner.unstarted.lock();
        for (sink, handler) in unstarted.drain(..) {
            tokio::spawn(sink.run(handler, ctx.clone()));
        }
        Some(tokio::spawn(self.inner.clone().run(ctx)))
    }

    fn stop(&self) {
        // Mark it started so that a later spawn does nothing, then cancel what runs.
        self.inner.started.store(true, Ordering::Release);
        let stopped = CancellationToken::new();
        stopped.cancel();
        let token = self.inner.stop.lock().get_or_insert(stopped).clone();
        token.cancel();
        tracing::debug!(informer = %self.inner.name, "informer removed");
    }

    fn has_synced(&self) -> bool {
        Informer::has_synced(self)
    }

    fn synced(&self) -> BoxFuture<'static, ()> {
        let mut rx = self.inner.synced.subscribe();
        Box::pin(async move {
            let _ = rx.wait_for(|s| *s).await;
        })
    }

    fn name(&self) -> String {
        self.inner.name.clone()
    }
}
