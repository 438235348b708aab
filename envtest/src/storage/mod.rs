//! Layer 1, storage (kube-apiserver's `storage/etcd3`): it owns the bytes and the
//! resourceVersions and may call only `api` (metadata accessors, errors) and `faults` (whose
//! `WatchControl` it implements). It knows nothing of types, HTTP or admission: the
//! `registry` and the handlers above decide what a write is; the store applies it atomically.
//!
//! The in-memory object store: one collection of JSON objects per resource (keyed by group and
//! plural, see `registry`), one global resourceVersion counter, a bounded per-collection history of
//! change events for watch resume and consistent paginated lists, and the fan-out of those events
//! to watchers ([`endpoints::handlers::watch`](crate::endpoints::handlers::watch), the kubelet).
//! Writers never wait on watchers: each watcher has a bounded channel and is dropped (its stream
//! ends) when that channel is full.
//!
//! Objects are kept as their serialized JSON (`Bytes`): reads and watch events copy those bytes
//! straight into responses, and memory stays close to the JSON size (each object's bytes are
//! allocated at their exact length). Writes parse the stored
//! object into a `serde_json::Value` for the verb's closure and serialize the result once; an
//! update parses it before taking the store lock ([`Store::commit_update`]), and a patch makes its
//! change outside the lock too and commits it only if the object is still the one read
//! ([`Store::commit_read`]; else it is made again, as etcd3's `GuaranteedUpdate` retries).

mod page;

pub(crate) use page::PageQuery;

use std::collections::{BTreeMap, HashMap, VecDeque, btree_map};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::api::meta;
use crate::api::status::ApiError;

/// Where the objects of a resource live: one collection per (group, plural), shared by every
/// served version of a custom resource. Held inline as [`ObjKey`]'s names are (every write
/// makes one).
pub(crate) type StoreKey = (Name, Name);

/// (namespace, name); namespace is empty for cluster-scoped objects. Names of up to 24 bytes
/// (most of them) are held inline: making a key allocates nothing, and a search of the objects'
/// B-tree compares the keys where the tree holds them, not through a pointer each.
pub(crate) type ObjKey = (Name, Name);

/// A namespace or object name in an [`ObjKey`].
pub(crate) type Name = compact_str::CompactString;

/// The key of the object `name` in namespace `ns` (empty for cluster-scoped objects).
pub(crate) fn obj_key(ns: &str, name: &str) -> ObjKey {
    (Name::from(ns), Name::from(name))
}

/// The key of the collection of `plural` in `group` (empty for the core group).
pub(crate) fn store_key(group: &str, plural: &str) -> StoreKey {
    (Name::from(group), Name::from(plural))
}

/// A hash map with foldhash, for the lookups every request makes (the collections, the served
/// types, the built-in schemas' fields), where std's SipHash cost more than the lookup itself.
/// Randomly seeded per map, as std's is: the keys come from request paths.
pub(crate) type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// The type of a change event.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
        }
    }
}

/// One committed change, shared by every watcher that receives it.
#[derive(Debug)]
pub(crate) struct Event {
    pub ty: EventType,
    pub rv: u64,
    pub key: ObjKey,
    /// The new state; for DELETED the last state carrying the deletion's resourceVersion.
    pub obj: Bytes,
    /// The state before this change.
    pub old: Option<Bytes>,
}

/// Appends the watch line `{"type":T,"object":O}\n` for serialized `obj` to `buf`.
pub(crate) fn push_line(buf: &mut bytes::BytesMut, ty: &str, obj: &[u8]) {
    buf.extend_from_slice(b"{\"type\":\"");
    buf.extend_from_slice(ty.as_bytes());
    buf.extend_from_slice(b"\",\"object\":");
    buf.extend_from_slice(obj);
    buf.extend_from_slice(b"}\n");
}

/// Parses a stored object.
pub(crate) fn parse(b: &[u8]) -> Value {
    serde_json::from_slice(b).unwrap_or(Value::Null)
}

