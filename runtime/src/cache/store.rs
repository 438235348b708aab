//! The informer's store: a `DashMap` of `Arc<K>` keyed by `namespace/name`, with a
//! namespace index built in and user field indexes (client-go's `Indexer`, as
//! controller-runtime's cache configures it).
//!
//! Only the informer (`super::informer`) writes; readers (`super::reader`, the client)
//! share the `Arc`s. Field indexes follow controller-runtime's conventions: an index
//! registered as `name` is stored as `field:<name>`, and each value `v` of an object in
//! namespace `ns` is filed under `ns/v` and `__all_namespaces/v`.
//!
//! The maps hash with a fixed seed ([`FixedState`], foldhash's), not a per-process random one:
//! what a list, a handler's initial events and a resync iterate in then follows from the keys
//! and the order they came in, so ctrl-envtest's simulation replays a seed exactly. Keys are
//! names the API server validated, not input an attacker picks to collide; foldhash costs a
//! fraction of SipHash per key, which every event of an informer pays (the store and its
//! namespace index).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use dashmap::DashMap;
use dashmap::mapref::entry::Entry;
use kube::Resource;
use parking_lot::RwLock;

/// Extracts the values an object is indexed under (controller-runtime's
/// `client.IndexerFunc`).
pub type IndexFn<K> = Arc<dyn Fn(&K) -> Vec<String> + Send + Sync>;

/// The namespace prefix of cluster-wide index values (controller-runtime's
/// `allNamespacesNamespace`).
pub const ALL_NAMESPACES: &str = "__all_namespaces";

/// The stored name of a field index (`field:<name>`).
pub fn field_index_name(field: &str) -> String {
    format!("field:{field}")
}

/// The stored value of a field index entry: `<namespace>/<value>` or
/// `__all_namespaces/<value>` (controller-runtime's `KeyToNamespacedKey`).
pub fn namespaced_value(namespace: Option<&str>, value: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}/{value}"),
        _ => format!("{ALL_NAMESPACES}/{value}"),
    }
}

/// The maps' hasher: foldhash with a fixed seed (see the module doc).
type FixedState = foldhash::fast::FixedState;

type Postings = HashMap<String, HashSet<Arc<str>, FixedState>, FixedState>;

struct FieldIndex<K> {
    func: IndexFn<K>,
    postings: Postings,
}

/// A thread-safe object store with indexes.
pub struct Store<K> {
    objects: DashMap<Arc<str>, Arc<K>, FixedState>,
    by_namespace: RwLock<Postings>,
    indexes: RwLock<HashMap<String, FieldIndex<K>, FixedState>>,
}

impl<K> Default for Store<K> {
    fn default() -> Self {
        Self {
            objects: DashMap::default(),
            by_namespace: RwLock::new(HashMap::default()),
            indexes: RwLock::new(HashMap::default()),
        }
    }
}

fn add(postings: &mut Postings, value: String, key: &Arc<str>) {
    postings.entry(value).or_default().insert(key.clone());
}

fn remove(postings: &mut Postings, value: &str, key: &str) {
    if let Some(set) = postings.get_mut(value) {
        set.remove(key);
        if set.is_empty() {
            postings.remove(value);
        }
    }
}

/// Every index value of `obj` for `func`, with controller-runtime's namespacing.
fn index_values<K: Resource>(func: &IndexFn<K>, obj: &K) -> Vec<String> {
    let ns = obj.meta().namespace.as_deref();
    let mut out = Vec::new();
    for v in func(obj) {
        if ns.is_some_and(|n| !n.is_empty()) {
            out.push(namespaced_value(ns, &v));
        }
        out.push(namespaced_value(None, &v));
    }
    out.sort();
    out.dedup();
    out
}

impl<K: Resource> Store<K> {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many objects are stored.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// The object under `key` (`namespace/name` or `name`).
    pub fn get(&self, key: &str) -> Option<Arc<K>> {
        self.objects.get(key).map(|e| e.value().clone())
    }

    /// Every key.
    pub fn keys(&self) -> Vec<Arc<str>> {
        self.objects.iter().map(|e| e.key().clone()).collect()
    }

    /// Every object.
    pub fn list(&self) -> Vec<Arc<K>> {
        self.objects.iter().map(|e| e.value().clone()).collect()
    }

    /// The objects of one namespace (the built-in namespace index).
    pub fn list_namespace(&self, ns: &str) -> Vec<Arc<K>> {
        let keys: Vec<Arc<str>> = self
            .by_namespace
            .read()
            .get(ns)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        keys.iter().filter_map(|k| self.get(k)).collect()
    }

