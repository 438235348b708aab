//! What an [`Informer`](super::Informer) has observed, for read-your-own-writes
//! (controller-runtime's `SetMinimumRVForGVKAndKey` / `AddRequiredDeleteForGVKKeyAndUID`
//! in `pkg/cache`, PR #3472).
//!
//! A read-your-own-writes client (the layer above) records, per key, the [`Requirement`] a
//! write left behind: the `resourceVersion` it produced, or the UID a delete removed. A
//! cached read waits ([`Informer::wait_observed`](super::Informer::wait_observed)) until
//! the informer's store reflects it. This module holds the informer's side: per watch
//! scope, the highest `resourceVersion` applied from the watch (a scope applies events in
//! `resourceVersion` order, so once it passed `rv`, every write up to `rv` of an object in
//! that scope is in the store, or was deleted or left the selector since); and the
//! [`Notify`] that wakes waiting reads after each applied event — no polling.
//!
//! Objects of an initial list or relist do not raise the mark until the list is done
//! (`InitDone`): a list arrives in key order, not `resourceVersion` order.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use kube::Resource;
use tokio::sync::Notify;
use tokio::time::Instant;

use super::store::Store;

/// What a read must see of one object written through a read-your-own-writes client.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// The write produced this `resourceVersion`: the store must hold the object at it or
    /// later, or its scope must have applied events past it (the object was deleted or
    /// left the selector since).
    Written(u64),
    /// A delete removed the object with this UID (`None`: the UID is unknown): the store
    /// must no longer hold it (absent, or another object of the same name).
    Deleted(Option<String>),
}

/// The `resourceVersion` of `obj` as a number (`None` when it has none or it is not a
/// number, as with a server that does not use etcd's revisions).
pub fn resource_version<K: Resource>(obj: &K) -> Option<u64> {
    obj.meta().resource_version.as_deref()?.parse().ok()
}

/// The marks of an informer's watch scopes and the readers waiting on them.
pub(crate) struct Observed {
    /// Per scope: the highest `resourceVersion` applied from the watch.
    applied: Vec<AtomicU64>,
    /// Per scope: the highest `resourceVersion` of the list in progress.
    listing: Vec<AtomicU64>,
    /// Per scope: its namespace (`None`: all namespaces, or all but the named ones).
    namespaces: Vec<Option<String>>,
    notify: Notify,
    /// How many reads wait: the informer notifies only when some do.
    waiters: AtomicUsize,
}

impl Observed {
    /// Marks for scopes of these namespaces, nothing observed yet.
    pub(crate) fn new(namespaces: Vec<Option<String>>) -> Self {
        let zeros = || namespaces.iter().map(|_| AtomicU64::new(0)).collect();
        Self {
            applied: zeros(),
            listing: zeros(),
            namespaces,
            notify: Notify::new(),
            waiters: AtomicUsize::new(0),
        }
    }

    /// Scope `i` applied a watch event at `rv`; wakes waiting reads.
    pub(crate) fn applied(&self, i: usize, rv: Option<u64>) {
        if let (Some(mark), Some(rv)) = (self.applied.get(i), rv) {
            mark.fetch_max(rv, Ordering::SeqCst);
        }
        self.wake();
    }

    /// Scope `i` stored an object of its list at `rv` (the mark moves at
    /// [`list_done`](Self::list_done)); wakes waiting reads, for the store changed.
    pub(crate) fn listed(&self, i: usize, rv: Option<u64>) {
        if let (Some(mark), Some(rv)) = (self.listing.get(i), rv) {
            mark.fetch_max(rv, Ordering::SeqCst);
        }
        self.wake();
    }

    /// Scope `i` finished a list: its mark moves to the list's highest `resourceVersion`.
    pub(crate) fn list_done(&self, i: usize) {
        if let (Some(mark), Some(listed)) = (self.applied.get(i), self.listing.get(i)) {
            mark.fetch_max(listed.swap(0, Ordering::SeqCst), Ordering::SeqCst);
        }
        self.wake();
    }