/// The stored bytes of `v`: written into a buffer kept per thread (no regrowing from empty on
/// every write), then copied into an allocation of exactly their size, so a stored object holds
/// no spare capacity.
fn serialize(v: &Value) -> Bytes {
    thread_local! {
        static BUF: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    BUF.with_borrow_mut(|buf| {
        buf.clear();
        // Serializing a Value into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut *buf, v);
        let out = Bytes::copy_from_slice(buf);
        if buf.capacity() > 1 << 20 {
            *buf = Vec::new();
        }
        out
    })
}

/// One watch line.
pub(crate) fn encode_line(ty: &str, obj: &Value) -> Bytes {
    let mut buf = Vec::with_capacity(256);
    buf.extend_from_slice(b"{\"type\":\"");
    buf.extend_from_slice(ty.as_bytes());
    buf.extend_from_slice(b"\",\"object\":");
    // Serializing a Value into a Vec cannot fail.
    let _ = serde_json::to_writer(&mut buf, obj);
    buf.extend_from_slice(b"}\n");
    Bytes::from(buf)
}

/// `PartialObjectMetadata` of an object.
pub(crate) fn partial_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// How often a collection was listed and watched, and how many of its watchers were dropped for
/// falling behind ([`Environment::watch_stats`](crate::Environment::watch_stats)): what tells a
/// client's relists and watch restarts apart from its steady state. The server's own controllers
/// (namespaces, garbage collection) open their watches once, at start; everything else counted
/// is a client's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WatchStats {
    /// Lists started (first pages: a paginated list counts once).
    pub lists: u64,
    /// Watches opened.
    pub watches: u64,
    /// Watchers dropped because their buffer was full (the `watch_buffer` events they had not
    /// taken yet): their stream ends and the client resumes from the history or relists.
    pub dropped: u64,
}

/// How many objects one collection holds, readable without the store's lock: a handle
/// ([`Store::population`]) a layer above keeps to skip work on a collection that is empty on
/// every request (admission's webhook configurations and policy bindings) without a lookup.
/// The count is set under the lock by the write that changes it, before the write returns, so
/// a request that starts after a write was answered reads the count that write left.
#[derive(Clone, Debug, Default)]
pub(crate) struct Population(Arc<AtomicUsize>);

impl Population {
    /// Whether the collection holds no object.
    pub fn is_empty(&self) -> bool {
        self.0.load(Ordering::Acquire) == 0
    }

    fn set(&self, n: usize) {
        self.0.store(n, Ordering::Release);
    }
}

#[derive(Default)]
struct Collection {
    objects: BTreeMap<ObjKey, Bytes>,
    /// `objects.len()`, for readers without the lock.
    population: Population,
    history: VecDeque<Arc<Event>>,
    /// Lists and watches from below this resourceVersion are expired.
    floor: u64,
    watchers: Vec<mpsc::Sender<Arc<Event>>>,
    stats: WatchStats,
}

struct Inner {
    rv: u64,
    /// Lists started per collection (kept apart: a list does not create its collection).
    lists: BTreeMap<StoreKey, u64>,
    /// Hashed: every write and every namespaced create's namespace check looks a collection up,
    /// and a B-tree of ~60 (group, plural) keys compared each lookup's strings ~15 times.
    /// Closing every watch (a fault) walks them in key order, so that the streams end in one
    /// order every run (the simulation replays it).
    cols: FastMap<StoreKey, Collection>,
    /// Every [`Population`] handed out, so that a collection dropped and made again (a CRD
    /// deleted and created again) counts into the handle its readers hold.
    populations: BTreeMap<StoreKey, Population>,
    /// How many objects follow each page served with a continue token, for the page that
    /// continues it ([`page::Rests`]).
    rests: page::Rests,
}

impl Inner {
    /// The collection of `key`, made empty if there is none (no key copied when there is).
    fn collection(&mut self, key: &StoreKey) -> &mut Collection {
        if !self.cols.contains_key(key) {
            let population = self.populations.get(key).cloned().unwrap_or_default();
            let col = Collection {
                population,
                ..Collection::default()
            };
            self.cols.insert(key.clone(), col);
        }
        self.cols.get_mut(key).expect("inserted above")
    }
}

/// What a write closure decides.
pub(crate) enum Change {
    /// Store this object (create or update).
    Put(Value),
    /// Remove the object.
    Remove,
}

/// An object as a write left it: parsed, and, when the write stored it, the bytes the store
/// holds (its exact JSON, the same bytes its watch event carries), which a response copies instead
/// of serializing the object again. `None` for a dry run and a no-op write.
#[derive(Clone, Debug)]
pub(crate) struct Committed {
    pub obj: Arc<Value>,
    pub bytes: Option<Bytes>,
}

impl Committed {
    fn unstored(v: Value) -> Self {
        Committed {
            obj: Arc::new(v),
            bytes: None,
        }
    }
}