    /// The objects filed under `value` in index `index` (a stored name such as
    /// `field:spec.nodeName`); `None` if there is no such index.
    pub fn by_index(&self, index: &str, value: &str) -> Option<Vec<Arc<K>>> {
        let keys: Vec<Arc<str>> = {
            let idx = self.indexes.read();
            let fi = idx.get(index)?;
            fi.postings
                .get(value)
                .map(|s| s.iter().cloned().collect())
                .unwrap_or_default()
        };
        Some(keys.iter().filter_map(|k| self.get(k)).collect())
    }

    /// Whether an index of this stored name exists.
    pub fn has_index(&self, index: &str) -> bool {
        self.indexes.read().contains_key(index)
    }

    /// Adds an index and files every stored object under it. Returns false (and
    /// changes nothing) if an index of that name exists.
    pub fn add_index(&self, index: String, func: IndexFn<K>) -> bool {
        let mut idx = self.indexes.write();
        if idx.contains_key(&index) {
            return false;
        }
        let mut postings = Postings::default();
        for e in self.objects.iter() {
            for v in index_values(&func, e.value()) {
                add(&mut postings, v, e.key());
            }
        }
        idx.insert(index, FieldIndex { func, postings });
        true
    }

    /// Stores `obj` under `key`, returning the object it replaced.
    pub fn insert(&self, key: &str, obj: Arc<K>) -> Option<Arc<K>> {
        self.insert_key(Arc::from(key), obj)
    }

    /// [`insert`](Self::insert) with a key the caller already holds as `Arc<str>` (the
    /// informer's path: one hash lookup, no copy of the key; an existing entry keeps its key).
    pub(crate) fn insert_key(&self, key: Arc<str>, obj: Arc<K>) -> Option<Arc<K>> {
        let (key, old) = match self.objects.entry(key) {
            Entry::Occupied(mut e) => {
                let old = e.insert(obj.clone());
                (e.key().clone(), Some(old))
            }
            Entry::Vacant(e) => {
                let key = e.key().clone();
                e.insert(obj.clone());
                (key, None)
            }
        };
        self.reindex(&key, old.as_deref(), Some(&obj));
        old
    }

    /// Removes the object under `key`, returning it.
    pub fn remove(&self, key: &str) -> Option<Arc<K>> {
        let (key, old) = self.objects.remove(key)?;
        self.reindex(&key, Some(&old), None);
        Some(old)
    }

    fn reindex(&self, key: &Arc<str>, old: Option<&K>, new: Option<&K>) {
        let old_ns = old.and_then(|o| o.meta().namespace.as_deref());
        let new_ns = new.and_then(|o| o.meta().namespace.as_deref());
        if old_ns != new_ns || old.is_none() || new.is_none() {
            let mut by_ns = self.by_namespace.write();
            if let Some(ns) = old_ns {
                remove(&mut by_ns, ns, key);
            }
            if let Some(ns) = new_ns {
                match by_ns.get_mut(ns) {
                    Some(set) => {
                        set.insert(key.clone());
                    }
                    None => add(&mut by_ns, ns.to_string(), key),
                }
            }
        }
        if self.indexes.read().is_empty() {
            return;
        }
        let mut idx = self.indexes.write();
        for fi in idx.values_mut() {
            let before = old.map(|o| index_values(&fi.func, o)).unwrap_or_default();
            let after = new.map(|o| index_values(&fi.func, o)).unwrap_or_default();
            if before == after {
                continue;
            }
            for v in &before {
                remove(&mut fi.postings, v, key);
            }
            for v in after {
                add(&mut fi.postings, v, key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn cm(ns: &str, name: &str, label: &str) -> Arc<ConfigMap> {
        let mut c = ConfigMap::default();
        c.metadata.namespace = Some(ns.into());
        c.metadata.name = Some(name.into());
        c.metadata.labels = Some([("app".to_string(), label.to_string())].into());
        Arc::new(c)
    }

    fn app(c: &ConfigMap) -> Vec<String> {
        c.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app").cloned())
            .into_iter()
            .collect()
    }

    #[test]
    fn namespace_and_field_indexes_follow_updates() {
        let s = Store::<ConfigMap>::new();
        s.insert("a/x", cm("a", "x", "web"));
        assert!(s.add_index(field_index_name("app"), Arc::new(app)));
        assert!(!s.add_index(field_index_name("app"), Arc::new(app)));
        s.insert("b/y", cm("b", "y", "web"));
        let web = |v: &str| s.by_index("field:app", v).map(|l| l.len());
        assert_eq!(web("__all_namespaces/web"), Some(2));
        assert_eq!(web("a/web"), Some(1));
        s.insert("a/x", cm("a", "x", "db"));
        assert_eq!(web("__all_namespaces/web"), Some(1));
        assert_eq!(web("a/db"), Some(1));
        assert_eq!(s.list_namespace("a").len(), 1);
        s.remove("a/x");
        assert_eq!(web("a/db"), Some(0));
        assert!(s.list_namespace("a").is_empty());
        assert_eq!(s.by_index("field:nope", "x").map(|l| l.len()), None);
    }
}
