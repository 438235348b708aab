//! The key table both queues are built on: every key a queue knows is stored once, in a
//! slab slot, and found through a hash index of slot numbers.
//!
//! client-go keeps three sets (`queue`, `dirty`, `processing`) and hashes a key up to five
//! times per add/get/done. Here one slot holds the key, its cached hash and the queue's
//! per-key state (queued, processing, dirty, delayed, priority, metric timestamps), and
//! the FIFOs, buckets and timer heap hold plain `u32` slot numbers. A key is hashed once
//! per operation that names it and cloned only when it is handed out.

use hashbrown::{DefaultHashBuilder, HashTable};

use super::QueueKey;

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
        let slots = &self.slots;
        self.index
            .find(
                hash,
                |&i| matches!(&slots[i as usize], Some(n) if n.hash == hash && n.key == *key),
            )
            .copied()
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
