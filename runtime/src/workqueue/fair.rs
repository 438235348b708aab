//! Fair hand-out within a priority (controller-runtime PR #3261's design): the
//! priority queue's bucket of one priority, either one FIFO ([`Bucket::Fifo`], the
//! default) or one FIFO per fairness key taken in turns ([`Bucket::Fair`]), so that a
//! key with 10,000 queued items does not starve a key with one: among items of the
//! same priority the next item comes from the next key in round-robin order, FIFO
//! within a key.
//!
//! The key is extracted from the item by a [`FairnessFn`] (a multi-cluster
//! controller's: the cluster and namespace) and kept as its hash. What the queue
//! stores and how it orders priorities is [`super::priority`]'s; this is only the
//! order within one priority.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// The fairness key of an item, as a hash (items with equal keys share a turn).
pub type FairnessFn<T> = Arc<dyn Fn(&T) -> u64 + Send + Sync>;

/// A bucket element: the item's ticket (its FIFO place) and its slot.
type Ticket = (u64, u32);

/// The queued items of one priority.
pub(super) enum Bucket {
    /// One FIFO in ticket order.
    Fifo(VecDeque<Ticket>),
    /// A FIFO per fairness key, and the keys in turn order.
    Fair {
        queues: HashMap<u64, VecDeque<Ticket>>,
        turns: VecDeque<u64>,
    },
}

impl Bucket {
    /// An empty bucket, fair or not.
    pub(super) fn new(fair: bool) -> Self {
        if fair {
            Self::Fair {
                queues: HashMap::new(),
                turns: VecDeque::new(),
            }
        } else {
            Self::Fifo(VecDeque::new())
        }
    }

    /// Puts `t` in ticket order (at the back, unless it waited for `done` while
    /// younger items were added) in the FIFO of `key`.
    pub(super) fn push(&mut self, t: Ticket, key: u64) {
        match self {
            Self::Fifo(q) => insert_ordered(q, t),
            Self::Fair { queues, turns } => {
                let q = queues.entry(key).or_default();
                if q.is_empty() {
                    turns.push_back(key);
                }
                insert_ordered(q, t);
            }
        }
    }

    /// The next element: the FIFO's front, or the front of the key whose turn it is
    /// (that key then goes to the back of the turns if it has more).
    pub(super) fn pop_front(&mut self) -> Option<Ticket> {
        match self {
            Self::Fifo(q) => q.pop_front(),
            Self::Fair { queues, turns } => {
                let key = turns.pop_front()?;
                let q = queues.get_mut(&key)?;
                let t = q.pop_front();
                if q.is_empty() {
                    queues.remove(&key);
                } else {
                    turns.push_back(key);
                }
                t
            }
        }
    }

    /// Whether nothing is left.
    pub(super) fn is_empty(&self) -> bool {
        match self {
            Self::Fifo(q) => q.is_empty(),
            Self::Fair { turns, .. } => turns.is_empty(),
        }
    }
}

fn insert_ordered(q: &mut VecDeque<Ticket>, t: Ticket) {
    if q.back().is_none_or(|&(b, _)| b < t.0) {
        q.push_back(t);
    } else {
        let pos = q.partition_point(|&(b, _)| b < t.0);
        q.insert(pos, t);
    }
}

#[cfg(test)]
mod tests {
    use super::Bucket;

    #[test]
    fn keys_take_turns_fifo_within_a_key() {
        let mut b = Bucket::new(true);
        for i in 0..5 {
            b.push((i, i as u32), 1);
        }
        b.push((5, 5), 2);
        let order: Vec<u64> = std::iter::from_fn(|| b.pop_front())
            .map(|(t, _)| t)
            .collect();
        assert_eq!(order, [0, 5, 1, 2, 3, 4]);
        assert!(b.is_empty());
    }
}