/// The result of a write.
pub(crate) enum Outcome {
    Created(Committed),
    Updated(Committed),
    Unchanged(Committed),
    Deleted(Committed),
}

impl Outcome {
    /// The object, whatever the write came to.
    pub fn into_committed(self) -> Committed {
        match self {
            Outcome::Created(c)
            | Outcome::Updated(c)
            | Outcome::Unchanged(c)
            | Outcome::Deleted(c) => c,
        }
    }

    /// Whether the write removed the object.
    pub fn removed(&self) -> bool {
        matches!(self, Outcome::Deleted(_))
    }
}

/// Where a watch starts.
pub(crate) enum Start {
    /// From the current state; with `initial`, synthetic ADDED events for existing objects.
    Current { initial: bool },
    /// Every change after this resourceVersion.
    From(u64),
}

/// A registered watch: what to send first, then the live channel.
pub(crate) struct Subscription {
    pub rv: u64,
    pub initial: Vec<(ObjKey, Bytes)>,
    pub backlog: Vec<Arc<Event>>,
    pub rx: mpsc::Receiver<Arc<Event>>,
}

/// The store. All writes go through [`Store::commit`] under one lock.
pub(crate) struct Store {
    inner: Mutex<Inner>,
    window: usize,
    watch_buffer: usize,
}

fn rv_of(v: &Value) -> Option<&str> {
    meta::meta_str(v, "resourceVersion")
}

/// What a [`Change`] comes to: a write of an event, or an outcome without one (no-op, dry run).
enum Decision {
    Write(EventType, Value),
    Done(Outcome),
}

/// Whether a written object equals the stored one (a no-op write), `status` compared first: a
/// status write changes it, and the full comparison would walk the whole object (metadata, its
/// managedFields, spec) before reaching it, in key order.
fn same(cur: &Value, new: &Value) -> bool {
    match (cur.as_object(), new.as_object()) {
        (Some(c), Some(n)) => c.len() == n.len() && c.get("status") == n.get("status") && c == n,
        _ => cur == new,
    }
}

/// Decides `change` against the stored object `cur`: the resourceVersion `next_rv` goes on a
/// write; an unchanged object or a dry run writes nothing. `cur` is taken only by a removal (its
/// object is the event's); otherwise the caller drops it after releasing the lock.
fn decide(
    change: Change,
    cur: &mut Option<Value>,
    next_rv: u64,
    dry_run: bool,
) -> Result<Decision, ApiError> {
    match change {
        Change::Put(mut v) => {
            if let Some(c) = cur.as_ref() {
                // Compared at the stored resourceVersion (most writes carry it already).
                match rv_of(c) {
                    Some(rv) if rv_of(&v) == Some(rv) => {}
                    Some(rv) => meta::set_meta(&mut v, "resourceVersion", json!(rv)),
                    None => meta::remove_meta(&mut v, "resourceVersion"),
                }
                if same(c, &v) {
                    return Ok(Decision::Done(Outcome::Unchanged(Committed::unstored(v))));
                }
            }
            if dry_run {
                let v = Committed::unstored(v);
                return Ok(Decision::Done(if cur.is_some() {
                    Outcome::Updated(v)
                } else {
                    Outcome::Created(v)
                }));
            }
            meta::set_meta(&mut v, "resourceVersion", json!(next_rv.to_string()));
            let ty = if cur.is_some() {
                EventType::Modified
            } else {
                EventType::Added
            };
            Ok(Decision::Write(ty, v))
        }
        Change::Remove => {
            let Some(mut v) = cur.take() else {
                return Err(ApiError::internal("no object to remove"));
            };
            if dry_run {
                return Ok(Decision::Done(Outcome::Deleted(Committed::unstored(v))));
            }
            meta::set_meta(&mut v, "resourceVersion", json!(next_rv.to_string()));
            Ok(Decision::Write(EventType::Deleted, v))
        }
    }
}

/// Writes `bytes` into the place `slot` holds for the key, as `ty` says. `decide` adds exactly
/// when nothing was stored under the key (read under the same lock), and modifies or deletes
/// only what was.
fn write_slot(slot: btree_map::Entry<'_, ObjKey, Bytes>, ty: EventType, bytes: &Bytes) {
    match (ty, slot) {
        (EventType::Deleted, btree_map::Entry::Occupied(o)) => {
            o.remove();
        }
        (EventType::Modified, btree_map::Entry::Occupied(mut o)) => {
            *o.get_mut() = bytes.clone();
        }
        (EventType::Added, btree_map::Entry::Vacant(v)) => {
            v.insert(bytes.clone());
        }
        _ => {}
    }
}

