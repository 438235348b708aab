//! One page of a paginated list, read without copying the collection (part of layer 1, storage; the
//! list handler in [`endpoints::handlers::read`](crate::endpoints::handlers::read) turns it into a
//! response).
//!
//! A page starts after the continue token's key and stops at the limit, so a list of N
//! objects in pages of L costs O(N) in all, not O(N²/L) as copying every object for every
//! page would. A page at an older resourceVersion (a continued list after writes) is the
//! current objects with the history's changes since that version undone, merged in key
//! order: the cost is the page plus the history window, never a copy of the collection.
//!
//! `remainingItemCount` (how many objects follow a page) is counted by walking the rest of the
//! collection once, on a list's first page; the count is kept ([`Rests`]) for the page that
//! continues it, which subtracts what it walked, so a list's later pages walk only themselves.

use std::collections::{BTreeMap, HashMap};
use std::ops::Bound;

use bytes::Bytes;

use super::{Collection, EventType, ObjKey, Store, StoreKey};

/// What a page asks for.
pub(crate) struct PageQuery<'a> {
    /// The namespace to list (`None`: all).
    pub ns: Option<&'a str>,
    /// List exactly at this resourceVersion (`None`: the newest).
    pub at: Option<u64>,
    /// Start after this key (from a continue token).
    pub after: Option<&'a ObjKey>,
    /// At most this many objects (0: no limit).
    pub limit: usize,
    /// Whether [`Page::remaining`] must be the exact count (the response shows it as
    /// `remainingItemCount`); without it, a page that has more says 1.
    pub count: bool,
}

/// A page of objects in key order.
pub(crate) struct Page {
    /// The resourceVersion the page was read at.
    pub rv: u64,
    pub items: Vec<(ObjKey, Bytes)>,
    /// When more objects `keep` accepts follow the page: how many objects (of any kind)
    /// follow its last one (1 when the query did not ask for the count).
    pub remaining: Option<usize>,
}

/// The state of every key changed since `at`, as it was at `at` (`None`: absent then).
fn undo_since(
    col: &Collection,
    at: u64,
    in_ns: &dyn Fn(&ObjKey) -> bool,
) -> BTreeMap<ObjKey, Option<Bytes>> {
    let mut undo = BTreeMap::new();
    // Newest first: the oldest change after `at` writes last and wins.
    for ev in col.history.iter().rev().take_while(|e| e.rv > at) {
        if !in_ns(&ev.key) {
            continue;
        }
        let before = match ev.ty {
            EventType::Added => None,
            _ => ev.old.clone(),
        };
        undo.insert(ev.key.clone(), before);
    }
    undo
}

/// The key range a page reads: after `after`, within `ns`.
fn lower<'a>(
    ns: Option<&str>,
    after: Option<&'a ObjKey>,
    ns_start: &'a ObjKey,
) -> Bound<&'a ObjKey> {
    match (after, ns) {
        (Some(a), Some(_)) if a < ns_start => Bound::Included(ns_start),
        (Some(a), _) => Bound::Excluded(a),
        (None, Some(_)) => Bound::Included(ns_start),
        (None, None) => Bound::Unbounded,
    }
}

/// Merges the current objects with the undo map, both in key order, into the snapshot.
fn snapshot<'a>(
    current: impl Iterator<Item = (&'a ObjKey, &'a Bytes)>,
    undo: &'a BTreeMap<ObjKey, Option<Bytes>>,
    range: (Bound<&'a ObjKey>, Bound<&'a ObjKey>),
) -> impl Iterator<Item = (&'a ObjKey, &'a Bytes)> {
    let mut cur = current.peekable();
    let mut old = undo.range::<ObjKey, _>(range).peekable();
    std::iter::from_fn(move || {
        loop {
            let take_old = match (cur.peek(), old.peek()) {
                (None, None) => return None,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some((ck, _)), Some((ok, _))) => ok <= ck,
            };
            if !take_old {
                return cur.next();
            }
            let (k, v) = old.next()?;
            if cur.peek().is_some_and(|(ck, _)| *ck == k) {
                cur.next();
            }
            if let Some(v) = v {
                return Some((k, v));
            }
        }
    })
}

/// How [`take_page`] finds how many objects follow the page.
#[derive(Clone, Copy)]
enum Rest {
    /// This many objects follow the page's start (a [`Rests`] entry): subtract the walk.
    Known(usize),
    /// Walk the rest of the collection.
    Count,
    /// Not wanted: say 1.
    Skip,
}