    fn wake(&self) {
        if self.waiters.load(Ordering::SeqCst) > 0 {
            self.notify.notify_waiters();
        }
    }

    /// The mark of the scope that watches namespace `ns` (`None` for cluster-scoped
    /// objects): the scope named after it, else the all-namespaces one.
    fn mark_for(&self, ns: Option<&str>) -> u64 {
        let named = self
            .namespaces
            .iter()
            .position(|n| n.is_some() && n.as_deref() == ns);
        let i = named.or_else(|| self.namespaces.iter().position(Option::is_none));
        i.and_then(|i| self.applied.get(i))
            .map_or(0, |m| m.load(Ordering::SeqCst))
    }

    /// Whether `store` reflects `req` of the object under `key` (`namespace/name`, or
    /// `name` for a cluster-scoped object).
    pub(crate) fn satisfies<K: Resource>(
        &self,
        store: &Store<K>,
        key: &str,
        req: &Requirement,
    ) -> bool {
        let ns = key.split_once('/').map(|(ns, _)| ns);
        let stored = store.get(key);
        match req {
            Requirement::Written(rv) => {
                stored.is_some_and(|o| resource_version(&*o).is_some_and(|have| have >= *rv))
                    || self.mark_for(ns) >= *rv
            }
            Requirement::Deleted(uid) => match (stored, uid) {
                (None, _) => true,
                (Some(o), Some(uid)) => o.meta().uid.as_deref() != Some(uid.as_str()),
                (Some(_), None) => false,
            },
        }
    }

    /// Waits until `done()` holds (true) or `deadline` passes (then whether it holds);
    /// woken by every event the informer applies.
    pub(crate) async fn wait(&self, deadline: Instant, done: impl Fn() -> bool) -> bool {
        let _waiting = Waiting::new(&self.waiters);
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if done() {
                return true;
            }
            tokio::select! {
                _ = notified => {}
                _ = tokio::time::sleep_until(deadline) => return done(),
            }
        }
    }
}

/// Counts a waiting read for as long as it lives.
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(n: &'a AtomicUsize) -> Self {
        n.fetch_add(1, Ordering::SeqCst);
        Self(n)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ConfigMap;
    use std::sync::Arc;

    fn cm(rv: &str, uid: &str) -> Arc<ConfigMap> {
        let mut c = ConfigMap::default();
        c.metadata.namespace = Some("a".into());
        c.metadata.name = Some("x".into());
        c.metadata.resource_version = Some(rv.into());
        c.metadata.uid = Some(uid.into());
        Arc::new(c)
    }

    #[test]
    fn writes_are_seen_by_version_and_deletes_by_absence_or_uid() {
        let o = Observed::new(vec![Some("a".into()), None]);
        let s = Store::<ConfigMap>::new();
        assert!(!o.satisfies(&s, "a/x", &Requirement::Written(5)));
        s.insert("a/x", cm("5", "u1"));
        assert!(o.satisfies(&s, "a/x", &Requirement::Written(5)));
        assert!(!o.satisfies(&s, "a/x", &Requirement::Written(6)));
        // The other scope moving on says nothing about namespace a.
        o.applied(1, Some(9));
        assert!(!o.satisfies(&s, "a/x", &Requirement::Written(6)));
        // A list's objects count once the list is done.
        o.listed(0, Some(7));
        assert!(!o.satisfies(&s, "a/x", &Requirement::Written(6)));
        o.list_done(0);
        assert!(o.satisfies(&s, "a/x", &Requirement::Written(6)));
        assert!(!o.satisfies(&s, "a/x", &Requirement::Deleted(Some("u1".into()))));
        assert!(o.satisfies(&s, "a/x", &Requirement::Deleted(Some("u0".into()))));
        assert!(!o.satisfies(&s, "a/x", &Requirement::Deleted(None)));
        s.remove("a/x");
        assert!(o.satisfies(&s, "a/x", &Requirement::Deleted(None)));
    }
}