impl Collection {
    /// Appends `ev` to the bounded history (raising the floor) and fans it out; a watcher whose
    /// buffer is full is dropped.
    fn record(&mut self, ev: Arc<Event>, window: usize) {
        self.history.push_back(ev.clone());
        while self.history.len() > window {
            if let Some(old) = self.history.pop_front() {
                self.floor = old.rv;
            }
        }
        let dropped = &mut self.stats.dropped;
        self.watchers.retain(|tx| match tx.try_send(ev.clone()) {
            Ok(()) => true,
            // Behind by the whole buffer: dropped (counted); a closed one is only forgotten.
            Err(mpsc::error::TrySendError::Full(_)) => {
                tracing::debug!(rv = ev.rv, "dropping a watcher that fell behind");
                *dropped += 1;
                false
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        });
    }
}

impl Store {
    pub fn new(window: usize, watch_buffer: usize) -> Self {
        Store {
            inner: Mutex::new(Inner {
                rv: 1,
                lists: BTreeMap::new(),
                cols: FastMap::default(),
                populations: BTreeMap::new(),
                rests: page::Rests::default(),
            }),
            window: window.max(1),
            watch_buffer: watch_buffer.max(1),
        }
    }

    pub fn current_rv(&self) -> u64 {
        self.inner.lock().rv
    }

    pub fn get(&self, key: &StoreKey, okey: &ObjKey) -> Option<Bytes> {
        self.inner.lock().cols.get(key)?.objects.get(okey).cloned()
    }

    /// The stored object, parsed.
    pub fn get_value(&self, key: &StoreKey, okey: &ObjKey) -> Option<Value> {
        self.get(key, okey).map(|b| parse(&b))
    }

    pub fn count(&self, key: &StoreKey) -> usize {
        self.inner
            .lock()
            .cols
            .get(key)
            .map_or(0, |c| c.objects.len())
    }

    /// Runs `f` on the stored object under the store lock and applies its decision. A dry run
    /// returns the would-be outcome and changes nothing.
    pub fn commit<F>(
        &self,
        key: &StoreKey,
        okey: &ObjKey,
        dry_run: bool,
        f: F,
    ) -> Result<Outcome, ApiError>
    where
        F: FnOnce(Option<&Value>) -> Result<Change, ApiError>,
    {
        self.commit_locked(self.inner.lock(), key, okey, dry_run, None, f)
    }

    /// [`Self::commit`] of a write that expects the object to exist (an update, a delete): the
    /// stored object is parsed before the store lock is taken, and used under it only if it is
    /// still the stored one (the same bytes: every write stores a new allocation, and the one
    /// read is held, so it cannot be reused); else it is parsed again under the lock. The parse
    /// is a fifth of an update's time under the lock, where every other write waits on it.
    pub fn commit_update<F>(
        &self,
        key: &StoreKey,
        okey: &ObjKey,
        dry_run: bool,
        f: F,
    ) -> Result<Outcome, ApiError>
    where
        F: FnOnce(Option<&Value>) -> Result<Change, ApiError>,
    {
        let read = self.read(key, okey);
        self.commit_locked(self.inner.lock(), key, okey, dry_run, read, f)
    }

    /// The stored object's bytes and their parse, for [`Self::commit_read`].
    pub fn read(&self, key: &StoreKey, okey: &ObjKey) -> Option<(Bytes, Value)> {
        self.get(key, okey).map(|b| {
            let v = parse(&b);
            (b, v)
        })
    }

    /// Commits `change`, made outside the store lock from `read` (what [`Self::read`] returned),
    /// if the stored object is still those bytes (every write stores a new allocation, and the
    /// one read is held, so it cannot be reused); `Ok(None)`, changing nothing, when a write came
    /// in between: the caller makes its change again from a new read, as etcd3's
    /// `GuaranteedUpdate` retries. Other writes do not wait while the change is made.
    pub fn commit_read(
        &self,
        key: &StoreKey,
        okey: &ObjKey,
        dry_run: bool,
        read: Option<(Bytes, Value)>,
        change: Change,
    ) -> Result<Option<Outcome>, ApiError> {
        let guard = self.inner.lock();
        let held = guard.cols.get(key).and_then(|c| c.objects.get(okey));
        let current = match (&read, held) {
            (Some((b, _)), Some(now)) => b.as_ptr() == now.as_ptr() && b.len() == now.len(),
            (None, None) => true,
            _ => false,
        };
        if !current {
            drop(guard);
            return Ok(None);
        }
        self.commit_locked(guard, key, okey, dry_run, read, |_| Ok(change))
            .map(Some)
    }

