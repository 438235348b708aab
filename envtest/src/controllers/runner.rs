//! How a workload controller runs: kube-controller-manager's informer + work-queue loop in
//! miniature. A [`Reconciler`] names the resources it watches; one task per resource follows
//! the store's watch (`Store::watch`, re-subscribing with a full re-list if its stream is
//! dropped, as the kubelet does) and maps every object that changes — as it is now and as it
//! was — to the keys of the objects the controller reconciles. One worker task reconciles the
//! keys that are due, one at a time (a key is queued once however many events name it), and
//! queues a key again when the reconciler asks to be called back later (progress deadlines,
//! `minReadySeconds`, run times, schedules). Reconcilers read and write through
//! [`super::client`]. Everything stops with the server.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::client::{Client, Key, Res, controller_ref_value, key_of};
use crate::registry::context::Apiserver;
use crate::storage::{EventType, Start};

/// A controller driven by watch events.
pub(crate) trait Reconciler: Send + Sync + 'static {
    /// Its name in logs.
    fn name(&self) -> &'static str;

    /// The resources it watches; the first is the one it reconciles.
    fn watches(&self) -> Vec<Res>;

    /// The keys an object of `watches()[index]` affects. Default: the object itself for the
    /// primary resource, the controller owner of the primary kind for the others.
    fn keys(&self, _c: &Client<'_>, index: usize, obj: &Value) -> Vec<Key> {
        let primary = self.watches()[0];
        if index == 0 {
            return vec![key_of(obj)];
        }
        owner_key(obj, &primary).into_iter().collect()
    }

    /// Brings the object at `key` (which may be gone) to its desired state; `Some(d)` asks to
    /// be called again after `d`.
    fn reconcile(&self, c: &Client<'_>, key: &Key) -> Option<Duration>;
}

/// The key of `obj`'s controller owner if it is of kind `owner`.
pub(crate) fn owner_key(obj: &Value, owner: &Res) -> Option<Key> {
    let r = controller_ref_value(obj)?;
    (r["kind"] == owner.kind && r["apiVersion"] == owner.api_version()).then(|| {
        let name = r["name"].as_str().unwrap_or("").to_string();
        (crate::api::meta::namespace(obj).to_string(), name)
    })
}

/// Starts `r`: a feeding task per watched resource and its worker.
pub(crate) fn start(api: &Arc<Apiserver>, shutdown: &CancellationToken, r: Arc<dyn Reconciler>) {
    let (tx, rx) = mpsc::unbounded_channel();
    for (i, res) in r.watches().into_iter().enumerate() {
        let feed = Feed {
            api: api.clone(),
            shutdown: shutdown.clone(),
            r: r.clone(),
            index: i,
            res,
            tx: tx.clone(),
        };
        crate::task::spawn(feed.run());
    }
    crate::task::spawn(work(api.clone(), shutdown.clone(), r, rx));
}

/// Follows one watched resource and sends the keys its changes affect.
struct Feed {
    api: Arc<Apiserver>,
    shutdown: CancellationToken,
    r: Arc<dyn Reconciler>,
    index: usize,
    res: Res,
    tx: mpsc::UnboundedSender<Key>,
}

impl Feed {
    async fn run(self) {
        let Some(rt) = self.res.rt(&self.api) else {
            return;
        };
        let key = rt.store_key();
        while !self.shutdown.is_cancelled() {
            let Ok(mut sub) = self.api.store.watch(&key, Start::Current { initial: true }) else {
                return;
            };
            for (_, bytes) in std::mem::take(&mut sub.initial) {
                self.send(&bytes);
            }
            loop {
                tokio::select! {
                    _ = self.shutdown.cancelled() => return,
                    ev = sub.rx.recv() => match ev {
                        Some(ev) => {
                            self.send(&ev.obj);
                            if let (Some(old), false) = (&ev.old, ev.ty == EventType::Deleted) {
                                self.send(old);
                            }
                        }
                        None => break,
                    },
                }
            }
        }
    }

    fn send(&self, bytes: &[u8]) {
        let obj = crate::storage::parse(bytes);
        for k in self.r.keys(&Client::new(&self.api), self.index, &obj) {
            let _ = self.tx.send(k);
        }
    }
}

/// Reconciles the keys that are due, one at a time, until the server stops.
async fn work(
    api: Arc<Apiserver>,
    shutdown: CancellationToken,
    r: Arc<dyn Reconciler>,
    mut rx: mpsc::UnboundedReceiver<Key>,
) {
    let mut due: HashMap<Key, Instant> = HashMap::new();
    loop {
        let next = due.values().min().copied();
        let far = Instant::now() + Duration::from_secs(3600);
        tokio::select! {
            _ = shutdown.cancelled() => return,
            k = rx.recv() => match k {
                Some(k) => { due.insert(k, Instant::now()); }
                None => return,
            },
            _ = tokio::time::sleep_until(next.unwrap_or(far)), if next.is_some() => {}
        }
        while let Ok(k) = rx.try_recv() {
            due.insert(k, Instant::now());
        }
        let now = Instant::now();
        let ready: Vec<Key> = (due.iter())
            .filter(|(_, at)| **at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for k in ready {
            due.remove(&k);
            let again = r.reconcile(&Client::new(&api), &k);
            tracing::trace!(controller = r.name(), namespace = %k.0, name = %k.1, ?again, "reconciled");
            if let Some(after) = again {
                let at = Instant::now() + after;
                let slot = due.entry(k).or_insert(at);
                *slot = (*slot).min(at);
            }
        }
        tokio::task::yield_now().await;
    }
}