/// Takes up to `limit` objects `keep` accepts; finds what follows when more remain.
fn take_page<'a>(
    mut it: impl Iterator<Item = (&'a ObjKey, &'a Bytes)>,
    limit: usize,
    keep: &dyn Fn(&Bytes) -> bool,
    rest: Rest,
) -> (Vec<(ObjKey, Bytes)>, Option<usize>) {
    let mut items = Vec::new();
    // Objects walked, of any kind, and how many of them up to the page's last one.
    let (mut walked, mut through_last) = (0usize, 0usize);
    while let Some((k, v)) = it.next() {
        walked += 1;
        if !keep(v) {
            continue;
        }
        if limit > 0 && items.len() == limit {
            // `k` is the first object after the page that `keep` accepts.
            let n = match rest {
                Rest::Known(after_start) => after_start.saturating_sub(through_last),
                Rest::Count => 1 + it.count(),
                Rest::Skip => 1,
            };
            return (items, Some(n));
        }
        items.push((k.clone(), v.clone()));
        through_last = walked;
    }
    (items, None)
}

/// Which page a [`Rests`] entry follows: the collection, the namespace listed, the
/// resourceVersion read at and the page's last key.
type RestKey = (StoreKey, Option<String>, u64, ObjKey);

/// How many objects follow each page that was served with a continue token, until the page
/// continuing it takes the count (a list at one resourceVersion reads one snapshot, so the
/// count stays true however many writes come between pages). At most [`Rests::MAX`] are
/// kept; when full, all are dropped (a list given up halfway leaves its entry behind), and a
/// page whose entry is gone walks the rest as a first page does.
#[derive(Default)]
pub(super) struct Rests(HashMap<RestKey, usize>);

impl Rests {
    const MAX: usize = 1024;

    fn take(&mut self, key: &StoreKey, q: &PageQuery<'_>, rv: u64) -> Option<usize> {
        let after = q.after?;
        let k = (key.clone(), q.ns.map(str::to_string), rv, after.clone());
        self.0.remove(&k)
    }

    fn put(&mut self, key: &StoreKey, q: &PageQuery<'_>, rv: u64, page: &Page) {
        let (Some(n), Some((last, _))) = (page.remaining, page.items.last()) else {
            return;
        };
        if self.0.len() >= Self::MAX {
            self.0.clear();
        }
        let k = (key.clone(), q.ns.map(str::to_string), rv, last.clone());
        self.0.insert(k, n);
    }
}

impl Store {
    /// One page of a collection (see the module docs). `Err(floor)` when `q.at` is older
    /// than the history.
    pub(crate) fn list_page(
        &self,
        key: &StoreKey,
        q: &PageQuery<'_>,
        keep: &dyn Fn(&Bytes) -> bool,
    ) -> Result<Page, u64> {
        let mut guard = self.inner.lock();
        let inner = &mut *guard;
        if q.after.is_none() {
            *inner.lists.entry(key.clone()).or_default() += 1;
        }
        let Some(col) = inner.cols.get(key) else {
            let rv = match q.at {
                Some(at) if at < inner.rv && at != 0 => at,
                _ => inner.rv,
            };
            return Ok(Page {
                rv,
                items: Vec::new(),
                remaining: None,
            });
        };
        let old = q.at.filter(|at| *at < inner.rv);
        if let Some(at) = old
            && at < col.floor
        {
            return Err(col.floor);
        }
        let rv = old.unwrap_or(inner.rv);
        let rest = match q.count {
            true => inner
                .rests
                .take(key, q, rv)
                .map_or(Rest::Count, Rest::Known),
            false => Rest::Skip,
        };
        let page = read(col, q, old.is_some(), rv, keep, rest);
        if q.count {
            inner.rests.put(key, q, rv, &page);
        }
        Ok(page)
    }
}

/// A page of `col` at `rv`: its current objects, or (`old`) their snapshot at `rv`.
fn read(
    col: &Collection,
    q: &PageQuery<'_>,
    old: bool,
    rv: u64,
    keep: &dyn Fn(&Bytes) -> bool,
    rest: Rest,
) -> Page {
    let ns_start: ObjKey = super::obj_key(q.ns.unwrap_or_default(), "");
    let range = (lower(q.ns, q.after, &ns_start), Bound::Unbounded);
    let in_ns = |k: &ObjKey| q.ns.is_none_or(|n| k.0 == n);
    let current = col
        .objects
        .range::<ObjKey, _>(range)
        .take_while(move |e| in_ns(e.0));
    let (items, remaining) = if old {
        let undo = undo_since(col, rv, &in_ns);
        take_page(snapshot(current, &undo, range), q.limit, keep, rest)
    } else {
        take_page(current, q.limit, keep, rest)
    };
    Page {
        rv,
        items,
        remaining,
    }
}