    /// [`Self::commit`] under `guard`, the store lock, with `read`, the stored object's bytes and
    /// their parse if read before the lock.
    fn commit_locked<F>(
        &self,
        mut guard: parking_lot::MutexGuard<'_, Inner>,
        key: &StoreKey,
        okey: &ObjKey,
        dry_run: bool,
        read: Option<(Bytes, Value)>,
        f: F,
    ) -> Result<Outcome, ApiError>
    where
        F: FnOnce(Option<&Value>) -> Result<Change, ApiError>,
    {
        let inner = &mut *guard;
        let next_rv = inner.rv + 1;
        let col = inner.collection(key);
        // One search of the objects' B-tree for both the read and the write: the entry holds the
        // key's place until the write (at 20,000 objects a search was ~2 % of a create).
        let slot = col.objects.entry(okey.clone());
        let cur_bytes = match &slot {
            btree_map::Entry::Occupied(o) => Some(o.get().clone()),
            btree_map::Entry::Vacant(_) => None,
        };
        // The parsed stored object (`cur`) and the request's closure are dropped after the lock
        // is released: freeing a parsed object is a few µs another write would wait on.
        let (mut cur, stale) = match (read, &cur_bytes) {
            (Some((b, v)), Some(now)) if b.as_ptr() == now.as_ptr() && b.len() == now.len() => {
                (Some(v), None)
            }
            (read, _) => (cur_bytes.as_deref().map(parse), read),
        };
        let change = f(cur.as_ref());
        let decided = change.and_then(|c| decide(c, &mut cur, next_rv, dry_run));
        let (ty, obj) = match decided {
            Ok(Decision::Write(ty, obj)) => (ty, obj),
            Ok(Decision::Done(outcome)) => {
                drop(slot);
                drop(guard);
                return Ok(outcome);
            }
            Err(e) => {
                drop(slot);
                drop(guard);
                return Err(e);
            }
        };
        let bytes = serialize(&obj);
        write_slot(slot, ty, &bytes);
        col.population.set(col.objects.len());
        let ev = Arc::new(Event {
            ty,
            rv: next_rv,
            key: okey.clone(),
            obj: bytes.clone(),
            old: cur_bytes,
        });
        col.record(ev, self.window);
        inner.rv = next_rv;
        drop(guard);
        drop((cur, stale));
        let c = Committed {
            obj: Arc::new(obj),
            bytes: Some(bytes),
        };
        Ok(match ty {
            EventType::Added => Outcome::Created(c),
            EventType::Modified => Outcome::Updated(c),
            EventType::Deleted => Outcome::Deleted(c),
        })
    }

