//! The key table both queues are built on: every key a queue knows is stored once, in a
//! slab slot, and found through a hash index of slot numbers.
//!
//! client-go keeps three sets (`queue`, `dirty`, `processing`) and hashes a key up to five
//! times per add/get/done. Here one slot holds the key, its cached hash and the queue's
//! per-key state (queued, processing, dirty, delayed, priority, metric timestamps), and
//! the FIFOs, buckets and timer heap hold plain `u32` slot numbers. A key is hashed once
//! per operation that names it and cloned only when it is handed out.

use std::borrow::Borrow;

use hashbrown::{DefaultHashBuilder, HashTable};

use super::QueueKey;

/// A key handed to an add: owned (stored as is on a miss) or borrowed (cloned only on a
/// miss), so that a dedup hit never allocates or frees.
pub(crate) trait KeyArg<T> {
    /// Whether `stored` is this key.
    fn is(&self, stored: &T) -> bool;
    /// The key to store.
    fn into_key(self) -> T;
}

/// An owned key.
pub(crate) struct Owned<T>(pub(crate) T);

impl<T: Eq> KeyArg<T> for Owned<T> {
    fn is(&self, stored: &T) -> bool {
        self.0 == *stored
    }
    fn into_key(self) -> T {
        self.0
    }
}

/// A borrowed form of a key (`&str` for a `String` key).
pub(crate) struct Borrowed<'a, Q: ?Sized>(pub(crate) &'a Q);

impl<T, Q> KeyArg<T> for Borrowed<'_, Q>
where
    T: Borrow<Q>,
    Q: ?Sized + Eq + ToOwned<Owned = T>,
{
    fn is(&self, stored: &T) -> bool {
        stored.borrow() == self.0
    }
    fn into_key(self) -> T {
        self.0.to_owned()
    }
}

/// One occupied slot: the key, its hash and the queue's state for it.
pub(crate) struct Node<T, E> {
    pub(crate) key: T,
    hash: u64,
    pub(crate) val: E,
}

/// A slab of keys with a hash index over it.
pub(crate) struct Table<T, E> {
    hasher: DefaultHashBuilder,
    index: HashTable<u32>,
    slots: Vec<Option<Node<T, E>>>,
    free: Vec<u32>,
}

impl<T: QueueKey, E> Table<T, E> {
    pub(crate) fn new() -> Self {
        Self {
            hasher: DefaultHashBuilder::default(),
            index: HashTable::new(),
            slots: Vec::new(),
            free: Vec::new(),
        }
    }

    /// The table's (randomly seeded) hasher, so callers can hash keys before locking.
    pub(crate) fn hasher(&self) -> &DefaultHashBuilder {
        &self.hasher
    }

    /// The slot of `key` (whose hash is `hash`), if stored.
    pub(crate) fn find(&self, hash: u64, key: &T) -> Option<u32> {
        self.find_by(hash, |k| k == key)
    }

    /// The slot of the key `is` accepts (whose hash is `hash`), if stored.
    fn find_by(&self, hash: u64, is: impl Fn(&T) -> bool) -> Option<u32> {
        let slots = &self.slots;
        self.index
            .find(
                hash,
                |&i| matches!(&slots[i as usize], Some(n) if n.hash == hash && is(&n.key)),
            )
            .copied()
    }

    /// The slot of `key`, stored with `val()` first if absent. Hands the key back when it
    /// was already stored, so the caller can drop it outside its lock.
    pub(crate) fn find_or_insert<K: KeyArg<T>>(
        &mut self,
        hash: u64,
        key: K,
        val: impl FnOnce() -> E,
    ) -> (u32, Option<K>) {
        match self.find_by(hash, |k| key.is(k)) {
            Some(idx) => (idx, Some(key)),
            None => (self.insert(hash, key.into_key(), val()), None),
        }
    }

    /// Stores a key known to be absent; returns its slot.
    pub(crate) fn insert(&mut self, hash: u64, key: T, val: E) -> u32 {
        let node = Some(Node { key, hash, val });
        let idx = match self.free.pop() {
            Some(i) => {
                self.slots[i as usize] = node;
                i
            }
            None => {
                // u32 slots: a queue holds far fewer than 4 billion distinct keys.
                let i = self.slots.len() as u32;
                self.slots.push(node);
                i
            }
        };
        let slots = &self.slots;
        self.index.insert_unique(hash, idx, |&i| {
            slots[i as usize].as_ref().map_or(0, |n| n.hash)
        });
        idx
    }

    /// Removes the key in slot `idx`, returning it.
    pub(crate) fn remove(&mut self, idx: u32) -> Option<T> {
        let node = self.slots.get_mut(idx as usize)?.take()?;
        if let Ok(entry) = self.index.find_entry(node.hash, |&i| i == idx) {
            entry.remove();
        }
        self.free.push(idx);
        if self.index.is_empty() && self.slots.len() > 1024 {
            // Everything left: give the memory back rather than keep a high-water mark.
            self.slots = Vec::new();
            self.free = Vec::new();
            self.index = HashTable::new();
        }
        Some(node.key)
    }

    pub(crate) fn get(&self, idx: u32) -> Option<&Node<T, E>> {
        self.slots.get(idx as usize)?.as_ref()
    }

    pub(crate) fn get_mut(&mut self, idx: u32) -> Option<&mut Node<T, E>> {
        self.slots.get_mut(idx as usize)?.as_mut()
    }

    /// Iterates over the occupied slots.
    #[allow(dead_code)]
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Node<T, E>> {
        self.slots.iter().flatten()
    }
}