    /// Objects of a collection (optionally one namespace) in (namespace, name) order, at the
    /// current state or exactly at `at`. `Err(floor)` when `at` is older than the history.
    pub fn list(
        &self,
        key: &StoreKey,
        ns: Option<&str>,
        at: Option<u64>,
    ) -> Result<(u64, Vec<(ObjKey, Bytes)>), u64> {
        let inner = self.inner.lock();
        let Some(col) = inner.cols.get(key) else {
            return match at {
                Some(at) if at < inner.rv && at != 0 => Ok((at, Vec::new())),
                _ => Ok((inner.rv, Vec::new())),
            };
        };
        let in_ns = |k: &ObjKey| ns.is_none_or(|n| k.0 == n);
        match at {
            Some(at) if at < inner.rv => {
                if at < col.floor {
                    return Err(col.floor);
                }
                let mut objs: BTreeMap<ObjKey, Bytes> = col
                    .objects
                    .iter()
                    .filter(|(k, _)| in_ns(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                for ev in col.history.iter().rev().take_while(|e| e.rv > at) {
                    if !in_ns(&ev.key) {
                        continue;
                    }
                    match (&ev.ty, &ev.old) {
                        (EventType::Added, _) => {
                            objs.remove(&ev.key);
                        }
                        (_, Some(old)) => {
                            objs.insert(ev.key.clone(), old.clone());
                        }
                        (_, None) => {}
                    }
                }
                Ok((at, objs.into_iter().collect()))
            }
            _ => {
                let items = match ns {
                    Some(n) => col
                        .objects
                        .range(obj_key(n, "")..)
                        .take_while(|(k, _)| k.0 == n)
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                    None => col
                        .objects
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                };
                Ok((inner.rv, items))
            }
        }
    }

    /// Registers a watcher. `Err(floor)` when `Start::From` is below the history floor.
    pub fn watch(&self, key: &StoreKey, start: Start) -> Result<Subscription, u64> {
        let mut inner = self.inner.lock();
        let rv = inner.rv;
        let col = inner.collection(key);
        let (initial, backlog) = match start {
            Start::Current { initial } => (
                if initial {
                    col.objects
                        .iter()
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect()
                } else {
                    Vec::new()
                },
                Vec::new(),
            ),
            Start::From(from) => {
                if from < col.floor {
                    return Err(col.floor);
                }
                let n = col.history.iter().rev().take_while(|e| e.rv > from).count();
                (
                    Vec::new(),
                    col.history
                        .iter()
                        .skip(col.history.len() - n)
                        .cloned()
                        .collect(),
                )
            }
        };
        let (tx, rx) = mpsc::channel(self.watch_buffer);
        col.watchers.push(tx);
        col.stats.watches += 1;
        Ok(Subscription {
            rv,
            initial,
            backlog,
            rx,
        })
    }

    /// The list and watch counts of a collection (zero for one never touched).
    pub fn watch_stats(&self, key: &StoreKey) -> WatchStats {
        let inner = self.inner.lock();
        let stats = inner
            .cols
            .get(key)
            .map_or_else(WatchStats::default, |c| c.stats);
        WatchStats {
            lists: inner.lists.get(key).copied().unwrap_or(0),
            ..stats
        }
    }

    /// Ends every open watch (each stream ends after what it already received).
    pub fn close_all_watches(&self) {
        let mut inner = self.inner.lock();
        let mut cols: Vec<(&StoreKey, &mut Collection)> = inner.cols.iter_mut().collect();
        cols.sort_unstable_by(|a, b| a.0.cmp(b.0));
        for (_, col) in cols {
            col.watchers.clear();
        }
    }

    /// Ends the watches of one collection.
    pub fn close_watches(&self, key: &StoreKey) {
        if let Some(col) = self.inner.lock().cols.get_mut(key) {
            col.watchers.clear();
        }
    }

    /// Forgets all history: watches and exact lists from before now get 410 Expired.
    pub fn compact(&self) {
        let mut inner = self.inner.lock();
        let rv = inner.rv;
        for col in inner.cols.values_mut() {
            col.history.clear();
            col.floor = rv;
        }
    }

    /// Drops a collection whose resource is gone: its watches end, its objects vanish.
    pub fn drop_collection(&self, key: &StoreKey) {
        if let Some(col) = self.inner.lock().cols.remove(key) {
            col.population.set(0);
        }
    }

    /// The live count of the objects of a collection (made empty if it does not exist yet).
    pub fn population(&self, key: &StoreKey) -> Population {
        let mut inner = self.inner.lock();
        let p = inner.collection(key).population.clone();
        inner.populations.insert(key.clone(), p.clone());
        p
    }
}

impl crate::faults::WatchControl for Store {
    fn close_all_watches(&self) {
        Store::close_all_watches(self);
    }

    fn compact(&self) {
        Store::compact(self);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(store: &Store, key: &StoreKey, name: &str) {
        let okey = obj_key("", name);
        let obj = json!({"metadata": {"name": name}});
        store
            .commit(key, &okey, false, |_| Ok(Change::Put(obj)))
            .expect("put");
    }

    #[test]
    fn a_population_follows_writes_and_a_dropped_collection() {
        let store = Store::new(10, 10);
        let key = store_key("g", "things");
        let count = store.population(&key);
        assert!(count.is_empty());
        put(&store, &key, "a");
        assert!(!count.is_empty(), "counted by the time the write returns");
        let okey = obj_key("", "a");
        store
            .commit(&key, &okey, true, |_| Ok(Change::Remove))
            .expect("dry-run remove");
        assert!(!count.is_empty(), "a dry run removes nothing");
        store
            .commit(&key, &okey, false, |_| Ok(Change::Remove))
            .expect("remove");
        assert!(count.is_empty());

        put(&store, &key, "b");
        store.drop_collection(&key);
        assert!(count.is_empty(), "a dropped collection holds nothing");
        put(&store, &key, "c");
        assert!(
            !count.is_empty(),
            "the collection made again counts into the same handle"
        );
    }
}
